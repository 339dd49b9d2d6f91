"""Thrift binary encoding of what `sargable serve` sends most: partitions, partition names and tables, spliced from
per-table templates instead of built as Thrift object trees.

A `Partition` struct differs from its table's other partitions only in its values, location and parameters (and,
rarely, its create time or a storage descriptor of its own). `TableCodec` encodes everything else once per table
version with the Thrift runtime and splices the variable fields in between, so a partition costs a few byte
concatenations; Hive strings of partition values and escaped name segments are memoized per value. The bytes are
exactly what the Thrift runtime writes for the same `ttypes.Partition` (tests/test_hms_encode.py checks it), and a
partition with its own storage descriptor is encoded by the runtime itself.

Listings encode the store's pages (`sargable.metastore.partitions.Page`) without a `Partition` object each: a
partition with the default location is spliced from its values' memoized texts and name segments (its location is
the table's location, `/`, and its name), and a long page of such partitions is spliced in Arrow, column by column
(each distinct value of a key formatted once), its bytes taken from the result's data buffer in one piece.
"""

from __future__ import annotations

import struct
from collections.abc import Generator, Iterable, Mapping
from operator import getitem
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from thrift.Thrift import TType
from thrift.transport.TTransport import TMemoryBuffer

from sargable.hms.bindings import TBinaryProtocol, ttypes
from sargable.hms.convert import TableView, hive_location
from sargable.hms.extras import partition_fields
from sargable.metastore import DEFAULT_PARTITION_NAME, Partition
from sargable.metastore.columnar import value_columns
from sargable.metastore.names import escape_path_name, value_to_name
from sargable.metastore.partitions import Page
from sargable.types import DataType, format_value

_I32 = struct.Struct(">i")
_pack_i32 = _I32.pack
_TIMES = struct.Struct(">bhibhi")
VERSION_1 = 0x80010000
"""The strict binary protocol's version word; a message header is this or'ed with the message type."""
MEMO_LIMIT = 65536
"""Memoized values per partition key, at most (then the memo starts over): bounds a codec's memory on keys with
millions of distinct values."""
STOP = b"\x00"
ARROW_MIN = 256
"""Pages of at least this many partitions are spliced in Arrow (its set-up costs some tens of microseconds a page);
shorter ones row by row."""
ARROW_TYPES = frozenset({"tinyint", "smallint", "int", "bigint", "string", "varchar", "char", "date", "boolean"})
"""Key types whose Arrow values are the very values the per-row decoder gives (so both paths memoize the same
texts); a table with a key of another type (decimal, timestamp, float) is encoded row by row."""
_EMPTY = pa.scalar(b"", pa.binary())
_SLASH = pa.scalar(b"/", pa.binary())


def thrift_bytes(obj: Any) -> bytes:
    """A Thrift struct's fields and stop byte, as the runtime's binary protocol writes them."""
    buffer = TMemoryBuffer()
    obj.write(TBinaryProtocol.TBinaryProtocolAccelerated(buffer))
    return buffer.getvalue()


def string(text: str) -> bytes:
    """A Thrift string: 4-byte length, UTF-8 bytes."""
    data = text.encode()
    return _pack_i32(len(data)) + data


def string_bytes(data: bytes) -> bytes:
    """A Thrift string of UTF-8 bytes."""
    return _pack_i32(len(data)) + data


def field(ttype: int, field_id: int) -> bytes:
    """A field header: type byte, 2-byte id."""
    return struct.pack(">bh", ttype, field_id)


def list_header(element_type: int, count: int) -> bytes:
    return struct.pack(">bi", element_type, count)


def string_map(values: Mapping[str, str]) -> bytes:
    """A `map<string, string>`'s header and entries (in the mapping's order, as the runtime writes them)."""
    out = [struct.pack(">bbi", TType.STRING, TType.STRING, len(values))]
    for key, value in values.items():
        out.append(string(key))
        out.append(string(value))
    return b"".join(out)


def message_header(method: str, kind: int, seqid: int) -> bytes:
    """A strict binary-protocol message header: version and type, method name, sequence id."""
    return struct.pack(">I", VERSION_1 | kind) + string(method) + _pack_i32(seqid)


def _constant(data: bytes) -> pa.Scalar:
    return pa.scalar(data, pa.binary())


