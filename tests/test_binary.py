"""The compact binary form: exact round trips of any tree (bound or not), compactness, deep/wide input, bad bytes."""

from __future__ import annotations

import datetime as dt
import math
import random
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sargable as sg
from sargable.expr import (
    NULL_LITERAL,
    And,
    Between,
    Column,
    Comparison,
    Expr,
    Func,
    In,
    IsNull,
    Like,
    Literal,
    Not,
    Or,
    Regex,
    col,
    dumps,
    loads,
    parse,
    walk,
)
from sargable.expr.binary import MAGIC, VERSION
from sargable.types import DOUBLE, INT, DataType
from test_render import bound_expressions, expressions, literals, names, types


def _same_leaves(a: Expr, b: Expr) -> None:
    """Beyond `==`: values keep their exact Python type, decimal digits and the sign of zero."""
    for x, y in zip(walk(a), walk(b), strict=True):
        if isinstance(x, Literal):
            assert isinstance(y, Literal)
            assert type(x.value) is type(y.value)
            if isinstance(x.value, float):
                assert math.isnan(x.value) == math.isnan(y.value)
                assert math.copysign(1, x.value) == math.copysign(1, y.value)
            if isinstance(x.value, Decimal):
                assert x.value.as_tuple() == y.value.as_tuple()


@settings(max_examples=250)
@given(expressions)
def test_round_trip(expr: Expr) -> None:
    back = loads(dumps(expr))
    assert back == expr
    _same_leaves(expr, back)


@settings(max_examples=150)
@given(bound_expressions())
def test_round_trip_of_bound_trees(expr: Expr) -> None:
    back = loads(dumps(expr))
    assert back == expr
    _same_leaves(expr, back)


odd_types = st.builds(
    DataType,
    st.text(min_size=1, max_size=8),
    st.none() | st.integers(-(10**6), 10**6),
    st.none() | st.integers(-(10**6), 10**6),
    st.none() | st.integers(-(10**6), 10**6),
)
odd_values = st.one_of(
    st.integers(-(10**60), 10**60),
    st.floats(),
    st.decimals(allow_nan=False),
    st.text(),
    st.dates(),
    st.datetimes(),
    st.booleans(),
    st.none(),
)
any_leaves = st.one_of(
    literals,
    st.builds(Literal, odd_values, st.one_of(types, odd_types)),
    st.builds(Column, st.text(max_size=6), st.none() | types | odd_types),
)


def _any_node(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    """Any node over any children: shapes no parser produces (predicates as operands, odd types) still round-trip."""
    kids = st.lists(children, min_size=2, max_size=4).map(tuple)
    return st.one_of(
        st.builds(Comparison, st.sampled_from(["=", "!=", "<", "<=", ">", ">=", "<=>"]), children, children),
        st.builds(In, children, st.lists(children, min_size=1, max_size=3).map(tuple), st.booleans()),
        st.builds(Between, children, children, children, st.booleans()),
        st.builds(IsNull, children, st.booleans()),
        st.builds(Like, children, st.text(), st.none() | st.characters(), st.booleans()),
        st.builds(Regex, children, st.text(), st.booleans()),
        st.builds(Func, names, st.lists(children, max_size=3).map(tuple)),
        st.builds(Not, children),
        kids.map(And),
        kids.map(Or),
    )


@settings(max_examples=400)
@given(st.recursive(any_leaves, _any_node, max_leaves=10))
def test_round_trip_of_any_tree(expr: Expr) -> None:
    back = loads(dumps(expr))
    assert back == expr
    _same_leaves(expr, back)


def test_values_of_every_kind_are_exact() -> None:
    values = [
        -0.0, math.inf, -math.inf, math.nan, 5e-324, 2**63, -(2**63) - 1, 10**100, -(10**100), Decimal("-0.00"),
        Decimal("1E+5"), Decimal("Infinity"), "", "\0'\n\U0001f600", dt.date.min, dt.date.max, dt.datetime.min,
        dt.datetime.max, True, False, None,
    ]
    expr = Func("f", tuple(Literal(value, DOUBLE) for value in values))
    back = loads(dumps(expr))
    assert back == expr
    _same_leaves(expr, back)


def test_compact() -> None:
    payload = dumps(parse("ds = DATE '2024-01-01' AND hr IN (1,2,3)"))
    assert payload.startswith(MAGIC + bytes([VERSION]))
    assert len(payload) < 50
    wide = parse(" OR ".join(f"(ds = DATE '2024-01-01' AND hr = {i})" for i in range(1000)))
    assert len(dumps(wide)) < len(sg.render(wide)) / 2.5


def test_binary_form_is_stable() -> None:
    """The stream layout is a format: this exact payload must keep loading in later releases."""
    payload = bytes.fromhex("5347010100026473030708c68c2d10010002687209020904090620033102")
    assert loads(payload) == parse("ds = DATE '2024-01-01' AND hr IN (1, 2, 3)")
    assert dumps(loads(payload)) == payload


def test_deep_and_wide() -> None:
    deep: Expr = col("a").eq(1)
    for index in range(10_000):
        deep = Not(deep) if index % 2 else And((Column(f"c{index % 5}", INT).eq(index), deep))
    assert loads(dumps(deep)) == deep
    wide = Or(tuple(Comparison("=", col(f"p{index % 3}"), Literal(index, INT)) for index in range(100_000)))
    assert loads(dumps(wide)) == wide


def test_repeated_leaves_are_shared_after_loading() -> None:
    back = loads(dumps(parse(" OR ".join(f"p = {i % 3}" for i in range(30)))))
    assert len({id(node) for node in walk(back) if isinstance(node, (Column, Literal))}) == 4


# -- bad input --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"", "don't start with b'SG'"),
        (b"S", "don't start with b'SG'"),
        (b"XX\x01\x01\x00\x01a", "don't start with b'SG'"),
        (b"SG", "no version byte"),
        (b"SG\x02\x01\x00\x01a", "unsupported expression format version 2"),
        (b"SG\x01", "0 top-level nodes"),
        (b"SG\x01\xff", "unknown opcode 0xff"),
        (b"SG\x01\x01", "truncated"),
        (b"SG\x01\x01\x00\x05ab", "runs past the end"),
        (b"SG\x01\x01\x00\xff\xff\xff\xff\xff\xff\xff\xff\x7f", "runs past the end"),
        (b"SG\x01\x01\x00" + b"\xff" * 11, "varint longer than 10 bytes"),
        (b"SG\x01\x01\x05", "string reference 5 past the table"),
        (b"SG\x01\x01\x00\x02\xff\xfe", "invalid UTF-8"),
        (b"SG\x01\x01\x00\x01a\x01\x01", "2 top-level nodes"),
        (b"SG\x01\x10", "needs 2 children"),
        (b"SG\x01\x01\x00\x01a\x31\x05", "claims 5 children"),
        (b"SG\x01\x01\x00\x01a\x01\x01\x31\x01", "at least two children"),
        (b"SG\x01\x01\x00\x01a\x20\x00", "IN needs at least one value"),
        (b"SG\x01\x03\x99", "unknown type tag"),
        (b"SG\x01\x03\x00\x77", "unknown value tag"),
        (b"SG\x01\x03\x00\x08\x00", "outside the calendar"),
        (b"SG\x01\x03\x00\x09\x01\xff\xff\xff\xff\xff\x7f", "past midnight"),
        (b"SG\x01\x03\x00\x05\x00\x00", "runs past the end"),
        (b"SG\x01\x03\x00\x06\x00\x03abc", "is not a decimal"),
        (b"SG\x01\x01\x00\x01a\x28\x00\x01%\x00\x02!!", "is not one character"),
    ],
)
def test_corrupt_bytes(data: bytes, fragment: str) -> None:
    with pytest.raises(sg.SerializationError) as info:
        loads(data)
    assert fragment in str(info.value)


