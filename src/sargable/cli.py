"""The `sargable` command line: explain filters; create tables, list and add partitions; print rows; describe,
optimize and vacuum tables; benchmark; demo.

Exit status: 0 on success; 1 with a one-line `error: ...` on bad input (a `SargableError`, or a file that can't be
read); 2 with `error: ...` on a bad command line. `--json` gives machine-readable output where a command prints
data; progress bars (bulk adds, vacuum, bench) go to stderr, and only when it is a terminal.
"""

from __future__ import annotations

import argparse
import base64
import csv
import datetime as dt
import io
import itertools
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NoReturn

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from sargable.errors import AlreadyExistsError, FilterSyntaxError, NoSuchObjectError, SargableError
from sargable.expr import bind, normalize, parse, render, to_sarg
from sargable.types import DataType, convert, parse_type

if TYPE_CHECKING:
    from sargable.metastore import Metastore
    from sargable.scan import Scan
    from sargable.unlisted import UnlistedReport


class UsageError(SargableError):
    """A bad command line: unknown option, missing argument (argparse's errors, exit status 2)."""


class _Parser(argparse.ArgumentParser):
    """argparse, raising `UsageError` instead of printing the usage and exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def parse_schema(text: str) -> list[tuple[str, DataType]]:
    """`"a int, ds date, amount decimal(10,2)"` -> [(name, type), ...]; commas inside parentheses and angle brackets
    (`struct<os:string,version:string>`) are kept."""
    columns: list[tuple[str, DataType]] = []
    depth, start = 0, 0
    parts = []
    for i, ch in enumerate(text):
        if ch in "(<":
            depth += 1
        elif ch in ")>":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    for part in parts:
        fields = part.split(None, 1)
        if len(fields) != 2:
            raise SargableError(f"schema entry {part.strip()!r} must be 'name type', as in 'ds date'")
        columns.append((fields[0], parse_type(fields[1])))
    return columns


def _split_table(text: str) -> tuple[str, str]:
    db, sep, table = text.partition(".")
    if not sep or not db or not table:
        raise SargableError(f"expected DB.TABLE, got {text!r}")
    return db, table


CREATE_TABLE_HINT = "create-table DB.TABLE --columns '...' --partition-keys '...'"


def _metastore(args: argparse.Namespace, *, create: bool = False, creating: str = "") -> Metastore:
    """The metastore of `--metastore` (or the default); a SQLite file must exist unless the command creates.
    `creating` is how the failing command itself would create one (default: `create-table`)."""
    from sargable.metastore import Metastore, default_url

    url = args.metastore or default_url()
    try:
        return Metastore.open(url, create=create)
    except NoSuchObjectError as exc:
        if args.metastore:
            source = f"--metastore {args.metastore}"
        elif os.environ.get("SARGABLE_METASTORE"):
            source = f"$SARGABLE_METASTORE={url}"
        else:
            source = "the default ./warehouse/metastore.db: neither --metastore nor $SARGABLE_METASTORE is set"
        raise SargableError(
            f"{exc}; looked at {source}. Point --metastore or $SARGABLE_METASTORE at an existing metastore, or create "
            f"one: `sargable --metastore {url} {creating or CREATE_TABLE_HINT}`"
        ) from None


def _progress() -> Progress:
    """A progress display on stderr, shown only when stderr is a terminal (never mixed into --json output)."""
    err = Console(stderr=True)
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    return Progress(*columns, TimeElapsedColumn(), console=err, transient=True, disable=not err.is_terminal)


def _print_json(data: Any) -> None:
    print(json.dumps(data, default=str))


def _print_record(args: argparse.Namespace, console: Console, title: str, data: dict[str, Any]) -> None:
    """One record: JSON with --json, else a two-column table titled `title`."""
    if args.json:
        _print_json(data)
    else:
        _print_mapping(console, title, data)


def _cell(value: Any) -> Text:
    """A value as plain text for rich (never read as markup: `[`, `]` occur in filters, plans, names, paths and
    partition values): integers with thousands separators, floats to three decimals, lists one item per line."""
    if isinstance(value, bool) or value is None:
        return Text(str(value))
    if isinstance(value, int):
        return Text(f"{value:,}")
    if isinstance(value, float):
        return Text(f"{value:,.3f}")
    if isinstance(value, list | tuple):
        return Text("\n".join(_cell(item).plain for item in value) or "-")
    if isinstance(value, dict):
        return Text(", ".join(f"{k.replace('_', ' ')} {_cell(v).plain}" for k, v in value.items() if v is not None))
    return Text(str(value))


def _print_mapping(console: Console, title: str, data: dict[str, Any]) -> None:
    table = Table(title=Text(title), show_header=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for key, value in data.items():
        table.add_row(Text(key.replace("_", " ")), _cell(value))
    console.print(table)


def _print_rows(console: Console, rows: list[dict[str, Any]], *, title: str, right: Sequence[str] = ()) -> None:
    """Rows as a table; the first column and the `right` (numeric, right-aligned) ones are never wrapped."""
    table = Table(title=Text(f"{title} ({len(rows):,} rows)"))
    for n, column in enumerate(rows[0] if rows else ["(none)"]):
        numeric = column in right
        table.add_column(
            column.replace("_", " "), overflow="fold", justify="right" if numeric else "left", no_wrap=numeric or n == 0
        )
    for row in rows:
        table.add_row(*(_cell(v) for v in row.values()))
    console.print(table)


# ------------------------------------------------------------------------------------------------ explain


def _explain_filter(text: str, schema: str | None, dialect: str) -> dict[str, Any]:
    expr = parse(text, dialect=dialect)
    out: dict[str, Any] = {"parsed": render(expr)}
    if schema:
        expr = bind(expr, parse_schema(schema))
        out["bound"] = render(expr)
    out["normalized"] = render(normalize(expr))
    out["search_argument"] = str(to_sarg(expr))
    return out


def _every(scan: Scan) -> str:
    """How a scan that lists no partitions finds its files."""
    if not scan.table.partition_key_names:
        return "every file (no partition keys)"
    return "every partition (no partition filter)"


def _scan_explained(scan: Scan) -> dict[str, Any]:
    """What `explain DB.TABLE FILTER` shows of a scan: its parts, how the partitions were found, what it read."""
    report, search = scan.report, scan.partition_search
    data: dict[str, Any] = {
        "table": report.table,
        "filter": report.filter,
        "partition_filter": report.partition_filter,
        "access_path": report.access or _every(scan),
        "plan": None if search is None else search.plan,
        "candidates": None if search is None else search.candidates,
        "keys_examined": None if search is None else search.keys_examined,
        "partitions_returned": report.partitions_selected,
        "partitions_total": report.partitions_total,
        "file_filter": report.file_filter,
        "files_selected": report.files_selected,
        "files_total": report.files_total,
        "bytes_selected": report.bytes_selected,
        "bytes_total": report.bytes_total,
        "residual": report.residual,
        "notes": "; ".join(report.notes) or None,
        "elapsed_ms": report.planning_ms,
    }
    return {key: value for key, value in data.items() if value is not None}


def cmd_explain(args: argparse.Namespace, console: Console) -> None:
    if args.filter is None:
        data = _explain_filter(args.target, args.schema, args.dialect)
        title = "filter"
    else:
        db, table = _split_table(args.target)
        with _metastore(args) as ms, ms.snapshot():
            scan = ms.table(db, table).scan(args.filter, dialect=args.dialect)
        data = _scan_explained(scan)
        title = f"{db}.{table}"
    _print_record(args, console, title, data)


# ------------------------------------------------------------------------------------------ tables

_SIZES = ("partitions", "files", "bytes", "rows")


def _table_row(ms: Metastore, db: str, name: str) -> dict[str, Any]:
    table = ms.get_table(db, name)
    totals = ms.table_stats(db, name)
    return {
        "table": table.qualified_name,
        "partition_keys": ", ".join(f"{n} {t}" for n, t in table.partition_keys),
        **{size: getattr(totals, size) for size in _SIZES},
        "indexes": ", ".join(table.indexes),
        "location": table.location,
    }


def cmd_tables(args: argparse.Namespace, console: Console) -> None:
    with _metastore(args) as ms:
        names = ms.list_tables(args.database)
        qualified = names if args.database is None else [f"{args.database}.{n}" for n in names]
        rows = [_table_row(ms, *_split_table(q)) for q in qualified]
    if args.json:
        _print_json(rows)
        return
    columns = (
        "table",
        "partition_keys",
        "partitions",
        "files",
        "size",
        *(("indexes",) if args.wide else ()),
        "location",
    )
    shown = [{c: _human_bytes(row["bytes"]) if c == "size" else row[c] for c in columns} for row in rows]
    _print_listing(console, shown, right=("partitions", "files", "size"), wide=args.wide)


_MIN_LAST, _MIN_TEXT = 20, 12
"""The narrowest the last column (a location) and another text column (not the first) of a listing are shortened
to; below them, the listing is wider than the terminal."""


def _print_listing(
    console: Console, rows: list[dict[str, Any]], *, right: Sequence[str] = (), wide: bool = False
) -> None:
    """Rows one line each, as `kubectl get` and `gh` print them: columns two spaces apart, nothing wraps. To fit the
    terminal the widest text columns but the first are shortened: the last (a location) in the middle, others at
    their end. `wide` prints everything (lines as long as the data)."""
    if not rows:
        console.print("(none)")
        return
    header = [column.replace("_", " ") for column in rows[0]]
    cells = [[_cell(v).plain.replace("\n", ", ") for v in row.values()] for row in rows]
    widths = [max(len(line[i]) for line in [header, *cells]) for i in range(len(header))]
    if not wide:
        last = len(widths) - 1
        floors = [
            width if i == 0 or column in right else min(width, _MIN_LAST if i == last else max(_MIN_TEXT, len(name)))
            for i, (column, name, width) in enumerate(zip(rows[0], header, widths))
        ]
        _fit(widths, floors, console.width - 2 * last)
        cells = [
            [
                *(_shorten_end(cell, width) for cell, width in zip(line[:-1], widths)),
                _shorten_middle(line[-1], widths[-1]),
            ]
            for line in cells
        ]
    aligned = [str.rjust if column in right else str.ljust for column in rows[0]]
    for n, line in enumerate([header, *cells]):
        text = "  ".join(align(cell, width) for align, cell, width in zip(aligned, line, widths)).rstrip()
        console.print(Text(text, style="bold" if n == 0 else ""), soft_wrap=True)


def _fit(widths: list[int], floors: list[int], room: int) -> None:
    """Narrow `widths` in place until they sum to `room`: the widest column above its floor first, one character at
    a time, none below its floor."""
    while sum(widths) > room:
        i = max(range(len(widths)), key=lambda k: (widths[k] if widths[k] > floors[k] else -1, k))
        if widths[i] <= floors[i]:
            return
        widths[i] -= 1


def _shorten_middle(text: str, width: int) -> str:
    """`text` in at most `width` characters: its start and its end (the part that tells paths apart), joined by …."""
    if len(text) <= width:
        return text
    head = (width - 1) // 3
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def _shorten_end(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _human_bytes(count: int) -> str:
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def cmd_create_table(args: argparse.Namespace, console: Console) -> None:
    db, name = _split_table(args.table)
    columns = parse_schema(args.columns) if args.columns else []
    keys = parse_schema(args.partition_keys) if args.partition_keys else []
    with _metastore(args, create=True) as ms:
        ms.create_database(db, if_not_exists=True)
        ms.create_table(
            db,
            name,
            columns,
            keys,
            location=args.location,
            if_not_exists=args.if_not_exists,
            share_location=args.share_location,
        )
        for column in args.index or []:
            if column.lower() not in ms.get_table(db, name).indexes:
                ms.create_index(db, name, column)
        row = _table_row(ms, db, name)
    _print_record(args, console, row["table"], row)


def cmd_alter(args: argparse.Namespace, console: Console) -> None:
    db, name = _split_table(args.table)
    if not args.add_columns and not args.widen:
        raise SargableError("nothing to alter: give --add-columns and/or --widen")
    with _metastore(args, create=False) as ms:
        table = ms.table(db, name)
        if args.add_columns:
            table = table.add_columns(parse_schema(args.add_columns))
        for change in args.widen or []:
            column, sep, dtype = change.partition(":")
            if not sep or not column or not dtype:
                raise SargableError(f"--widen takes COLUMN:TYPE, as in hr:bigint; got {change!r}")
            table = table.widen(column.strip(), dtype.strip())
        row = _table_row(ms, db, name)
        row["columns"] = ", ".join(f"{n} {t}" for n, t in table.columns)
    _print_record(args, console, row["table"], row)


def cmd_stats_blocks(args: argparse.Namespace, console: Console) -> None:
    db, name = _split_table(args.table)
    with _metastore(args, create=False) as ms:
        table = ms.table(db, name)
        if args.build:
            started = time.perf_counter()
            with _progress() as progress:  # one transaction with no steps to count: a spinner and the time taken
                progress.add_task(f"building the statistics blocks of {db}.{name}", total=None)
                table.build_stats_blocks()
            built = time.perf_counter() - started
        state = table.stats_blocks()
    row: dict[str, Any] = {"table": f"{db}.{name}", "blocks": state is not None, **(state or {})}
    if args.build:
        row["build_seconds"] = round(built, 3)
    _print_record(args, console, row["table"], row)
    if state is None and not args.json:
        console.print(f"no statistics blocks: build them with `sargable stats-blocks {db}.{name} --build`")


# ------------------------------------------------------------------------------------------ partitions


def cmd_partitions(args: argparse.Namespace, console: Console) -> None:
    db, table = _split_table(args.table)
    if args.limit is not None and args.limit < 0:
        raise SargableError(f"--limit must be 0 or more, got {args.limit}")
    with _metastore(args) as ms, ms.snapshot():
        parts = ms.table(db, table).partitions(args.filter, max_parts=args.limit, dialect=args.dialect)
        rows = [{"name": p.name, "location": p.location} for p in parts]
    if args.json:
        _print_json(rows)
    else:
        _print_rows(console, rows, title=f"{db}.{table}")


# ------------------------------------------------------------------------------------------------ head


def _json_value(value: Any) -> Any:
    """A value read from a table as JSON: dates and times in ISO form, decimals and non-finite floats as text,
    binary as base64, structs and maps as objects and lists."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    return value


