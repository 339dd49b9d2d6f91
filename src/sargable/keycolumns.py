"""Decoding many keys at once: a page of keys of one key schema as columns, given as Python values or Arrow arrays.

Listing many partitions is mostly decoding their keys, and one Python call per key costs about as much as the store
takes to return the row. Here a page of keys is decoded with a few dozen numpy operations over the keys'
concatenated bytes: each fixed-width field is read at its position in every key at once, each string field is
found from the key's length and offset trailer (`sargable.keys`' layout), and every field is checked as the
per-key decoder checks it. A page holding a key this path does not take as it is (a string with escaped bytes, a
malformed or non-canonical key) is decoded key by key through `TupleCodec.decode`, which returns the exact values
or raises the precise `KeyEncodingError`: both paths give the same result for every page.

`decode_rows` gives the tuples `TupleCodec.decode` gives, `decode_arrow` one Arrow array per field (of the type
`arrow_type` gives). The numpy and Arrow set-up costs some tens of microseconds per page, so callers decode pages of
a few hundred keys or fewer key by key.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from itertools import chain, repeat
from typing import Any

import numpy as np
import pyarrow as pa

from sargable.errors import KeyEncodingError
from sargable.keys import TupleCodec
from sargable.skipping.table import arrow_type
from sargable.store.blocks import split
from sargable.types import DataType

EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
"""The day ordinal (`date.toordinal`) of Arrow's day 0."""
MICROS_PER_DAY = 86_400_000_000

_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_SIGNED = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}
_TIMESTAMP_ZERO = dt.datetime(1970, 1, 1)


def decode_rows(
    keys: Sequence[bytes], codec: TupleCodec, offset: int = 0, order: Sequence[int] | None = None
) -> list[tuple[Any, ...]]:
    """`codec.decode(key[offset:])` of every key, as tuples; with `order`, each tuple's fields are taken in that
    order (field `order[0]` first: how an index key's values return to partition-key order)."""
    return decode_joined_rows(*joined(keys), codec, offset, order)


def decode_arrow(keys: Sequence[bytes], codec: TupleCodec, offset: int = 0) -> list[pa.Array]:
    """One Arrow array per field of `codec`'s schema (`arrow_type` of its type), exact as `decode_rows`."""
    return decode_joined_arrow(*joined(keys), codec, offset)


def joined(keys: Sequence[bytes]) -> tuple[bytes, np.ndarray]:
    """The keys concatenated, and each key's length: the form the `decode_joined_*` functions take."""
    return b"".join(keys), np.fromiter(map(len, keys), np.int64, len(keys))


def decode_joined_rows(
    data: bytes, lengths: Sequence[int], codec: TupleCodec, offset: int = 0, order: Sequence[int] | None = None
) -> list[tuple[Any, ...]]:
    """`decode_rows` of the keys concatenated in `data`, each `lengths[i]` bytes long (a store's `RowBlock`)."""
    columns = _columns(data, lengths, codec, offset)
    if columns is None:
        rows = [codec.decode(key[offset:]) for key in split(data, lengths)]
        if order is None:
            return rows
        return [tuple(row[i] for i in order) for row in rows]
    values = [column.pylist() for column in columns]
    return list(zip(*(values if order is None else [values[i] for i in order]), strict=True))


def decode_joined_columns(
    data: bytes, lengths: Sequence[int], codec: TupleCodec, offset: int = 0, fields: int | None = None
) -> list[list[Any]]:
    """The values of the first `fields` fields (all when None) of the keys concatenated in `data`, one list per
    field: `decode_joined_rows` by column, with the later fields neither decoded nor checked (a file key's path,
    when its entry holds the path too)."""
    count = codec.count if fields is None else fields
    columns = _columns(data, lengths, codec, offset, count)
    if columns is None:
        rows = [codec.decode(key[offset:]) for key in split(data, lengths)]
        return [[row[i] for row in rows] for i in range(count)]
    return [column.pylist() for column in columns]


def decode_joined_arrow(data: bytes, lengths: Sequence[int], codec: TupleCodec, offset: int = 0) -> list[pa.Array]:
    """`decode_arrow` of the keys concatenated in `data`, each `lengths[i]` bytes long."""
    columns = _columns(data, lengths, codec, offset) if len(lengths) else None
    if columns is None:
        rows = [codec.decode(key[offset:]) for key in split(data, lengths)]
        return [pa.array([row[i] for row in rows], arrow_type(t)) for i, t in enumerate(codec.types)]
    return [column.arrow() for column in columns]


