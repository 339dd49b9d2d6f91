"""`sargable.domain` against independent oracles: the key codec's ordinals (which values a type holds and what
follows what), the row evaluator's `compare_values` (how a literal compares with them), brute force for intervals."""

from __future__ import annotations

import datetime as dt
import itertools
import math
from decimal import Decimal
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from sargable import domain, keys
from sargable.domain import BELOW, EMPTY, INCOMPARABLE, NO_VALUE, Interval
from sargable.expr.evaluate import compare_values
from sargable.types import INTEGER_RANGES, float32, parse_type

TYPES = [
    "tinyint",
    "int",
    "bigint",
    "float",
    "double",
    "decimal(5,2)",
    "decimal(38,10)",
    "date",
    "timestamp",
    "boolean",
]


def values_of(name: str) -> st.SearchStrategy:
    """Values of a type, its ends included."""
    dtype = parse_type(name)
    if dtype.is_integral:
        low, high = INTEGER_RANGES[name]
        return st.integers(low, high) | st.sampled_from([low, high, 0])
    if name == "float":
        return st.floats(width=32, allow_nan=False) | st.sampled_from([-math.inf, math.inf, 0.0])
    if name == "double":
        return st.floats(allow_nan=False) | st.sampled_from([-math.inf, math.inf, 0.0, 5e-324])
    if dtype.name == "decimal":
        limit = 10**dtype.precision - 1
        units = st.integers(-limit, limit) | st.sampled_from([-limit, limit, 0])
        return units.map(lambda u: Decimal(f"{u}E-{dtype.scale}"))
    if name == "date":
        return st.dates() | st.sampled_from([dt.date.min, dt.date.max])
    if name == "timestamp":
        return st.datetimes() | st.sampled_from([dt.datetime.min, dt.datetime.max])
    return st.booleans()


def literals_near(name: str) -> st.SearchStrategy:
    """Comparison literals: values of the type, of other types and kinds, out of range, between grid points."""
    numbers = (
        st.integers(-(2**70), 2**70)
        | st.floats()
        | st.decimals(-(10**40), 10**40)
        | st.sampled_from([Decimal("NaN"), Decimal("Infinity"), Decimal("-Infinity")])
        | st.fractions(max_denominator=7).map(lambda f: Decimal(f.numerator) / Decimal(f.denominator))
        | st.sampled_from([3.5, -128.5, 2**31, -(2**31) - 1, Decimal("999.995"), 3.5e38, float32(0.1), 0.1])
    )
    times = st.dates() | st.datetimes() | st.datetimes(timezones=st.just(dt.UTC))
    return values_of(name) | numbers | times | st.booleans() | st.text(max_size=2)


def ordinal(value, name: str) -> int:
    """The key codec's ordinal of a value: consecutive values of a type have consecutive ordinals."""
    return int.from_bytes(keys.encode_field(value, name), "big")


def compares(a, b) -> int | None:
    """`compare_values`, with a decimal NaN or infinity as the float one; None for values it doesn't compare."""
    if isinstance(b, Decimal) and not b.is_finite():
        b = math.nan if b.is_nan() else float(b)
    try:
        return compare_values(a, b)
    except Exception:
        return None


@settings(max_examples=1500)
@given(st.sampled_from(TYPES), st.data())
def test_floor_is_the_greatest_value_at_or_below_the_literal(name, data):
    dtype = parse_type(name)
    literal = data.draw(literals_near(name))
    position = domain.floor(literal, dtype)
    sample = data.draw(values_of(name))
    if position is None:
        return
    below, exact = position
    if below is BELOW:
        assert not exact and compares(domain.min_value(dtype), literal) > 0
        assert compares(sample, literal) > 0
        return
    ordinal(below, name)  # a value the type holds
    order = compares(below, literal)
    assert order is not None and order <= 0 and exact == (order == 0)
    following = domain.successor(below, dtype)
    assert following is NO_VALUE or compares(following, literal) > 0
    if compares(sample, literal) <= 0:
        assert compares(sample, below) <= 0


@settings(max_examples=1000)
@given(st.sampled_from(TYPES), st.data())
def test_successor_and_predecessor_are_the_neighbours_in_key_order(name, data):
    dtype = parse_type(name)
    value = data.draw(values_of(name))
    following = domain.successor(value, dtype)
    if following is NO_VALUE:
        assert ordinal(value, name) == ordinal(domain.max_value(dtype), name)
    elif following != following:
        assert value == math.inf  # NaN, above +inf (the NaN bit patterns between them are never stored)
    else:
        gap = ordinal(following, name) - ordinal(value, name)
        assert gap == 1 or (dtype.is_floating and gap == 2 and following == 0)  # -0.0 is stored as 0.0
        back = domain.predecessor(following, dtype)
        assert back == value or (back != back and value != value)
    preceding = domain.predecessor(value, dtype)
    if preceding is NO_VALUE:
        assert ordinal(value, name) == ordinal(domain.min_value(dtype), name)
    else:
        assert 1 <= ordinal(value, name) - ordinal(preceding, name) <= (2 if dtype.is_floating else 1)