def _head_text(value: Any) -> str:
    """A value as `head` prints it in a table cell or CSV field: as JSON gives it, structures as JSON text."""
    shown = _json_value(value)
    return json.dumps(shown) if isinstance(shown, dict | list) else str(shown)


def cmd_head(args: argparse.Namespace, console: Console) -> None:
    import pyarrow as pa

    if args.rows < 0:
        raise SargableError(f"-n must be 0 or more, got {args.rows}")
    columns = _names(args.columns) if args.columns is not None else None
    if columns == []:
        raise SargableError("--columns names no column; give column names separated by commas, or leave it out")
    with _metastore(args) as ms:
        with ms.snapshot():
            scan = ms.table(args.table).scan(args.filter, columns=columns, dialect=args.dialect)
        batches = []
        wanted = args.rows
        for batch in scan.to_batches(batch_rows=max(1, min(wanted, 65_536))) if wanted else ():
            batches.append(batch.slice(0, wanted))
            wanted -= batches[-1].num_rows
            if not wanted:
                break
        from sargable import readers

        rows = pa.Table.from_batches(batches, schema=readers.output_schema(scan))
    name = scan.report.table
    if args.parquet:
        import pyarrow.parquet as pq

        pq.write_table(rows, args.parquet)
        console.print(Text(f"wrote {rows.num_rows:,} rows of {name} to {args.parquet}"), soft_wrap=True)
    elif args.json:
        records = [{k: _json_value(v) for k, v in row.items()} for row in rows.to_pylist()]
        _print_json({"table": name, "filter": scan.report.filter, "columns": rows.column_names, "rows": records})
    elif args.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(rows.column_names)
        for row in rows.to_pylist():
            writer.writerow(["" if v is None else _head_text(v) for v in row.values()])
    else:
        table = Table(title=Text(f"{name} (first {rows.num_rows:,} rows)"))
        for field in rows.schema:
            numeric = pa.types.is_integer(field.type) or pa.types.is_floating(field.type)
            table.add_column(Text(field.name), justify="right" if numeric else "left", overflow="fold")
        for row in rows.to_pylist():
            table.add_row(*(Text("NULL", style="dim") if v is None else Text(_head_text(v)) for v in row.values()))
        console.print(table)