def _columns(
    data: bytes, lengths: Sequence[int], codec: TupleCodec, offset: int, fields: int | None = None
) -> list[_Column] | None:
    """The page's columns (the first `fields`, all when None), or None when the page must be decoded key by key."""
    try:
        return _Page(data, lengths, codec, offset).columns(fields)
    except _Fallback:
        return None


class _Fallback(Exception):
    """A page the vectorized path does not take as it is: decode it key by key."""


class _Column:
    """One decoded field over a page: numpy values (or, for strings, an Arrow array) and a NULL mask."""

    __slots__ = ("dtype", "null", "values")

    def __init__(self, dtype: DataType, values: Any, null: np.ndarray | None) -> None:
        self.dtype = dtype
        self.values = values
        self.null = null if null is not None and null.any() else None

    def arrow(self) -> pa.Array:
        name, values = self.dtype.name, self.values
        if isinstance(values, pa.Array):
            return values
        kind = arrow_type(self.dtype)
        if isinstance(values, list):
            return pa.array(values, kind)
        if name == "date":
            storage = (values - EPOCH_ORDINAL).astype(np.int32)
        elif name == "timestamp":
            storage = values - EPOCH_ORDINAL * MICROS_PER_DAY
        elif name == "boolean":
            storage = np.packbits(values == 2, bitorder="little")
        else:
            storage = np.ascontiguousarray(values)
        return pa.Array.from_buffers(kind, len(values), [_validity(self.null), pa.py_buffer(storage)])

    def pylist(self) -> list[Any]:
        name, values = self.dtype.name, self.values
        if isinstance(values, pa.Array):
            return values.to_pylist()
        if isinstance(values, list):
            return values
        if name == "date":
            out = _runs(np.maximum(values, 1), dt.date.fromordinal)
        elif name == "timestamp":
            epoch = EPOCH_ORDINAL * MICROS_PER_DAY
            micros = (np.where(values == 0, epoch, values) - epoch).tolist()
            out = [_TIMESTAMP_ZERO + dt.timedelta(microseconds=m) for m in micros]
        elif name == "boolean":
            out = (values == 2).tolist()
        else:
            out = values.tolist()
        if self.null is not None:
            for i in np.flatnonzero(self.null).tolist():
                out[i] = None
        return out


