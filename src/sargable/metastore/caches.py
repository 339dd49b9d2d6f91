"""The caches a `Metastore` holds for its tables: bound filters, partition-filter plans, whole-table file listings
and loaded partitions.

Each is keyed by what makes an entry right, never by a URL: a bound filter by the table's columns and the filter
text; a plan by the table's partition keys, indexes and the filter; a listing and a version's loaded partitions
(`sargable.metastore.loaded`) by the table's id and version (every change bumps the version, and a store never
reuses a table id). All are bounded and evict the least recently used entry first. A kept listing also answers for
some of the table's partitions (`Listings.of_partitions`, `Listings.of_positions`): the files of each partition are
one run of the listing.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterable
from itertools import chain
from operator import itemgetter
from typing import Any, Generic, TypeVar

from sargable.expr import BoundFilter
from sargable.metastore.access import FilterPlans
from sargable.metastore.loaded import LoadedPartitions
from sargable.stats import FileStats

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

PLANS_MAX = 256
"""Partition-filter plans kept per metastore."""
PLAN_TEXT_MAX = 10_000
"""Filter texts (or bytes) longer than this are planned each time, not cached."""
LISTED_FILES_MAX = 100_000
"""File entries kept per metastore in whole-table listings."""
LOADED_PARTITIONS_MAX = 100_000
"""Partitions kept per metastore in loaded table versions."""
BOUND_MAX = 256
"""Bound filters kept per metastore."""
WANTED_MAX = 64
"""Table versions listed whole and waiting to be loaded by their next partition filter, per metastore."""


class LRU(Generic[K, V]):
    """A mapping of at most `size` entries that evicts the least recently used one."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def pop(self, key: K) -> V | None:
        return self._entries.pop(key, None)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


class Listings:
    """Whole-table file listings by (table id, version, statistics decoded), bounded by the files they hold."""

    def __init__(self, max_files: int = LISTED_FILES_MAX) -> None:
        self.max_files = max_files
        self._entries: OrderedDict[tuple, tuple[FileStats, ...]] = OrderedDict()
        self._files = 0
        self._runs: dict[tuple, dict[tuple[Any, ...], tuple[int, int]]] = {}
        """Per kept listing (made on first use): each partition's values -> its files' run (start, stop)."""
        self._positioned: dict[tuple, list[tuple[FileStats, ...]]] = {}
        """Per kept listing (made on first use): the files of each position of its version's loaded partitions."""

    def of_partitions(
        self, key: tuple, names: list[str], partitions: Iterable[tuple[Any, ...]]
    ) -> list[FileStats] | None:
        """The files of the partitions with these values (those without files give none), in the listing's order,
        from the kept listing `key`; None when there is none. The values must compare in Python as the partition
        keys do in the store (no floating point: -0.0 == 0.0 and NaN != NaN)."""
        listing = self.get(key)
        if listing is None:
            return None
        runs = self._runs_of(key, listing, names)
        spans = sorted(runs[values] for values in set(partitions) if values in runs)
        return [file for start, stop in spans for file in listing[start:stop]]

    def of_positions(
        self, key: tuple, names: list[str], loaded: LoadedPartitions, positions: list[int]
    ) -> list[FileStats] | None:
        """As `of_partitions`, for the partitions at these positions (ascending) of the loaded partitions of the
        listing's table version: each position's run is looked up once per listing, then taken by index."""
        listing = self.get(key)
        if listing is None:
            return None
        files = self._positioned.get(key)
        if files is None or len(files) != len(loaded):
            by_values = self._runs_of(key, listing, names)
            spans = [by_values.get(p.values, (0, 0)) for p in loaded.partitions]
            files = self._positioned[key] = [listing[start:stop] for start, stop in spans]
        if not positions:
            return []
        if len(positions) == 1:
            return list(files[positions[0]])
        return list(chain.from_iterable(itemgetter(*positions)(files)))

    def _runs_of(
        self, key: tuple, listing: tuple[FileStats, ...], names: list[str]
    ) -> dict[tuple[Any, ...], tuple[int, int]]:
        """Each partition's values -> its files' run (start, stop) in the kept listing `key` (made on first use)."""
        runs = self._runs.get(key)
        if runs is None:
            runs = self._runs[key] = {}
            for index, file in enumerate(listing):
                values = tuple(file.partition[name] for name in names) if file.partition is not None else ()
                start, _ = runs.get(values, (index, index))
                runs[values] = (start, index + 1)
        return runs

    def get(self, key: tuple) -> tuple[FileStats, ...] | None:
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
        return found

    def put(self, key: tuple, files: tuple[FileStats, ...]) -> None:
        """Keep a listing (one larger than the whole budget is not kept)."""
        if len(files) > self.max_files:
            return
        old = self._entries.pop(key, None)
        self._files -= 0 if old is None else len(old)
        self._runs.pop(key, None)
        self._positioned.pop(key, None)
        self._entries[key] = files
        self._files += len(files)
        while self._files > self.max_files:
            evicted_key, evicted = self._entries.popitem(last=False)
            self._runs.pop(evicted_key, None)
            self._positioned.pop(evicted_key, None)
            self._files -= len(evicted)

    def clear(self) -> None:
        self._entries.clear()
        self._runs.clear()
        self._positioned.clear()
        self._files = 0


class Loaded:
    """Loaded partitions by (table id, version), bounded by the partitions they hold."""

    def __init__(self, max_partitions: int | None = None) -> None:
        self.max_partitions = LOADED_PARTITIONS_MAX if max_partitions is None else max_partitions
        self._entries: OrderedDict[tuple[int, int], LoadedPartitions] = OrderedDict()
        self._partitions = 0
        self._wanted: LRU[tuple[int, int], bool] = LRU(WANTED_MAX)

    def want(self, key: tuple[int, int]) -> None:
        """Say a version was listed whole (a scan with no partition filter): its next partition filter loads it."""
        self._wanted.put(key, True)

    def take_wanted(self, key: tuple[int, int]) -> bool:
        """Whether a version was listed whole and not loaded since (then it no longer is: one load per listing)."""
        return self._wanted.pop(key) is not None

    def get(self, key: tuple[int, int]) -> LoadedPartitions | None:
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
        return found

    def put(self, key: tuple[int, int], loaded: LoadedPartitions) -> None:
        """Keep a version's partitions (more than the whole budget are not kept)."""
        if len(loaded) > self.max_partitions:
            return
        old = self._entries.pop(key, None)
        self._partitions -= 0 if old is None else len(old)
        self._entries[key] = loaded
        self._partitions += len(loaded)
        while self._partitions > self.max_partitions:
            _, evicted = self._entries.popitem(last=False)
            self._partitions -= len(evicted)

    def clear(self) -> None:
        self._entries.clear()
        self._partitions = 0
        self._wanted.clear()


class Caches:
    """What one `Metastore` caches for its tables."""

    def __init__(self) -> None:
        self.bound: LRU[tuple, BoundFilter] = LRU(BOUND_MAX)
        self.plans: LRU[tuple, FilterPlans] = LRU(PLANS_MAX)
        self.listings = Listings()
        self.partitions = Loaded()

    def clear(self) -> None:
        self.bound.clear()
        self.plans.clear()
        self.listings.clear()
        self.partitions.clear()
