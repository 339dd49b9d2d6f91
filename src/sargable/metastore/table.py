"""`Table`: the handle of one table, bound to the store and to one version of the table's definition.

`Metastore.table("db.t")` reads the definition once; the handle's methods then read and write the table without
looking it up again. Each read runs in one read transaction (the caller's, inside `Metastore.snapshot`); `scan`
also reads the definition in its transaction unless the handle was made in it, so a scan's definition, totals,
partitions and files always come from one snapshot. Each write runs in one transaction with the table's catalog
row locked and leaves the handle at its version (`refresh` gives a handle of the current one).
"""

from __future__ import annotations

import dataclasses
import gc
import time
import uuid
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import chain, islice
from typing import TYPE_CHECKING, Any

from sargable.domain import storable_string
from sargable.errors import MetastoreError
from sargable.expr import BoundFilter, Expr, bind_filter, columns_of
from sargable.expr.bound import unbound_expr
from sargable.metastore import blockstate, intents, loaded, tombstones, totals
from sargable.metastore import commit as commits
from sargable.metastore import files as file_entries
from sargable.metastore import partitions as partition_rows
from sargable.metastore.access import FilterExplain, FilterPlans, choose_access_path, plan_candidates
from sargable.metastore.alter import change_columns
from sargable.metastore.caches import PLAN_TEXT_MAX, Caches
from sargable.metastore.catalog import bump, lock_table, read_table
from sargable.metastore.commit import CommitResult
from sargable.metastore.evolution import add_columns, check_keys, widen_column
from sargable.metastore.hive import HivePartition
from sargable.metastore.indexes import create_index
from sargable.metastore.intents import WriteIntent
from sargable.metastore.loaded import LoadedPartitions
from sargable.metastore.partitions import Page, PartitionSpec, partition_values
from sargable.metastore.records import Partition, TableDefinition, TableStats
from sargable.metastore.tombstones import Tombstone
from sargable.plan import FilterPlan
from sargable.scan import KeySet, Scan, plan_scan
from sargable.stats import FileStats
from sargable.store import Store
from sargable.types import DataType

if TYPE_CHECKING:
    import pyarrow as pa

FilterArg = str | bytes | Expr | BoundFilter
"""A filter as the handle takes it: text, `sargable.dumps` bytes, an expression tree, or a bound filter."""


