"""Stored form of a data file's entry: path, size, row count and per-column statistics, as compact JSON.

Statistics values (min, max, value sets) are written in their Hive string form and read back typed by the
table's column types, so dates, decimals and timestamps come back exactly.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from sargable.errors import MetastoreError, SargableError
from sargable.metastore.records import Table
from sargable.stats import ColumnStats, FileStats
from sargable.types import DataType, convert, format_value

_VALUE_FIELDS = ("min", "max")
_SET_FIELDS = ("distinct",)


def _column_types(table: Table) -> dict[str, DataType]:
    return {name: dtype for name, dtype in table.schema}


def _encode_value(value: Any, dtype: DataType) -> Any:
    return None if value is None else format_value(value, dtype)


def _decode_value(text: Any, dtype: DataType) -> Any:
    return None if text is None else convert(text, dtype)


def encode_file(file: FileStats, table: Table) -> bytes:
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
    return json.dumps(
        {"path": file.path, "rows": file.row_count, "bytes": file.size_bytes, "columns": columns},
        separators=(",", ":"),
        allow_nan=False,
    ).encode()


def decode_file(data: bytes, table: Table, partition: dict[str, Any] | None = None) -> FileStats:
    """A FileStats record from its stored bytes."""
    raw = json.loads(data)
    types = _column_types(table)
    columns = {}
    for name, entry in raw["columns"].items():
        dtype = types[name]
        kwargs = dict(entry)
        for key in _VALUE_FIELDS:
            if key in kwargs:
                kwargs[key] = _decode_value(kwargs[key], dtype)
        for key in _SET_FIELDS:
            if key in kwargs:
                kwargs[key] = frozenset(_decode_value(v, dtype) for v in kwargs[key])
        columns[name] = ColumnStats(**kwargs)
    return FileStats(
        path=raw["path"], row_count=raw["rows"], size_bytes=raw["bytes"], columns=columns, partition=partition
    )
