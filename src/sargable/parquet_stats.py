"""Reading file statistics: from a Parquet footer (cheap, no data read) or from Arrow data (exact, full read).

What comes from where:

- Footer (`stats_from_parquet`): row count; per top-level column (and, given a schema, per primitive field of a
  struct, reached through structs only: `device.os`) and row group the min/max (decoded from the
  raw bytes by physical and logical type) and the NULL count, merged over all row groups. A statistic missing from
  any row group with rows makes the merged one unknown (`None`). Not in the footer: NaN counts (Parquet float
  bounds exclude NaN, so `nan_count` stays unknown), value sets (dictionary pages are not in the footer), and the
  exactness of bounds (pyarrow does not expose `is_min_value_exact`), so string bounds whose UTF-8 length comes
  within 4 bytes of `truncation_length` (writers cut on a character boundary) are flagged inexact, and a string
  bound that is not valid UTF-8 (cut mid-character) is kept as its valid prefix (min) or dropped (max). INT96
  timestamps (Spark's legacy default) have no usable statistics.
- Data (`stats_from_arrow`, or `stats_from_parquet(..., read_data=True)`): everything exact, including NaN counts
  and value sets of up to `MAX_DISTINCT` values, the way a writer computes them while writing.

Timestamps become naive `datetime`s of UTC wall-clock time, as Spark's TIMESTAMP_MICROS values read in UTC.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import struct
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    import pyarrow.parquet as pq

from sargable.errors import SargableError, StatisticsError
from sargable.stats import MAX_DISTINCT, ColumnStats, FileStats
from sargable.types import DECIMAL_CONTEXT, DataType, convert, field_path, parse_type, with_struct_leaves

STRING_TRUNCATION_LENGTH = 64
"""parquet-mr's default truncation length (bytes) for binary statistics: bounds this long may be truncated."""

_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)


def _schema_types(schema: Sequence[tuple[str, Any]] | None) -> dict[str, DataType] | None:
    """Columns and their structs' primitive fields (`device.os`) by name."""
    if schema is None:
        return None
    try:
        return dict(with_struct_leaves([(name, parse_type(dtype)) for name, dtype in schema]))
    except (TypeError, ValueError):
        raise StatisticsError("schema must be a list of (name, type) pairs") from None


def _leaf_names(schema: pa.Schema) -> list[str | None]:
    """The name of each Parquet leaf column in order: a top-level column's own name, a struct field's path
    (`device.os`), None for one inside a list or a map (whose statistics mix the values of many rows)."""
    names: list[str | None] = []
    stack: list[tuple[pa.Field, list[str], bool]] = [(f, [f.name], True) for f in reversed(schema)]
    while stack:
        field, parts, plain = stack.pop()
        kind = field.type
        if pa.types.is_struct(kind):
            fields = [kind.field(i) for i in reversed(range(kind.num_fields))]
            stack.extend((child, [*parts, child.name], plain) for child in fields)
        elif pa.types.is_map(kind):
            stack.extend([(kind.item_field, [], False), (kind.key_field, [], False)])
        elif pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
            stack.append((kind.value_field, [], False))
        else:
            names.append((parts[0] if len(parts) == 1 else field_path(parts)) if plain else None)
    return names


def _struct_leaves(data: pa.Table) -> list[tuple[str, pa.ChunkedArray]]:
    """Each primitive field reached through structs only, by path, NULL where it or a struct above it is."""
    leaves: list[tuple[str, pa.ChunkedArray]] = []
    stack = [([n], data.column(n)) for n in reversed(data.column_names) if pa.types.is_struct(data.column(n).type)]
    while stack:
        parts, array = stack.pop()
        kind = array.type
        for index in reversed(range(kind.num_fields)):
            child = pc.struct_field(array, [index])
            path = [*parts, kind.field(index).name]
            if pa.types.is_struct(child.type):
                stack.append((path, child))
            elif not pa.types.is_nested(child.type):
                leaves.append((field_path(path), child))
    return leaves


