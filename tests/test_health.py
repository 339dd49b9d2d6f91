"""Layout health: files per partition and small files against hand counts; a column's range coverage against brute
force over the generated data (numbers, dates, timestamps) and against order properties (strings)."""

from __future__ import annotations

import datetime as dt
import json
import math
import statistics
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sargable.errors import OptimizeError
from sargable.health import STRING_PREFIX, VALUE, column_coverage, layout_health
from sargable.parquet_stats import stats_from_arrow
from sargable.stats import ColumnStats, FileStats

EPOCH = dt.datetime(1970, 1, 1)

NUMERIC = {
    "bigint": (pa.int64(), st.integers(-(2**40), 2**40), float),
    "double": (pa.float64(), st.floats(-1e12, 1e12, allow_nan=False), float),
    "date": (pa.date32(), st.dates(dt.date(1950, 1, 1), dt.date(2050, 1, 1)), lambda d: float(d.toordinal())),
    "timestamp": (
        pa.timestamp("us"),
        st.datetimes(dt.datetime(1950, 1, 1), dt.datetime(2050, 1, 1)),
        lambda t: (t - EPOCH) / dt.timedelta(microseconds=1),
    ),
}


def _file(values: list[Any], arrow_type: pa.DataType, index: int) -> FileStats:
    return stats_from_arrow(pa.table({"c": pa.array(values, arrow_type)}), f"f{index}.parquet", size_bytes=10)


@given(st.sampled_from(sorted(NUMERIC)), st.data())
def test_numeric_coverage_is_the_mean_share_of_the_range_by_brute_force(kind: str, data: st.DataObject):
    arrow_type, strategy, number = NUMERIC[kind]
    per_file = data.draw(st.lists(st.lists(st.one_of(st.none(), strategy), max_size=8), min_size=1, max_size=6))
    files = [_file(values, arrow_type, i) for i, values in enumerate(per_file)]
    spread = column_coverage(files, "c", kind)
    numbers = [[number(v) for v in values if v is not None] for values in per_file]
    present = [n for values in numbers for n in values]
    with_rows = [values for values, raw in zip(numbers, per_file, strict=True) if raw]
    assert spread.files == len(with_rows)
    assert spread.projection == VALUE
    if not present:
        assert spread.coverage is None
        return
    span = max(present) - min(present)
    shares = [0.0 if not values else 1.0 if span == 0 else (max(values) - min(values)) / span for values in with_rows]
    assert spread.coverage == pytest.approx(float(np.mean(shares)), rel=1e-9, abs=1e-12)


def test_unknown_bounds_cover_everything_and_null_or_nan_files_nothing():
    files = [
        FileStats("a", 10, 1, {"x": ColumnStats(min=0.0, max=5.0, null_count=0, nan_count=0)}),
        FileStats("b", 10, 1, {"x": ColumnStats(min=5.0, max=10.0, null_count=0, nan_count=0)}),
        FileStats("c", 10, 1, {"x": ColumnStats(null_count=4, nan_count=6)}),
        FileStats("d", 10, 1, {"x": ColumnStats(null_count=4)}),
        FileStats("e", 10, 1, {}),
        FileStats("f", 0, 1, {}),
    ]
    spread = column_coverage(files, "x", "double")
    assert spread.files == 5
    assert spread.coverage == pytest.approx((0.5 + 0.5 + 0 + 1 + 1) / 5)


def test_infinite_bounds_are_clamped_to_the_finite_range():
    files = [
        FileStats("a", 3, 1, {"x": ColumnStats(min=-math.inf, max=1.0)}),
        FileStats("b", 3, 1, {"x": ColumnStats(min=0.0, max=4.0)}),
        FileStats("c", 3, 1, {"x": ColumnStats(min=math.inf, max=math.inf)}),
    ]
    assert column_coverage(files, "x", "double").coverage == pytest.approx((0.25 + 1 + 0) / 3)
    only_infinite = [FileStats("a", 3, 1, {"x": ColumnStats(min=-math.inf, max=math.inf)})]
    assert column_coverage(only_infinite, "x", "double").coverage is None


