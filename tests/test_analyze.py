"""PredicateAnalyzer (seed 001): which top-level conjuncts become search conditions, and that conditions plus
residual are exactly the original predicate on every row."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sargable as sg
from sargable.analyze import SUPPORTED_OPS, PredicateAnalyzer, SearchCondition
from sargable.errors import PushdownError
from sargable.expr.evaluate import evaluate
from sargable.expr.nodes import TRUE, And, Between, Column, Comparison, In, IsNull, Like, Literal, and_, col
from strategies import ALL_TYPES, pools_of, predicates, schemas, tables


def analyzer(*ops: str) -> PredicateAnalyzer:
    result = PredicateAnalyzer()
    for op in ops:
        result.add_comparison_op(op)
    return result


def test_nothing_is_sargable_until_an_operator_is_registered() -> None:
    expr = sg.parse("x = 1 AND y > 2")
    assert PredicateAnalyzer().analyze(expr) == ([], expr)
    conditions, residual = analyzer("=").analyze(expr)
    assert [(c.column, c.op, c.constant) for c in conditions] == [("x", "=", 1)]
    assert residual == sg.parse("y > 2")


def test_constant_on_the_left_is_flipped_and_the_original_kept() -> None:
    expr = sg.parse("3 < x AND 10 >= y AND 1 = z")
    conditions, residual = analyzer(">", "<=", "=").analyze(expr)
    assert [(c.column, c.op, c.constant) for c in conditions] == [("x", ">", 3), ("y", "<=", 10), ("z", "=", 1)]
    assert conditions[0].expr == sg.parse("3 < x") and residual is None


def test_only_top_level_conjuncts_are_analysed() -> None:
    expr = sg.parse("(x = 1 OR x = 2) AND NOT (y = 3) AND z = 4")
    conditions, residual = analyzer("=").analyze(expr)
    assert [c.column for c in conditions] == ["z"]
    assert residual == sg.parse("(x = 1 OR x = 2) AND NOT (y = 3)")
    single = sg.parse("x = 1 OR y = 2")
    assert analyzer("=").analyze(single) == ([], single)


def test_unsupported_shapes_stay_residual() -> None:
    expr = and_(
        Comparison("=", sg.expr.Func("upper", (col("s"),)), Literal("A", sg.parse_type("string"))),
        Comparison("=", col("x"), col("y")),
        Comparison("=", col("x"), Literal(None, sg.parse_type("int"))),
        Comparison("=", Literal(1, sg.parse_type("int")), Literal(1, sg.parse_type("int"))),
    )
    conditions, residual = analyzer("=").analyze(expr)
    assert conditions == [] and residual == expr


def test_every_supported_operator() -> None:
    expr = sg.parse(
        "a IN (1, NULL, 2) AND b NOT IN (1, 2) AND c NOT IN (1, NULL) AND d BETWEEN 1 AND 5 "
        "AND e NOT BETWEEN 1 AND NULL AND f IS NULL AND g IS NOT NULL AND h LIKE 'ab%' AND i NOT LIKE '%z' "
        "AND j <=> NULL AND k != 3"
    )
    conditions, residual = analyzer(*SUPPORTED_OPS).analyze(expr)
    found = {c.column: (c.op, c.constant) for c in conditions}
    assert found == {
        "a": ("in", (1, 2)),
        "b": ("not in", (1, 2)),
        "d": ("between", (1, 5)),
        "f": ("is null", None),
        "g": ("is not null", None),
        "h": ("like", "ab%"),
        "i": ("not like", "%z"),
        "j": ("<=>", None),
        "k": ("!=", 3),
    }
    assert residual == sg.parse("c NOT IN (1, NULL) AND e NOT BETWEEN 1 AND NULL")
    assert isinstance(conditions[0].expr, In) and isinstance(conditions[2].expr, Between)
    assert isinstance(conditions[3].expr, IsNull) and isinstance(conditions[5].expr, Like)


def test_operator_names_are_normalized_and_checked() -> None:
    result = analyzer("IS  NULL", "In")
    assert [c.op for c in result.analyze(sg.parse("x IS NULL AND y IN (1)"))[0]] == ["is null", "in"]
    for bad in ("~", "", None, "like all"):
        with pytest.raises(PushdownError):
            PredicateAnalyzer().add_comparison_op(bad)  # type: ignore[arg-type]


def test_allowed_columns() -> None:
    expr = sg.parse("x = 1 AND Y = 2 AND z = 3")
    result = analyzer("=")
    assert len(result.analyze(expr)[0]) == 3
    result.clear_allowed_columns()
    assert result.analyze(expr) == ([], expr)
    result.allow_column("y")
    result.allow_column("X")
    conditions, residual = result.analyze(expr)
    assert [c.column for c in conditions] == ["x", "Y"] and residual == sg.parse("z = 3")
    restricted = analyzer("=")
    restricted.allow_column("z")
    assert [c.column for c in restricted.analyze(expr)[0]] == ["z"]
    with pytest.raises(PushdownError):
        restricted.allow_column("")


def test_translate_rebuilds_the_conjunction() -> None:
    expr = sg.parse("x = 1 AND y > 2 AND upper(s) = 'A'")
    result = analyzer("=", ">")
    conditions, residual = result.analyze(expr)
    assert result.translate(conditions) == sg.parse("x = 1 AND y > 2")
    assert result.translate([]) == TRUE
    assert and_(result.translate(conditions), residual) == expr
    with pytest.raises(PushdownError):
        result.translate(["x = 1"])  # type: ignore[list-item]
    with pytest.raises(PushdownError):
        result.analyze(42)  # type: ignore[arg-type]


def test_bound_expressions_keep_typed_constants() -> None:
    bound = sg.bind(sg.parse("ds >= '2024-01-01' AND hr IN ('3', 4)"), [("ds", "date"), ("hr", "int")])
    conditions, residual = analyzer(">=", "in").analyze(bound)
    assert [c.constant for c in conditions] == [dt.date(2024, 1, 1), (3, 4)] and residual is None


@settings(max_examples=120)
@given(st.data())
def test_conditions_and_residual_are_exactly_the_predicate(data: st.DataObject) -> None:
    schema = data.draw(schemas(ALL_TYPES, max_size=3))
    rows = data.draw(tables(schema, max_size=8))
    parts = data.draw(st.lists(predicates(schema, pools=pools_of(schema, rows), max_leaves=2), min_size=1, max_size=4))
    expr = and_(*parts)
    result = analyzer(*data.draw(st.lists(st.sampled_from(SUPPORTED_OPS), unique=True)))
    conditions, residual = result.analyze(expr)
    rebuilt = and_(result.translate(conditions), residual if residual is not None else TRUE)
    types = dict(schema)
    for condition in conditions:
        assert isinstance(condition, SearchCondition)
        if condition.op in ("=", "!=", "<", "<=", ">", ">=", "<=>"):
            column = Column(condition.column, sg.parse_type(types[condition.column]))
            literal_type = next(n.type for n in sg.expr.walk(condition.expr) if isinstance(n, Literal))
            direct = Comparison(condition.op, column, Literal(condition.constant, literal_type))
            for row in rows:
                assert evaluate(direct, row) == evaluate(condition.expr, row)
    for row in rows:
        assert evaluate(rebuilt, row) == evaluate(expr, row)
    if isinstance(expr, And):
        assert len(conditions) + (
            len(residual.children()) if isinstance(residual, And) else residual is not None
        ) == len(expr.children())
