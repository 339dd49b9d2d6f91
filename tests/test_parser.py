"""The filter-text parser: Hive's metastore filter syntax and the extensions, typed literals, precedence, deep input."""

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
    FALSE,
    NULL_LITERAL,
    TRUE,
    And,
    Column,
    Comparison,
    Expr,
    Func,
    In,
    Like,
    Literal,
    Not,
    Or,
    Regex,
    and_,
    col,
    fold,
    lit,
    or_,
    parse,
)
from sargable.types import (
    BIGINT,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    STRING,
    TIMESTAMP,
    decimal_type,
    float32,
    parse_type,
)

# -- Hive's own filters (Filter.g, TestHiveMetaStore) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'p1 = "p11" or (p1="p12" and p2="p21") Or (p1="p13" aNd p2="p24")',
            or_(
                col("p1").eq("p11"),
                and_(col("p1").eq("p12"), col("p2").eq("p21")),
                and_(col("p1").eq("p13"), col("p2").eq("p24")),
            ),
        ),
        ('31 != p3 and p1 = "p12"', and_(Comparison("!=", lit(31), col("p3")), col("p1").eq("p12"))),
        ("p3 between 32 and 31", col("p3").between(32, 31)),
        ('p1 >= "p12"', col("p1") >= "p12"),
        ('p2 < "p23" and p1 <> "p11"', and_(col("p2") < "p23", col("p1").ne("p11"))),
        ('(p1 = "p11" or p1 = "p12") and p3 not between 10 and 20', and_(
            or_(col("p1").eq("p11"), col("p1").eq("p12")), col("p3").not_between(10, 20)
        )),
        ("p3 in (31, 32) and p1 not in ('p11')", and_(col("p3").isin(31, 32), col("p1").notin("p11"))),
    ],
)
def test_hive_filters(text: str, expected: Expr) -> None:
    assert parse(text) == expected
    assert parse(text, dialect="hive") == expected


def test_hive_dialect_like_is_an_anchored_java_regex() -> None:
    java_dot = "[^\\n\\r\\x85\\u2028\\u2029]"
    assert parse("p1 like 'p1.*'", dialect="hive") == Regex(col("p1"), f"^(?:p1{java_dot}*)\\Z")
    assert parse("p1 NOT LIKE 'a|b'", dialect="hive") == Regex(col("p1"), "^(?:a|b)\\Z", negated=True)
    assert parse("p1 like 'p1.*'") == Like(col("p1"), "p1.*")


def test_top_level_names() -> None:
    assert sg.parse is parse
    assert sg.loads(sg.dumps(sg.parse("a = 1"))) == col("a").eq(1)
    assert sg.render(sg.parse("A=1")) == "A = 1"


# -- lexical ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a == 1", col("a").eq(1)),
        ("a <> 1", col("a").ne(1)),
        ("a != 1", col("a").ne(1)),
        ("a <=> NULL", col("a").null_safe_eq(None)),
        ("a<=1", col("a") <= 1),
        ("a>-1", col("a") > -1),
        ("a >= - 1", col("a") >= -1),
        ("`a b` = 1", col("a b").eq(1)),
        ("`a``b` = 1", col("a`b").eq(1)),
        ("`in` IS NULL", col("in").is_null()),
        ("_x9 is not null", col("_x9").is_not_null()),
        ("a = 'it''s'", col("a").eq("it's")),
        ('a = "say ""hi"""', col("a").eq('say "hi"')),
        ("a = 'say \"hi\"'", col("a").eq('say "hi"')),
        ("a = 'back\\slash\\'", col("a").eq("back\\slash\\")),
        ("a = 'two\nlines'", col("a").eq("two\nlines")),
        ("a = ''", col("a").eq("")),
        ("\n\ta\n=\n1\n", col("a").eq(1)),
        ("a = TRUE And b = fAlSe", and_(col("a").eq(TRUE), col("b").eq(FALSE))),
        ("a iS nUlL", col("a").is_null()),
        ("date = '2024-01-01'", col("date").eq("2024-01-01")),
        ("timestamp > 5 and escape = 1 and as = 2 and cast = 3", and_(
            col("timestamp") > 5, col("escape").eq(1), col("as").eq(2), col("cast").eq(3)
        )),
        ("date(ts) = DATE '2024-01-01'", Func("date", (col("ts"),)).eq(dt.date(2024, 1, 1))),
    ],
)
def test_lexical_forms(text: str, expected: Expr) -> None:
    assert parse(text) == expected


