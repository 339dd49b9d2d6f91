"""The core scan: `table.scan(where, key_sets=(), columns=None) -> Scan`, planned with no engine in the loop.

One linear pass, inside one read transaction of the metastore (the `Table` handle opens it):

1. the filter (text, bytes, `Expr`) is bound once to the table's schema (`bind_filter`);
2. `decompose` splits it: the partition part (exact: the metastore answers it, never re-applied), the file part
   (inclusive: file statistics answer it, so it stays in the residual) and the residual;
3. partitions: none listed when nothing constrains them, else the partition part through the metastore's access
   paths, intersected with the key sets on partition keys (IN lists become gets);
4. files: the table's whole listing (cached per table id and version) or the selected partitions' files (one
   multi-range read), skipped by the file part and by the key sets on data columns;
5. the `Scan`: partitions, files, the three parts of the filter, and a `ScanReport` of what was pruned.

Key sets are how a join prunes (seed 003): the values a dimension's join key holds (or their min/max range past a
bound), collected by an adapter before the scan, so planning never calls back into an engine.
This module imports nothing of `sargable.metastore`; it reads a table through the handle's public methods (the
`ScannedTable` protocol), and the handle's `scan` method calls `plan_scan`.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Protocol

from sargable.analyze import decompose
from sargable.domain import Interval, integer_runs, intersect
from sargable.errors import SargableError, TypeCoercionError
from sargable.expr import TRUE, BoundFilter, bind_filter, conjoin
from sargable.expr.bound import FilterInput, bound_between, bound_in
from sargable.plan import DEFAULT_MAX_SCANS
from sargable.stats import FileStats
from sargable.types import DataType, convert, split_converted, with_struct_leaves

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.dataset as ds

IN_RESIDUAL_MAX = 1_000
"""A key set on a data column up to this many values stays in the residual as `column IN (...)`; a larger one as its
`BETWEEN` range (an engine applies the exact values itself, e.g. as a semi-join)."""

GET_CHUNK = DEFAULT_MAX_SCANS
"""Values per partition query of a key set: the planner turns an IN list up to this size into gets."""

RUN_MIN = 8
"""Consecutive integer key values from which a run is planned as one range (a year of date keys: one scan)."""
MAX_RUNS = 64
"""Runs planned as ranges at most; a key set more scattered than that is planned as gets."""
BLOCKS_MIN_FILES = 500
"""A file filter on data columns reads the statistics blocks (`Table.files_matching`) when the selected partitions
hold about this many files or more; fewer are read file by file (one multi-range read, cheaper than the blocks:
over 100,000 files, 100 selected files plan as fast either way, 300 a third faster through the blocks, 3,000 six
times faster)."""
_SIZE = attrgetter("size_bytes")
"""A file's size (summed over every file a scan selects: `map` of it, not a generator)."""
SUMMARY_MAX = 2_000
"""Report texts longer than this are cut (a long key set's IN list would flood a report)."""


@dataclass(frozen=True)
class KeySet:
    """The values a column may hold for a row to join: a set of values, or an inclusive `[low, high]` range.

    NULL never joins: a key set holds no NULL. An empty set, or a range with a missing or crossed bound, allows
    nothing.
    """

    column: str
    values: frozenset[Any] | None = None
    low: Any = None
    high: Any = None

    @property
    def is_empty(self) -> bool:
        if self.values is not None:
            return not self.values
        return self.low is None or self.high is None or self._range().is_empty()

    def _range(self) -> Interval:
        return Interval(self.low, True, self.high, True)

    def intersect(self, other: KeySet) -> KeySet:
        """The values both key sets allow (of the same column)."""
        if self.values is not None and other.values is not None:
            return replace(self, values=self.values & other.values)
        if self.values is not None or other.values is not None:
            listed, ranged = (self, other) if self.values is not None else (other, self)
            assert listed.values is not None
            if ranged.is_empty:
                return replace(self, values=frozenset(), low=None, high=None)
            span = ranged._range()
            return replace(self, values=frozenset(v for v in listed.values if span.contains(v)), low=None, high=None)
        if self.is_empty or other.is_empty:
            return replace(self, values=frozenset(), low=None, high=None)
        both = intersect(self._range(), other._range())
        return replace(self, low=both.lo, high=both.hi)

    def typed(self, column: str, dtype: DataType) -> KeySet:
        """The key set in the column's type and spelling: a value the type can't hold can't equal any of its values
        (dropped); a range bound it can't hold empties the range."""
        if self.values is not None:
            return KeySet(column, values=frozenset(_converted(self.values, dtype)))
        bounds = _converted([self.low, self.high], dtype)
        if len(bounds) != 2:
            return KeySet(column, values=frozenset())
        return KeySet(column, low=bounds[0], high=bounds[1])

    def predicate(self, schema: Sequence[tuple[str, DataType]]) -> BoundFilter:
        """`column IN (values)` or `column BETWEEN low AND high`, bound to `schema` (the set must be typed)."""
        if self.values is not None:
            return bound_in(schema, self.column, self.values)
        return bound_between(schema, self.column, self.low, self.high)


