"""The scan planner: the seed's conversion table, planning beyond the seed, the plan algebra, and key filters on
raw key bytes checked against `evaluate` (execution over real stores is in test_plan_execute.py)."""

from __future__ import annotations

import bisect
import dataclasses
import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sargable as sg
from sargable import keys
from sargable.errors import BindError, SargableError
from sargable.expr.evaluate import evaluate
from sargable.expr.like import prefix_successor
from sargable.expr.nodes import FALSE, NULL_LITERAL, TRUE, And, Column, Comparison, Literal, Or, col, or_
from sargable.expr.normalize import to_nnf
from sargable.expr.parser import parse
from sargable.plan import (
    ExecutionStats,
    FilterPlan,
    ScanMarker,
    ScanPlan,
    compile_key_filter,
    execute,
    plan_key_ranges,
)
from sargable.types import INT, parse_type
from strategies import PARTITION_KEY_TYPES, pools_of, predicates, rows, schemas, tables, values

P1 = [("p1", "int")]
P2 = [("p1", "int"), ("c1", "int")]
P3 = [("p1", "int"), ("p2", "int"), ("c1", "string")]
HIVE = [("ds", "date"), ("hr", "int"), ("country", "string")]
KEY_TYPES = (*PARTITION_KEY_TYPES, "char(4)", "float", "double")
"""Every partition-key type of the strategies, plus the types they leave out (the planner handles all)."""


def plan(text: str, key_columns, **kwargs) -> FilterPlan:
    return plan_key_ranges(parse(text), key_columns, **kwargs)


def scan(start, end, key_filter=None, is_get=False) -> ScanPlan:
    """A ScanPlan from (values, inclusive) pairs (None: open end)."""
    return ScanPlan(
        None if start is None else ScanMarker(*start),
        None if end is None else ScanMarker(*end),
        key_filter,
        is_get,
    )


def get(*values) -> ScanPlan:
    return ScanPlan(ScanMarker(values, True), ScanMarker(values, True), None, True)


class MemoryStore:
    """An ordered in-memory key-value store with the scan/multi_get interface, for fast checks without a database."""

    def __init__(self, items: dict[bytes, bytes]) -> None:
        self.items = dict(items)
        self.sorted = sorted(items)

    def scan(self, keyspace, start=None, stop=None):
        index = bisect.bisect_left(self.sorted, start or b"")
        while index < len(self.sorted) and (stop is None or self.sorted[index] < stop):
            key = self.sorted[index]
            yield key, self.items[key]
            index += 1

    def scan_pages(self, keyspace, start=None, stop=None):
        rows = list(self.scan(keyspace, start, stop))
        for offset in range(0, len(rows), 3):
            yield rows[offset : offset + 3]

    def multi_get(self, keyspace, wanted):
        return {k: self.items[k] for k in wanted if k in self.items}


def matching(predicate, key_columns, key_rows, *, prefix=b"T", **kwargs) -> tuple[list[tuple], list[tuple], FilterPlan]:
    """(what the plan selects, what `evaluate` selects, the plan) over rows stored in key order."""
    names = [n for n, _ in key_columns]
    types = [parse_type(t) for _, t in key_columns]
    encoded = {prefix + keys.encode([r[n] for n in names], types): tuple(r[n] for n in names) for r in key_rows}
    built = plan_key_ranges(predicate, key_columns, **kwargs)
    got = [encoded[k] for k, _ in execute(built, MemoryStore(dict.fromkeys(encoded, b"")), "main", prefix=prefix)]
    bound = sg.bind(predicate, key_columns)
    return got, [encoded[k] for k in true_keys(bound, names, encoded)], built


def true_keys(bound, names, encoded: dict[bytes, tuple]) -> list[bytes]:
    """The keys, in order, whose values make `bound` TRUE."""
    return [k for k in sorted(encoded) if evaluate(bound, dict(zip(names, encoded[k], strict=True))) is True]


# --- the seed's "Examples of conversion" table, row by row ------------------------------------------------------