def test_column_names_keep_their_case_and_functions_are_lowercased() -> None:
    assert parse("MyCol = 1") == Column("MyCol").eq(1)
    assert parse("UPPER(MyCol) = 'A'") == Func("upper", (Column("MyCol"),)).eq("A")


# -- literals and their types ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value", "dtype"),
    [
        ("5", 5, BIGINT),
        ("-5", -5, BIGINT),
        ("- 5", -5, BIGINT),
        ("007", 7, BIGINT),
        ("9223372036854775807", 2**63 - 1, BIGINT),
        ("-9223372036854775808", -(2**63), BIGINT),
        ("9223372036854775808", 2**63, decimal_type(19, 0)),
        ("1" + "0" * 37, 10**37, decimal_type(38, 0)),
        ("1.50", Decimal("1.50"), decimal_type(3, 2)),
        ("-1.50", Decimal("-1.50"), decimal_type(3, 2)),
        (".5", Decimal("0.5"), decimal_type(1, 1)),
        ("5.", Decimal("5"), decimal_type(1, 0)),
        ("1e3", 1000.0, DOUBLE),
        ("2.5E-2", 0.025, DOUBLE),
        ("-1.5e+2", -150.0, DOUBLE),
        ("'x'", "x", STRING),
        ('"x"', "x", STRING),
        ("TRUE", True, BOOLEAN),
        ("false", False, BOOLEAN),
        ("DATE '2024-01-01'", dt.date(2024, 1, 1), DATE),
        ("date '0001-01-01'", dt.date(1, 1, 1), DATE),
        ("TIMESTAMP '2024-01-01 10:00:00'", dt.datetime(2024, 1, 1, 10), TIMESTAMP),
        ("TIMESTAMP '2024-02-29 23:59:59.123456'", dt.datetime(2024, 2, 29, 23, 59, 59, 123456), TIMESTAMP),
        ("CAST(3 AS INT)", 3, INT),
        ("cast(3 as bigint)", 3, BIGINT),
        ("CAST(-3 AS TINYINT)", -3, parse_type("tinyint")),
        ("CAST('abc' AS VARCHAR(10))", "abc", parse_type("varchar(10)")),
        ("CAST(1.5 AS DECIMAL(10,2))", Decimal("1.50"), decimal_type(10, 2)),
        ("CAST(1.5 AS decimal( 10 , 2 ))", Decimal("1.50"), decimal_type(10, 2)),
        ("CAST('1.25' AS DECIMAL(4,2))", Decimal("1.25"), decimal_type(4, 2)),
        ("CAST(0.1 AS FLOAT)", float32(0.1), FLOAT),
        ("CAST(1 AS DOUBLE)", 1.0, DOUBLE),
        ("CAST('Infinity' AS DOUBLE)", math.inf, DOUBLE),
        ("CAST('-Infinity' AS DOUBLE)", -math.inf, DOUBLE),
        ("CAST('2024-01-01' AS DATE)", dt.date(2024, 1, 1), DATE),
        ("CAST(DATE '2024-01-01' AS TIMESTAMP)", dt.datetime(2024, 1, 1), TIMESTAMP),
        ("CAST('true' AS BOOLEAN)", True, BOOLEAN),
        ("CAST(NULL AS INT)", None, INT),
        ("CAST(CAST(7 AS INT) AS STRING)", "7", STRING),
        ("CAST(5 AS integer)", 5, INT),
    ],
)
def test_literal_values_and_types(text: str, value: object, dtype: object) -> None:
    parsed = parse(f"x = {text}")
    assert isinstance(parsed, Comparison)
    literal = parsed.right
    assert isinstance(literal, Literal)
    assert literal.type == dtype
    assert type(literal.value) is type(value)
    assert literal.value == value


def test_nan_cast_and_null() -> None:
    nan = parse("x = CAST('NaN' AS DOUBLE)").right  # type: ignore[attr-defined]
    assert nan.type == DOUBLE and math.isnan(nan.value)
    assert parse("x = NULL").right is NULL_LITERAL  # type: ignore[attr-defined]


def test_cast_of_a_38_digit_decimal() -> None:
    assert parse("x = CAST(" + "9" * 38 + " AS DECIMAL(38,0))") == col("x").eq(
        Literal(Decimal("9" * 38), decimal_type(38, 0))
    )


