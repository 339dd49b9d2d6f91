"""Per-file column statistics: what data skipping knows about a file without reading it.

`ColumnStats` holds one column's bounds, NULL and NaN counts, and (for low-cardinality columns) the file's value set;
`FileStats` holds a file's path, size, row count, its columns' statistics and its partition values, which count as
exact statistics of the partition columns (`column_stats`). Every statistic may be `None`, meaning "unknown" (never
"zero"). Bounds exclude NULL and NaN; a bound a writer truncated is flagged inexact (`min_exact` / `max_exact`) and
is then used only in the safe direction (see `ColumnStats`).

The readers (Parquet footers, Arrow tables) live in `sargable.parquet_stats`, which builds on this module.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

from sargable.errors import StatisticsError

MAX_DISTINCT = 64
"""Files with at most this many distinct values in a column keep the value set (`ColumnStats.distinct`)."""


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _check_count(name: str, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise StatisticsError(f"{name} must be a non-negative int or None (unknown), got {value!r}")


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """Statistics of one column in one file; `None` everywhere means unknown.

    - `min` / `max`: smallest / largest non-NULL, non-NaN value (NaN sorts above every number, as in Spark, and is
      counted in `nan_count` instead).
    - `null_count`: NULL values; `nan_count`: NaN values (float columns only).
    - `distinct`: every non-NULL, non-NaN value of the file, when a writer kept them (at most `MAX_DISTINCT`);
      it makes `=`, `IN`, `!=`, `NOT IN` and `LIKE` exact for the file.
    - `min_exact=False`: `min` is only a lower bound (for strings, a truncated prefix of the true minimum).
    - `max_exact=False`: for strings, `max` may be a truncated prefix of the true maximum, so every value `v` only
      satisfies `v[:len(max)] <= max`; for other types `max` is an upper bound that may not occur.
    """

    min: Any = None
    max: Any = None
    null_count: int | None = None
    nan_count: int | None = None
    distinct: frozenset[Any] | None = None
    min_exact: bool = True
    max_exact: bool = True

    def __post_init__(self) -> None:
        # Exact ints, bools and floats are checked inline (a listing builds one of these per column and file); any
        # other value takes the general checks, which decide as they always did.
        nulls, nans = self.null_count, self.nan_count
        if nulls is not None and not (nulls.__class__ is int and nulls >= 0):
            _check_count("null_count", nulls)
        if nans is not None and not (nans.__class__ is int and nans >= 0):
            _check_count("nan_count", nans)
        if self.min_exact.__class__ is not bool or self.max_exact.__class__ is not bool:
            for name in ("min_exact", "max_exact"):
                if not isinstance(getattr(self, name), bool):
                    raise StatisticsError(f"{name} must be True or False, got {getattr(self, name)!r}")
        low, high = self.min, self.max
        if _is_nan(low) or _is_nan(high):
            raise StatisticsError("min and max exclude NaN; count NaN values in nan_count instead")
        if low is not None and high is not None:
            try:
                inverted = low > high
            except TypeError:
                raise StatisticsError(f"min {low!r} and max {high!r} are not comparable values of one type") from None
            if inverted:
                raise StatisticsError(f"min {low!r} is greater than max {high!r}")
        distinct = self.distinct
        if distinct is not None:
            if isinstance(distinct, (str, bytes)) or not isinstance(distinct, Iterable):
                raise StatisticsError(f"distinct must be a set of values, got {distinct!r}")
            values = frozenset(distinct)
            if None in values:
                raise StatisticsError("distinct holds the non-NULL values; count NULLs in null_count instead")
            if any(map(_is_nan, values)):
                raise StatisticsError("distinct excludes NaN; count NaN values in nan_count instead")
            if values is not distinct:
                object.__setattr__(self, "distinct", values)

    @classmethod
    def from_values(cls, values: Iterable[Any], max_distinct: int = MAX_DISTINCT) -> ColumnStats:
        """Exact statistics of a column's Python values (None is NULL), with the value set if small enough."""
        nulls = nans = 0
        seen: set[Any] = set()
        lo = hi = None
        for value in values:
            if value is None:
                nulls += 1
            elif _is_nan(value):
                nans += 1
            else:
                seen.add(value)
                try:
                    if lo is None or value < lo:
                        lo = value
                    if hi is None or value > hi:
                        hi = value
                except TypeError:
                    raise StatisticsError(f"values of one column must be of one type, got {value!r}") from None
        return cls(
            min=lo,
            max=hi,
            null_count=nulls,
            nan_count=nans,
            distinct=frozenset(seen) if len(seen) <= max_distinct else None,
        )