def _read_specs(
    lines: Iterator[str], keys: Sequence[tuple[str, DataType]]
) -> Iterator[tuple[int, tuple[Any, ...], str | None]]:
    """(line number, typed values, location or None) of each partition of a CSV or a list of partition names.

    The first line decides: a partition name (`ds=2024-01-01/hr=3`) starts a list of names, one per line;
    anything else is a CSV header naming the partition keys (any order) and optionally `location`. An empty CSV
    field is NULL (Hive's default partition)."""
    from sargable.metastore.names import parse_partition_name

    numbered = enumerate(lines, start=1)
    first = next(((n, line) for n, line in numbered if line.strip()), None)
    if first is None:
        return
    if "=" in first[1]:
        for number, line in itertools.chain([first], numbered):
            if not line.strip():
                continue
            try:
                yield number, parse_partition_name(line.strip(), keys), None
            except SargableError as exc:
                raise SargableError(f"line {number}: {exc}") from None
        return
    reader = csv.reader(itertools.chain([first[1]], (line for _, line in numbered)))
    header = [h.strip().lower() for h in next(reader)]
    names = [n.lower() for n, _ in keys]
    unknown = sorted(set(header) - {*names, "location"})
    missing = [n for n in names if n not in header]
    if unknown or missing or len(set(header)) != len(header):
        raise SargableError(
            f"line {first[0]}: the CSV header must name the partition keys {names} (and optionally location), "
            f"each once; got {header}"
        )
    order = [header.index(n) for n in names]
    where = header.index("location") if "location" in header else None
    for fields in reader:
        number = first[0] - 1 + reader.line_num
        if not fields:
            continue
        if len(fields) != len(header):
            raise SargableError(f"line {number}: {len(fields)} fields, the header has {len(header)}")
        try:
            values = tuple(convert(fields[i] or None, dtype) for i, (_, dtype) in zip(order, keys))
        except SargableError as exc:
            raise SargableError(f"line {number}: {exc}") from None
        yield number, values, (fields[where] or None) if where is not None else None


