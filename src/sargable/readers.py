"""Reading a planned scan without Spark: Arrow record batches, an Arrow table, pandas, a `pyarrow.dataset`, DuckDB
and Polars (the `Scan.to_*` methods call these).

One path: the scan's files become one `pyarrow.dataset` (`scan_dataset`), a fragment per file whose partition
expression holds the file's partition values (`ds = 2024-01-01 and hr = 3`; `hr IS NULL` for a NULL partition), over
the table's schema as Arrow types (`arrow_schema`), so Arrow fills the partition columns from them, casts what a file
holds to the table's types and reads only the columns a read projects. The residual (and a join's key values the
residual holds only as a range) is translated once by `sargable.arrow_filter`: what has an Arrow form is the
scanner's filter (pushed into row-group statistics and applied in Arrow); what has none is applied by sargable's
evaluator to each batch's rows, its columns read and dropped after. The partition filter is exact and never
re-applied. Files are opened through `sargable.fs`, so whatever file systems it opens (local, S3) are read.

DuckDB and Polars read the dataset, with the residual as the dataset's filter, and push their own filters and
projections into it. They are extras, imported on use.
"""

from __future__ import annotations

import importlib
import posixpath
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from pyarrow import fs as pafs

from sargable.arrow_filter import split_for_arrow
from sargable.errors import SargableError
from sargable.expr import Expr, columns_of
from sargable.expr.evaluate import compile_predicate
from sargable.fs import FileSystem
from sargable.paths import parts_of
from sargable.skipping.table import arrow_type
from sargable.stats import FileStats
from sargable.types import DataType

BATCH_ROWS = 65_536
"""Rows per record batch at most (Arrow's scanner reads this many at a time; a filter may leave fewer)."""
_PARQUET = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(coerce_int96_timestamp_unit="us"))
"""Parquet as Spark writes it: legacy INT96 timestamps read as microseconds (nanoseconds overflow before 1677)."""


class ReadTable(Protocol):
    """What a read needs of the scanned table (the `Table` handle)."""

    @property
    def qualified_name(self) -> str: ...
    @property
    def schema(self) -> list[tuple[str, DataType]]: ...
    @property
    def partition_key_names(self) -> list[str]: ...
    @property
    def location(self) -> str: ...


class ReadScan(Protocol):
    """What a read needs of a planned scan (`sargable.scan.Scan`)."""

    @property
    def table(self) -> Any: ...
    @property
    def files(self) -> tuple[FileStats, ...]: ...
    @property
    def residual(self) -> Any: ...
    @property
    def key_sets(self) -> tuple[Any, ...]: ...
    @property
    def ranged_keys(self) -> tuple[str, ...]: ...
    @property
    def columns(self) -> tuple[str, ...] | None: ...


def column_arrow_type(dtype: DataType) -> pa.DataType:
    """The Arrow type of a column's Hive type, the complex and binary types included."""
    if dtype.name == "binary":
        return pa.binary()
    if dtype.name == "array":
        return pa.list_(column_arrow_type(dtype.children[0]))
    if dtype.name == "map":
        return pa.map_(column_arrow_type(dtype.children[0]), column_arrow_type(dtype.children[1]))
    if dtype.name == "struct":
        return pa.struct(
            [(name, column_arrow_type(child)) for name, child in zip(dtype.field_names, dtype.children, strict=True)]
        )
    return arrow_type(dtype)


def arrow_schema(table: ReadTable) -> pa.Schema:
    """The table's columns then its partition keys, as Arrow fields (timestamps as naive microseconds of UTC)."""
    return pa.schema([(name, column_arrow_type(dtype)) for name, dtype in table.schema])


def scan_dataset(scan: ReadScan) -> ds.Dataset:
    """A dataset over exactly the scan's files, each fragment's partition expression its partition values; no
    filter (see `to_dataset`). Files on several file systems make a union of one dataset each."""
    table = scan.table
    schema = arrow_schema(table)
    groups: dict[str, tuple[Any, list[str], list[pc.Expression]]] = {}
    natives = _NativePaths(table.location)
    expressions = _PartitionExpressions(table)
    for file in scan.files:
        root, fs, native = natives.of(file.path)
        group = groups.setdefault(root, (fs, [], []))
        group[1].append(native)
        group[2].append(expressions.of(file))
    datasets = [
        ds.FileSystemDataset.from_paths(paths, schema=schema, format=_PARQUET, filesystem=fs, partitions=parts)
        for fs, paths, parts in groups.values()
    ]
    if len(datasets) == 1:
        return datasets[0]
    if not datasets:
        return ds.FileSystemDataset.from_paths([], schema=schema, format=_PARQUET, filesystem=pafs.LocalFileSystem())
    return ds.UnionDataset(schema, datasets)


