"""The key codec against independent oracles: Python's own ordering, exact rational comparison, brute force."""

from __future__ import annotations

import datetime as dt
import math
import pickle
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sargable import keys
from sargable.errors import KeyEncodingError
from sargable.plan.keyrange import not_null_range, null_range, range_for
from sargable.types import INTEGER_RANGES

# --- oracle ----------------------------------------------------------------------------------------------------

_EPOCH = dt.datetime(1970, 1, 1)


def _micros(value: dt.date) -> int:
    if not isinstance(value, dt.datetime):
        value = dt.datetime.combine(value, dt.time())
    return (value - _EPOCH) // dt.timedelta(microseconds=1)


def rank(value):
    """A sort key giving the order the codec must reproduce: NULL first, -inf < finite < +inf < NaN, exact numbers,
    dates compared with timestamps at midnight, strings by code point."""
    if value is None:
        return (0,)
    if isinstance(value, bool):
        return (1, int(value))
    if isinstance(value, (float, Decimal)) and value != value:
        return (1, 3)
    if isinstance(value, (float, Decimal)) and value in (math.inf, -math.inf):
        return (1, 2) if value > 0 else (1, 0)
    if isinstance(value, (int, float, Decimal)):
        return (1, 1, Fraction(value))
    if isinstance(value, dt.date):
        return (1, _micros(value))
    return (1, value)


def same(a, b) -> bool:
    return rank(a) == rank(b)


def decimal_values(precision: int, scale: int):
    limit = 10**precision - 1
    return st.integers(-limit, limit).map(lambda u: Decimal(f"{u}E-{scale}"))


TYPE_VALUES = {
    "string": st.text(
        st.sampled_from("\x00\x01\x02a\x7f\xff\u0100\uffff\U0010ffff") | st.characters(exclude_categories=("Cs",))
    ),
    "varchar(10)": st.text(max_size=10),
    "tinyint": st.integers(*INTEGER_RANGES["tinyint"]),
    "smallint": st.integers(*INTEGER_RANGES["smallint"]),
    "int": st.integers(*INTEGER_RANGES["int"]),
    "bigint": st.integers(*INTEGER_RANGES["bigint"]),
    "float": st.floats(width=32),
    "double": st.floats(),
    "decimal(1,0)": decimal_values(1, 0),
    "decimal(5,2)": decimal_values(5, 2),
    "decimal(18,4)": decimal_values(18, 4),
    "decimal(38,10)": decimal_values(38, 10),
    "decimal(38,38)": decimal_values(38, 38),
    "date": st.dates(),
    "timestamp": st.datetimes(),
    "boolean": st.booleans(),
}
TYPES = sorted(TYPE_VALUES)


def values_of(type_name: str):
    return st.none() | TYPE_VALUES[type_name]


def bounds_of(type_name: str):
    """Comparison literals for a field of this type, in and out of its domain."""
    numbers = st.integers() | st.floats() | st.decimals(allow_nan=False) | st.integers(-300, 300).map(lambda i: i / 2)
    extra = {
        "date": st.dates() | st.datetimes(),
        "timestamp": st.datetimes() | st.dates(),
        "boolean": st.booleans(),
    }
    if type_name in extra:
        return TYPE_VALUES[type_name] | extra[type_name]
    if type_name.startswith(("string", "varchar")):
        return TYPE_VALUES["string"]
    return TYPE_VALUES[type_name] | numbers


def sign(x) -> int:
    return (x > 0) - (x < 0)


def cmp(a, b) -> int:
    return sign((a > b) - (a < b))


# --- single types and mixed tuples -----------------------------------------------------------------------------


@pytest.mark.parametrize("type_name", TYPES)
@settings(max_examples=60)
@given(data=st.data())
def test_every_type_orders_and_round_trips(type_name, data):
    values = data.draw(st.lists(values_of(type_name), min_size=2, max_size=12))
    encoded = [keys.encode([v], [type_name]) for v in values]
    for v, e in zip(values, encoded, strict=True):
        assert same(keys.decode(e, [type_name])[0], v)
        assert keys.encode_field(v, type_name) == e == keys.field_slice(e, [type_name], 0)
        assert same(keys.decode_field(e, type_name), v)
    for a, ea in zip(values, encoded, strict=True):
        for b, eb in zip(values, encoded, strict=True):
            assert cmp(ea, eb) == cmp(rank(a), rank(b)), (a, b)


@st.composite
def typed_tuples(draw, min_fields=1, max_fields=5):
    types = draw(st.lists(st.sampled_from(TYPES), min_size=min_fields, max_size=max_fields))
    rows = draw(st.lists(st.tuples(*[values_of(t) for t in types]), min_size=1, max_size=8))
    return types, rows


