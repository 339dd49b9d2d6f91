"""Planning a table's compaction or clustering: which files of which partitions to rewrite into how many files.

The rules are Iceberg's `rewrite_data_files` (bin-pack and sort strategies), whose defaults Delta's `OPTIMIZE` is
close to:

- A file is **far from the target** when it is smaller than `min_file_bytes` (0.75 x `target_file_bytes`) or larger
  than `max_file_bytes` (1.8 x); files in between are left alone by compaction, and so are small files that an
  optimize wrote (`FileStats.layout` set): an estimate of output bytes from input bytes can't make them bigger, so
  rewriting them again would only churn.
- Compaction rewrites a partition's far files when there are at least `min_input_files` of them (and at least two:
  one small file rewritten alone stays small), or when one of them is too large (it is split).
- Clustering (`cluster_by`) rewrites every file of a partition together, so the whole partition follows one curve,
  when the partition has at least two files or one too large; a partition of one file in range is left alone
  (clustering it can't change which files a filter skips), and so is one whose files all have the `layout` this
  clustering writes (`sargable.curves.layout_tag`), so running optimize again rewrites only what changed.
- The number of output files is Iceberg's: `input bytes / target`, rounded up when the remainder would make a file
  of at least `min_file_bytes`, else rounded down if spreading the remainder keeps the average file under
  1.1 x target and under the write maximum (halfway between target and `max_file_bytes`); at least one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sargable.errors import OptimizeError
from sargable.stats import FileStats

DEFAULT_TARGET_FILE_BYTES = 128 * 1024 * 1024
MIN_FILE_RATIO = 0.75
MAX_FILE_RATIO = 1.8
DEFAULT_MIN_INPUT_FILES = 2

COMPACTED = "compacted"
"""The `FileStats.layout` of the files a compaction (an optimize without `cluster_by`) writes."""

SMALL_FILES = "small files"
LARGE_FILES = "large files"
CLUSTERING = "clustering"


def file_size_limits(target_file_bytes: int) -> tuple[int, int]:
    """The (min, max) file sizes a rewrite leaves alone: 0.75x and 1.8x the target, as Iceberg's defaults."""
    return int(target_file_bytes * MIN_FILE_RATIO), int(target_file_bytes * MAX_FILE_RATIO)


