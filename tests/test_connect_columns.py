"""Spark Connect Columns -> sargable expressions, built on the client (no Connect server needed).

A Connect Column carries its expression tree in the client process, so these tests build Columns with
`pyspark.sql.connect.functions` next to the shared classic session. Oracles: the filter parser's reading of the
same filter as text (both bound to one schema), and the classic translator's reading of the same Column built
with classic `pyspark.sql.functions`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sargable as sg
from sargable.errors import SargableError
from sargable.expr import bind, columns_of, parse, walk
from sargable.spark.translate import Untranslatable, from_column, split_column

pytest.importorskip("pyspark")
for _module in ("grpc", "google.protobuf", "pandas", "pyarrow"):
    pytest.importorskip(_module, reason="Spark Connect needs pip install 'sargable[connect]'")

from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.connect import expressions as E  # noqa: E402
from pyspark.sql.connect import functions as CF  # noqa: E402
from pyspark.sql.connect.column import Column as ConnectColumn  # noqa: E402

pytest_plugins = ["conftest_spark"]

SCHEMA = [("a", "int"), ("s", "string"), ("d", "date"), ("t", "timestamp"), ("p", "decimal(10,2)"), ("x", "double")]
a, s, d = sg.col("a"), sg.col("s"), sg.col("d")

CASES: list[tuple[Callable[[Any], Any], sg.Expr]] = [
    (lambda F: F.col("a") > 5, a > 5),
    (
        lambda F: (F.col("d") >= dt.date(2024, 1, 1)) & F.col("s").like("x%"),
        sg.and_(d >= dt.date(2024, 1, 1), s.like("x%", "\\")),
    ),
    (lambda F: F.col("a").isin(1, 2) | F.col("s").isNull(), sg.or_(a.isin(1, 2), s.is_null())),
    (lambda F: F.col("a") != 3, sg.expr.Not(a.eq(3))),
    (lambda F: ~(F.col("s") == "it's"), sg.expr.Not(s.eq("it's"))),
    (lambda F: F.col("a").between(1, 3), sg.and_(a >= 1, a <= 3)),
    (lambda F: F.col("a").eqNullSafe(None), a.null_safe_eq(None)),
    (lambda F: F.col("s").startswith("a_b"), s.like("a\\_b%", "\\")),
    (lambda F: F.col("s").endswith("z"), s.like("%z", "\\")),
    (lambda F: F.col("s").contains("%"), s.like("%\\%%", "\\")),
    (lambda F: F.col("s").rlike("^a.*"), sg.expr.Regex(s, "^a.*")),
    (lambda F: F.col("a").isNotNull(), a.is_not_null()),
    (lambda F: F.lit(3) < F.col("a"), sg.expr.Comparison("<", sg.lit(3), a)),
    (lambda F: F.col("t") == dt.datetime(2024, 1, 2, 3, 4, 5), sg.col("t").eq(dt.datetime(2024, 1, 2, 3, 4, 5))),
    (lambda F: F.col("p") == Decimal("1.50"), sg.col("p").eq(Decimal("1.50"))),
    (lambda F: F.expr("a > 5 and s = 'x'"), sg.and_(a > 5, s.eq("x"))),
    (lambda F: F.col("`a.b`") == 1, sg.col("a.b").eq(1)),
    (lambda F: F.col("`a``b`").isNull(), sg.col("a`b").is_null()),
    (lambda F: F.col("x") > F.lit(None), sg.expr.Comparison(">", sg.col("x"), sg.lit(None))),
    (lambda F: F.col("x") <= 1.5, sg.col("x") <= 1.5),
    (lambda F: F.col("b") == True, sg.col("b").eq(True)),  # noqa: E712
]

UNTRANSLATABLE: list[Callable[[Any], Any]] = [
    lambda F: F.upper("s") == "X",
    lambda F: F.col("a") + 1 > F.col("b"),
    lambda F: F.col("s").cast("int") == 1,
    lambda F: F.col("a").isin(F.col("b"), 1),
    lambda F: F.col("s").startswith(F.col("s")),
    lambda F: F.col("a.b") == 1,
    lambda F: F.col("c") == F.lit(b"x"),
    lambda F: F.call_function("upper", F.col("s")) == "X",
    lambda F: F.col("s").alias("z") == "x",
]


def test_connect_columns_are_connect(spark: object) -> None:
    assert isinstance(CF.col("a") > 5, ConnectColumn)
    assert not isinstance(F.col("a") > 5, ConnectColumn)


@pytest.mark.parametrize("index", range(len(CASES)))
def test_connect_column_translates_like_classic(spark: object, index: int) -> None:
    build, expected = CASES[index]
    assert from_column(build(CF)) == expected
    assert from_column(build(F)) == expected


@pytest.mark.parametrize("index", range(len(UNTRANSLATABLE)))
def test_untranslatable_connect_columns(spark: object, index: int) -> None:
    build = UNTRANSLATABLE[index]
    for functions in (CF, F):
        with pytest.raises(Untranslatable):
            from_column(build(functions))
        expr, leftover = split_column(build(functions))
        assert expr is None and len(leftover) == 1


def test_split_connect_column_hands_back_connect_columns() -> None:
    column = (CF.col("a") > 1) & (CF.upper("s") == "X") & ((CF.col("a") + 1 > CF.col("b")) & CF.col("s").isNotNull())
    expr, leftover = split_column(column)
    assert expr == sg.and_(a > 1, s.is_not_null())
    assert [type(c) for c in leftover] == [ConnectColumn, ConnectColumn]
    assert "upper" in str(leftover[0]) and "+" in str(leftover[1])
    assert leftover[0]._expr is column._expr._args[0]._args[1]


def test_deep_connect_column_translates_without_recursion() -> None:
    """10,000 levels, built from the client's expression classes (Column operators ask the classic JVM each time)."""
    depth = 10_000

    def equals(name: str, value: Any) -> Any:
        return E.UnresolvedFunction("==", [E.ColumnReference(name), E.LiteralExpression._from_value(value)])

    node = equals("a", 0)
    for i in range(1, depth):
        if i % 2:
            node = E.UnresolvedFunction("or", [equals("a", i), node])
        else:
            node = E.UnresolvedFunction("and", [node, E.UnresolvedFunction("not", [equals("s", str(i))])])
    column = ConnectColumn(node)
    expr = from_column(column)
    assert len(columns_of(expr)) == 2
    count = sum(1 for part in walk(expr) if isinstance(part, sg.expr.Comparison))
    assert count == depth
    translated, leftover = split_column(
        ConnectColumn(E.UnresolvedFunction("and", [node, (CF.upper("s") == "X")._expr]))
    )
    assert translated == expr and len(leftover) == 1


