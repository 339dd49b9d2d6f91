"""Databases and table definitions in the catalog keyspace: names, create / read / lock / drop, version bumps.

Catalog changes (databases, tables) lock one shared catalog row (`DDL_LOCK_KEY`), so they run one at a time; a
change of a table locks its own catalog row (`lock_table`), so its committers serialize and none loses another's
files. Every change of a table bumps its version (`bump`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sargable import keys
from sargable.errors import (
    AlreadyExistsError,
    CommitConflictError,
    MetastoreError,
    NoSuchObjectError,
    TypeCoercionError,
)
from sargable.metastore import totals
from sargable.metastore.layout import table_prefix
from sargable.metastore.records import Database, TableDefinition
from sargable.metastore.schema import (
    CATALOG,
    DDL_LOCK_KEY,
    FILE_PATHS,
    FILES,
    INDEXES,
    PARTITIONS,
    SEQUENCE_KEY,
    database_key,
    key_range,
    stats_key,
    table_key,
)
from sargable.store import Store
from sargable.types import STRING, DataType, parse_type

_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_\-]{0,127}\Z")


def check_name(kind: str, name: Any) -> str:
    """A database or table name, lower-cased; anything but 1-128 letters, digits, `_` or `-` is an error."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise MetastoreError(
            f"invalid {kind} name {name!r}: use 1-128 letters, digits, '_' or '-', starting with a letter, digit or '_'"
        )
    return name.lower()


def check_columns(kind: str, columns: Any) -> tuple[tuple[str, DataType], ...]:
    """Typed `(name, type)` pairs from a list of pairs whose types are Hive type names or `DataType`s."""
    if isinstance(columns, (str, bytes)) or not isinstance(columns, Iterable):
        raise MetastoreError(f"{kind} must be a list of (name, type) pairs, got {columns!r}")
    out = []
    for item in columns:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise MetastoreError(f"{kind}: each entry must be a (name, type) pair, got {item!r}")
        name, dtype = item
        if not isinstance(name, str) or not name or len(name) > 767 or any(ord(c) < 32 for c in name):
            raise MetastoreError(f"{kind}: invalid column name {name!r} (non-empty, no control characters)")
        try:
            out.append((name, parse_type(dtype)))
        except TypeCoercionError as exc:
            raise MetastoreError(f"{kind}: column {name!r}: {exc}") from None
    return tuple(out)


def lock_catalog(store: Store) -> None:
    """Serialize this write transaction with every other DDL transaction (see `DDL_LOCK_KEY`)."""
    store.get_for_update(CATALOG, DDL_LOCK_KEY)


# ------------------------------------------------------------------------------------------------- databases


def read_database(store: Store, name: str) -> Database:
    """A database's record; NoSuchObjectError when missing."""
    name = check_name("database", name)
    raw = store.get(CATALOG, database_key(name))
    if raw is None:
        raise NoSuchObjectError(f"database {name!r} does not exist")
    record = json.loads(raw)
    return Database(record["name"], record["location"])


def create_database(store: Store, warehouse: str, name: str, location: str | None, if_not_exists: bool) -> None:
    name = check_name("database", name)
    key = database_key(name)
    with store.transaction():
        lock_catalog(store)
        if store.get(CATALOG, key) is not None:
            if if_not_exists:
                return
            raise AlreadyExistsError(f"database {name!r} already exists")
        location = location or str(Path(warehouse) / f"{name}.db")
        store.put(CATALOG, key, json.dumps({"name": name, "location": location}).encode())


def list_databases(store: Store) -> list[str]:
    return [keys.decode(k[1:], [STRING])[0] for k, _ in store.scan(CATALOG, *key_range(b"D"))]


def drop_database(store: Store, name: str, cascade: bool) -> None:
    db = read_database(store, name).name
    with store.transaction():
        lock_catalog(store)
        read_database(store, db)
        tables = list_tables(store, db)
        if tables and not cascade:
            raise MetastoreError(f"database {db!r} is not empty ({len(tables)} tables); use cascade=True")
        for table in tables:
            drop_table(store, db, table)
        store.delete(CATALOG, database_key(db))


# ---------------------------------------------------------------------------------------------------- tables


