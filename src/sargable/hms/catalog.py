"""The server's one adapter over the metastore: every read and write `sargable serve` makes goes through `Catalog`.

Reads go through a table's `Table` handle (one definition read per call, in the call's snapshot); writes through
`sargable.Metastore`'s methods, databases, tables and partitions with their Hive fields (`sargable.metastore.hive`).
Where a Hive operation has no metastore method yet, it is composed here from several calls inside one store
transaction (a savepoint per inner call), so it stays atomic: returning which partitions an `if_not_exists` add
created. Altering a table is one metastore call that changes its definition in place (a managed table's rename also
moves its folder, as Hive does).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sargable.errors import AlreadyExistsError, MetastoreError, NoSuchObjectError, PathError
from sargable.expr import Expr, and_, col, or_
from sargable.hms.folders import new_folders
from sargable.metastore import DEFAULT_PARTITION_NAME, Database, Metastore, Partition, Table, TableDefinition
from sargable.metastore.catalog import lock_table
from sargable.metastore.hive import HiveDatabase, HivePartition, HiveTable
from sargable.metastore.names import value_from_name
from sargable.metastore.partitions import Page
from sargable.paths import canonical_location, join_path
from sargable.types import DataType

ADD_ATTEMPTS = 10
"""Tries of an `if_not_exists` add that loses races to concurrent adds of the same partitions."""


@dataclass(frozen=True)
class Change:
    """What one write did to a table's partitions: the version it made, which no other write came between (the
    table's row was locked from the version before), and the values of the partitions it added, dropped or altered
    (an encoded reply that can't hold any of them stays valid, `sargable.hms.cache`); for a write that only added
    partitions, also those partitions (a whole listing that ends before the first of them grows by them)."""

    table_id: int
    version: int
    values: tuple[tuple[Any, ...], ...]
    added: tuple[Partition, ...] | None = None


@dataclass(frozen=True)
class NewPartition:
    """A partition to add: its values as Hive strings in key order, location (None: the default), parameters, Hive
    fields (None: none)."""

    values: tuple[str, ...]
    location: str | None
    parameters: Mapping[str, str]
    hive: HivePartition | None = None


def values_filter(table: TableDefinition, values: Sequence[str], *, partial: bool) -> Expr:
    """Equality on each given value (`__HIVE_DEFAULT_PARTITION__` is IS NULL); with `partial`, '' means any value."""
    keys = table.partition_key_names
    if len(values) > len(keys) or (not partial and len(values) != len(keys)):
        raise MetastoreError(
            f"{len(values)} partition values given for {table.qualified_name}, whose partition keys are {keys}"
        )
    terms: list[Expr] = []
    for name, value in zip(keys, values):
        if partial and value == "":
            continue
        terms.append(col(name).is_null() if value == DEFAULT_PARTITION_NAME else col(name).eq(value))
    if not terms:
        return or_(col(keys[0]).is_null(), col(keys[0]).is_not_null())
    return and_(*terms)


def _managed(hive: HiveTable, properties: Mapping[str, str]) -> bool:
    """Whether Hive takes the table for managed: its type says so and its `EXTERNAL` parameter doesn't say TRUE."""
    external = any(k.upper() == "EXTERNAL" and str(v).upper() == "TRUE" for k, v in properties.items())
    return hive.table_type == "MANAGED_TABLE" and not external


def _same_location(a: str, b: str) -> bool:
    """Whether two locations (any spelling: a path, a `file:` URI) name one folder."""
    try:
        return canonical_location(a, relative=False) == canonical_location(b, relative=False)
    except PathError:
        return False


def typed_values(table: TableDefinition, values: Sequence[str]) -> tuple[Any, ...]:
    """Typed partition values from Hive strings, as the metastore stores them ('' of a string key is NULL)."""
    if len(values) != len(table.partition_keys):
        raise MetastoreError(
            f"{len(values)} partition values given for {table.qualified_name}, "
            f"whose partition keys are {table.partition_key_names}"
        )
    return tuple(
        None if text == "" and dtype.is_string else value_from_name(text, dtype, name)
        for text, (name, dtype) in zip(values, table.partition_keys)
    )


class Catalog:
    """Databases, tables and partitions as the Hive metastore API needs them, over one `Metastore` (one thread)."""

    def __init__(self, metastore: Metastore) -> None:
        self.metastore = metastore
        self.last_changes: list[Change] = []
        """The version steps the last partition add, drop or alter made (see `Change`; none when they can't be told
        apart from other writers')."""

    def close(self) -> None:
        self.metastore.close()

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction or snapshot is open (a catalog left so is not reused)."""
        return self.metastore.store.in_transaction

    def transaction(self) -> Any:
        """One atomic change made of several metastore calls (each inner call becomes a savepoint)."""
        return self.metastore.store.transaction()

    def snapshot(self) -> Any:
        """Reads of one consistent snapshot (a read-only transaction)."""
        return self.metastore.snapshot()

    # ------------------------------------------------------------------------------------------ databases

    def create_database(
        self, name: str, location: str | None, hive: HiveDatabase, *, make_folder: bool = False
    ) -> None:
        """Create a database; with `make_folder`, its folder is made before the commit (`sargable.hms.folders`)."""
        with new_folders() as folders, self.transaction():
            self.metastore.create_database(name, location=location or None, hive=hive)
            if make_folder:
                folders.make(f"database {name.lower()}", self.metastore.get_database(name).location)

    def get_database(self, name: str) -> Database:
        """The database's record (raises NoSuchObjectError)."""
        return self.metastore.get_database(name)

    def database_location(self, name: str) -> str:
        """The database's location (raises NoSuchObjectError)."""
        return self.metastore.get_database(name).location

    def list_databases(self) -> list[str]:
        return self.metastore.list_databases()

    def drop_database(self, name: str, *, cascade: bool) -> None:
        self.metastore.drop_database(name, cascade=cascade)

    # --------------------------------------------------------------------------------------------- tables

    def create_table(
        self,
        database: str,
        name: str,
        columns: Sequence[tuple[str, DataType]],
        partition_keys: Sequence[tuple[str, DataType]],
        location: str | None,
        properties: Mapping[str, str],
        hive: HiveTable,
        *,
        make_folder: bool = False,
    ) -> TableDefinition:
        """Create a table with a secondary index on every partition key but the first, so that a filter on any
        partition key (Spark's `hr = 3` across days) is a key range. Engines fill it without registering files,
        so sargable's scans list its partitions' folders (`files_from_folders`). With `make_folder`, its folder is
        made before the commit (`sargable.hms.folders`)."""
        with new_folders() as folders, self.transaction():
            table = self.metastore.create_table(
                database,
                name,
                columns,
                partition_keys,
                location,
                properties,
                index_all=True,
                files_from_folders=True,
                hive=hive,
            )
            if make_folder:
                folders.make(f"table {table.qualified_name}", table.location)
        return table

    def table(self, database: str, name: str) -> Table:
        """The table's handle at its current version (NoSuchObjectError when it does not exist)."""
        return self.metastore.table(database, name)

    @property
    def store_id(self) -> str:
        """The random id of the metastore's store (Hive's `get_metastore_db_uuid`)."""
        return self.metastore.store_id

    def list_tables(self, database: str) -> list[str]:
        return self.metastore.list_tables(database)

    def drop_table(self, database: str, name: str) -> None:
        self.metastore.drop_table(database, name)

    def alter_table(
        self,
        database: str,
        name: str,
        new_name: str,
        columns: Sequence[tuple[str, DataType]],
        partition_keys: Sequence[tuple[str, DataType]],
        location: str | None,
        properties: Mapping[str, str],
        hive: HiveTable,
    ) -> TableDefinition:
        """Alter a table in place (rename, columns, location, properties, Hive fields; `Metastore.alter_table`): it
        keeps its partitions, files, statistics, indexes and tombstones; columns and keys change by the rules of
        `sargable.metastore.evolution` (Hive's `CHANGE COLUMN` that widens a type sends the new columns). As Hive
        does, renaming a managed table whose folder is its default one (`<database location>/<name>`) without giving
        another location moves the folder to the new name's default, with the partitions under it; an external
        table's location stays."""
        ms = self.metastore
        old = ms.get_table(database, name)
        if [n.lower() for n, _ in partition_keys] != [n.lower() for n in old.partition_key_names]:
            raise MetastoreError(f"the partition keys of {old.qualified_name} can't be changed")
        target = location or old.location
        move = False
        if new_name.lower() != old.name and _managed(hive, properties) and _same_location(target, old.location):
            folder = ms.get_database(old.database).location
            if _same_location(old.location, join_path(folder, old.name)):
                target, move = join_path(folder, new_name.lower()), True
        return ms.alter_table(
            old.database,
            old.name,
            new_name=new_name,
            columns=columns,
            location=target,
            properties=properties,
            hive=hive,
            move_folder=move,
            partition_keys=None if tuple(partition_keys) == old.partition_keys else partition_keys,
        )

    # ----------------------------------------------------------------------------------------- partitions

    def add_partitions(
        self,
        database: str,
        table: str,
        partitions: Sequence[NewPartition],
        *,
        if_not_exists: bool,
        make_folders: bool = False,
    ) -> list[Partition]:
        """Add partitions with their parameters and Hive fields (one metastore write); returns the ones added, in
        the order given (existing ones are skipped with `if_not_exists`, else AlreadyExistsError). With
        `make_folders`, the folders of those added are made before the commit (`sargable.hms.folders`): when one
        can't be made, none is added.

        With `if_not_exists`, which ones exist is read before the metastore's add locks the table, so a concurrent
        add of the same partition can win in between (on PostgreSQL): the whole add is then tried again."""
        for attempt in range(ADD_ATTEMPTS):
            try:
                return self._add_partitions(
                    database, table, partitions, if_not_exists=if_not_exists, make_folders=make_folders
                )
            except AlreadyExistsError:
                if not if_not_exists or attempt == ADD_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    def _add_partitions(
        self, database: str, table: str, partitions: Sequence[NewPartition], *, if_not_exists: bool, make_folders: bool
    ) -> list[Partition]:
        ms = self.metastore
        self.last_changes = []
        with new_folders() as folders, self.transaction():
            tbl = lock_table(ms.store, database, table)
            new: list[tuple[tuple[Any, ...], NewPartition]] = []
            seen: set[tuple[Any, ...]] = set()
            for p in partitions:
                values = typed_values(tbl, p.values)
                if values in seen:
                    raise MetastoreError(f"partition {list(p.values)} is given twice")
                seen.add(values)
                new.append((values, p))
            if if_not_exists and new:
                existing = ms.get_partitions_by_names(database, table, [list(p.values) for _, p in new])
                have = {p.values for p in existing}
                new = [(values, p) for values, p in new if values not in have]
            if not new:
                return []
            ms.add_partitions(
                database,
                table,
                [list(p.values) for _, p in new],
                locations=[p.location for _, p in new],
                parameters=[p.parameters or None for _, p in new],
                hive=[p.hive for _, p in new],
            )
            added = [Partition(tbl, values, p.location, dict(p.parameters), p.hive) for values, p in new]
            changes = self._changes(tbl, tuple(values for values, _ in new), 1, added=tuple(added))
            if make_folders:
                for part in added:
                    folders.make(f"partition {part.name} of {tbl.qualified_name}", part.location)
        self.last_changes = changes
        return added

    @staticmethod
    def get_partition(table: Table, values: Sequence[str]) -> Partition:
        """The partition with these Hive string values (NoSuchObjectError when it does not exist)."""
        values_filter(table.definition, values, partial=False)
        found = table.partitions_by_names([list(values)])
        if not found:
            raise NoSuchObjectError(f"partition values={list(values)} of {table.qualified_name} does not exist")
        return found[0]

    @staticmethod
    def partitions_by_names(table: Table, names: Iterable[str]) -> list[Partition]:
        return table.partitions_by_names(names)

    @staticmethod
    def pages_by_names(table: Table, names: Iterable[str]) -> list[Page]:
        """The partitions with these Hive names that exist, as pages, in key order."""
        return table.partition_pages_by_names(names)

    @staticmethod
    def pages_by_values(table: Table, values: Sequence[str], max_parts: int | None) -> list[Page]:
        """Partitions matching a partial spec (Hive's `_ps` calls: '' is any value), as pages: call inside
        `snapshot()`."""
        return list(table.partition_pages(values_filter(table.definition, values, partial=True), limit=max_parts))

    @staticmethod
    def pages_by_filter(table: Table, text: str, max_parts: int | None) -> list[Page]:
        """Partitions matching a filter in Hive's metastore syntax, as pages: call inside `snapshot()`."""
        return list(table.partition_pages(text, limit=max_parts, dialect="hive"))

    @staticmethod
    def iter_pages(table: Table, max_parts: int | None) -> Iterator[Page]:
        """Every partition (at most `max_parts`), in key order, as pages streamed: call inside `snapshot()`."""
        return table.partition_pages(limit=max_parts)

    @staticmethod
    def count_partitions(table: Table) -> int:
        return table.count_partitions()

    def drop_partition(self, database: str, table: str, values: Sequence[str]) -> Partition:
        """Drop one partition by its full values (NoSuchObjectError when it does not exist)."""
        self.last_changes = []
        with self.transaction():
            tbl = lock_table(self.metastore.store, database, table)
            dropped = self.metastore.drop_partitions(database, table, values_filter(tbl, values, partial=False))
            changes = self._changes(tbl, tuple(p.values for p in dropped), 1)
        if not dropped:
            raise NoSuchObjectError(f"partition values={list(values)} of {tbl.qualified_name} does not exist")
        self.last_changes = changes
        return dropped[0]

    def _changes(
        self,
        locked: TableDefinition,
        values: tuple[tuple[Any, ...], ...],
        steps: int,
        *,
        added: tuple[Partition, ...] | None = None,
    ) -> list[Change]:
        """The version steps a write inside this transaction made, the table's row locked at `locked.version`, each
        with every partition the write changed (none when it did not make exactly `steps` steps); `added`: the
        partitions of a one-step write that only added partitions."""
        after = self.metastore.get_table(locked.database, locked.name)
        if after.table_id != locked.table_id or after.version != locked.version + steps:
            return []
        return [Change(locked.table_id, locked.version + step, values, added) for step in range(1, steps + 1)]

    def alter_partitions(self, database: str, table: str, changes: Sequence[NewPartition]) -> list[Partition]:
        """Alter partitions in one transaction (`alter_partition` each)."""
        self.last_changes = []
        with self.transaction():
            tbl = lock_table(self.metastore.store, database, table)
            altered = [self.alter_partition(database, table, change) for change in changes]
            steps = self._changes(tbl, tuple(p.values for p in altered), len(altered))
        self.last_changes = steps
        return altered

    def alter_partition(self, database: str, table: str, change: NewPartition) -> Partition:
        """Set a partition's location, parameters and Hive fields (those not None)."""
        return self.metastore.alter_partition(
            database,
            table,
            list(change.values),
            location=change.location,
            parameters=dict(change.parameters),
            hive=change.hive,
        )