def test_not_a_column() -> None:
    with pytest.raises(Untranslatable):
        from_column("a > 5")
    assert issubclass(Untranslatable, SargableError)


# Random filters, built three ways: filter text, a Connect Column, a classic Column.

_DAYS = st.dates(dt.date(1900, 1, 1), dt.date(2200, 12, 31))
_TIMES = st.datetimes(dt.datetime(1971, 1, 1), dt.datetime(2200, 12, 31))
_TEXT = st.text(alphabet="ab_%'\\x", max_size=4)
_OPS = ["==", "<=>", "<", "<=", ">", ">=", "!="]
_TEXT_OPS = {"==": "=", "!=": "<>"}


def _sql(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    return str(value)


def _compare(column: str, op: str, value: Any) -> tuple[str, Callable[[Any], Any]]:
    text_op = _TEXT_OPS.get(op, op)
    text = f"NOT ({column} = {_sql(value)})" if op == "!=" else f"{column} {text_op} {_sql(value)}"
    operators = {
        "==": lambda c: c == value,
        "<=>": lambda c: c.eqNullSafe(value),
        "<": lambda c: c < value,
        "<=": lambda c: c <= value,
        ">": lambda c: c > value,
        ">=": lambda c: c >= value,
        "!=": lambda c: c != value,
    }
    return text, lambda F: operators[op](F.col(column))


def _like_text(pattern: str) -> str:
    return "".join("\\" + ch if ch in "%_\\" else ch for ch in pattern)


@st.composite
def leaves(draw: st.DrawFn) -> tuple[str, Callable[[Any], Any]]:
    kind = draw(st.sampled_from(["int", "date", "timestamp", "decimal", "double", "in", "null", "like", "prefix"]))
    op = draw(st.sampled_from(_OPS))
    if kind == "int":
        return _compare("a", op, draw(st.integers(-(2**31), 2**31 - 1)))
    if kind == "date":
        return _compare("d", op, draw(_DAYS))
    if kind == "timestamp":
        return _compare("t", op, draw(_TIMES))
    if kind == "decimal":
        return _compare("p", op, Decimal(draw(st.integers(-(10**9), 10**9))).scaleb(-2))
    if kind == "double":
        return _compare("x", op, draw(st.floats(-1e6, 1e6, allow_nan=False).map(lambda f: round(f, 3))))
    if kind == "in":
        values = draw(st.lists(st.integers(-100, 100), min_size=1, max_size=4))
        return f"a IN ({', '.join(map(str, values))})", lambda F: F.col("a").isin(*values)
    if kind == "null":
        if draw(st.booleans()):
            return "s IS NULL", lambda F: F.col("s").isNull()
        return "s IS NOT NULL", lambda F: F.col("s").isNotNull()
    text = draw(_TEXT)
    if kind == "like":
        pattern = text.replace("\\", "\\\\") + "%"
        return f"s LIKE {_sql(pattern)} ESCAPE '\\'", lambda F: F.col("s").like(pattern)
    method = draw(st.sampled_from(["startswith", "endswith", "contains"]))
    pattern = {"startswith": "{}%", "endswith": "%{}", "contains": "%{}%"}[method].format(_like_text(text))
    return f"s LIKE {_sql(pattern)} ESCAPE '\\'", lambda F: getattr(F.col("s"), method)(text)


def _combine(children: st.SearchStrategy) -> st.SearchStrategy:
    def both(op: str) -> Callable[[Any], tuple[str, Callable[[Any], Any]]]:
        def build(pair: Any) -> tuple[str, Callable[[Any], Any]]:
            (left_text, left), (right_text, right) = pair
            if op == "and":
                return f"({left_text}) AND ({right_text})", lambda F: left(F) & right(F)
            return f"({left_text}) OR ({right_text})", lambda F: left(F) | right(F)

        return build

    pairs = st.tuples(children, children)
    negated = children.map(lambda child: (f"NOT ({child[0]})", lambda F: ~child[1](F)))
    return st.one_of(pairs.map(both("and")), pairs.map(both("or")), negated)


filters = st.recursive(leaves(), _combine, max_leaves=8)


@settings(max_examples=100)
@given(filters)
def test_random_connect_filters_equal_text_and_classic(spark: object, case: tuple[str, Callable[[Any], Any]]) -> None:
    text, build = case
    connect = from_column(build(CF))
    assert bind(connect, SCHEMA) == bind(parse(text), SCHEMA), text
    assert connect == from_column(build(F)), text


_NAMES = st.text(alphabet="ab.`", min_size=1, max_size=6)


@settings(max_examples=60)
@given(_NAMES)
def test_column_names_split_like_spark(spark: object, name: str) -> None:
    """Connect identifiers are split as Spark splits the classic Column's (dots separate, backquotes quote)."""
    try:
        classic: sg.Expr | None = from_column(F.col(name).isNull())
    except Untranslatable:
        classic = None
    except Exception:  # the JVM refuses the name: a malformed identifier
        classic = None
    try:
        connect: sg.Expr | None = from_column(CF.col(name).isNull())
    except Untranslatable:
        connect = None
    assert connect == classic, name


# Timestamp literals in a session time zone: an instant read as the wall-clock time Spark compares there.

_ZONES = {
    "Asia/Tokyo": ZoneInfo("Asia/Tokyo"),
    "America/Los_Angeles": ZoneInfo("America/Los_Angeles"),
    "Europe/London": ZoneInfo("Europe/London"),
    "UTC": dt.UTC,
    "Z": dt.UTC,
    "+05:30": dt.timezone(dt.timedelta(hours=5, minutes=30)),
    "GMT-3": dt.timezone(dt.timedelta(hours=-3)),
    "PST": ZoneInfo("America/Los_Angeles"),
}
_INSTANTS = st.one_of(
    st.datetimes(dt.datetime(1971, 1, 1), dt.datetime(2100, 12, 31)),
    st.datetimes(dt.datetime(1971, 1, 1), dt.datetime(2100, 12, 31), timezones=st.just(dt.UTC)),
    # around the ends of daylight saving time, where a wall-clock hour repeats
    st.datetimes(dt.datetime(2024, 11, 3, 7), dt.datetime(2024, 11, 3, 11), timezones=st.just(dt.UTC)),
    st.datetimes(dt.datetime(2024, 10, 27), dt.datetime(2024, 10, 27, 3), timezones=st.just(dt.UTC)),
).map(lambda value: value.replace(fold=0))


def _expected_wall_clock(value: dt.datetime, zone: str) -> dt.datetime | None:
    """The instant of a datetime (naive: in this process's local zone, as pyspark reads it) in `zone`; None when
    the wall-clock time there is the second of two (Spark would read it back as the first)."""
    local = value.astimezone(_ZONES[zone])
    return None if local.fold else local.replace(tzinfo=None)


@settings(max_examples=150)
@given(_INSTANTS, st.sampled_from(sorted(_ZONES)))
def test_timestamp_literals_read_in_the_session_time_zone(spark: object, value: dt.datetime, zone: str) -> None:
    expected = _expected_wall_clock(value, zone)
    for functions in (CF, F):
        column = (functions.col("t") >= value) & (functions.col("a") == 1)
        translated, leftover = split_column(column, time_zone=zone)
        if expected is None:
            assert translated == a.eq(1) and len(leftover) == 1, (value, zone)
            with pytest.raises(Untranslatable):
                from_column(column, time_zone=zone)
        else:
            assert translated == sg.and_(sg.col("t") >= expected, a.eq(1)), (value, zone)
            assert leftover == []


def test_timestamp_literal_without_time_zone_is_read_as_written(spark: object) -> None:
    value = dt.datetime(2024, 1, 2, 3, 4, 5, 678)
    for functions in (CF, F):
        assert from_column(functions.col("t") == value) == sg.col("t").eq(value)


def test_timestamp_ntz_literal_is_a_wall_clock_time(spark: object) -> None:
    from pyspark.sql.types import TimestampNTZType

    value = dt.datetime(2024, 11, 3, 1, 30)
    column = ConnectColumn(
        E.UnresolvedFunction("==", [E.ColumnReference("t"), E.LiteralExpression(value, TimestampNTZType())])
    )
    for zone in ("Asia/Tokyo", "America/Los_Angeles"):
        assert from_column(column, time_zone=zone) == sg.col("t").eq(value)


def test_java_instant_literal(spark: Any) -> None:
    from pyspark.sql.classic.column import Column as ClassicColumn

    jvm = spark.sparkContext._jvm
    instant = jvm.java.time.Instant.parse("2024-06-30T23:59:58.123456Z")
    column = ClassicColumn(jvm.org.apache.spark.sql.functions.lit(instant)) < F.col("t")
    expected = dt.datetime(2024, 6, 30, 23, 59, 58, 123456, tzinfo=dt.UTC).astimezone(ZoneInfo("Asia/Tokyo"))
    assert from_column(column, time_zone="Asia/Tokyo") == sg.expr.Comparison(
        "<", sg.lit(expected.replace(tzinfo=None)), sg.col("t")
    )
    with pytest.raises(Untranslatable):
        from_column(column)


def test_unknown_time_zone_leaves_timestamp_conjuncts_to_spark(spark: object) -> None:
    for functions in (CF, F):
        column = (functions.col("t") == dt.datetime(2024, 1, 1)) & (functions.col("a") == 1)
        translated, leftover = split_column(column, time_zone="Mars/Olympus")
        assert translated == a.eq(1) and len(leftover) == 1
        with pytest.raises(Untranslatable, match="Mars/Olympus"):
            from_column(column, time_zone="Mars/Olympus")
