"""Choosing how to answer a partition filter: the primary key order or a secondary index.

Each candidate key order gets its own FilterPlan. A plan that leaves the leading column unbounded is a full scan
of its keyspace; among bounded candidates, an exact primary plan (no key filter) wins outright, otherwise each is
probed by counting the keys it would examine, stopping at the best count so far, so probing never costs more
than the winner itself.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sargable.expr import Expr
from sargable.metastore.records import Table
from sargable.plan import ExecutionStats, FilterPlan, execute, plan_filter
from sargable.store import Store
from sargable.types import DataType


def index_key_columns(table: Table, column: str) -> tuple[int, list[tuple[str, DataType]]]:
    """Position of `column` among the partition keys, and the index's key order (that column first)."""
    names = table.partition_key_names
    position = names.index(column)
    pkeys = list(table.partition_keys)
    return position, [pkeys[position], *pkeys[:position], *pkeys[position + 1 :]]


@dataclass
class AccessPath:
    """The chosen way to run a filter: plan, keyspace prefix, the index used (None = primary)."""

    plan: FilterPlan
    prefix: bytes
    index: str | None = None
    candidates: list[dict[str, Any]] = field(default_factory=list)
    stats: ExecutionStats = field(default_factory=ExecutionStats)

    def describe(self) -> str:
        if not self.plan.scans:
            return "none (the filter can't match any partition)"
        kind = "full scan" if self.plan.is_full_scan else "key ranges"
        return f"primary ({kind})" if self.index is None else f"index on {self.index} ({kind})"


@dataclass
class FilterExplain:
    """What `Metastore.explain_filter` reports."""

    table: str
    filter: str
    access_path: str
    plan: str
    candidates: list[dict[str, Any]]
    keys_examined: int
    partitions_returned: int
    elapsed_ms: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        lines = [
            f"table:               {self.table}",
            f"filter:              {self.filter}",
            f"access path:         {self.access_path}",
            "plan:",
            *(f"  {line}" for line in self.plan.splitlines()),
            f"keys examined:       {self.keys_examined}",
            f"partitions returned: {self.partitions_returned}",
            f"elapsed:             {self.elapsed_ms:.3f} ms",
        ]
        return "\n".join(lines)


def _probe(store: Store, path: AccessPath, keyspace: str, columns: list, budget: int | None) -> int:
    """Keys the plan examines, counted up to `budget` (then budget + 1 is returned)."""
    stats = ExecutionStats()
    for _ in execute(path.plan, store, keyspace, columns, prefix=path.prefix, stats=stats):
        if budget is not None and stats.keys_examined > budget:
            break
    return stats.keys_examined


def choose_access_path(store: Store, table: Table, bound: Expr, primary_ks: str, index_ks: str) -> AccessPath:
    """The cheapest way to answer `bound` on `table` among its primary order and its secondary indexes."""
    table_prefix = table.table_id.to_bytes(8, "big")
    primary = AccessPath(plan_filter(bound, list(table.partition_keys)), table_prefix)
    if not table.indexes or (not primary.plan.is_full_scan and not primary.plan.has_key_filter):
        return primary
    options: list[tuple[AccessPath, str, list]] = []
    for column in table.indexes:
        position, columns = index_key_columns(table, column)
        plan = plan_filter(bound, columns)
        if not plan.is_full_scan:
            options.append((AccessPath(plan, table_prefix + bytes([position]), column), index_ks, columns))
    if not options:
        return primary
    options.append((primary, primary_ks, list(table.partition_keys)))
    best: AccessPath | None = None
    best_cost: int | None = None
    candidates = []
    for path, keyspace, columns in options:
        if path.plan.is_full_scan and best is not None:
            candidates.append({"path": path.index or "primary", "estimated_keys": None, "note": "full scan"})
            continue
        cost = _probe(store, path, keyspace, columns, best_cost)
        candidates.append({"path": path.index or "primary", "estimated_keys": cost})
        if best_cost is None or cost < best_cost:
            best, best_cost = path, cost
    assert best is not None
    best.candidates = candidates
    return best