def test_seed_range_on_first_column():
    # p1 > 10 and p1 < 20  ->  Scan(X10+, X20)
    assert plan("p1 > 10 and p1 < 20", P2).scans == [scan(((10,), False), ((20,), False))]


def test_seed_equality_single_column_is_get():
    # p1 = 10 (single partition column)  ->  Get(X10)
    assert plan("p1 = 10", P1).scans == [get(10)]


def test_seed_equality_on_all_columns_is_get():
    # "similar case as above, if all partition columns are specified"
    assert plan("p1 = 10 and c1 = 3", P2).scans == [get(10, 3)]
    assert plan("c1 = 3 and 10 = p1", P2).scans == [get(10, 3)]


def test_seed_equality_multiple_columns_is_prefix_scan():
    # p1 = 10 (multiple partition columns)  ->  Scan(X10, X10+)
    built = plan("p1 = 10", P2)
    assert built.scans == [scan(((10,), True), ((10,), True))]
    assert not built.scans[0].is_get and str(built) == "Scan [p1=10 .. p1=10]"


def test_seed_or_of_equalities_is_two_gets():
    # p1 = 9 or p1 = 10  ->  merge(get(X9), get(X10))
    assert plan("p1 = 9 or p1 = 10", P1).scans == [get(9), get(10)]
    assert str(plan("p1 = 10 or p1 = 9", P1)) == "Get p1=9\nGet p1=10"


def test_seed_overlapping_or_merges_into_not_null_scan():
    # p1 > 10 or p1 < 20  ->  merge(scan(X10, X+), scan(X, X20)): one scan of every non-NULL p1
    built = plan("p1 > 10 or p1 < 20", P2)
    assert built.scans == [scan(((None,), False), None)]
    assert str(built) == "Scan (p1=NULL .. +inf)"


def test_seed_condition_on_other_column_is_filtered_full_scan():
    # condition1 on columns other than the first  ->  Scan(X, X+).setFilter(condition1)
    built = plan("c1 = 5", P2)
    assert built.is_full_scan
    assert built.scans[0].key_filter == sg.bind(parse("c1 = 5"), P2)
    assert str(built) == "Scan [-inf .. +inf) filter: c1 = 5"


def test_seed_lower_bound_and_condition():
    # p1 > 10 and condition1  ->  scan(X10, X+).setFilter(condition1)
    built = plan("p1 > 10 and c1 = 5", P2)
    assert built.scans == [scan(((10,), False), None, sg.bind(parse("c1 = 5"), P2))]


def test_seed_upper_bound_and_condition():
    # p1 < 20 and condition1  ->  Scan(X, X20).setFilter(condition1): the scan starts after p1's NULLs
    built = plan("p1 < 20 and c1 = 5", P2)
    assert built.scans == [scan(((None,), False), ((20,), False), sg.bind(parse("c1 = 5"), P2))]


def test_seed_tightest_bounds_and_no_filter():
    # p1 > 10 and p1 > 20 and p1 < 30 and p1 < 40  ->  Scan(X20+, X30): exclusive both ends, nothing left to filter
    built = plan("p1 > 10 and p1 > 20 and p1 < 30 and p1 < 40", P2)
    assert built.scans == [scan(((20,), False), ((30,), False))]
    assert str(built) == "Scan (p1=20 .. p1=30)"


def test_seed_and_over_or_distributes():
    # p1 > 10 and (p1 > 20 or c1 = 5)  =>  merge(Scan(X20+, X+), Scan(X10+, X+).setFilter(c1 = 5)).
    # Our union splits the overlap: (10, 20] needs the filter, above 20 every key matches.
    built = plan("p1 > 10 and (p1 > 20 or c1 = 5)", P2)
    c1_is_5 = sg.bind(parse("c1 = 5"), P2)
    assert built.scans == [scan(((10,), False), ((20,), True), c1_is_5), scan(((20,), False), None)]
    assert str(built) == "Scan (p1=10 .. p1=20] filter: c1 = 5\nScan (p1=20 .. +inf)"


