"""Metadata-only ALTER of a table: its name, columns, location, properties and Hive fields, in one transaction.

The table is never re-created: it keeps its id, and with it everything keyed by the id (partitions, files and their
statistics, indexes, totals, tombstones, write intents). What may change:

- the name, within its database (the catalog row moves; the new name must be free);
- the columns: new ones at the end, new fields at the end of structs, and types widened within their family
  (nullable, as every column is: files written before read NULL for new columns, and have no statistics for them;
  see `sargable.metastore.evolution`); any other change (rename, narrow, drop, reorder) only while the table lists
  no files, whose statistics are typed by the columns, and never for a table engines fill without registering
  files (`files_from_folders`: its folders may hold files of any age). A partition key may only widen from one
  string type to another, whose stored encoding is the same;
- the location. As in Hive, partitions stay where they are: one whose location was the old default gets it as its
  explicit location (unless it is the new default too); registered file paths are absolute and stay. The table's
  write intents go (`intents`: they name the old folder);
- with `move_folder`, the folder itself moves to the new location (a managed table's rename, as in Hive): the
  location must not exist yet; file entries, tombstones, write intents and partitions whose location lay under the
  old folder follow it; the folder is renamed last, inside the transaction, so a failed rename commits nothing and a
  failed commit renames it back. Local folders only for now.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping, Sequence

from sargable.errors import AlreadyExistsError, MetastoreError, PathError
from sargable.metastore import blockstate, evolution, intents, tombstones
from sargable.metastore.catalog import (
    all_tables,
    bump,
    canonical,
    check_columns,
    check_location,
    check_name,
    lock_catalog,
    lock_table,
    read_table,
)
from sargable.metastore.filecodec import decode_header
from sargable.metastore.files import entries, path_key
from sargable.metastore.hive import HiveTable
from sargable.metastore.indexes import index_keys
from sargable.metastore.layout import layout_of
from sargable.metastore.names import partition_name
from sargable.metastore.records import TableDefinition, decode_partition_value, encode_partition_value
from sargable.metastore.schema import (
    CATALOG,
    COVERED,
    DECODE_ERRORS,
    FILE_PATHS,
    FILES,
    INDEXES,
    PARTITIONS,
    damaged,
    keeps_blocks,
    key_range,
    table_key,
)
from sargable.paths import is_local, is_within, join_path, relative_parts, stored_forms
from sargable.store import Store
from sargable.types import DataType

Relocation = Callable[[str], str | None]
"""A path's new form under a moved folder, or None when it lies outside the folder."""