def _open_text(path: str) -> io.TextIOBase:
    if path == "-":
        return sys.stdin  # type: ignore[return-value]
    try:
        return open(path, newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise SargableError(f"can't read {path}: {exc.strerror}") from None


def cmd_add_partitions(args: argparse.Namespace, console: Console) -> None:
    db, name = _split_table(args.table)
    if args.batch_size < 1:
        raise SargableError(f"--batch-size must be 1 or more, got {args.batch_size}")
    with _metastore(args) as ms:
        table = ms.get_table(db, name)
        source = _open_text(args.source)
        try:
            specs = list(_read_specs(iter(source), table.partition_keys))
        except (UnicodeDecodeError, csv.Error) as exc:
            raise SargableError(f"can't read {args.source}: {exc}") from None
        finally:
            if source is not sys.stdin:
                source.close()
        added = committed = 0
        with _progress() as progress:
            task = progress.add_task(escape(f"adding to {table.qualified_name}"), total=len(specs))
            for start in range(0, len(specs), args.batch_size):
                batch = specs[start : start + args.batch_size]
                locations = [loc for _, _, loc in batch]
                try:
                    added += ms.add_partitions(
                        db,
                        name,
                        [values for _, values, _ in batch],
                        if_not_exists=args.if_not_exists,
                        locations=locations if any(loc is not None for loc in locations) else None,
                    )
                except SargableError as exc:
                    done = f"the {committed:,} partitions before it are committed" if committed else "none added"
                    hint = "; --if-not-exists skips existing partitions" if isinstance(exc, AlreadyExistsError) else ""
                    raise SargableError(
                        f"the batch of lines {batch[0][0]}-{batch[-1][0]} failed ({done}): {exc}{hint}"
                    ) from None
                committed += len(batch)
                progress.advance(task, len(batch))
        data = {
            "table": table.qualified_name,
            "read": len(specs),
            "added": added,
            "batches": -(-len(specs) // args.batch_size),
            "partitions": ms.count_partitions(db, name),
        }
    _print_record(args, console, f"add-partitions {table.qualified_name}", data)


# ------------------------------------------------------------------------------------------ vacuum


def cmd_vacuum(args: argparse.Namespace, console: Console) -> None:
    from sargable.vacuum import vacuum

    db, name = _split_table(args.table)
    with _metastore(args) as ms, _progress() as progress:
        task = progress.add_task(escape(("deleting" if args.delete else "listing") + f" garbage of {args.table}"))

        def walked(count: int) -> None:
            progress.update(task, description=escape(f"{args.table}: looking for unlisted files, {count:,} seen"))

        result = vacuum(ms, db, name, dry_run=not args.delete, older_than=args.older_than, progress=walked)
    files = list(result.deleted if args.delete else result.garbage)
    kept = [{"file": path, "reason": reason} for path, reason in result.kept]
    report = result.unlisted
    if args.json:
        data = {"table": args.table, "deleted": args.delete, "older_than": args.older_than, "files": files}
        unlisted = {
            "files": [{"file": f.path, "bytes": f.size, "changed": _utc(f.changed)} for f in report.files],
            "count": len(report.files),
            "bytes": report.bytes,
            "older_than": report.min_age,
            "not_looked_for": report.not_made,
        }
        _print_json({**data, "kept": kept, "unlisted": unlisted})
        return
    if kept:
        _print_rows(console, kept, title=f"{args.table}: left alone")
    if not files:
        console.print(Text(f"{args.table}: no unreferenced files older than {args.older_than:g} s"))
    else:
        _print_rows(console, [{"file": path} for path in files], title=f"{args.table}: unreferenced files")
        console.print("deleted" if args.delete else "a dry run: --delete deletes them")
    _print_unlisted(console, args.table, report, deleting=args.delete)


def _utc(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat(timespec="seconds")


def _print_unlisted(console: Console, table: str, report: UnlistedReport, *, deleting: bool) -> None:
    """The unlisted files of a vacuum, by folder, and how to remove them by hand (vacuum never deletes them)."""
    from sargable.unlisted import folders_of

    if report.not_made is not None:
        console.print(Text(f"{table}: unlisted files not looked for: {report.not_made}"))
        return
    if not report.files:
        console.print(Text(f"{table}: no unlisted files older than {report.min_age:g} s"))
        return
    rows = [{"folder": folder, "files": n, "bytes": size} for folder, n, size in folders_of(report.files)]
    title = f"{table}: unlisted files (in folders no partition lists)"
    _print_rows(console, rows, title=title, right=("files", "bytes"))
    left = "left on disk: vacuum never deletes them" if deleting else "reported only: --delete leaves them too"
    console.print(
        Text(
            f"{len(report.files):,} unlisted files ({report.bytes:,} bytes) unchanged for {report.min_age:g} s, {left} "
            "(sargable did not write them: a failed or refused engine write, or another program's). Check that no "
            f"job still writes there, then remove them by hand: `sargable vacuum {table} --json` lists each one"
        )
    )


# ------------------------------------------------------------------------------------------ describe, optimize

_SIZE_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2, "mib": 1024**2}
_SIZE_UNITS |= {"g": 1024**3, "gb": 1024**3, "gib": 1024**3}


def _size(text: str) -> int:
    """`134217728`, `128MiB`, `128m`, `1g` -> bytes (units are powers of 1024)."""
    number = text.strip().rstrip("BbIiKkMmGg")
    unit = text.strip()[len(number) :].lower()
    try:
        value = float(number) * _SIZE_UNITS[unit]
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(f"expected a size such as 134217728 or 128MiB, got {text!r}") from None
    if not 1 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"expected a positive size, got {text!r}")
    return int(value)


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def cmd_describe(args: argparse.Namespace, console: Console) -> None:
    from sargable.maintenance import describe

    with _metastore(args) as ms:
        columns = _names(args.columns) if args.columns is not None else None
        health = describe(ms, args.table, columns, target_file_bytes=args.target_file_size)
        table = ms.table(args.table)
        head = {
            "table": table.qualified_name,
            "location": table.location,
            "version": table.version,
            "retention_seconds": table.retention_seconds,
            "removed_files_retained": len(table.tombstones()),
        }
    if args.json:
        _print_json({**head, **health.to_dict()})
        return
    lines = [
        f"table:               {head['table']} (version {head['version']})",
        f"location:            {head['location']}",
        f"removed files:       {head['removed_files_retained']:,} kept on disk for the retention of "
        f"{head['retention_seconds']:,.0f} s",
        str(health),
    ]
    console.print("\n".join(lines), highlight=False, soft_wrap=True)


def cmd_optimize(args: argparse.Namespace, console: Console) -> None:
    options = {
        "where": args.where,
        "cluster_by": _names(args.cluster_by) if args.cluster_by else None,
        "target_file_bytes": args.target_file_size,
        "min_input_files": args.min_input_files,
        "curve": args.curve,
    }
    if args.dry_run:
        from sargable.maintenance import plan_optimize

        with _metastore(args) as ms:
            plan = plan_optimize(ms, args.table, **options)
        if args.json:
            _print_json({"dry_run": True, **plan.to_dict()})
        else:
            console.print(plan.format(), highlight=False, soft_wrap=True)
            console.print("a dry run: nothing was written")
        return
    try:
        from sargable.spark import local_session, optimize
    except ImportError as exc:
        raise SargableError(f"optimize needs Spark: pip install 'sargable[spark]' ({exc})") from None
    with _metastore(args) as ms:
        spark = local_session("sargable optimize", master=args.master)
        progress = Console(stderr=True).is_terminal
        result = optimize(spark, args.table, metastore=ms, progress=progress, **options)
    if args.json:
        _print_json(result.to_dict())
        return
    data = {key: value for key, value in result.to_dict().items() if key not in ("plan", "dry_run")}
    data["seconds"] = f"{result.seconds:.1f}"
    _print_mapping(console, f"optimize {result.table}", data)


# ------------------------------------------------------------------------------------------ bench

_COUNTRIES = ("BR", "CA", "DE", "FR", "IN", "JP", "UK", "US")
_DAY0 = dt.date(2015, 1, 1)


def _bench_filters() -> list[tuple[str, str | None]]:
    """The filters of benchmarks/partition_filter.py (days among the first 52, the same at every size)."""
    day = [_DAY0 + dt.timedelta(days=k) for k in range(53)]
    in5 = ", ".join(f"'{day[k]}'" for k in (2, 11, 20, 29, 38))
    return [
        ("one partition", f"ds = '{day[19]}' and hr = 3 and country = 'US'"),
        ("one day", f"ds = '{day[19]}'"),
        ("7-day range", f"ds between '{day[19]}' and '{day[25]}'"),
        ("hr = 3 (index)", "hr = 3"),
        ("ds in (5 days)", f"ds in ({in5})"),
        ("OR of 2 day ranges", f"ds between '{day[4]}' and '{day[5]}' or ds between '{day[40]}' and '{day[41]}'"),
        ("country like 'U%'", "country like 'U%'"),
        ("no filter", None),
    ]


def _median_ms(fn: Callable[[], int], budget: float) -> tuple[float, int]:
    """Median wall milliseconds of repeated calls (3 to 25, about `budget` seconds) and the count returned."""
    times: list[float] = []
    began = time.perf_counter()
    count = 0
    while len(times) < 3 or (len(times) < 25 and time.perf_counter() - began < budget):
        started = time.perf_counter()
        count = fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), count


