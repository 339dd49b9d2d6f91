"""Data skipping: `may_match` / `file_truth` are sound against `evaluate` on the rows themselves, `select_files`
(vectorized over Arrow) agrees with `may_match` everywhere, both agree with an independent evaluator
(`skipping_oracle`), and each named semantic case behaves as specified."""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from collections import Counter
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sargable as sg
import skipping_oracle
from sargable.errors import PushdownError, SargableError, StatisticsError
from sargable.expr.evaluate import evaluate
from sargable.expr.nodes import FALSE, TRUE, Column, Comparison, Expr, Not, Or, and_, col, lit, or_
from sargable.skipping import FileStatsTable, Truth, TruthValue, file_truth, may_match, select_files, truth_value
from sargable.skipping.leaves import compile_predicate
from sargable.skipping.table import arrow_type
from sargable.stats import ColumnStats, FileStats
from sargable.types import parse_type
from strategies import ALL_TYPES, STAT_MODES, degraded_stats, pools_of, predicates, schemas, tables

TIGHTNESS: Counter[str] = Counter()
"""Files without a matching row seen by the soundness properties, and how many of them were skipped."""


@pytest.fixture(scope="module", autouse=True)
def _report_tightness(request: pytest.FixtureRequest) -> Any:
    """Print how many generated files without a match were skipped, and keep the figures in pytest's cache
    (`.pytest_cache/v/sargable/skipping_tightness`) for docs/benchmarks.md."""
    yield
    empty, skipped = TIGHTNESS["files without matches"], TIGHTNESS["skipped"]
    if not empty:
        return
    line = (
        f"data-skipping tightness: skipped {skipped} of {empty} generated files without a matching row "
        f"({100 * skipped / empty:.1f}%); {TIGHTNESS['all']} files proven ALL"
    )
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        cache.set("sargable/skipping_tightness", dict(TIGHTNESS))
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line("")
            reporter.write_line(line)


# -- generated files ---------------------------------------------------------------------------------------------------



@st.composite
def files_of(draw: st.DrawFn, schema: list[tuple[str, str]], rows_per_file: int = 6) -> list[tuple[FileStats, list]]:
    """Small files of random rows (NULL, NaN and edge values included) with their statistics in varied states."""
    out = []
    for index in range(draw(st.integers(1, 4))):
        rows = draw(tables(schema, max_size=rows_per_file))
        columns: dict[str, ColumnStats] = {}
        partition: dict[str, Any] = {}
        for name, type_text in schema:
            values = [row[name] for row in rows]
            exact = ColumnStats.from_values(values)
            constant = len({repr(v) for v in values}) == 1 and rows
            if constant and draw(st.integers(0, 5)) == 0:
                partition[name] = values[0]
                continue
            mode = draw(st.sampled_from(STAT_MODES))
            degraded = degraded_stats(exact, mode, parse_type(type_text).is_string, draw(st.integers(0, 3)))
            if degraded is not None:
                columns[name] = degraded
        file = FileStats(f"f{index}", len(rows), 100, columns, partition or None)
        out.append((file, rows))
    return out


def _check_sound(predicate: Expr, schema: list[tuple[str, str]], files: list[tuple[FileStats, list]]) -> None:
    for file, rows in files:
        results = [evaluate(predicate, row) for row in rows]
        truth = file_truth(predicate, file, schema)
        may = may_match(predicate, file, schema)
        assert may == (truth is not Truth.NONE)
        if not may:
            assert True not in results, f"{file} was skipped but holds a matching row"
        if truth is Truth.ALL:
            assert all(r is True for r in results), f"{file} was proven ALL but a row does not match"
        outcomes = truth_value(predicate, file, schema)
        for result in results:
            bit = TruthValue.YES if result is True else TruthValue.NO if result is False else TruthValue.NULL
            assert bit in outcomes
        if True not in results:
            TIGHTNESS["files without matches"] += 1
            TIGHTNESS["skipped"] += not may
        TIGHTNESS["all"] += truth is Truth.ALL


def _check_agreement(predicate: Expr, schema: list[tuple[str, str]], listed: list[FileStats]) -> None:
    program = compile_predicate(predicate, schema)
    for f in listed:
        assert truth_value(predicate, f, schema) == TruthValue(skipping_oracle.file_outcomes(program, f))
    expected = [f.path for f in listed if may_match(predicate, f, schema)]
    assert [f.path for f in select_files(predicate, listed, schema)] == expected
    table = FileStatsTable.from_files(listed, schema)
    truths = [file_truth(predicate, f, schema).value for f in listed]
    assert table.truth(predicate).to_pylist() == truths