def alter_table(
    store: Store,
    warehouse: str,
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
    """Change a table's definition in place (see the module docstring); None leaves a field as it is. Returns the
    new definition (its version bumped)."""
    old = read_table(store, database, name)
    target = old.name if new_name is None else check_name("table", new_name)
    cols = None if columns is None else check_columns("columns", columns)
    keys = None if partition_keys is None else check_columns("partition keys", partition_keys)
    where = None if location is None else canonical(f"table {old.database}.{target}", location)
    props = None if properties is None else {str(k): str(v) for k, v in properties.items()}
    if props is not None:
        tombstones.retention_seconds(dataclasses.replace(old, properties=props))
    if move_folder and store.in_transaction:
        raise MetastoreError(
            f"table {old.qualified_name}: moving its folder can't be part of an outer transaction (the folder is "
            "renamed when the metastore change commits)"
        )
    moved: tuple[str, str] | None = None
    try:
        with store.transaction():
            lock_catalog(store)
            table = lock_table(store, old.database, old.name)
            widened, added = table.widened, table.added
            if cols is not None or keys is not None:
                widened, added = _check_columns(store, table, table.columns if cols is None else cols, keys)
            if target != table.name and store.get(CATALOG, table_key(table.database, target)) is not None:
                raise AlreadyExistsError(f"table {table.database}.{target} already exists")
            new_location = table.location if where is None else where
            others = [t for t in all_tables(store) if t.table_id != table.table_id]
            if move_folder:
                _check_move(table, new_location, others)
            if new_location != table.location:
                check_location(store, warehouse, f"{table.database}.{target}", new_location, False, others)
                if move_folder:
                    _relocate(store, table, _mover(table.location, new_location), new_location)
                else:
                    _pin_partitions(store, table, new_location)
                    intents.drop_all(store, table.table_id)
            new = dataclasses.replace(
                table,
                name=target,
                columns=table.columns if cols is None else cols,
                partition_keys=table.partition_keys if keys is None else keys,
                widened=widened,
                added=added,
                location=new_location,
                properties=table.properties if props is None else props,
                hive=table.hive if hive is None else hive,
                version=table.version + 1,
            )
            if target != table.name:
                store.delete(CATALOG, table_key(table.database, table.name))
            store.put(CATALOG, table_key(new.database, new.name), new.to_json())
            if move_folder and new_location != table.location:
                _rename(table.qualified_name, table.location, new_location)
                moved = (table.location, new_location)
    except BaseException:
        if moved is not None:
            os.rename(moved[1], moved[0])
        raise
    return new


def change_columns(
    store: Store,
    table: TableDefinition,
    columns: Sequence[tuple[str, str | DataType]],
    partition_keys: Sequence[tuple[str, str | DataType]] | None = None,
) -> TableDefinition:
    """Give the table new columns (and partition keys) by the rules of the module docstring, in one transaction;
    returns the new definition. Spark's own copy of a data source table's schema (a table property Spark SQL reads
    instead of the columns) changes with them."""
    cols = check_columns("columns", columns)
    keys = None if partition_keys is None else check_columns("partition keys", partition_keys)
    with store.transaction():
        locked = lock_table(store, table.database, table.name, validated=table)
        widened, added = _check_columns(store, locked, cols, keys)
        if cols != locked.columns and keeps_blocks(store, locked.table_id) and not _lists_files(store, locked):
            blockstate.start(store, locked)  # columns free to change: the old blocks hold dead rows only
        return bump(
            store,
            locked,
            columns=cols,
            partition_keys=locked.partition_keys if keys is None else keys,
            widened=widened,
            added=added,
            properties=evolution.spark_schema(locked.properties, locked.columns, cols),
        )


def _check_columns(
    store: Store,
    table: TableDefinition,
    columns: tuple[tuple[str, DataType], ...],
    keys: tuple[tuple[str, DataType], ...] | None,
) -> tuple[tuple[tuple[str, DataType], ...], tuple[tuple[str, int], ...]]:
    """Refuse a column change that files' statistics or the partition keys don't allow (see the module docstring);
    returns the table's `widened` and `added` with what this change widens and adds (when it lists files)."""
    if keys is not None:
        evolution.check_keys(table.qualified_name, table.partition_keys, keys)
    names = {n.lower() for n, _ in (table.partition_keys if keys is None else keys)}
    seen: set[str] = set()
    for column, _ in columns:
        if column.lower() in names or column.lower() in seen:
            raise MetastoreError(f"table {table.qualified_name}: column {column!r} appears twice")
        seen.add(column.lower())
    if columns == table.columns:
        return table.widened, table.added
    if not table.files_from_folders and not _lists_files(store, table):
        return table.widened, table.added
    evolution.check_columns(table.qualified_name, table.columns, columns)
    known = {path for path, _ in table.widened}
    widened = table.widened + tuple(
        (path, dtype) for path, dtype in evolution.widenings(table.columns, columns) if path not in known
    )
    added = table.added + tuple((path, table.version + 1) for path in evolution.additions(table.columns, columns))
    return widened, added


def _lists_files(store: Store, table: TableDefinition) -> bool:
    return next(iter(store.scan(FILES, *key_range(layout_of(table).prefix), limit=1)), None) is not None


def _check_move(table: TableDefinition, location: str, others: list[TableDefinition]) -> None:
    """Refuse a folder move that can't be one rename of this table's own folder to a free place."""
    if location == table.location:
        raise MetastoreError(f"table {table.qualified_name}: moving its folder needs a new location")
    if not (is_local(table.location) and is_local(location)):
        raise MetastoreError(
            f"table {table.qualified_name}: only local folders can be moved yet ({table.location!r} -> {location!r})"
        )
    if is_within(location, table.location) or is_within(table.location, location):
        raise MetastoreError(f"table {table.qualified_name}: can't move {table.location!r} into or onto itself")
    inside = [t.qualified_name for t in others if is_within(t.location, table.location)]
    if inside:
        raise MetastoreError(
            f"table {table.qualified_name}: its folder {table.location!r} holds the location of table {inside[0]}, "
            "which would move with it; give the table a location of its own first"
        )
    if os.path.lexists(location):
        raise AlreadyExistsError(
            f"table {table.qualified_name}: can't move its folder to {location!r}: something is there already"
        )


def _rename(qualified: str, old: str, new: str) -> None:
    """Rename the table's folder (nothing to move when it was never made)."""
    if not os.path.lexists(old):
        return
    try:
        os.makedirs(os.path.dirname(new), exist_ok=True)
        os.rename(old, new)
    except OSError as exc:
        raise MetastoreError(f"table {qualified}: can't move its folder {old!r} to {new!r}: {exc}") from None


def _mover(old: str, new: str) -> Relocation:
    def moved(path: str) -> str | None:
        for form in sorted(stored_forms(path)):
            if is_within(form, old):
                return join_path(new, *relative_parts(form, old))
        return None

    return moved


def _partition_rows(store: Store, table: TableDefinition, change: Callable[[tuple, str | None], str | None]) -> None:
    """Rewrite the partitions whose location `change(values, location)` gives anew (it returns the location as it
    was to leave one alone); their index entries carry the same value."""
    if not table.partition_keys:
        return
    layout = layout_of(table)
    for key, raw in list(store.scan(PARTITIONS, *key_range(layout.prefix))):
        try:
            values = layout.values(key)
            location, parameters, hive = decode_partition_value(raw)
        except DECODE_ERRORS as exc:
            raise damaged(PARTITIONS, key, f"a partition of {table.qualified_name}", exc) from None
        new = change(values, location)
        if new == location:
            continue
        stored = encode_partition_value(new, parameters, hive)
        store.put(PARTITIONS, key, stored)
        store.put_many(INDEXES, [(index_key, COVERED + stored) for index_key in index_keys(table, values)])


def _pin_partitions(store: Store, table: TableDefinition, location: str) -> None:
    """Give each partition at the old default location that location explicitly (it stays where it is)."""

    def pinned(values: tuple, current: str | None) -> str | None:
        if current is not None:
            return current
        name = partition_name(table.partition_keys, values)
        old = join_path(table.location, name)
        return None if join_path(location, name) == old else old

    _partition_rows(store, table, pinned)


def _relocate(store: Store, table: TableDefinition, moved: Relocation, location: str) -> None:
    """Rebase everything of the table that names a path under its folder onto the folder's new place."""

    def partition(values: tuple, current: str | None) -> str | None:
        if current is None:
            return None
        try:
            return moved(current) or current
        except PathError:
            return current

    _partition_rows(store, table, partition)
    layout = layout_of(table)
    for key, raw in list(store.scan(FILES, *key_range(layout.prefix))):
        try:
            path = decode_header(raw)[0]
            new_path = moved(path)
            if new_path is None:
                continue
            values = layout.file_codec.decode(key[layout.size :])[:-1]
            record = json.loads(raw)
            record["path"] = new_path
            value = json.dumps(record, separators=(",", ":"), allow_nan=False).encode()
        except DECODE_ERRORS as exc:
            raise damaged(FILES, key, f"a file of {table.qualified_name}", exc) from None
        new_key = layout.prefix + layout.file_codec.encode([*values, new_path])
        store.delete(FILES, key)
        store.delete(FILE_PATHS, path_key(table, path))
        store.put(FILES, new_key, value)
        store.put(FILE_PATHS, path_key(table, new_path), new_key)
    if keeps_blocks(store, table.table_id):
        from sargable.metastore import statblocks  # pyarrow: loaded for tables keeping blocks only

        statblocks.build(store, table, entries(store, table))  # the files' keys changed
    tombstones.rebase(store, table.table_id, moved)
    intents.rebase(store, table.table_id, location, moved)