@dataclass(frozen=True, slots=True)
class FileStats:
    """A data file: path, row count, size, per-column statistics, its partition values (name -> value), and how an
    optimize laid out its rows (`layout`)."""

    path: str
    row_count: int
    size_bytes: int
    columns: Mapping[str, ColumnStats] = field(default_factory=dict)
    partition: Mapping[str, Any] | None = None
    layout: str | None = None
    """Set by `optimize` on the files it writes: `compacted`, or the curve and columns the rows were clustered by
    (`hilbert(user_id, event_time)`), so a later optimize leaves them alone; None for files as a writer left them."""

    def __post_init__(self) -> None:
        if not isinstance(self.path, str):
            raise StatisticsError(f"a file's path must be a string, got {self.path!r}")
        _check_count("row_count", self.row_count)
        if self.row_count is None:
            raise StatisticsError(f"row_count of {self.path!r} must be known")
        _check_count("size_bytes", self.size_bytes)
        if self.size_bytes is None:
            raise StatisticsError(f"size_bytes of {self.path!r} must be known (0 if it doesn't matter)")
        if self.columns.__class__ is not dict and not isinstance(self.columns, Mapping):
            raise StatisticsError(f"columns must map column names to ColumnStats, got {type(self.columns).__name__}")
        partition = self.partition
        if partition is not None and partition.__class__ is not dict and not isinstance(partition, Mapping):
            raise StatisticsError(f"partition must map partition keys to values, got {self.partition!r}")
        if self.layout is not None and (not isinstance(self.layout, str) or not self.layout):
            raise StatisticsError(f"layout must be a non-empty string or None, got {self.layout!r}")
        for name, stats in self.columns.items():
            if not isinstance(name, str) or not isinstance(stats, ColumnStats):
                raise StatisticsError(f"columns must map names to ColumnStats, got {name!r}: {stats!r}")
            counted = (stats.null_count or 0) + (stats.nan_count or 0) + len(stats.distinct or ())
            if counted > self.row_count:
                raise StatisticsError(
                    f"column {name!r} of {self.path!r} counts more NULL, NaN and distinct values than its "
                    f"{self.row_count} rows"
                )


_new_file = FileStats.__new__
_set_path, _set_rows, _set_size, _set_columns, _set_partition, _set_layout = (
    getattr(FileStats, name).__set__ for name in ("path", "row_count", "size_bytes", "columns", "partition", "layout")
)
"""The slots' own setters: a frozen dataclass's `__init__` assigns through `object.__setattr__`, which costs more."""


def listed_files(
    paths: Sequence[str],
    row_counts: Sequence[int],
    sizes: Sequence[int],
    partitions: Sequence[Mapping[str, Any] | None],
) -> list[FileStats]:
    """FileStats without column statistics (`columns == {}`, layout None) of fields their caller has already checked
    as `FileStats.__post_init__` would (a metastore's listing: path strings and non-negative counts read from entries
    a commit validated), built without checking them again: several times cheaper, which is much of what listing
    100,000 files costs."""
    if not len(paths) == len(row_counts) == len(sizes) == len(partitions):
        raise StatisticsError(f"{len(paths)} paths, {len(row_counts)} row counts, {len(sizes)} sizes, "
                              f"{len(partitions)} partitions")
    count = len(paths)
    files = list(map(_new_file, repeat(FileStats, count)))
    # Each field set over all files by `map` (a loop in C, not a Python call per field and file), drained by deque.
    for setter, values in (
        (_set_path, paths),
        (_set_rows, row_counts),
        (_set_size, sizes),
        (_set_columns, map(dict, repeat((), count))),
        (_set_partition, partitions),
        (_set_layout, repeat(None, count)),
    ):
        deque(map(setter, files, values), 0)
    return files


def partition_stats(value: Any, rows: int) -> ColumnStats:
    """Exact statistics of a partition column, whose value is the same on every row of the file."""
    if value is None:
        return ColumnStats(null_count=rows, nan_count=0, distinct=frozenset())
    if _is_nan(value):
        return ColumnStats(null_count=0, nan_count=rows, distinct=frozenset())
    return ColumnStats(min=value, max=value, null_count=0, nan_count=0, distinct=frozenset({value}))


UNKNOWN = ColumnStats()
"""The statistics of a column a file says nothing about."""


def column_stats(file: FileStats, name: str) -> ColumnStats:
    """A column's statistics in a file: the file's own, else those of its partition value, else `UNKNOWN`."""
    stats = file.columns.get(name)
    if stats is not None:
        return stats
    if file.partition is not None and name in file.partition:
        return partition_stats(file.partition[name], file.row_count)
    return UNKNOWN
