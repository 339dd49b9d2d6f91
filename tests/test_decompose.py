"""decompose: the partition part is exact (partition AND residual is TRUE on exactly the rows the predicate is),
implied partition and file predicates are sound (TRUE wherever the predicate is), and the parts reference only the
columns they may."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sargable as sg
from sargable.analyze import Decomposed, decompose
from sargable.errors import PushdownError
from sargable.expr.evaluate import evaluate
from sargable.expr.nodes import TRUE, Expr, Not, Or, and_, col, columns_of
from strategies import PARTITION_KEY_TYPES, pools_of, predicates, tables

DATA_TYPES = ("string", "int", "double", "date", "decimal(10,2)", "boolean", "float")


def test_the_seed_example_prunes_partitions_from_an_or() -> None:
    parts = decompose(
        "((ds = '2024-01-01' AND x > 5) OR (ds = '2024-01-02' AND y < 3)) AND hr = 3 AND upper(s) = 'A'",
        partition_keys=["ds", "hr"],
        stats_columns=["x", "y", "s"],
    )
    assert isinstance(parts, Decomposed)
    assert parts.partition == sg.parse("hr = 3 AND ds IN ('2024-01-01', '2024-01-02')")
    assert parts.files == sg.parse("x > 5 OR y < 3")
    assert parts.residual == sg.parse(
        "((ds = '2024-01-01' AND x > 5) OR (ds = '2024-01-02' AND y < 3)) AND upper(s) = 'A'"
    )


def test_exact_partition_conjuncts_are_not_reapplied() -> None:
    partition, files, residual = decompose("ds >= '2024-01-01' AND hr IN (1, 2)", ["ds", "hr"], ["x"])
    assert partition == sg.parse("ds >= '2024-01-01' AND hr IN (1, 2)") and files is None and residual is None


def test_file_statistics_part_stays_in_the_residual() -> None:
    partition, files, residual = decompose("x > 5 AND s LIKE 'a%' AND lower(s) = 'b'", ["ds"], ["x", "s"])
    assert partition is None
    assert files == sg.parse("x > 5 AND s LIKE 'a%'")
    assert residual == sg.parse("x > 5 AND s LIKE 'a%' AND lower(s) = 'b'")


def test_implied_file_predicates_drop_what_statistics_cannot_answer() -> None:
    _, files, _ = decompose("(x > 5 AND upper(s) = 'A') OR (x < 0 AND y = 1)", [], ["x", "y", "s"])
    assert files == sg.parse("x > 5 OR x < 0 AND y = 1")
    _, files, _ = decompose("(x > 5 AND z = 1) OR w = 2", [], ["x"])
    assert files is None
    _, files, _ = decompose("NOT (x <= 5 OR z = 1)", [], ["x"])
    assert files == sg.parse("x > 5")


def test_constants_and_unpartitioned_tables() -> None:
    assert decompose("1 = 0 AND x = 1", ["ds"], ["x"]).partition == sg.parse("1 = 0")
    assert decompose("x = 1", [], []) == Decomposed(None, None, sg.parse("x = 1"))
    assert decompose("ds = '2024-01-01'", ["DS"], []) == Decomposed(sg.parse("ds = '2024-01-01'"), None, None)


def test_bad_arguments() -> None:
    for keys, stats in (("ds", []), ([1], []), (["ds"], None), ([""], [])):
        with pytest.raises(PushdownError):
            decompose("x = 1", keys, stats)  # type: ignore[arg-type]
    with pytest.raises(PushdownError):
        decompose(3, [], [])  # type: ignore[arg-type]


def test_deep_predicates_do_not_recurse() -> None:
    expr: Expr = col("ds").eq("2024-01-01")
    for index in range(5_000):
        expr = Not(expr) if index % 3 == 0 else (Or((expr, col("x") > index)) if index % 2 else and_(expr, TRUE))
    parts = decompose(and_(expr, col("hr").eq(3)), ["ds", "hr"], ["x"])
    assert parts.partition is not None and parts.residual is not None


@settings(max_examples=150)
@given(st.data())
def test_partition_part_is_exact_and_implied_parts_are_sound(data: st.DataObject) -> None:
    keys = data.draw(st.lists(st.sampled_from(PARTITION_KEY_TYPES), min_size=1, max_size=2))
    columns = data.draw(st.lists(st.sampled_from(DATA_TYPES), min_size=1, max_size=2))
    schema = [(f"p{i}", t) for i, t in enumerate(keys)] + [(f"c{i}", t) for i, t in enumerate(columns)]
    rows = data.draw(tables(schema, max_size=10))
    conjuncts = data.draw(st.lists(predicates(schema, pools=pools_of(schema, rows), max_leaves=4), min_size=1,
                                   max_size=3))
    expr = and_(*conjuncts)
    partition_keys = [name for name, _ in schema if name.startswith("p")]
    stats_columns = data.draw(st.lists(st.sampled_from([n for n, _ in schema if n.startswith("c")]), unique=True))
    partition, files, residual = decompose(expr, partition_keys, stats_columns)
    if partition is not None:
        assert columns_of(partition) <= set(partition_keys)
    if files is not None:
        assert columns_of(files) <= set(stats_columns)
    exact = and_(partition if partition is not None else TRUE, residual if residual is not None else TRUE)
    for row in rows:
        matches = evaluate(expr, row) is True
        assert (evaluate(exact, row) is True) == matches
        if matches:
            assert partition is None or evaluate(partition, row) is True
            assert files is None or evaluate(files, row) is True