@settings(max_examples=250)
@given(st.data())
def test_may_match_and_truth_are_sound_and_select_files_agrees(data: st.DataObject) -> None:
    schema = data.draw(schemas(ALL_TYPES, max_size=3))
    files = data.draw(files_of(schema))
    pools = pools_of(schema, [row for _, rows in files for row in rows])
    predicate = data.draw(predicates(schema, pools=pools, max_leaves=5))
    _check_sound(predicate, schema, files)
    _check_agreement(predicate, schema, [f for f, _ in files])


@settings(max_examples=60)
@given(st.data())
def test_large_in_lists_and_value_sets_agree(data: st.DataObject) -> None:
    """IN lists past the vectorized small-set threshold take the sort-based path; it must agree too."""
    schema = data.draw(schemas(types=("int", "string", "date", "decimal(10,2)", "double"), max_size=2))
    files = data.draw(files_of(schema))
    name, type_text = data.draw(st.sampled_from(schema))
    pool = [row[name] for _, rows in files for row in rows if row[name] is not None]
    extra = data.draw(st.lists(tables([(name, type_text)], min_size=1, max_size=30), max_size=1))
    values = pool + [row[name] for t in extra for row in t if row[name] is not None]
    if not values:
        values = [None]
    predicate = sg.bind(sg.expr.In(Column(name), tuple(lit(v) for v in values[:40]), data.draw(st.booleans())), schema)
    _check_sound(predicate, schema, files)
    _check_agreement(predicate, schema, [f for f, _ in files])


def _write_parquet(path: str, schema: list[tuple[str, str]], rows: list[dict[str, Any]], group: int) -> None:
    arrays = {name: pa.array([r[name] for r in rows], arrow_type(parse_type(t))) for name, t in schema}
    pq.write_table(pa.table(arrays), path, row_group_size=max(1, group))


@settings(max_examples=40)
@given(st.data())
def test_statistics_read_back_from_parquet_are_sound(data: st.DataObject) -> None:
    schema = data.draw(schemas(ALL_TYPES, max_size=3))
    rows = data.draw(tables(schema, min_size=1, max_size=10))
    predicate = data.draw(predicates(schema, pools=pools_of(schema, rows), max_leaves=4))
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "part-0.parquet")
        _write_parquet(path, schema, rows, data.draw(st.integers(1, 4)))
        footer = sg.stats_from_parquet(path, schema)
        full = sg.stats_from_parquet(path, schema, read_data=True)
    assert footer.row_count == full.row_count == len(rows)
    files = [(footer, rows), (full, rows)]
    _check_sound(predicate, schema, files)
    _check_agreement(predicate, schema, [footer, full])


# -- named semantic cases ----------------------------------------------------------------------------------------------

SCHEMA = [
    ("x", "int"),
    ("s", "string"),
    ("d", "double"),
    ("f", "float"),
    ("ds", "date"),
    ("ts", "timestamp"),
    ("amount", "decimal(10,2)"),
    ("flag", "boolean"),
    ("t", "tinyint"),
]


def file(rows: int = 10, partition: dict[str, Any] | None = None, **columns: ColumnStats) -> FileStats:
    return FileStats("f", rows, 1, columns, partition)


def both(expr: Expr | str, stats: FileStats) -> bool:
    """`may_match`, checked against the vectorized answer for the same file and against the oracle."""
    answer = may_match(expr, stats, SCHEMA)
    assert answer == bool(skipping_oracle.file_outcomes(compile_predicate(expr, SCHEMA), stats) & TruthValue.YES)
    assert FileStatsTable.from_files([stats], SCHEMA).may_match(expr).to_pylist() == [answer]
    return answer


def test_comparisons_against_bounds() -> None:
    stats = file(x=ColumnStats(1, 9, 0))
    assert both("x > 3", stats) and both("x >= 9", stats) and both("x < 2", stats)
    assert not both("x > 9", stats) and not both("x < 1", stats) and not both("x = 10", stats)
    assert not both("3 > x AND x > 3", stats) and not both("x BETWEEN 5 AND 4", stats)
    assert both("x > 4 AND x < 6", stats) and not both("x > 4.5 AND x < 5", stats)
    assert not both("100 < x", stats)