def _converted(values: Iterable[Any], dtype: DataType) -> list[Any]:
    out, rest = split_converted(values, dtype)
    for value in rest:
        if value is None:
            continue
        try:
            out.append(convert(value, dtype))
        except TypeCoercionError:
            continue
    return out


@dataclass(frozen=True)
class ScanReport:
    """What a planned scan prunes: partitions, files and bytes (total vs selected) and the planning time."""

    table: str
    partitions_total: int
    partitions_selected: int
    files_total: int | None
    """None when unknown: a table whose files come from its folders, of which the scan listed only some."""
    files_selected: int
    bytes_total: int | None
    bytes_selected: int
    planning_ms: float
    filter: str | None = None
    partition_filter: str | None = None
    file_filter: str | None = None
    residual: str | None = None
    access: str | None = None
    """How the metastore found the partitions (None: every partition, none listed)."""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        lines = [
            f"scan of {self.table}: planned in {self.planning_ms:.1f} ms",
            f"  partitions {self.partitions_selected} of {self.partitions_total}",
            f"  files      {self.files_selected} of {_total(self.files_total)}",
            f"  bytes      {self.bytes_selected} of {_total(self.bytes_total)}",
        ]
        for label, text in (
            ("filter", self.filter),
            ("partition filter (exact)", self.partition_filter),
            ("file filter (statistics)", self.file_filter),
            ("residual (Spark)", self.residual),
            ("partitions found by", self.access),
        ):
            if text is not None:
                lines.append(f"  {label}: {text}")
        lines.extend(f"  note: {note}" for note in self.notes)
        return "\n".join(lines)


class ScannedTable(Protocol):
    """What a scan reads of a table: the `Table` handle of `sargable.metastore` (in one read transaction)."""

    @property
    def qualified_name(self) -> str: ...
    @property
    def columns(self) -> tuple[tuple[str, DataType], ...]: ...
    @property
    def partition_key_names(self) -> list[str]: ...
    @property
    def schema(self) -> list[tuple[str, DataType]]: ...
    @property
    def indexes(self) -> tuple[str, ...]: ...
    @property
    def location(self) -> str: ...
    @property
    def files_from_folders(self) -> bool: ...
    def stats(self) -> Any: ...
    def partitions(self, filter: Any = None) -> list[Any]: ...
    def partitions_explained(self, filter: Any) -> tuple[list[Any], Any]: ...
    def files(self, partitions: Iterable[Any] | None = None, *, stats: bool | Collection[str] = True) -> list[Any]: ...
    def files_matching(
        self, where: BoundFilter, partitions: Iterable[Any] | None = None, *, stats: bool | Collection[str] = True
    ) -> list[Any] | None: ...


