"""`FileStatsTable`: the statistics of many files as Arrow columns, the input of vectorized data skipping.

Layout (one row per file; extra top-level columns, such as partition values, are kept and filtered along):

    path: string, row_count: int64, size_bytes: int64,
    columns: struct<NAME: struct<min: T, max: T, null_count: int64, nan_count: int64,
                                 min_exact: bool, max_exact: bool, distinct: list<T>>, ...>

where `T` is the Arrow type of the column's Hive type (`arrow_type`). A NULL anywhere means "unknown"; every field
of a column's struct may be left out (all unknown; `min_exact` / `max_exact` default to true). A `FileStats`'s
partition values count as exact statistics of the partition columns, as in the row-at-a-time path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sargable.errors import PushdownError, StatisticsError
from sargable.expr.nodes import Expr
from sargable.skipping.leaves import compile_predicate, schema_key
from sargable.skipping.vector import may_match_mask, outcome_masks
from sargable.stats import UNKNOWN, ColumnStats, FileStats, column_stats
from sargable.types import DataType

STAT_FIELDS = ("min", "max", "null_count", "nan_count", "min_exact", "max_exact", "distinct")
_TRUTH_NAMES = ("all", "none", "some")
"""`FileStatsTable.truth`'s values by index; made an Arrow array on use (pyarrow imports pandas on its first array)."""


def arrow_type(dtype: DataType) -> pa.DataType:
    """The Arrow type holding values of a Hive type (timestamps as naive microseconds)."""
    name = dtype.name
    if dtype.is_string:
        return pa.string()
    simple = {
        "tinyint": pa.int8(),
        "smallint": pa.int16(),
        "int": pa.int32(),
        "bigint": pa.int64(),
        "float": pa.float32(),
        "double": pa.float64(),
        "date": pa.date32(),
        "timestamp": pa.timestamp("us"),
        "boolean": pa.bool_(),
    }
    if name in simple:
        return simple[name]
    if name == "decimal":
        return pa.decimal128(dtype.precision or 38, dtype.scale or 0)
    raise PushdownError(f"no Arrow type for column type {dtype}")


def stats_struct_type(dtype: DataType) -> pa.StructType:
    """The Arrow struct type of one column's statistics."""
    value = arrow_type(dtype)
    return pa.struct(
        [
            ("min", value),
            ("max", value),
            ("null_count", pa.int64()),
            ("nan_count", pa.int64()),
            ("min_exact", pa.bool_()),
            ("max_exact", pa.bool_()),
            ("distinct", pa.list_(value)),
        ]
    )


class ColumnArrays:
    """One column's statistics over all files, as flat Arrow arrays of the column's Arrow type `value_type` (NULL =
    unknown; `nan_count` is None for columns that can't hold NaN and don't list it)."""

    __slots__ = ("distinct", "dtype", "max", "max_exact", "min", "min_exact", "nan_count", "null_count", "value_type")

    def __init__(self, dtype: DataType, fields: dict[str, pa.Array], length: int) -> None:
        value_type = arrow_type(dtype)
        self.dtype, self.value_type = dtype, value_type
        self.min = fields.get("min", pa.nulls(length, value_type))
        self.max = fields.get("max", pa.nulls(length, value_type))
        self.null_count = fields.get("null_count", pa.nulls(length, pa.int64()))
        self.nan_count = fields.get("nan_count")
        if self.nan_count is None and dtype.is_floating:
            self.nan_count = pa.nulls(length, pa.int64())
        self.min_exact = pc.fill_null(fields.get("min_exact", pa.nulls(length, pa.bool_())), True)
        self.max_exact = pc.fill_null(fields.get("max_exact", pa.nulls(length, pa.bool_())), True)
        distinct = fields.get("distinct")
        self.distinct = distinct if distinct is not None and distinct.null_count < length else None