def test_nulls_and_all_null_columns() -> None:
    all_null = file(x=ColumnStats(null_count=10))
    assert not both("x = 1", all_null) and not both("x > 1 OR x <= 1", all_null) and not both("x IS NOT NULL", all_null)
    assert both("x IS NULL", all_null) and both("NOT (x = 1) OR x IS NULL", all_null)
    assert file_truth("x IS NULL", all_null, SCHEMA) is Truth.ALL
    no_nulls = file(x=ColumnStats(1, 9, 0))
    assert not both("x IS NULL", no_nulls) and file_truth("x IS NOT NULL", no_nulls, SCHEMA) is Truth.ALL
    assert not both("NOT (x = NULL)", no_nulls) and not both("x = NULL", no_nulls)


def test_missing_statistics_mean_unknown_never_zero() -> None:
    unknown = file()
    for text in ("x = 1", "x IS NULL", "x IS NOT NULL", "s LIKE 'a%'", "NOT (x > 3)", "d > 5"):
        assert both(text, unknown)
    assert both("x IS NULL", file(x=ColumnStats(1, 9)))
    assert both("x > 100", file(x=ColumnStats(None, None, 0)))


def test_files_without_rows_match_nothing() -> None:
    empty = file(rows=0)
    for text in ("x IS NULL", "TRUE", "NOT (x = 1)", "x = 1 OR x IS NULL OR x IS NOT NULL"):
        assert not both(text, empty)
        assert file_truth(text, empty, SCHEMA) is Truth.NONE
    assert truth_value("TRUE", empty, SCHEMA) == TruthValue(0)


def test_nan_orders_above_every_number() -> None:
    no_nan_info = file(d=ColumnStats(1.0, 3.0, 0))
    assert both("d > 5", no_nan_info) and both("d = 'NaN'", no_nan_info) and not both("d < 1", no_nan_info)
    no_nans = file(d=ColumnStats(1.0, 3.0, 0, 0))
    assert not both("d > 5", no_nans) and not both("d = 'NaN'", no_nans) and not both("d != 2 AND d > 3", no_nans)
    only_nans = file(d=ColumnStats(None, None, 0, 10))
    assert both("d > 1e308", only_nans) and both("d = 'NaN'", only_nans) and both("d > 'Infinity'", only_nans)
    assert not both("d < 'Infinity'", only_nans) and not both("d <= 0", only_nans)
    assert file_truth("d >= 'NaN'", only_nans, SCHEMA) is Truth.ALL
    assert not both("NOT (d > 0)", only_nans)
    floats = file(f=ColumnStats(-1.5, 2.5, 0, 0))
    assert not both("f > 2.5", floats) and both("f >= 2.5", floats) and not both("f < -1.5", floats)


def test_not_equal_and_not_in_on_single_valued_files() -> None:
    single = file(x=ColumnStats(5, 5, 0))
    assert not both("x != 5", single) and not both("x NOT IN (4, 5)", single) and not both("NOT (x = 5)", single)
    assert both("x != 6", single) and both("x NOT IN (4, 6)", single)
    assert file_truth("x = 5", single, SCHEMA) is Truth.ALL and file_truth("x IN (5, 6)", single, SCHEMA) is Truth.ALL
    with_nulls = file(x=ColumnStats(5, 5, 3))
    assert not both("x != 5", with_nulls) and file_truth("x = 5", with_nulls, SCHEMA) is Truth.SOME
    truncated = file(s=ColumnStats("ab", "ab", 0, max_exact=False))
    assert both("s != 'ab'", truncated)


def test_in_with_thousands_of_values() -> None:
    many = tuple(range(10_000, 30_000, 2))
    predicate = col("x").isin(*many)
    assert not both(predicate, file(x=ColumnStats(1, 9_999, 0)))
    assert not both(predicate, file(x=ColumnStats(10_001, 10_001, 0)))
    assert both(predicate, file(x=ColumnStats(10_001, 10_002, 0)))
    assert not both(predicate, file(x=ColumnStats(30_000, 40_000, 0)))
    assert not both(col("x").notin(*many), file(x=ColumnStats(10_000, 10_000, 0)))
    files = [file(x=ColumnStats(lo, lo + 1, 0)) for lo in range(9_990, 30_010, 3)]
    expected = [f for f in files if may_match(predicate, f, SCHEMA)]
    assert select_files(predicate, files, SCHEMA) == expected
    assert len(expected) == sum(1 for f in files if any(v in many for v in (f.columns["x"].min, f.columns["x"].max)))


