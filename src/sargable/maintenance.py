"""Table maintenance without Spark: what an optimize would rewrite (its plan, and the dry run of `sargable optimize`),
read from the metastore's file entries alone, and a table's layout health (`sargable describe`).

`plan_optimize` checks the request (`cluster_by` must name orderable data columns, `where` partition keys only),
lists the selected partitions and their files in one snapshot, and applies `sargable.rewrite.plan_rewrite`; the
files' `layout` (written by an earlier optimize) lets a re-run leave alone what it already did. `sgs.optimize` runs
the same plan with Spark.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sargable.curves import CURVES, layout_tag
from sargable.errors import OptimizeError
from sargable.health import LayoutHealth, layout_health
from sargable.metastore import Metastore, Partition, TableDefinition, partition_name
from sargable.rewrite import COMPACTED, DEFAULT_MIN_INPUT_FILES, DEFAULT_TARGET_FILE_BYTES, RewritePlan, plan_rewrite
from sargable.stats import FileStats

DEFAULT_CURVE = "hilbert"
UNPARTITIONED = "(unpartitioned)"
"""The name the plan gives the files of a table without partition keys."""


def cluster_columns(table: TableDefinition, cluster_by: Sequence[str] | str | None) -> tuple[str, ...]:
    """The table's data columns named by `cluster_by` (a list, or comma-separated text; case-insensitive), in the
    given order; an unknown, partition-key, unorderable or repeated column is an OptimizeError."""
    if cluster_by is None:
        return ()
    if isinstance(cluster_by, str):
        cluster_by = [c.strip() for c in cluster_by.split(",") if c.strip()]
    if not isinstance(cluster_by, (list, tuple)) or not all(isinstance(c, str) for c in cluster_by):
        raise OptimizeError(f"cluster_by must be a list of column names, got {cluster_by!r}")
    data = {name.lower(): (name, dtype) for name, dtype in table.columns}
    keys = {name.lower(): name for name in table.partition_key_names}
    out: list[str] = []
    for column in cluster_by:
        if column.lower() in keys:
            raise OptimizeError(
                f"can't cluster {table.qualified_name} by {column!r}: it is a partition key, the same on every row of "
                f"a partition; cluster by data columns ({', '.join(n for n, _ in table.columns)})"
            )
        if column.lower() not in data:
            raise OptimizeError(
                f"can't cluster {table.qualified_name} by {column!r}: no such column; its data columns are "
                f"{', '.join(n for n, _ in table.columns)}"
            )
        name, dtype = data[column.lower()]
        if not dtype.is_orderable:
            raise OptimizeError(f"can't cluster {table.qualified_name} by {name!r}: its type {dtype} has no order")
        if name in out:
            raise OptimizeError(f"column {name!r} is named twice in cluster_by")
        out.append(name)
    return tuple(out)


@dataclass(frozen=True)
class OptimizePlan:
    """What an optimize of one table would do: the rewrite plan, and the layout its new files would carry."""

    table: TableDefinition
    """The table's definition at the snapshot the plan was read from."""
    rewrite: RewritePlan
    layout: str
    """`compacted`, or the curve and columns (`hilbert(user_id, event_time)`) of a clustering."""
    curve: str | None
    """The curve of a clustering; None for a compaction."""

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table.qualified_name, "layout": self.layout, **self.rewrite.to_dict()}

    def format(self, max_partitions: int = 20) -> str:
        """The plan as text (what `sargable optimize --dry-run` prints)."""
        return f"table:      {self.table.qualified_name} (new files: {self.layout})\n" + self.rewrite.format(
            max_partitions
        )

    def __str__(self) -> str:
        return self.format()


def _by_partition(
    table: TableDefinition, partitions: Sequence[Partition], files: Sequence[FileStats]
) -> dict[str, list[FileStats]]:
    """The files grouped by partition name, every listed partition included (in key order)."""
    if not table.partition_keys:
        return {UNPARTITIONED: list(files)}
    keys = table.partition_key_names
    grouped: dict[str, list[FileStats]] = {p.name: [] for p in partitions}
    for file in files:
        values = tuple((file.partition or {}).get(k) for k in keys)
        grouped.setdefault(partition_name(table.partition_keys, values), []).append(file)
    return grouped


def plan_optimize(
    ms: Metastore,
    table: str,
    where: str | None = None,
    cluster_by: Sequence[str] | str | None = None,
    *,
    target_file_bytes: int = DEFAULT_TARGET_FILE_BYTES,
    min_input_files: int = DEFAULT_MIN_INPUT_FILES,
    curve: str = DEFAULT_CURVE,
) -> OptimizePlan:
    """The plan of an optimize of `table` (`db.table`), from the metastore's file entries (no data is read): the
    partitions `where` selects (a filter on partition keys; all when None) and their files to rewrite."""
    if curve not in CURVES:
        raise OptimizeError(f"unknown curve {curve!r}; use one of {', '.join(CURVES)}")
    with ms.snapshot():
        handle = ms.table(table)
        columns = cluster_columns(handle.definition, cluster_by)
        keys = handle.partition_key_names
        if not keys and where is not None:
            raise OptimizeError(
                f"{handle.qualified_name} has no partition keys: optimize rewrites it whole, with no where filter"
            )
        partitions = handle.partitions(where) if keys else []
        files = handle.files(partitions if where is not None else None, stats=())
    layout = layout_tag(curve, columns) if columns else COMPACTED
    plan = plan_rewrite(
        _by_partition(handle.definition, partitions, files),
        target_file_bytes=target_file_bytes,
        min_input_files=min_input_files,
        cluster_by=columns,
        layout=layout,
    )
    return OptimizePlan(handle.definition, plan, layout, curve if columns else None)


def describe(
    ms: Metastore,
    table: str,
    columns: Sequence[str] | None = None,
    *,
    target_file_bytes: int = DEFAULT_TARGET_FILE_BYTES,
) -> LayoutHealth:
    """The layout health of `table` (files per partition, small files, layouts) and how much of each column's range
    one file covers: of `columns`, by default every orderable data column."""
    with ms.snapshot():
        handle = ms.table(table)
        definition = handle.definition
        if columns is None:
            columns = [name for name, dtype in definition.columns if dtype.is_orderable]
        known = {name.lower(): name for name, _ in definition.schema}
        names = [known.get(c.lower(), c) for c in columns]
        partitions = handle.partitions() if definition.partition_keys else []
        files = handle.files(stats=names)
    return layout_health(
        _by_partition(definition, partitions, files),
        definition.schema,
        names,
        target_file_bytes=target_file_bytes,
    )