@settings(max_examples=1500)
@given(st.sampled_from([*TYPES, "string"]), st.data())
def test_bound_selects_exactly_the_values_that_satisfy_the_comparison(name, data):
    dtype = parse_type(name)
    literal = data.draw(literals_near(name))
    lower, inclusive = data.draw(st.booleans()), data.draw(st.booleans())
    result = domain.bound(literal, dtype, lower, inclusive)
    samples = data.draw(st.lists(values_of(name) if name != "string" else st.text(max_size=3), min_size=1))
    if result is INCOMPARABLE:
        return
    for value in samples:
        order = compares(value, literal)
        if order is None:
            continue
        wanted = order > 0 or (inclusive and order == 0) if lower else order < 0 or (inclusive and order == 0)
        if result is None:
            got = True
        elif result is EMPTY:
            got = False
        else:
            edge, edge_inclusive = result
            if name != "string":
                ordinal(edge, name)  # a value the type holds
            side = compare_values(value, edge)
            got = side > 0 or (edge_inclusive and side == 0) if lower else side < 0 or (edge_inclusive and side == 0)
        assert got == wanted, (value, literal, lower, inclusive, result)


@settings(max_examples=1000)
@given(st.sampled_from(TYPES), st.data())
def test_exact_value_is_the_equal_value_of_the_type(name, data):
    dtype = parse_type(name)
    literal = data.draw(literals_near(name))
    found = domain.exact_value(literal, dtype)
    if found is INCOMPARABLE or (isinstance(literal, (float, Decimal)) and literal != literal):
        return  # NaN is the caller's
    position = domain.floor(literal, dtype)
    if position is None:
        return
    below, exact = position
    if found is None:
        assert not exact
    else:
        assert exact and compares(found, literal) == 0 and ordinal(found, name) == ordinal(below, name)


def test_examples():
    assert domain.floor(3.5, parse_type("int")) == (3, False)
    assert domain.floor(10**30, parse_type("int")) == (2**31 - 1, False)
    assert domain.floor(-(10**30), parse_type("int")) == (BELOW, False)
    assert domain.floor(math.nan, parse_type("bigint")) == (2**63 - 1, False)
    assert domain.floor(dt.datetime(2024, 1, 1, 12), parse_type("date")) == (dt.date(2024, 1, 1), False)
    assert domain.floor(dt.date(2024, 1, 1), parse_type("timestamp")) == (dt.datetime(2024, 1, 1), True)
    assert domain.floor(Decimal("1.001"), parse_type("decimal(5,2)")) == (Decimal("1.00"), False)
    assert domain.floor("x", parse_type("int")) is None
    assert domain.bound(3.5, parse_type("int"), True, False) == (4, True)
    assert domain.bound(10**30, parse_type("int"), False, True) is None
    assert domain.bound(10**30, parse_type("int"), True, True) is EMPTY
    assert domain.bound(math.nan, parse_type("double"), True, True) is EMPTY
    assert domain.bound("a", parse_type("date"), True, True) is INCOMPARABLE
    assert math.isnan(domain.successor(math.inf, parse_type("double")))
    assert domain.string_ceiling("a\ud800b") == ("a\ue000", False)
    assert domain.min_value(parse_type("decimal(38,10)")) == Decimal("-9999999999999999999999999999.9999999999")


# -- intervals --------------------------------------------------------------------------------------------------------

ends = st.none() | st.tuples(st.integers(-4, 4), st.booleans())
POINTS = [Fraction(n, 2) for n in range(-10, 11)]


@st.composite
def intervals(draw) -> Interval:
    lo, hi = draw(ends), draw(ends)
    return Interval(lo[0] if lo else None, lo[1] if lo else True, hi[0] if hi else None, hi[1] if hi else True)


def members(interval: Interval) -> set[Fraction]:
    """Brute force: the sample points in the interval, from the definition of its ends."""
    out = set()
    for p in POINTS:
        above = interval.lo is None or p > interval.lo or (interval.lo_incl and p == interval.lo)
        below = interval.hi is None or p < interval.hi or (interval.hi_incl and p == interval.hi)
        if above and below:
            out.add(p)
    return out


@settings(max_examples=1000)
@given(intervals(), intervals())
def test_intersect_contains_and_is_empty_against_brute_force(a, b):
    both = domain.intersect(a, b)
    assert members(both) == members(a) & members(b)
    assert {p for p in POINTS if both.contains(p)} == members(both)
    assert a.is_empty() == (not members(a))


@settings(max_examples=1000)
@given(st.lists(intervals(), max_size=6))
def test_union_of_sorted_intervals_against_brute_force(items):
    ordered = sorted(items, key=lambda i: (i.lo is not None, i.lo if i.lo is not None else 0, not i.lo_incl))
    merged = domain.union(ordered)
    expected = set().union(*(members(i) for i in items)) if items else set()
    assert set().union(*(members(i) for i in merged)) == expected if merged else not expected
    for first, second in itertools.pairwise(merged):
        assert not members(first) & members(second)
        assert first.hi is not None and second.lo is not None and first.hi <= second.lo


def test_intersect_keeps_the_first_end_on_a_tie_and_takes_a_given_order():
    both = domain.intersect(Interval(1, True), Interval(1.0, False))
    assert both.lo == 1 and type(both.lo) is int and not both.lo_incl
    descending = domain.intersect(Interval(5, True, 1, True), Interval(3, True), lambda a, b: (b > a) - (b < a))
    assert (descending.lo, descending.hi) == (3, 1)  # in descending order 3 is above 5