def test_like_prefix_compares_truncated_bounds() -> None:
    hudi = file(s=ColumnStats("abc123", "abc345", 0))
    assert both("s LIKE 'abc%'", hudi) and file_truth("s LIKE 'abc%'", hudi, SCHEMA) is Truth.ALL
    assert both("s LIKE 'abc2%'", hudi) and not both("s LIKE 'abc4%'", hudi) and not both("s LIKE 'abd%'", hudi)
    assert both("s LIKE 'ab_1%'", hudi) and not both("s LIKE 'abz%x'", hudi)
    assert not both("s NOT LIKE 'abc%'", hudi) and both("s NOT LIKE 'abc1%'", hudi)
    assert both("s LIKE '%9'", hudi) and not both("s LIKE 'abc'", hudi)
    assert both("s LIKE 'a!%%' ESCAPE '!'", file(s=ColumnStats("a%", "a%z", 0)))
    assert not both("s LIKE 'a!%%' ESCAPE '!'", file(s=ColumnStats("ab", "az", 0)))


def test_value_sets_make_equality_in_and_like_exact() -> None:
    stats = file(s=ColumnStats("a", "z", 0, distinct=frozenset({"a", "m", "z"})))
    assert not both("s = 'b'", stats) and not both("s IN ('b', 'c')", stats) and both("s = 'm'", stats)
    assert not both("s LIKE '%q%'", stats) and both("s LIKE '_'", stats)
    assert not both("NOT (s IN ('a', 'm', 'z'))", stats) and both("s NOT IN ('a', 'm')", stats)
    assert file_truth("s IN ('a', 'm', 'z', 'q')", stats, SCHEMA) is Truth.ALL


def test_truncated_string_bounds_are_used_in_the_safe_direction_only() -> None:
    cut = file(s=ColumnStats("abc", "abd", 0, min_exact=False, max_exact=False))
    assert both("s > 'abdzzz'", cut) and both("s LIKE 'abd%'", cut) and both("s >= 'abd'", cut)
    assert not both("s > 'abe'", cut) and not both("s < 'abc'", cut) and not both("s LIKE 'abe%'", cut)
    assert not both("s = 'ab'", cut) and both("s = 'abdq'", cut)
    assert file_truth("s < 'abe'", cut, SCHEMA) is Truth.ALL and file_truth("s < 'abd'", cut, SCHEMA) is Truth.SOME


def test_not_is_pushed_to_the_leaves() -> None:
    stats = file(x=ColumnStats(1, 9, 0))
    assert both("NOT (x > 100)", stats) and not both("NOT (x < 100)", stats)
    assert not both("NOT (x >= 1 AND x <= 9)", stats) and not both("NOT (x BETWEEN 1 AND 9)", stats)
    assert both("NOT (NOT (x = 5))", stats) and not both("NOT (NOT (x = 50))", stats)
    with_null = file(x=ColumnStats(1, 9, 2))
    assert not both("NOT (x BETWEEN 0 AND 10)", with_null)


def test_dates_timestamps_decimals_and_booleans() -> None:
    stats = file(
        ds=ColumnStats(dt.date(2024, 1, 1), dt.date(2024, 1, 31), 0),
        ts=ColumnStats(dt.datetime(2024, 1, 1, 10), dt.datetime(2024, 1, 1, 12), 0),
        amount=ColumnStats(Decimal("1.50"), Decimal("9.99"), 0),
        flag=ColumnStats(True, True, 0),
    )
    assert both("ds = '2024-01-15'", stats) and not both("ds > '2024-01-31'", stats)
    assert not both("ts < '2024-01-01 10:00:00'", stats) and both("ts <= '2024-01-01 10:00:00'", stats)
    assert not both("ts >= '2024-01-02'", stats)
    assert not both("amount > 9.99", stats) and both("amount > 9.985", stats) and not both("amount = 1.505", stats)
    assert not both("amount < 1.5", stats) and not both("NOT flag", stats) and both("flag", stats)


def test_literals_outside_the_column_type() -> None:
    stats = file(t=ColumnStats(-128, 127, 0), x=ColumnStats(3, 4, 0))
    assert not both("t > 200", stats) and both("t < 200", stats) and not both("t = 1000", stats)
    assert file_truth("t < 200", stats, SCHEMA) is Truth.ALL and file_truth("t != 1000", stats, SCHEMA) is Truth.ALL
    assert not both("x = 3.5", stats) and both("x > 3.5", stats) and not both("x > 4.5", stats)
    assert file_truth("x > 2.5", stats, SCHEMA) is Truth.ALL and not both("x IN (3.5, 99999999999)", stats)
    assert not both("x < -9223372036854775809", stats)