def _timestamp(count: int, logical: dict[str, Any], upper: bool) -> tuple[dt.datetime, bool]:
    """A Parquet timestamp (count of units since the epoch) as a naive UTC datetime; bounds round outward."""
    unit = logical.get("timeUnit")
    if unit == "milliseconds":
        micros, exact = count * 1000, True
    elif unit == "nanoseconds":
        micros, rest = divmod(count, 1000)
        exact = rest == 0
        micros += 1 if (upper and not exact) else 0
    else:
        micros, exact = count, True
    return _EPOCH + dt.timedelta(microseconds=micros), exact


def _decode(raw: Any, physical: str, logical: dict[str, Any], upper: bool, truncation: int) -> tuple[Any, bool]:
    """One raw footer bound as a Python value and whether it is exact; (None, True) when it can't be used."""
    kind = logical.get("Type")
    if physical == "BOOLEAN":
        return bool(raw), True
    if physical in ("INT32", "INT64"):
        if kind == "Date":
            return _EPOCH_DATE + dt.timedelta(days=raw), True
        if kind == "Timestamp":
            return _timestamp(raw, logical, upper)
        if kind == "Decimal":
            return Decimal(raw).scaleb(-int(logical["scale"]), DECIMAL_CONTEXT), True
        if kind == "None" or (kind == "Int" and logical.get("isSigned", True)):
            return int(raw), True
        return None, True
    if physical in ("FLOAT", "DOUBLE"):
        value = float(raw)
        return (None, True) if math.isnan(value) else (value, True)
    if physical in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"):
        data = bytes(raw)
        if kind == "Decimal":
            return Decimal(int.from_bytes(data, "big", signed=True)).scaleb(
                -int(logical["scale"]), DECIMAL_CONTEXT
            ), True
        if kind == "Float16" and len(data) == 2:
            value = struct.unpack("<e", data)[0]
            return (None, True) if math.isnan(value) else (value, True)
        if physical == "BYTE_ARRAY" and kind in ("None", "String", "Enum", "JSON"):
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                if upper:
                    return None, True
                text = data.decode("utf-8", errors="ignore")
                return text, False
            return text, len(data) <= truncation - 4
    return None, True


def _contains_upper(big: tuple[Any, bool], small: tuple[Any, bool]) -> bool:
    """Whether every value allowed by upper bound `small` is allowed by `big` ((value, exact) pairs).

    An exact max `m` allows `v <= m`; an inexact string max allows `v[:len(m)] <= m` (its extensions too).
    """
    big_value, big_exact = big
    small_value, small_exact = small
    if not isinstance(big_value, str):
        return small_value <= big_value
    allowed = small_value <= big_value if big_exact else small_value[: len(big_value)] <= big_value
    if small_exact or not allowed:
        return allowed
    if small_value < big_value and not big_value.startswith(small_value):
        return True
    return not big_exact and len(big_value) <= len(small_value)


def _merge_upper(bounds: list[tuple[Any, bool]]) -> tuple[Any, bool]:
    best = bounds[0]
    for bound in bounds[1:]:
        if not _contains_upper(best, bound):
            best = bound
    return best


def _merge_lower(bounds: list[tuple[Any, bool]]) -> tuple[Any, bool]:
    low = min(value for value, _ in bounds)
    return low, any(exact for value, exact in bounds if value == low)


def _typed(value: Any, dtype: DataType | None) -> Any:
    """`value` converted exactly to the declared type, or None when it is not exactly a value of that type."""
    if value is None or dtype is None:
        return value
    try:
        converted = convert(value, dtype)
    except SargableError:
        return None
    return converted if converted == value else None