def test_partition_columns_cover_one_value_per_file():
    files = [FileStats(f"f{d}", 5, 1, partition={"ds": dt.date(2024, 1, d)}) for d in (1, 2, 3)]
    assert column_coverage(files, "ds", "date").coverage == 0.0
    assert column_coverage(files[:1], "ds", "date").coverage == 1.0


TEXT = st.text(alphabet="ab\u00e9\U0001f600", max_size=12)


@given(st.lists(TEXT, min_size=2, max_size=60), st.integers(1, 8))
def test_string_coverage_of_sorted_split_files_adds_up_to_at_most_the_whole_range(values: list[str], files: int):
    """Files cut from sorted values have disjoint ranges, so their shares sum to at most 1 (the projection is
    monotone), and one file holding everything covers all of it."""
    values = sorted(values)
    size = -(-len(values) // files)
    cut = [_file(values[i : i + size], pa.string(), i) for i in range(0, len(values), size)]
    spread = column_coverage(cut, "c", "string")
    assert spread.projection == STRING_PREFIX
    assert spread.coverage is not None
    if values[0] == values[-1]:
        assert spread.coverage == 1.0
        return
    assert spread.coverage * len(cut) <= 1 + 1e-9
    whole = column_coverage([_file(values, pa.string(), 0), *cut], "c", "string")
    assert whole.coverage == pytest.approx((1 + spread.coverage * len(cut)) / (1 + len(cut)))


def test_string_projection_reads_the_bytes_after_the_common_prefix():
    files = [
        FileStats("a", 2, 1, {"s": ColumnStats(min="user_00", max="user_50")}),
        FileStats("b", 2, 1, {"s": ColumnStats(min="user_50", max="user_99")}),
    ]
    shares = column_coverage(files, "s", "string").coverage
    assert shares == pytest.approx(((0x35 - 0x30) / 9 + (0x39 - 0x35) / 9) / 2, rel=1e-3)
    truncated = [
        FileStats("a", 2, 1, {"s": ColumnStats(min="a", max="b", max_exact=False)}),
        FileStats("b", 2, 1, {"s": ColumnStats(min="a", max="b")}),
    ]
    exact, open_upper = (column_coverage([f], "s", "string").coverage for f in truncated)
    assert exact == 1.0 and open_upper == 1.0
    both = column_coverage(truncated, "s", "string").coverage
    assert both is not None and 0.5 < both < 1.0


def test_layout_health_counts_files_per_partition_and_small_files():
    mib = 1024 * 1024
    sizes = {"ds=1": [mib] * 5, "ds=2": [100 * mib, 50 * mib], "ds=3": [], "ds=4": [mib] * 9 + [200 * mib]}
    partitions = {
        name: [FileStats(f"{name}/{i}", 10, s, {"x": ColumnStats(min=i, max=i + 1)}) for i, s in enumerate(sizes)]
        for name, sizes in sizes.items()
    }
    health = layout_health(partitions, [("x", "int"), ("y", "string")], ["x"], target_file_bytes=100 * mib)
    assert (health.partitions, health.files, health.rows) == (4, 17, 170)
    assert health.files_per_partition_median == statistics.median([5, 2, 0, 10]) == 3.5
    assert health.files_per_partition_max == 10
    assert health.small_file_bytes == 75 * mib
    assert health.small_files == 5 + 1 + 9
    assert health.small_file_share == pytest.approx(15 / 17)
    assert health.columns[0].coverage == pytest.approx(1 / 10)
    text = str(health)
    assert "17 (3.5 per partition median, 10 max)" in text and "15 (88.2%)" in text and "x  10.0%" in text
    assert json.loads(json.dumps(health.to_dict()))["columns"][0]["column"] == "x"
    assert health.layouts == (("as written", 17),) and "layouts:             17 as written" in text
    with pytest.raises(OptimizeError, match="unknown column"):
        layout_health(partitions, [("x", "int")], ["z"])
    with pytest.raises(OptimizeError, match="no order"):
        column_coverage([], "m", "map<string,int>")
