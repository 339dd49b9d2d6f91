"""The SearchArgument view: Hive's leaves, tree and printing, and soundness of the view against `evaluate`."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sargable.errors import SargableError
from sargable.expr.bind import bind
from sargable.expr.evaluate import evaluate
from sargable.expr.nodes import FALSE, NULL_LITERAL, TRUE, And, Column, Expr, Func, Not, Or, col, lit
from sargable.expr.sarg import LeafOperator, LeafType, SearchArgument, TreeOperator, TruthValue, to_sarg
from strategies import ALL_TYPES, pools_of, predicates, schemas, tables

SCHEMA = [
    ("event_id", "string"),
    ("x", "int"),
    ("y", "bigint"),
    ("d", "double"),
    ("day", "date"),
    ("at", "timestamp"),
    ("amount", "decimal(10,2)"),
    ("flag", "boolean"),
    ("a", "int"),
    ("b", "int"),
    ("c", "int"),
]
x, y = col("x"), col("y")


def sarg(expr: Expr) -> str:
    return str(to_sarg(bind(expr, SCHEMA)))


def test_the_seed_example() -> None:
    assert sarg(col("event_id").eq("1")) == "leaf-0 = (EQUALS event_id 1), expr = leaf-0"


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        (x.ne(1), "leaf-0 = (EQUALS x 1), expr = (not leaf-0)"),
        (x < 1, "leaf-0 = (LESS_THAN x 1), expr = leaf-0"),
        (x <= 1, "leaf-0 = (LESS_THAN_EQUALS x 1), expr = leaf-0"),
        (x > 1, "leaf-0 = (LESS_THAN_EQUALS x 1), expr = (not leaf-0)"),
        (x >= 1, "leaf-0 = (LESS_THAN x 1), expr = (not leaf-0)"),
        (x.null_safe_eq(1), "leaf-0 = (NULL_SAFE_EQUALS x 1), expr = leaf-0"),
        (x.isin(1, 2, None), "leaf-0 = (IN x 1 2 null), expr = leaf-0"),
        (x.notin(1, 2), "leaf-0 = (IN x 1 2), expr = (not leaf-0)"),
        (x.between(1, 5), "leaf-0 = (BETWEEN x 1 5), expr = leaf-0"),
        (x.not_between(1, 5), "leaf-0 = (BETWEEN x 1 5), expr = (not leaf-0)"),
        (x.is_null(), "leaf-0 = (IS_NULL x), expr = leaf-0"),
        (x.is_not_null(), "leaf-0 = (IS_NULL x), expr = (not leaf-0)"),
        (Not(x < 1), "leaf-0 = (LESS_THAN x 1), expr = (not leaf-0)"),
        (Not(x.null_safe_eq(1)), "leaf-0 = (NULL_SAFE_EQUALS x 1), expr = (not leaf-0)"),
        (col("flag"), "leaf-0 = (EQUALS flag true), expr = leaf-0"),
        (Not(col("flag")), "leaf-0 = (EQUALS flag true), expr = (not leaf-0)"),
        (x.notin(1, 2).__invert__(), "leaf-0 = (IN x 1 2), expr = leaf-0"),
        (col("x").__lt__(8589934592), "leaf-0 = (LESS_THAN x 8589934592), expr = leaf-0"),
        (col("day").eq("2024-01-01"), "leaf-0 = (EQUALS day 2024-01-01), expr = leaf-0"),
        (col("at") >= dt.date(2024, 1, 1), "leaf-0 = (LESS_THAN at 2024-01-01 00:00:00), expr = (not leaf-0)"),
        (col("amount").eq(Decimal("1.5")), "leaf-0 = (EQUALS amount 1.50), expr = leaf-0"),
        (col("d").eq(2), "leaf-0 = (EQUALS d 2.0), expr = leaf-0"),
        (col("flag").eq(False), "leaf-0 = (EQUALS flag false), expr = leaf-0"),
    ],
)
def test_leaves_as_hive_builds_them(expr: Expr, text: str) -> None:
    assert sarg(expr) == text


def test_several_leaves() -> None:
    assert sarg(And((x.eq(1), y.ne(2)))) == (
        "leaf-0 = (EQUALS x 1), leaf-1 = (EQUALS y 2), expr = (and leaf-0 (not leaf-1))"
    )
    assert sarg(Or((x.eq(1), And((x.eq(1), y.is_null()))))) == (
        "leaf-0 = (EQUALS x 1), leaf-1 = (IS_NULL y), expr = (and (or leaf-0 leaf-0) (or leaf-0 leaf-1))"
    )
    assert sarg(Not(Or((x.eq(1), y > 3)))) == (
        "leaf-0 = (EQUALS x 1), leaf-1 = (LESS_THAN_EQUALS y 3), expr = (and (not leaf-0) leaf-1)"
    )


def test_cnf_as_hive_distributes() -> None:
    a, b, c = col("a"), col("b"), col("c")
    expr = Or((And((a.eq(1), b.eq(2))), And((c.eq(3), x.eq(4))), y.eq(5)))
    assert sarg(expr) == (
        "leaf-0 = (EQUALS y 5), leaf-1 = (EQUALS a 1), leaf-2 = (EQUALS c 3), leaf-3 = (EQUALS b 2), "
        "leaf-4 = (EQUALS x 4), expr = (and (or leaf-0 leaf-1 leaf-2) (or leaf-0 leaf-3 leaf-2) "
        "(or leaf-0 leaf-1 leaf-4) (or leaf-0 leaf-3 leaf-4))"
    )


def test_or_over_too_many_combinations_is_a_maybe() -> None:
    wide = Or(tuple(And((col("a").eq(i), col("b").eq(i))) for i in range(9)))
    assert sarg(wide) == "expr = YES_NO_NULL"
    # as in Hive, maybes are folded before the CNF conversion, so the one CNF produces stays in the AND
    assert sarg(And((x.eq(1), wide))) == "leaf-0 = (EQUALS x 1), expr = (and leaf-0 YES_NO_NULL)"
    eight = Or(tuple(And((col("a").eq(i), col("b").eq(i))) for i in range(8)))
    assert to_sarg(bind(eight, SCHEMA)).expression.operator is TreeOperator.AND
    assert len(to_sarg(bind(eight, SCHEMA)).expression.children) == 256


def test_what_storage_cannot_test_is_a_maybe() -> None:
    like = col("event_id").like("a%")
    assert sarg(like) == "expr = YES_NO_NULL"
    assert sarg(And((x.eq(1), like))) == "leaf-0 = (EQUALS x 1), expr = leaf-0"
    assert sarg(Or((x.eq(1), like))) == "expr = YES_NO_NULL"
    assert sarg(Not(like)) == "expr = YES_NO_NULL"
    assert sarg(x.eq(col("a"))) == "expr = YES_NO_NULL"
    assert sarg(Func("lower", (col("event_id"),)).eq("a")) == "expr = YES_NO_NULL"
    assert sarg(col("event_id").rlike("a")) == "expr = YES_NO_NULL"


def test_constants() -> None:
    assert sarg(TRUE) == "expr = YES"
    assert sarg(FALSE) == "expr = NO"
    assert sarg(NULL_LITERAL) == "expr = NULL"
    assert sarg(Not(NULL_LITERAL)) == "expr = NULL"
    assert sarg(x.eq(NULL_LITERAL)) == "expr = NULL"
    assert sarg(x.null_safe_eq(NULL_LITERAL)) == "leaf-0 = (IS_NULL x), expr = leaf-0"
    assert sarg(And((x.eq(1), TRUE))) == "leaf-0 = (EQUALS x 1), expr = leaf-0"


def test_leaf_objects() -> None:
    argument = to_sarg(bind(And((x.eq("3"), col("day").isin("2024-01-01", "2024-01-02"))), SCHEMA))
    first, second = argument.leaves
    assert (first.operator, first.type, first.column, first.literal.value) == (  # type: ignore[union-attr]
        LeafOperator.EQUALS,
        LeafType.LONG,
        "x",
        3,
    )
    assert second.type is LeafType.DATE
    assert [v.value for v in second.literals] == [dt.date(2024, 1, 1), dt.date(2024, 1, 2)]  # type: ignore[union-attr]
    unbound = to_sarg(col("z").is_null())
    assert unbound.leaves[0].type is None
    assert str(unbound) == "leaf-0 = (IS_NULL z), expr = leaf-0"


def test_truth_values_follow_hive() -> None:
    T = TruthValue
    assert T.YES_NULL.or_(T.NO_NULL) is T.YES_NULL
    assert T.NULL.or_(T.NO_NULL) is T.NULL
    assert T.NULL.or_(T.YES_NO) is T.YES_NULL
    assert T.YES_NO.or_(T.NO_NULL) is T.YES_NO_NULL
    assert T.NULL.and_(T.YES_NULL) is T.NULL
    assert T.NULL.and_(T.YES_NO) is T.NO_NULL
    assert T.NO.and_(T.YES_NO_NULL) is T.NO
    assert T.NO_NULL.not_() is T.YES_NULL
    assert T.YES_NO_NULL.not_() is T.YES_NO_NULL
    assert T.NULL.not_() is T.NULL
    members = [T.YES, T.NO, T.NULL, T.YES_NULL, T.NO_NULL, T.YES_NO, T.YES_NO_NULL]
    assert [t.is_needed() for t in members] == [True, False, False, True, False, True, True]


TRUTH_SETS = st.sets(st.sampled_from([True, False, None]), min_size=1)


@given(TRUTH_SETS, TRUTH_SETS)
def test_truth_value_logic_matches_sql_evaluation(left: set, right: set) -> None:
    """and_/or_/not_ hold exactly the outcomes SQL gives over every pair of possible values (evaluate is the oracle)."""
    a, b = TruthValue.of(left), TruthValue.of(right)
    assert a.values() == left

    def outcomes(build) -> set:
        return {evaluate(build(lit(x), lit(y)), {}) for x in left for y in right}

    assert a.and_(b).values() == outcomes(lambda x, y: And((x, y)))
    assert a.or_(b).values() == outcomes(lambda x, y: Or((x, y)))
    assert a.not_().values() == {evaluate(Not(lit(x)), {}) for x in left}
    assert a.is_needed() == (True in left)


def test_evaluate_and_errors() -> None:
    argument = to_sarg(bind(And((x.eq(1), y.ne(2))), SCHEMA))
    assert argument.evaluate([TruthValue.YES, TruthValue.NO]) is TruthValue.YES
    assert argument.evaluate([TruthValue.YES_NO, TruthValue.YES]) is TruthValue.NO
    with pytest.raises(SargableError, match="need 2 leaf truth values"):
        argument.evaluate([TruthValue.YES])
    with pytest.raises(SargableError, match="expression"):
        to_sarg("x = 1")  # type: ignore[arg-type]


def test_deep_trees() -> None:
    deep: Expr = x.eq(1)
    for i in range(10_000):
        deep = Not(deep) if i % 3 else And((deep, y.ne(i)))
    argument = to_sarg(bind(deep, SCHEMA))
    assert isinstance(argument, SearchArgument)
    assert str(argument).startswith("leaf-0 = ")


TRUTH = {True: TruthValue.YES, False: TruthValue.NO, None: TruthValue.NULL}


@settings(max_examples=100)
@given(st.data())
def test_the_search_argument_is_sound(data: st.DataObject) -> None:
    """A row that satisfies the expression is never ruled out by the argument (Hive drops maybes from ANDs, so
    this is the guarantee: TRUE stays possible)."""
    schema = data.draw(schemas(types=ALL_TYPES, max_size=3))
    table = data.draw(tables(schema, min_size=1, max_size=6))
    expr = data.draw(predicates(schema, pools=pools_of(schema, table), max_leaves=8))
    argument = to_sarg(expr)
    for row in table:
        leaf_truths = [TRUTH[evaluate(leaf.to_expr(), row)] for leaf in argument.leaves]
        if evaluate(expr, row) is True:
            assert argument.evaluate(leaf_truths).is_needed()


EXACT_KINDS = frozenset({"compare", "in", "is_null", "bool_column", "constant"})


@settings(max_examples=100)
@given(st.data())
def test_without_maybes_the_search_argument_is_exact(data: st.DataObject) -> None:
    """Built only from leaves Hive can express (and small enough for its CNF), the argument's truth value is the
    expression's own, NULL included."""
    schema = data.draw(schemas(types=ALL_TYPES, max_size=3))
    table = data.draw(tables(schema, min_size=1, max_size=6))
    expr = data.draw(predicates(schema, kinds=EXACT_KINDS, pools=pools_of(schema, table), max_leaves=6))
    argument = to_sarg(expr)
    assert "YES_NO_NULL" not in str(argument)
    for leaf in argument.leaves:
        assert isinstance(leaf.to_expr().children()[0], Column)
    for row in table:
        leaf_truths = [TRUTH[evaluate(leaf.to_expr(), row)] for leaf in argument.leaves]
        assert argument.evaluate(leaf_truths) is TRUTH[evaluate(expr, row)]
