"""Space-filling curves for clustering rows: z-order and Hilbert keys over several columns of any orderable type.

Each column is first mapped to a `bits`-wide code by its quantile, so that columns of different types and skews
interleave fairly (a Zipf-skewed id and a uniform timestamp each split the rows about in half at every level):

- `ColumnRanks` is built from quantile points of the column (evenly spaced in rank, from a sample or from all the
  data: `from_sample`) and maps a value to its estimated mid-rank position `p` in [0, 1]: the midpoint of where the
  value's run of equal quantile points starts and ends, or of the gap between two points it falls into. With every
  value as a point (exact ranks), `p = (#values < v + #values <= v) / (2 n)`.
- Codes: NULL is 0, NaN is `2**bits - 1` (Spark's order: NULL first, NaN above every number), every other value is
  `1 + floor(p * (2**bits - 3))`, so codes are monotone in the column's order (ties allowed) and NULL / NaN rows
  sit at the two ends of each dimension. The rows of a frequent value share one code: spreading them over the
  value's range of ranks (as Delta's random noise on range ids does) put a Zipf-hot user in more files, not fewer,
  in `benchmarks/optimize.py`.
- `zorder` interleaves the codes' bits (the first column's bit first at each level); `hilbert` is Skilling's
  transform ("Programming the Hilbert curve", 2004) followed by the same interleaving. Keys fit in 63 bits, so they
  sort the same as Arrow `int64` and Spark `bigint`.

`Clustering.fit(data, columns)` builds the ranks of every column (on the driver, from a sample of one partition);
`Clustering.keys(batch)` and `Clustering.sort_indices(table)` are vectorized over Arrow data (numpy underneath), so
the same object can run inside Spark tasks over Arrow batches (an Arrow UDF over just the clustered columns, the
rows staying in the JVM) or over a pyarrow table. The ranks are small (at most `2 * buckets + 1` codes per column).
`cut_boundaries(sorted_keys, files)` chooses the keys at which to cut the ordered rows into files, each cut moved
(within a slack) to the start of the largest aligned cell of the curve in reach, so files hold compact boxes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sargable.errors import OptimizeError

CURVES = ("zorder", "hilbert")
DEFAULT_BUCKETS = 1024
"""Quantile points kept per column: enough to cut a partition into hundreds of files along each dimension."""
MAX_BITS_PER_COLUMN = 20
KEY_BITS = 63
"""Keys use at most 63 bits, so they are non-negative `int64` values."""


def layout_tag(curve: str, columns: Sequence[str]) -> str:
    """The `FileStats.layout` of files clustered along `curve` over `columns`, e.g. `hilbert(user_id, event_time)`
    (a name that isn't a plain identifier is quoted in backticks, as Spark quotes it, so tags never collide)."""
    if curve not in CURVES:
        raise OptimizeError(f"unknown curve {curve!r}; use one of {', '.join(CURVES)}")
    names = [c if c.isidentifier() else "`" + c.replace("`", "``") + "`" for c in columns]
    return f"{curve}({', '.join(names)})"


def default_bits(columns: int) -> int:
    """Bits per column for `columns` clustered columns: as many as fit in a 63-bit key, at most 20."""
    if columns < 1 or columns > KEY_BITS // 2:
        raise OptimizeError(f"clustering takes 1 to {KEY_BITS // 2} columns, got {columns}")
    return min(MAX_BITS_PER_COLUMN, KEY_BITS // columns)


def _plain(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One contiguous array with dictionaries decoded."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if pa.types.is_nested(values.type) or pa.types.is_null(values.type):
        raise OptimizeError(f"can't cluster by a column of type {values.type}: its values have no order")
    return values


def _numeric(values: pa.Array) -> np.ndarray | None:
    """The values as an order-preserving numpy array (numbers, dates, times, timestamps), or None for other types."""
    kind = values.type
    if pa.types.is_boolean(kind):
        return np.asarray(values.cast(pa.uint8()).to_numpy(zero_copy_only=False))
    if pa.types.is_integer(kind) or pa.types.is_floating(kind):
        return np.asarray(values.to_numpy(zero_copy_only=False))
    if pa.types.is_temporal(kind):
        width = pa.int32() if kind.bit_width == 32 else pa.int64()
        return np.asarray(values.view(width).to_numpy(zero_copy_only=False))
    return None


def _present(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Masks of the NULL and the NaN entries."""
    nulls = np.asarray(values.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_floating(values.type):
        nans = np.asarray(pc.fill_null(pc.is_nan(values), False).to_numpy(zero_copy_only=False), dtype=bool)
    else:
        nans = np.zeros(len(values), dtype=bool)
    return nulls, nans


def _bisect_left(bounds: pa.Array, values: pa.Array) -> np.ndarray:
    """For each value (non-NULL, non-NaN), how many of the sorted `bounds` are below it: Python's `bisect_left`."""
    numbers, points = _numeric(values), _numeric(bounds)
    if numbers is not None and points is not None:
        return np.searchsorted(points, numbers, side="left").astype(np.int64)
    n = len(values)
    combined = pa.concat_arrays([values, bounds])
    is_bound = np.concatenate([np.zeros(n, np.int8), np.ones(len(bounds), np.int8)])
    order = pc.sort_indices(
        pa.table({"v": combined, "b": is_bound}), sort_keys=[("v", "ascending"), ("b", "ascending")]
    ).to_numpy()
    flags = is_bound[order]
    below = np.cumsum(flags) - flags
    out = np.empty(len(order), np.int64)
    out[order] = below
    return out[:n]


def _equal(bounds: pa.Array, index: np.ndarray, values: pa.Array) -> np.ndarray:
    """Whether each value equals `bounds[index]` (False where `index` is past the end)."""
    if len(bounds) == 0:
        return np.zeros(len(values), dtype=bool)
    inside = index < len(bounds)
    at = pc.take(bounds, pa.array(np.minimum(index, len(bounds) - 1)))
    same = np.asarray(pc.fill_null(pc.equal(at, values), False).to_numpy(zero_copy_only=False), dtype=bool)
    return inside & same


@dataclass(frozen=True, eq=False)
class ColumnRanks:
    """How one column's values map to quantile positions in [0, 1] and then to `bits`-wide codes.

    `bounds` are the distinct quantile points in order (the column's Arrow type, no NULL or NaN); `positions` has
    `2 * len(bounds) + 1` entries: the position of a value below the first bound, equal to the first, between the
    first two, ..., above the last.
    """

    name: str
    bounds: pa.Array
    positions: np.ndarray

    @classmethod
    def from_quantiles(cls, name: str, points: pa.Array | pa.ChunkedArray) -> ColumnRanks:
        """Ranks from sorted quantile points evenly spaced in rank (the first the minimum, the last the maximum)."""
        points = _plain(points)
        nulls, nans = _present(points)
        if nulls.any() or nans.any():
            raise OptimizeError(f"quantile points of {name!r} must not hold NULL or NaN")
        count = len(points)
        if count == 0:
            return cls(name, points, np.array([0.5]))
        if count > 1 and not pc.all(pc.less_equal(points.slice(0, count - 1), points.slice(1))).as_py():
            raise OptimizeError(f"quantile points of {name!r} must be sorted")
        starts = np.ones(count, dtype=bool)
        if count > 1:
            starts[1:] = np.asarray(
                pc.not_equal(points.slice(1), points.slice(0, count - 1)).to_numpy(zero_copy_only=False), dtype=bool
            )
        first = np.flatnonzero(starts)
        last = np.append(first[1:] - 1, count - 1)
        at = (first + last) / 2
        between = (last[:-1] + first[1:]) / 2
        index = np.empty(2 * len(first) + 1)
        index[0] = -0.5
        index[1::2] = at
        index[2:-1:2] = between
        index[-1] = count - 0.5
        return cls(name, pc.take(points, pa.array(first)), (index + 0.5) / count)

    @classmethod
    def from_sample(cls, name: str, values: pa.Array | pa.ChunkedArray, buckets: int = DEFAULT_BUCKETS) -> ColumnRanks:
        """Ranks from a sample of the column (or all of it): `buckets` quantile points of its non-NULL, non-NaN values;
        with `buckets >= len(values)` every value is a point and the ranks are exact."""
        if buckets < 1:
            raise OptimizeError(f"buckets must be at least 1, got {buckets}")
        values = _plain(values)
        nulls, nans = _present(values)
        kept = values.filter(pa.array(~(nulls | nans))) if (nulls | nans).any() else values
        ordered = pc.take(kept, pc.sort_indices(kept))
        count = len(ordered)
        if count > buckets:
            picks = np.round(np.linspace(0, count - 1, buckets)).astype(np.int64)
            ordered = pc.take(ordered, pa.array(picks))
        return cls.from_quantiles(name, ordered)

    def position(self, values: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Each value's quantile position in [0, 1] (NaN for NULL and NaN values)."""
        values = _plain(values)
        bounds = self.bounds
        if values.type != bounds.type:
            try:
                bounds = bounds.cast(values.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                raise OptimizeError(
                    f"column {self.name!r} is {values.type} here but its ranks were built from {bounds.type}"
                ) from None
        nulls, nans = _present(values)
        missing = nulls | nans
        kept = values.filter(pa.array(~missing)) if missing.any() else values
        index = _bisect_left(bounds, kept)
        interval = 2 * index + _equal(bounds, index, kept)
        out = np.full(len(values), np.nan)
        out[~missing] = self.positions[interval]
        return out

    def codes(self, values: pa.Array | pa.ChunkedArray, bits: int) -> np.ndarray:
        """`bits`-wide codes: NULL 0, NaN `2**bits - 1`, others `1 + floor(position * (2**bits - 3))`."""
        if not 2 <= bits <= KEY_BITS:
            raise OptimizeError(f"bits per column must be between 2 and {KEY_BITS}, got {bits}")
        values = _plain(values)
        nulls, nans = _present(values)
        span = float((1 << bits) - 3)
        where = self.position(values)
        out = np.zeros(len(values), dtype=np.uint64)
        present = ~(nulls | nans)
        out[present] = (1 + np.floor(where[present] * span)).astype(np.uint64)
        out[nans] = np.uint64((1 << bits) - 1)
        return out


def _check_codes(codes: Sequence[np.ndarray], bits: int) -> list[np.ndarray]:
    if not codes:
        raise OptimizeError("a curve needs at least one column")
    if bits < 1 or bits * len(codes) > 64:
        raise OptimizeError(f"{len(codes)} columns of {bits} bits don't fit in a 64-bit key")
    arrays = [np.asarray(c, dtype=np.uint64) for c in codes]
    if len({len(a) for a in arrays}) != 1:
        raise OptimizeError("every column of a curve needs the same number of values")
    limit = np.uint64((1 << bits) - 1) if bits < 64 else np.uint64(2**64 - 1)
    if any(len(a) and a.max() > limit for a in arrays):
        raise OptimizeError(f"codes must fit in {bits} bits")
    return arrays


def _interleave(codes: list[np.ndarray], bits: int) -> np.ndarray:
    """Bit `bits - 1 - level` of column `i` becomes bit `(bits - 1 - level) * d + (d - 1 - i)` of the key."""
    d = len(codes)
    key = np.zeros(len(codes[0]), dtype=np.uint64)
    one = np.uint64(1)
    for bit in range(bits):
        for i, code in enumerate(codes):
            key |= ((code >> np.uint64(bit)) & one) << np.uint64(bit * d + d - 1 - i)
    return key


def zorder(codes: Sequence[np.ndarray], bits: int) -> np.ndarray:
    """Z-order (Morton) keys: the columns' `bits`-wide codes bit-interleaved, most significant level first."""
    return _interleave(_check_codes(codes, bits), bits)


def hilbert(codes: Sequence[np.ndarray], bits: int) -> np.ndarray:
    """Hilbert keys of the points whose coordinates are the columns' `bits`-wide codes (Skilling's transform)."""
    x = [c.copy() for c in _check_codes(codes, bits)]
    d = len(x)
    if d == 1:
        return x[0]
    q = np.uint64(1) << np.uint64(bits - 1)
    while q > 1:
        p = q - np.uint64(1)
        for i in range(d):
            high = (x[i] & q) != 0
            x[0] = np.where(high, x[0] ^ p, x[0])
            if i:
                t = np.where(high, np.uint64(0), (x[0] ^ x[i]) & p)
                x[0] ^= t
                x[i] ^= t
        q >>= np.uint64(1)
    for i in range(1, d):
        x[i] ^= x[i - 1]
    t = np.zeros_like(x[0])
    q = np.uint64(1) << np.uint64(bits - 1)
    while q > 1:
        t = np.where((x[d - 1] & q) != 0, t ^ (q - np.uint64(1)), t)
        q >>= np.uint64(1)
    return _interleave([xi ^ t for xi in x], bits)


@dataclass(frozen=True, eq=False)
class Clustering:
    """A curve over named columns with each column's ranks: computes the key of any batch holding those columns."""

    columns: tuple[ColumnRanks, ...]
    curve: str = "zorder"
    bits: int = MAX_BITS_PER_COLUMN

    def __post_init__(self) -> None:
        if self.curve not in CURVES:
            raise OptimizeError(f"unknown curve {self.curve!r}; use one of {', '.join(CURVES)}")
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            raise OptimizeError(f"a column is named twice in {names}")
        if self.bits < 2 or self.bits * len(self.columns) > KEY_BITS:
            raise OptimizeError(f"{len(self.columns)} columns of {self.bits} bits don't fit in a {KEY_BITS}-bit key")

    @classmethod
    def fit(
        cls,
        data: pa.Table | pa.RecordBatch,
        columns: Sequence[str],
        *,
        curve: str = "zorder",
        buckets: int = DEFAULT_BUCKETS,
        bits: int | None = None,
    ) -> Clustering:
        """The clustering of `columns`, their ranks taken from `data` (a sample of one partition, or all of it)."""
        names = list(columns)
        missing = [n for n in names if n not in data.schema.names]
        if missing:
            raise OptimizeError(f"can't cluster by {missing}: not a column of {data.schema.names}")
        width = default_bits(len(names)) if bits is None else bits
        ranks = tuple(ColumnRanks.from_sample(n, data.column(n), buckets) for n in names)
        return cls(ranks, curve, width)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def codes(self, data: pa.Table | pa.RecordBatch) -> list[np.ndarray]:
        """Each clustered column's codes over `data`."""
        try:
            return [ranks.codes(data.column(ranks.name), self.bits) for ranks in self.columns]
        except KeyError:
            raise OptimizeError(f"the data lacks one of the clustered columns {list(self.names)}") from None

    def keys(self, data: pa.Table | pa.RecordBatch) -> pa.Int64Array:
        """The curve key of every row (non-negative int64: sorts the same in Arrow and in Spark)."""
        codes = self.codes(data)
        key = zorder(codes, self.bits) if self.curve == "zorder" else hilbert(codes, self.bits)
        return pa.array(key.view(np.int64))

    def sort_indices(self, data: pa.Table | pa.RecordBatch) -> pa.UInt64Array:
        """Row order along the curve; rows of one key cell are ordered by the clustered columns themselves."""
        order: Any = [("__key", "ascending")] + [(n, "ascending") for n in self.names]
        table = pa.table({"__key": self.keys(data), **{n: data.column(n) for n in self.names}})
        return pc.sort_indices(table, sort_keys=order)


def _roundest(low: int, high: int) -> int:
    """The integer in [low, high] with the most trailing zero bits: the start of the largest aligned cell inside."""
    if low >= high:
        return high
    level = (low ^ high).bit_length() - 1
    if low > 0 and (low & -low).bit_length() - 1 > level:
        return low
    return (high >> level) << level


def cut_boundaries(sorted_keys: np.ndarray, files: int, slack: float = 0.25) -> np.ndarray:
    """Keys at which to cut rows sorted by curve key into about `files` files: file `i` holds the keys below
    boundary `i`. Each cut may move up to `slack` of a file's rows from the even cut, to the start of the largest
    aligned cell of the curve in reach, so a file holds whole cells (a compact box) rather than slivers of two
    (files keep between `1 - 2 * slack` and `1 + 2 * slack` times the mean rows, ties aside). Works on all keys of a
    partition or on a sorted sample of them."""
    if files < 1:
        raise OptimizeError(f"files must be at least 1, got {files}")
    if not 0 <= slack < 0.5:
        raise OptimizeError(f"slack must be in [0, 0.5), got {slack}")
    keys = np.asarray(sorted_keys, dtype=np.int64)
    count = len(keys)
    if count == 0 or files == 1:
        return np.empty(0, dtype=np.int64)
    share = count / files
    out = []
    for cut in range(1, files):
        low = min(count - 1, max(0, int(np.floor(cut * share - slack * share))))
        high = min(count - 1, max(0, int(np.ceil(cut * share + slack * share)) - 1))
        out.append(_roundest(int(keys[low]) + 1, int(keys[high])))
    return np.unique(np.array(out, dtype=np.int64))
