"""Stored form of a data file's entry: path, size, row count, per-column statistics and layout, as compact JSON.

Statistics values (min, max, value sets) are written in their Hive string form and read back typed by the
table's column types, so dates, decimals and timestamps come back exactly. Path, row count and size come first,
so a listing that needs only those (`decode_header`) reads the head of each record and skips the statistics.

Schemas that change (`sargable.metastore.evolution`): a record keeps the table version it was written at (`v`),
so a column or struct field the table added later (`TableDefinition.added`) reads as all-NULL in it, which it is
(the file was written without it); a statistic with no entry for a column the file had stays unknown. A widened
column's statistics read as values of its new type; those of a `float` widened to `double` were written as the
shortest text of a single-precision value, so they read as bounds holding both that text's double and its single
(inexact, no value set): `0.1` stands for 0.10000000149011612 in a file written before.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from collections.abc import Callable, Collection, Sequence
from functools import lru_cache
from itertools import accumulate
from typing import Any

from sargable.errors import MetastoreError, SargableError
from sargable.metastore.records import TableDefinition
from sargable.stats import ColumnStats, FileStats
from sargable.types import INTEGER_RANGES, DataType, convert, float32, format_value, with_struct_leaves

_HEADER = re.compile(rb'\{"path":"([^"\\]*(?:\\.[^"\\]*)*)","rows":(\d+),"bytes":(\d+),')
"""The fields `encode_file` writes before the column statistics, matched without parsing the rest of the record (the
path as runs of plain bytes between escapes, which the matcher takes a run at a time, not a byte at a time)."""
_PLAIN_HEADER = r'^\{"path":"(?P<path>[^"\\]*)","rows":(?P<rows>\d+),"bytes":(?P<bytes>\d+),'
"""`_HEADER` for Arrow (RE2), of a path with no escape in it (`decode_headers` matches the others alone)."""
HEADERS_AT_ONCE = 256
"""Blocks of at least this many entries have their heads matched at once (`decode_headers`)."""
_VALUE_FIELDS = ("min", "max")
_SET_FIELDS = ("distinct",)
_STATS_FIELDS = frozenset(f.name for f in dataclasses.fields(ColumnStats))


def _column_types(table: TableDefinition) -> dict[str, DataType]:
    return _schema_types(tuple(table.schema))


@lru_cache(maxsize=256)
def _schema_types(schema: tuple[tuple[str, DataType], ...]) -> dict[str, DataType]:
    """Columns and struct fields by name (cached: every file of a listing needs them; callers only read it)."""
    return dict(with_struct_leaves(schema))


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
    record["v"] = table.version
    return json.dumps(record, separators=(",", ":"), allow_nan=False).encode()


def decode_header(data: bytes) -> tuple[str, int, int]:
    """(path, row count, size in bytes) of a stored file entry, without decoding its column statistics.

    `encode_file` writes these first, so a regular expression over the record's head finds them; any other layout
    falls back to parsing the whole record.
    """
    match = _HEADER.match(data)
    if match is None:
        return _header(json.loads(data))
    path, rows, size = match.group(1, 2, 3)
    return json.loads(b'"' + path + b'"') if b"\\" in path else path.decode(), int(rows), int(size)


def decode_headers(data: bytes, lengths: Sequence[int]) -> tuple[list[str], list[int], list[int]]:
    """The paths, row counts and sizes (`decode_header`) of the entries concatenated in `data`, each `lengths[i]`
    bytes long (a store's `RowBlock` values), each head matched where its entry starts (no entry copied out): a long
    block's through Arrow's regular expressions at once, the entries they don't take (escaped paths, counts past
    64 bits, other layouts) one by one."""
    count = len(lengths)
    if count >= HEADERS_AT_ONCE:
        found = _arrow_headers(data, lengths)
        if found is not None:
            return found
    ends = lengths.cumsum().tolist() if hasattr(lengths, "cumsum") else list(accumulate(lengths))
    match, loads = _HEADER.match, json.loads
    paths: list[str] = []
    rows: list[int] = []
    sizes: list[int] = []
    start = 0
    for end in ends:
        head = match(data, start, end)
        if head is None:
            path, row_count, size = decode_header(data[start:end])
        else:
            raw, row_text, size_text = head.group(1, 2, 3)
            path = loads(b'"' + raw + b'"') if b"\\" in raw else raw.decode()
            row_count, size = int(row_text), int(size_text)
        paths.append(path)
        rows.append(row_count)
        sizes.append(size)
        start = end
    return paths, rows, sizes


def _arrow_headers(data: bytes, lengths: Sequence[int]) -> tuple[list[str], list[int], list[int]] | None:
    """`decode_headers` of a long block through Arrow (pyarrow is loaded for it): the entries whose head doesn't take
    the plain form (`_PLAIN_HEADER`) are decoded alone; None when a count is past 64 bits (each is matched alone)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    count = len(lengths)
    offsets = np.zeros(count + 1, np.int64)
    np.cumsum(np.asarray(lengths, np.int64), out=offsets[1:])
    entries = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), count, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    heads = pc.extract_regex(entries, pattern=_PLAIN_HEADER)
    path_texts, row_texts, size_texts = heads.flatten()
    try:
        paths = path_texts.cast(pa.large_string()).to_pylist()
        rows = row_texts.cast(pa.large_string()).cast(pa.int64()).to_pylist()
        sizes = size_texts.cast(pa.large_string()).cast(pa.int64()).to_pylist()
    except pa.ArrowInvalid:
        return None
    if heads.null_count:
        starts = offsets.tolist()
        for i in np.flatnonzero(heads.is_null().to_numpy(zero_copy_only=False)).tolist():
            paths[i], rows[i], sizes[i] = decode_header(data[starts[i] : starts[i + 1]])
    return paths, rows, sizes


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