@dataclass(frozen=True)
class Scan:
    """What to read of a table for the rows where a filter is TRUE and every key set holds: an immutable result.

    `partitions` is None when every partition is read (none was listed); `files` are the files to read;
    `partition_filter` (exact, answered by the metastore: not to re-apply), `file_filter` (inclusive, answered by
    file statistics) and `residual` (what an engine applies to the rows it reads, key-set predicates on data
    columns included) are the filter's parts, None where there is nothing to apply.
    """

    table: ScannedTable
    """The `Table` handle the scan read (the version it planned against)."""
    filter: BoundFilter | None
    partition_filter: BoundFilter | None
    file_filter: BoundFilter | None
    residual: BoundFilter | None
    key_sets: tuple[KeySet, ...]
    """The key sets as applied: one per column (intersected), typed and spelled as the table's columns."""
    partitions: tuple[Any, ...] | None
    """The `Partition` records selected, in key order (None: all, not listed)."""
    files: tuple[FileStats, ...]
    columns: tuple[str, ...] | None
    """The columns asked for, spelled as the table's (None: all)."""
    report: ScanReport
    ranged_keys: tuple[str, ...] = ()
    """Data columns whose key set the residual holds as its `BETWEEN` range only (more than `IN_RESIDUAL_MAX`
    values): an engine that must be exact applies their values itself (e.g. as a semi-join)."""
    partition_search: Any = None
    """The metastore's `FilterExplain` of the partition query (access path, plan, keys examined), when one ran."""

    # Reads without Spark (`sargable.readers`, which loads pyarrow's dataset module: imported on the first read).

    def to_batches(
        self, columns: Sequence[str] | None = None, batch_rows: int | None = None
    ) -> Iterator[pa.RecordBatch]:
        """The rows where the filter is TRUE (the residual applied exactly), as Arrow record batches of `columns`
        (default: the scan's, else every column) of at most `batch_rows` rows (None: `readers.BATCH_ROWS`),
        partition columns filled from the partitions' values; only the columns asked for (and those the residual
        needs) are read."""
        from sargable import readers

        rows = readers.BATCH_ROWS if batch_rows is None else batch_rows
        return readers.to_batches(self, self._read_columns(columns), rows)

    def to_arrow(self, columns: Sequence[str] | None = None) -> pa.Table:
        """`to_batches` as one Arrow table, of the columns' types when no row matches."""
        from sargable import readers

        return readers.to_arrow(self, self._read_columns(columns))

    def to_pandas(self, columns: Sequence[str] | None = None) -> Any:
        """`to_arrow` as a pandas DataFrame."""
        from sargable import readers

        return readers.to_pandas(self, self._read_columns(columns))

    def to_dataset(self) -> ds.Dataset:
        """A `pyarrow.dataset.Dataset` over exactly the selected files, each fragment's partition expression its
        partition values, filtered by the residual: DuckDB, Polars and Arrow push their own filters and projections
        into it. A residual with no Arrow form (functions, RLIKE) is an error here: `to_arrow` applies it."""
        from sargable import readers

        return readers.to_dataset(self)

    def to_duckdb(self, con: Any = None, name: str = "scan") -> Any:
        """Register the scan in a DuckDB connection (a new in-memory one when None) as view `name` over
        `to_dataset`; returns the connection. Needs the `duckdb` extra."""
        from sargable import readers

        return readers.to_duckdb(self, con, name)

    def to_polars(self) -> Any:
        """A lazy Polars frame of the scan (over `to_dataset`; Polars pushes its filters and projections into it).
        Needs the `polars` extra."""
        from sargable import readers

        return readers.to_polars(self)

    def _read_columns(self, columns: Sequence[str] | None) -> tuple[str, ...] | None:
        if columns is None:
            return None
        return _selected_columns(columns, [name for name, _ in self.table.schema])


