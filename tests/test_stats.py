"""File statistics: validation, exact statistics of values against brute force, and Parquet footers read back with
pyarrow (merged row groups, unknown statistics, truncated strings, every type's decoding) bounding the real data."""

from __future__ import annotations

import datetime as dt
import math
import os
import tempfile
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sargable as sg
from sargable.errors import StatisticsError
from sargable.parquet_stats import _merge_upper, stats_from_arrow, stats_from_parquet
from sargable.skipping.table import arrow_type
from sargable.stats import MAX_DISTINCT, ColumnStats, FileStats
from sargable.types import parse_type
from strategies import ALL_TYPES, tables, values


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def test_column_stats_validation() -> None:
    for bad in (
        {"null_count": -1},
        {"nan_count": 1.5},
        {"null_count": True},
        {"min": math.nan},
        {"min": 5, "max": 1},
        {"min": "a", "max": 1},
        {"distinct": {1, None}},
        {"distinct": {math.nan}},
        {"distinct": "abc"},
        {"min_exact": 1},
    ):
        with pytest.raises(StatisticsError):
            ColumnStats(**bad)
    stats = ColumnStats(distinct=[1, 2, 2])
    assert stats.distinct == frozenset({1, 2}) and stats.min is None


def test_file_stats_validation() -> None:
    with pytest.raises(StatisticsError):
        FileStats("f", 2, 0, {"x": ColumnStats(null_count=3)})
    with pytest.raises(StatisticsError):
        FileStats("f", 3, 0, {"x": ColumnStats(null_count=2, distinct={1, 2})})
    with pytest.raises(StatisticsError):
        FileStats(7, 1, 0)  # type: ignore[arg-type]
    with pytest.raises(StatisticsError):
        FileStats("f", None, 0)  # type: ignore[arg-type]
    with pytest.raises(StatisticsError):
        FileStats("f", 1, 0, {"x": {"min": 1}})  # type: ignore[dict-item]
    with pytest.raises(StatisticsError):
        FileStats("f", 1, 0, [])  # type: ignore[arg-type]
    assert FileStats("f", 1, 0).columns == {}


@settings(max_examples=150)
@given(st.sampled_from(ALL_TYPES).flatmap(lambda t: st.lists(values(t), max_size=80)))
def test_from_values_matches_brute_force(column: list[Any]) -> None:
    stats = ColumnStats.from_values(column)
    present = [v for v in column if v is not None and not _is_nan(v)]
    assert stats.null_count == sum(v is None for v in column)
    assert stats.nan_count == sum(_is_nan(v) for v in column)
    assert stats.min == (min(present) if present else None)
    assert stats.max == (max(present) if present else None)
    distinct = set(present)
    assert stats.distinct == (frozenset(distinct) if len(distinct) <= MAX_DISTINCT else None)


def _arrow_table(schema: list[tuple[str, str]], rows: list[dict[str, Any]]) -> pa.Table:
    return pa.table({name: pa.array([r[name] for r in rows], arrow_type(parse_type(t))) for name, t in schema})


def _write(table: pa.Table, **options: Any) -> tuple[str, Any]:
    folder = tempfile.TemporaryDirectory()
    path = os.path.join(folder.name, "data.parquet")
    pq.write_table(table, path, **options)
    return path, folder


@settings(max_examples=40)
@given(
    st.lists(st.sampled_from(ALL_TYPES), min_size=1, max_size=4, unique=True).flatmap(
        lambda types: st.tuples(
            st.just([(f"c{i}", t) for i, t in enumerate(types)]),
            tables([(f"c{i}", t) for i, t in enumerate(types)], max_size=25),
            st.integers(1, 8),
        )
    )
)
def test_parquet_footer_bounds_the_data(case: tuple[list[tuple[str, str]], list[dict[str, Any]], int]) -> None:
    schema, rows, group = case
    path, folder = _write(_arrow_table(schema, rows), row_group_size=group)
    with folder:
        footer = stats_from_parquet(path, schema)
        exact = stats_from_parquet(path, schema, read_data=True)
    assert footer.row_count == exact.row_count == len(rows) and footer.size_bytes > 0
    for name, type_text in schema:
        column = [r[name] for r in rows]
        assert exact.columns[name] == ColumnStats.from_values(column)
        stats = footer.columns[name]
        assert stats.null_count == sum(v is None for v in column)
        present = [v for v in column if v is not None and not _is_nan(v)]
        if stats.min is not None:
            assert all(stats.min <= v for v in present)
            if stats.min_exact:
                assert stats.min in present
        if stats.max is not None:
            if parse_type(type_text).is_string and not stats.max_exact:
                assert all(v[: len(stats.max)] <= stats.max for v in present)
            else:
                assert all(v <= stats.max for v in present)
                if stats.max_exact:
                    assert stats.max in present
        if present and not parse_type(type_text).is_floating and not parse_type(type_text).is_string:
            assert (stats.min, stats.max) == (min(present), max(present))
        if not parse_type(type_text).is_floating:
            assert stats.nan_count == 0
        elif any(_is_nan(v) for v in column):
            assert stats.nan_count is None