class _NativePaths:
    """pyarrow's file system and path of each file, and the root (`scheme://authority`, "" for local) it groups by:
    through the table location's `FileSystem` for its files, a `FileSystem` of the file's folder for a file
    registered elsewhere. Canonical paths have no empty or `.` components, so a path lies below the location exactly
    when it starts with the location and a slash."""

    def __init__(self, location: str) -> None:
        self.table_fs = FileSystem.at(location)
        self.prefix = location.rstrip("/") + "/"
        self.native_prefix = self.table_fs.root.rstrip("/") + "/"
        self.root = parts_of(location)[0]
        self.folders: dict[str, FileSystem] = {}

    def of(self, path: str) -> tuple[str, Any, str]:
        if path.startswith(self.prefix):
            return self.root, self.table_fs.fs, self.native_prefix + path[len(self.prefix) :]
        folder = posixpath.dirname(path)
        fs = self.folders.get(folder)
        if fs is None:
            fs = self.folders[folder] = FileSystem.at(folder)
        return parts_of(path)[0], fs.fs, fs.native(path)


class _PartitionExpressions:
    """Each file's partition expression, `key = value and ...` (`key IS NULL` for NULL; TRUE for a file with no
    partition values), made of one term per distinct value of a key."""

    def __init__(self, table: ReadTable) -> None:
        types = dict(table.schema)
        self.keys = [(key, pc.field(key), arrow_type(types[key])) for key in table.partition_key_names]
        self.terms: dict[tuple[str, Any], pc.Expression] = {}

    def of(self, file: FileStats) -> pc.Expression:
        if not self.keys or file.partition is None:
            return pc.scalar(True)
        expression = None
        for key, field, arrow in self.keys:
            value = file.partition.get(key)
            term = self.terms.get((key, value))
            if term is None:
                term = field.is_null() if value is None else field == pc.scalar(pa.scalar(value, arrow))
                self.terms[(key, value)] = term
            expression = term if expression is None else expression & term
        assert expression is not None
        return expression


def _filters(scan: ReadScan) -> tuple[pc.Expression | None, Expr | None]:
    """(the Arrow filter, what sargable's evaluator applies): the residual, plus the values of the key sets whose
    residual predicate is only their range."""
    arrow, rest = split_for_arrow(None if scan.residual is None else scan.residual.expr)
    types = dict(scan.table.schema)
    for key in scan.key_sets:
        if key.column in scan.ranged_keys and key.values is not None:
            values = pa.array(sorted(key.values), arrow_type(types[key.column]))
            member = pc.field(key.column).isin(values)
            arrow = member if arrow is None else arrow & member
    return arrow, rest


def _output_columns(scan: ReadScan, columns: Sequence[str] | None) -> list[str]:
    """The columns to return (spelled as the table's, as `Scan` checks them): `columns`, else the scan's, else all."""
    if columns is not None:
        return list(columns)
    return list(scan.columns) if scan.columns is not None else [name for name, _ in scan.table.schema]


def to_batches(
    scan: ReadScan, columns: Sequence[str] | None = None, batch_rows: int = BATCH_ROWS
) -> Iterator[pa.RecordBatch]:
    """The rows of the scan where its residual is TRUE, as record batches of the asked columns (see the module)."""
    if not isinstance(batch_rows, int) or isinstance(batch_rows, bool) or batch_rows < 1:
        raise SargableError(f"batch_rows must be a positive integer, got {batch_rows!r}")
    output = _output_columns(scan, columns)
    arrow, rest = _filters(scan)
    return _batches(scan, output, arrow, rest, batch_rows)


def _batches(
    scan: ReadScan, output: list[str], arrow: pc.Expression | None, rest: Expr | None, batch_rows: int
) -> Iterator[pa.RecordBatch]:
    if not scan.files:
        return
    needed = list(output)
    if rest is not None:
        by_lower = {name.lower(): name for name, _ in scan.table.schema}
        needed += [c for c in dict.fromkeys(by_lower[n.lower()] for n in columns_of(rest)) if c not in needed]
    predicate = None if rest is None else compile_predicate(rest)
    scanner = scan_dataset(scan).scanner(columns=needed, filter=arrow, batch_size=batch_rows)
    batches = scanner.to_batches()
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except (pa.ArrowException, OSError) as exc:  # a file gone, not Parquet, or of another column type
            raise SargableError(f"reading {scan.table.qualified_name}: {exc}") from exc
        if predicate is not None and batch.num_rows:
            keep = [predicate(row) is True for row in batch.to_pylist()]
            batch = batch.filter(pa.array(keep, pa.bool_())).select(output)
        if batch.num_rows:
            yield batch