def test_seed_or_with_a_full_scan_branch_is_one_filtered_full_scan():
    # special case: condition1 or condition2 where one needs a full scan  ->  Scan(X).filter(combined)
    built = plan("p1 = 5 or c1 = 3", P2)
    assert built.is_full_scan
    assert built.scans[0].key_filter == to_nnf(sg.bind(parse("p1 = 5 or c1 = 3"), P2))
    table = [{"p1": a, "c1": b} for a in (4, 5, None) for b in (3, 4)]
    got, expected, _ = matching(parse("p1 = 5 or c1 = 3"), P2, table)
    assert got == expected and len(got) == 4


def test_seed_general_or_merges_results():
    # general case: condition1 or condition2  ->  merge(getResult(condition1), getResult(condition2))
    built = plan("(p1 = 5 and c1 = 3) or p1 > 20", P2)
    assert built.scans == [get(5, 3), scan(((20,), False), None)]


def test_seed_and_distributes_over_or():
    # c1 and (c2 or c3)  =  (c1 and c2) or (c1 and c3)
    assert plan("p1 >= 10 and (p1 = 12 or p1 = 3 or p1 = 15)", P1).scans == [get(12), get(15)]


def test_seed_or_and_or_is_cross_product():
    # (c1 or c2) and (c3 or c4)  =  (c1 and c3) or (c2 and c3) or (c1 and c4) or (c2 and c4)
    built = plan("(p1 = 1 or p1 = 2) and (c1 = 3 or c1 = 4)", P2)
    assert built.scans == [get(1, 3), get(1, 4), get(2, 3), get(2, 4)]


def test_hive_hbase_shared_marker_bug():
    # The Hive HBase store mutated a shared marker: p1>=5 and (p1>20 or p1<3) must plan as p1>20 alone.
    assert plan("p1>=5 and (p1>20 or p1<3)", P2).scans == plan("p1 > 20", P2).scans
    assert plan("(p1>20 or p1<3) and p1>=5", P1).scans == [scan(((20,), False), None)]


# --- beyond the seed --------------------------------------------------------------------------------------------


def test_issue_example_text():
    built = plan("ds = '2024-01-01' and hr >= 3 and country like 'U%'", HIVE)
    assert str(built) == "Scan [ds=2024-01-01/hr=3 .. ds=2024-01-01/hr=+inf) filter: country LIKE 'U%'"
    assert built.scans[0].start == ScanMarker((dt.date(2024, 1, 1), 3), True)
    assert built.scans[0].end == ScanMarker((dt.date(2024, 1, 1),), True)


def test_leading_equality_extends_into_next_column():
    built = plan("p1 = 1 and p2 > 5", P3)
    assert built.scans == [scan(((1, 5), False), ((1,), True))]
    assert str(built) == "Scan (p1=1/p2=5 .. p1=1/p2=+inf)"
    assert plan("p1 = 1 and p2 = 2 and c1 >= 'x'", P3).scans == [scan(((1, 2, "x"), True), ((1, 2), True))]
    assert plan("p2 < 7 and p1 = 1", P3).scans == [scan(((1, None), False), ((1, 7), False))]


def test_in_becomes_gets_or_ranges():
    assert plan("p1 in (3, 1, 2, 1)", P1).scans == [get(1), get(2), get(3)]
    assert plan("p1 in (1, 2) and c1 in (3, 4)", P2).scans == [get(1, 3), get(1, 4), get(2, 3), get(2, 4)]
    assert plan("p1 in (1, 5)", P2).scans == [scan(((1,), True), ((1,), True)), scan(((5,), True), ((5,), True))]
    # touching ranges merge: 1 and 2 are neighbours in an int key
    assert plan("p1 in (1, 2)", P2).scans == [scan(((1,), True), ((2,), True))]
    assert plan("p1 in (1, 2) and p2 in (3, 4)", P3).scans == [
        scan(((1, 3), True), ((1, 4), True)),
        scan(((2, 3), True), ((2, 4), True)),
    ]
    assert plan("p1 in (1, null)", P1).scans == [get(1)]
    assert plan("p1 in (null)", P1).scans == []