# -- operators and precedence ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10 < p1", Comparison("<", lit(10), col("p1"))),
        ("'a' = 'b'", Comparison("=", lit("a"), lit("b"))),
        (
            "x in (1, 'a', y, f(z), -2.5)",
            In(col("x"), (lit(1), lit("a"), col("y"), Func("f", (col("z"),)), lit(Decimal("-2.5")))),
        ),
        ("x not in (NULL)", col("x").notin(None)),
        ("x between y and 3", col("x").between(col("y"), 3)),
        ("x like 'a%' escape '\\'", col("x").like("a%", "\\")),
        ("x not like '%''%'", col("x").not_like("%'%")),
        ("x rlike '^a'", Regex(col("x"), "^a")),
        ("x regexp '^a'", Regex(col("x"), "^a")),
        ("x not regexp 'b$'", Regex(col("x"), "b$", negated=True)),
        ("upper(y) = 'XYZ'", Func("upper", (col("y"),)).eq("XYZ")),
        ("f() > coalesce(a, b, 0)", Func("f", ()) > Func("coalesce", (col("a"), col("b"), lit(0)))),
        ("f(g(h(x)), 1) = 2", Func("f", (Func("g", (Func("h", (col("x"),)),)), lit(1))).eq(2)),
        ("NOT a = 1", Not(col("a").eq(1))),
        ("NOT a = 1 AND b = 2", and_(Not(col("a").eq(1)), col("b").eq(2))),
        ("a = 1 OR b = 2 AND c = 3", or_(col("a").eq(1), and_(col("b").eq(2), col("c").eq(3)))),
        ("(a = 1 OR b = 2) AND c = 3", and_(or_(col("a").eq(1), col("b").eq(2)), col("c").eq(3))),
        ("NOT (a = 1 OR b = 2)", Not(or_(col("a").eq(1), col("b").eq(2)))),
        ("not not a is null", Not(Not(col("a").is_null()))),
        ("NOT a BETWEEN 1 AND 2 OR b", or_(Not(col("a").between(1, 2)), col("b"))),
        ("flag AND NOT other", and_(col("flag"), Not(col("other")))),
        ("TRUE OR NULL", or_(TRUE, NULL_LITERAL)),
        ("(((a = 1)))", col("a").eq(1)),
        ("((a = 1 and b = 2) and (c = 3 and d = 4))", And(tuple(col(n).eq(i + 1) for i, n in enumerate("abcd")))),
    ],
)
def test_operators_and_precedence(text: str, expected: Expr) -> None:
    assert parse(text) == expected


@st.composite
def boolean_texts(draw: st.DrawFn) -> str:
    """A random well-formed boolean formula over b0..b3, written with lowercase and/or/not and parentheses."""
    budget = draw(st.integers(1, 12))
    out: list[str] = []
    stack = [budget]
    while stack:
        size = stack.pop()
        if isinstance(size, str):
            out.append(size)
            continue
        choice = draw(st.integers(0, 3)) if size > 1 else 4
        if choice == 0:
            out.append("not")
            stack.append(size - 1)
        elif choice == 1:
            out.append("(")
            stack.extend([")", size - 1])
        elif choice in (2, 3):
            left = draw(st.integers(1, size - 1))
            stack.extend([size - left, "and" if choice == 2 else "or", left])
        else:
            out.append(draw(st.sampled_from(["b0", "b1", "b2", "b3"])))
    return " ".join(out)


def _truth(expr: Expr, row: dict[str, bool]) -> bool:
    def visit(node: Expr, kids: list[bool]) -> bool:
        if isinstance(node, Column):
            return row[node.name]
        if isinstance(node, Not):
            return not kids[0]
        return all(kids) if isinstance(node, And) else any(kids)

    return fold(expr, visit)


@settings(max_examples=300)
@given(boolean_texts(), st.fixed_dictionaries({f"b{i}": st.booleans() for i in range(4)}))
def test_precedence_agrees_with_python(text: str, row: dict[str, bool]) -> None:
    """Python's not > and > or is the same precedence, so `eval` is an independent oracle."""
    assert _truth(parse(text), row) == eval(text, {}, dict(row))


# -- input checks -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [b"a = 1", None, 5, ["a = 1"]])
def test_non_text_input_is_a_sargable_error(bad: object) -> None:
    with pytest.raises(sg.SargableError, match="must be a str"):
        parse(bad)  # type: ignore[arg-type]


def test_unknown_dialect() -> None:
    with pytest.raises(sg.SargableError, match="unknown filter dialect 'mysql'"):
        parse("a = 1", dialect="mysql")


