"""The `sargable` command line: explain filters, list tables and partitions, run the demo.

Every command exits 0 on success and 1 with a one-line `error: ...` on bad input (a `SargableError`);
`--json` gives machine-readable output where a command prints data.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from sargable.errors import SargableError
from sargable.expr import bind, normalize, parse, render, to_sarg
from sargable.types import DataType, parse_type


def parse_schema(text: str) -> list[tuple[str, DataType]]:
    """`"a int, ds date, amount decimal(10,2)"` -> [(name, type), ...]; commas inside parentheses are kept."""
    columns: list[tuple[str, DataType]] = []
    depth, start = 0, 0
    parts = []
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
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


def _explain_filter(text: str, schema: str | None, dialect: str) -> dict[str, Any]:
    expr = parse(text, dialect=dialect)
    out: dict[str, Any] = {"parsed": render(expr)}
    if schema:
        expr = bind(expr, parse_schema(schema))
        out["bound"] = render(expr)
    out["normalized"] = render(normalize(expr))
    out["search_argument"] = str(to_sarg(expr))
    return out


def _print_mapping(console: Console, title: str, data: dict[str, Any]) -> None:
    table = Table(title=title, show_header=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for key, value in data.items():
        table.add_row(key.replace("_", " "), str(value))
    console.print(table)


def cmd_explain(args: argparse.Namespace, console: Console) -> None:
    if args.filter is None:
        data = _explain_filter(args.target, args.schema, args.dialect)
        title = "filter"
    else:
        from sargable.metastore import Metastore

        db, table = _split_table(args.target)
        with Metastore.open(args.metastore) as ms:
            data = ms.explain_filter(db, table, args.filter, dialect=args.dialect).to_dict()
        title = f"{db}.{table}"
    if args.json:
        print(json.dumps(data, default=str))
    else:
        _print_mapping(console, title, data)


def _split_table(text: str) -> tuple[str, str]:
    db, sep, table = text.partition(".")
    if not sep or not db or not table:
        raise SargableError(f"expected DB.TABLE, got {text!r}")
    return db, table


def cmd_tables(args: argparse.Namespace, console: Console) -> None:
    from sargable.metastore import Metastore

    with Metastore.open(args.metastore) as ms:
        names = ms.list_tables(args.database)
        rows = []
        for qualified in names if args.database is None else [f"{args.database}.{n}" for n in names]:
            table = ms.get_table(*_split_table(qualified))
            rows.append(
                {
                    "table": table.qualified_name,
                    "partition_keys": ", ".join(f"{n} {t}" for n, t in table.partition_keys),
                    "partitions": ms.count_partitions(table.database, table.name),
                    "indexes": ", ".join(table.indexes),
                    "location": table.location,
                }
            )
    _print_rows(console, args.json, rows, title="tables")


def cmd_partitions(args: argparse.Namespace, console: Console) -> None:
    from sargable.metastore import Metastore

    db, table = _split_table(args.table)
    with Metastore.open(args.metastore) as ms:
        parts = ms.iter_partitions(db, table, args.filter, dialect=args.dialect)
        rows = [{"name": p.name, "location": p.location} for p in itertools.islice(parts, args.limit)]
    _print_rows(console, args.json, rows, title=f"{db}.{table}")


def cmd_demo(args: argparse.Namespace, console: Console) -> None:
    try:
        from sargable.spark.demo import run_demo
    except ImportError as exc:
        raise SargableError(f"the demo needs Spark: pip install 'sargable[spark]' ({exc})") from None
    run_demo(args.warehouse, rebuild=args.rebuild, console=console)


def _print_rows(console: Console, as_json: bool, rows: list[dict[str, Any]], *, title: str) -> None:
    if as_json:
        print(json.dumps(rows, default=str))
        return
    table = Table(title=f"{title} ({len(rows)} rows)")
    for column in rows[0] if rows else ["(none)"]:
        table.add_column(column.replace("_", " "), overflow="fold")
    for row in rows:
        table.add_row(*(str(v) for v in row.values()))
    console.print(table)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sargable", description=__doc__)
    parser.add_argument("--metastore", default=None, help="metastore URL (default: $SARGABLE_METASTORE or ./warehouse)")
    sub = parser.add_subparsers(dest="command", required=True)

    explain = sub.add_parser("explain", help="show how a filter is parsed, bound, normalized and planned")
    explain.add_argument("target", help="a filter, or DB.TABLE followed by a filter")
    explain.add_argument("filter", nargs="?", help="the filter, when the first argument is DB.TABLE")
    explain.add_argument("--schema", help="bind against columns, e.g. 'ds date, hr int'")
    explain.add_argument("--dialect", default="sql", choices=["sql", "hive"])
    explain.add_argument("--json", action="store_true", help="print JSON")
    explain.set_defaults(func=cmd_explain)

    tables = sub.add_parser("tables", help="list tables with their partition keys and partition counts")
    tables.add_argument("database", nargs="?", help="only this database")
    tables.add_argument("--json", action="store_true", help="print JSON")
    tables.set_defaults(func=cmd_tables)

    partitions = sub.add_parser("partitions", help="list a table's partitions, optionally filtered")
    partitions.add_argument("table", help="DB.TABLE")
    partitions.add_argument("--filter", help="partition filter, e.g. \"ds >= '2024-01-01' and hr = 3\"")
    partitions.add_argument("--dialect", default="sql", choices=["sql", "hive"])
    partitions.add_argument("--limit", type=int, default=None, help="print at most this many")
    partitions.add_argument("--json", action="store_true", help="print JSON")
    partitions.set_defaults(func=cmd_partitions)
    demo = sub.add_parser("demo", help="build a star schema with Spark into ./warehouse and run pruned queries")
    demo.add_argument("--warehouse", default="./warehouse", help="where to build the demo tables")
    demo.add_argument("--rebuild", action="store_true", help="rebuild the tables even if they exist")
    demo.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `sargable` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    console = Console()
    try:
        args.func(args, console)
    except SargableError as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"error: {first_line}", file=sys.stderr)
        for line in str(exc).splitlines()[1:]:
            print(f"       {line}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
