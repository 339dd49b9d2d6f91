"""Choosing how to answer a partition filter: the primary key order or a secondary index.

Each candidate key order gets its own FilterPlan (`plan_candidates`, which depends only on the filter and the
table's definition, so the metastore caches it). A plan that leaves its leading column unbounded is a full scan of
its keyspace. An exact primary plan (bounded, no key filter) wins outright. Otherwise candidates are costed by the
keys their ranges hold, counted in the store and weighted by what the path costs per key: an index whose every
range pins the indexed value yields partitions in primary key order (ranges of different values are merged); any
other index path must sort its results, so its keys count double. A primary full scan is never cheaper than such an
ordered index path (the index holds one key per partition) and is then not counted at all. Each count stops at the
best cost so far, so choosing never reads more keys than the winner costs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sargable import keys
from sargable.errors import MetastoreError
from sargable.expr import BoundFilter
from sargable.metastore.layout import table_prefix
from sargable.metastore.records import TableDefinition
from sargable.metastore.schema import INDEXES, PARTITIONS
from sargable.plan import ExecutionStats, FilterPlan, plan_key_ranges, scan_bounds
from sargable.plan.keyfilter import KeyTest, compile_key_filter
from sargable.store import Store
from sargable.types import DataType

MAX_MERGED_GROUPS = 64
"""An index path over more distinct indexed values than this sorts its results instead of merging sorted streams."""
UNORDERED_WEIGHT = 2
"""Cost per key of an index path that must sort its results, relative to one that streams them in key order."""


def index_key_columns(table: TableDefinition, column: str) -> tuple[int, list[tuple[str, DataType]]]:
    """Position of `column` among the partition keys, and the index's key order (that column first)."""
    names = table.partition_key_names
    position = names.index(column)
    pkeys = list(table.partition_keys)
    return position, [pkeys[position], *pkeys[:position], *pkeys[position + 1 :]]


@dataclass(frozen=True)
class FilterPlans:
    """A bound partition filter with its plan over the primary key and over each usable index."""

    bound: BoundFilter
    primary: FilterPlan
    indexes: tuple[tuple[str, FilterPlan], ...] = ()
    """(indexed column, plan over the index's key order) for each index whose plan bounds the indexed column."""
    _ranges: dict[tuple[int, bytes], list[KeyRange]] = field(default_factory=dict, compare=False, repr=False)

    def ranges(self, plan: FilterPlan, prefix: bytes) -> list[KeyRange]:
        """One of these plans' scans as byte ranges under a keyspace `prefix`, each with its compiled key filter
        (computed once: the plans are cached per filter)."""
        key = (id(plan), prefix)
        found = self._ranges.get(key)
        if found is None:
            found = self._ranges[key] = key_ranges(plan, prefix)
        return found


@dataclass(frozen=True)
class KeyRange:
    """A scan of a plan as bytes: the keys in [start, stop) (stop None: to the keyspace's end; a Get's `stop` is
    None and `start` its key), and the test its keys must pass (None: all do)."""

    start: bytes
    stop: bytes | None
    is_get: bool
    test: KeyTest | None


def key_ranges(plan: FilterPlan, prefix: bytes) -> list[KeyRange]:
    """The plan's scans as `KeyRange`s under `prefix`, in order."""
    columns = plan.key_columns
    types = [t for _, t in columns]
    out = []
    for scan in plan.scans:
        test = None if scan.key_filter is None else compile_key_filter(scan.key_filter, columns, offset=len(prefix))
        if scan.is_get:
            assert scan.start is not None
            out.append(KeyRange(prefix + keys.encode(scan.start.values, types), None, True, test))
            continue
        start, stop = scan_bounds(scan, columns, prefix=prefix)
        if stop is None or start < stop:
            out.append(KeyRange(start, stop, False, test))
    return out


def plan_candidates(table: TableDefinition, bound: BoundFilter) -> FilterPlans:
    """Plan `bound` over the primary key order and, unless the primary plan is exact, over each secondary index."""
    if not table.partition_keys:
        raise MetastoreError(
            f"table {table.qualified_name} has no partition keys, so no partitions for a partition filter to select; "
            "a scan (Table.scan, `sargable explain`) skips its files by their statistics"
        )
    primary = plan_key_ranges(bound, list(table.partition_keys))
    if not table.indexes or (not primary.is_full_scan and not primary.has_key_filter):
        return FilterPlans(bound, primary)
    indexes = []
    for column in table.indexes:
        plan = plan_key_ranges(bound, index_key_columns(table, column)[1])
        if not plan.is_full_scan:
            indexes.append((column, plan))
    return FilterPlans(bound, primary, tuple(indexes))