def test_not_in_and_not_equal_are_ranges_without_nulls():
    assert plan("p1 != 3", P2).scans == [scan(((None,), False), ((3,), False)), scan(((3,), False), None)]
    assert plan("not (p1 = 3)", P2).scans == plan("p1 != 3", P2).scans
    assert plan("p1 not in (5, 1)", P2).scans == [
        scan(((None,), False), ((1,), False)),
        scan(((1,), False), ((5,), False)),
        scan(((5,), False), None),
    ]
    assert plan("p1 not in (1, null)", P2).scans == []


def test_between():
    assert plan("p1 between 3 and 7", P2).scans == [scan(((3,), True), ((7,), True))]
    assert plan("p1 between 7 and 3", P2).scans == []
    below, above = scan(((None,), False), ((3,), False)), scan(((7,), False), None)
    assert plan("p1 not between 3 and 7", P2).scans == [below, above]
    assert plan("p1 between null and 7", P2).scans == []
    assert plan("p1 not between null and 7", P2).scans == [scan(((7,), False), None)]


def test_is_null_and_is_not_null():
    assert plan("p1 is null", P2).scans == [scan(((None,), True), ((None,), True))]
    assert plan("p1 is not null", P2).scans == [scan(((None,), False), None)]
    assert plan("p1 is null and c1 = 3", P2).scans == [get(None, 3)]
    assert plan("p1 <=> null", P1).scans == [get(None)]
    assert plan("p1 < 3 or p1 is null", P2).scans == [scan(((None,), True), ((3,), False))]


def test_negated_null_safe_equality():
    assert plan("not (p1 <=> null)", P2).scans == plan("p1 is not null", P2).scans
    assert plan("not (3 <=> p1)", P2).scans == [scan(None, ((3,), False)), scan(((3,), False), None)]
    assert plan("not (p1 <=> 3.5)", P2).scans == [ScanPlan(None, None)]


def test_literal_on_the_left_is_flipped():
    assert plan("10 < p1", P2).scans == plan("p1 > 10", P2).scans
    assert plan("20 >= p1 and 10 <= p1", P2).scans == [scan(((10,), True), ((20,), True))]


def test_not_is_pushed_down():
    assert plan("not (p1 <= 10 or p1 >= 20)", P2).scans == [scan(((10,), False), ((20,), False))]
    assert plan("not not (p1 = 4)", P1).scans == [get(4)]


def test_like_prefix_is_a_range():
    keys_ = [("s", "string"), ("n", "int")]
    assert plan("s like 'abc%'", keys_).scans == [scan((("abc",), True), (("abd",), False))]
    like = sg.bind(parse("s like 'abc%d'"), keys_)
    assert plan("s like 'abc%d'", keys_).scans == [scan((("abc",), True), (("abd",), False), like)]
    assert plan("s like 'abc'", keys_).scans == [scan((("abc",), True), (("abc",), True))]
    assert plan("s like '%'", keys_).scans == [scan(((None,), False), None)]
    assert plan("s like '%b'", keys_).scans[0].key_filter is not None
    assert plan("s like 'a!%%' escape '!'", keys_).scans == [scan((("a%",), True), (("a&",), False))]


@pytest.mark.parametrize(
    ("prefix", "end"),
    [
        ("a\U0010ffff", "b"),
        ("\U0010ffff\U0010ffff", None),
        ("a\ud7ff", "a\ue000"),
        ("a\x00", "a\x01"),
        ("ab\U0010fffe", "ab\U0010ffff"),
    ],
)
def test_like_prefix_successor_at_code_point_edges(prefix, end):
    keys_ = [("s", "string"), ("n", "int")]
    pattern = prefix + "%"
    built = plan_key_ranges(Column("s").like(pattern), keys_)
    expected_end = None if end is None else ScanMarker((end,), False)
    assert built.scans == [ScanPlan(ScanMarker((prefix,), True), expected_end)]
    assert prefix_successor(prefix) == end
    values = [prefix, prefix + "\U0010ffff", prefix + "z", end or "\U0010ffff" * 3, prefix[:-1], "a", ""]
    got, expected, _ = matching(Column("s").like(pattern), keys_, [{"s": v, "n": 1} for v in values])
    assert got == expected