class Table:
    """A table of the metastore: its definition (`definition`), partitions, files, totals, indexes, commits, scans."""

    __slots__ = ("_caches", "_store", "_transaction", "definition")

    def __init__(self, store: Store, caches: Caches, definition: TableDefinition) -> None:
        self._store = store
        self._caches = caches
        self.definition = definition
        """The table's definition at this handle's version."""
        self._transaction = store.transaction_id

    def __repr__(self) -> str:
        return f"<Table {self.qualified_name} version {self.version}>"

    # ------------------------------------------------------------------------------------------- the definition

    @property
    def database(self) -> str:
        return self.definition.database

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def qualified_name(self) -> str:
        return self.definition.qualified_name

    @property
    def table_id(self) -> int:
        return self.definition.table_id

    @property
    def version(self) -> int:
        return self.definition.version

    @property
    def columns(self) -> tuple[tuple[str, DataType], ...]:
        return self.definition.columns

    @property
    def partition_keys(self) -> tuple[tuple[str, DataType], ...]:
        return self.definition.partition_keys

    @property
    def partition_key_names(self) -> list[str]:
        return self.definition.partition_key_names

    @property
    def schema(self) -> list[tuple[str, DataType]]:
        """Data columns followed by partition keys: what a filter over whole rows binds against."""
        return self.definition.schema

    @property
    def location(self) -> str:
        return self.definition.location

    @property
    def properties(self) -> dict[str, str]:
        return self.definition.properties

    @property
    def indexes(self) -> tuple[str, ...]:
        """The partition keys with a secondary index, in creation order."""
        return self.definition.indexes

    @property
    def files_from_folders(self) -> bool:
        """Whether engines fill the table without registering files (see `TableDefinition.files_from_folders`)."""
        return self.definition.files_from_folders

    @property
    def retention_seconds(self) -> float:
        """How long a file removed by a commit stays on disk for readers of older snapshots (the table property
        `sargable.deleted_file_retention_seconds`, default 7 days; see `sargable.metastore.tombstones`)."""
        return tombstones.retention_seconds(self.definition)

    def refresh(self) -> Table:
        """A handle of the table's current version."""
        return Table(self._store, self._caches, read_table(self._store, self.database, self.name))

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """One read transaction for the block (the caller's, when one is open)."""
        if self._store.in_transaction:
            yield
            return
        with self._store.transaction(readonly=True):
            yield

    def _in_this_snapshot(self) -> Table:
        """This handle when its definition was read in the open transaction, else the definition read in it."""
        if self._transaction is not None and self._transaction == self._store.transaction_id:
            return self
        current = read_table(self._store, self.database, self.name)
        if current.table_id != self.table_id:
            raise MetastoreError(
                f"table {self.qualified_name} was dropped and created again since this handle was made; "
                "open it again with Metastore.table"
            )
        return Table(self._store, self._caches, current)

    # ------------------------------------------------------------------------------------------------ partitions

    def _plans(self, definition: TableDefinition, filter: FilterArg, dialect: str) -> FilterPlans:
        """The bound partition filter and its candidate plans; cached per table definition for texts, bytes and
        bound filters (a scan's partition part) of up to `PLAN_TEXT_MAX` characters."""
        key = None
        if isinstance(filter, (str, bytes)) and len(filter) <= PLAN_TEXT_MAX:
            key = (definition.table_id, definition.partition_keys, definition.indexes, dialect, filter)
        elif isinstance(filter, BoundFilter) and len(filter.text) <= PLAN_TEXT_MAX:
            key = (definition.table_id, definition.partition_keys, definition.indexes, filter)
            cached = self._caches.plans.get(key)
            if cached is not None:
                return cached
        plans = plan_candidates(definition, _partition_filter(definition, filter, dialect))
        if key is not None:
            self._caches.plans.put(key, plans)
        return plans

    def _bound(self, where: Any, dialect: str) -> Any:
        """`where` bound to the table's schema when it is text or bytes (cached per columns and text: a scan's filter
        is bound once, not on every scan), else as it came (`plan_scan` binds it)."""
        if not isinstance(where, (str, bytes)) or len(where) > PLAN_TEXT_MAX:
            return where
        definition = self.definition
        key = (definition.columns, definition.partition_keys, dialect, where)
        bound = self._caches.bound.get(key)
        if bound is None:
            bound = bind_filter(where, definition.schema, dialect=dialect)
            self._caches.bound.put(key, bound)
        return bound

    def iter_partitions(self, filter: FilterArg | None = None, *, dialect: str = "sql") -> Iterator[Partition]:
        """Partitions satisfying `filter` (all when None), streamed in key order; each page reads the latest commit
        unless the iteration runs inside `Metastore.snapshot`."""
        definition = self.definition
        if filter is None:
            return partition_rows.scan_all(self._store, definition)
        path = choose_access_path(self._store, definition, self._plans(definition, filter, dialect))
        return partition_rows.run(self._store, definition, path)

    def _pages(self, filter: FilterArg | None, dialect: str) -> Iterator[Page]:
        definition = self.definition
        if filter is None:
            return partition_rows.pages_all(self._store, definition)
        path = choose_access_path(self._store, definition, self._plans(definition, filter, dialect))
        return partition_rows.run_pages(self._store, definition, path)

    def partition_rows(
        self, filter: FilterArg | None = None, *, limit: int | None = None, dialect: str = "sql"
    ) -> Iterator[list[tuple[tuple[Any, ...], str | None, dict[str, str] | None]]]:
        """Partitions satisfying `filter` as pages (lists) of `(values, location, parameters)` tuples, in key order,
        at most `limit` in all: no `Partition` object per row. `location` is None when it is the default (the table
        location plus the partition name) and `parameters` None when there are none. Pages read as `iter_partitions`
        does (one snapshot inside `Metastore.snapshot`)."""
        return (page.rows() for page in _limited(self._pages(filter, dialect), _checked_limit(limit)))

    def partition_batches(
        self, filter: FilterArg | None = None, *, limit: int | None = None, dialect: str = "sql"
    ) -> Iterator[pa.RecordBatch]:
        """Partitions satisfying `filter` as pyarrow record batches of their values, names, locations and parameters
        (`sargable.metastore.columnar`), in key order, at most `limit` in all. Pages read as `iter_partitions` does
        (one snapshot inside `Metastore.snapshot`)."""
        from sargable.metastore.columnar import BATCH_ROWS, record_batch  # pyarrow: loaded by Arrow callers only

        pages = _limited(self._pages(filter, dialect), _checked_limit(limit))
        return map(record_batch, partition_rows.coalesced(pages, BATCH_ROWS))

    def partition_pages(
        self, filter: FilterArg | None = None, *, limit: int | None = None, dialect: str = "sql"
    ) -> Iterator[Page]:
        """Partitions satisfying `filter` as the store's pages (`sargable.metastore.partitions.Page`: keys and stored
        values, decoded on demand), in key order, at most `limit` in all: for callers that encode many partitions
        without a `Partition` object each (the HMS server). Pages read as `iter_partitions` does."""
        return _limited(self._pages(filter, dialect), _checked_limit(limit))

    def partition_pages_by_names(self, names: Iterable[str]) -> list[Page]:
        """The partitions with these Hive names that exist, in key order, as pages (see `partition_pages`)."""
        with self._reading():
            return partition_rows.pages_by_names(self._store, self.definition, names)

    def partitions_arrow(self, filter: FilterArg | None = None, *, dialect: str = "sql") -> pa.Table:
        """The partitions satisfying `filter` as one pyarrow Table (the batches of `partition_batches`), from one
        snapshot."""
        from sargable.metastore.columnar import arrow_table  # pyarrow: loaded by Arrow callers only

        with self._reading():
            return arrow_table(self.definition, self.partition_batches(filter, dialect=dialect))

    def partitions(
        self, filter: FilterArg | None = None, *, max_parts: int | None = None, dialect: str = "sql"
    ) -> list[Partition]:
        """Partitions whose values satisfy the filter (SQL three-valued logic; all when None), in key order, from one
        snapshot; at most `max_parts`. The filter may use partition keys only."""
        if max_parts is not None and (isinstance(max_parts, bool) or not isinstance(max_parts, int) or max_parts < 0):
            raise MetastoreError(f"max_parts must be a non-negative integer or None, got {max_parts!r}")
        with self._reading(), _collector_paused():
            kept = self._loaded()
            if kept is None:
                return list(islice(self.iter_partitions(filter, dialect=dialect), max_parts))
            if filter is None:
                return kept.partitions[:max_parts]
            return kept.records(kept.select(self._plans(self.definition, filter, dialect)).positions)[:max_parts]

    def partitions_explained(self, filter: FilterArg, *, dialect: str = "sql") -> tuple[list[Partition], FilterExplain]:
        """The partitions of a filter, with the report of how they were found (access path, plan, keys examined)."""
        started = time.perf_counter()
        definition = self.definition
        with self._reading():
            plans = self._plans(definition, filter, dialect)
            kept = self._loaded()
            if kept is not None:
                selected = kept.select(plans)
                found = kept.records(selected.positions)
                return found, FilterExplain(
                    table=definition.qualified_name,
                    filter=str(plans.bound),
                    access_path=selected.access_path,
                    plan=str(selected.plan),
                    candidates=selected.candidates,
                    keys_examined=selected.keys_examined,
                    partitions_returned=len(found),
                    elapsed_ms=(time.perf_counter() - started) * 1000,
                )
            path = choose_access_path(self._store, definition, plans)
            found = list(partition_rows.run(self._store, definition, path))
        return found, FilterExplain(
            table=definition.qualified_name,
            filter=str(plans.bound),
            access_path=path.describe(),
            plan=str(path.plan),
            candidates=path.candidates,
            keys_examined=path.stats.keys_examined,
            partitions_returned=len(found),
            elapsed_ms=(time.perf_counter() - started) * 1000,
        )

    def explain_filter(self, filter: FilterArg, *, dialect: str = "sql") -> FilterExplain:
        """Run a partition filter and report the plan, access path, keys examined, partitions returned, time."""
        return self.partitions_explained(filter, dialect=dialect)[1]

    def plan_filter(self, filter: FilterArg, *, dialect: str = "sql") -> FilterPlan:
        """The primary-key FilterPlan of a partition filter, without running it (`str(plan)` is readable)."""
        return self._plans(self.definition, filter, dialect).primary

    def partitions_by_names(self, names: Iterable[str]) -> list[Partition]:
        """The partitions with these Hive names that exist, in key order."""
        with self._reading():
            return partition_rows.by_names(self._store, self.definition, names)

    def partition_names(self) -> list[str]:
        """Every partition's Hive name, in key order (a long page's names formatted in Arrow, as
        `columnar.partition_names`, when the key names have a UTF-8 form)."""
        names: list[str] = []
        arrow = all(storable_string(name) for name in self.partition_key_names)
        with self._reading():
            for page in partition_rows.pages_all(self._store, self.definition):
                if len(page) < partition_rows.BATCH_MIN or not arrow:
                    names += [p.name for p in page.partitions()]
                    continue
                from sargable.metastore.columnar import partition_names  # pyarrow: loaded for long pages only

                names += partition_names(page).to_pylist()
        return names

    def count_partitions(self) -> int:
        """The number of partitions (counted in the store, none decoded)."""
        return partition_rows.count(self._store, self.definition)

    # ----------------------------------------------------------------------------------------------------- files

    def iter_files(
        self, partitions: Iterable[Partition] | None = None, *, stats: bool | Collection[str] = True
    ) -> Iterator[FileStats]:
        """As `files`, streamed (each page reads the latest commit unless run inside `Metastore.snapshot`)."""
        return file_entries.iter_files(self._store, self.definition, partitions, stats)

    def files(
        self, partitions: Iterable[Partition] | None = None, *, stats: bool | Collection[str] = True
    ) -> list[FileStats]:
        """Files of the given partitions (all files when None), in partition key order, from one snapshot.

        `stats`: True decodes every column's statistics; False none (`columns == {}`: path, size, row count and
        partition only, several times cheaper per file); a collection of column names, only those columns'. A whole
        table's listing is kept per table version (when that version is the one the reading transaction sees), and
        the files of some partitions are then taken from it, with no store read (by position, for the partitions of
        a loaded version: see `scan`).
        """
        key = (self.table_id, self.version, file_entries.check_stats(stats))
        listings = self._caches.listings
        with self._reading(), _collector_paused():
            if partitions is not None:
                kept = None
                if loaded.values_compare_as_keys(self.definition) and listings.get(key) is not None and self._seen():
                    partitions = partitions if isinstance(partitions, (list, tuple)) else list(partitions)
                    names = self.partition_key_names
                    version = self._caches.partitions.get((self.table_id, self.version))
                    positions = None if version is None else version.positions_of(partitions)
                    if version is not None and positions is not None:
                        kept = listings.of_positions(key, names, version, positions)
                    else:
                        kept = listings.of_partitions(key, names, (tuple(p.values) for p in partitions))
                return kept if kept is not None else self._listed(partitions, stats)
            if not self._seen():
                return self._listed(None, stats)
            listing = listings.get(key)
            if listing is None:
                listing = tuple(self._listed(None, stats))
                listings.put(key, listing)
            return list(listing)

    def files_matching(
        self, where: BoundFilter, partitions: Iterable[Partition] | None = None, *, stats: bool | Collection[str] = True
    ) -> list[FileStats] | None:
        """The files (of the given partitions, all when None) whose statistics blocks say they may hold a row where
        `where` (bound to this table's schema) is TRUE, in key order as `files` gives them: a superset of the files
        `select_files` keeps of `files(partitions)`, read without every file's record (`statblocks`). None when
        the table keeps no blocks for a column `where` names (then `files` and `select_files` answer)."""
        from sargable.metastore import statblocks  # pyarrow: loaded by scans filtering on data columns only

        with self._reading():
            found = statblocks.candidates(self._store, self.definition, where)
            if found is None:
                return None
            if partitions is not None:
                found = file_entries.in_partitions(self.definition, found, partitions)
            return file_entries.files_at(self._store, self.definition, found, stats)

    def build_stats_blocks(self) -> None:
        """Build the table's statistics blocks from its files (sorted by min: clustered files give blocks of
        disjoint ranges), so filters on data columns read only the blocks that can match. Tables made before blocks
        existed need this once; afterwards every commit keeps them (and compacts them)."""
        from sargable.metastore import statblocks  # pyarrow: loaded here only

        with self._store.transaction():
            locked = lock_table(self._store, self.database, self.name, validated=self.definition)
            statblocks.build(self._store, locked, file_entries.entries(self._store, locked))

    def stats_blocks(self) -> dict[str, int] | None:
        """The statistics blocks' bookkeeping (`files` in them, `dead_rows` a compaction drops, `pending_files` a
        scan reads one by one), None when the table keeps none (its data-column filters read every file's entry)."""
        with self._reading():
            state = blockstate.read_state(self._store, self.definition)
        if state is None:
            return None
        return {"files": state.live, "dead_rows": state.dead, "pending_files": state.pending}

    def _listed(self, partitions: Iterable[Partition] | None, stats: bool | Collection[str]) -> list[FileStats]:
        """`iter_files` as a list, built a block at a time."""
        return list(chain.from_iterable(file_entries.file_blocks(self._store, self.definition, partitions, stats)))

    def _load(self) -> None:
        """Keep this version's partitions in memory (`sargable.metastore.loaded`) unless they are kept or too many;
        in a transaction that sees this version (a scan's)."""
        key = (self.table_id, self.version)
        kept = self._caches.partitions
        if not self.partition_keys or kept.get(key) is not None:
            return
        if self.stats().partitions <= kept.max_partitions:
            with _collector_paused():
                kept.put(key, loaded.load(self._store, self.definition))

    def _loaded(self) -> LoadedPartitions | None:
        """This version's partitions, when they are kept (or loaded now: the version was listed whole since its last
        load) and the open transaction sees this version."""
        key = (self.table_id, self.version)
        kept = self._caches.partitions.get(key)
        if kept is None and self._caches.partitions.take_wanted(key) and self._seen():
            self._load()
            kept = self._caches.partitions.get(key)
        return kept if kept is not None and self._seen() else None

    def _seen(self) -> bool:
        """Whether the open transaction sees this handle's version of the table (what a kept listing is of)."""
        if self._transaction is not None and self._transaction == self._store.transaction_id:
            return True
        try:
            current = read_table(self._store, self.database, self.name)
        except MetastoreError:
            return False
        return current.table_id == self.table_id and current.version == self.version

    def has_file(self, path: str) -> bool:
        """Whether a file path is registered in the table."""
        return file_entries.has_file(self._store, self.definition, path)

    def tombstones(self, paths: Iterable[str] | None = None) -> list[Tombstone]:
        """The files commits removed from the table that may still be on disk (all, or those of `paths` as stored),
        in path order: `sargable.deletion` keeps each until the table's retention has passed."""
        with self._reading():
            if paths is None:
                return list(tombstones.scan(self._store, self.table_id))
            return tombstones.find(self._store, self.table_id, paths)

    def forget_tombstones(self, paths: Iterable[str]) -> int:
        """Drop the tombstones of removed files that are gone from disk (vacuum does); returns how many."""
        paths = list(paths)
        if not paths:
            return 0
        with self._store.transaction():
            lock_table(self._store, self.database, self.name, validated=self.definition)
            return tombstones.drop(self._store, self.table_id, paths)

    def _locked_same(self) -> TableDefinition:
        """The table's row locked in the open write transaction; an error if it is another table by now."""
        locked = lock_table(self._store, self.database, self.name)
        if locked.table_id != self.table_id:
            raise MetastoreError(
                f"table {self.qualified_name} was dropped and created again since this handle was made; open it "
                "again with Metastore.table"
            )
        return locked

    def begin_write(self) -> WriteIntent:
        """Register a new write of sargable to the table before it writes any file (`sargable.metastore.intents`):
        its id, and the location it is issued for (read in the same transaction)."""
        with self._store.transaction():
            locked = lock_table(self._store, self.database, self.name, validated=self.definition)
            return intents.begin(self._store, self.table_id, uuid.uuid4().hex, locked.location, time.time())

    def record_write(self, write_id: str, paths: Iterable[str]) -> None:
        """Record the final paths a begun write is about to move its files to (before it moves them)."""
        paths = list(paths)
        with self._store.transaction():
            self._locked_same()
            intents.record(self._store, self.table_id, write_id, paths)

    def end_write(self, write_id: str) -> None:
        """End a write whose files are all committed or deleted: its intent goes."""
        with self._store.transaction():
            self._locked_same()
            intents.end(self._store, self.table_id, write_id)

    def write_intents(self) -> tuple[list[WriteIntent], dict[str, str]]:
        """The writes of the table that began and did not end, and the paths they recorded (-> write id), from one
        snapshot: what `vacuum` may take for garbage, and nothing else but expired tombstones."""
        with self._reading():
            return intents.writes(self._store, self.table_id), intents.recorded(self._store, self.table_id)

    def forget_written(self, paths: Iterable[str], write_ids: Iterable[str] = ()) -> None:
        """Drop recorded paths whose files are gone or listed, and end the writes `write_ids` (vacuum does)."""
        paths, write_ids = list(paths), list(write_ids)
        if not paths and not write_ids:
            return
        with self._store.transaction():
            self._locked_same()
            intents.forget(self._store, self.table_id, paths)
            for write_id in write_ids:
                intents.end(self._store, self.table_id, write_id)

    def stats(self) -> TableStats:
        """Partitions, files, bytes and rows of the whole table, read in O(1) (see `sargable.metastore.totals`).

        A table created before the totals were kept is counted; outside a transaction the count is also stored.
        """
        nested = self._store.in_transaction
        with self._reading():
            found = totals.read(self._store, self.definition)
            if found is not None:
                return found
            if nested:
                return totals.count(self._store, self.definition)
        with self._store.transaction():
            locked = lock_table(self._store, self.database, self.name)
            found = totals.read(self._store, locked)
            return found if found is not None else totals.store_counted(self._store, locked)

    # ---------------------------------------------------------------------------------------------------- writes

    def add_partitions(
        self,
        partitions: Iterable[PartitionSpec],
        *,
        if_not_exists: bool = False,
        locations: Sequence[str | None] | None = None,
        parameters: Sequence[Mapping[str, str] | None] | None = None,
        hive: Sequence[HivePartition | None] | None = None,
    ) -> int:
        """Add partitions in one transaction, each with its location, parameters and Hive fields when given; returns
        how many were added. All are validated before any write."""
        values = [partition_values(self.definition, spec) for spec in partitions]
        for given, what in ((locations, "locations"), (parameters, "parameters"), (hive, "Hive fields")):
            if given is not None and len(given) != len(values):
                raise MetastoreError(f"{len(given)} {what} given for {len(values)} partitions")
        with self._store.transaction():
            locked = lock_table(self._store, self.database, self.name, validated=self.definition)
            added = partition_rows.insert(
                self._store, locked, values, locations, if_not_exists=if_not_exists, parameters=parameters, hive=hive
            )
            totals.change(self._store, locked, TableStats(added, 0, 0, 0))
            bump(self._store, locked)
        return added

    def alter_partition(
        self,
        partition: PartitionSpec,
        *,
        location: str | None = None,
        parameters: Mapping[str, str] | None = None,
        hive: HivePartition | None = None,
    ) -> Partition:
        """Set a partition's location, parameters and/or Hive fields (None: unchanged)."""
        values = partition_values(self.definition, partition)
        partition_rows.encode_key(self.definition, values)
        with self._store.transaction():
            locked = lock_table(self._store, self.database, self.name, validated=self.definition)
            changed = partition_rows.alter(self._store, locked, values, location, parameters, hive)
            bump(self._store, locked)
        return changed

    def drop_partitions(self, filter: FilterArg, *, dialect: str = "sql") -> list[Partition]:
        """Drop every partition matching the filter, with its index entries and file entries, atomically."""
        with self._store.transaction():
            locked = lock_table(self._store, self.database, self.name)
            path = choose_access_path(self._store, locked, self._plans(locked, filter, dialect))
            dropped = list(partition_rows.run(self._store, locked, path))
            deleted = partition_rows.delete(self._store, locked, [p.values for p in dropped])
            totals.change(
                self._store, locked, totals.minus(totals.NO_CHANGE, deleted._replace(partitions=len(dropped)))
            )
            bump(self._store, locked)
        return dropped

    def set_properties(self, properties: Mapping[str, str | None]) -> Table:
        """Set table properties (a None value removes one); returns a handle of the new version. The retention
        property (`retention_seconds`) must be a non-negative number of seconds."""
        changes = {str(k): None if v is None else str(v) for k, v in properties.items()}
        with self._store.transaction():
            locked = lock_table(self._store, self.database, self.name, validated=self.definition)
            merged = {k: v for k, v in {**locked.properties, **changes}.items() if v is not None}
            tombstones.retention_seconds(dataclasses.replace(locked, properties=merged))
            new = bump(self._store, locked, properties=merged)
        return Table(self._store, self._caches, new)

    def add_columns(self, columns: Sequence[tuple[str, str | DataType]]) -> Table:
        """Add nullable columns at the end, or fields at the end of a struct (`("device.model", "string")`); files
        written before read NULL for them. Returns a handle of the new version (see `sargable.metastore.evolution`)."""
        new = add_columns(self.qualified_name, self.definition.columns, columns)
        return Table(self._store, self._caches, change_columns(self._store, self.definition, new))

    def widen(self, column: str, dtype: str | DataType) -> Table:
        """Widen a column's or struct field's type within its family (`int -> bigint`, `float -> double`, decimal
        precision up); a partition key only from one string type to another. Narrowing or a change of family raises
        `SchemaChangeError`. Returns a handle of the new version (see `sargable.metastore.evolution`)."""
        table = self.definition
        if column.lower() in (n.lower() for n in table.partition_key_names):
            keys = widen_column(table.qualified_name, table.partition_keys, column, dtype)
            check_keys(table.qualified_name, table.partition_keys, keys)
            new = change_columns(self._store, table, table.columns, keys)
        else:
            new = change_columns(self._store, table, widen_column(table.qualified_name, table.columns, column, dtype))
        return Table(self._store, self._caches, new)

    def create_index(self, column: str) -> Table:
        """Index a partition key other than the first; back-filled now, maintained with every partition write.
        Returns a handle of the new version."""
        with self._store.transaction():
            new = create_index(self._store, lock_table(self._store, self.database, self.name), column)
        return Table(self._store, self._caches, new)

    def commit(
        self,
        *,
        add_partitions: Iterable[Any] = (),
        add_files: Iterable[FileStats] = (),
        remove_files: Iterable[str] = (),
        replace_partitions: Iterable[Any] = (),
        expected_version: int | None = None,
    ) -> CommitResult:
        """One atomic change of the table: add partitions and files, remove files, replace partitions' files.

        `replace_partitions` drops every file of those partitions first (an overwrite). With `expected_version`
        the commit fails with CommitConflictError when another writer has committed since that version;
        without it, concurrent commits serialize and none loses the other's files.
        """
        change = commits.prepare(self.definition, add_partitions, add_files, remove_files, replace_partitions)
        with self._store.transaction():
            locked = lock_table(self._store, self.database, self.name, expected_version, validated=self.definition)
            return commits.apply(self._store, locked, change)

    def add_files(self, files: Iterable[FileStats]) -> int:
        """Register data files (with their partition and statistics); their partitions are added if missing."""
        return self.commit(add_files=files).files_added

    # ------------------------------------------------------------------------------------------------------ scan

    def scan(
        self,
        where: FilterArg | None = None,
        key_sets: Sequence[KeySet] = (),
        columns: Sequence[str] | None = None,
        *,
        dialect: str = "sql",
        notes: Sequence[str] = (),
        ignore_stats: Collection[str] = (),
    ) -> Scan:
        """What to read for the rows where `where` is TRUE (all when None) and each key set holds: partitions,
        files, the filter's exact / inclusive / residual parts and a report (see `sargable.scan`), from one snapshot.

        `columns` are checked against the schema; `notes` go into the report; `ignore_stats` names columns whose file
        statistics must not be used. After a scan that lists the whole table (no partition filter), the version's next
        partition filter loads its partitions (`sargable.metastore.loaded`): later partition filters and scans of that
        version answer from memory (a one-off whole scan pays nothing for it).
        """
        with self._reading():
            table = self._in_this_snapshot()
            scan = plan_scan(
                table,
                table._bound(where, dialect),
                key_sets,
                columns,
                dialect=dialect,
                notes=notes,
                ignore_stats=ignore_stats,
            )
            if scan.partitions is None and table.partition_keys:
                self._caches.partitions.want((table.table_id, table.version))
            return scan


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block, and on again after if it was: a list of many partitions
    or files otherwise runs it over the growing list again and again (a third of a long listing's time, a quarter of
    a file listing's); the objects of a listing hold no reference cycles, and the collections are only deferred."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _checked_limit(limit: Any) -> int | None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise MetastoreError(f"limit must be a non-negative integer or None, got {limit!r}")
    return limit


def _limited(pages: Iterator[Page], limit: int | None) -> Iterator[Page]:
    """The pages up to `limit` partitions in all (the last one cut)."""
    if limit is None:
        yield from pages
        return
    left = limit
    for page in pages:
        if left <= 0:
            return
        if len(page) > left:
            page = page.head(left)
        left -= len(page)
        yield page


def _partition_filter(definition: TableDefinition, filter: Any, dialect: str) -> BoundFilter:
    """A partition filter bound to the partition keys (a filter bound to the whole schema is taken as it is)."""
    names = {n.lower() for n in definition.partition_key_names}
    if isinstance(filter, BoundFilter):
        columns: Iterable[str] = filter.columns
    else:
        filter = unbound_expr(filter, dialect)
        columns = columns_of(filter)
    for column in sorted(columns):
        if column.lower() not in names:
            raise MetastoreError(_not_a_key(definition, column))
    if isinstance(filter, BoundFilter):
        return filter
    return bind_filter(filter, list(definition.partition_keys))


def _not_a_key(definition: TableDefinition, column: str) -> str:
    """Why `column` can't be in a partition filter, and what to do instead."""
    table, keys = definition.qualified_name, ", ".join(definition.partition_key_names) or "(none)"
    if column.lower() not in {n.lower() for n, _ in definition.columns}:
        return (
            f"column {column!r} in the filter is not a partition key of {table}, nor a column; partition keys: {keys}"
        )
    return (
        f"column {column!r} in the filter is not a partition key of {table} but a data column; a partition filter "
        f"names only partition keys ({keys}); a scan (Table.scan, `sargable explain {table} FILTER`) also skips files "
        "by data columns"
    )