@settings(max_examples=300)
@given(typed_tuples())
def test_mixed_tuples_order_round_trip_and_field_slice(case):
    types, rows = case
    encoded = [keys.encode(row, types) for row in rows]
    for row, key in zip(rows, encoded, strict=True):
        decoded = keys.decode(key, types)
        assert len(decoded) == len(row) and all(same(a, b) for a, b in zip(decoded, row, strict=True))
        for i, (value, type_name) in enumerate(zip(row, types, strict=True)):
            field = keys.field_slice(key, types, i)
            assert field == keys.encode_field(value, type_name)
            assert same(keys.decode_field(field, type_name), value)
            assert keys.field_slice(b"TABLE" + key, types, i, start=5) == field
    for a, ea in zip(rows, encoded, strict=True):
        for b, eb in zip(rows, encoded, strict=True):
            assert cmp(ea, eb) == cmp(tuple(map(rank, a)), tuple(map(rank, b)))


@settings(max_examples=200)
@given(typed_tuples(), st.data())
def test_prefix_encodings_bound_the_keys_that_extend_them(case, data):
    types, rows = case
    row = rows[0]
    key = keys.encode(row, types)
    for k in range(len(types) + 1):
        prefix = keys.encode(row[:k], types)
        assert key.startswith(prefix)
        end = keys.prefix_end(prefix)
        assert prefix <= key and (end is None or key < end)
        assert keys.prefix_range(row[:k], types) == (prefix, end)
        start, stop = range_for(row[:k], types)
        assert start <= key and (stop is None or key < stop)
    for other in rows[1:]:
        other_key = keys.encode(other, types)
        k = data.draw(st.integers(0, len(types)))
        start, stop = range_for(row[:k], types)
        inside = start <= other_key and (stop is None or other_key < stop)
        assert inside == all(same(a, b) for a, b in zip(row[:k], other[:k], strict=True))


def test_field_slice_with_long_strings_uses_wide_trailer_offsets():
    types = ["string", "int", "string", "double", "string"]
    for size in (10, 300, 70_000):
        row = ("x" * size, 7, "\x00" * size, -1.5, "tail")
        key = keys.encode(row, types)
        assert keys.decode(key, types) == row
        assert [keys.field_slice(key, types, i) for i in range(5)] == [
            keys.encode_field(v, t) for v, t in zip(row, types, strict=True)
        ]


# --- prefix_end ------------------------------------------------------------------------------------------------

_byte_strings = st.binary(max_size=6) | st.lists(st.sampled_from([0, 1, 0xFE, 0xFF]), max_size=6).map(bytes)


@settings(max_examples=500)
@given(_byte_strings, _byte_strings)
def test_prefix_end_is_the_least_upper_bound_of_the_prefix(prefix, other):
    end = keys.prefix_end(prefix)
    if other.startswith(prefix):
        assert end is None or other < end
    else:
        assert other < prefix or (end is not None and other >= end)
    if end is not None:
        assert not end.startswith(prefix) and end > prefix


def test_prefix_end_examples():
    assert keys.prefix_end(b"a") == b"b"
    assert keys.prefix_end(b"a\xff") == b"b"
    assert keys.prefix_end(b"a\xfe\xff\xff") == b"a\xff"
    assert keys.prefix_end(b"\xff\xff") is None
    assert keys.prefix_end(b"") is None
    with pytest.raises(KeyEncodingError):
        keys.prefix_end("a")


# --- range_for against brute force -----------------------------------------------------------------------------

RANGE_TYPES = [
    "tinyint", "int", "bigint", "float", "double", "decimal(5,2)", "decimal(38,10)",
    "date", "timestamp", "boolean", "string",
]


@st.composite
def range_cases(draw):
    types = draw(st.lists(st.sampled_from(RANGE_TYPES), min_size=1, max_size=3))
    pools = [draw(st.lists(values_of(t), min_size=2, max_size=4)) for t in types]
    rows = draw(st.lists(st.tuples(*[st.sampled_from(p) for p in pools]), min_size=4, max_size=25))
    k = draw(st.integers(0, len(types) - 1))
    if draw(st.booleans()):
        prefix = list(draw(st.sampled_from(rows))[:k])
    else:
        prefix = [draw(st.sampled_from(p)) for p in pools[:k]]
    field_values = st.sampled_from([v for v in pools[k] if v is not None] or [None])
    bound_value = bounds_of(types[k]) | field_values
    lower = draw(st.none() | st.tuples(bound_value, st.booleans()))
    upper = draw(st.none() | st.tuples(bound_value, st.booleans()))
    assume(lower is None or lower[0] is not None)
    assume(upper is None or upper[0] is not None)
    return types, rows, prefix, lower, upper