@pytest.mark.parametrize("bad", ["SG\x01", None, 42, [1, 2]])
def test_loads_takes_bytes(bad: object) -> None:
    with pytest.raises(sg.SerializationError, match="takes bytes"):
        loads(bad)  # type: ignore[arg-type]


def test_loads_accepts_bytearray_and_memoryview() -> None:
    payload = dumps(col("a").eq(1))
    assert loads(bytearray(payload)) == loads(memoryview(payload)) == col("a").eq(1)


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ("a = 1", "can only serialize an Expr"),
        (Literal(object(), INT), "Python type object"),
        (Literal(dt.datetime(2024, 1, 1, tzinfo=dt.UTC), INT), "has a time zone"),
        (Column("a", "int"), "must be a DataType"),  # type: ignore[arg-type]
    ],
)
def test_dumps_rejects_what_it_cannot_encode(bad: object, fragment: str) -> None:
    with pytest.raises(sg.SerializationError, match=fragment):
        dumps(bad)  # type: ignore[arg-type]


def _loads_or_serialization_error(data: bytes) -> None:
    try:
        loads(data)
    except sg.SerializationError as exc:
        assert str(exc)


@settings(max_examples=1000)
@given(st.binary(max_size=64))
def test_random_bytes(data: bytes) -> None:
    _loads_or_serialization_error(data)
    _loads_or_serialization_error(MAGIC + bytes([VERSION]) + data)


@settings(max_examples=60)
@given(expressions)
def test_every_truncation_fails_cleanly(expr: Expr) -> None:
    payload = dumps(expr)
    for end in range(len(payload)):
        try:
            back = loads(payload[:end])
        except sg.SerializationError:
            continue
        assert isinstance(back, Expr)  # a prefix can be a whole smaller stream (a leaf before its parent)


@settings(max_examples=100)
@given(expressions, st.randoms(use_true_random=False))
def test_bit_flips_fail_cleanly(expr: Expr, rng: random.Random) -> None:
    payload = bytearray(dumps(expr))
    for _ in range(20):
        flipped = bytearray(payload)
        position = rng.randrange(len(flipped))
        flipped[position] ^= 1 << rng.randrange(8)
        _loads_or_serialization_error(bytes(flipped))


def test_oversized_lengths_do_not_allocate() -> None:
    for claim in (2**31, 2**62, 2**69):
        length = bytearray()
        while claim >= 0x80:
            length.append((claim & 0x7F) | 0x80)
            claim >>= 7
        length.append(claim)
        for prefix in (b"\x01\x00", b"\x03\x00\x04", b"\x03\x00\x06\x00"):
            with pytest.raises(sg.SerializationError):
                loads(MAGIC + bytes([VERSION]) + prefix + bytes(length) + b"abc")


def test_null_literal_and_typed_null() -> None:
    expr = And((IsNull(NULL_LITERAL), col("a").eq(Literal(None, INT))))
    assert loads(dumps(expr)) == expr