def test_literals_outside_the_domain_are_placed_exactly():
    assert plan("p1 < 3.5", P2).scans == [scan(((None,), False), ((3,), True))]
    assert plan("p1 > 3.5", P2).scans == [scan(((3,), False), None)]
    assert plan("p1 = 3.5", P2).scans == []
    assert plan("p1 != 3.5", P2).scans == [scan(((None,), False), None)]
    assert plan("p1 < 100000000000000000000", P2).scans == [scan(((None,), False), ((2**31 - 1,), True))]
    assert plan("p1 > 100000000000000000000", P2).scans == []
    assert plan("p1 >= -100000000000000000000", P2).scans == [scan(((-(2**31),), True), None)]
    assert plan("t > 200", [("t", "tinyint")]).scans == []
    assert plan("d <= 1.234", [("d", "decimal(5,2)"), ("x", "int")]).scans == [
        scan(((None,), False), ((Decimal("1.23"),), True))
    ]


def test_impossible_and_trivial_predicates():
    assert plan("p1 > 5 and p1 < 3", P2).scans == []
    assert plan("p1 > 4 and p1 < 5", P2).scans == []
    assert plan("p1 = 1 and p1 = 2", P1).scans == []
    assert plan_key_ranges(FALSE, P2).scans == [] and plan_key_ranges(NULL_LITERAL, P2).scans == []
    assert plan_key_ranges(TRUE, P2).scans == [ScanPlan(None, None)]
    assert plan("1 = 1", P2).scans == [ScanPlan(None, None)] and plan("1 = 2 or p1 = 3", P1).scans == [get(3)]
    assert str(plan("p1 > 5 and p1 < 3", P2)) == "Empty (no key can match)"


def test_range_that_is_a_single_value_becomes_a_point():
    assert plan("p1 > 4 and p1 < 6", P1).scans == [get(5)]
    assert plan("p1 > 4 and p1 < 6 and p2 = 1", P3).scans == [scan(((5, 1), True), ((5, 1), True))]
    assert plan("b and not b", [("b", "boolean")]).scans == []
    assert plan("b", [("b", "boolean")]).scans == [get(True)]
    assert plan("b < true and b is not null", [("b", "boolean")]).scans == [get(False)]


def test_key_filter_keeps_only_what_the_range_does_not_capture():
    built = plan("p1 = 1 and p2 > 5 and c1 like 'a%b'", P3)
    assert built.scans[0].key_filter == sg.bind(parse("c1 like 'a%b'"), P3)
    built = plan("p1 > 1 and p2 > 5 and p2 < 9 and c1 = 'x'", P3)
    assert built.scans[0].start == ScanMarker((1,), False)
    filtered = built.scans[0].key_filter
    assert isinstance(filtered, And) and len(filtered.children()) == 3
    assert plan("p1 > 1 and lower(c1) = 'x'", P3).scans[0].key_filter == sg.bind(parse("lower(c1) = 'x'"), P3)


def test_secondary_index_key_order():
    # The metastore plans with index orders too: nothing assumes the first key column is special beyond being first.
    index = [("hr", "int"), ("ds", "date"), ("country", "string")]
    built = plan("ds > '2024-01-01' and hr = 3", index)
    assert built.scans == [scan(((3, dt.date(2024, 1, 1)), False), ((3,), True))]
    assert plan("ds = '2024-01-01'", index).is_full_scan


def test_max_scans_caps_unions_and_cross_products():
    values = ", ".join(str(i) for i in range(0, 4000, 2))
    built = plan(f"p1 in ({values})", P1, max_scans=1000)
    assert built.scans == [scan(((0,), True), ((3998,), True), sg.bind(parse(f"p1 in ({values})"), P1))]
    wide = or_(*(col("p1").eq(i) for i in range(0, 4000, 2)))
    capped = plan_key_ranges(wide, P1, max_scans=10)
    assert len(capped.scans) == 1 and capped.scans[0].key_filter is not None
    assert len(plan_key_ranges(wide, P1, max_scans=5000).scans) == 2000
    crossed = plan("p1 in (1,2,3,4,5,6) and c1 in (1,2,3,4,5,6)", P2, max_scans=10)
    assert 1 <= len(crossed.scans) <= 10
    got, expected, _ = matching(
        parse("p1 in (1,2,3,4,5,6) and c1 in (1,2,3,4,5,6)"),
        P2,
        [{"p1": a, "c1": b} for a in range(8) for b in (1, 6, 7, None)],
        max_scans=10,
    )
    assert got == expected and len(got) == 12