def _lengths(lengths: np.ndarray) -> pa.Array:
    """Each length as 4 big-endian bytes, as a binary array (a Thrift string's head)."""
    count = len(lengths)
    offsets = np.arange(0, 4 * count + 1, 4, dtype=np.int32)
    data = lengths.astype(">i4").tobytes()
    return pa.Array.from_buffers(pa.binary(), count, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _data(joined: pa.Array) -> bytes:
    """The values of a binary array (no NULLs), concatenated: its data buffer between its first and last offset."""
    offsets = np.frombuffer(joined.buffers()[1], np.int32)
    start, end = int(offsets[joined.offset]), int(offsets[joined.offset + len(joined)])
    return joined.buffers()[2][start:end].to_pybytes()


class _Key(NamedTuple):
    """One partition key's column of a page, as the pieces a reply splices: each partition's value as a Thrift
    string (`texts`) and its name segment `KEY=value` (`segments`, with their byte lengths), each looked up in the
    codec's memos once per distinct value."""

    texts: pa.Array | None
    segments: pa.Array
    segment_lengths: np.ndarray


def _key(column: pa.Array, values: dict | None, segments: dict) -> _Key:
    """A key's pieces (without `texts` when `values` is None: a listing of names)."""
    encoded = pc.dictionary_encode(column, null_encoding="encode")
    distinct = encoded.dictionary.to_pylist()
    indices = encoded.indices
    pieces = [segments[value] for value in distinct]
    lengths = np.fromiter(map(len, pieces), np.int64, len(pieces))[indices.to_numpy(zero_copy_only=False)]
    texts = None if values is None else pa.array([values[value] for value in distinct], pa.binary()).take(indices)
    return _Key(texts, pa.array(pieces, pa.binary()).take(indices), lengths)


class Encoded(NamedTuple):
    """A reply's success value, already encoded: its Thrift type, its bytes, and for a long list the rest of them
    as a stream (the server sends `head` and then each chunk, holding the call's snapshot until the stream ends)."""

    ttype: int
    head: bytes
    rest: Generator[bytes, None, None] | None = None


_VALUES = field(TType.LIST, 1) + bytes([TType.STRING])
_LOCATION = field(TType.STRING, 2)
_SD = field(TType.STRUCT, 6)
_PARAMETERS = field(TType.MAP, 7)
_NO_PARAMETERS = _PARAMETERS + string_map({})


class _ValueMemo(dict):
    """Partition values of one key -> their Hive text as a Thrift string (NULL is the default partition name),
    filled on first use, at most MEMO_LIMIT at a time (a lookup stays in C: `map(getitem, memos, values)`)."""

    def __init__(self, dtype: DataType) -> None:
        super().__init__()
        self.dtype = dtype

    def __missing__(self, value: Any) -> bytes:
        if len(self) >= MEMO_LIMIT:
            self.clear()
        encoded = self[value] = string(DEFAULT_PARTITION_NAME if value is None else format_value(value, self.dtype))
        return encoded


class _SegmentMemo(dict):
    """Partition values of one key -> their UTF-8 `key=value` segment of a partition name (escaped as Hive does)."""

    def __init__(self, name: str, dtype: DataType) -> None:
        super().__init__()
        self.key = escape_path_name(name) + "="
        self.dtype = dtype

    def __missing__(self, value: Any) -> bytes:
        if len(self) >= MEMO_LIMIT:
            self.clear()
        segment = self[value] = (self.key + value_to_name(value, self.dtype)).encode()
        return segment


class TableCodec:
    """The Thrift encodings of one table version: the `Table` struct, its partitions and their names."""

    def __init__(self, view: TableView) -> None:
        self.view = view
        table = view.table
        self.keys = table.partition_keys
        self.table_bytes = thrift_bytes(view.thrift())
        self._values_head = _VALUES + _pack_i32(len(self.keys))
        names = ttypes.Partition(dbName=table.database, tableName=table.name, writeId=None)
        self._names = thrift_bytes(names)[:-1]
        cols = ttypes.StorageDescriptor(cols=view.cols)
        self._sd_head = _SD + thrift_bytes(cols)[:-1] + _LOCATION
        parts = {**view.storage_parts, "cols": None}
        self._sd_tail = thrift_bytes(ttypes.StorageDescriptor(location=None, **parts))
        self._tail = thrift_bytes(ttypes.Partition())
        self._plain_middle = self._names + _TIMES.pack(TType.I32, 4, 0, TType.I32, 5, 0) + self._sd_head
        self._plain_end = self._sd_tail + _NO_PARAMETERS + self._tail
        self._values = [_ValueMemo(dtype) for _, dtype in self.keys]
        self._segments = [_SegmentMemo(name, dtype) for name, dtype in self.keys]
        base = table.location.rstrip("/") + "/"
        self._location_prefix = hive_location(base).encode()
        """A default location's bytes before the partition name (`Partition.location`, as `hive_location` gives it:
        whether it is local depends on its first character only)."""
        self._arrow = all(dtype.name in ARROW_TYPES for _, dtype in self.keys)

    # ------------------------------------------------------------------------------------------- partitions

    def partitions(self, parts: Iterable[Partition]) -> list[bytes]:
        """Each partition as a `Partition` struct (fields and stop byte): the hot loop of every listing."""
        memos, join = self._values, b"".join
        head, middle, end = self._values_head, self._plain_middle, self._plain_end
        out: list[bytes] = []
        append = out.append
        for part in parts:
            if part.parameters or part.hive is not None:
                append(self._with_parameters(part))
                continue
            location = part.location
            location = (("file:" + location) if location[:1] == "/" else location).encode()  # hive_location, inline
            append(
                join((head, join(map(getitem, memos, part.values)), middle, _pack_i32(len(location)), location, end))
            )
        return out

    def page_partitions(self, page: Page) -> bytes:
        """The `Partition` structs of a page of a listing, concatenated: those with the default location and no
        parameters or Hive fields spliced from memoized texts (in Arrow for a long page), the others as
        `partitions` encodes them."""
        explicit = page.explicit()
        if len(page) < ARROW_MIN or not self._arrow:
            values = page.values()
            if explicit is None:
                return b"".join(map(self._plain, values))
            return b"".join(
                self._plain(vals) if e[0] is None and not e[1] and e[2] is None else self._with_parameters(
                    Partition(page.table, vals, *e)
                )
                for vals, e in zip(values, explicit, strict=True)
            )
        keys = self._keys_of(page)
        location_lengths = len(self._location_prefix) + self._name_lengths(keys)
        joined = pc.binary_join_element_wise(
            _constant(self._values_head),
            *(key.texts for key in keys),
            _constant(self._plain_middle),
            _lengths(location_lengths),
            _constant(self._location_prefix),
            *self._name_pieces(keys),
            _constant(self._plain_end),
            _EMPTY,
        )
        if explicit is None:
            return _data(joined)
        out = joined.to_pylist()
        for i, (vals, e) in enumerate(zip(page.values(), explicit, strict=True)):
            if e[0] is not None or e[1] or e[2] is not None:
                out[i] = self._with_parameters(Partition(page.table, vals, *e))
        return b"".join(out)

    def _plain(self, values: tuple[Any, ...]) -> bytes:
        """A partition with the default location and no parameters or Hive fields, from its values."""
        name = b"/".join(map(getitem, self._segments, values))
        location = self._location_prefix + name
        return b"".join(
            (
                self._values_head,
                b"".join(map(getitem, self._values, values)),
                self._plain_middle,
                _pack_i32(len(location)),
                location,
                self._plain_end,
            )
        )

    def _keys_of(self, page: Page, *, texts: bool = True) -> list[_Key]:
        memos = self._values if texts else [None] * len(self.keys)
        return [_key(*args) for args in zip(value_columns(page), memos, self._segments, strict=True)]

    @staticmethod
    def _name_lengths(keys: list[_Key]) -> np.ndarray:
        """Each partition's name's byte length: its segments and the `/`s between them."""
        return sum(key.segment_lengths for key in keys) + (len(keys) - 1)

    @staticmethod
    def _name_pieces(keys: list[_Key]) -> list[Any]:
        """A name's pieces to join: each key's segments, `/` between them."""
        pieces: list[Any] = []
        for i, key in enumerate(keys):
            pieces += [_SLASH, key.segments] if i else [key.segments]
        return pieces

    def page_names(self, page: Page) -> bytes:
        """The Hive names of a page's partitions as Thrift strings, concatenated."""
        if len(page) < ARROW_MIN or not self._arrow:
            memos, join = self._segments, b"/".join
            return b"".join(string_bytes(join(map(getitem, memos, values))) for values in page.values())
        keys = self._keys_of(page, texts=False)
        return _data(pc.binary_join_element_wise(_lengths(self._name_lengths(keys)), *self._name_pieces(keys), _EMPTY))

    def partition(self, part: Partition) -> bytes:
        """One `Partition` struct (fields and stop byte)."""
        return self.partitions([part])[0]

    def _with_parameters(self, part: Partition) -> bytes:
        """A partition with parameters or Hive fields: with its create / access times, or, when it has a storage
        descriptor of its own, encoded by the Thrift runtime."""
        extras, params = partition_fields(part)
        if extras.storage is not None:
            return thrift_bytes(self.view.partition(part))
        values = b"".join(map(getitem, self._values, part.values))
        location = hive_location(part.location).encode()
        times = _TIMES.pack(TType.I32, 4, extras.create_time, TType.I32, 5, extras.last_access_time)
        return b"".join(
            (
                self._values_head,
                values,
                self._names,
                times,
                self._sd_head,
                _pack_i32(len(location)),
                location,
                self._sd_tail,
                _PARAMETERS,
                string_map(params),
                self._tail,
            )
        )

    # ------------------------------------------------------------------------------------------------ names

    def names(self, parts: Iterable[Partition]) -> list[bytes]:
        """Each partition's Hive name (as `Partition.name`) as a Thrift string, from memoized segments."""
        memos, join = self._segments, b"/".join
        out: list[bytes] = []
        append = out.append
        for part in parts:
            name = join(map(getitem, memos, part.values))
            append(_pack_i32(len(name)) + name)
        return out

    def name(self, part: Partition) -> str:
        """The partition's Hive name."""
        return self.names([part])[0][4:].decode()