def _within(value, lower, upper) -> bool:
    if (lower is not None or upper is not None) and value is None:
        return False
    if lower is not None and not (rank(value) > rank(lower[0]) or (lower[1] and rank(value) == rank(lower[0]))):
        return False
    return upper is None or rank(value) < rank(upper[0]) or (upper[1] and rank(value) == rank(upper[0]))


def _selected(rows, types, start, stop):
    encoded = [(row, keys.encode(row, types)) for row in rows]
    return [row for row, key in encoded if start <= key and (stop is None or key < stop)]


@settings(max_examples=800)
@given(range_cases())
def test_range_for_selects_exactly_the_matching_keys(case):
    types, rows, prefix, lower, upper = case
    start, stop = range_for(prefix, types, lower=lower, upper=upper)
    k = len(prefix)
    expected = [
        row for row in rows
        if all(same(a, b) for a, b in zip(row[:k], prefix, strict=True)) and _within(row[k], lower, upper)
    ]
    assert _selected(rows, types, start, stop) == expected
    if not expected and keys.is_empty(start, stop):
        assert (start, stop) == keys.EMPTY_RANGE


@settings(max_examples=300)
@given(range_cases())
def test_null_and_not_null_ranges(case):
    types, rows, prefix, _, _ = case
    k = len(prefix)
    matches = [row for row in rows if all(same(a, b) for a, b in zip(row[:k], prefix, strict=True))]
    assert _selected(rows, types, *null_range(prefix, types)) == [r for r in matches if r[k] is None]
    assert _selected(rows, types, *not_null_range(prefix, types)) == [r for r in matches if r[k] is not None]


def test_range_for_clamps_literals_outside_the_domain():
    enc = keys.encode_field
    assert range_for([], ["int"], lower=(3.5, True))[0] == enc(4, "int")
    assert range_for([], ["int"], lower=(3, False))[0] == enc(4, "int")
    start, stop = range_for([], ["int"], upper=(10**30, False))
    assert start == enc(-(2**31), "int") and stop is not None and stop > enc(2**31 - 1, "int")
    assert keys.is_empty(*range_for([], ["int"], lower=(10**30, True)))
    assert keys.is_empty(*range_for([], ["tinyint"], upper=(-129, True)))
    assert keys.is_empty(*range_for([3.5], ["int", "int"]))
    dec = "decimal(5,2)"
    assert range_for([], [dec], lower=(Decimal("1.001"), True))[0] == enc(Decimal("1.01"), dec)
    second = dt.datetime(2024, 1, 1, 0, 0, 1)
    assert range_for([], ["date"], lower=(second, True))[0] == enc(dt.date(2024, 1, 2), "date")
    assert range_for([dt.datetime(2024, 1, 1)], ["date"]) == range_for([dt.date(2024, 1, 1)], ["date"])
    assert keys.is_empty(*range_for([dt.datetime(2024, 1, 1, 12)], ["date"]))
    assert range_for([], ["double"], lower=(Decimal("0.1"), True))[0] == enc(0.1, "double")


def test_empty_range_moves_under_a_table_prefix_and_stays_empty():
    assert keys.prefixed_range(b"T", *keys.EMPTY_RANGE) == (b"T", b"T")
    assert keys.prefixed_range(b"T", b"a", None) == (b"Ta", b"U")
    assert keys.prefixed_range(b"\xff", b"", None) == (b"\xff", None)


# --- floats, strings, errors -----------------------------------------------------------------------------------


def test_float_special_values():
    order = [None, -math.inf, -1e300, -5e-324, 0.0, 5e-324, 1.0, math.inf, math.nan]
    encoded = [keys.encode_field(v, "double") for v in order]
    assert encoded == sorted(encoded) and len(set(encoded)) == len(encoded)
    assert keys.encode_field(-0.0, "double") == keys.encode_field(0.0, "double")
    assert keys.encode_field(float("-nan"), "float") == keys.encode_field(math.nan, "float")
    assert range_for([], ["double"], lower=(math.nan, True))[0] == keys.encode_field(math.nan, "double")


def test_strings_with_nul_and_any_code_point():
    values = ["", "\x00", "\x00\x00", "\x01", "\x01\x00", "a", "a\x00", "a\x00b", "a\x01", "ab", "\uffff", "\U0010ffff"]
    encoded = [keys.encode([v, 1.0], ["string", "double"]) for v in values]
    assert encoded == sorted(encoded)
    assert [keys.decode(e, ["string", "double"])[0] for e in encoded] == values


