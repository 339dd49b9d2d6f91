"""The canonical printer and the engine SQL generators.

The round trip `parse(render(e)) == e` is checked on generated trees of every node kind the parser produces, with
arbitrary identifiers (keywords, spaces, backquotes, unicode), arbitrary strings (quotes, NUL, newlines) and literals
of every type. The SQL generators are checked against DuckDB, which reads back every literal they print.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import Decimal

import duckdb
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import sargable as sg
from sargable.errors import TypeCoercionError
from sargable.expr import (
    FALSE,
    NULL_LITERAL,
    TRUE,
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
    and_,
    col,
    columns_of,
    lit,
    or_,
    render,
    render_sql,
    transform,
)
from sargable.expr.nodes import COMPARISON_OPS
from sargable.expr.tokens import KEYWORDS
from sargable.types import (
    BIGINT,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    NULL,
    SMALLINT,
    STRING,
    TIMESTAMP,
    TINYINT,
    DataType,
    convert,
    decimal_type,
    float32,
    parse_type,
)

# -- strategies (shared with test_binary) ---------------------------------------------------------------------------

names = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True),
    st.sampled_from(sorted(KEYWORDS | {k.lower() for k in KEYWORDS} | {"Date", "p1", "ds", "hr"})),
    st.text(min_size=1, max_size=12),
    st.text(alphabet="`' \"\n\0aé中", min_size=1, max_size=6),
)
strings = st.one_of(st.text(max_size=20), st.text(alphabet="'\"`\\\n\r\0 %_aZ", max_size=12))
small_decimals = st.builds(
    lambda unscaled, scale: Decimal(unscaled).scaleb(-scale),
    st.integers(-(10**20), 10**20),
    st.integers(0, 17),
)
decimals = st.one_of(
    small_decimals,
    st.sampled_from([Decimal("0.00"), Decimal("-0.0"), Decimal("1E+3"), Decimal("-5"), Decimal("1" + "0" * 37)]),
)
ints = st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(-(10**38) + 1, 10**38 - 1))
timestamps = st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59))
natural_literals = st.one_of(
    ints.map(lit),
    st.floats().map(lit),
    decimals.map(lit),
    strings.map(lit),
    st.dates().map(lit),
    timestamps.map(lit),
    st.sampled_from([TRUE, FALSE, NULL_LITERAL]),
)
simple_types = st.sampled_from(
    [TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, STRING, DATE, TIMESTAMP, DataType("boolean")]
)
types = st.one_of(
    simple_types,
    st.builds(lambda n: parse_type(f"varchar({n})"), st.integers(1, 300)),
    st.builds(lambda n: parse_type(f"char({n})"), st.integers(1, 300)),
    st.integers(1, 38).flatmap(lambda p: st.integers(0, p).map(lambda s: decimal_type(p, s))),
)
raw_values = st.one_of(ints, st.floats(), decimals, strings, st.dates(), timestamps, st.booleans())


@st.composite
def typed_literals(draw: st.DrawFn) -> Literal:
    """A literal as binding makes it: a value converted exactly to a declared type (or a typed NULL)."""
    dtype = draw(types)
    if draw(st.integers(0, 9)) == 0:
        return Literal(None, dtype)
    value = draw(raw_values)
    try:
        converted = convert(value, dtype)
    except TypeCoercionError:
        assume(False)
    return Literal(converted, dtype)


literals = st.one_of(natural_literals, typed_literals())
columns = names.map(Column)
operands = st.recursive(
    st.one_of(columns, literals),
    lambda inner: st.builds(lambda name, args: Func(name, tuple(args)), names, st.lists(inner, max_size=3)),
    max_leaves=6,
)


@st.composite
def like_patterns(draw: st.DrawFn) -> tuple[str, str | None]:
    """A valid LIKE pattern and escape: literal `%`, `_` and the escape itself are escaped, wildcards are not."""
    escape = draw(st.none() | st.characters(codec="utf-8").filter(lambda c: c not in "%_"))
    out = []
    for piece in draw(st.lists(st.text(max_size=4) | st.sampled_from(["%", "_"]), max_size=5)):
        if piece in ("%", "_") or escape is None:
            out.append(piece)
        else:
            out.extend(escape + char if char in ("%", "_", escape) else char for char in piece)
    return "".join(out), escape


regexes = st.one_of(
    st.text(max_size=10).map(re.escape), st.sampled_from(["^a.*", "x|y", "[0-9]+$", r"\d{2}", "^(?:p1.*)\\Z"])
)


@st.composite
def predicates(draw: st.DrawFn) -> Expr:
    """One leaf predicate of any kind the parser produces, over arbitrary operands."""
    kind = draw(st.integers(0, 6))
    operand = draw(operands)
    if kind == 0:
        return Comparison(draw(st.sampled_from(COMPARISON_OPS)), operand, draw(operands))
    if kind == 1:
        return In(operand, tuple(draw(st.lists(operands, min_size=1, max_size=4))), draw(st.booleans()))
    if kind == 2:
        return Between(operand, draw(operands), draw(operands), draw(st.booleans()))
    if kind == 3:
        return IsNull(operand, draw(st.booleans()))
    if kind == 4:
        pattern, escape = draw(like_patterns())
        return Like(operand, pattern, escape, draw(st.booleans()))
    if kind == 5:
        return Regex(operand, draw(regexes), draw(st.booleans()))
    return operand


expressions = st.recursive(
    predicates(),
    lambda inner: st.one_of(
        inner.map(Not),
        st.lists(inner, min_size=2, max_size=4).map(lambda kids: and_(*kids)),
        st.lists(inner, min_size=2, max_size=4).map(lambda kids: or_(*kids)),
    ),
    max_leaves=12,
)


@st.composite
def bound_expressions(draw: st.DrawFn) -> Expr:
    """Bound-style trees: every column carries a type (one per name), literals keep theirs."""
    expr = draw(expressions)
    column_types = {name: draw(types) for name in sorted(columns_of(expr))}
    return transform(
        expr, lambda node: Column(node.name, column_types[node.name]) if isinstance(node, Column) else node
    )


def drop_column_types(expr: Expr) -> Expr:
    return transform(expr, lambda node: Column(node.name) if isinstance(node, Column) else node)


# -- round trips ------------------------------------------------------------------------------------------------------


@settings(max_examples=300)
@given(expressions)
def test_parse_of_render_is_the_same_tree(expr: Expr) -> None:
    text = render(expr)
    assert sg.parse(text) == expr, text


@settings(max_examples=200)
@given(bound_expressions())
def test_render_of_bound_tree_keeps_literal_types(expr: Expr) -> None:
    assert sg.parse(render(expr)) == drop_column_types(expr)


@settings(max_examples=300)
@given(literals)
def test_every_literal_reads_back_with_value_and_type(literal: Literal) -> None:
    parsed = sg.parse(f"x = {render(literal)}")
    assert isinstance(parsed, Comparison)
    back = parsed.right
    assert isinstance(back, Literal) and back.type == literal.type
    assert type(back.value) is type(literal.value)
    if isinstance(literal.value, float) and math.isnan(literal.value):
        assert math.isnan(back.value)
    else:
        assert back.value == literal.value


@given(names)
def test_identifiers_are_bare_only_when_safe(name: str) -> None:
    text = render(Column(name))
    if name.upper() in KEYWORDS or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        assert text.startswith("`") and text.endswith("`")
    else:
        assert text == name
    assert sg.parse(f"{text} IS NULL") == IsNull(Column(name))


# -- exact canonical text --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        (col("a").eq(1) | (col("b").eq(2) & col("c").eq(3)), "a = 1 OR b = 2 AND c = 3"),
        (col("a").eq(1) & (col("b").eq(2) | col("c").eq(3)), "a = 1 AND (b = 2 OR c = 3)"),
        (~(col("a").eq(1) & col("b").eq(2)), "NOT (a = 1 AND b = 2)"),
        (~col("a").eq(1), "NOT a = 1"),
        (~~col("a").is_null(), "NOT NOT a IS NULL"),
        (col("a").ne("it's"), "a != 'it''s'"),
        (Comparison("<", lit(10), col("p1")), "10 < p1"),
        (col("x").null_safe_eq(None), "x <=> NULL"),
        (col("x").isin(1, 2, 3), "x IN (1, 2, 3)"),
        (col("x").notin("a"), "x NOT IN ('a')"),
        (col("x").not_between(-5, 5), "x NOT BETWEEN -5 AND 5"),
        (col("x").is_not_null(), "x IS NOT NULL"),
        (col("x").like("a%", "!"), "x LIKE 'a%' ESCAPE '!'"),
        (col("x").not_like("_b"), "x NOT LIKE '_b'"),
        (Regex(col("x"), "^a.*", negated=True), "x NOT RLIKE '^a.*'"),
        (Func("upper", (col("y"),)).eq("XYZ"), "upper(y) = 'XYZ'"),
        (col("select").eq(1), "select = 1"),
        (col("in").eq(1), "`in` = 1"),
        (col("date").eq(dt.date(2024, 1, 1)), "`date` = DATE '2024-01-01'"),
        (col("a b").eq(1), "`a b` = 1"),
        (col("a`b").eq(1), "`a``b` = 1"),
        (col("ts").eq(dt.datetime(2024, 1, 1, 10, 0, 0, 500)), "ts = TIMESTAMP '2024-01-01 10:00:00.0005'"),
        (col("x").eq(Decimal("1.50")), "x = 1.50"),
        (col("x").eq(1.5), "x = 1.5E0"),
        (col("x").eq(1e300), "x = 1E+300"),
        (col("x").eq(math.nan), "x = CAST('NaN' AS DOUBLE)"),
        (col("x").eq(-math.inf), "x = CAST('-Infinity' AS DOUBLE)"),
        (col("x").eq(Literal(3, INT)), "x = CAST(3 AS INT)"),
        (col("x").eq(Literal(None, INT)), "x = CAST(NULL AS INT)"),
        (col("x").eq(Literal(float32(0.1), FLOAT)), "x = CAST(0.10000000149011612E0 AS FLOAT)"),
        (col("x").eq(Literal(Decimal("1.50"), decimal_type(10, 2))), "x = CAST(1.50 AS DECIMAL(10,2))"),
        (col("x").eq(Literal("ab", parse_type("varchar(5)"))), "x = CAST('ab' AS VARCHAR(5))"),
        (TRUE, "TRUE"),
        (Literal(None, NULL), "NULL"),
        (col("flag") & ~col("other"), "flag AND NOT other"),
    ],
)
def test_canonical_text(expr: Expr, text: str) -> None:
    assert render(expr) == text
    assert str(expr) == text
    assert sg.parse(text) == expr


def test_strings_keep_every_code_point() -> None:
    value = "a'b\"c\n\0\r\t`\\ \u2028 \U0001f600"
    assert sg.parse(render(col("s").eq(value))) == col("s").eq(value)


def test_repr_names_the_node() -> None:
    assert repr(col("a").eq(1)) == "Comparison<a = 1>"


def test_render_rejects_non_expressions() -> None:
    with pytest.raises(sg.SargableError, match="only render an Expr"):
        render("a = 1")  # type: ignore[arg-type]
    with pytest.raises(sg.SargableError, match="unknown SQL dialect"):
        render_sql(col("a").eq(1), "oracle")


# -- deep and wide -----------------------------------------------------------------------------------------------------


def test_render_deep_and_wide_trees_round_trip() -> None:
    deep: Expr = col("a").eq(1)
    for index in range(10_000):
        kind = (Not, And, Or)[index % 3]
        deep = Not(deep) if kind is Not else kind((col(f"c{index % 7}").eq(index), deep))
    text = render(deep)
    assert sg.parse(text) == deep
    wide = Or(tuple(col("p").eq(index) for index in range(100_000)))
    text = render(wide)
    assert text.count(" OR ") == 99_999
    assert sg.parse(text) == wide


# -- SQL generators --------------------------------------------------------------------------------------------------

sql_literals = st.one_of(
    st.integers(-(10**37), 10**37).map(lit),
    st.floats().map(lit),
    st.floats(width=32).map(lambda value: Literal(value, FLOAT)),
    small_decimals.map(lit),
    strings.map(lit),
    st.dates().map(lit),
    timestamps.map(lit),
    st.sampled_from([TRUE, FALSE, Literal(None, INT), Literal(None, DATE)]),
)


@pytest.fixture(scope="module")
def duck() -> duckdb.DuckDBPyConnection:
    return duckdb.connect()


@settings(max_examples=300)
@given(sql_literals)
def test_duckdb_reads_back_every_literal(duck: duckdb.DuckDBPyConnection, literal: Literal) -> None:
    (value,) = duck.execute(f"SELECT {render_sql(literal, 'duckdb')}").fetchone()
    expected = literal.value
    if isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(value)
    else:
        assert value == expected and type(value) is type(expected)


def _like_oracle(value: str, pattern: str) -> bool:
    regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, re.DOTALL) is not None


@settings(max_examples=200)
@given(
    names.filter(lambda name: "\0" not in name),
    st.text(alphabet="ab'\\\n\"", max_size=6),
    st.text(alphabet="ab%_'\\\n\"", max_size=6),
    st.text(alphabet="ab'\\\n\"", max_size=6),
)
def test_duckdb_evaluates_printed_predicates(
    duck: duckdb.DuckDBPyConnection, name: str, value: str, pattern: str, other: str
) -> None:
    expr = and_(col(name).like(pattern), col(name).ne(other), col(name).isin(value, other)) | col(name).is_null()
    duck.execute(f"CREATE OR REPLACE TEMP TABLE t ({render_sql(col(name), 'duckdb')} VARCHAR)")
    duck.execute("INSERT INTO t VALUES (?)", [value])
    (result,) = duck.execute(f"SELECT {render_sql(expr, 'duckdb')} FROM t").fetchone()
    assert result == (_like_oracle(value, pattern) and value != other)


def test_duckdb_null_safe_equality_and_regex(duck: duckdb.DuckDBPyConnection) -> None:
    expr = col("x").null_safe_eq(None) & Regex(col("y"), "^(?:a.*)\\Z") & Regex(col("y"), "b", negated=True)
    sql = render_sql(expr, "duckdb")
    assert sql == (
        "\"x\" IS NOT DISTINCT FROM NULL AND regexp_matches(\"y\", '^(?:a.*)\\z') AND NOT regexp_matches(\"y\", 'b')"
    )
    rows = duck.execute(f"SELECT {sql} FROM (VALUES (NULL, 'ac'), (1, 'ac'), (NULL, 'ab')) t(x, y)").fetchall()
    assert [row[0] for row in rows] == [True, False, False]


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        (col("a").ne("it's \\ ok"), "`a` <> 'it\\'s \\\\ ok'"),
        (col("a b").null_safe_eq(1), "`a b` <=> 1"),
        (col("p").like("a\\%"), "`p` LIKE 'a\\\\%' ESCAPE '!'"),
        (col("p").like("a!%", "!"), "`p` LIKE 'a!%' ESCAPE '!'"),
        (Regex(col("p"), "^(?:p1.*)\\Z"), "`p` RLIKE '^(?:p1.*)\\\\z'"),
        (col("x").eq(math.inf), "`x` = CAST('Infinity' AS DOUBLE)"),
        (
            col("x").eq(Literal(3, INT)) & col("y").eq(Literal(Decimal("1.5"), decimal_type(9, 2))),
            "`x` = 3 AND `y` = 1.5",
        ),
        (col("x").eq(Literal(float32(0.5), FLOAT)), "`x` = CAST(0.5E0 AS FLOAT)"),
        (Func("upper", (col("y"),)).eq("A") | ~col("b"), "upper(`y`) = 'A' OR NOT `b`"),
    ],
)
def test_spark_sql_text(expr: Expr, text: str) -> None:
    assert render_sql(expr) == text
    assert render_sql(expr, "spark") == text


def test_hand_built_trees_the_parser_never_makes_still_render() -> None:
    odd = Comparison("=", And((col("a").eq(1), col("b").eq(2))), Literal(1, DOUBLE))
    assert render(odd) == "(a = 1 AND b = 2) = CAST(1 AS DOUBLE)"
