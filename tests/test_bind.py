"""Binding: column resolution, literal coercion for every type, exact numeric comparison, and error messages."""

from __future__ import annotations

import datetime as dt
import operator
import re
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sargable.errors import BindError, PatternError, TypeCoercionError
from sargable.expr.bind import bind, coerce_literal
from sargable.expr.evaluate import evaluate
from sargable.expr.nodes import (
    NULL_LITERAL,
    TRUE,
    And,
    Column,
    Comparison,
    Expr,
    Func,
    In,
    Literal,
    Not,
    col,
    lit,
    walk,
)
from sargable.types import DataType, float32, parse_type
from strategies import ALL_TYPES, data_types, predicates, schemas, values

SCHEMA = [
    ("Hr", "int"),
    ("ds", "date"),
    ("ts", "timestamp"),
    ("name", "string"),
    ("f", "float"),
    ("d", "double"),
    ("amount", "decimal(5,2)"),
    ("tiny", "tinyint"),
    ("big", "bigint"),
    ("flag", "boolean"),
    ("code", "varchar(3)"),
]


def bound_literal(column: str, value: Any) -> Literal:
    expr = bind(col(column).eq(lit(value)), SCHEMA)
    assert isinstance(expr, Comparison) and isinstance(expr.right, Literal)
    return expr.right


def test_columns_resolve_case_insensitively_to_the_schema_spelling() -> None:
    expr = bind(And((col("HR").eq(1), col("hr") > 0, col("DS").is_null())), SCHEMA)
    columns = {node for node in walk(expr) if isinstance(node, Column)}
    assert columns == {Column("Hr", parse_type("int")), Column("ds", parse_type("date"))}


def test_unknown_column_lists_the_known_ones() -> None:
    with pytest.raises(BindError, match=r"unknown column 'hour'; known columns: Hr, ds, ts, name"):
        bind(col("hour").eq(1), SCHEMA)


def test_schema_validation() -> None:
    with pytest.raises(BindError, match="differ only in case"):
        bind(col("a").eq(1), [("a", "int"), ("A", "string")])
    with pytest.raises(TypeCoercionError, match="column 'a': unknown type"):
        bind(col("a").eq(1), [("a", "integr")])
    with pytest.raises(BindError, match="list of"):
        bind(col("a").eq(1), "a int")  # type: ignore[arg-type]
    with pytest.raises(BindError, match="pair"):
        bind(col("a").eq(1), [("a",)])  # type: ignore[list-item]
    with pytest.raises(BindError, match="non-empty string"):
        bind(col("a").eq(1), [("", "int")])
    with pytest.raises(BindError, match="expression"):
        bind("a = 1", SCHEMA)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("column", "value", "expected", "type_name"),
    [
        ("ds", "2024-01-01", dt.date(2024, 1, 1), "date"),
        ("ds", dt.datetime(2024, 1, 1), dt.date(2024, 1, 1), "date"),
        ("ds", "2024-01-01 00:00:00", dt.date(2024, 1, 1), "date"),
        ("ts", dt.date(2024, 1, 1), dt.datetime(2024, 1, 1), "timestamp"),
        ("ts", "2024-01-01 10:30", dt.datetime(2024, 1, 1, 10, 30), "timestamp"),
        ("Hr", "7", 7, "int"),
        ("Hr", " -7 ", -7, "int"),
        ("Hr", 3.0, 3, "int"),
        ("Hr", Decimal("4.00"), 4, "int"),
        ("Hr", 8589934592, 8589934592, "bigint"),
        ("Hr", Decimal("3.5"), Decimal("3.5"), "decimal(2,1)"),
        ("Hr", "3.5", Decimal("3.5"), "decimal(2,1)"),
        ("Hr", 3.5, 3.5, "double"),
        ("tiny", 200, 200, "bigint"),
        ("big", 2**63, 2**63, "decimal(19,0)"),
        ("amount", Decimal("1.5"), Decimal("1.50"), "decimal(5,2)"),
        ("amount", 7, Decimal("7.00"), "decimal(5,2)"),
        ("amount", 0.1, Decimal("0.10"), "decimal(5,2)"),
        ("amount", Decimal("1.234"), Decimal("1.234"), "decimal(4,3)"),
        ("amount", 1000, 1000, "bigint"),
        ("f", 0.1, float32(0.1), "float"),
        ("f", Decimal("0.1"), float32(0.1), "float"),
        ("f", "1e40", float("inf"), "float"),
        ("d", Decimal("0.1"), 0.1, "double"),
        ("d", 3, 3.0, "double"),
        ("d", 2**53 + 1, 2**53 + 1, "bigint"),
        ("d", "NaN", float("nan"), "double"),
        ("name", 5, "5", "string"),
        ("name", True, "true", "string"),
        ("name", dt.date(2024, 1, 1), "2024-01-01", "string"),
        ("name", 1.5, "1.5", "string"),
        ("code", "abcdef", "abcdef", "string"),
        ("flag", "TRUE", True, "boolean"),
        ("flag", False, False, "boolean"),
    ],
)
def test_literal_coercion(column: str, value: Any, expected: Any, type_name: str) -> None:
    literal = bound_literal(column, value)
    assert literal.type == parse_type(type_name)
    assert type(literal.value) is type(expected)
    if expected == expected:
        assert literal.value == expected
    else:
        assert literal.value != literal.value


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("Hr", "abc", r"cannot compare column 'Hr' of type int with the literal 'abc': 'abc' is not a number"),
        ("Hr", True, "column 'Hr' of type int with the literal true: a boolean is not a number"),
        ("Hr", dt.date(2024, 1, 1), "column 'Hr' of type int with the literal 2024-01-01"),
        ("ds", "yesterday", r"column 'ds' of type date with the literal 'yesterday': 'yesterday' is not a date"),
        ("ds", "2024-02-30", "column 'ds'.*not a valid date"),
        ("ds", dt.datetime(2024, 1, 1, 10), r"time of day \(10:00:00\).*DATE '2024-01-01'"),
        ("ds", "2024-01-01 10:00:00", r"time of day \(10:00:00\)"),
        ("ds", 5, "column 'ds' of type date with the literal 5"),
        ("ts", "noon", "column 'ts' of type timestamp with the literal 'noon'"),
        ("ts", 5, "column 'ts' of type timestamp"),
        ("flag", 5, "column 'flag' of type boolean with the literal 5"),
        ("flag", "yes", "column 'flag' of type boolean"),
        ("amount", Decimal("1." + "1" * 40), "more than 38 digits"),
    ],
)
def test_coercion_errors_name_column_type_and_literal(column: str, value: Any, message: str) -> None:
    with pytest.raises(TypeCoercionError, match=message):
        bind(col(column).eq(lit(value)), SCHEMA)