def _column_from_row_groups(meta: pq.FileMetaData, index: int, dtype: DataType | None, truncation: int) -> ColumnStats:
    descriptor = meta.schema.column(index)
    physical = descriptor.physical_type
    logical = json.loads(descriptor.logical_type.to_json())
    lows: list[tuple[Any, bool]] = []
    highs: list[tuple[Any, bool]] = []
    nulls: int | None = 0
    bounds_known = True
    for group in range(meta.num_row_groups):
        rows = meta.row_group(group).num_rows
        if rows == 0:
            continue
        stats = meta.row_group(group).column(index).statistics
        if stats is None:
            return ColumnStats()
        group_nulls = stats.null_count if stats.has_null_count else None
        nulls = None if nulls is None or group_nulls is None else nulls + group_nulls
        if group_nulls is not None and group_nulls >= rows:
            continue
        if not stats.has_min_max:
            bounds_known = False
            continue
        low = _decode(stats.min_raw, physical, logical, False, truncation)
        high = _decode(stats.max_raw, physical, logical, True, truncation)
        low = (_typed(low[0], dtype), low[1])
        high = (_typed(high[0], dtype), high[1])
        if low[0] is None or high[0] is None:
            bounds_known = False
            continue
        lows.append(low)
        highs.append(high)
    nans = None if physical in ("FLOAT", "DOUBLE") or logical.get("Type") == "Float16" else 0
    if nulls is not None and nulls >= meta.num_rows:
        return ColumnStats(null_count=nulls, nan_count=0)
    if not bounds_known or not lows:
        return ColumnStats(null_count=nulls, nan_count=nans)
    low_value, low_exact = _merge_lower(lows)
    high_value, high_exact = _merge_upper(highs)
    return ColumnStats(
        min=low_value,
        max=high_value,
        null_count=nulls,
        nan_count=nans,
        min_exact=low_exact,
        max_exact=high_exact,
    )


def stats_from_parquet(
    path: str | os.PathLike[str],
    schema: Sequence[tuple[str, Any]] | None = None,
    *,
    read_data: bool = False,
    truncation_length: int = STRING_TRUNCATION_LENGTH,
    partition: dict[str, Any] | None = None,
    filesystem: Any = None,
) -> FileStats:
    """A Parquet file's statistics from its footer (all row groups merged), typed by `schema` when given.

    With `read_data=True` the columns are read and the statistics are exact, NaN counts and value sets included.
    Columns the schema doesn't name and the elements of arrays and maps are left out; the primitive fields of a
    struct the schema names are kept by their path (`device.os`). A bound that is not exactly a value of the
    declared type is left unknown. `filesystem` (a `pyarrow.fs.FileSystem`) reads `path` through it, not locally.
    """
    import pyarrow.parquet as pq  # only here: the Parquet reader is slow to import and few callers need it

    types = _schema_types(schema)
    location = os.fspath(path)
    try:
        if filesystem is None:
            size = os.path.getsize(location)
            parquet = pq.ParquetFile(location)
        else:
            source = filesystem.open_input_file(location)  # its size comes with the open: one status request
            size = source.size()
            parquet = pq.ParquetFile(source)
    except (OSError, pa.ArrowException) as exc:
        raise StatisticsError(f"can't read the Parquet footer of {location!r}: {exc}") from None
    if read_data:
        present = set(parquet.schema_arrow.names)
        try:
            table = parquet.read(columns=[n for n in types if n in present] if types is not None else None)
        except (OSError, pa.ArrowException, KeyError) as exc:
            raise StatisticsError(f"can't read the data of {location!r}: {exc}") from None
        return stats_from_arrow(table, location, schema=schema, size_bytes=size, partition=partition)
    return stats_from_metadata(parquet.metadata, location, size, schema, truncation_length, partition)


def stats_from_metadata(
    meta: pq.FileMetaData,
    path: str,
    size_bytes: int,
    schema: Sequence[tuple[str, Any]] | None = None,
    truncation_length: int = STRING_TRUNCATION_LENGTH,
    partition: dict[str, Any] | None = None,
) -> FileStats:
    """A Parquet file's statistics from its footer's metadata (what `stats_from_parquet` reads; a writer has it
    without reading the file back)."""
    types = _schema_types(schema)
    columns: dict[str, ColumnStats] = {}
    if meta.num_row_groups:
        first = meta.row_group(0)
        arrow_schema = meta.schema.to_arrow_schema()
        names = _leaf_names(arrow_schema)
        if len(names) != first.num_columns:
            names = [None] * first.num_columns
        top = set(arrow_schema.names)
        declared = {name for name, _ in schema} if schema is not None else set()
        for index, name in enumerate(names):
            nested = name not in top
            if name is None or (nested and (types is None or name in declared)) or (types and name not in types):
                continue
            columns[name] = _column_from_row_groups(meta, index, types.get(name) if types else None, truncation_length)
    return FileStats(path=path, row_count=meta.num_rows, size_bytes=size_bytes, columns=columns, partition=partition)


