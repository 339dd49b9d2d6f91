"""A table version's partitions kept in memory, and partition filters answered from them with no store read.

`LoadedPartitions` holds one version's partition row keys in key order, a `Partition` each, and for each secondary
index the index keys of those partitions (in index key order) with their partitions' positions. A filter's plans
(`access.plan_candidates`, the plans the store path runs) then run over these sorted keys: each range (as bytes,
`FilterPlans.ranges`) is two bisections, each Get one, and a range's key filter is the store path's compiled byte
test (`plan.keyfilter.compile_key_filter`) on the same key bytes. So the answer is the store's by construction, at the
price of a key list per version. The metastore keeps one (`Caches.partitions`, by table id and version, which
every change bumps), loaded by the first partition filter after a scan listed the version's whole table (so a one-off
whole scan does not pay for it).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from operator import itemgetter, lt
from typing import Any

from sargable.deadline import check_deadline
from sargable.metastore import partitions as partition_rows
from sargable.metastore.access import FilterPlans, KeyRange
from sargable.metastore.layout import layout_of
from sargable.metastore.records import Partition, TableDefinition
from sargable.metastore.schema import COVERED, INDEXES, key_range
from sargable.plan import FilterPlan
from sargable.plan.keyfilter import KeyTest
from sargable.store import Store


@dataclass(frozen=True)
class Selected:
    """What a filter selected of the loaded partitions: their positions (ascending), the path that found them, the
    plan it ran, the keys it looked at, and each candidate path's count of keys in its ranges."""

    positions: list[int]
    access_path: str
    plan: FilterPlan
    keys_examined: int
    candidates: list[dict[str, Any]]


class LoadedPartitions:
    """One table version's partitions: keys and `Partition` records in key order, index keys with positions.

    The records are shared by every caller that lists them (as a kept file listing's entries are): read them, don't
    change them."""

    __slots__ = ("_indexes", "_positions", "keys", "partitions", "table")

    def __init__(self, table: TableDefinition, keys: list[bytes], partitions: list[Partition]) -> None:
        self.table = table
        self.keys = keys
        """The partition row keys, ascending."""
        self.partitions = partitions
        """A record per key, in the same order."""
        self._positions = {id(p): i for i, p in enumerate(partitions)}
        self._indexes: dict[str, tuple[list[bytes], list[int]]] = {}
        """Per indexed column: the partitions' index keys, ascending, and each one's partition position."""

    def __len__(self) -> int:
        return len(self.keys)

    def positions_of(self, partitions: Iterable[Any]) -> list[int] | None:
        """The positions of these records (ascending, each once) when every one is a record of this set, else None."""
        try:
            positions = list(map(self._positions.__getitem__, map(id, partitions)))
        except KeyError:
            return None
        if all(map(lt, positions, islice(positions, 1, None))):
            return positions
        return sorted(set(positions))

    def select(self, plans: FilterPlans) -> Selected:
        """The partitions a filter's plans select. Of the candidate paths (the primary key order and each index
        plan), the one whose ranges hold the fewest keys runs: each gives the same partitions."""
        prefix = layout_of(self.table).prefix
        options = [("primary", plans.primary, self.keys, None, plans.ranges(plans.primary, prefix))]
        for column, plan in plans.indexes:
            index_keys, positions = self._indexes[column]
            index_prefix = prefix + bytes([self.table.partition_key_names.index(column)])
            options.append((column, plan, index_keys, positions, plans.ranges(plan, index_prefix)))
        costed = [(option, _spans(option[4], option[2])) for option in options]
        candidates = [{"path": o[0], "estimated_keys": sum(hi - lo for lo, hi, _ in s)} for o, s in costed]
        (name, plan, sorted_keys, positions, _), spans = min(costed, key=lambda c: sum(hi - lo for lo, hi, _ in c[1]))
        found: list[int] = []
        examined = 0
        for lo, hi, test in spans:
            examined += hi - lo
            if test is None:
                found.extend(range(lo, hi) if positions is None else positions[lo:hi])
                continue
            for i in range(lo, hi):
                check_deadline()
                if test(sorted_keys[i]):
                    found.append(i if positions is None else positions[i])
        if positions is not None:
            found.sort()
        kind = "full scan" if plan.is_full_scan else "key ranges"
        path = f"{'primary' if positions is None else 'index on ' + name} ({kind}), over the loaded partitions"
        if not plan.scans:
            path = "none (the filter can't match any partition)"
        return Selected(found, path, plan, examined, candidates)

    def records(self, positions: Sequence[int]) -> list[Partition]:
        """The records at these positions."""
        if not positions:
            return []
        if len(positions) == 1:
            return [self.partitions[positions[0]]]
        return list(itemgetter(*positions)(self.partitions))


def load(store: Store, table: TableDefinition) -> LoadedPartitions:
    """Every partition of the table, with its index keys, as the open transaction sees it (`table` must be that
    version)."""
    keys_: list[bytes] = []
    records: list[Partition] = []
    for page in partition_rows.pages_all(store, table):
        keys_.extend(page.keys)
        records.extend(page.partitions())
    loaded = LoadedPartitions(table, keys_, records)
    for column in table.indexes:
        loaded._indexes[column] = _index_entries(store, table, records, column)
    return loaded


def values_compare_as_keys(table: TableDefinition) -> bool:
    """Whether the table's partition values are equal in Python exactly when their keys are (no floating point:
    -0.0 == 0.0 in Python, NaN != NaN; no decimals, whose 1.0 == 1.00)."""
    return not any(dtype.is_floating or dtype.name == "decimal" for _, dtype in table.partition_keys)


def _index_entries(
    store: Store, table: TableDefinition, records: list[Partition], column: str
) -> tuple[list[bytes], list[int]]:
    """The index keys of these partitions, ascending, and each one's position: read from the index (its keys are
    sorted and decoded a page at a time) where values compare as keys and every partition has exactly one entry,
    else encoded here from each partition's values."""
    index = layout_of(table).indexes[column]
    if values_compare_as_keys(table):
        where = {p.values: i for i, p in enumerate(records)}
        order = [*range(1, index.position + 1), 0, *range(index.position + 1, len(index.columns))]
        index_keys: list[bytes] = []
        positions: list[int] = []
        for block in store.scan_blocks(INDEXES, *key_range(index.prefix), uniform=COVERED):
            page = partition_rows.Page.of_block(table, block, None, index.codec, index.size, order, INDEXES)
            for key, values in zip(page.keys, page.values(), strict=True):
                position = where.get(values)
                if position is not None:
                    index_keys.append(key)
                    positions.append(position)
        if len(positions) == len(records) and len(set(positions)) == len(records):
            return index_keys, positions
    entries = sorted((index.key(p.values), i) for i, p in enumerate(records))
    return [key for key, _ in entries], [i for _, i in entries]


def _spans(ranges: list[KeyRange], sorted_keys: list[bytes]) -> list[tuple[int, int, KeyTest | None]]:
    """Each key range as the positions [lo, hi) of the sorted keys in it, with its key test (empty ones left out)."""
    spans = []
    for span in ranges:
        lo = bisect_left(sorted_keys, span.start)
        if span.is_get:
            if lo < len(sorted_keys) and sorted_keys[lo] == span.start:
                spans.append((lo, lo + 1, span.test))
            continue
        hi = len(sorted_keys) if span.stop is None else bisect_left(sorted_keys, span.stop, lo)
        if hi > lo:
            spans.append((lo, hi, span.test))
    return spans
