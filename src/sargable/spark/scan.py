"""Scan planning shared by `read` and the data source: bind, decompose, prune partitions, skip files.

`plan_scan` needs no Spark: it turns a filter into the list of files to read and the residual Spark must still
apply, and records what was pruned in a `ScanReport`.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from sargable.analyze import decompose
from sargable.expr import TRUE, Expr, bind, columns_of, render
from sargable.metastore import Metastore, Partition, Table, TableStats
from sargable.skipping import select_files
from sargable.stats import FileStats


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


_LISTINGS: OrderedDict[tuple[str, int, int, bool | frozenset[str]], tuple[FileStats, ...]] = OrderedDict()
_LISTINGS_LOCK = threading.Lock()
CACHED_FILES_MAX = 100_000
"""Most file entries the process keeps in its listing cache (whole tables, least recently used evicted first)."""


def table_files(ms: Metastore, table: Table, *, stats: bool | frozenset[str]) -> tuple[FileStats, ...]:
    """Every file of the table (`stats` as in `Metastore.list_files`), cached per metastore URL, table id, version.

    Every change bumps the version, and table ids are never reused within a metastore; only replacing a metastore
    by a new one at the same URL while this process runs could make an entry stale.
    """
    key = (ms.url, table.table_id, table.version, stats)
    with _LISTINGS_LOCK:
        cached = _LISTINGS.get(key)
        if cached is not None:
            _LISTINGS.move_to_end(key)
            return cached
    with ms.snapshot():
        current = ms.get_table(table.database, table.name)
        files = tuple(ms.iter_files(table.database, table.name, stats=stats))
    if len(files) <= CACHED_FILES_MAX:
        with _LISTINGS_LOCK:
            _LISTINGS[(ms.url, current.table_id, current.version, stats)] = files
            while sum(len(entry) for entry in _LISTINGS.values()) > CACHED_FILES_MAX:
                _LISTINGS.popitem(last=False)
    return files


class ScanPlanner:
    """Plans one scan: bind and decompose the filter, choose the partitions, list and skip their files, report.

    The partition part of the filter goes to the metastore (exact, not re-applied); the file part prunes files by
    their statistics (inclusive, so it stays in the residual), except the statistics of `unusable_stats` columns.
    Totals come from `Metastore.table_stats` (no listing); file statistics are decoded only when a file filter needs
    them. `sargable.spark.join` extends `partitions`, `skip_files` and `report_fields` to prune by join keys.
    """

    report_type: type[ScanReport] = ScanReport

    def __init__(
        self,
        ms: Metastore,
        table: Table,
        expr: Expr | None,
        *,
        notes: Sequence[str] = (),
        bound: bool = False,
        unusable_stats: Sequence[str] = (),
    ) -> None:
        self.ms, self.table, self.notes = ms, table, tuple(notes)
        self.expr = expr if expr is None or bound else bind(expr, list(table.schema))
        self.unusable_stats = {c.lower() for c in unusable_stats}
        self.partition_keys = {k.lower() for k in table.partition_key_names}

    def partitions(self, partition_part: Expr | None, totals: TableStats) -> list[Partition] | None:
        """The partitions to read (None: all of them, not listed)."""
        if partition_part is None:
            return None
        return self.ms.get_partitions_by_filter(self.table.database, self.table.name, partition_part)

    def stats_columns(self, files_part: Expr | None) -> set[str]:
        """The data columns whose file statistics skipping will look at (lower case)."""
        return set() if files_part is None else {c.lower() for c in columns_of(files_part)}

    def skip_files(self, files: list[FileStats], residual: Expr | None) -> tuple[list[FileStats], Expr | None]:
        """Further file skipping and residual (none here)."""
        return files, residual

    def report_fields(self, residual: Expr | None) -> dict[str, Any]:
        """Fields of the report beyond the counts and filters (and the residual's text)."""
        return {"residual": _text(residual)}

    def plan(self) -> ScanPlan:
        started = time.perf_counter()
        ms, table, expr = self.ms, self.table, self.expr
        partition_part = files_part = residual = None
        keys = table.partition_key_names
        if expr is not None:
            # Partition keys count as statistics columns too: each file has one value of each, so the file part of
            # an OR across partition and data columns (`id < 10 or ds = '2024-01-01'`) can still skip files.
            stats_columns = [n for n, _ in table.columns if n.lower() not in self.unusable_stats]
            parts = decompose(expr, partition_keys=keys, stats_columns=[*stats_columns, *keys])
            partition_part, files_part, residual = _part(parts.partition), _part(parts.files), _part(parts.residual)
        wanted = self.stats_columns(files_part)
        stats = frozenset(n for n, _ in table.columns if n.lower() in wanted) or False
        # Outside the snapshot: a table from an older metastore gets its totals counted and stored once.
        totals = ms.table_stats(table.database, table.name)
        with ms.snapshot():
            partitions = self.partitions(partition_part, totals)
            if partitions is None:
                files = list(table_files(ms, table, stats=stats))
            elif partitions:
                files = ms.list_files(table.database, table.name, partitions, stats=stats)
            else:
                files = []
        if files_part is not None and files:
            # A listed file carries its partition values, which skipping takes as exact statistics of those columns.
            files = select_files(files_part, files, list(table.schema))
        files, residual = self.skip_files(files, residual)
        report = self.report_type(
            table=table.qualified_name,
            partitions_total=totals.partitions,
            partitions_selected=totals.partitions if partitions is None else len(partitions),
            files_total=totals.files,
            files_selected=len(files),
            bytes_total=totals.bytes,
            bytes_selected=sum(f.size_bytes for f in files),
            planning_ms=(time.perf_counter() - started) * 1000.0,
            filter=_text(expr),
            partition_filter=_text(partition_part),
            file_filter=_text(files_part),
            notes=self.notes,
            **self.report_fields(residual),
        )
        return ScanPlan(table=table, files=files, residual=residual, report=report)


def plan_scan(
    ms: Metastore,
    table: Table,
    expr: Expr | None,
    *,
    notes: Sequence[str] = (),
    bound: bool = False,
    unusable_stats: Sequence[str] = (),
) -> ScanPlan:
    """Plan a scan of `table` for rows where `expr` is TRUE (None: every row); see `ScanPlanner`."""
    return ScanPlanner(ms, table, expr, notes=notes, bound=bound, unusable_stats=unusable_stats).plan()
