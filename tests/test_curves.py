"""Space-filling curves: quantile codes against Python's ordering and brute-force ranks, z-order against a bit-string
oracle, Hilbert adjacency, cell contiguity of both curves, NULL / NaN placement, and the file boxes a clustering
cuts (against random order)."""

from __future__ import annotations

import datetime as dt
import itertools
import math
import random
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sargable.curves import Clustering, ColumnRanks, cut_boundaries, default_bits, hilbert, zorder
from sargable.errors import OptimizeError
from sargable.health import column_coverage
from sargable.parquet_stats import stats_from_arrow

KINDS: dict[str, tuple[pa.DataType, st.SearchStrategy[Any]]] = {
    "bigint": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "small ints": (pa.int32(), st.integers(-3, 3)),
    "double": (
        pa.float64(),
        st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1.5, math.nan])),
    ),
    "string": (pa.string(), st.text(max_size=6)),
    "large string": (pa.large_string(), st.text(alphabet="ab\u00e9\U0001f600", max_size=4)),
    "date": (pa.date32(), st.dates(dt.date(1900, 1, 1), dt.date(2100, 1, 1))),
    "timestamp": (pa.timestamp("us"), st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2100, 1, 1))),
    "decimal": (
        pa.decimal128(9, 2),
        st.decimals(-(10**6), 10**6, places=2, allow_nan=False, allow_infinity=False),
    ),
    "boolean": (pa.bool_(), st.booleans()),
}


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


@st.composite
def columns(draw: st.DrawFn) -> tuple[pa.Array, list[Any]]:
    kind = draw(st.sampled_from(sorted(KINDS)))
    arrow_type, strategy = KINDS[kind]
    values = draw(st.lists(st.one_of(st.none(), strategy), max_size=40))
    array = pa.array(values, arrow_type)
    if draw(st.booleans()) and not pa.types.is_boolean(arrow_type):
        array = array.dictionary_encode()
    return array, pa.array(values, arrow_type).to_pylist()


@settings(max_examples=300)
@given(columns(), st.data())
def test_codes_are_monotone_with_null_first_and_nan_last(column: tuple[pa.Array, list[Any]], data: st.DataObject):
    array, values = column
    sample_size = data.draw(st.integers(0, len(values)))
    plain = array.type.value_type if pa.types.is_dictionary(array.type) else array.type
    sample = pa.array(data.draw(st.permutations(values))[:sample_size], plain)
    buckets = data.draw(st.integers(1, 50))
    bits = data.draw(st.integers(2, 20))
    ranks = ColumnRanks.from_sample("c", sample, buckets)
    codes = ranks.codes(array, bits).tolist()
    top = (1 << bits) - 1
    for value, code in zip(values, codes, strict=True):
        if value is None:
            assert code == 0
        elif isinstance(value, float) and math.isnan(value):
            assert code == top
        else:
            assert 1 <= code <= top - 1
    present = sorted(((v, c) for v, c in zip(values, codes, strict=True) if not _missing(v)), key=lambda p: p[0])
    for (a, code_a), (b, code_b) in itertools.pairwise(present):
        assert code_a <= code_b, (a, b)
        if a == b:
            assert code_a == code_b


@settings(max_examples=300)
@given(columns())
def test_exact_ranks_are_mid_ranks(column: tuple[pa.Array, list[Any]]):
    """With every value a quantile point, a value's position is its mid-rank: (#less + #less-or-equal) / 2n."""
    array, values = column
    present = [v for v in values if not _missing(v)]
    ranks = ColumnRanks.from_sample("c", array, buckets=max(1, len(values)))
    positions = ranks.position(array)
    for value, where in zip(values, positions.tolist(), strict=True):
        if _missing(value):
            assert math.isnan(where)
        else:
            less = sum(1 for v in present if v < value)
            at_most = sum(1 for v in present if v <= value)
            assert where == pytest.approx((less + at_most) / (2 * len(present)), abs=1e-12)


@given(columns(), st.integers(1, 8))
def test_sampled_ranks_depend_only_on_the_value(column: tuple[pa.Array, list[Any]], pieces: int):
    """A row's code doesn't depend on the batch it comes in (Spark hands a task its rows in any batches)."""
    array, _ = column
    ranks = ColumnRanks.from_sample("c", array, buckets=4)
    whole = ranks.codes(array, 12)
    cuts = sorted({0, len(array), *(random.Random(pieces).randrange(len(array) + 1) for _ in range(pieces))})
    parts = [ranks.codes(array.slice(a, b - a), 12) for a, b in itertools.pairwise(cuts)]
    assert np.concatenate([whole[:0], *parts]).tolist() == whole.tolist()


def test_ranks_of_an_empty_or_all_null_sample_map_values_to_the_middle():
    ranks = ColumnRanks.from_sample("c", pa.array([None, None], pa.int64()))
    assert ranks.codes(pa.array([5, None, -1]), 4).tolist() == [7, 0, 7]


