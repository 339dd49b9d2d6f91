"""Normalization: every rewrite preserves three-valued evaluation on every row (checked on e and on NOT e, which
tells FALSE from NULL), has the shape it promises, and copes with huge and deep trees."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sargable.errors import ExpressionTooComplexError, SargableError
from sargable.expr.bind import bind
from sargable.expr.evaluate import evaluate_many
from sargable.expr.nodes import (
    FALSE,
    NULL_LITERAL,
    TRUE,
    And,
    Between,
    Column,
    Comparison,
    Expr,
    In,
    IsNull,
    Literal,
    Not,
    Or,
    col,
    lit,
    walk,
)
from sargable.expr.normalize import (
    empty_range,
    flip_literals,
    fold_constants,
    full_range,
    merge_ranges,
    negate,
    normalize,
    range_constraint,
    to_cnf,
    to_dnf,
    to_nnf,
)
from strategies import ALL_TYPES, PARTITION_KEY_TYPES, pools_of, predicates, schemas, tables

STEPS: dict[str, Callable[[Expr], Expr]] = {
    "to_nnf": to_nnf,
    "flip_literals": flip_literals,
    "fold_constants": fold_constants,
    "merge_ranges": merge_ranges,
    "normalize": normalize,
    "to_dnf": lambda e: to_dnf(e, max_terms=256),
    "to_cnf": lambda e: to_cnf(e, max_terms=256),
}


def assert_same_truth(original: Expr, rewritten: Expr, table: list[dict[str, Any]], step: str) -> None:
    assert evaluate_many(rewritten, table) == evaluate_many(original, table), step


def check_all_steps(expr: Expr, table: list[dict[str, Any]]) -> None:
    for name, step in STEPS.items():
        for candidate in (expr, Not(expr)):
            try:
                rewritten = step(candidate)
            except ExpressionTooComplexError:
                continue
            assert_same_truth(candidate, rewritten, table, name)
    assert_same_truth(Not(expr), negate(expr), table, "negate")


@settings(max_examples=120)
@given(st.data())
def test_every_step_preserves_evaluation(data: st.DataObject) -> None:
    schema = data.draw(schemas(types=ALL_TYPES, max_size=4))
    table = data.draw(tables(schema, min_size=1, max_size=10))
    expr = data.draw(predicates(schema, pools=pools_of(schema, table), max_leaves=8))
    check_all_steps(expr, table)


RANGE_KINDS = frozenset({"compare", "in", "between", "is_null", "constant"})


@settings(max_examples=200)
@given(st.data())
def test_range_merging_on_one_or_two_columns_preserves_evaluation(data: st.DataObject) -> None:
    schema = data.draw(schemas(types=(*PARTITION_KEY_TYPES, "double", "float"), min_size=1, max_size=2))
    table = data.draw(tables(schema, min_size=1, max_size=12))
    few = {name: list(dict.fromkeys(values))[:3] for name, values in pools_of(schema, table).items()}
    exotic = data.draw(st.booleans())
    expr = data.draw(predicates(schema, kinds=RANGE_KINDS, pools=few, exotic=exotic, max_leaves=10))
    for candidate in (expr, Not(expr)):
        for name in ("merge_ranges", "normalize"):
            assert_same_truth(candidate, STEPS[name](candidate), table, name)


@settings(max_examples=60)
@given(st.data())
def test_unbound_expressions_normalize_exactly_too(data: st.DataObject) -> None:
    schema = data.draw(schemas(types=("int", "string", "date"), max_size=2))
    table = data.draw(tables(schema, min_size=1, max_size=8))
    expr = data.draw(predicates(schema, kinds=RANGE_KINDS, pools=pools_of(schema, table), exotic=False, bound=False))
    for candidate in (expr, Not(expr)):
        assert_same_truth(candidate, normalize(candidate), table, "normalize")


# -- shapes ----------------------------------------------------------------------------------------------------------

CONNECTIVES = (And, Or, Not)


def is_leaf(node: Expr) -> bool:
    return not isinstance(node, CONNECTIVES)


@settings(max_examples=80)
@given(st.data())
def test_shapes(data: st.DataObject) -> None:
    schema = data.draw(schemas(types=ALL_TYPES, max_size=3))
    expr = data.draw(predicates(schema, max_leaves=8))
    nnf = to_nnf(Not(expr))
    for node in walk(nnf):
        if isinstance(node, Not):
            child = node.child
            assert is_leaf(child) and not isinstance(child, (In, Between, IsNull, Literal))
            assert not isinstance(child, Comparison) or child.op == "<=>"
    for node in walk(flip_literals(expr)):
        if isinstance(node, Comparison):
            assert not (isinstance(node.left, Literal) and not isinstance(node.right, Literal))
    for node in walk(fold_constants(expr)):
        if isinstance(node, (And, Or)):
            assert not any(child in (TRUE, FALSE) for child in node.children())
            assert sum(1 for child in node.children() if child == NULL_LITERAL) <= 1
    merged = merge_ranges(to_nnf(expr))
    assert merge_ranges(merged) == merged
    normal = normalize(expr)
    assert normalize(normal) == normal
    try:
        dnf = to_dnf(expr, max_terms=256)
        cnf = to_cnf(expr, max_terms=256)
    except ExpressionTooComplexError:
        return
    for form, outer, inner in ((dnf, Or, And), (cnf, And, Or)):
        terms = form.children() if isinstance(form, outer) else (form,)
        for term in terms:
            parts = term.children() if isinstance(term, inner) else (term,)
            assert all(is_leaf(p) or (isinstance(p, Not) and is_leaf(p.child)) for p in parts)


# -- examples --------------------------------------------------------------------------------------------------------

A = col("a")
SCHEMA = [("a", "int"), ("b", "string"), ("d", "double"), ("day", "date")]


def norm(expr: Expr) -> Expr:
    return normalize(bind(expr, SCHEMA))


def b(expr: Expr) -> Expr:
    return bind(expr, SCHEMA)


def test_issue_examples() -> None:
    assert norm(And((A > 1, A > 5, A <= 9))) == b(And((A > 5, A <= 9)))
    assert norm(And((A >= 1, A >= 5, A <= 9))) == b(A.between(5, 9))
    assert norm(And((A > 5, A < 3))) == empty_range(b(A.eq(1)).children()[0])
    assert norm(And((A.isin(1, 5, 9), A > 4))) == b(A.isin(5, 9))


def test_range_examples() -> None:
    a = b(A.eq(0)).children()[0]
    assert norm(Comparison("<", lit(10), A)) == b(A > 10)
    assert norm(And((A >= 5, A <= 5))) == b(A.eq(5))
    assert norm(And((A >= 5, A.ne(5), A <= 9))) == b(And((A > 5, A <= 9)))
    assert norm(And((A > 1, A.ne(3), A.ne(20), A.notin(4, 5)))) == b(And((A > 1, A.notin(3, 4, 5, 20))))
    assert norm(And((A.eq(3), A.eq(4)))) == empty_range(a)
    assert norm(And((A.isin(1, 2, 3), A.isin(2, 3, 4), A.ne(3)))) == b(A.eq(2))
    assert norm(Or((A < 5, A >= 5))) == full_range(a)
    assert norm(Or((A < 5, A > 5))) == b(A.ne(5))
    assert norm(Or((A.eq(1), A.eq(2), A > 7))) == b(Or((A.isin(1, 2), A > 7)))
    assert norm(Or((A.between(1, 5), A.between(3, 9)))) == b(A.between(1, 9))
    assert norm(Or((A < 1, A > 9))) == b(Or((A < 1, A > 9)))
    assert norm(And((Decimal("3.5") < A, A < 8589934592))) == b(And((Decimal("3.5") < A, A < 8589934592)))
    day = col("day")
    assert norm(And((day >= "2024-01-01", day < dt.date(2024, 2, 1), day > "2023-12-01"))) == b(
        And((day >= "2024-01-01", day < "2024-02-01"))
    )
    d = col("d")
    assert norm(And((d > 1.0, d < float("nan")))) == b(And((d > 1.0, d < float("nan"))))


def test_constant_folding_keeps_null_semantics() -> None:
    x = A.eq(1)
    assert fold_constants(And((x, TRUE))) == x
    assert fold_constants(And((x, FALSE))) == FALSE
    assert fold_constants(Or((x, TRUE))) == TRUE
    assert fold_constants(Or((x, FALSE))) == x
    assert fold_constants(Or((x, NULL_LITERAL))) == Or((x, NULL_LITERAL))
    assert fold_constants(And((x, NULL_LITERAL, NULL_LITERAL, x))) == And((x, NULL_LITERAL))
    assert fold_constants(Comparison("<", lit(1), lit(2))) == TRUE
    assert fold_constants(A.eq(NULL_LITERAL)) == NULL_LITERAL
    assert fold_constants(A.null_safe_eq(NULL_LITERAL)) == IsNull(A)
    assert fold_constants(A.isin(None, None)) == NULL_LITERAL
    assert fold_constants(A.between(None, None)) == NULL_LITERAL
    assert fold_constants(A.between(None, 3)) == A.between(None, 3)
    assert fold_constants(Not(NULL_LITERAL)) == NULL_LITERAL
    assert fold_constants(lit("x").like("x%")) == TRUE
    assert fold_constants(IsNull(lit(None))) == TRUE
    assert fold_constants(Not(A.null_safe_eq(NULL_LITERAL))) == A.is_not_null()
    assert normalize(Not(A.null_safe_eq(NULL_LITERAL))) == normalize(A.is_not_null()) == A.is_not_null()


def test_nnf_examples() -> None:
    x, y = A.eq(1), col("b").like("a%")
    assert to_nnf(Not(And((x, y)))) == Or((A.ne(1), col("b").not_like("a%")))
    assert to_nnf(Not(Not(x))) == x
    assert to_nnf(Not(A.null_safe_eq(1))) == Not(A.null_safe_eq(1))
    assert to_nnf(Not(A.isin(1, 2))) == A.notin(1, 2)
    assert to_nnf(Not(A.between(1, 2))) == A.not_between(1, 2)
    assert to_nnf(Not(A.is_null())) == A.is_not_null()
    assert to_nnf(Not(Column("flag"))) == Not(Column("flag"))
    assert to_nnf(Not(TRUE)) == FALSE
    assert negate(A < 3) == (A >= 3)


def test_dnf_and_cnf_caps() -> None:
    def pairs(count: int) -> Expr:
        return And(tuple(Or((col(f"x{i}").eq(1), col(f"y{i}").eq(1))) for i in range(count)))

    assert len(to_dnf(pairs(10), max_terms=1024).children()) == 1024
    with pytest.raises(ExpressionTooComplexError, match="more than 1024 terms"):
        to_dnf(pairs(11), max_terms=1024)
    with pytest.raises(ExpressionTooComplexError, match="CNF"):
        to_cnf(Not(pairs(60)), max_terms=1000)
    assert to_cnf(pairs(60), max_terms=60) == pairs(60)
    with pytest.raises(SargableError, match="max_terms"):
        to_dnf(pairs(2), max_terms=0)
    with pytest.raises(SargableError, match="expression"):
        normalize("a = 1")  # type: ignore[arg-type]


def test_dnf_example() -> None:
    expr = And((Or((A.eq(1), A.eq(2))), Or((col("b").eq("x"), Not(A.null_safe_eq(3))))))
    assert to_dnf(expr) == Or(
        (
            And((A.eq(1), col("b").eq("x"))),
            And((A.eq(1), Not(A.null_safe_eq(3)))),
            And((A.eq(2), col("b").eq("x"))),
            And((A.eq(2), Not(A.null_safe_eq(3)))),
        )
    )


def test_huge_and_deep_trees() -> None:
    listed = bind(And((col("a").isin(list(range(100_000))), col("a") >= 50_000)), SCHEMA)
    merged = normalize(listed)
    assert isinstance(merged, In) and len(merged.values) == 50_000
    wide = And(tuple(Or((col("a").eq(i), col("b").eq(str(i)))) for i in range(10_000)))
    assert normalize(wide) == wide
    deep: Expr = col("a").eq(0)
    for i in range(5_000):
        deep = Not(Or((deep, col("a").eq(i + 1)))) if i % 2 else And((deep, col("b").is_not_null()))
    rewritten = normalize(deep)
    rows = [{"a": v, "b": s} for v in (0, 1, 2, None) for s in ("x", None)]
    assert evaluate_many(rewritten, rows) == evaluate_many(deep, rows)
    assert to_nnf(rewritten) == rewritten


def test_range_constraint_recognizes_leaves() -> None:
    assert range_constraint(Comparison(">", lit(3), A)) == (A, "<", (lit(3),))
    assert range_constraint(A.isin(1, None)) is None
    assert range_constraint(A.not_between(1, 2)) == (A, "notbetween", (lit(1), lit(2)))
    assert range_constraint(A.null_safe_eq(1)) is None
    assert range_constraint(Comparison("=", lit(1), lit(2))) is None


def test_incomparable_unbound_literals_are_left_alone() -> None:
    expr = And((A.eq(1), A.eq("x")))
    assert merge_ranges(expr) == expr