def plan_scan(
    table: ScannedTable,
    where: FilterInput | BoundFilter | None = None,
    key_sets: Sequence[KeySet] = (),
    columns: Sequence[str] | None = None,
    *,
    dialect: str = "sql",
    notes: Sequence[str] = (),
    ignore_stats: Collection[str] = (),
) -> Scan:
    """Plan a scan of `table` (see the module docstring); `ignore_stats` names columns whose file statistics the
    scan must not use (an engine whose literals don't compare with them, e.g. timestamps in another time zone)."""
    started = time.perf_counter()
    schema = list(table.schema)
    bound = None if where is None else bind_filter(where, schema, dialect=dialect)
    selected = _selected_columns(columns, [n for n, _ in schema])
    keys = _merged(table, key_sets)
    partition_part, files_part, residual = _parts(table, bound, {c.lower() for c in ignore_stats})
    lowered_keys = {k.lower() for k in table.partition_key_names}
    on_partitions = [k for k in keys if k.column.lower() in lowered_keys]
    on_files = [k for k in keys if k.column.lower() not in lowered_keys]
    totals = table.stats()
    partitions, access, search = _partitions(table, partition_part, keys, on_partitions, totals.partitions)
    files, extra, ranged, listed = _files(table, partitions, files_part, on_files, totals)
    files_total, bytes_total = totals.files, totals.bytes
    if listed.folders:
        notes = [*notes, f"{listed.folders} partition folder(s) listed: the metastore has no file list for them"]
    if table.files_from_folders:
        if partitions is None or len(partitions) == totals.partitions:
            files_total, bytes_total = files_total + listed.files, bytes_total + listed.bytes
        else:
            files_total = bytes_total = None
            notes = [*notes, "files and bytes in total unknown: the table's files come from its folders, and only "
                     "the selected partitions' folders were listed"]
    residual = conjoin([*([residual] if residual is not None else []), *extra])
    report = ScanReport(
        table=table.qualified_name,
        partitions_total=totals.partitions,
        partitions_selected=totals.partitions if partitions is None else len(partitions),
        files_total=files_total,
        files_selected=len(files),
        bytes_total=bytes_total,
        bytes_selected=sum(map(_SIZE, files)),
        planning_ms=(time.perf_counter() - started) * 1000.0,
        filter=_text(bound),
        partition_filter=_text(partition_part),
        file_filter=_text(files_part),
        residual=_summary(residual),
        access=access,
        notes=tuple(notes),
    )
    return Scan(
        table=table,
        filter=bound,
        partition_filter=partition_part,
        file_filter=files_part,
        residual=residual,
        key_sets=tuple(keys),
        partitions=None if partitions is None else tuple(partitions),
        files=tuple(files),
        columns=selected,
        report=report,
        ranged_keys=ranged,
        partition_search=search,
    )


def _parts(
    table: ScannedTable, bound: BoundFilter | None, ignored: set[str]
) -> tuple[BoundFilter | None, BoundFilter | None, BoundFilter | None]:
    """The filter's partition (exact), file (inclusive) and residual parts, None where there is nothing to apply.

    Partition keys count as statistics columns too: each file has one value of each, so the file part of an OR
    across partition and data columns (`id < 10 or ds = '2024-01-01'`) can still skip files.
    """
    if bound is None:
        return None, None, None
    keys = table.partition_key_names
    stats_columns = [n for n, _ in with_struct_leaves(table.columns) if n.lower() not in ignored]
    parts = decompose(bound, partition_keys=keys, stats_columns=[*stats_columns, *keys])
    return _useful(parts.partition), _useful(parts.files), _useful(parts.residual)  # type: ignore[arg-type]


def _partitions(
    table: ScannedTable,
    partition_part: BoundFilter | None,
    keys: list[KeySet],
    on_partitions: list[KeySet],
    partitions_total: int,
) -> tuple[list[Any] | None, str | None, Any]:
    """(the partitions to read, None for all of them; how they were found; the metastore's explain of the query)."""
    if any(k.is_empty for k in keys):
        return [], "none: a join key has no value that can join", None
    if on_partitions:
        found, access = _pick_partitions(table, partition_part, on_partitions, partitions_total)
        return found, access, None
    if partition_part is None:
        return None, None, None
    found, search = table.partitions_explained(partition_part)
    return found, search.access_path, search


@dataclass(frozen=True)
class _Listed:
    """What a scan listed from folders for files no one registered: folders, files and their bytes."""

    folders: int
    files: int
    bytes: int


def _files(
    table: ScannedTable,
    partitions: list[Any] | None,
    files_part: BoundFilter | None,
    on_files: list[KeySet],
    totals: Any,
) -> tuple[list[FileStats], list[BoundFilter], tuple[str, ...], _Listed]:
    """(the files that may hold a matching row, the key-set predicates left to the residual, the data columns whose
    key set stays there as its range only, what was listed from folders for files no one registered).

    Statistics are decoded only for the columns skipping looks at. A listed file carries its partition values,
    which skipping takes as exact statistics of those columns.
    """
    schema = list(table.schema)
    wanted = set() if files_part is None else set(files_part.columns)
    wanted |= {k.column.lower() for k in on_files}
    stats = frozenset(n for n, _ in with_struct_leaves(table.columns) if n.lower() in wanted) or False
    files = _from_blocks(table, partitions, files_part, on_files, stats, totals) if wanted else None
    if files is None:
        files = table.files(partitions, stats=stats) if partitions is None or partitions else []
    unregistered, folders = _unregistered_files(table, partitions, files)
    listed = _Listed(folders, len(unregistered), sum(map(_SIZE, unregistered)))
    files = [*files, *unregistered]
    if files_part is not None and files:
        from sargable.skipping import select_files  # pyarrow: loaded only when there are files to skip

        files = select_files(files_part, files, schema)
    extra: list[BoundFilter] = []
    ranged: list[str] = []
    for key in on_files:
        if key.is_empty:
            continue
        files, kept = _skip_by_key(files, key, schema)
        extra.append(kept)
        if key.values is not None and len(key.values) > IN_RESIDUAL_MAX:
            ranged.append(key.column)
    return files, extra, tuple(ranged), listed