def test_literal_on_the_left_in_lists_and_between_are_coerced() -> None:
    expr = bind(Comparison("<", lit("2024-01-01"), col("ds")), SCHEMA)
    assert isinstance(expr, Comparison) and expr.left == Literal(dt.date(2024, 1, 1), parse_type("date"))
    expr = bind(col("ds").isin("2024-01-01", None, dt.date(2024, 1, 2)), SCHEMA)
    assert isinstance(expr, In)
    assert [v.value for v in expr.values] == [dt.date(2024, 1, 1), None, dt.date(2024, 1, 2)]  # type: ignore[attr-defined]
    expr = bind(col("hr").between("1", 8589934592), SCHEMA)
    assert [c.value for c in expr.children()[1:]] == [1, 8589934592]  # type: ignore[attr-defined]
    assert NULL_LITERAL in bind(col("hr").eq(NULL_LITERAL), SCHEMA).children()


def test_literal_against_literal_and_column_against_column() -> None:
    assert bind(Comparison("<", lit("2024-01-01"), lit(dt.date(2024, 2, 1))), SCHEMA).children()[0] == Literal(
        dt.date(2024, 1, 1), parse_type("date")
    )
    assert evaluate(bind(Comparison("=", lit(1), lit(Decimal("1.0"))), SCHEMA), {}) is True
    with pytest.raises(TypeCoercionError, match="'a' is not a number"):
        bind(Comparison("=", lit(1), lit("a")), SCHEMA)
    bind(col("hr") < col("amount"), SCHEMA)
    bind(col("ds") < col("ts"), SCHEMA)
    with pytest.raises(BindError, match="cannot compare column 'Hr' of type int with column 'name' of type string"):
        bind(col("hr").eq(col("name")), SCHEMA)
    with pytest.raises(BindError, match="cannot compare column 'ds' of type date with column 'flag'"):
        bind(col("ds").isin(col("flag")), SCHEMA)