def test_null_safe_equality_and_unanswerable_leaves() -> None:
    stats = file(x=ColumnStats(1, 9, 0), s=ColumnStats("a", "b", 0))
    assert not both("x <=> NULL", stats) and both("NOT (x <=> NULL)", stats) and not both("x <=> 10", stats)
    assert file_truth("NOT (x <=> 10)", stats, SCHEMA) is Truth.ALL
    assert both("x <=> NULL", file(x=ColumnStats(1, 9, 1)))
    for text in ("upper(s) = 'Q'", "s RLIKE 'q'", "x = t", "NOT (length(s) > 5)"):
        assert both(text, stats) and file_truth(text, stats, SCHEMA) is Truth.SOME


def test_partition_values_are_exact_statistics() -> None:
    stats = file(partition={"ds": dt.date(2024, 1, 1), "x": None})
    assert both("ds = '2024-01-01'", stats) and not both("ds = '2024-01-02'", stats)
    assert not both("x = 1", stats) and file_truth("x IS NULL", stats, SCHEMA) is Truth.ALL


def test_deep_and_wide_predicates_do_not_recurse() -> None:
    leaf = col("x") > 100
    deep: Expr = leaf
    for index in range(10_000):
        deep = Not(deep) if index % 3 else (Or((deep, col("x") > 200)) if index % 2 else and_(deep, TRUE))
    stats = [file(x=ColumnStats(1, 9, 0)), file(x=ColumnStats(150, 160, 0))]
    answers = [may_match(deep, f, SCHEMA) for f in stats]
    assert select_files(deep, stats, SCHEMA) == [f for f, a in zip(stats, answers, strict=True) if a]
    wide = or_(*(col("x").eq(v) for v in range(1000, 21_000)))
    assert not may_match(wide, stats[0], SCHEMA) and select_files(wide, stats, SCHEMA) == []
    huge = col("x").isin(*range(1000, 101_000))
    assert not may_match(huge, stats[0], SCHEMA) and select_files(huge, stats, SCHEMA) == []


def test_arrow_table_api() -> None:
    files = [file(x=ColumnStats(lo, lo + 9, 0)) for lo in range(0, 100, 10)]
    table = FileStatsTable.from_files(files, SCHEMA)
    assert len(table) == 10 and table.nbytes > 0
    selected = select_files("x >= 35 AND x < 60", table, SCHEMA)
    assert isinstance(selected, FileStatsTable) and len(selected) == 3
    arrow = select_files("x >= 35 AND x < 60", table.table, SCHEMA)
    assert isinstance(arrow, pa.Table) and arrow.num_rows == 3
    assert table.file(3).columns["x"] == ColumnStats(30, 39, 0, None, None)
    assert table.truth("x < 50").to_pylist() == ["all"] * 5 + ["none"] * 5
    layout = pa.table(
        {
            "path": ["a", "b"],
            "row_count": [5, 0],
            "columns": pa.array([{"x": {"min": 1, "max": 2}}, {"x": {"min": 1, "max": 2}}]),
            "ds": ["2024-01-01", "2024-01-02"],
        }
    )
    assert select_files("x = 2", layout, SCHEMA).column("ds").to_pylist() == ["2024-01-01"]


def test_bad_input_raises_sargable_errors() -> None:
    stats = file(x=ColumnStats(1, 9, 0))
    with pytest.raises(PushdownError):
        may_match(42, stats, SCHEMA)  # type: ignore[arg-type]
    with pytest.raises(PushdownError):
        may_match("x = 1", "not a file", SCHEMA)  # type: ignore[arg-type]
    with pytest.raises(SargableError):
        may_match("nope = 1", stats, SCHEMA)
    with pytest.raises(PushdownError):
        select_files("x = 1", "files", SCHEMA)
    with pytest.raises(StatisticsError):
        may_match("x = 1", file(x=ColumnStats("a", "b", 0)), SCHEMA)
    with pytest.raises(StatisticsError):
        FileStatsTable.from_files([file(x=ColumnStats("a", "b", 0))], SCHEMA)
    with pytest.raises(StatisticsError):
        FileStatsTable.from_arrow(pa.table({"path": ["a"]}), SCHEMA)
    with pytest.raises(PushdownError):
        may_match("x = 1", stats, "x int")  # type: ignore[arg-type]


def test_constants() -> None:
    stats = file(x=ColumnStats(1, 9, 0))
    assert not both(FALSE, stats) and both(TRUE, stats) and not both("NULL", stats)
    assert not both(Comparison("=", lit(1), lit(2)), stats) and both("1 < 2 AND x = 3", stats)
