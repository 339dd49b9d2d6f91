"""Order-preserving key encoding: tuples of typed values as byte strings whose byte order is the tuples' order.

A table row lives in the store under `table prefix + encode(values, types)`, so a filter on the leading fields
becomes a key range and a filter on any other field can be checked on that field's bytes (`field_slice` against
`encode_field`) without decoding the key. This module is only the codec: like the FoundationDB tuple layer, whose
layout it follows (typed by the column types instead of per-element type codes), it knows nothing of queries.
Turning comparisons into key ranges is `sargable.plan.keyrange`'s, with the literals placed in the column's domain
by `sargable.domain`.

Fixed-width fields. Every type but the string types has one width, and its field is the big-endian unsigned
"ordinal" of the value in that width, NULL being the ordinal 0 (all zero bytes, so NULL sorts first):

- `tinyint`..`bigint` (1 + 1/2/4/8 bytes): a tag byte 0x01, then the value minus the type's minimum (the sign bit
  flipped); NULL is 0x00 and zeros.
- `float` / `double` (4 / 8 bytes): the IEEE bits, all inverted for negative numbers and with the sign bit set for
  the others, so -inf < finite < +inf; -0.0 is stored as 0.0 (Spark compares them equal) and every NaN as one
  canonical NaN, whose encoding lies above +inf. The all-zero encoding would be a negative NaN, which is never
  stored, so it is free for NULL.
- `decimal(p,s)` (1, 2, 4, 8 or 16 bytes by p): the unscaled integer (value * 10**s) plus 10**p, so 0 is free.
- `date` (3 bytes): `date.toordinal()`, days since 0000-12-31 (days since the epoch, shifted to be positive), for
  the whole Python date range.
- `timestamp` (8 bytes): microseconds since 0000-12-31 00:00, from the same day ordinal.
- `boolean` (1 byte): 1 for false, 2 for true.

Strings (variable width): NULL is the single byte 0x00; a value is 0x01, its UTF-8 bytes with 0x01 written as
0x01 0x02 and 0x00 as 0x01 0x01, then a 0x00 terminator. The escaped bytes never contain 0x00 and sort in
code-point order, and the terminator sorts below any content byte, so a shorter string sorts first and a string's
encoding is never a proper prefix of another's, whatever follows it (FoundationDB's 0x00 0xFF escape would need the
next byte never to be 0xFF, which a following float field or the trailer can't promise). Any code point including
NUL is allowed; lone surrogates (not encodable as UTF-8) raise `KeyEncodingError`.

Locating a field in O(1) (the seed's third property). The start of field i is the end of the last string field
before it plus the fixed widths in between. The last string field's end is known from the key's length, so only the
other string fields' ends need storing: a key with two or more string fields ends with a trailer holding the end
offsets of all string fields but the last (big-endian, `w` bytes each), followed by the single byte `w` (1, 2 or 4).
Keys with at most one string field have no trailer. Since every field's encoding is prefix-free, two full keys are
ordered by their first differing field before either trailer is reached, so the trailer never changes the order.

Prefixes. `encode` of fewer values than types gives the fields alone, without a trailer, which is a byte prefix of
every full key starting with those values; `prefix_end` gives its successor, so [prefix, prefix_end(prefix))
holds exactly those keys, including when the prefix ends in 0xFF bytes; `prefix_range` is that range for a tuple of
leading values. The key of a table row carries the table's prefix in front (`prefixed_range` moves a range of
encoded tuples under it; `EMPTY_RANGE` is the range holding no key).

Values. `encode` takes each field's Python value as `types.convert` produces it and raises `KeyEncodingError` for
anything else: an int field takes `int` within its range, `float` only values exact in single precision, `decimal`
values that fit (p,s) exactly (decoded with scale s), `date` a `datetime.date`, `timestamp` a naive `datetime`;
`varchar(n)`/`char(n)` lengths are not checked (any string orders correctly). `tuple_codec(types)` returns the
cached `TupleCodec` of a key schema, whose methods skip the per-call schema lookup in hot loops; its `decode` is
generated for the schema (one struct unpack per run of fixed-width fields), since decoding is what listing costs.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
from collections.abc import Callable, Sequence
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Any

from sargable.errors import KeyEncodingError, SargableError
from sargable.types import DECIMAL_CONTEXT, INTEGER_RANGES, DataType, float32, parse_type

__all__ = [
    "EMPTY_RANGE",
    "TupleCodec",
    "decode",
    "decode_field",
    "encode",
    "encode_field",
    "field_slice",
    "is_empty",
    "prefix_end",
    "prefix_range",
    "prefixed_range",
    "tuple_codec",
]

EMPTY_RANGE: tuple[bytes, bytes] = (b"", b"")
"""The range holding no key: start == stop, so a scan of it yields nothing."""

_MICROS_PER_DAY = 86_400_000_000
_MAX_DATE_ORDINAL = dt.date.max.toordinal()
_TERMINATOR = b"\x00"
_STRING_NULL = b"\x00"


def prefix_end(prefix: bytes) -> bytes | None:
    """The smallest byte string above every string that starts with `prefix` ("X+" in the seed); None if none is.

    Trailing 0xFF bytes can't be incremented, so they are dropped before the last byte is: `b"a\\xff"` gives `b"b"`,
    and a prefix of only 0xFF bytes (or the empty prefix) is unbounded above, hence None.
    """
    if not isinstance(prefix, (bytes, bytearray, memoryview)):
        raise KeyEncodingError(f"prefix_end takes bytes, got {type(prefix).__name__}")
    stripped = bytes(prefix).rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes((stripped[-1] + 1,))


def is_empty(start: bytes, stop: bytes | None) -> bool:
    """Whether the half-open range [start, stop) holds no byte string (stop None means unbounded)."""
    return stop is not None and start >= stop


def prefixed_range(prefix: bytes, start: bytes, stop: bytes | None) -> tuple[bytes, bytes | None]:
    """A range of encoded tuples moved under a table prefix: bounds of `prefix + key` for every key in [start, stop)."""
    if is_empty(start, stop):
        return prefix, prefix
    return prefix + start, (prefix + stop) if stop is not None else prefix_end(prefix)


# --- per-type codecs -------------------------------------------------------------------------------------------


class _Codec:
    """How one type's values become field bytes; fixed-width types work on integer ordinals (0 = NULL)."""

    width: int | None = None
    lowest = 1
    highest = 1

    def __init__(self, dtype: DataType) -> None:
        self.dtype = dtype

    def ordinal(self, value: Any) -> int:
        """The ordinal of a value of the type; `KeyEncodingError` for anything else."""
        raise NotImplementedError

    def value(self, ordinal: int) -> Any:
        """The value of a valid ordinal (lowest..highest)."""
        raise NotImplementedError

    def encode(self, value: Any) -> bytes:
        if value is None:
            return bytes(self.width or 0)
        return self.ordinal(value).to_bytes(self.width, "big")

    def decode(self, data: bytes) -> Any:
        ordinal = int.from_bytes(data, "big")
        if ordinal == 0:
            return None
        if not self.lowest <= ordinal <= self.highest:
            raise KeyEncodingError(f"bytes {data.hex()} are not a valid {self.dtype} key field")
        return self.value(ordinal)

    def bad_value(self, value: Any) -> KeyEncodingError:
        return KeyEncodingError(f"{value!r} ({type(value).__name__}) is not a valid {self.dtype} key value")