def test_like_and_rlike_patterns_are_checked_and_allowed_on_any_type() -> None:
    assert evaluate(bind(col("hr").like("1%"), SCHEMA), {"Hr": 12}) is True
    with pytest.raises(PatternError, match="precedes 'x'"):
        bind(col("name").like("a!x", "!"), SCHEMA)
    with pytest.raises(PatternError, match="invalid regular expression"):
        bind(col("name").rlike("a("), SCHEMA)


def test_functions() -> None:
    expr = bind(Func("length", (col("name"),)) > "3", SCHEMA)
    assert isinstance(expr, Comparison) and expr.right == Literal(3, parse_type("int"))
    expr = bind(Func("LOWER", (col("NAME"),)).eq(5), SCHEMA)
    assert isinstance(expr, Comparison) and expr.right == Literal("5", parse_type("string"))
    with pytest.raises(BindError, match=r"unknown function sqrt\(\); known functions: abs, coalesce, length"):
        bind(Func("sqrt", (col("d"),)) > 1, SCHEMA)
    with pytest.raises(BindError, match=r"lower\(\) takes 1 arguments, got 2"):
        bind(Func("lower", (col("name"), col("name"))).eq("a"), SCHEMA)
    with pytest.raises(BindError, match=r"substr\(\) takes 2 to 3 arguments"):
        bind(Func("substr", (col("name"),)).eq("a"), SCHEMA)
    with pytest.raises(TypeCoercionError, match=r"abs\(\) needs a number"):
        bind(Func("abs", (col("name"),)).eq(1), SCHEMA)
    with pytest.raises(TypeCoercionError, match="argument 2 of substr"):
        bind(Func("substr", (col("name"), col("ds"))).eq("a"), SCHEMA)
    with pytest.raises(TypeCoercionError, match="no common type"):
        bind(Func("coalesce", (col("name"), col("hr"))).eq("a"), SCHEMA)
    expr = bind(Func("coalesce", (col("hr"), col("amount"))) > 1, SCHEMA)
    assert evaluate(expr, {"Hr": None, "amount": Decimal("1.50")}) is True


def test_the_filter_must_be_a_predicate() -> None:
    with pytest.raises(BindError, match=r"the filter must be a predicate.*column 'Hr' is of type int"):
        bind(col("hr"), SCHEMA)
    with pytest.raises(BindError, match="each operand of AND must be a predicate"):
        bind(And((col("flag"), lit(3))), SCHEMA)
    with pytest.raises(BindError, match="each operand of NOT"):
        bind(Not(col("name")), SCHEMA)
    assert bind(And((col("flag"), TRUE, NULL_LITERAL)), SCHEMA) == And(
        (Column("flag", parse_type("boolean")), TRUE, NULL_LITERAL)
    )


def test_python_comparison_operators_in_a_tree_are_reported() -> None:
    with pytest.raises(BindError, match=r"found bool False where an expression belongs \(build = and != with .eq\(\)"):
        bind(And((col("hr") == 1, col("hr").eq(1))), SCHEMA)  # type: ignore[arg-type]


def test_coerce_literal_is_usable_alone() -> None:
    assert coerce_literal(lit("2024-01-01"), parse_type("date")).value == dt.date(2024, 1, 1)
    assert coerce_literal(NULL_LITERAL, parse_type("int")) is NULL_LITERAL


def test_deep_and_wide_expressions_bind_without_recursion() -> None:
    deep: Expr = col("hr").eq("1")
    for _ in range(10_000):
        deep = Not(deep)
    bound = bind(deep, SCHEMA)
    assert evaluate(bound, {"Hr": 1}) is True
    wide = And(tuple(col("hr").ne(str(i)) for i in range(10_000)))
    assert evaluate(bind(wide, SCHEMA), {"Hr": 10_000}) is True
    listed = bind(col("ds").isin([f"2024-01-{d:02d}" for d in range(1, 32)] * 1000), SCHEMA)
    assert isinstance(listed, In) and all(isinstance(v.value, dt.date) for v in listed.values)  # type: ignore[attr-defined]


# -- properties ------------------------------------------------------------------------------------------------------

OPS = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
INTEGRAL = ("tinyint", "smallint", "int", "bigint")