def _from_float(table: TableDefinition) -> frozenset[str]:
    """The paths (lower case) of the table's columns widened from `float`."""
    return frozenset(path for path, old in table.widened if old.name == "float")


def _single_bounds(stats: dict[str, Any]) -> dict[str, Any]:
    """Statistics of a column widened from float to double, loosened to hold each bound's single too."""
    out = {k: v for k, v in stats.items() if k != "distinct"}
    if out.get("min") is not None:
        out["min"], out["min_exact"] = min(out["min"], float32(out["min"])), False
    if out.get("max") is not None:
        out["max"], out["max_exact"] = max(out["max"], float32(out["max"])), False
    return out


def _added_since(table: TableDefinition, version: int) -> tuple[str, ...]:
    """The orderable columns and struct fields (as the schema names them) added after `version`."""
    if not table.added:
        return ()
    return _added_after(tuple(table.schema), table.added, version)


@lru_cache(maxsize=256)
def _added_after(
    schema: tuple[tuple[str, DataType], ...], added: tuple[tuple[str, int], ...], version: int
) -> tuple[str, ...]:
    later = {path for path, when in added if when > version}
    return tuple(n for n, dtype in _schema_types(schema).items() if n.lower() in later and dtype.is_orderable)


def decode_file(
    data: bytes, table: TableDefinition, partition: dict[str, Any] | None = None, columns: Collection[str] | None = None
) -> FileStats:
    """A FileStats record from its stored bytes, with the statistics of `columns` only (None: of every column)."""
    return EntryReader(table).decode(data, partition, columns)


class EntryReader:
    """Decodes a table's stored file entries (`decode_file`), with what every entry needs worked out once per
    listing, not per entry: each column's value decoder, the columns widened from float, those added since a
    version."""

    __slots__ = ("_added", "decoders", "singles", "table")

    def __init__(self, table: TableDefinition) -> None:
        self.table = table
        types = _column_types(table)
        self.decoders = {name: _value_decoder(dtype) for name, dtype in types.items()}
        widened = _from_float(table) if table.widened else frozenset()
        self.singles = frozenset(n for n, t in types.items() if n.lower() in widened and t.name == "double")
        """The double columns whose statistics were written as a float's (`_single_bounds`)."""
        self._added: dict[int, tuple[str, ...]] = {}

    def added_since(self, version: int) -> tuple[str, ...]:
        """`_added_since` of the table, by version (entries of one listing were written at few versions)."""
        found = self._added.get(version)
        if found is None:
            found = self._added[version] = _added_since(self.table, version)
        return found

    def decode(self, data: bytes, partition: dict[str, Any] | None, columns: Collection[str] | None) -> FileStats:
        """The FileStats of one stored entry (see `decode_file`)."""
        raw = json.loads(data)
        path, rows, size = _header(raw)
        decoded = {}
        stored = raw.get("columns")
        if not isinstance(stored, dict):
            raise ValueError(f"the statistics of a file entry are a JSON object, got {stored!r}")
        decoders, singles = self.decoders, self.singles
        for name, entry in stored.items():
            if columns is not None and name not in columns:
                continue
            decode = decoders[name]
            if not isinstance(entry, dict) or not entry.keys() <= _STATS_FIELDS:
                raise ValueError(f"statistics of column {name!r} are not a map of known statistics: {entry!r}")
            kwargs = dict(entry)
            for key in _VALUE_FIELDS:
                if kwargs.get(key) is not None:
                    kwargs[key] = decode(kwargs[key])
            for key in _SET_FIELDS:
                if key in kwargs:
                    kwargs[key] = frozenset(None if v is None else decode(v) for v in kwargs[key])
            if singles and name in singles:
                kwargs = _single_bounds(kwargs)
            decoded[name] = ColumnStats(**kwargs)
        written = raw.get("v", 0)
        if type(written) is not int:
            raise ValueError(f"the version of a file entry is an integer, got {written!r}")
        for name in self.added_since(written):
            if name not in decoded and (columns is None or name in columns):
                decoded[name] = ColumnStats(null_count=rows, nan_count=0, distinct=frozenset())
        layout = raw.get("layout")
        if layout is not None and not isinstance(layout, str):
            raise ValueError(f"the layout of a file entry is a string, got {layout!r}")
        return FileStats(
            path=path, row_count=rows, size_bytes=size, columns=decoded, partition=partition, layout=layout
        )
