"""Databases and table definitions in the catalog keyspace: names, create / read / lock / drop, version bumps.

Catalog changes (databases, tables) lock one shared catalog row (`DDL_LOCK_KEY`), so they run one at a time; a
change of a table locks its own catalog row (`lock_table`), so its committers serialize and none loses another's
files. Every change of a table bumps its version (`bump`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from sargable import keys
from sargable.domain import storable_string
from sargable.errors import (
    AlreadyExistsError,
    CommitConflictError,
    MetastoreError,
    NoSuchObjectError,
    PathError,
    TypeCoercionError,
)
from sargable.metastore import colstats, intents, tombstones, totals
from sargable.metastore.hive import HiveDatabase, HiveTable, database_from_raw, database_raw
from sargable.metastore.layout import table_prefix
from sargable.metastore.records import Database, TableDefinition
from sargable.metastore.schema import (
    BLOCKS,
    CATALOG,
    DDL_LOCK_KEY,
    DECODE_ERRORS,
    FILE_PATHS,
    FILES,
    INDEXES,
    PARTITIONS,
    SEQUENCE_KEY,
    damaged,
    database_key,
    key_range,
    stats_key,
    table_key,
)
from sargable.paths import canonical_location, is_local, is_within, join_path, parts_of
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
        if not storable_string(name):
            raise MetastoreError(
                f"{kind}: invalid column name {name!r}: it holds a lone surrogate, which has no UTF-8 form (Parquet, "
                "Arrow and the Hive metastore API all need one)"
            )
        try:
            out.append((name, parse_type(dtype)))
        except TypeCoercionError as exc:
            raise MetastoreError(f"{kind}: column {name!r}: {exc}") from None
    return tuple(out)


def canonical(owner: str, location: Any) -> str:
    """The canonical absolute form of a location given for `owner` (see `sargable.paths`)."""
    try:
        return canonical_location(location)
    except PathError as exc:
        raise MetastoreError(f"{owner}: {exc}") from None


def _decoded_name(key: bytes, fields: int) -> str:
    """`db` or `db.table` from a catalog key (`D` or `T` + encoded names)."""
    try:
        return ".".join(keys.decode(key[1:], [STRING] * fields))
    except DECODE_ERRORS as exc:
        raise damaged(CATALOG, key, "a database or table name", exc) from None


def lock_catalog(store: Store) -> None:
    """Serialize this write transaction with every other DDL transaction (see `DDL_LOCK_KEY`)."""
    store.get_for_update(CATALOG, DDL_LOCK_KEY)


# ------------------------------------------------------------------------------------------------- databases


def read_database(store: Store, name: str) -> Database:
    """A database's record; NoSuchObjectError when missing."""
    name = check_name("database", name)
    key = database_key(name)
    raw = store.get(CATALOG, key)
    if raw is None:
        raise NoSuchObjectError(f"database {name!r} does not exist")
    try:
        record = json.loads(raw)
        if not isinstance(record, dict) or record.get("name") != name or not isinstance(record.get("location"), str):
            raise ValueError(f"expected the name {name!r} and a location, got {record!r}")
        hive = None if record.get("hive") is None else database_from_raw(record["hive"])
    except ValueError as exc:
        raise damaged(CATALOG, key, f"database {name}", exc) from None
    return Database(record["name"], record["location"], hive)


def create_database(
    store: Store,
    warehouse: str,
    name: str,
    location: str | None,
    if_not_exists: bool,
    hive: HiveDatabase | None = None,
) -> None:
    """Create a database; its tables live under `location` (default `<warehouse>/<name>.db`; a relative one is
    resolved against the current directory now and stored absolute); `hive` holds its Hive fields."""
    name = check_name("database", name)
    key = database_key(name)
    location = join_path(warehouse, f"{name}.db") if location is None else canonical(f"database {name}", location)
    with store.transaction():
        lock_catalog(store)
        if store.get(CATALOG, key) is not None:
            if if_not_exists:
                return
            raise AlreadyExistsError(f"database {name!r} already exists")
        record: dict[str, Any] = {"name": name, "location": location}
        if hive is not None:
            record["hive"] = database_raw(hive)
        store.put(CATALOG, key, json.dumps(record).encode())


def list_databases(store: Store) -> list[str]:
    return [_decoded_name(k, 1) for k, _ in store.scan(CATALOG, *key_range(b"D"))]


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
    warehouse: str,
    database: str,
    name: str,
    columns: Sequence[tuple[str, str | DataType]],
    partition_keys: Sequence[tuple[str, str | DataType]],
    location: str | None,
    properties: Mapping[str, str] | None,
    *,
    if_not_exists: bool,
    index_all: bool,
    share_location: bool,
    files_from_folders: bool = False,
    hive: HiveTable | None = None,
) -> TableDefinition:
    """Create a table (validated before the transaction); with `if_not_exists`, the existing one's definition.

    The location (default `<database location>/<name>`) is stored absolute and canonical (see `check_location`).
    """
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
        if raw is not None and len(raw) != 8:
            raise damaged(CATALOG, SEQUENCE_KEY, "the table-id sequence", ValueError(f"{len(raw)} bytes, not 8"))
        tables = list(all_tables(store))
        table_id = max([int.from_bytes(raw or b"", "big"), *(t.table_id for t in tables)]) + 1
        qualified = f"{db.name}.{name}"
        table_location = canonical(f"table {qualified}", location or join_path(db.location, name))
        check_location(store, warehouse, qualified, table_location, share_location, tables)
        store.put(CATALOG, SEQUENCE_KEY, table_id.to_bytes(8, "big"))
        table = TableDefinition(
            database=db.name,
            name=name,
            table_id=table_id,
            columns=data_columns,
            partition_keys=pkeys,
            location=table_location,
            properties=props,
            indexes=tuple(n for n, _ in pkeys[1:]) if index_all else (),
            files_from_folders=files_from_folders,
            hive=hive,
        )
        store.put(CATALOG, key, table.to_json())
        totals.start(store, table_id)
    return table