@settings(max_examples=300)
@given(
    st.sampled_from(INTEGRAL),
    st.sampled_from(sorted(OPS)),
    st.one_of(
        st.integers(-(2**70), 2**70),
        st.integers(-300, 300),
        st.decimals(min_value=-1000, max_value=1000, places=2, allow_nan=False, allow_infinity=False),
        st.integers(-300, 300).map(str),
    ),
    st.integers(-300, 300),
)
def test_integral_columns_compare_literals_by_exact_value(type_name: str, op: str, literal: Any, shift: int) -> None:
    dtype = parse_type(type_name)
    low, high = {"tinyint": (-128, 127), "smallint": (-32768, 32767), "int": (-(2**31), 2**31 - 1),
                 "bigint": (-(2**63), 2**63 - 1)}[type_name]
    value = min(max(shift if abs(shift) < 250 else (high if shift > 0 else low), low), high)
    expr = bind(Comparison(op, col("x"), lit(literal)), [("x", dtype)])
    exact = Decimal(literal) if isinstance(literal, str) else literal
    assert evaluate(expr, {"x": value}) is OPS[op](value, exact)
    assert evaluate(expr, {"x": None}) is None


@settings(max_examples=100)
@given(st.data())
def test_bind_is_idempotent_and_types_every_column(data: st.DataObject) -> None:
    schema = data.draw(schemas(types=ALL_TYPES))
    expr = data.draw(predicates(schema, bound=False, max_leaves=6))
    bound = bind(expr, schema)
    assert bind(bound, schema) == bound
    types = {name: parse_type(t) for name, t in schema}
    for node in walk(bound):
        if isinstance(node, Column):
            assert node.type == types[node.name]


@settings(max_examples=50)
@given(st.data())
def test_column_name_case_does_not_matter(data: st.DataObject) -> None:
    schema = data.draw(schemas(types=ALL_TYPES))
    expr = data.draw(predicates(schema, bound=False, max_leaves=6))
    upper = {name: name.upper() for name, _ in schema}

    def rename(node: Expr) -> Expr:
        return Column(upper[node.name]) if isinstance(node, Column) else node

    from sargable.expr.nodes import transform

    assert bind(transform(expr, rename), schema) == bind(expr, schema)
    assert bind(expr, [(name.upper(), t) for name, t in schema]) == bind(transform(expr, rename), [
        (name.upper(), t) for name, t in schema
    ])


def test_data_type_objects_are_accepted_in_schemas() -> None:
    bound = bind(col("x").eq("1"), [("x", DataType("int"))])
    assert bound.children()[1] == Literal(1, parse_type("int"))


@settings(max_examples=300)
@given(st.data())
def test_a_value_of_the_column_type_binds_to_itself(data: st.DataObject) -> None:
    dtype = data.draw(data_types())
    value = data.draw(values(dtype, nulls=False))
    coerced = coerce_literal(lit(value), dtype)
    assert coerced.value == value or (value != value and coerced.value != coerced.value)
    assert type(coerced.value) is type(value)


@pytest.mark.parametrize(
    ("value", "type_name"),
    [
        (Decimal(0), "date"),
        (dt.datetime(2024, 1, 1), "date"),
        (dt.date(2024, 1, 1), "timestamp"),
        ("2024-01-01", "date"),
        (True, "int"),
        (1.5, "decimal(5,2)"),
        (3, "string"),
        ("yes", "boolean"),
        (0, "null"),
    ],
)
def test_a_literal_whose_value_does_not_match_its_type_is_a_bind_error(value: Any, type_name: str) -> None:
    dtype = DataType("null") if type_name == "null" else parse_type(type_name)
    wrong = Literal(value, dtype)
    for expr in (Comparison("=", col("ds"), wrong), In(col("ds"), (wrong,)), Comparison("=", wrong, lit(1))):
        with pytest.raises(BindError, match=rf"literal {re.escape(repr(value))} .*declared as {re.escape(type_name)}"):
            bind(expr, SCHEMA)
    with pytest.raises(BindError, match="not a DataType"):
        bind(Comparison("=", col("ds"), Literal(dt.date(2024, 1, 1), "date")), SCHEMA)  # type: ignore[arg-type]


@settings(max_examples=200)
@given(st.data())
def test_a_literal_of_any_value_of_its_type_binds(data: st.DataObject) -> None:
    dtype = data.draw(data_types())
    value = data.draw(values(dtype))
    bound = bind(Comparison("=", Literal(value, dtype), Column("x")), [("x", dtype)])
    assert isinstance(bound, Comparison) and isinstance(bound.left, Literal)