@pytest.mark.parametrize(
    ("values", "types"),
    [
        (["\ud800"], ["string"]),
        ([128], ["tinyint"]),
        ([True], ["int"]),
        (["1"], ["int"]),
        ([0.1], ["float"]),
        ([2**53 + 1], ["double"]),
        ([Decimal("1.234")], ["decimal(5,2)"]),
        ([Decimal("1000")], ["decimal(5,2)"]),
        ([dt.datetime(2024, 1, 1)], ["date"]),
        ([dt.date(2024, 1, 1)], ["timestamp"]),
        ([1], ["boolean"]),
        ([1, 2], ["int"]),
        ([1], ["no_such_type"]),
        ("ab", ["string"]),
    ],
)
def test_invalid_values_raise_key_encoding_error(values, types):
    with pytest.raises(KeyEncodingError):
        keys.encode(values, types)


def test_invalid_arguments_raise_key_encoding_error():
    with pytest.raises(KeyEncodingError):
        keys.field_slice(keys.encode([1], ["int"]), ["int"], 1)
    with pytest.raises(KeyEncodingError):
        range_for([1], ["int"], lower=(1, True))
    with pytest.raises(KeyEncodingError):
        range_for([], ["int"], lower=("x", True))
    with pytest.raises(KeyEncodingError):
        range_for([], ["int"], lower=(None, True))
    with pytest.raises(KeyEncodingError):
        keys.encode_field(1, ["int"])


@settings(max_examples=500)
@given(st.lists(st.sampled_from([*RANGE_TYPES, "varchar(10)"]), min_size=1, max_size=3), st.binary(max_size=40))
def test_decode_accepts_only_canonical_keys(types, data):
    try:
        values = keys.decode(data, types)
    except KeyEncodingError:
        return
    assert keys.encode(values, types) == data


# --- the schema-specialised decoder against a field-by-field reference ----------------------------------------


def reference_decode(key: bytes, types: list[str]) -> tuple:
    """Decode without the specialised decoder: each field located by `field_slice`, decoded by `decode_field`."""
    return tuple(keys.decode_field(keys.field_slice(key, types, i), t) for i, t in enumerate(types))


def outcome(decode, key):
    """What a decoder makes of a key: ('ok', repr of the values: exact types, scales and NaN) or ('error',)."""
    try:
        return ("ok", repr(decode(key)))
    except KeyEncodingError:
        return ("error",)


_FIELD_EXTREMES = {
    "string": st.sampled_from(["", "\x00", "\x01", "\x01\x01\x02", "\xff", "a\x00\x01b", "\U0010ffff"]),
    "int": st.sampled_from(INTEGER_RANGES["int"]),
    "bigint": st.sampled_from(INTEGER_RANGES["bigint"]),
    "double": st.sampled_from([math.inf, -math.inf, math.nan, -0.0, 5e-324, -5e-324]),
    "float": st.sampled_from([math.inf, -math.inf, math.nan, -0.0]),
}


@st.composite
def decode_cases(draw):
    types = draw(st.lists(st.sampled_from(TYPES), min_size=0, max_size=6))
    fields = [values_of(t) | _FIELD_EXTREMES.get(t, st.nothing()) for t in types]
    row = draw(st.tuples(*fields))
    return types, row


@settings(max_examples=400)
@given(decode_cases(), st.data())
def test_specialised_decode_equals_the_reference_on_keys_and_corrupted_keys(case, data):
    types, row = case
    codec = keys.TupleCodec(types)
    key = codec.encode(row)
    assert repr(codec.decode(key)) == repr(reference_decode(key, types)) == repr(codec.decode_checked(key))
    assert all(same(a, b) for a, b in zip(codec.decode(key), row, strict=True))
    assert repr(codec.decode(bytearray(key))) == repr(codec.decode(memoryview(key))) == repr(codec.decode(key))
    assert repr(pickle.loads(pickle.dumps(codec)).decode(key)) == repr(codec.decode(key))
    position = data.draw(st.integers(0, len(key)))
    byte = data.draw(st.sampled_from([0x00, 0x01, 0x02, 0x7F, 0xFE, 0xFF]))
    for corrupted in (
        key[:position] + bytes([byte]) + key[position + 1 :],
        key[:position] + bytes([byte]) + key[position:],
        key[:position],
        key + b"\xff",
    ):
        assert outcome(codec.decode, corrupted) == outcome(codec.decode_checked, corrupted), corrupted.hex()


@settings(max_examples=400)
@given(
    st.lists(st.sampled_from([*RANGE_TYPES, "smallint", "decimal(38,38)", "varchar(10)"]), max_size=4),
    st.binary(max_size=40) | st.lists(st.sampled_from([0, 1, 2, 0x41, 0xFE, 0xFF]), max_size=40).map(bytes),
)
def test_specialised_decode_agrees_with_the_reference_on_arbitrary_bytes(types, data):
    codec = keys.TupleCodec(types)
    assert outcome(codec.decode, data) == outcome(codec.decode_checked, data)
    for start in range(len(data) + 1):
        assert outcome(codec.decode, data[start:]) == outcome(codec.decode_checked, data[start:])