def read_table(store: Store, database: str, name: str) -> TableDefinition:
    """A table's current definition (NoSuchObjectError naming the database or the table when missing)."""
    database, name = check_name("database", database), check_name("table", name)
    key = table_key(database, name)
    raw = store.get(CATALOG, key)
    if raw is None:
        read_database(store, database)
        raise NoSuchObjectError(f"table {database}.{name} does not exist")
    return table_from(key, raw, f"{database}.{name}")


def table_from(key: bytes, raw: bytes, expected: str | None) -> TableDefinition:
    """A table from its catalog row; a row that doesn't decode, or names another table, is damage."""
    try:
        table = TableDefinition.from_json(raw)
        if expected is not None and table.qualified_name != expected:
            raise ValueError(f"the row under {expected} holds table {table.qualified_name}")
    except DECODE_ERRORS as exc:
        raise damaged(CATALOG, key, f"table {expected or 'definition'}", exc) from None
    return table


def all_tables(store: Store) -> Iterator[TableDefinition]:
    """Every table definition in the catalog (validated)."""
    for key, raw in store.scan(CATALOG, *key_range(b"T")):
        yield table_from(key, raw, None)


def check_location(
    store: Store, warehouse: str, qualified: str, location: str, share: bool, tables: list[TableDefinition]
) -> None:
    """Refuse a table location whose files vacuum or overwrite could delete with others'.

    A location that is a root, holds the warehouse or the metastore's files, or overlaps another table's is
    refused; `share` allows the overlap (each table's vacuum still deletes nothing of the other's). Compared by path
    components, both as written and (for local paths) with symlinks resolved.
    """

    def forms(path: str) -> set[str]:
        return {path, os.path.realpath(path)} if is_local(path) else {path}

    mine = forms(location)
    if not parts_of(location)[1]:
        raise MetastoreError(f"table {qualified}: location {location!r} is a root; give a folder of its own")
    for protected, what in [
        (warehouse, "the warehouse root"),
        *((path, "the metastore's database file") for path in store.files),
    ]:
        if any(is_within(p, m) for p in forms(protected) for m in mine):
            raise MetastoreError(
                f"table {qualified}: location {location!r} holds {what} {protected!r}; "
                "give a folder that holds only this table's files"
            )
    if share:
        return
    for other in tables:
        try:
            theirs = forms(canonical_location(other.location, relative=False))
        except PathError:
            continue
        if any(is_within(a, b) or is_within(b, a) for a in mine for b in theirs):
            raise MetastoreError(
                f"table {qualified}: location {location!r} overlaps the location {other.location!r} of table "
                f"{other.qualified_name}; give another folder, or share_location=True to share it (vacuum "
                "then leaves the other table's files alone)"
            )


def list_tables(store: Store, database: str | None) -> list[str]:
    """Table names of one database, or `db.table` names of all databases."""
    if database is None:
        return [_decoded_name(k, 2) for k, _ in store.scan(CATALOG, *key_range(b"T"))]
    db = read_database(store, database).name
    start, stop = keys.prefixed_range(b"T", *keys.prefix_range([db], [STRING, STRING]))
    return [_decoded_name(k, 2).split(".", 1)[1] for k, _ in store.scan(CATALOG, start, stop)]


def drop_table(store: Store, database: str, name: str) -> None:
    """Drop a table's definition, totals, partitions, index entries, file entries, tombstones, write intents and
    column statistics and statistics blocks, in one transaction."""
    read_table(store, database, name)
    with store.transaction():
        table = lock_table(store, database, name)
        prefix = table_prefix(table.table_id)
        for keyspace in (PARTITIONS, INDEXES, FILES, FILE_PATHS, BLOCKS):
            store.delete_range(keyspace, *key_range(prefix))
        store.delete_range(CATALOG, *tombstones.table_range(table.table_id))
        intents.drop_all(store, table.table_id)
        colstats.forget_table(store, table.table_id)
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
    database, name = check_name("database", database), check_name("table", name)
    key = table_key(database, name)
    raw = store.get_for_update(CATALOG, key)
    if raw is None:
        raise NoSuchObjectError(f"table {database}.{name} does not exist")
    table = table_from(key, raw, f"{database}.{name}")
    if validated is not None and (
        table.partition_keys != validated.partition_keys or table.columns != validated.columns
    ):
        raise CommitConflictError(
            f"table {table.qualified_name} was re-created or altered with other columns while this change was "
            "prepared; re-read the table and retry"
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
