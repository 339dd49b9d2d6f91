"""Layout health: what a user looks at to decide whether a table needs `optimize` (files per partition, small
files, and how much of a column's range each file covers, which is what data skipping on that column can't skip).

Range coverage of a column is the mean over the files (with rows) of `(file max - file min) / (table max - table
min)`, on a numeric projection of the column's values:

- integers, decimals, floats and booleans project to their numeric value; dates to their day number; timestamps
  to microseconds since the epoch. Infinite float bounds are clamped to the finite extremes of the table.
- strings project to the 8 bytes that follow the common prefix of the table's min and max, read as a
  big-endian number (a shorter tail padded with 0x00, or with 0xFF for a truncated upper bound, which stands for
  its extensions). Every value between the table's bounds shares that prefix, so the projection is monotone.

A file whose bounds are unknown covers the whole range (nothing can skip it), unless its NULL and NaN counts
account for every row (then it covers nothing). When the table's range is one value, every file with values
covers all of it.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sargable.errors import OptimizeError
from sargable.rewrite import DEFAULT_TARGET_FILE_BYTES, MIN_FILE_RATIO
from sargable.stats import ColumnStats, FileStats, column_stats
from sargable.types import DataType, parse_type

_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = _EPOCH.replace(tzinfo=dt.UTC)
_TAIL_BYTES = 8

AS_WRITTEN = "as written"
VALUE = "value"
STRING_PREFIX = "string prefix"


def _percent(share: float | None) -> str:
    return "n/a" if share is None else f"{100 * share:.1f}%"


@dataclass(frozen=True)
class ColumnSpread:
    """How much of a column's range the table's files cover, on average (1.0: every file spans all of it)."""

    column: str
    coverage: float | None
    """Mean over files of the share of the column's range a file's min..max covers; None when no file has bounds."""
    files: int
    """Files counted (those with rows)."""
    projection: str
    """How values became numbers: `value` or `string prefix` (see the module docstring)."""

    def to_dict(self) -> dict[str, Any]:
        return {"column": self.column, "coverage": self.coverage, "files": self.files, "projection": self.projection}


@dataclass(frozen=True)
class LayoutHealth:
    """A table's layout in numbers: files per partition, small files, and each chosen column's range coverage."""

    partitions: int
    files: int
    bytes: int
    rows: int
    files_per_partition_median: float
    files_per_partition_max: int
    small_file_bytes: int
    """Files under this size count as small (those optimize rewrites as too small)."""
    small_files: int
    columns: tuple[ColumnSpread, ...]
    layouts: tuple[tuple[str, int], ...] = ()
    """Files by `FileStats.layout` (`as written` for files no optimize wrote), most files first."""

    @property
    def small_file_share(self) -> float:
        return self.small_files / self.files if self.files else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "partitions": self.partitions,
            "files": self.files,
            "bytes": self.bytes,
            "rows": self.rows,
            "files_per_partition_median": self.files_per_partition_median,
            "files_per_partition_max": self.files_per_partition_max,
            "small_file_bytes": self.small_file_bytes,
            "small_files": self.small_files,
            "small_file_share": self.small_file_share,
            "columns": [c.to_dict() for c in self.columns],
            "layouts": dict(self.layouts),
        }

    def __str__(self) -> str:
        lines = [
            f"partitions:          {self.partitions:,}",
            f"files:               {self.files:,} ({self.files_per_partition_median:,g} per partition median, "
            f"{self.files_per_partition_max:,} max)",
            f"small files:         {self.small_files:,} ({_percent(self.small_file_share)}) under "
            f"{self.small_file_bytes:,} bytes",
        ]
        if self.layouts:
            lines.append("layouts:             " + "; ".join(f"{count:,} {name}" for name, count in self.layouts))
        if self.columns:
            lines.append("range per file:      mean share of a column's range that one file's min..max covers")
            width = max(len(c.column) for c in self.columns)
            lines.extend(f"  {c.column:<{width}}  {_percent(c.coverage)}" for c in self.columns)
        return "\n".join(lines)


def _number(value: Any) -> float:
    if isinstance(value, dt.datetime):
        epoch = _EPOCH if value.tzinfo is None else _EPOCH_UTC
        return (value - epoch) / dt.timedelta(microseconds=1)
    if isinstance(value, dt.date):
        return float(value.toordinal())
    return float(value)


def _prefix_projection(low: str, high: str) -> Callable[[str, bool], float]:
    """Strings as the number that their 8 UTF-8 bytes after the common prefix of `low` and `high` spell."""
    a, b = low.encode("utf-8"), high.encode("utf-8")
    common = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))

    def project(value: str, open_upper: bool) -> float:
        tail = value.encode("utf-8")[common : common + _TAIL_BYTES]
        return float(int.from_bytes(tail.ljust(_TAIL_BYTES, b"\xff" if open_upper else b"\x00"), "big"))

    return project


def _bounds(stats: ColumnStats) -> tuple[Any, Any, bool] | None:
    if stats.min is None or stats.max is None:
        return None
    return stats.min, stats.max, stats.max_exact


def column_coverage(files: Sequence[FileStats], column: str, dtype: DataType | str) -> ColumnSpread:
    """The mean share of `column`'s range that a file covers, over the files with rows (module docstring)."""
    dtype = parse_type(dtype)
    if not dtype.is_orderable:
        raise OptimizeError(f"column {column!r} of type {dtype} has no order, so no range")
    with_rows = [f for f in files if f.row_count > 0]
    per_file = [column_stats(f, column) for f in with_rows]
    known = [b for b in map(_bounds, per_file) if b is not None]
    text = dtype.is_string
    projection = STRING_PREFIX if text else VALUE
    if not known:
        return ColumnSpread(column, None, len(with_rows), projection)
    low = min(b[0] for b in known)
    high = max(b[1] for b in known)
    if text:
        prefix = _prefix_projection(low, high)

        def project(value: Any, upper: bool, exact: bool = True) -> float:
            return prefix(value, upper and not exact)

    else:

        def project(value: Any, upper: bool, exact: bool = True) -> float:
            return _number(value)

    points = [p for lo, hi, exact in known for p in (project(lo, False), project(hi, True, exact))]
    finite = [p for p in points if math.isfinite(p)]
    if not finite:
        return ColumnSpread(column, None, len(with_rows), projection)
    floor, ceiling = min(finite), max(finite)
    span = ceiling - floor
    shares = []
    for file, stats in zip(with_rows, per_file, strict=True):
        bounds = _bounds(stats)
        if bounds is None:
            empty = stats.null_count is not None and stats.nan_count is not None
            shares.append(0.0 if empty and stats.null_count + stats.nan_count >= file.row_count else 1.0)
        elif span == 0:
            shares.append(1.0)
        else:
            lo = min(max(project(bounds[0], False), floor), ceiling)
            hi = min(max(project(bounds[1], True, bounds[2]), floor), ceiling)
            shares.append((hi - lo) / span)
    return ColumnSpread(column, math.fsum(shares) / len(shares), len(with_rows), projection)