class _IntCodec(_Codec):
    def __init__(self, dtype: DataType) -> None:
        super().__init__(dtype)
        self.minimum, self.maximum = INTEGER_RANGES[dtype.name]
        bits = 8 * ((self.maximum.bit_length() + 1) // 8)
        self.width = bits // 8 + 1
        self.base = (1 << bits) - self.minimum
        self.lowest, self.highest = self.minimum + self.base, self.maximum + self.base

    def encode(self, value: Any) -> bytes:
        if value.__class__ is int and self.minimum <= value <= self.maximum:
            return (value + self.base).to_bytes(self.width, "big")
        return super().encode(value)

    def ordinal(self, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.bad_value(value)
        if not self.minimum <= value <= self.maximum:
            raise KeyEncodingError(f"{value} is outside the range of {self.dtype} [{self.minimum}, {self.maximum}]")
        return value + self.base

    def value(self, ordinal: int) -> int:
        return ordinal - self.base


class _FloatCodec(_Codec):
    def __init__(self, dtype: DataType) -> None:
        super().__init__(dtype)
        single = dtype.name == "float"
        self.width = 4 if single else 8
        self.bits = 8 * self.width
        self.format = ">f" if single else ">d"
        self.int_format = ">I" if single else ">Q"
        self.sign = 1 << (self.bits - 1)
        self.mask = (1 << self.bits) - 1
        self.round = float32 if single else float
        self.nan = self._raw_ordinal(math.nan)
        self.lowest, self.highest = self._raw_ordinal(-math.inf), self.nan

    def _raw_ordinal(self, number: float) -> int:
        if number != number:
            number = math.nan
        (bits,) = struct.unpack(self.int_format, struct.pack(self.format, number))
        return bits ^ self.mask if bits & self.sign else bits | self.sign

    def ordinal(self, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, (float, int)):
            raise self.bad_value(value)
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if number == number and (number != value or self.round(number) != number):
            raise KeyEncodingError(f"{value!r} is not exactly representable as {self.dtype}; convert it first")
        return self._raw_ordinal(number + 0.0)

    def value(self, ordinal: int) -> float:
        bits = ordinal ^ self.sign if ordinal & self.sign else ordinal ^ self.mask
        return struct.unpack(self.format, struct.pack(self.int_format, bits))[0]

    def decode(self, data: bytes) -> Any:
        value = super().decode(data)
        if value is not None and self._raw_ordinal(value + 0.0) != int.from_bytes(data, "big"):
            raise KeyEncodingError(f"bytes {data.hex()} are not a canonical {self.dtype} key field")
        return value


class _DecimalCodec(_Codec):
    def __init__(self, dtype: DataType) -> None:
        super().__init__(dtype)
        assert dtype.precision is not None and dtype.scale is not None
        self.scale = dtype.scale
        self.limit = 10**dtype.precision
        self.width = next(w for w in (1, 2, 4, 8, 16) if 2 * self.limit <= 1 << (8 * w))
        self.lowest, self.highest = 1, 2 * self.limit - 1

    def ordinal(self, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, (Decimal, int)):
            raise self.bad_value(value)
        if isinstance(value, Decimal) and not value.is_finite():
            raise KeyEncodingError(f"{value} is not a finite decimal")
        scaled = Fraction(value) * 10**self.scale
        if scaled.denominator != 1 or not -self.limit < scaled.numerator < self.limit:
            raise KeyEncodingError(f"{value} does not fit {self.dtype} without rounding")
        return scaled.numerator + self.limit

    def value(self, ordinal: int) -> Decimal:
        return Decimal(ordinal - self.limit).scaleb(-self.scale, context=DECIMAL_CONTEXT)


def _timestamp_micros(value: dt.datetime) -> int:
    seconds = value.hour * 3600 + value.minute * 60 + value.second
    return value.toordinal() * _MICROS_PER_DAY + seconds * 1_000_000 + value.microsecond


class _DateCodec(_Codec):
    width = 3
    lowest, highest = 1, _MAX_DATE_ORDINAL

    def encode(self, value: Any) -> bytes:
        if value.__class__ is dt.date:
            return value.toordinal().to_bytes(3, "big")
        return super().encode(value)

    def ordinal(self, value: Any) -> int:
        if not isinstance(value, dt.date) or isinstance(value, dt.datetime):
            raise self.bad_value(value)
        return value.toordinal()

    def value(self, ordinal: int) -> dt.date:
        return dt.date.fromordinal(ordinal)


class _TimestampCodec(_Codec):
    width = 8
    lowest = _timestamp_micros(dt.datetime.min)
    highest = _timestamp_micros(dt.datetime.max)

    def ordinal(self, value: Any) -> int:
        if not isinstance(value, dt.datetime) or value.tzinfo is not None:
            raise self.bad_value(value)
        return _timestamp_micros(value)

    def value(self, ordinal: int) -> dt.datetime:
        return dt.datetime.min + dt.timedelta(microseconds=ordinal - self.lowest)


class _BooleanCodec(_Codec):
    width = 1
    lowest, highest = 1, 2

    def ordinal(self, value: Any) -> int:
        if not isinstance(value, bool):
            raise self.bad_value(value)
        return 2 if value else 1

    def value(self, ordinal: int) -> bool:
        return ordinal == 2


class _StringCodec(_Codec):
    def encode(self, value: Any) -> bytes:
        if value is None:
            return _STRING_NULL
        if not isinstance(value, str):
            raise self.bad_value(value)
        try:
            raw = value.encode("utf-8")
        except UnicodeEncodeError:
            raise KeyEncodingError(f"{value!r} contains a lone surrogate, which has no UTF-8 form") from None
        if b"\x01" in raw or b"\x00" in raw:
            raw = raw.replace(b"\x01", b"\x01\x02").replace(b"\x00", b"\x01\x01")
        return b"\x01%b\x00" % raw

    def decode(self, data: bytes) -> Any:
        if data == _STRING_NULL:
            return None
        if len(data) < 2 or data[0] != 1 or data[-1] != 0 or b"\x00" in data[1:-1]:
            raise KeyEncodingError(f"bytes {data.hex()} are not a valid string key field")
        raw = data[1:-1]
        escaped = b"\x01" in raw
        if escaped:
            raw = raw.replace(b"\x01\x01", b"\x00").replace(b"\x01\x02", b"\x01")
        try:
            value = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise KeyEncodingError(f"bytes {data.hex()} are not valid UTF-8 in a string key field") from None
        if escaped and self.encode(value) != data:
            raise KeyEncodingError(f"bytes {data.hex()} are not a canonical string key field")
        return value


def _make_codec(dtype: DataType) -> _Codec:
    name = dtype.name
    if dtype.is_string:
        return _StringCodec(dtype)
    if dtype.is_integral:
        return _IntCodec(dtype)
    if dtype.is_floating:
        return _FloatCodec(dtype)
    factories: dict[str, Callable[[DataType], _Codec]] = {
        "decimal": _DecimalCodec,
        "date": _DateCodec,
        "timestamp": _TimestampCodec,
        "boolean": _BooleanCodec,
    }
    if name not in factories:
        raise KeyEncodingError(f"type {dtype} can't be part of a key")
    return factories[name](dtype)


@lru_cache(maxsize=256)
def _cached_codec(dtype: DataType | str) -> _Codec:
    try:
        return _make_codec(parse_type(dtype))
    except KeyEncodingError:
        raise
    except SargableError as exc:
        raise KeyEncodingError(str(exc)) from None


def _codec(dtype: DataType | str) -> _Codec:
    if not isinstance(dtype, (DataType, str)):
        raise KeyEncodingError(f"a key field type is a type name or DataType, got {dtype!r}")
    return _cached_codec(dtype)


# --- tuple layout ----------------------------------------------------------------------------------------------


class TupleCodec:
    """The codec of one key schema (a sequence of types); keep one to encode and decode many keys quickly.

    It also knows where each field starts: after which string field, and how far past that field's end.
    """

    decode: Callable[[bytes], tuple[Any, ...]]
    """See `decode`: the schema's specialised decoder (`_compile_decoder`), exact as `decode_checked`."""

    def __init__(self, types: Sequence[DataType | str]) -> None:
        self.codecs = [_codec(t) for t in types]
        self.types = tuple(codec.dtype for codec in self.codecs)
        self.count = len(self.codecs)
        self.anchors: list[tuple[int, int]] = []
        self.var_index: list[int] = []
        anchor, gap, variables = -1, 0, 0
        for codec in self.codecs:
            self.anchors.append((anchor, gap))
            if codec.width is None:
                self.var_index.append(variables)
                anchor, gap, variables = variables, 0, variables + 1
            else:
                self.var_index.append(-1)
                gap += codec.width
        self.variables = variables
        self.fixed_after_last_var = gap if variables else 0
        self.decode = _compile_decoder(self)

    def __repr__(self) -> str:
        return f"TupleCodec({', '.join(map(str, self.types))})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its types (the generated decoder is rebuilt on load)."""
        return tuple_codec, (self.types,)

    def encode(self, values: Sequence[Any]) -> bytes:
        """See `encode`."""
        if values.__class__ is not tuple and values.__class__ is not list and not _is_sequence(values):
            raise KeyEncodingError(f"key values must be a sequence (tuple or list), got {type(values).__name__}")
        if len(values) > self.count:
            raise KeyEncodingError(f"{len(values)} values for a key of {self.count} fields")
        parts = [codec.encode(value) for codec, value in zip(self.codecs, values)]
        body = b"".join(parts)
        if self.variables < 2 or len(values) < self.count:
            return body
        ends, position = [], 0
        for codec, part in zip(self.codecs, parts, strict=True):
            position += len(part)
            if codec.width is None:
                ends.append(position)
        return body + _trailer(ends[:-1], len(body))

    def decode_checked(self, data: bytes) -> tuple[Any, ...]:
        """Decode field by field through the type codecs: the reference `decode` falls back to for unusual keys."""
        if data.__class__ is not bytes:
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise KeyEncodingError(f"a key is bytes, got {type(data).__name__}")
            data = bytes(data)
        values, ends, position, size = [], [], 0, len(data)
        for codec in self.codecs:
            width = codec.width
            if width is None:
                if position >= size:
                    raise KeyEncodingError("key ends in the middle of a string field")
                end = position + 1 if data[position] == 0 else data.find(_TERMINATOR, position + 1) + 1
                if end <= 0:
                    raise KeyEncodingError("key has an unterminated string field")
                ends.append(end)
            else:
                end = position + width
                if end > size:
                    raise KeyEncodingError(f"key ends in the middle of a {codec.dtype} field")
            values.append(codec.decode(data[position:end]))
            position = end
        if position != size and (self.variables < 2 or data[position:] != _trailer(ends[:-1], position)):
            raise KeyEncodingError(f"key has {size - position} unexpected trailing bytes for its types")
        if position == size and self.variables >= 2:
            raise KeyEncodingError("key lacks the offset trailer of a full key")
        return tuple(values)

    def field_slice(self, key: bytes, i: int, *, start: int = 0) -> bytes:
        """See `field_slice`."""
        if not isinstance(i, int) or not 0 <= i < self.count:
            raise KeyEncodingError(f"field index {i!r} is out of range for a key of {self.count} fields")
        anchor, gap = self.anchors[i]
        begin = start + gap if anchor < 0 else self._var_end(key, start, anchor) + gap
        width = self.codecs[i].width
        end = begin + width if width is not None else self._var_end(key, start, self.var_index[i])
        if not 0 <= start <= begin < end <= len(key):
            raise KeyEncodingError(f"key is too short or malformed to hold field {i} of its types")
        return bytes(key[begin:end])

    def _var_end(self, key: bytes, start: int, ordinal: int) -> int:
        """Where string field number `ordinal` (counting string fields only) ends."""
        trailer, width = 0, 0
        if self.variables >= 2:
            if len(key) <= start:
                raise KeyEncodingError("key is too short for its types")
            width = key[-1]
            if width not in (1, 2, 4):
                raise KeyEncodingError(f"key trailer has an invalid offset width {width}")
            trailer = (self.variables - 1) * width + 1
        if ordinal == self.variables - 1:
            return len(key) - trailer - self.fixed_after_last_var
        entry = len(key) - trailer + ordinal * width
        return start + int.from_bytes(key[entry : entry + width], "big")


def _is_sequence(values: Any) -> bool:
    return isinstance(values, Sequence) and not isinstance(values, (str, bytes, bytearray))


def _trailer(ends: list[int], body_length: int) -> bytes:
    width = 1 if body_length < 1 << 8 else 2 if body_length < 1 << 16 else 4
    if body_length >= 1 << 32:
        raise KeyEncodingError("key is longer than 4 GiB")
    return b"".join(end.to_bytes(width, "big") for end in ends) + bytes((width,))


# --- schema-specialised decoding --------------------------------------------------------------------------------

_STRUCT_CODES = {1: "B", 2: "H", 3: "BH", 4: "I", 5: "BI", 8: "Q", 9: "BQ", 16: "QQ"}
"""Struct codes reading a fixed-width field's big-endian ordinal: one code, or two whose values combine."""
_FALLBACK_ERRORS = (IndexError, struct.error, UnicodeDecodeError)


def _compile_decoder(layout: TupleCodec) -> Callable[[bytes], tuple[Any, ...]]:
    """A decoder specialised to one key schema, generated once per `TupleCodec` because decode is the hot loop of
    partition listing: each run of fixed-width fields is one precompiled struct unpack, ordinals are range-checked
    with the codec's bounds inlined, and strings without escapes decode straight from UTF-8. Whatever is unusual
    (a short or malformed key, a non-canonical float, an invalid ordinal, a bytearray) goes to `decode_checked`,
    which decodes it exactly or raises the precise `KeyEncodingError`; escaped strings go to the string codec.
    """
    env: dict[str, Any] = {"slow": layout.decode_checked, "error": _FALLBACK_ERRORS, "trailer": _trailer}
    body: list[str] = []
    offset, seen_string, ends = 0, False, []

    def at(extra: int = 0) -> str:
        shift = offset + extra
        return str(shift) if not seen_string else f"p + {shift}" if shift else "p"

    k = 0
    while k < layout.count:
        if layout.codecs[k].width is None:
            env[f"string{k}"] = layout.codecs[k].decode
            body += _string_lines(k, at(), at(1))
            offset, seen_string = 0, True
            if len(ends) < layout.variables - 1:
                body.append(f"e{k} = p")
                ends.append(f"e{k}")
            k += 1
            continue
        run = k
        while k < layout.count and layout.codecs[k].width is not None:
            k += 1
        items, converts = 0, []
        for i in range(run, k):
            codec = layout.codecs[i]
            codes = _STRUCT_CODES[codec.width]  # type: ignore[index]
            if isinstance(codec, _IntCodec) and len(codes) == 2:
                converts += _int_lines(i, codec, f"a{items}", f"a{items + 1}")
            elif len(codes) == 2:
                low_bits = 8 * struct.calcsize(">" + codes[1])
                converts += _fixed_lines(i, codec, f"a{items} << {low_bits} | a{items + 1}", env)
            else:
                converts += _fixed_lines(i, codec, f"a{items}", env)
            items += len(codes)
        fmt = ">" + "".join(_STRUCT_CODES[layout.codecs[i].width] for i in range(run, k))  # type: ignore[index]
        env[f"struct{run}"] = struct.Struct(fmt)
        names = ", ".join(f"a{j}" for j in range(items))
        body.append(f"{names}, = struct{run}.unpack_from(data, {at()})")
        body += converts
        offset += struct.calcsize(fmt)
    if layout.variables < 2:
        body += [f"if {at()} != len(data):", "    return slow(data)"]
    else:
        listed = ", ".join(ends)
        body += [
            f"q = {at()}",
            f"if data[q:] != (bytes(({listed}, 1)) if q < 256 else trailer([{listed}], q)):",
            "    return slow(data)",
        ]
    values = "".join(f"v{i}, " for i in range(layout.count))
    body.append(f"return ({values})")
    source = "\n".join(
        ["def decode(data):", "    if data.__class__ is not bytes:", "        return slow(data)", "    try:"]
        + [f"        {line}" for line in body]
        + ["    except error:", "        return slow(data)"]
    )
    exec(source, env)  # the source is built above from the schema's widths and bounds only
    decode = env["decode"]
    decode.__doc__ = f"Decode a full key of ({', '.join(map(str, layout.types))}); see `decode`."
    return decode


def _string_lines(k: int, start: str, after: str) -> list[str]:
    """Decode string field k starting at `start`, leaving `p` just past it."""
    return [
        f"c = data[{start}]",
        "if c == 0:",
        f"    v{k} = None",
        f"    p = {after}",
        "elif c == 1:",
        f"    e = data.find(b'\\x00', {after})",
        "    if e < 0:",
        "        return slow(data)",
        f"    raw = data[{after}:e]",
        f"    v{k} = string{k}(data[{start} : e + 1]) if b'\\x01' in raw else raw.decode()",
        "    p = e + 1",
        "else:",
        "    return slow(data)",
    ]


def _int_lines(k: int, codec: _IntCodec, tag: str, rest: str) -> list[str]:
    """Integer field k from its tag byte (1 for a value, 0 for NULL) and the bytes after it, without a big ordinal."""
    return [
        f"if {tag} == 1:",
        f"    v{k} = {rest} + {codec.minimum}",
        f"elif {tag} == 0 and {rest} == 0:",
        f"    v{k} = None",
        "else:",
        "    return slow(data)",
    ]


def _fixed_lines(k: int, codec: _Codec, ordinal: str, env: dict[str, Any]) -> list[str]:
    """Turn fixed-width field k's ordinal into its value, leaving anything but a valid canonical ordinal to `slow`."""
    valid = f"{codec.lowest} <= o <= {codec.highest}"
    extra: list[str] = []
    if isinstance(codec, _IntCodec):
        value = f"o - {codec.base}"
    elif isinstance(codec, _DateCodec):
        env["fromordinal"] = dt.date.fromordinal
        value = "fromordinal(o)"
    elif isinstance(codec, _BooleanCodec):
        value = "o == 2"
    elif isinstance(codec, _FloatCodec):
        env[f"bits{k}"], env[f"float{k}"] = struct.Struct(codec.int_format).pack, struct.Struct(codec.format).unpack
        infinity, negative_zero = codec._raw_ordinal(math.inf), codec._raw_ordinal(-0.0)
        valid = f"{codec.lowest} <= o <= {infinity} and o != {negative_zero}"
        value = f"float{k}(bits{k}(o ^ {codec.sign} if o & {codec.sign} else o ^ {codec.mask}))[0]"
        extra = [f"elif o == {codec.nan}:", f"    v{k} = nan"]
        env["nan"] = math.nan
    else:
        env[f"value{k}"] = codec.value
        value = f"value{k}(o)"
    return [
        f"o = {ordinal}",
        "if o == 0:",
        f"    v{k} = None",
        f"elif {valid}:",
        f"    v{k} = {value}",
        *extra,
        "else:",
        "    return slow(data)",
    ]


@lru_cache(maxsize=4096)
def _tuple_codec(types: tuple[DataType | str, ...]) -> TupleCodec:
    return TupleCodec(types)


def tuple_codec(types: Sequence[DataType | str]) -> TupleCodec:
    """The codec of a key schema (the 4,096 most recently used are kept)."""
    if types.__class__ is list:
        types = tuple(types)
    elif types.__class__ is not tuple:
        if not _is_sequence(types):
            raise KeyEncodingError(f"key types must be a sequence of types, got {types!r}")
        types = tuple(types)
    try:
        return _tuple_codec(types)  # type: ignore[arg-type]
    except TypeError:
        return TupleCodec(types)


# --- public functions ------------------------------------------------------------------------------------------


def encode(values: Sequence[Any], types: Sequence[DataType | str]) -> bytes:
    """Encode a tuple (or a prefix of it: fewer values than types) so byte order equals value order, NULL first."""
    return tuple_codec(types).encode(values)


def decode(data: bytes, types: Sequence[DataType | str]) -> tuple[Any, ...]:
    """Decode a full key made by `encode` back into its values; malformed bytes raise `KeyEncodingError`."""
    return tuple_codec(types).decode(data)


def field_slice(key: bytes, types: Sequence[DataType | str], i: int, *, start: int = 0) -> bytes:
    """The bytes of field `i` of a full key, found in O(1) from the widths and the trailer, without decoding.

    `start` is where the encoded tuple begins inside `key` (the length of a table prefix), to avoid copying.
    """
    return tuple_codec(types).field_slice(key, i, start=start)


def encode_field(value: Any, dtype: DataType | str) -> bytes:
    """One field's bytes: what `field_slice` returns for a key holding `value`, so the two compare bytewise."""
    return _codec(dtype).encode(value)


def decode_field(data: bytes, dtype: DataType | str) -> Any:
    """The value of one field's bytes (as returned by `field_slice` or `encode_field`)."""
    codec = _codec(dtype)
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise KeyEncodingError(f"a key field is bytes, got {type(data).__name__}")
    data = bytes(data)
    if codec.width is not None and len(data) != codec.width:
        raise KeyEncodingError(f"a {codec.dtype} key field has {codec.width} bytes, got {len(data)}")
    return codec.decode(data)


def prefix_range(values: Sequence[Any], types: Sequence[DataType | str]) -> tuple[bytes, bytes | None]:
    """Half-open bounds [start, stop) of the full keys whose leading fields are `values` (stop None: to the end).

    FoundationDB's `Tuple.range()`: `encode(values)` is a byte prefix of exactly those keys, and `prefix_end` bounds
    them. The values must be encodable (`encode`'s rules); a None value is NULL.
    """
    prefix = tuple_codec(types).encode(values)
    return prefix, prefix_end(prefix)
