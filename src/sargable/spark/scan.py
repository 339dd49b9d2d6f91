"""Scan planning shared by `read` and the data source: bind, decompose, prune partitions, skip files.

`plan_scan` needs no Spark: it turns a filter into the list of files to read and the residual Spark must still
apply, and records what was pruned in a `ScanReport`.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

from sargable.analyze import decompose
from sargable.expr import TRUE, Expr, bind, columns_of, render
from sargable.metastore import Metastore, Table
from sargable.skipping import select_files
from sargable.stats import ColumnStats, FileStats


@dataclass(frozen=True)
class ScanReport:
    """What a planned scan prunes: partitions, files and bytes (total vs selected) and the planning time."""

    table: str
    partitions_total: int
    partitions_selected: int
    files_total: int
    files_selected: int
    bytes_total: int
    bytes_selected: int
    planning_ms: float
    filter: str | None = None
    partition_filter: str | None = None
    file_filter: str | None = None
    residual: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        lines = [
            f"scan of {self.table}: planned in {self.planning_ms:.1f} ms",
            f"  partitions {self.partitions_selected} of {self.partitions_total}",
            f"  files      {self.files_selected} of {self.files_total}",
            f"  bytes      {self.bytes_selected} of {self.bytes_total}",
        ]
        for label, text in (
            ("filter", self.filter),
            ("partition filter (exact)", self.partition_filter),
            ("file filter (statistics)", self.file_filter),
            ("residual (Spark)", self.residual),
        ):
            if text is not None:
                lines.append(f"  {label}: {text}")
        lines.extend(f"  note: {note}" for note in self.notes)
        return "\n".join(lines)


@dataclass(frozen=True)
class ScanPlan:
    """The files to read, the residual filter Spark applies to their rows, and the report."""

    table: Table
    files: list[FileStats]
    residual: Expr | None
    report: ScanReport


def _part(expr: Expr | None) -> Expr | None:
    """None for a part that selects everything."""
    return None if expr is None or expr == TRUE else expr


def _text(expr: Expr | None) -> str | None:
    return None if expr is None else render(expr)


def _with_partition_stats(file: FileStats) -> FileStats:
    """The file with statistics for its partition columns: one value (or only NULLs) throughout."""
    columns = dict(file.columns)
    for key, value in (file.partition or {}).items():
        if value is None:
            columns[key] = ColumnStats(null_count=file.row_count, nan_count=0)
        elif isinstance(value, float) and math.isnan(value):
            columns[key] = ColumnStats(null_count=0, nan_count=file.row_count)
        else:
            columns[key] = ColumnStats(min=value, max=value, null_count=0, nan_count=0)
    return dataclasses.replace(file, columns=columns)


class TableListing(NamedTuple):
    """Every file of a table at one version, its partition count and total bytes."""

    files: tuple[FileStats, ...]
    partitions: int
    bytes: int


_LISTINGS: OrderedDict[tuple[str, int, int], TableListing] = OrderedDict()
_LISTINGS_LOCK = threading.Lock()
CACHED_FILES_MAX = 100_000
"""Most file entries the process keeps in its listing cache (whole tables, least recently used evicted first)."""


def table_listing(ms: Metastore, table: Table) -> TableListing:
    """The table's files and totals, cached per metastore URL, table id and version (every change bumps the version).

    Table ids are never reused within a metastore; only replacing a metastore by a new one at the same URL while
    this process runs could make an entry stale.
    """
    key = (ms.url, table.table_id, table.version)
    with _LISTINGS_LOCK:
        cached = _LISTINGS.get(key)
        if cached is not None:
            _LISTINGS.move_to_end(key)
            return cached
    with ms.snapshot():
        current = ms.get_table(table.database, table.name)
        files = tuple(ms.iter_files(table.database, table.name))
        listing = TableListing(files, ms.count_partitions(table.database, table.name), sum(f.size_bytes for f in files))
    if len(files) <= CACHED_FILES_MAX:
        with _LISTINGS_LOCK:
            _LISTINGS[(ms.url, current.table_id, current.version)] = listing
            while sum(len(entry.files) for entry in _LISTINGS.values()) > CACHED_FILES_MAX:
                _LISTINGS.popitem(last=False)
    return listing


def table_totals(ms: Metastore, table: Table) -> tuple[int, int, int]:
    """(partitions, files, bytes) of the whole table."""
    listing = table_listing(ms, table)
    return listing.partitions, len(listing.files), listing.bytes


def plan_scan(
    ms: Metastore,
    table: Table,
    expr: Expr | None,
    *,
    notes: Sequence[str] = (),
    bound: bool = False,
    unusable_stats: Sequence[str] = (),
) -> ScanPlan:
    """Plan a scan of `table` for rows where `expr` is TRUE (None: every row).

    The partition part of the filter goes to the metastore (exact, not re-applied); the file part prunes files by
    their statistics (inclusive, so it stays in the residual), except the statistics of `unusable_stats` columns.
    """
    started = time.perf_counter()
    db, name = table.database, table.name
    if expr is not None and not bound:
        expr = bind(expr, list(table.schema))
    partition_part = files_part = residual = None
    keys = table.partition_key_names
    if expr is not None:
        # Partition keys count as statistics columns too: each file has one value of each, so the file part of an
        # OR across partition and data columns (`id < 10 or ds = '2024-01-01'`) can still skip files.
        unusable = {c.lower() for c in unusable_stats}
        stats_columns = [n for n, _ in table.columns if n.lower() not in unusable]
        parts = decompose(expr, partition_keys=keys, stats_columns=[*stats_columns, *keys])
        partition_part, files_part, residual = _part(parts.partition), _part(parts.files), _part(parts.residual)
    if partition_part is None:
        listing = table_listing(ms, table)
        files = list(listing.files)
        partitions_total = partitions_selected = listing.partitions
        files_total, bytes_total = len(files), listing.bytes
    else:
        partitions = ms.get_partitions_by_filter(db, name, partition_part)
        partitions_selected = len(partitions)
        files = ms.list_files(db, name, partitions) if partitions else []
        partitions_total, files_total, bytes_total = table_totals(ms, table)
    if files_part is not None and files:
        if {c.lower() for c in columns_of(files_part)} & {k.lower() for k in keys}:
            files = [_with_partition_stats(f) for f in files]
        files = select_files(files_part, files, list(table.schema))
    report = ScanReport(
        table=table.qualified_name,
        partitions_total=partitions_total,
        partitions_selected=partitions_selected,
        files_total=files_total,
        files_selected=len(files),
        bytes_total=bytes_total,
        bytes_selected=sum(f.size_bytes for f in files),
        planning_ms=(time.perf_counter() - started) * 1000.0,
        filter=_text(expr),
        partition_filter=_text(partition_part),
        file_filter=_text(files_part),
        residual=_text(residual),
        notes=tuple(notes),
    )
    return ScanPlan(table=table, files=files, residual=residual, report=report)