def layout_health(
    partitions: Mapping[str, Sequence[FileStats]],
    schema: Sequence[tuple[str, Any]],
    columns: Sequence[str] = (),
    *,
    target_file_bytes: int = DEFAULT_TARGET_FILE_BYTES,
) -> LayoutHealth:
    """The layout health of a table's partitions (name -> files) and, for `columns`, their range coverage."""
    types = {name: parse_type(dtype) for name, dtype in schema}
    unknown = [c for c in columns if c not in types]
    if unknown:
        raise OptimizeError(f"unknown column(s) {unknown}; the table has {list(types)}")
    counts = [len(files) for files in partitions.values()]
    every = [f for files in partitions.values() for f in files]
    small = int(target_file_bytes * MIN_FILE_RATIO)
    return LayoutHealth(
        partitions=len(counts),
        files=len(every),
        bytes=sum(f.size_bytes for f in every),
        rows=sum(f.row_count for f in every),
        files_per_partition_median=float(statistics.median(counts)) if counts else 0.0,
        files_per_partition_max=max(counts, default=0),
        small_file_bytes=small,
        small_files=sum(1 for f in every if f.size_bytes < small),
        columns=tuple(column_coverage(every, c, types[c]) for c in columns),
        layouts=tuple(Counter(f.layout or AS_WRITTEN for f in every).most_common()),
    )