def _arrow_values(array: pa.ChunkedArray) -> pa.ChunkedArray:
    """Plain values: dictionaries decoded, timestamps as naive microseconds (UTC wall-clock time)."""
    if pa.types.is_dictionary(array.type):
        array = array.cast(array.type.value_type)
    if pa.types.is_timestamp(array.type):
        array = array.cast(pa.int64())
    return array


def _timestamp_bound(count: int, unit: str, upper: bool) -> tuple[dt.datetime, bool]:
    """An Arrow timestamp (count of `unit` since the epoch) as a naive UTC datetime; bounds round outward."""
    if unit in ("s", "ms"):
        return _EPOCH + dt.timedelta(microseconds=count * (1_000_000 if unit == "s" else 1000)), True
    micros, rest = divmod(count, 1000) if unit == "ns" else (count, 0)
    return _EPOCH + dt.timedelta(microseconds=micros + (1 if upper and rest else 0)), rest == 0


def _column_from_arrow(array: pa.ChunkedArray, dtype: DataType | None, max_distinct: int) -> ColumnStats:
    unit = array.type.unit if pa.types.is_timestamp(array.type) else None
    values = _arrow_values(array)
    nulls = values.null_count
    nans = 0
    if pa.types.is_floating(values.type):
        nan_mask = pc.is_nan(values)
        nans = pc.sum(nan_mask).as_py() or 0
        values = pc.filter(values, pc.invert(nan_mask))
    present = values.drop_null()
    if len(present) == 0:
        return ColumnStats(null_count=nulls, nan_count=nans, distinct=frozenset())
    low, high = (x.as_py() for x in pc.min_max(present).values())
    unique = pc.unique(present) if max_distinct else None
    distinct = None
    if unique is not None and len(unique) <= max_distinct:
        distinct = unique.to_pylist()
    low_exact = high_exact = True
    if unit is not None:
        (low, low_exact), (high, high_exact) = _timestamp_bound(low, unit, False), _timestamp_bound(high, unit, True)
        if distinct is not None:
            stamps = [_timestamp_bound(v, unit, False) for v in distinct]
            distinct = [v for v, _ in stamps] if all(exact for _, exact in stamps) else None
    if dtype is not None:
        low, high = _typed(low, dtype), _typed(high, dtype)
        if distinct is not None:
            typed = [_typed(v, dtype) for v in distinct]
            distinct = None if any(v is None for v in typed) else typed
        if low is None or high is None:
            low = high = None
    return ColumnStats(
        min=low,
        max=high,
        null_count=nulls,
        nan_count=nans,
        distinct=frozenset(distinct) if distinct is not None else None,
        min_exact=low_exact,
        max_exact=high_exact,
    )


def stats_from_arrow(
    data: pa.Table | pa.RecordBatch,
    path: str,
    *,
    schema: Sequence[tuple[str, Any]] | None = None,
    size_bytes: int = 0,
    partition: dict[str, Any] | None = None,
    max_distinct: int = MAX_DISTINCT,
) -> FileStats:
    """Exact statistics of Arrow data (one file's rows): bounds, NULL and NaN counts, small value sets."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if not isinstance(data, pa.Table):
        raise StatisticsError(f"stats_from_arrow takes a pyarrow Table or RecordBatch, got {type(data).__name__}")
    types = _schema_types(schema)
    columns: dict[str, ColumnStats] = {}
    for name in data.column_names:
        if types is not None and name not in types:
            continue
        array = data.column(name)
        if pa.types.is_nested(array.type):
            continue
        columns[name] = _column_from_arrow(array, types.get(name) if types else None, max_distinct)
    for name, array in _struct_leaves(data) if types is not None else ():
        if name not in columns and name in types:
            columns[name] = _column_from_arrow(array, types.get(name) if types else None, max_distinct)
    return FileStats(path=path, row_count=data.num_rows, size_bytes=size_bytes, columns=columns, partition=partition)