def test_quantile_points_must_be_sorted_and_present():
    with pytest.raises(OptimizeError, match="sorted"):
        ColumnRanks.from_quantiles("c", pa.array([3, 1]))
    with pytest.raises(OptimizeError, match="NULL or NaN"):
        ColumnRanks.from_quantiles("c", pa.array([1.0, math.nan]))
    with pytest.raises(OptimizeError, match="no order"):
        ColumnRanks.from_sample("c", pa.array([[1]]))


def _interleaved(point: tuple[int, ...], bits: int) -> int:
    text = "".join(format(c, f"0{bits}b")[level] for level in range(bits) for c in point)
    return int(text, 2)


@given(st.data())
def test_zorder_is_bit_interleaving(data: st.DataObject):
    dims = data.draw(st.integers(1, 6))
    bits = data.draw(st.integers(1, 64 // dims))
    points = data.draw(st.lists(st.tuples(*[st.integers(0, (1 << bits) - 1)] * dims), min_size=1, max_size=20))
    codes = [np.array([p[i] for p in points], dtype=np.uint64) for i in range(dims)]
    assert zorder(codes, bits).tolist() == [_interleaved(p, bits) for p in points]


def _grid(dims: int, bits: int) -> list[np.ndarray]:
    mesh = np.meshgrid(*[np.arange(1 << bits, dtype=np.uint64)] * dims, indexing="ij")
    return [m.ravel() for m in mesh]


@pytest.mark.parametrize(("dims", "bits"), [(2, 1), (2, 2), (2, 3), (2, 5), (3, 1), (3, 2), (3, 3), (4, 2), (5, 1)])
def test_hilbert_visits_every_cell_once_moving_to_a_neighbour(dims: int, bits: int):
    codes = _grid(dims, bits)
    keys = hilbert(codes, bits)
    assert sorted(keys.tolist()) == list(range(1 << (dims * bits)))
    order = np.argsort(keys)
    points = np.stack([c.astype(np.int64) for c in codes], axis=1)[order]
    steps = np.abs(np.diff(points, axis=0)).sum(axis=1)
    assert (steps == 1).all()


@pytest.mark.parametrize("curve", [zorder, hilbert])
@given(st.data())
def test_aligned_cells_are_contiguous_along_the_curve(curve: Any, data: st.DataObject):
    """Points sharing every column's top `level` bits form one run of the curve order, at every level."""
    dims = data.draw(st.integers(1, 4))
    bits = data.draw(st.integers(1, min(10, 63 // dims)))
    points = data.draw(st.lists(st.tuples(*[st.integers(0, (1 << bits) - 1)] * dims), min_size=1, max_size=60))
    codes = [np.array([p[i] for p in points], dtype=np.uint64) for i in range(dims)]
    order = np.argsort(curve(codes, bits), kind="stable")
    for level in range(1, bits + 1):
        cells = [tuple(int(c[j]) >> (bits - level) for c in codes) for j in order]
        runs = 1 + sum(1 for a, b in itertools.pairwise(cells) if a != b)
        assert runs == len(set(cells))


def test_curve_inputs_are_checked():
    with pytest.raises(OptimizeError, match="fit in 3 bits"):
        zorder([np.array([8], dtype=np.uint64)], 3)
    with pytest.raises(OptimizeError, match="64-bit key"):
        hilbert([np.zeros(1, dtype=np.uint64)] * 3, 22)
    with pytest.raises(OptimizeError, match="same number"):
        zorder([np.zeros(1, dtype=np.uint64), np.zeros(2, dtype=np.uint64)], 4)
    with pytest.raises(OptimizeError, match="1 to 31 columns"):
        default_bits(32)


def test_clustering_checks_its_columns_and_curve():
    table = pa.table({"a": [1, 2], "b": ["x", "y"]})
    with pytest.raises(OptimizeError, match=r"\['c'\]"):
        Clustering.fit(table, ["a", "c"])
    with pytest.raises(OptimizeError, match="unknown curve"):
        Clustering.fit(table, ["a"], curve="peano")
    with pytest.raises(OptimizeError, match="named twice"):
        Clustering.fit(table, ["a", "a"])
    clustering = Clustering.fit(table, ["a", "b"])
    with pytest.raises(OptimizeError, match="lacks"):
        clustering.keys(pa.table({"a": [1]}))
    with pytest.raises(OptimizeError, match="its ranks were built from"):
        clustering.keys(pa.table({"a": [1], "b": [dt.date(2024, 1, 1)]}))


@pytest.mark.parametrize("curve", ["zorder", "hilbert"])
def test_null_rows_come_first_and_nan_rows_last(curve: str):
    values = [2.0, None, math.nan, -1.0, None, math.nan, 7.5]
    table = pa.table({"x": pa.array(values, pa.float64()), "y": pa.array(range(7), pa.int64())})
    clustering = Clustering.fit(table, ["x"], curve=curve)
    ordered = table.take(clustering.sort_indices(table)).column("x").to_pylist()
    assert ordered[:2] == [None, None]
    assert all(math.isnan(v) for v in ordered[-2:])
    assert ordered[2:5] == [-1.0, 2.0, 7.5]
    keys = Clustering.fit(table, ["x", "y"], curve=curve).keys(table)
    assert keys.type == pa.int64() and min(keys.to_pylist()) >= 0


def _mean_coverage(table: pa.Table, order: Any, files: int, column: str, dtype: str) -> float:
    ordered = table.take(order)
    size = -(-len(ordered) // files)
    stats = [stats_from_arrow(ordered.slice(i, size), f"f{i}") for i in range(0, len(ordered), size)]
    coverage = column_coverage(stats, column, dtype).coverage
    assert coverage is not None
    return coverage


def _skewed_table(rows: int, seed: int) -> pa.Table:
    """A Zipf-like id (a few ids hold most rows, ids scattered over the bigint range) and a uniform timestamp."""
    rng = np.random.default_rng(seed)
    ids = rng.permutation(10_000)[np.minimum(rng.zipf(1.3, rows), 10_000) - 1] * 1_000_003
    start = int((dt.datetime(2024, 1, 1) - dt.datetime(1970, 1, 1)) / dt.timedelta(microseconds=1))
    micros = start + rng.integers(0, 86_400_000_000, rows)
    return pa.table(
        {
            "user_id": pa.array(ids, pa.int64()),
            "event_time": pa.array(micros, pa.int64()).cast(pa.timestamp("us")),
            "country": pa.array(rng.choice(np.array(["US", "DE", "FR", None], dtype=object), rows)),
        }
    )


@pytest.mark.parametrize("curve", ["zorder", "hilbert"])
def test_clustered_files_cover_small_boxes_of_both_columns(curve: str):
    """Cut into 16 files along the curve, each file covers about a quarter of each column's range (random order:
    all of it), although the id is skewed and the two columns' scales differ by ten orders of magnitude."""
    table = _skewed_table(20_000, seed=7)
    clustering = Clustering.fit(table, ["user_id", "event_time"], curve=curve, buckets=256)
    order = clustering.sort_indices(table)
    shuffled = pa.array(np.random.default_rng(1).permutation(len(table)))
    for column, dtype in (("user_id", "bigint"), ("event_time", "timestamp")):
        clustered = _mean_coverage(table, order, 16, column, dtype)
        unordered = _mean_coverage(table, shuffled, 16, column, dtype)
        assert unordered > 0.95
        assert clustered < 0.45, (column, clustered)


def test_sampled_ranks_give_the_same_order_as_exact_ones_on_distinct_values():
    values = pa.array([Decimal(i) / 4 for i in range(200)], pa.decimal128(10, 2))
    exact = ColumnRanks.from_sample("d", values, buckets=1000).codes(values, 16)
    sampled = ColumnRanks.from_sample("d", values, buckets=20).codes(values, 16)
    assert (np.diff(exact.astype(np.int64)) > 0).all()
    assert (np.diff(sampled.astype(np.int64)) >= 0).all()
    assert len(set(sampled.tolist())) == 39


def _trailing_zeros(value: int) -> int:
    return (value & -value).bit_length() - 1


@settings(max_examples=500)
@given(st.lists(st.integers(0, 600), min_size=1, max_size=120), st.integers(1, 12), st.sampled_from([0.0, 0.1, 0.25]))
def test_cuts_move_to_the_largest_aligned_cell_within_the_slack(keys: list[int], files: int, slack: float):
    keys = sorted(keys)
    boundaries = cut_boundaries(np.array(keys), files, slack).tolist()
    assert boundaries == sorted(set(boundaries))
    share = len(keys) / files
    windows = []
    for cut in range(1, files):
        low = min(len(keys) - 1, max(0, math.floor(cut * share - slack * share)))
        high = min(len(keys) - 1, max(0, math.ceil(cut * share + slack * share) - 1))
        windows.append((keys[low] + 1, keys[high]))
    for low, high in windows:
        if low > high:
            assert high in boundaries
            continue
        best = max(range(low, high + 1), key=_trailing_zeros)
        assert any(low <= b <= high and _trailing_zeros(b) == _trailing_zeros(best) for b in boundaries)
    if len(set(keys)) == len(keys) and files > 1:
        sizes = np.diff([0, *np.searchsorted(keys, boundaries).tolist(), len(keys)])
        assert sizes.max() <= (1 + 2 * slack) * share + 2


def test_cut_arguments_are_checked():
    assert cut_boundaries(np.array([1, 2, 3]), 1).tolist() == []
    with pytest.raises(OptimizeError, match="files"):
        cut_boundaries(np.array([1]), 0)
    with pytest.raises(OptimizeError, match="slack"):
        cut_boundaries(np.array([1]), 2, slack=0.5)