def _combined(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One contiguous array (a single chunk is used as it is: `combine_chunks` would copy it)."""
    if not isinstance(array, pa.ChunkedArray):
        return array
    return array.chunk(0) if array.num_chunks == 1 else array.combine_chunks()


class FileStatsTable:
    """Statistics of many files as Arrow columns (see the module docstring for the layout), bound to a schema."""

    def __init__(self, table: pa.Table, schema: Sequence[tuple[str, Any]]) -> None:
        self._schema = schema_key(schema)
        self._table = table
        self._columns: dict[str, ColumnArrays] = {}
        self.cache: dict[Any, Any] = {}
        self._validate()

    def _validate(self) -> None:
        names = self._table.column_names
        for required in ("path", "row_count"):
            if required not in names:
                raise StatisticsError(f"a file statistics table needs a {required!r} column; it has {names}")
        length = self._table.num_rows
        self.row_count = self._cast(_combined(self._table.column("row_count")), pa.int64(), "row_count")
        if self.row_count.null_count or (length and pc.min(self.row_count).as_py() < 0):
            raise StatisticsError("row_count must be known and non-negative for every file")
        if "columns" not in names:
            return
        stats = _combined(self._table.column("columns"))
        if not pa.types.is_struct(stats.type):
            raise StatisticsError(f"the 'columns' column must be a struct of column statistics, got {stats.type}")
        present = {stats.type.field(i).name: i for i in range(stats.type.num_fields)}
        for name, dtype in self._schema:
            if name not in present:
                continue
            column = pc.struct_field(stats, [present[name]])
            if not pa.types.is_struct(column.type):
                raise StatisticsError(f"statistics of column {name!r} must be a struct, got {column.type}")
            wanted = stats_struct_type(dtype)
            fields: dict[str, pa.Array] = {}
            for index in range(column.type.num_fields):
                field_name = column.type.field(index).name
                if field_name not in STAT_FIELDS:
                    continue
                target = wanted.field(field_name).type
                fields[field_name] = self._cast(pc.struct_field(column, [index]), target, f"{name}.{field_name}")
            self._columns[name] = ColumnArrays(dtype, fields, length)

    @staticmethod
    def _cast(array: pa.Array, target: pa.DataType, what: str) -> pa.Array:
        if array.type == target:
            return array
        try:
            return array.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise StatisticsError(f"statistic {what} can't be read as {target}: {exc}") from None

    @classmethod
    def from_arrow(cls, table: pa.Table, schema: Sequence[tuple[str, Any]]) -> FileStatsTable:
        """Wrap an Arrow table in the documented layout (validated; statistics cast to the schema's types)."""
        if not isinstance(table, pa.Table):
            raise StatisticsError(f"expected a pyarrow Table of file statistics, got {type(table).__name__}")
        return cls(table, schema)

    @classmethod
    def from_files(cls, files: Sequence[FileStats], schema: Sequence[tuple[str, Any]]) -> FileStatsTable:
        """Build the Arrow layout from `FileStats` records (partition values become exact column statistics;
        statistics no file has are left out)."""
        key = schema_key(schema)
        for file in files:
            if not isinstance(file, FileStats):
                raise PushdownError(f"expected sargable.FileStats records, got {type(file).__name__}")
        arrays = []
        names = []
        for name, dtype in key:
            per_file = [column_stats(f, name) for f in files]
            if all(s == UNKNOWN for s in per_file):
                continue
            names.append(name)
            arrays.append(stats_struct_array(per_file, dtype, name))
        columns = (
            pa.StructArray.from_arrays(arrays, names=names)
            if arrays
            else pa.array([{}] * len(files), pa.struct([]))
        )
        table = pa.table(
            {
                "path": pa.array([f.path for f in files], pa.string()),
                "row_count": pa.array([f.row_count for f in files], pa.int64()),
                "size_bytes": pa.array([f.size_bytes for f in files], pa.int64()),
                "columns": columns,
            }
        )
        return cls(table, schema)

    @property
    def table(self) -> pa.Table:
        """The Arrow table (documented layout plus any extra columns)."""
        return self._table

    @property
    def schema(self) -> list[tuple[str, DataType]]:
        return list(self._schema)

    @property
    def nbytes(self) -> int:
        """Bytes held by the table's Arrow buffers."""
        return self._table.nbytes

    def __len__(self) -> int:
        return self._table.num_rows

    def column(self, name: str) -> ColumnArrays | None:
        """The statistics arrays of one column, or None when the table has none for it."""
        return self._columns.get(name)

    def may_match(self, expr: Expr | str) -> pa.BooleanArray:
        """Per file: whether a row may satisfy the predicate (the vectorized `may_match`)."""
        return may_match_mask(compile_predicate(expr, self._schema), self)

    def truth(self, expr: Expr | str) -> pa.DictionaryArray:
        """Per file: "all" (every row satisfies the predicate), "none" (skip it) or "some" (the vectorized
        `file_truth`)."""
        yes, no, null = outcome_masks(compile_predicate(expr, self._schema), self)
        only_yes = pc.and_(yes, pc.invert(pc.or_(no, null)))
        indices = pc.if_else(pc.invert(yes), 1, pc.if_else(only_yes, 0, 2)).cast(pa.int8())
        return pa.DictionaryArray.from_arrays(indices, pa.array(_TRUTH_NAMES))

    def select(self, expr: Expr | str) -> FileStatsTable:
        """The files that may hold a matching row, as a new table (same layout and extra columns)."""
        selected = FileStatsTable.__new__(FileStatsTable)
        selected._schema = self._schema
        selected._table = self._table.filter(self.may_match(expr))
        selected._columns = {}
        selected.cache = {}
        selected._validate()
        return selected

    def file(self, index: int) -> FileStats:
        """The `FileStats` record of one row."""
        row = self._table.slice(index, 1).to_pylist()[0]
        columns = {}
        for name, stats in (row.get("columns") or {}).items():
            if stats is None:
                continue
            distinct = stats.get("distinct")
            columns[name] = ColumnStats(
                min=stats.get("min"),
                max=stats.get("max"),
                null_count=stats.get("null_count"),
                nan_count=stats.get("nan_count"),
                distinct=frozenset(distinct) if distinct is not None else None,
                min_exact=stats.get("min_exact") is not False,
                max_exact=stats.get("max_exact") is not False,
            )
        return FileStats(row["path"], row["row_count"], row.get("size_bytes") or 0, columns)


def stats_struct_array(
    per_file: Sequence[ColumnStats], dtype: DataType, name: str, *, every_field: bool = False
) -> pa.StructArray:
    """One column's statistics of many files in the `stats_struct_type` layout; fields no file has (all unknown, or
    all exact) are left out unless `every_field` (batches that must share one schema). A statistic that is not a
    value of `dtype` is a StatisticsError."""
    struct_type = stats_struct_type(dtype)
    values = {
        "min": [s.min for s in per_file],
        "max": [s.max for s in per_file],
        "null_count": [s.null_count for s in per_file],
        "nan_count": [s.nan_count for s in per_file],
        "min_exact": [s.min_exact for s in per_file],
        "max_exact": [s.max_exact for s in per_file],
        "distinct": [None if s.distinct is None else list(s.distinct) for s in per_file],
    }
    arrays, fields = [], []
    for field in struct_type:
        default = True if field.name.endswith("_exact") else None
        if not every_field and all(v is default for v in values[field.name]):
            continue
        try:
            arrays.append(pa.array(values[field.name], field.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as exc:
            raise StatisticsError(f"statistic {field.name} of column {name!r} is not a {dtype} value: {exc}") from None
        fields.append(field)
    if not fields:
        return pa.array([{}] * len(per_file), pa.struct([]))
    return pa.StructArray.from_arrays(arrays, fields=fields)