def output_file_count(input_bytes: int, target_file_bytes: int, min_file_bytes: int, max_file_bytes: int) -> int:
    """How many files `input_bytes` of data are rewritten into (Iceberg's `numOutputFiles`)."""
    if input_bytes <= target_file_bytes:
        return 1
    with_remainder = -(-input_bytes // target_file_bytes)
    without_remainder = input_bytes // target_file_bytes
    if input_bytes % target_file_bytes > min_file_bytes:
        return with_remainder
    write_max = target_file_bytes + (max_file_bytes - target_file_bytes) / 2
    if input_bytes / without_remainder < min(1.1 * target_file_bytes, write_max):
        return without_remainder
    return with_remainder


def _bytes(value: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class PartitionRewrite:
    """One partition's part of a plan: the files to rewrite, into how many files, and the files left alone."""

    partition: str
    rewrite: tuple[FileStats, ...]
    keep: tuple[FileStats, ...]
    output_files: int
    reason: str

    @property
    def bytes_in(self) -> int:
        return sum(f.size_bytes for f in self.rewrite)

    @property
    def rows_in(self) -> int:
        return sum(f.row_count for f in self.rewrite)

    def to_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "reason": self.reason,
            "files_in": len(self.rewrite),
            "files_out": self.output_files,
            "files_kept": len(self.keep),
            "bytes_in": self.bytes_in,
            "rows_in": self.rows_in,
        }


@dataclass(frozen=True)
class RewritePlan:
    """What an optimize would do (its dry run): the partitions to rewrite and the totals of the table."""

    target_file_bytes: int
    min_file_bytes: int
    max_file_bytes: int
    cluster_by: tuple[str, ...]
    partitions: tuple[PartitionRewrite, ...]
    """The partitions with files to rewrite, in the order they were given."""
    partitions_total: int
    files_total: int
    bytes_total: int

    @property
    def files_in(self) -> int:
        return sum(len(p.rewrite) for p in self.partitions)

    @property
    def files_out(self) -> int:
        return sum(p.output_files for p in self.partitions)

    @property
    def files_kept(self) -> int:
        """Files of the rewritten partitions that are left alone (already near the target size)."""
        return sum(len(p.keep) for p in self.partitions)

    @property
    def bytes_in(self) -> int:
        return sum(p.bytes_in for p in self.partitions)

    @property
    def rows_in(self) -> int:
        return sum(p.rows_in for p in self.partitions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "target_file_bytes": self.target_file_bytes,
            "min_file_bytes": self.min_file_bytes,
            "max_file_bytes": self.max_file_bytes,
            "cluster_by": list(self.cluster_by),
            "partitions_total": self.partitions_total,
            "partitions_rewritten": len(self.partitions),
            "files_total": self.files_total,
            "bytes_total": self.bytes_total,
            "files_in": self.files_in,
            "files_out": self.files_out,
            "files_kept": self.files_kept,
            "bytes_in": self.bytes_in,
            "rows_in": self.rows_in,
            "partitions": [p.to_dict() for p in self.partitions],
        }

    def __str__(self) -> str:
        return self.format()

    def format(self, max_partitions: int = 20) -> str:
        """The plan as text, listing at most `max_partitions` partitions."""
        clustering = f", cluster by {', '.join(self.cluster_by)}" if self.cluster_by else ""
        lines = [
            f"target file size {_bytes(self.target_file_bytes)} (rewrite files under "
            f"{_bytes(self.min_file_bytes)} or over {_bytes(self.max_file_bytes)}){clustering}",
            f"partitions: {len(self.partitions):,} of {self.partitions_total:,} to rewrite",
            f"files:      {self.files_in:,} -> {self.files_out:,} ({self.files_kept:,} left alone in those "
            f"partitions; {self.files_total:,} in the table)",
            f"bytes:      {_bytes(self.bytes_in)} of {_bytes(self.bytes_total)}; rows {self.rows_in:,}",
        ]
        if self.partitions:
            width = max(len(p.partition) for p in self.partitions[:max_partitions])
            for p in self.partitions[:max_partitions]:
                kept = f", {len(p.keep):,} left alone" if p.keep else ""
                lines.append(
                    f"  {p.partition:<{width}}  {len(p.rewrite):,} files {_bytes(p.bytes_in)} -> "
                    f"{p.output_files:,} ({p.reason}{kept})"
                )
            if len(self.partitions) > max_partitions:
                lines.append(f"  ... and {len(self.partitions) - max_partitions:,} more partitions")
        return "\n".join(lines)


def _partition_plan(
    name: str,
    files: Sequence[FileStats],
    target: int,
    low: int,
    high: int,
    min_input_files: int,
    cluster: bool,
    layout: str | None,
) -> PartitionRewrite | None:
    too_large = [f for f in files if f.size_bytes > high]
    if cluster:
        if not too_large and (len(files) < 2 or all(f.layout is not None and f.layout == layout for f in files)):
            return None
        rewrite, keep, reason = tuple(files), (), CLUSTERING
    else:
        is_far = [(f.size_bytes < low and f.layout is None) or f.size_bytes > high for f in files]
        far = [f for f, flag in zip(files, is_far, strict=True) if flag]
        if not too_large and len(far) < max(2, min_input_files):
            return None
        rewrite = tuple(far)
        keep = tuple(f for f, flag in zip(files, is_far, strict=True) if not flag)
        reason = LARGE_FILES if too_large and len(far) == len(too_large) else SMALL_FILES
    count = output_file_count(sum(f.size_bytes for f in rewrite), target, low, high)
    return PartitionRewrite(name, rewrite, keep, count, reason)


def plan_rewrite(
    partitions: Mapping[str, Sequence[FileStats]],
    *,
    target_file_bytes: int = DEFAULT_TARGET_FILE_BYTES,
    min_input_files: int = DEFAULT_MIN_INPUT_FILES,
    cluster_by: Sequence[str] = (),
    min_file_bytes: int | None = None,
    max_file_bytes: int | None = None,
    layout: str | None = None,
) -> RewritePlan:
    """The rewrite plan of a table's partitions (name -> its files), by the rules of the module docstring; `layout`
    is what a clustering writes, so that partitions already clustered that way are left alone."""
    if isinstance(target_file_bytes, bool) or not isinstance(target_file_bytes, int) or target_file_bytes < 1:
        raise OptimizeError(f"target_file_bytes must be a positive number of bytes, got {target_file_bytes!r}")
    if isinstance(min_input_files, bool) or not isinstance(min_input_files, int) or min_input_files < 1:
        raise OptimizeError(f"min_input_files must be a positive int, got {min_input_files!r}")
    default_low, default_high = file_size_limits(target_file_bytes)
    low = default_low if min_file_bytes is None else min_file_bytes
    high = default_high if max_file_bytes is None else max_file_bytes
    if not 0 <= low <= target_file_bytes <= high:
        raise OptimizeError(
            f"file size limits must satisfy 0 <= min ({low}) <= target ({target_file_bytes}) <= max ({high})"
        )
    if isinstance(cluster_by, str):
        cluster_by = [c.strip() for c in cluster_by.split(",") if c.strip()]
    columns = tuple(cluster_by)
    if len(set(columns)) != len(columns):
        raise OptimizeError(f"a column is named twice in cluster_by {list(columns)}")
    planned = []
    files_total = bytes_total = 0
    for name, files in partitions.items():
        files = list(files)
        if not all(isinstance(f, FileStats) for f in files):
            raise OptimizeError(f"partition {name!r}: plan_rewrite takes lists of sargable.FileStats")
        files_total += len(files)
        bytes_total += sum(f.size_bytes for f in files)
        entry = _partition_plan(name, files, target_file_bytes, low, high, min_input_files, bool(columns), layout)
        if entry is not None:
            planned.append(entry)
    return RewritePlan(target_file_bytes, low, high, columns, tuple(planned), len(partitions), files_total, bytes_total)