def output_schema(scan: ReadScan, columns: Sequence[str] | None = None) -> pa.Schema:
    """The schema of the batches `to_batches(scan, columns)` yields."""
    full = arrow_schema(scan.table)
    return pa.schema([full.field(name) for name in _output_columns(scan, columns)])


def to_arrow(scan: ReadScan, columns: Sequence[str] | None = None) -> pa.Table:
    """`to_batches` as one Arrow table (of the right schema when no row matches)."""
    return _table(scan, columns, *_filters(scan))


def _table(scan: ReadScan, columns: Sequence[str] | None, arrow: pc.Expression | None, rest: Expr | None) -> pa.Table:
    batches = _batches(scan, _output_columns(scan, columns), arrow, rest, BATCH_ROWS)
    return pa.Table.from_batches(list(batches), schema=output_schema(scan, columns))


def to_pandas(scan: ReadScan, columns: Sequence[str] | None = None) -> Any:
    """`to_arrow` as a pandas DataFrame (the `pandas` extra)."""
    _extra("pandas", "pandas")
    return to_arrow(scan, columns).to_pandas()


def to_dataset(scan: ReadScan) -> ds.Dataset:
    """The scan's files as a dataset filtered by the residual, for engines that push their own filters and
    projections into a `pyarrow.dataset` (DuckDB, Polars); a residual with no Arrow form is an error, as a dataset
    can't apply it (`to_batches` and `to_arrow` do)."""
    arrow, rest = _filters(scan)
    if rest is not None:
        raise SargableError(
            f"the residual part {rest} of the scan of {scan.table.qualified_name} has no Arrow form, so no "
            "pyarrow dataset can apply it; read with scan.to_batches() or scan.to_arrow(), which apply it row by row"
        )
    return _filtered(scan, arrow)


def _filtered(scan: ReadScan, arrow: pc.Expression | None) -> ds.Dataset:
    dataset = scan_dataset(scan)
    return dataset if arrow is None else dataset.filter(arrow)


def _extra(module: str, extra: str) -> Any:
    """An optional dependency, or a SargableError naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise SargableError(f"{module} is not installed: pip install 'sargable[{extra}]'") from None


def to_duckdb(scan: ReadScan, con: Any = None, name: str = "scan") -> Any:
    """Register the scan in a DuckDB connection (a new in-memory one when None) as the view `name`; returns the
    connection. DuckDB reads the dataset (`to_dataset`), pushing its filters and projections into it; a residual
    with no Arrow form is applied while reading (`to_arrow`), and the rows are registered."""
    duckdb = _extra("duckdb", "duckdb")
    if con is None:
        con = duckdb.connect()
    if not isinstance(con, duckdb.DuckDBPyConnection):
        raise SargableError(f"con must be a duckdb connection, got {type(con).__name__}")
    if not isinstance(name, str) or not name:
        raise SargableError(f"name must be a non-empty view name, got {name!r}")
    arrow, rest = _filters(scan)
    con.register(name, _filtered(scan, arrow) if rest is None else _table(scan, None, arrow, rest))
    return con


def to_polars(scan: ReadScan) -> Any:
    """A Polars LazyFrame of the scan: over the dataset (`to_dataset`), Polars pushing its filters and projections
    into it; with a residual that has no Arrow form, over `to_batches` (the columns Polars projects only)."""
    pl = _extra("polars", "polars")
    arrow, rest = _filters(scan)
    if rest is None:
        return pl.scan_pyarrow_dataset(_filtered(scan, arrow))
    from polars.io.plugins import register_io_source

    schema = pl.from_arrow(output_schema(scan).empty_table()).schema

    def source(with_columns: list[str] | None, predicate: Any, n_rows: int | None, batch_size: int | None) -> Any:
        left = n_rows
        output = _output_columns(scan, with_columns)
        for batch in _batches(scan, output, arrow, rest, batch_size or BATCH_ROWS):
            frame = pl.from_arrow(batch)
            if predicate is not None:
                frame = frame.filter(predicate)
            if left is not None:
                frame = frame.head(left)
                left -= frame.height
            yield frame
            if left is not None and left <= 0:
                return

    return register_io_source(source, schema=schema)