def _bench_run(size: int, budget: float, brute_force: bool, progress: Progress) -> tuple[float, list[dict[str, Any]]]:
    """Build the synthetic table in a temporary SQLite metastore and time each filter (with the brute force)."""
    import sargable as sg
    from sargable.metastore import Metastore

    per_day = 24 * len(_COUNTRIES)
    rows = [
        (_DAY0 + dt.timedelta(days=i // per_day), (i // len(_COUNTRIES)) % 24, _COUNTRIES[i % len(_COUNTRIES)])
        for i in range(size)
    ]
    keys = [("ds", "date"), ("hr", "int"), ("country", "string")]
    results = []
    with (
        tempfile.TemporaryDirectory(prefix="sargable-bench-") as tmp,
        Metastore.open(f"sqlite:///{tmp}/bench.db", warehouse=tmp) as ms,
    ):
        ms.create_database("bench")
        ms.create_table("bench", "events", [("x", "bigint")], keys)
        ms.create_index("bench", "events", "hr")
        task = progress.add_task(f"building {size:,} partitions", total=size)
        started = time.perf_counter()
        for offset in range(0, size, 100_000):
            ms.add_partitions("bench", "events", rows[offset : offset + 100_000])
            progress.advance(task, min(100_000, size - offset))
        build_s = time.perf_counter() - started

        def query(text: str | None) -> int:
            if text is None:
                return sum(1 for _ in ms.iter_partitions("bench", "events"))
            return len(ms.get_partitions_by_filter("bench", "events", text))

        brute_rows = [{"ds": d, "hr": h, "country": c} for d, h, c in rows] if brute_force else []
        task = progress.add_task("filters", total=len(_bench_filters()))
        for label, text in _bench_filters():
            elapsed_ms, returned = _median_ms(lambda t=text: query(t), budget)
            result = {"filter": label, "expression": text, "returned": returned, "sargable_ms": elapsed_ms}
            if brute_force and text is not None:
                bound = sg.bind(sg.parse(text), keys)
                started = time.perf_counter()
                expected = sum(1 for r in brute_rows if sg.evaluate(bound, r) is True)
                result["brute_force_ms"] = (time.perf_counter() - started) * 1000
                result["agrees"] = expected == returned
            results.append(result)
            progress.advance(task)
    return build_s, results


def cmd_bench(args: argparse.Namespace, console: Console) -> None:
    size = args.partitions
    if not 1 <= size <= 10_000_000:
        raise SargableError(f"--partitions must be between 1 and 10,000,000, got {size}")
    if not args.budget >= 0:
        raise SargableError(f"--budget must be a non-negative number of seconds, got {args.budget}")
    with _progress() as progress:
        build_s, results = _bench_run(size, args.budget, not args.no_brute_force, progress)
    data = {"partitions": size, "build_s": build_s, "backend": "sqlite", "filters": results}
    if args.json:
        _print_json(data)
        return
    table = Table(title=f"sargable get_partitions_by_filter, {size:,} partitions (built in {build_s:.1f} s)")
    for header in ("filter", "returned", "sargable", "brute force", "speed-up"):
        table.add_column(header, justify="left" if header == "filter" else "right")
    for r in results:
        brute = r.get("brute_force_ms")
        check = "" if r.get("agrees", True) else " (brute force disagrees!)"
        table.add_row(
            r["filter"],
            f"{r['returned']:,}{check}",
            f"{r['sargable_ms']:.3f} ms",
            "-" if brute is None else f"{brute:.1f} ms",
            "-" if brute is None else f"{brute / r['sargable_ms']:,.0f}x",
        )
    console.print(table)
    console.print(
        "Median wall time of repeated calls on a temporary SQLite metastore; brute force is sg.evaluate over every "
        "partition, once. benchmarks/partition_filter.py compares pyiceberg, deltalake and a Hive metastore."
    )


# ------------------------------------------------------------------------------------------ demo


def cmd_demo(args: argparse.Namespace, console: Console) -> None:
    try:
        from sargable.spark.demo import run_demo
    except ImportError as exc:
        raise SargableError(f"the demo needs Spark: pip install 'sargable[spark]' ({exc})") from None
    run_demo(args.warehouse, rebuild=args.rebuild, console=console, verbose=args.verbose)


# ------------------------------------------------------------------------------------------ parser


HMS_EXTRA = "pip install 'sargable[hms]' (from a checkout of sargable: pip install -e '.[hms]')"
"""The install line of the `hms` extra, which `sargable serve` needs (thrift and the HMS bindings)."""


def cmd_serve(args: argparse.Namespace, console: Console) -> None:
    """Serve the metastore over the Hive metastore Thrift API until SIGTERM / Ctrl-C (then exit 0)."""
    try:
        from sargable.hms import ServerConfig, serve
    except ModuleNotFoundError as exc:
        raise SargableError(f"sargable serve needs the hms extra ({exc}): {HMS_EXTRA}") from None
    config = ServerConfig(
        host=args.host,
        port=args.port,
        read_only=args.read_only,
        workers=args.workers,
        max_connections=args.max_connections,
        cache_bytes=int(args.cache_mb * 2**20),
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        tls_client_ca=args.tls_client_ca,
        allow=tuple(args.allow or ()),
        call_timeout=args.call_timeout or None,
    )
    if not args.create:
        _metastore(args, creating="serve --create ...").close()  # a missing metastore: an error naming where it looked
    serve(args.metastore, config, warehouse=args.warehouse, create=args.create)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative number of seconds, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="sargable", description=__doc__)
    parser.add_argument("--metastore", default=None, help="metastore URL (default: $SARGABLE_METASTORE or ./warehouse)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    explain = sub.add_parser("explain", help="show how a filter is parsed, bound, normalized and planned")
    explain.add_argument("target", help="a filter, or DB.TABLE followed by a filter")
    explain.add_argument("filter", nargs="?", help="the filter, when the first argument is DB.TABLE")
    explain.add_argument("--schema", help="bind against columns, e.g. 'ds date, hr int'")
    explain.add_argument("--dialect", default="sql", choices=["sql", "hive"])
    explain.add_argument("--json", action="store_true", help="print JSON")
    explain.set_defaults(func=cmd_explain)

    tables = sub.add_parser("tables", help="list tables with their partition keys, sizes and indexes")
    tables.add_argument("database", nargs="?", help="only this database")
    tables.add_argument(
        "--wide", action="store_true", help="whole locations and the indexes (lines as long as they are)"
    )
    tables.add_argument("--json", action="store_true", help="print JSON")
    tables.set_defaults(func=cmd_tables)

    create = sub.add_parser("create-table", help="create a table (and its database, if new)")
    create.add_argument("table", help="DB.TABLE")
    create.add_argument("--columns", help="data columns, e.g. 'user_id bigint, amount double'")
    create.add_argument("--partition-keys", help="partition keys in key order, e.g. 'ds date, hr int'")
    create.add_argument(
        "--location", help="table location (default: under the warehouse; a relative one is taken from here)"
    )
    create.add_argument("--share-location", action="store_true", help="allow a location overlapping another table's")
    create.add_argument("--index", action="append", metavar="KEY", help="a partition key to index (repeatable)")
    create.add_argument("--if-not-exists", action="store_true", help="no error if the table exists")
    create.add_argument("--json", action="store_true", help="print JSON")
    create.set_defaults(func=cmd_create_table)

    alter = sub.add_parser("alter", help="add columns (or struct fields) to a table, or widen a column's type")
    alter.add_argument("table", help="DB.TABLE")
    alter.add_argument("--add-columns", help="new columns, e.g. 'device struct<os:string>, device.model string'")
    alter.add_argument("--widen", action="append", metavar="COL:TYPE", help="widen a column, e.g. hr:bigint")
    alter.add_argument("--json", action="store_true", help="print JSON")
    alter.set_defaults(func=cmd_alter)

    blocks = sub.add_parser(
        "stats-blocks", help="show a table's statistics blocks (what data-column filters read), or --build them"
    )
    blocks.add_argument("table", help="DB.TABLE")
    blocks.add_argument(
        "--build", action="store_true", help="(re)build them from the files' entries, sorted by min (one transaction)"
    )
    blocks.add_argument("--json", action="store_true", help="print JSON")
    blocks.set_defaults(func=cmd_stats_blocks)
    partitions = sub.add_parser("partitions", help="list a table's partitions, optionally filtered")
    partitions.add_argument("table", help="DB.TABLE")
    partitions.add_argument("--filter", help="partition filter, e.g. \"ds >= '2024-01-01' and hr = 3\"")
    partitions.add_argument("--dialect", default="sql", choices=["sql", "hive"])
    partitions.add_argument("--limit", type=int, default=None, help="print at most this many")
    partitions.add_argument("--json", action="store_true", help="print JSON")
    partitions.set_defaults(func=cmd_partitions)

    head = sub.add_parser("head", help="print a table's first rows where a filter holds (read without Spark)")
    head.add_argument("table", help="DB.TABLE")
    head.add_argument("filter", nargs="?", help="a filter, e.g. \"ds = '2024-01-01' and amount > 100\"")
    head.add_argument("--columns", metavar="COL,...", help="only these columns (default: all)")
    head.add_argument("-n", "--rows", type=int, default=20, help="at most this many rows (default 20)")
    head.add_argument("--dialect", default="sql", choices=["sql", "hive"])
    formats = head.add_mutually_exclusive_group()
    formats.add_argument("--json", action="store_true", help="print one JSON document")
    formats.add_argument("--csv", action="store_true", help="print CSV with a header line")
    formats.add_argument("--parquet", metavar="FILE", help="write the rows to a Parquet file")
    head.set_defaults(func=cmd_head)

    add = sub.add_parser("add-partitions", help="add partitions from a CSV file or a list of partition names")
    add.add_argument("table", help="DB.TABLE")
    add.add_argument("source", help="a CSV file with a header naming the partition keys, a file of names, or -")
    add.add_argument("--batch-size", type=int, default=10_000, help="partitions per transaction (default 10,000)")
    add.add_argument("--if-not-exists", action="store_true", help="skip partitions that exist (to resume a load)")
    add.add_argument("--json", action="store_true", help="print JSON")
    add.set_defaults(func=cmd_add_partitions)

    vacuum = sub.add_parser(
        "vacuum",
        help="list (or --delete) the garbage of sargable's failed writes; report (never delete) unlisted files",
    )
    vacuum.add_argument("table", help="DB.TABLE")
    vacuum.add_argument("--delete", action="store_true", help="delete them (default: only list them)")
    vacuum.add_argument("--older-than", type=_seconds, default=3600.0, help="spare files younger (default 3600 s)")
    vacuum.add_argument("--json", action="store_true", help="print JSON")
    vacuum.set_defaults(func=cmd_vacuum)

    describe = sub.add_parser("describe", help="a table's layout health: files per partition, small files, ranges")
    describe.add_argument("table", help="DB.TABLE")
    describe.add_argument("--columns", help="columns whose range per file to show (default: every orderable one)")
    describe.add_argument(
        "--target-file-size", type=_size, default=128 * 1024**2, help="files under 3/4 of it are small (128MiB)"
    )
    describe.add_argument("--json", action="store_true", help="print JSON")
    describe.set_defaults(func=cmd_describe)

    optimize = sub.add_parser("optimize", help="compact small files and cluster rows by columns (Spark)")
    optimize.add_argument("table", help="DB.TABLE")
    optimize.add_argument("--where", help="only the partitions this partition filter selects")
    optimize.add_argument("--cluster-by", metavar="COL,...", help="data columns to cluster the rows by")
    optimize.add_argument("--curve", default="hilbert", choices=["hilbert", "zorder"], help="(default hilbert)")
    optimize.add_argument("--target-file-size", type=_size, default=128 * 1024**2, help="(default 128MiB)")
    optimize.add_argument("--min-input-files", type=int, default=2, help="small files that make a rewrite (2)")
    optimize.add_argument("--dry-run", action="store_true", help="print the plan only (no Spark, nothing written)")
    optimize.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    optimize.add_argument("--json", action="store_true", help="print JSON")
    optimize.set_defaults(func=cmd_optimize)

    bench = sub.add_parser("bench", help="time partition filters on a synthetic table in a temporary metastore")
    bench.add_argument("--partitions", type=int, default=100_000, help="table size (default 100,000)")
    bench.add_argument("--budget", type=float, default=1.0, help="seconds of repeated runs per filter (default 1)")
    bench.add_argument("--no-brute-force", action="store_true", help="skip the brute-force baseline")
    bench.add_argument("--json", action="store_true", help="print JSON")
    bench.set_defaults(func=cmd_bench)

    serve = sub.add_parser("serve", help="serve the metastore over the Hive metastore Thrift API (hms extra)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=9083, help="port to listen on (default 9083; 0: any free port)")
    serve.add_argument("--read-only", action="store_true", help="refuse every write with a MetaException")
    serve.add_argument("--create", action="store_true", help="create the metastore if it does not exist yet")
    serve.add_argument("--warehouse", default=None, help="where new tables go (default: $SARGABLE_WAREHOUSE)")
    serve.add_argument("--workers", type=int, default=8, help="store connections, calls served at once (default 8)")
    serve.add_argument(
        "--cache-mb",
        type=float,
        default=256,
        help="encoded replies kept, keyed by table version (default 256; 0: none)",
    )
    serve.add_argument(
        "--max-connections",
        type=int,
        default=512,
        help="client connections at most; beyond, the one idle longest is closed (default 512)",
    )
    serve.add_argument("--tls-cert", default=None, metavar="FILE", help="PEM certificate (chain): serve over TLS")
    serve.add_argument("--tls-key", default=None, metavar="FILE", help="PEM private key (default: in --tls-cert)")
    serve.add_argument(
        "--tls-client-ca",
        default=None,
        metavar="FILE",
        help="PEM CA certificates: serve only clients with a certificate they signed (mutual TLS)",
    )
    serve.add_argument(
        "--allow",
        action="append",
        metavar="CIDR,...",
        help="client addresses or networks served (repeatable); others are closed before anything is read",
    )
    serve.add_argument(
        "--call-timeout",
        type=_seconds,
        default=60.0,
        help="seconds a call may run before it is refused with a MetaException (default 60; 0: no limit)",
    )
    serve.set_defaults(func=cmd_serve)

    demo = sub.add_parser("demo", help="build a star schema with Spark into ./warehouse and run pruned queries")
    demo.add_argument("--warehouse", default="./warehouse", help="where to build the demo tables")
    demo.add_argument("--rebuild", action="store_true", help="rebuild the tables even if they exist")
    demo.add_argument("--verbose", action="store_true", help="Spark's own log lines and progress bars too")
    demo.set_defaults(func=cmd_demo)
    return parser


def _error(message: str, *, caret: bool = False) -> None:
    """One `error: ...` line on stderr; a syntax error's filter and caret lines follow it, indented."""
    lines = message.splitlines() or [""]
    if not caret:
        lines = [" ".join(" ".join(lines).split())]
    print(f"error: {lines[0]}", file=sys.stderr)
    for line in lines[1:]:
        print(f"       {line}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `sargable` console script; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        _error(str(exc))
        return 2
    except SystemExit as exc:  # --help and --version print and exit 0
        return exc.code if isinstance(exc.code, int) else 0
    console = Console()
    try:
        args.func(args, console)
    except SargableError as exc:
        _error(str(exc) or type(exc).__name__, caret=isinstance(exc, FilterSyntaxError))
        return 1
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:
        _error(str(exc))
        return 1
    except Exception as exc:  # a bug, not bad input: still one line, never a traceback
        _error(f"internal error ({type(exc).__name__}: {exc}); please report it")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