def _from_blocks(
    table: ScannedTable,
    partitions: list[Any] | None,
    files_part: BoundFilter | None,
    on_files: list[KeySet],
    stats: frozenset[str] | bool,
    totals: Any,
) -> list[FileStats] | None:
    """The files the table's statistics blocks leave for the file part and the data-column key sets (a superset of
    what they keep, which the per-file step then decides); None when the per-file path is cheaper (few files: about
    the files of `BLOCKS_MIN_FILES` in the selected partitions) or the blocks can't answer."""
    if table.files_from_folders or partitions == []:
        return None
    selected = totals.files if partitions is None else totals.files * len(partitions) / max(totals.partitions, 1)
    if selected < BLOCKS_MIN_FILES:
        return None
    schema = list(table.schema)
    parts = [*([files_part] if files_part is not None else []), *(k.predicate(schema) for k in on_files)]
    return table.files_matching(conjoin(parts), partitions, stats=stats)


def _unregistered_files(
    table: ScannedTable, partitions: list[Any] | None, registered: list[FileStats]
) -> tuple[list[FileStats], int]:
    """For a table engines fill without registering files (`files_from_folders`): the files of each selected
    partition (all when None) that has no registered file, listed from its folder; and how many folders that was.
    An unpartitioned table with no registered file is its location's files."""
    if not table.files_from_folders or partitions == []:
        return [], 0
    from sargable.folders import folder_files  # pyarrow.fs: loaded for such tables only, not on `import sargable`

    names = table.partition_key_names
    owner = f"table {table.qualified_name}"
    if not names:
        return ([], 0) if registered else (folder_files(table.location, {}, table.columns, owner=owner), 1)
    have = {tuple(f.partition[n] for n in names) for f in registered if f.partition is not None}
    selected = table.partitions() if partitions is None else partitions
    bare = [p for p in selected if tuple(p.values) not in have]
    return [f for p in bare for f in folder_files(p.location, p.spec, table.columns, owner=owner)], len(bare)


def _total(count: int | None) -> str:
    return "unknown" if count is None else str(count)


def _useful(part: BoundFilter | None) -> BoundFilter | None:
    """None for a part that selects everything."""
    return None if part is None or part.expr == TRUE else part


def _text(part: BoundFilter | None) -> str | None:
    return None if part is None else part.text


def _summary(part: BoundFilter | None) -> str | None:
    """Filter text for a report, cut short when a long value list would flood it."""
    text = _text(part)
    if text is None or len(text) <= SUMMARY_MAX:
        return text
    return text[:SUMMARY_MAX] + f" ... ({len(text)} characters)"


def _selected_columns(columns: Sequence[str] | None, names: list[str]) -> tuple[str, ...] | None:
    if columns is None:
        return None
    if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
        raise SargableError(f"columns must be a list of column names, got {columns!r}")
    by_lower = {n.lower(): n for n in names}
    unknown = [c for c in columns if c.lower() not in by_lower]
    if unknown:
        raise SargableError(f"unknown columns {unknown}; the table has {names}")
    return tuple(by_lower[c.lower()] for c in columns)


def _merged(table: ScannedTable, key_sets: Sequence[KeySet]) -> list[KeySet]:
    """One typed key set per column (the table's spelling): several key sets of one column intersect."""
    types = {name.lower(): (name, dtype) for name, dtype in table.schema}
    merged: dict[str, KeySet] = {}
    for key in key_sets:
        if not isinstance(key, KeySet):
            raise SargableError(f"key_sets takes KeySet records, got {type(key).__name__}")
        found = types.get(key.column.lower()) if isinstance(key.column, str) else None
        if found is None:
            raise SargableError(
                f"{key.column!r} is not a column of {table.qualified_name}; columns: {[n for n, _ in table.schema]}"
            )
        typed = key.typed(*found)
        merged[found[0]] = merged[found[0]].intersect(typed) if found[0] in merged else typed
    return list(merged.values())


