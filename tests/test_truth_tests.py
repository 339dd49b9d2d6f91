"""`p IS [NOT] TRUE|FALSE`: rewritten into ordinary nodes, exact in three-valued logic.

The oracle is the definition applied to `p`'s own three-valued result: `p IS TRUE` is `p` being TRUE (never NULL),
`p IS FALSE` is `p` being FALSE; DuckDB evaluating `(p) IS TRUE` over the same rows checks the same thing again.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sargable.expr import Not, bind, col, evaluate, evaluate_many, lit, parse, render
from sargable.expr.truth_tests import is_false, is_true
from strategies import pools_of, predicates, schemas, tables
from test_evaluate import DUCK_KINDS, DUCK_TYPES, duck_three_valued, to_duckdb


@settings(max_examples=200)
@given(st.data())
def test_is_true_and_is_false_follow_the_definition(data: st.DataObject) -> None:
    schema = data.draw(schemas(max_size=4))
    table = data.draw(tables(schema, max_size=8))
    predicate = data.draw(predicates(schema, pools=pools_of(schema, table), max_leaves=6, bound=False))
    bound = bind(predicate, schema)
    truths = evaluate_many(bound, table)
    assert evaluate_many(bind(is_true(predicate), schema), table) == [t is True for t in truths]
    assert evaluate_many(bind(is_false(predicate), schema), table) == [t is False for t in truths]


@settings(max_examples=60)
@given(st.data())
def test_parsed_truth_tests_agree_with_duckdb(data: st.DataObject) -> None:
    schema = data.draw(schemas(types=DUCK_TYPES, max_size=4))
    table = data.draw(tables(schema, max_size=8))
    predicate = data.draw(predicates(schema, kinds=DUCK_KINDS, pools=pools_of(schema, table), max_leaves=5))
    test = data.draw(st.sampled_from(["TRUE", "FALSE", "NOT TRUE", "NOT FALSE"]))
    parsed = bind(parse(f"({render(predicate)}) IS {test}"), schema)
    (expected,) = duck_three_valued(schema, table, [predicate])
    wanted = {"TRUE": 1, "FALSE": 0, "NOT TRUE": 1, "NOT FALSE": 0}[test]
    negate = test.startswith("NOT")
    assert [int(evaluate(parsed, row)) for row in table] == [int((v == wanted) != negate) for v in expected], to_duckdb(
        predicate
    )


def test_rewrites_use_null_tests_only_where_a_leaf_can_be_null() -> None:
    assert parse("a = 1 is true") == (col("a").eq(1) & col("a").is_not_null())
    assert parse("a = 1 is false") == (Not(col("a").eq(1)) & col("a").is_not_null())
    assert parse("a <=> 1 is false") == Not(col("a").null_safe_eq(1))
    assert parse("a is null is not true") == Not(col("a").is_null())
    assert parse("flag is true") == col("flag").null_safe_eq(True)
    assert parse("(a = 1 or b = 2) is false") == (
        (Not(col("a").eq(1)) & col("a").is_not_null()) & (Not(col("b").eq(2)) & col("b").is_not_null())
    )
    assert parse("a in (1, null) is true") == ((col("a").eq(1) & col("a").is_not_null()) | lit(False))
    assert parse("(a) is null") == col("a").is_null()


def test_deep_truth_tests_do_not_recurse() -> None:
    depth = 2_000
    text = "(" * depth + "a = 1" + ") is not false" * depth
    expr = parse(text)
    assert evaluate(bind(expr, [("a", "int")]), {"a": None}) is True
    assert evaluate(bind(expr, [("a", "int")]), {"a": 1}) is True