@settings(max_examples=500)
@given(st.text(max_size=40))
def test_arbitrary_text_raises_only_sargable_errors(text: str) -> None:
    try:
        parsed = parse(text)
    except sg.FilterSyntaxError as exc:
        assert 0 <= exc.position <= len(text)
        assert not text.strip() or str(exc).endswith("^")
    else:
        assert parse(sg.render(parsed)) == parsed


vocabulary = [
    "a", "`b c`", "1", "-", "2.5", "1e3", "'s'", '"d"', "(", ")", ",", "=", "<=>", "!=", "and", "or", "not", "in",
    "between", "is", "null", "like", "rlike", "escape", "'!'", "cast", "as", "int", "decimal(3,1)", "date",
    "'2024-01-01'", "timestamp", "true", "f", "`", "'", "!<", "'%'", "'('",
]


@settings(max_examples=500)
@given(st.lists(st.sampled_from(vocabulary), max_size=12), st.sampled_from(["sql", "hive"]))
def test_token_soup_raises_only_sargable_errors(words: list[str], dialect: str) -> None:
    try:
        parsed = parse(" ".join(words), dialect)
    except sg.FilterSyntaxError as exc:
        assert str(exc).endswith("^") or not exc.text
    else:
        assert parse(sg.render(parsed)) == parsed


# -- deep and wide ----------------------------------------------------------------------------------------------------


DEPTH = 10_000
WIDTH = 100_000


def test_ten_thousand_parentheses() -> None:
    assert parse("(" * DEPTH + "a = 1" + ")" * DEPTH) == col("a").eq(1)


def test_ten_thousand_nots() -> None:
    expr = parse("NOT " * DEPTH + "a = 1")
    for _ in range(DEPTH):
        assert isinstance(expr, Not)
        expr = expr.child
    assert expr == col("a").eq(1)


def test_ten_thousand_alternating_groups() -> None:
    text = "".join(f"(a = {i} {'AND' if i % 2 else 'OR'} NOT " for i in range(DEPTH)) + "z = 1" + ")" * DEPTH
    expr = parse(text)
    depth = 0
    while not isinstance(expr, Comparison):
        expr = expr.children()[-1]
        depth += 1
    assert depth == 2 * DEPTH and expr == col("z").eq(1)


def test_nested_groups_of_one_kind_flatten() -> None:
    left = "(" * DEPTH + "a = 0" + "".join(f" AND a = {i})" for i in range(1, DEPTH + 1))
    right = "".join(f"a = {i} OR (" for i in range(DEPTH)) + f"a = {DEPTH}" + ")" * DEPTH
    assert parse(left) == And(tuple(col("a").eq(i) for i in range(DEPTH + 1)))
    assert parse(right) == Or(tuple(col("a").eq(i) for i in range(DEPTH + 1)))


def test_ten_thousand_nested_function_calls() -> None:
    expr = parse("f(" * DEPTH + "x" + ")" * DEPTH + " = 1")
    operand = expr.left  # type: ignore[attr-defined]
    for _ in range(DEPTH):
        assert isinstance(operand, Func) and operand.name == "f"
        operand = operand.args[0]
    assert operand == col("x")


@pytest.mark.parametrize("op", ["AND", "OR"])
def test_hundred_thousand_terms(op: str) -> None:
    expr = parse(f" {op} ".join(f"p{i % 7} = {i}" for i in range(WIDTH)))
    assert isinstance(expr, And if op == "AND" else Or)
    assert len(expr.children()) == WIDTH
    assert expr.children()[12345] == col("p4").eq(12345)


def test_in_list_of_hundred_thousand_literals() -> None:
    rng = random.Random(7)
    values = [rng.randrange(-(10**12), 10**12) for _ in range(WIDTH)]
    expr = parse("x IN (" + ", ".join(map(str, values)) + ")")
    assert isinstance(expr, In) and [v.value for v in expr.values] == values  # type: ignore[attr-defined]


def test_one_megabyte_filter() -> None:
    terms = (f"(ds = DATE '2024-01-{i % 28 + 1:02d}' AND hr = {i % 24} AND c = 'C{i}')" for i in range(18_000))
    text = " OR ".join(terms)
    assert len(text) > 1_000_000
    expr = parse(text)
    assert isinstance(expr, Or) and len(expr.children()) == 18_000
    last = and_(col("ds").eq(dt.date(2024, 1, 24)), col("hr").eq(17999 % 24), col("c").eq("C17999"))
    assert expr.children()[-1] == last