def leading_groups(plan: FilterPlan) -> list[FilterPlan] | None:
    """The plan split into runs of scans that pin the leading (indexed) column to one value each, or None when a
    scan spans several values (or there are too many runs to merge). Each run yields keys in primary key order."""
    groups: list[list] = []
    last: Any = None
    for scan in plan.scans:
        start, end = scan.start, scan.end
        if start is None or end is None or not start.values or not end.values:
            return None
        value = start.values[0]
        if end.values[0] != value or value != value:  # a range over several values, or NaN
            return None
        if groups and last == value:
            groups[-1].append(scan)
        else:
            groups.append([scan])
            last = value
        if len(groups) > MAX_MERGED_GROUPS:
            return None
    return [FilterPlan(scans, plan.key_columns) for scans in groups]


@dataclass
class AccessPath:
    """The chosen way to run a filter: plan, keyspace prefix, the index used (None = primary)."""

    plan: FilterPlan
    prefix: bytes
    index: str | None = None
    candidates: list[dict[str, Any]] = field(default_factory=list)
    stats: ExecutionStats = field(default_factory=ExecutionStats)
    groups: list[FilterPlan] | None = None
    """For an index path: runs of the plan that each stream in primary key order (None: results need a sort)."""

    def describe(self) -> str:
        if not self.plan.scans:
            return "none (the filter can't match any partition)"
        kind = "full scan" if self.plan.is_full_scan else "key ranges"
        return f"primary ({kind})" if self.index is None else f"index on {self.index} ({kind})"

    @property
    def ordered(self) -> bool:
        """Whether the path yields partitions in primary key order without sorting them."""
        return self.index is None or self.groups is not None


@dataclass
class FilterExplain:
    """What `Table.explain_filter` (and `Metastore.explain_filter`) reports."""

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


def _count(store: Store, plan: FilterPlan, keyspace: str, prefix: bytes, budget: int | None) -> int:
    """Keys in the plan's ranges (a Get counts one), counted up to `budget` (then a number above it is returned)."""
    total = 0
    for scan in plan.scans:
        if scan.is_get:
            total += 1
        else:
            start, stop = scan_bounds(scan, plan.key_columns, prefix=prefix)
            if stop is not None and start >= stop:
                continue
            if budget is None:
                total += store.count(keyspace, start, stop)
            else:
                for _ in store.scan(keyspace, start, stop, limit=budget - total + 1):
                    total += 1
        if budget is not None and total > budget:
            break
    return total


def choose_access_path(store: Store, table: TableDefinition, plans: FilterPlans) -> AccessPath:
    """The cheapest way to answer a filter on `table` among its primary order and its secondary indexes."""
    prefix = table_prefix(table.table_id)
    primary = AccessPath(plans.primary, prefix)
    if not plans.indexes:
        return primary
    ordered, unordered = [], []
    for column, plan in plans.indexes:
        position = table.partition_key_names.index(column)
        path = AccessPath(plan, prefix + bytes([position]), column, groups=leading_groups(plan))
        (ordered if path.ordered else unordered).append(path)
    options: list[tuple[AccessPath, str, int]] = [(path, INDEXES, 1) for path in ordered]
    if not primary.plan.is_full_scan:
        options.append((primary, PARTITIONS, 1))
    options.extend((path, INDEXES, UNORDERED_WEIGHT) for path in unordered)
    if primary.plan.is_full_scan and not ordered:
        options.append((primary, PARTITIONS, 1))
    candidates: list[dict[str, Any]] = []
    if primary.plan.is_full_scan and ordered:
        candidates.append({"path": "primary", "estimated_keys": None, "note": "full scan"})
    best, best_cost = options[0][0], None
    if len(options) > 1:
        for path, keyspace, weight in options:
            budget = None if best_cost is None else best_cost // weight
            cost = _count(store, path.plan, keyspace, path.prefix, budget) * weight
            candidates.append({"path": path.index or "primary", "estimated_keys": cost})
            if best_cost is None or cost < best_cost:
                best, best_cost = path, cost
    else:
        candidates.append({"path": best.index or "primary", "estimated_keys": None, "note": "only bounded path"})
    best.candidates = candidates
    return best