def test_missing_statistics_are_unknown_not_zero() -> None:
    table = pa.table({"x": pa.array([1, None, 3], pa.int64()), "d": pa.array([math.nan, None, math.nan])})
    path, folder = _write(table, write_statistics=False)
    with folder:
        stats = stats_from_parquet(path)
    assert stats.columns["x"] == ColumnStats() and stats.row_count == 3
    path, folder = _write(table)
    with folder:
        stats = stats_from_parquet(path)
    assert stats.columns["d"] == ColumnStats(null_count=1, nan_count=None)
    assert sg.may_match("d > 5", stats, [("d", "double")])


def test_all_null_and_empty_files() -> None:
    table = pa.table({"x": pa.array([None, None], pa.int32())})
    path, folder = _write(table)
    with folder:
        stats = stats_from_parquet(path)
    assert stats.columns["x"] == ColumnStats(null_count=2, nan_count=0)
    assert not sg.may_match("x = 1", stats, [("x", "int")])
    path, folder = _write(table.slice(0, 0))
    with folder:
        empty = stats_from_parquet(path)
    assert empty.row_count == 0 and not sg.may_match("x IS NULL", empty, [("x", "int")])


def test_long_strings_are_flagged_as_possibly_truncated() -> None:
    long = "k" * 70
    table = pa.table({"s": ["abc", long], "t": ["a" * 10, "b" * 10]})
    path, folder = _write(table)
    with folder:
        stats = stats_from_parquet(path)
        short = stats_from_parquet(path, truncation_length=8)
    assert stats.columns["s"].max == long and not stats.columns["s"].max_exact and stats.columns["s"].min_exact
    assert stats.columns["t"].max_exact and not short.columns["t"].max_exact
    schema = [("s", "string"), ("t", "string")]
    assert sg.may_match("s > 'k' AND s LIKE 'kkk%'", stats, schema)
    assert not sg.may_match("s > 'l'", stats, schema)


def test_merging_truncated_upper_bounds() -> None:
    assert _merge_upper([("abcd", True), ("abc", False)]) == ("abc", False)
    assert _merge_upper([("abc", False), ("abcd", True)]) == ("abc", False)
    assert _merge_upper([("abd", True), ("abc", False)]) == ("abd", True)
    assert _merge_upper([("ab", False), ("abc", False)]) == ("ab", False)
    assert _merge_upper([("b", True), ("abc", False), ("a", True)]) == ("b", True)
    assert _merge_upper([(3, True), (7, True), (5, False)]) == (7, True)


