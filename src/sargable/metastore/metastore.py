"""`Metastore`: the catalog over an ordered store (databases, tables), and the way to a table's `Table` handle.

The name-based methods of the public API (`get_partitions_by_filter("db", "t", ...)`, `commit("db", "t", ...)`,
...) are thin calls into the handle: `ms.table("db.t")` reads the definition once, and the handle does the rest.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sargable.errors import MetastoreError, NoSuchObjectError, PathError
from sargable.expr import Expr
from sargable.metastore import catalog, intents, tombstones
from sargable.metastore.access import FilterExplain
from sargable.metastore.alter import alter_table
from sargable.metastore.caches import Caches
from sargable.metastore.commit import CommitResult
from sargable.metastore.files import path_key
from sargable.metastore.hive import HiveDatabase, HivePartition, HiveTable
from sargable.metastore.intents import WriteIntent
from sargable.metastore.partitions import PartitionSpec
from sargable.metastore.records import Database, Partition, TableDefinition, TableStats
from sargable.metastore.schema import FILE_PATHS, open_schema
from sargable.metastore.table import Table
from sargable.metastore.tombstones import Tombstone
from sargable.paths import canonical_location, is_local, spellings
from sargable.plan import FilterPlan
from sargable.stats import FileStats
from sargable.store import Store, open_store
from sargable.types import DataType


def default_url() -> str:
    """`$SARGABLE_METASTORE`, or a SQLite file under `./warehouse/`."""
    return os.environ.get("SARGABLE_METASTORE") or f"sqlite:///{Path('warehouse').resolve() / 'metastore.db'}"


class Metastore:
    """Databases, tables, partitions and files kept in an ordered key-value store (SQLite or PostgreSQL)."""

    def __init__(self, store: Store, warehouse: str | os.PathLike | None = None, *, create: bool = True) -> None:
        self._store = store
        root = str(warehouse or os.environ.get("SARGABLE_WAREHOUSE") or "warehouse")
        try:
            root = canonical_location(root)
        except PathError as exc:
            raise MetastoreError(f"warehouse: {exc}") from None
        self.warehouse = os.path.realpath(root) if is_local(root) else root
        self.store_id = open_schema(store, create=create).store_id
        """A random id made when the store was set up (a store re-created at the same URL has another)."""
        self._caches = Caches()

    @classmethod
    def open(
        cls, url: str | None = None, *, warehouse: str | os.PathLike | None = None, create: bool = True
    ) -> Metastore:
        """Open the metastore at `url`: `sqlite:///path` or `postgresql://...`, creating it if needed.

        With `create=False` it must exist already: a missing or empty SQLite file, or a database without a
        metastore, is "no metastore at ..." and nothing is created. A SQLite file of another application is refused
        either way, unchanged.
        """
        url = url or default_url()
        if url.startswith("sqlite:///"):
            path = Path(url[len("sqlite:///") :].split("?", 1)[0]).expanduser()
            if not create and (not path.is_file() or path.stat().st_size == 0):
                reason = "the file is empty" if path.is_file() else "no such file"
                raise NoSuchObjectError(f"no metastore at {path} ({reason})")
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise MetastoreError(f"can't create the folder of the metastore {path}: {exc}") from None
        store = open_store(url, create=create)
        try:
            return cls(store, warehouse, create=create)
        except BaseException:
            store.close()
            raise

    @property
    def url(self) -> str:
        return self._store.url

    @property
    def store(self) -> Store:
        return self._store

    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> Metastore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def snapshot(self) -> Iterator[Metastore]:
        """Run the block's reads against one consistent snapshot (a read-only transaction; inside an open
        transaction, that one). Every method returning a list already reads one snapshot; wrap several calls, or a
        long `iter_partitions` / `iter_files`, whose pages otherwise each see the latest commit."""
        if self._store.in_transaction:
            yield self
            return
        with self._store.transaction(readonly=True):
            yield self

    def clear_caches(self) -> None:
        """Forget the cached bound filters, partition-filter plans, file listings and loaded partitions (they are never
        stale; this frees memory)."""
        self._caches.clear()

    def table(self, database: str, name: str | None = None) -> Table:
        """The handle of a table, `ms.table("db.table")` or `ms.table("db", "table")`, at its current version."""
        if name is None:
            if not isinstance(database, str) or database.count(".") != 1:
                raise MetastoreError(f"a table is named 'db.table', got {database!r}")
            database, name = database.split(".")
        return Table(self._store, self._caches, catalog.read_table(self._store, database, name))

    # ----------------------------------------------------------------------------------------- databases

    def create_database(
        self,
        name: str,
        *,
        location: str | None = None,
        if_not_exists: bool = False,
        hive: HiveDatabase | None = None,
    ) -> None:
        """Create a database; its tables live under `location` (default `<warehouse>/<name>.db`); `hive` holds its
        Hive fields (description, owner, parameters)."""
        catalog.create_database(self._store, self.warehouse, name, location, if_not_exists, hive)

    def get_database(self, name: str) -> Database:
        """A database's record (raises NoSuchObjectError when missing)."""
        return catalog.read_database(self._store, name)

    def list_databases(self) -> list[str]:
        return catalog.list_databases(self._store)

    def drop_database(self, name: str, *, cascade: bool = False) -> None:
        """Drop an empty database, or with `cascade` every table in it."""
        catalog.drop_database(self._store, name, cascade)

    # -------------------------------------------------------------------------------------------- tables

    def create_table(
        self,
        database: str,
        name: str,
        columns: Sequence[tuple[str, str | DataType]],
        partition_keys: Sequence[tuple[str, str | DataType]] = (),
        location: str | None = None,
        properties: Mapping[str, str] | None = None,
        *,
        if_not_exists: bool = False,
        index_all: bool = False,
        share_location: bool = False,
        files_from_folders: bool = False,
        hive: HiveTable | None = None,
    ) -> TableDefinition:
        """Create a table; `index_all` adds a secondary index on every partition key but the first;
        `files_from_folders` marks a table engines fill without registering files (see `TableDefinition`); `hive`
        holds its Hive fields.

        The location (default `<database location>/<name>`) is stored absolute and canonical: a relative one is
        resolved against the current directory now, as Spark does, so every later command sees the same folder. A
        location that is a root, holds the warehouse or the metastore's files, or overlaps another table's is
        refused; `share_location=True` allows the overlap (each table's vacuum still deletes nothing of the other's).
        """
        return catalog.create_table(
            self._store,
            self.warehouse,
            database,
            name,
            columns,
            partition_keys,
            location,
            properties,
            if_not_exists=if_not_exists,
            index_all=index_all,
            share_location=share_location,
            files_from_folders=files_from_folders,
            hive=hive,
        )

    def get_table(self, database: str, name: str) -> TableDefinition:
        """The table's current definition (raises NoSuchObjectError when missing)."""
        return catalog.read_table(self._store, database, name)

    def list_tables(self, database: str | None = None) -> list[str]:
        """Table names of one database, or `db.table` names of all databases."""
        return catalog.list_tables(self._store, database)

    def table_locations(self) -> dict[str, str]:
        """Every table's location, by `db.table` name, from one scan of the catalog."""
        return {table.qualified_name: table.location for table in catalog.all_tables(self._store)}

    def tables_listing(self, path: str) -> list[str]:
        """The tables (`db.table`) whose files include the canonical `path` under any spelling (`paths.spellings`),
        read from one snapshot: what `sargable.deletion` asks right before it deletes a file."""
        with self.snapshot():
            return [
                table.qualified_name
                for table in catalog.all_tables(self._store)
                if self._store.multi_get(FILE_PATHS, [path_key(table, spelling) for spelling in spellings(path)])
            ]

    def listed_paths(self, paths: Iterable[str]) -> set[str]:
        """Those of the canonical `paths` some table lists under any spelling, read from one snapshot with one
        lookup per table: `tables_listing` for many paths at once (what the unlisted-files report asks)."""
        remaining = list(dict.fromkeys(paths))
        found: set[str] = set()
        with self.snapshot():
            for table in catalog.all_tables(self._store):
                if not remaining:
                    break
                keys = {path: [path_key(table, s) for s in spellings(path)] for path in remaining}
                present = self._store.multi_get(FILE_PATHS, [k for ks in keys.values() for k in ks])
                found.update(path for path, ks in keys.items() if any(k in present for k in ks))
                remaining = [path for path in remaining if path not in found]
        return found

    def tombstones(self, table: TableDefinition, paths: Iterable[str]) -> list[Tombstone]:
        """The tombstones of these paths (as the table may have stored them) in a table, by its id: what
        `sargable.deletion` asks right before it deletes a file (a dropped table has none)."""
        with self.snapshot():
            return tombstones.find(self._store, table.table_id, paths)

    def table_of_id(self, table_id: int) -> TableDefinition | None:
        """The current definition of the table with this id (None when it was dropped), whatever its name now."""
        return next((t for t in catalog.all_tables(self._store) if t.table_id == table_id), None)

    def write_intent(self, table: TableDefinition, paths: Iterable[str], write_id: str | None) -> WriteIntent | None:
        """The unfinished write of the table that recorded one of `paths` (spellings of one file), or has id
        `write_id` (the file lies in its staging folder), if any: what `sargable.deletion` asks right before it
        deletes a file that no commit removed."""
        with self.snapshot():
            found = intents.writer_of(self._store, table.table_id, paths) or write_id
            try:
                return None if found is None else intents.get(self._store, table.table_id, found)
            except MetastoreError:
                return None

    def alter_table(
        self,
        database: str,
        name: str,
        *,
        new_name: str | None = None,
        columns: Sequence[tuple[str, str | DataType]] | None = None,
        location: str | None = None,
        properties: Mapping[str, str] | None = None,
        hive: HiveTable | None = None,
        move_folder: bool = False,
        partition_keys: Sequence[tuple[str, str | DataType]] | None = None,
    ) -> TableDefinition:
        """Change a table's name, columns (new ones at the end, types widened; others only while it lists no
        files), partition keys (a string key widened), location, properties (replaced as a whole) or Hive fields in
        one transaction, never re-creating it: its partitions, files, statistics, indexes, tombstones stay (None
        leaves a field as it is). With `move_folder` its folder moves to the new location with it (a managed table's
        rename). See `sargable.metastore.alter` and `sargable.metastore.evolution`."""
        return alter_table(
            self._store,
            self.warehouse,
            database,
            name,
            new_name=new_name,
            columns=columns,
            location=location,
            properties=properties,
            hive=hive,
            move_folder=move_folder,
            partition_keys=partition_keys,
        )

    def drop_table(self, database: str, name: str) -> None:
        """Drop a table with its partitions, indexes and file entries (the files themselves stay on disk)."""
        catalog.drop_table(self._store, database, name)

    def table_stats(self, database: str, table: str) -> TableStats:
        """Partitions, files, bytes and rows of the whole table, read in O(1) (`Table.stats`)."""
        return self.table(database, table).stats()

    def create_index(self, database: str, table: str, column: str) -> TableDefinition:
        """Index a partition key other than the first; back-filled now, maintained with every partition write."""
        return self.table(database, table).create_index(column).definition

    # ---------------------------------------------------------------------------------------- partitions

    def add_partitions(
        self,
        database: str,
        table: str,
        partitions: Iterable[PartitionSpec],
        *,
        if_not_exists: bool = False,
        locations: Sequence[str | None] | None = None,
        parameters: Sequence[Mapping[str, str] | None] | None = None,
        hive: Sequence[HivePartition | None] | None = None,
    ) -> int:
        """Add partitions in one transaction, each with its location, parameters and Hive fields when given; returns
        how many were added. All are validated before any write."""
        return self.table(database, table).add_partitions(
            partitions, if_not_exists=if_not_exists, locations=locations, parameters=parameters, hive=hive
        )

    def get_partitions_by_filter(
        self,
        database: str,
        table: str,
        filter: str | Expr,
        max_parts: int | None = None,
        *,
        dialect: str = "sql",
    ) -> list[Partition]:
        """Partitions whose values satisfy the filter (SQL three-valued logic), in key order, from one snapshot."""
        with self.snapshot():
            return self.table(database, table).partitions(filter, max_parts=max_parts, dialect=dialect)

    def get_partitions_by_expr(
        self, database: str, table: str, expr: bytes, max_parts: int | None = None
    ) -> list[Partition]:
        """As `get_partitions_by_filter`, for an expression serialized by `sargable.dumps`."""
        if not isinstance(expr, (bytes, bytearray, memoryview)):
            raise MetastoreError(
                f"get_partitions_by_expr takes the bytes of sargable.dumps(expr), got {type(expr).__name__}"
            )
        with self.snapshot():
            return self.table(database, table).partitions(bytes(expr), max_parts=max_parts)

    def get_partitions_by_names(self, database: str, table: str, names: Iterable[str]) -> list[Partition]:
        """The partitions with these Hive names that exist, in key order."""
        with self.snapshot():
            return self.table(database, table).partitions_by_names(names)

    def iter_partitions(
        self, database: str, table: str, filter: str | Expr | bytes | None = None, *, dialect: str = "sql"
    ) -> Iterator[Partition]:
        """Partitions satisfying `filter` (all when None), streamed from the store in key order.

        Each page of the stream reads the latest committed data; iterate inside `snapshot()` to see one snapshot.
        """
        return self.table(database, table).iter_partitions(filter, dialect=dialect)

    def list_partition_names(self, database: str, table: str) -> list[str]:
        """Every partition's Hive name, in key order."""
        with self.snapshot():
            return self.table(database, table).partition_names()

    def count_partitions(self, database: str, table: str) -> int:
        return self.table(database, table).count_partitions()

    def alter_partition(
        self,
        database: str,
        table: str,
        partition: PartitionSpec,
        *,
        location: str | None = None,
        parameters: Mapping[str, str] | None = None,
        hive: HivePartition | None = None,
    ) -> Partition:
        """Set a partition's location, parameters and/or Hive fields (None: unchanged)."""
        return self.table(database, table).alter_partition(
            partition, location=location, parameters=parameters, hive=hive
        )

    def drop_partitions(
        self, database: str, table: str, filter: str | Expr, *, dialect: str = "sql"
    ) -> list[Partition]:
        """Drop every partition matching the filter, with its index entries and file entries, atomically."""
        return self.table(database, table).drop_partitions(filter, dialect=dialect)

    def plan_filter(self, database: str, table: str, filter: str | Expr, *, dialect: str = "sql") -> FilterPlan:
        """The primary-key FilterPlan of a partition filter (`str(plan)` is readable)."""
        return self.table(database, table).plan_filter(filter, dialect=dialect)

    def explain_filter(self, database: str, table: str, filter: str | Expr, *, dialect: str = "sql") -> FilterExplain:
        """Run a partition filter and report the plan, access path, keys examined, partitions returned, time."""
        with self.snapshot():
            return self.table(database, table).explain_filter(filter, dialect=dialect)

    # --------------------------------------------------------------------------------------------- files

    def add_files(self, database: str, table: str, files: Iterable[FileStats]) -> int:
        """Register data files (with their partition and statistics); their partitions are added if missing."""
        return self.table(database, table).add_files(files)

    def commit(
        self,
        database: str,
        table: str,
        *,
        add_partitions: Iterable[Any] = (),
        add_files: Iterable[FileStats] = (),
        remove_files: Iterable[str] = (),
        replace_partitions: Iterable[Any] = (),
        expected_version: int | None = None,
    ) -> CommitResult:
        """One atomic change of a table: add partitions and files, remove files, replace partitions' files (see
        `Table.commit`)."""
        return self.table(database, table).commit(
            add_partitions=add_partitions,
            add_files=add_files,
            remove_files=remove_files,
            replace_partitions=replace_partitions,
            expected_version=expected_version,
        )

    def list_files(
        self,
        database: str,
        table: str,
        partitions: Iterable[Partition] | None = None,
        *,
        stats: bool | Collection[str] = True,
    ) -> list[FileStats]:
        """Files of the given partitions (all files when None), in partition key order, from one snapshot (see
        `Table.files`)."""
        with self.snapshot():
            return self.table(database, table).files(partitions, stats=stats)

    def iter_files(
        self,
        database: str,
        table: str,
        partitions: Iterable[Partition] | None = None,
        *,
        stats: bool | Collection[str] = True,
    ) -> Iterator[FileStats]:
        """As `list_files`, streamed (each page reads the latest commit unless run inside `snapshot()`)."""
        return self.table(database, table).iter_files(partitions, stats=stats)

    def has_file(self, database: str, table: str, path: str) -> bool:
        return self.table(database, table).has_file(path)
