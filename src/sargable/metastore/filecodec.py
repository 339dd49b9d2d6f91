"""Stored form of a data file's entry: path, size, row count, per-column statistics and layout, as compact JSON.

Statistics values (min, max, value sets) are written in their Hive string form and read back typed by the
table's column types, so dates, decimals and timestamps come back exactly. Path, row count and size come first,
so a listing that needs only those (`decode_header`) reads the head of each record and skips the statistics.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from collections.abc import Callable, Collection
from functools import lru_cache
from typing import Any

from sargable.errors import MetastoreError, SargableError
from sargable.metastore.records import TableDefinition
from sargable.stats import ColumnStats, FileStats
from sargable.types import INTEGER_RANGES, DataType, convert, format_value

_HEADER = re.compile(rb'\{"path":"((?:[^"\\]|\\.)*)","rows":(\d+),"bytes":(\d+),')
"""The fields `encode_file` writes before the column statistics, matched without parsing the rest of the record."""
_VALUE_FIELDS = ("min", "max")
_SET_FIELDS = ("distinct",)
_STATS_FIELDS = frozenset(f.name for f in dataclasses.fields(ColumnStats))


def _column_types(table: TableDefinition) -> dict[str, DataType]:
    return {name: dtype for name, dtype in table.schema}


def _encode_value(value: Any, dtype: DataType) -> Any:
    return None if value is None else format_value(value, dtype)


def encode_file(file: FileStats, table: TableDefinition) -> bytes:
    """JSON bytes of a FileStats record (its partition is in the key, not here)."""
    types = _column_types(table)
    columns: dict[str, dict[str, Any]] = {}
    for name, stats in (file.columns or {}).items():
        dtype = types.get(name)
        if dtype is None:
            raise MetastoreError(f"statistics for {name!r}, which is not a column of {table.qualified_name}")
        if not isinstance(stats, ColumnStats):
            raise MetastoreError(f"statistics of column {name!r} must be a ColumnStats, got {type(stats).__name__}")
        entry: dict[str, Any] = {}
        for f in dataclasses.fields(stats):
            value = getattr(stats, f.name)
            if value is None or value == f.default:
                continue
            try:
                if f.name in _VALUE_FIELDS:
                    value = _encode_value(value, dtype)
                elif f.name in _SET_FIELDS:
                    value = [_encode_value(v, dtype) for v in value]
            except (SargableError, AttributeError, TypeError, ValueError) as exc:
                raise MetastoreError(f"statistic {f.name} of column {name!r} ({dtype}): {exc}") from None
            entry[f.name] = value
        columns[name] = entry
    record: dict[str, Any] = {"path": file.path, "rows": file.row_count, "bytes": file.size_bytes, "columns": columns}
    if file.layout is not None:
        record["layout"] = file.layout
    return json.dumps(record, separators=(",", ":"), allow_nan=False).encode()


def decode_header(data: bytes) -> tuple[str, int, int]:
    """(path, row count, size in bytes) of a stored file entry, without decoding its column statistics.

    `encode_file` writes these first, so a regular expression over the record's head finds them; any other layout
    falls back to parsing the whole record.
    """
    match = _HEADER.match(data)
    if match is None:
        return _header(json.loads(data))
    path = match[1]
    text = json.loads(b'"' + path + b'"') if b"\\" in path else path.decode()
    return text, int(match[2]), int(match[3])


def _header(raw: Any) -> tuple[str, int, int]:
    """(path, rows, bytes) of a parsed entry; ValueError when they are not a path and two counts."""
    if not isinstance(raw, dict):
        raise ValueError(f"a file entry is a JSON object, got {type(raw).__name__}")
    path, rows, size = raw.get("path"), raw.get("rows"), raw.get("bytes")
    if not isinstance(path, str) or type(rows) is not int or type(size) is not int or rows < 0 or size < 0:
        raise ValueError(f"a file entry needs a path and two counts, got {path!r}, {rows!r}, {size!r}")
    return path, rows, size


@lru_cache(maxsize=256)
def _value_decoder(dtype: DataType) -> Callable[[Any], Any]:
    """How to read back a statistic of this type: `convert`, or a direct parse of the form `format_value` wrote."""
    if dtype.name in INTEGER_RANGES:
        return int
    if dtype.name == "date":
        return dt.date.fromisoformat
    if dtype.name == "double":
        return float
    if dtype.is_string:
        return str
    return lambda text: convert(text, dtype)


def decode_file(
    data: bytes, table: TableDefinition, partition: dict[str, Any] | None = None, columns: Collection[str] | None = None
) -> FileStats:
    """A FileStats record from its stored bytes, with the statistics of `columns` only (None: of every column)."""
    raw = json.loads(data)
    path, rows, size = _header(raw)
    types = _column_types(table)
    decoded = {}
    stored = raw.get("columns")
    if not isinstance(stored, dict):
        raise ValueError(f"the statistics of a file entry are a JSON object, got {stored!r}")
    for name, entry in stored.items():
        if columns is not None and name not in columns:
            continue
        decode = _value_decoder(types[name])
        if not isinstance(entry, dict) or not entry.keys() <= _STATS_FIELDS:
            raise ValueError(f"statistics of column {name!r} are not a map of known statistics: {entry!r}")
        kwargs = dict(entry)
        for key in _VALUE_FIELDS:
            if kwargs.get(key) is not None:
                kwargs[key] = decode(kwargs[key])
        for key in _SET_FIELDS:
            if key in kwargs:
                kwargs[key] = frozenset(None if v is None else decode(v) for v in kwargs[key])
        decoded[name] = ColumnStats(**kwargs)
    layout = raw.get("layout")
    if layout is not None and not isinstance(layout, str):
        raise ValueError(f"the layout of a file entry is a string, got {layout!r}")
    return FileStats(path=path, row_count=rows, size_bytes=size, columns=decoded, partition=partition, layout=layout)