def _pick_partitions(
    table: ScannedTable, static: BoundFilter | None, keys: list[KeySet], partitions_total: int
) -> tuple[list[Any], str]:
    """The partitions satisfying the static predicate and every key set on a partition key, and how they were found.

    The smallest value set on the leading partition key or an indexed one, when it has no more values than the
    table has partitions, becomes `key IN (values)` queries (at most `GET_CHUNK` values each, so the metastore
    plans gets or narrow ranges on the key prefix), conjoined with the static predicate and the key ranges;
    otherwise one query of the static predicate and ranges lists the candidates. The other value sets filter the
    result by membership.
    """
    schema = list(table.schema)
    ranges = [k.predicate(schema) for k in keys if k.values is None]
    value_sets = sorted((k for k in keys if k.values is not None), key=lambda k: len(k.values or ()))
    base = [p for p in (static, *ranges) if p is not None]
    prefixes = {table.partition_key_names[0].lower(), *(c.lower() for c in table.indexes)}
    leads = [k for k in value_sets if k.column.lower() in prefixes and len(k.values or ()) <= partitions_total]
    if leads:
        lead = leads[0]
        assert lead.values is not None
        ordered = sorted(lead.values)
        found: list[Any] = []
        segments = _segments(ordered, dict(schema)[lead.column].is_integral)
        for segment in segments:
            found.extend(table.partitions(conjoin([*base, KeySet(lead.column, **segment).predicate(schema)])))
        queries = len(segments)
        access = f"{lead.column} IN ({len(ordered)} values): {queries} metastore quer{'y' if queries == 1 else 'ies'}"
        rest = [k for k in value_sets if k is not lead]
    else:
        found = table.partitions(conjoin(base))
        rest = value_sets
        access = "one partition query" + (", then the key values filter the partitions in memory" if rest else "")
    if rest:
        positions = {k.lower(): i for i, k in enumerate(table.partition_key_names)}
        tests = [(positions[k.column.lower()], k.values) for k in rest]
        found = [p for p in found if all(p.values[i] in members for i, members in tests)]  # type: ignore[operator]
    return found, access


def _segments(ordered: list[Any], integral: bool) -> list[dict[str, Any]]:
    """Sorted key values as KeySet fields, in value order: runs of at least `RUN_MIN` consecutive integers as one
    `low`/`high` range each (one range scan, the same values), the others as `values` chunks of up to `GET_CHUNK`.

    Past `MAX_RUNS` runs the values are all chunks."""
    if not integral:
        return _chunks(ordered)
    runs = integer_runs(ordered)
    if sum(last - first + 1 >= RUN_MIN for first, last in runs) > MAX_RUNS:
        return _chunks(ordered)
    segments: list[dict[str, Any]] = []
    pending: list[Any] = []
    start = 0
    for first, last in runs:
        size = last - first + 1
        if size >= RUN_MIN:
            segments.extend(_chunks(pending))
            pending = []
            segments.append({"low": first, "high": last})
        else:
            pending.extend(ordered[start : start + size])
        start += size
    return [*segments, *_chunks(pending)]


def _chunks(values: list[Any]) -> list[dict[str, Any]]:
    return [{"values": frozenset(values[start : start + GET_CHUNK])} for start in range(0, len(values), GET_CHUNK)]


def _skip_by_key(
    files: list[FileStats], key: KeySet, schema: list[tuple[str, DataType]]
) -> tuple[list[FileStats], BoundFilter]:
    """The files that may hold one of a data-column key set's values (`column IN (values)` or its `BETWEEN` range,
    through the one file-statistics evaluator), and the predicate left to the residual: the IN list up to
    `IN_RESIDUAL_MAX` values, else the range."""
    from sargable.skipping import select_files  # pyarrow: loaded only when there are files to skip

    predicate = key.predicate(schema)
    kept = select_files(predicate, files, schema) if files else files
    if key.values is None or len(key.values) <= IN_RESIDUAL_MAX:
        return kept, predicate
    return kept, KeySet(key.column, low=min(key.values), high=max(key.values)).predicate(schema)
