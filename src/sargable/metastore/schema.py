"""The metastore's layout in the store: its keyspaces, the catalog's keys, and the schema row made once per store.

A store holds six keyspaces (see the package docstring). The catalog keyspace also holds a few fixed rows: the
schema row (schema version and a random store id, written when the store's keyspaces are created), the table-id
sequence, and the DDL lock row. Opening a metastore reads the schema row (one point read); only a store without it
is set up, once, so opening an existing metastore runs no DDL.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from sargable import keys
from sargable.errors import DamagedMetastoreError, MetastoreError, NoSuchObjectError, SargableError, StoreError
from sargable.metastore.layout import table_prefix
from sargable.store import Store
from sargable.types import STRING

CATALOG = "catalog"
PARTITIONS = "partitions"
INDEXES = "pindex"
FILES = "files"
FILE_PATHS = "filepaths"
BLOCKS = "statblocks"
KEYSPACES = (CATALOG, PARTITIONS, INDEXES, FILES, FILE_PATHS, BLOCKS)

SCHEMA_VERSION = 2
"""The layout this sargable reads and writes; a store with a newer one is refused, an older one upgraded on open.
Version 2 added the `statblocks` keyspace (`sargable.metastore.statblocks`), which every commit of a table keeping
blocks writes: a sargable of version 1 would commit files without their blocks, so it must refuse such a store."""
SCHEMA_KEY = b"\x00schema"
"""Catalog row: the schema version (2 bytes) and the store id (16 bytes)."""
SEQUENCE_KEY = b"\x00table-id"
"""Catalog row: the last table id handed out (8 bytes)."""
DDL_LOCK_KEY = b"\x00ddl-lock"
"""A catalog row that always exists (its value never changes): DDL transactions lock it to run one at a time."""
STATS_PREFIX = b"S"
"""Catalog key prefix of a table's totals: `S` + the table prefix -> four 8-byte counts (`totals`)."""
COVERED = b"\x01"
"""An index entry's value is this marker followed by the partition row's value (location, parameters), so an index
lookup needs no second read; an entry without it (written before entries carried the value) is looked up."""

_SCHEMA_ROW = struct.Struct(">H16s")

DECODE_ERRORS = (
    ValueError,
    KeyError,
    TypeError,
    IndexError,
    AttributeError,
    OverflowError,
    struct.error,
    SargableError,
)
"""What decoding a damaged stored value or key raises (JSON and UTF-8 errors are ValueErrors)."""


def damaged(keyspace: str, key: bytes, what: str, exc: BaseException) -> DamagedMetastoreError:
    """The error for a stored value (or key) that doesn't decode: names the keyspace, the key and what it holds."""
    return DamagedMetastoreError(
        f"the metastore is damaged: {keyspace} key {key.hex()} ({what}) does not decode ({type(exc).__name__}: "
        f"{exc}); restore the metastore from a backup"
    )


@dataclass(frozen=True)
class StoreInfo:
    """What the schema row says about a store."""

    version: int
    store_id: str
    """A random id (hex) made when the store was set up: a store re-created at the same URL has another."""


def key_range(prefix: bytes) -> tuple[bytes, bytes | None]:
    """The keys starting with `prefix`, as a [start, stop) range."""
    return prefix, keys.prefix_end(prefix)


def database_key(name: str) -> bytes:
    return b"D" + keys.encode([name], [STRING])


def table_key(database: str, name: str) -> bytes:
    return b"T" + keys.encode([database, name], [STRING, STRING])


def stats_key(table_id: int) -> bytes:
    return STATS_PREFIX + table_prefix(table_id)


def blocks_state_key(table_id: int) -> bytes:
    """The `statblocks` row whose presence says the table keeps statistics blocks (`statblocks.State`)."""
    return table_prefix(table_id) + b"s"


def keeps_blocks(store: Store, table_id: int) -> bool:
    """Whether the table keeps statistics blocks (one point read; `statblocks` itself loads pyarrow)."""
    return store.get(BLOCKS, blocks_state_key(table_id)) is not None


def stored_id(store: Store) -> str | None:
    """The store id of the schema row, or None when the store has none (or can't be read): sets nothing up."""
    try:
        raw = store.get(CATALOG, SCHEMA_KEY)
    except StoreError:
        return None
    return None if raw is None or len(raw) != _SCHEMA_ROW.size else _SCHEMA_ROW.unpack(raw)[1].hex()


def open_schema(store: Store, *, create: bool = True) -> StoreInfo:
    """The store's schema row; a store without one gets its keyspaces and fixed rows first (idempotent, so stores
    made before the row existed are upgraded in place). With `create=False` a store without a catalog is
    NoSuchObjectError, and nothing is created."""
    try:
        raw = store.get(CATALOG, SCHEMA_KEY)
    except StoreError:
        if CATALOG in store.keyspaces():
            raise
        if not create:
            raise NoSuchObjectError(f"no metastore at {store.url}: the database holds no sargable catalog") from None
        raw = None
    if raw is None:
        raw = _set_up(store)
    if len(raw) != _SCHEMA_ROW.size:
        raise damaged(CATALOG, SCHEMA_KEY, "the schema row", ValueError(f"{len(raw)} bytes, not {_SCHEMA_ROW.size}"))
    version, store_id = _SCHEMA_ROW.unpack(raw)
    if version < SCHEMA_VERSION:
        raw = _set_up(store)
        version, store_id = _SCHEMA_ROW.unpack(raw)
    if version > SCHEMA_VERSION:
        raise MetastoreError(
            f"{store.url}: the metastore has schema version {version}; this sargable reads up to "
            f"{SCHEMA_VERSION}: upgrade sargable"
        )
    return StoreInfo(version, store_id.hex())


def _set_up(store: Store) -> bytes:
    """Create the keyspaces, the DDL lock row and the schema row, or upgrade an older schema row (its store id
    kept) once the keyspaces it lacks exist; returns the schema row (another process's, if it set the store up
    first)."""
    for keyspace in KEYSPACES:
        store.create_keyspace(keyspace)
    with store.transaction():
        raw = store.get_for_update(CATALOG, SCHEMA_KEY)
        if raw is None or (len(raw) == _SCHEMA_ROW.size and _SCHEMA_ROW.unpack(raw)[0] < SCHEMA_VERSION):
            store_id = uuid.uuid4().bytes if raw is None else _SCHEMA_ROW.unpack(raw)[1]
            raw = _SCHEMA_ROW.pack(SCHEMA_VERSION, store_id)
            store.put(CATALOG, SCHEMA_KEY, raw)
        if store.get(CATALOG, DDL_LOCK_KEY) is None:
            store.put(CATALOG, DDL_LOCK_KEY, b"")
    return raw