def test_types_decode_from_footer() -> None:
    table = pa.table(
        {
            "tz": pa.array([dt.datetime(2024, 1, 1, 12), dt.datetime(1960, 5, 1)], pa.timestamp("us", tz="UTC")),
            "ms": pa.array([dt.datetime(2024, 1, 1, 0, 0, 0, 1000), None], pa.timestamp("ms")),
            "ns": pa.array([1_500, -1_500], pa.timestamp("ns")),
            "dec": pa.array([Decimal("1.50"), Decimal("-2.25")], pa.decimal128(9, 2)),
            "big": pa.array([Decimal("1.5"), Decimal("-12345678901234567890.25")], pa.decimal128(38, 2)),
            "f": pa.array([1.5, -0.25], pa.float32()),
            "day": pa.array([dt.date(1, 1, 1), dt.date(9999, 12, 31)]),
            "flag": pa.array([True, None]),
            "tiny": pa.array([-128, 127], pa.int8()),
            "raw": pa.array([b"ab\xff", b"zz"], pa.binary()),
        }
    )
    for options in ({}, {"store_decimal_as_integer": True}):
        path, folder = _write(table, **options)
        with folder:
            columns = stats_from_parquet(path).columns
        assert (columns["tz"].min, columns["tz"].max) == (dt.datetime(1960, 5, 1), dt.datetime(2024, 1, 1, 12))
        assert columns["ms"].max == dt.datetime(2024, 1, 1, 0, 0, 0, 1000) and columns["ms"].null_count == 1
        ns = columns["ns"]
        assert ns.min == dt.datetime(1969, 12, 31, 23, 59, 59, 999998) and ns.max == dt.datetime(1970, 1, 1, 0, 0, 0, 2)
        assert not ns.min_exact and not ns.max_exact
        assert (columns["dec"].min, columns["dec"].max) == (Decimal("-2.25"), Decimal("1.50"))
        assert columns["big"].min == Decimal("-12345678901234567890.25")
        assert (columns["f"].min, columns["f"].max, columns["f"].nan_count) == (-0.25, 1.5, None)
        assert (columns["day"].min, columns["day"].max) == (dt.date(1, 1, 1), dt.date(9999, 12, 31))
        assert (columns["flag"].min, columns["flag"].max) == (True, True)
        assert (columns["tiny"].min, columns["tiny"].max) == (-128, 127)
        assert columns["raw"].min == "ab" and not columns["raw"].min_exact and columns["raw"].max == "zz"


def test_spark_int96_timestamps_have_no_usable_statistics() -> None:
    table = pa.table({"ts": pa.array([dt.datetime(2020, 1, 1), dt.datetime(2021, 1, 1)], pa.timestamp("us"))})
    path, folder = _write(table, use_deprecated_int96_timestamps=True)
    with folder:
        stats = stats_from_parquet(path, [("ts", "timestamp")])
    assert stats.columns["ts"].min is None and stats.columns["ts"].max is None
    assert sg.may_match("ts > '2030-01-01'", stats, [("ts", "timestamp")])


def test_declared_types_convert_exactly_or_leave_bounds_unknown() -> None:
    table = pa.table({"x": pa.array([1, 2**40], pa.int64()), "y": pa.array([1, 2], pa.int64()), "s": ["a", "b"]})
    path, folder = _write(table)
    with folder:
        stats = stats_from_parquet(path, [("x", "int"), ("y", "tinyint"), ("s", "date"), ("absent", "int")])
    assert stats.columns["x"].max is None and stats.columns["x"].null_count == 0
    assert (stats.columns["y"].min, stats.columns["y"].max) == (1, 2)
    assert stats.columns["s"].min is None and "absent" not in stats.columns


def test_unreadable_files_raise() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "bad.parquet")
        with open(path, "wb") as handle:
            handle.write(b"not parquet")
        with pytest.raises(StatisticsError):
            stats_from_parquet(path)
        with pytest.raises(StatisticsError):
            stats_from_parquet(os.path.join(folder, "missing.parquet"))
    with pytest.raises(StatisticsError):
        stats_from_parquet("x.parquet", schema="x int")  # type: ignore[arg-type]


def test_stats_from_arrow() -> None:
    batch = pa.record_batch(
        {
            "country": pa.array(["US", "FR", "US", None]).dictionary_encode(),
            "v": pa.array([1.0, math.nan, None, -0.0]),
            "many": pa.array(list(range(4))),
            "nested": pa.array([[1], [2], [], None]),
        }
    )
    stats = stats_from_arrow(batch, "p", size_bytes=9, partition={"ds": dt.date(2024, 1, 1)}, max_distinct=3)
    assert stats.columns["country"] == ColumnStats("FR", "US", 1, 0, frozenset({"FR", "US"}))
    assert stats.columns["v"] == ColumnStats(-0.0, 1.0, 1, 1, frozenset({1.0, 0.0}))
    assert stats.columns["many"].distinct is None and "nested" not in stats.columns
    assert stats.partition == {"ds": dt.date(2024, 1, 1)} and stats.size_bytes == 9
    with pytest.raises(StatisticsError):
        stats_from_arrow({"a": [1]}, "p")  # type: ignore[arg-type]