def test_deep_and_wide_predicates_plan_without_recursion():
    deep = col("p1").eq(0)
    for i in range(1, 10_000):
        deep = (col("p1").eq(i) | deep) if i % 2 else ((col("c1") >= 0) & deep)
    bound = sg.bind(deep, P2)
    built = plan_key_ranges(bound, P2)
    assert built.scans and len(built.scans) <= 1000
    encoded = {keys.encode([a, b], [INT, INT]): (a, b) for a in (0, 1, 9_998, 9_999, 10_000) for b in (-1, 0)}
    got = [k for k, _ in execute(built, MemoryStore(dict.fromkeys(encoded, b"")), "main")]
    assert got == true_keys(bound, ["p1", "c1"], encoded) and len(got) == 4
    wide = And(tuple(col("c1").ne(i) for i in range(10_000)))
    assert plan_key_ranges(wide & (col("p1") > 5), P2).scans[0].start == ScanMarker((5,), False)


def test_unbound_and_bound_expressions_give_the_same_plan():
    bound = sg.bind(parse("P1 > 3 and c1 = 4"), P2)
    assert plan_key_ranges(bound, P2) == plan("P1 > 3 and c1 = 4", P2)
    assert plan_key_ranges(Comparison(">", Column("p1", INT), Literal(3, INT)), P2).scans == [scan(((3,), False), None)]


def test_errors_are_sargable_errors():
    with pytest.raises(BindError, match="unknown column 'x'"):
        plan("x = 1", P2)
    with pytest.raises(BindError, match="key_columns"):
        plan_key_ranges(parse("p1 = 1"), [])
    with pytest.raises(BindError, match="appears twice"):
        plan_key_ranges(parse("p1 = 1"), [("p1", "int"), ("P1", "int")])
    with pytest.raises(SargableError, match="unknown type"):
        plan_key_ranges(parse("p1 = 1"), [("p1", "integr")])
    with pytest.raises(BindError, match="expression"):
        plan_key_ranges("p1 = 1", P1)  # type: ignore[arg-type]
    with pytest.raises(SargableError, match="max_scans"):
        plan("p1 = 1", P1, max_scans=0)
    with pytest.raises(BindError, match="bound as"):
        plan_key_ranges(Comparison("=", Column("p1", parse_type("string")), Literal("1", parse_type("string"))), P1)
    with pytest.raises(SargableError):
        ScanPlan(ScanMarker((1,), True), ScanMarker((2,), True), None, True)
    with pytest.raises(SargableError):
        ScanMarker([1], True)  # type: ignore[arg-type]


# --- the plan algebra -------------------------------------------------------------------------------------------