class _Page:
    """The keys of one page as one byte array, each field's start in each key (`at`), and where the fields end."""

    def __init__(self, data: bytes, lengths: Sequence[int], codec: TupleCodec, offset: int) -> None:
        self.codec = codec
        self.count = len(lengths)
        sizes = np.asarray(lengths, np.int64)
        self.ends = np.cumsum(sizes)
        self.data = np.frombuffer(data + bytes(16), np.uint8)
        self.origin = self.ends - sizes + offset
        self.at = self.origin
        self.stop = self.ends
        """Where the fields end in each key: before the offset trailer, when the schema has one."""
        self.trailer_width: np.ndarray | None = None
        if codec.variables >= 2:
            width = self.data[self.ends - 1].astype(np.int64)
            self.trailer_width = width
            self.stop = self.ends - (codec.variables - 1) * width - 1
            body = self.stop - self.origin
            canonical = np.where(body < 1 << 8, 1, np.where(body < 1 << 16, 2, 4))
            if ((body < 0) | (canonical != width)).any():
                raise _Fallback
        self.strings_seen = 0

    def columns(self, fields: int | None = None) -> list[_Column]:
        """The first `fields` fields (all when None: then the keys must end where the last one does)."""
        out = []
        for codec in self.codec.codecs[:fields]:
            width = codec.width
            if width is None:
                out.append(self.string(codec.dtype))
                self.strings_seen += 1
                continue
            if (self.at + width > self.stop).any():
                raise _Fallback
            out.append(self.fixed(codec, codec.dtype, width))
            self.at = self.at + width
        if fields is None and (self.at != self.stop).any():
            raise _Fallback
        return out

    def unsigned(self, position: np.ndarray, width: int) -> np.ndarray:
        """The big-endian unsigned integers of `width` bytes (1 to 8) starting at `position` in each key."""
        data = self.data
        if width in _UNSIGNED:
            kind = _UNSIGNED[width]
            rows = data[position[:, None] + np.arange(width)]
            return rows.view(np.dtype(kind).newbyteorder(">")).reshape(self.count).astype(kind)
        value = np.zeros(self.count, np.uint64)
        for i in range(width):
            value = (value << np.uint64(8)) | data[position + i].astype(np.uint64)
        return value

    def fixed(self, codec: Any, dtype: DataType, width: int) -> _Column:
        """A fixed-width field (NULL is all zeros), checked as the per-key decoder checks it."""
        name = dtype.name
        if dtype.is_integral:
            tag = self.data[self.at]
            rest = self.unsigned(self.at + 1, width - 1)
            null = tag == 0
            if ((tag > 1) | (null & (rest != 0))).any():
                raise _Fallback
            sign = _UNSIGNED[width - 1](1 << (8 * (width - 1) - 1))
            return _Column(dtype, (rest ^ sign).view(_SIGNED[width - 1]), null)
        if name == "decimal":
            data = self.data
            try:
                values = [codec.decode(data[p : p + width].tobytes()) for p in self.at.tolist()]
            except KeyEncodingError:
                raise _Fallback from None
            return _Column(dtype, values, None)
        ordinal = self.unsigned(self.at, width)
        null = ordinal == 0
        if name in ("float", "double"):
            kind = _UNSIGNED[width]
            sign, mask = kind(codec.sign), kind(codec.mask)
            finite_or_infinite = (ordinal >= codec.lowest) & (ordinal <= codec.ordinal(math.inf))
            negative_zero = ordinal == sign - kind(1)
            if not (null | (finite_or_infinite & ~negative_zero) | (ordinal == codec.highest)).all():
                raise _Fallback
            bits = np.where(ordinal & sign, ordinal ^ sign, ordinal ^ mask).astype(kind)
            return _Column(dtype, bits.view(np.float32 if width == 4 else np.float64), null)
        if not (null | ((ordinal >= codec.lowest) & (ordinal <= codec.highest))).all():
            raise _Fallback
        return _Column(dtype, ordinal.astype(np.int64), null)

    def string(self, dtype: DataType) -> _Column:
        """A string field: NULL is the byte 0; a value is 1, its bytes (none of them 0 or 1 here) and a 0."""
        codec, data = self.codec, self.data
        start = self.at
        if self.strings_seen == codec.variables - 1:
            after = self.stop - codec.fixed_after_last_var
        else:
            assert self.trailer_width is not None
            width = self.trailer_width
            after = self.origin + self.trailer_entries(self.stop + self.strings_seen * width, width)
        if ((after <= start) | (after > self.stop)).any():
            raise _Fallback
        first = data[start]
        null = first == 0
        if ((null & (after != start + 1)) | (~null & ((first != 1) | (after < start + 2)))).any():
            raise _Fallback
        if (data[after - 1] != 0).any():
            raise _Fallback
        begin = start + ~null
        length = after - 1 - begin
        offsets = np.zeros(self.count + 1, np.int64)
        np.cumsum(length, out=offsets[1:])
        gathered = data[np.repeat(begin - offsets[:-1], length) + np.arange(offsets[-1])]
        if (gathered <= 1).any():
            raise _Fallback
        self.at = after
        validity = _validity(null) if null.any() else None
        array = pa.StringArray.from_buffers(
            self.count, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(gathered.tobytes()), validity
        )
        try:
            array.validate(full=True)
        except pa.ArrowInvalid:
            raise _Fallback from None
        return _Column(dtype, array, None)

    def trailer_entries(self, entry: np.ndarray, width: np.ndarray) -> np.ndarray:
        """The big-endian offsets of `width` bytes (1, 2 or 4 per key) at `entry` in each key."""
        out = np.zeros(self.count, np.int64)
        for w in (1, 2, 4):
            rows = width == w
            if rows.any():
                out[rows] = self.unsigned(entry, w)[rows].astype(np.int64)
        return out


def _validity(null: np.ndarray | None) -> pa.Buffer | None:
    """Arrow's validity bitmap of a NULL mask (built in numpy: `pa.array` of a numpy array would import pandas)."""
    return None if null is None else pa.py_buffer(np.packbits(~null, bitorder="little"))


def _runs(values: np.ndarray, convert: Callable[[int], Any]) -> list[Any]:
    """`[convert(v) for v in values]`, converting each run of equal values once (keys in order repeat their leading
    fields: a day's partitions share one `date` object)."""
    if not len(values):
        return []
    starts = np.flatnonzero(np.concatenate(([True], values[1:] != values[:-1])))
    counts = np.diff(np.append(starts, len(values)))
    return list(chain.from_iterable(map(repeat, map(convert, values[starts].tolist()), counts.tolist())))