def create_table(
    store: Store,
    database: str,
    name: str,
    columns: Sequence[tuple[str, str | DataType]],
    partition_keys: Sequence[tuple[str, str | DataType]],
    location: str | None,
    properties: Mapping[str, str] | None,
    *,
    if_not_exists: bool,
    index_all: bool,
) -> TableDefinition:
    """Create a table (validated before the transaction); with `if_not_exists`, the existing one's definition."""
    db = read_database(store, database)
    name = check_name("table", name)
    data_columns = check_columns("columns", columns)
    pkeys = check_columns("partition_keys", partition_keys)
    for column, dtype in pkeys:
        if not dtype.is_orderable:
            raise MetastoreError(
                f"table {db.name}.{name}: partition key {column!r} is of type {dtype}, whose values don't order "
                "(binary and complex types can't key partitions)"
            )
    seen: set[str] = set()
    for column, _ in (*data_columns, *pkeys):
        if column.lower() in seen:
            raise MetastoreError(f"table {db.name}.{name}: column {column!r} appears twice")
        seen.add(column.lower())
    props = {str(k): str(v) for k, v in (properties or {}).items()}
    key = table_key(db.name, name)
    with store.transaction():
        lock_catalog(store)
        db = read_database(store, db.name)
        if store.get(CATALOG, key) is not None:
            if if_not_exists:
                return read_table(store, db.name, name)
            raise AlreadyExistsError(f"table {db.name}.{name} already exists")
        raw = store.get(CATALOG, SEQUENCE_KEY)
        table_id = int.from_bytes(raw, "big") + 1 if raw else 1
        store.put(CATALOG, SEQUENCE_KEY, table_id.to_bytes(8, "big"))
        table = TableDefinition(
            database=db.name,
            name=name,
            table_id=table_id,
            columns=data_columns,
            partition_keys=pkeys,
            location=location or str(Path(db.location) / name),
            properties=props,
            indexes=tuple(n for n, _ in pkeys[1:]) if index_all else (),
        )
        store.put(CATALOG, key, table.to_json())
        totals.start(store, table_id)
    return table


def read_table(store: Store, database: str, name: str) -> TableDefinition:
    """A table's current definition (NoSuchObjectError naming the database or the table when missing)."""
    database, name = check_name("database", database), check_name("table", name)
    raw = store.get(CATALOG, table_key(database, name))
    if raw is None:
        read_database(store, database)
        raise NoSuchObjectError(f"table {database}.{name} does not exist")
    return TableDefinition.from_json(raw)


def list_tables(store: Store, database: str | None) -> list[str]:
    """Table names of one database, or `db.table` names of all databases."""
    if database is None:
        rows = store.scan(CATALOG, *key_range(b"T"))
        return [".".join(keys.decode(k[1:], [STRING, STRING])) for k, _ in rows]
    db = read_database(store, database).name
    start, stop = keys.prefixed_range(b"T", *keys.prefix_range([db], [STRING, STRING]))
    return [keys.decode(k[1:], [STRING, STRING])[1] for k, _ in store.scan(CATALOG, start, stop)]


def drop_table(store: Store, database: str, name: str) -> None:
    """Drop a table's definition, totals, partitions, index entries and file entries, in one transaction."""
    read_table(store, database, name)
    with store.transaction():
        table = lock_table(store, database, name)
        prefix = table_prefix(table.table_id)
        for keyspace in (PARTITIONS, INDEXES, FILES, FILE_PATHS):
            store.delete_range(keyspace, *key_range(prefix))
        store.delete(CATALOG, stats_key(table.table_id))
        store.delete(CATALOG, table_key(table.database, table.name))


def lock_table(
    store: Store,
    database: str,
    name: str,
    expected_version: int | None = None,
    *,
    validated: TableDefinition | None = None,
) -> TableDefinition:
    """Re-read a table inside a write transaction, locking its row against concurrent committers.

    `validated` is the definition the change was validated against before the transaction: if the table was
    re-created with other columns meanwhile, the change is refused instead of written with the wrong types.
    """
    key = table_key(check_name("database", database), check_name("table", name))
    raw = store.get_for_update(CATALOG, key)
    if raw is None:
        raise NoSuchObjectError(f"table {database}.{name} does not exist")
    table = TableDefinition.from_json(raw)
    if validated is not None and (
        table.partition_keys != validated.partition_keys or table.columns != validated.columns
    ):
        raise CommitConflictError(
            f"table {table.qualified_name} was re-created with other columns while this change was prepared; "
            "re-read the table and retry"
        )
    if expected_version is not None and table.version != expected_version:
        raise CommitConflictError(
            f"table {table.qualified_name} is at version {table.version}, not {expected_version}: "
            "another writer committed first; re-read the table and retry"
        )
    return table


def bump(store: Store, table: TableDefinition, **changes: Any) -> TableDefinition:
    """Write the table's next version (with `changes` to its fields); returns the new definition."""
    fields = {f: getattr(table, f) for f in TableDefinition.__dataclass_fields__}
    fields.update(changes, version=table.version + 1)
    new = TableDefinition(**fields)
    store.put(CATALOG, table_key(table.database, table.name), new.to_json())
    return new