def test_markers_and_plans_are_immutable():
    built = plan("p1 > 5", P2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.scans[0].start.inclusive = True  # type: ignore[misc, union-attr]
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.scans[0].key_filter = None  # type: ignore[misc]


def test_algebra_and_intersects_with_right_inclusivity():
    ge5, gt20, lt3 = plan("p1 >= 5", P2), plan("p1 > 20", P2), plan("p1 < 3", P2)
    assert ge5.and_(gt20.or_(lt3)) == gt20
    assert gt20.or_(lt3).and_(ge5) == gt20
    assert ge5.and_(plan("p1 <= 5", P2)).scans == [scan(((5,), True), ((5,), True))]
    assert ge5.and_(plan("p1 < 5", P2)).scans == []
    assert plan("p1 > 5", P2).and_(plan("p1 >= 5", P2)) == plan("p1 > 5", P2)
    assert plan("p1 <= 9", P2).and_(plan("p1 < 9", P2)) == plan("p1 < 9", P2)


def test_algebra_conjoins_filters_and_keeps_gets():
    filtered = plan("p1 > 1 and c1 = 2", P2).and_(plan("p1 < 9 and c1 > 0", P2))
    assert filtered.scans[0].start == ScanMarker((1,), False) and filtered.scans[0].end == ScanMarker((9,), False)
    assert filtered.scans[0].key_filter is not None
    assert plan("p1 = 3", P1).and_(plan("p1 > 1", P1)).scans == [get(3)]
    assert plan("p1 = 3 or p1 = 4", P1).or_(plan("p1 = 4", P1)).scans == [get(3), get(4)]


def test_algebra_or_merges_overlapping_and_touching_ranges():
    merged = plan("p1 > 1 and p1 < 5", P2).or_(plan("p1 >= 5 and p1 < 9", P2))
    assert merged.scans == [scan(((1,), False), ((9,), False))]
    merged = plan("p1 > 1 and p1 < 5", P2).or_(plan("p1 > 7 and p1 < 12", P2)).or_(plan("p1 > 2 and p1 < 8", P2))
    assert merged.scans == [scan(((1,), False), ((12,), False))]
    assert plan("p1 = 5", P1).or_(plan("p1 > 5", P1)).scans == [scan(((5,), True), None)]


def test_algebra_needs_key_columns():
    bare = FilterPlan([ScanPlan(None, None)])
    with pytest.raises(SargableError, match="key_columns"):
        bare.or_(bare)
    with pytest.raises(SargableError, match="different keys"):
        plan("p1 = 1", P1).or_(plan("p1 = 1", P2))
    assert bare.and_(plan("p1 = 1", P1)).scans == [get(1)]


# --- properties: planning against evaluate ----------------------------------------------------------------------


@settings(max_examples=150)
@given(st.data())
def test_plan_selects_exactly_what_evaluate_selects(data):
    schema = data.draw(schemas(types=KEY_TYPES, max_size=3))
    table = data.draw(tables(schema, max_size=25))
    predicate = data.draw(predicates(schema, pools=pools_of(schema, table), max_leaves=6))
    max_scans = data.draw(st.sampled_from([1, 2, 5, 1000]))
    got, expected, built = matching(predicate, schema, table, max_scans=max_scans)
    assert got == expected, str(built)
    assert len(built.scans) <= max_scans


@settings(max_examples=100)
@given(st.data())
def test_plan_algebra_matches_or_and_and(data):
    schema = data.draw(schemas(types=KEY_TYPES, max_size=3))
    table = data.draw(tables(schema, max_size=20))
    pools = pools_of(schema, table)
    a = data.draw(predicates(schema, pools=pools, max_leaves=3))
    b = data.draw(predicates(schema, pools=pools, max_leaves=3))
    names = [n for n, _ in schema]
    types = [parse_type(t) for _, t in schema]
    encoded = {keys.encode([r[n] for n in names], types): tuple(r[n] for n in names) for r in table}
    store = MemoryStore(dict.fromkeys(encoded, b""))
    pa, pb = plan_key_ranges(a, schema), plan_key_ranges(b, schema)
    for combined, truth in ((pa.or_(pb), Or((a, b))), (pa.and_(pb), And((a, b)))):
        got = [encoded[k] for k, _ in execute(combined, store, "main")]
        want = [encoded[k] for k in true_keys(truth, names, encoded)]
        assert got == want, str(combined)


@settings(max_examples=120)
@given(st.data())
def test_key_filter_on_bytes_agrees_with_evaluate(data):
    schema = data.draw(schemas(types=KEY_TYPES, max_size=4))
    table = data.draw(tables(schema, min_size=1, max_size=10))
    predicate = to_nnf(data.draw(predicates(schema, pools=pools_of(schema, table), max_leaves=6)))
    prefix = data.draw(st.sampled_from([b"", b"\x07", b"\xff\xff"]))
    test = compile_key_filter(predicate, schema, offset=len(prefix))
    types = [parse_type(t) for _, t in schema]
    for row in table:
        key = prefix + keys.encode([row[n] for n, _ in schema], types)
        assert test(key) == (evaluate(predicate, row) is True), (str(predicate), row)


@settings(max_examples=100)
@given(st.data())
def test_leading_column_predicates_examine_only_returned_keys(data):
    schema = data.draw(schemas(types=KEY_TYPES, min_size=1, max_size=3))
    table = data.draw(tables(schema, max_size=25))
    lead = schema[:1]
    exact = frozenset({"compare", "in", "between", "is_null", "bool_column", "constant"})
    predicate = data.draw(predicates(lead, kinds=exact, pools=pools_of(lead, table), max_leaves=4, bound=False))
    names = [n for n, _ in schema]
    types = [parse_type(t) for _, t in schema]
    encoded = {keys.encode([r[n] for n in names], types) for r in table}
    built = plan_key_ranges(predicate, schema)
    assert all(s.key_filter is None for s in built.scans), str(built)
    stats = ExecutionStats()
    got = list(execute(built, MemoryStore(dict.fromkeys(encoded, b"")), "main", stats=stats))
    assert stats.keys_examined == stats.keys_returned == len(got)


@settings(max_examples=50)
@given(st.data())
def test_gets_are_exact_rows(data):
    schema = data.draw(schemas(types=PARTITION_KEY_TYPES, min_size=1, max_size=3))
    row = data.draw(rows(schema, nulls=True))
    predicate = sg.and_(*(Column(n).is_null() if row[n] is None else Column(n).eq(row[n]) for n, _ in schema))
    built = plan_key_ranges(predicate, schema)
    assert [s.is_get for s in built.scans] == [True]
    assert built.scans[0].start.values == tuple(row[n] for n, _ in schema)  # type: ignore[union-attr]


# --- wide ORs of points: set lookups instead of one test per branch ---------------------------------------------


@st.composite
def or_of_points(draw):
    """(schema, table, predicate): an OR of point branches (column = value / IS NULL on some or all key columns,
    values from the table or anywhere), repeated branches, IN lists and a few arbitrary branches."""
    schema = draw(schemas(types=KEY_TYPES, max_size=3))
    table = draw(tables(schema, min_size=1, max_size=20))
    names = [n for n, _ in schema]
    branches = []
    for _ in range(draw(st.integers(2, 30))):
        kind = draw(st.sampled_from(["point", "point", "point", "repeat", "in", "other"]))
        if kind == "repeat" and branches:
            branches.append(draw(st.sampled_from(branches)))
        elif kind == "in":
            name, dtype = draw(st.sampled_from(schema))
            members = draw(st.lists(st.sampled_from([r[name] for r in table]) | values(dtype), min_size=1, max_size=4))
            branches.append(Column(name).isin(*members))
        elif kind == "other":
            branches.append(draw(predicates(schema, pools=pools_of(schema, table), max_leaves=2, bound=False)))
        else:
            fixed = draw(st.lists(st.sampled_from(names), min_size=1, unique=True)) if draw(st.booleans()) else names
            row = draw(st.sampled_from(table) | rows(schema))
            leaves = [Column(n).is_null() if row[n] is None else Column(n).eq(row[n]) for n in fixed]
            branches.append(sg.and_(*leaves))
    return schema, table, sg.bind(Or(tuple(branches)), schema)


@settings(max_examples=150)
@given(or_of_points(), st.sampled_from([b"", b"\xff"]), st.sampled_from([1, 2, 1000]))
def test_wide_or_of_points_agrees_with_evaluate(case, prefix, max_scans):
    schema, table, predicate = case
    test = compile_key_filter(to_nnf(predicate), schema, offset=len(prefix))
    types = [parse_type(t) for _, t in schema]
    for row in table:
        key = prefix + keys.encode([row[n] for n, _ in schema], types)
        assert test(key) == (evaluate(predicate, row) is True), (str(predicate), row)
    got, expected, built = matching(predicate, schema, table, prefix=prefix, max_scans=max_scans)
    assert got == expected, str(built)
