"""Tombstones: the files a commit removed from a table (`remove_files`), kept on disk until the table's retention
has passed, so that a reader of an older snapshot still finds them (Delta's `deletedFileRetentionDuration`).

A commit that removes files writes, in its own transaction, one catalog row per removed file:
`R` + table prefix + the stored path -> (time of the commit, the version it made). `sargable.deletion` refuses to
delete a file whose tombstone is younger than the table's retention (`RETENTION_PROPERTY`, default 7 days);
`vacuum`, `optimize` and `sgs.write` delete the files whose retention has passed and then drop their tombstones.
`replace_partitions` writes none (its caller owns the files it drops); `sgs.write`'s overwrite removes the
partitions' files by path (`remove_files`), so they get tombstones too.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from sargable import keys
from sargable.errors import MetastoreError
from sargable.metastore.layout import table_prefix
from sargable.metastore.records import TableDefinition
from sargable.metastore.schema import CATALOG, DECODE_ERRORS, damaged, key_range
from sargable.store import Store
from sargable.types import STRING

TOMBSTONE_PREFIX = b"R"
"""Catalog key prefix of a table's tombstones: `R` + the table prefix + the encoded stored path."""
RETENTION_PROPERTY = "sargable.deleted_file_retention_seconds"
"""Table property: how long (seconds) a file removed by a commit stays on disk for readers of older snapshots."""
DEFAULT_RETENTION_SECONDS = 7 * 24 * 3600
_VALUE = struct.Struct(">dQ")


@dataclass(frozen=True)
class Tombstone:
    """A file a commit removed from a table: its path (as the table stored it), when, and the version it made."""

    path: str
    removed_at: float
    """Seconds since the epoch, by the committing client's clock."""
    version: int


def retention_seconds(table: TableDefinition) -> float:
    """The table's retention of removed files (`RETENTION_PROPERTY`); a value that isn't a non-negative number of
    seconds is an error naming the property."""
    text = table.properties.get(RETENTION_PROPERTY)
    if text is None:
        return float(DEFAULT_RETENTION_SECONDS)
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise MetastoreError(
            f"table {table.qualified_name}: property {RETENTION_PROPERTY} is {text!r}, not a non-negative number of "
            "seconds"
        )
    return value


def _prefix(table_id: int) -> bytes:
    return TOMBSTONE_PREFIX + table_prefix(table_id)


def tombstone_key(table_id: int, path: str) -> bytes:
    return _prefix(table_id) + keys.encode([path], [STRING])


def table_range(table_id: int) -> tuple[bytes, bytes | None]:
    """The catalog keys of one table's tombstones."""
    return key_range(_prefix(table_id))


def put(store: Store, table: TableDefinition, paths: Iterable[str], removed_at: float, version: int) -> None:
    """Write the tombstones of files a commit removes (inside its transaction)."""
    value = _VALUE.pack(removed_at, version)
    store.put_many(CATALOG, [(tombstone_key(table.table_id, path), value) for path in paths])


def _decoded(table_id: int, key: bytes, value: bytes) -> Tombstone:
    try:
        (path,) = keys.decode(key[len(_prefix(table_id)) :], [STRING])
        removed_at, version = _VALUE.unpack(value)
    except DECODE_ERRORS as exc:
        raise damaged(CATALOG, key, f"a tombstone of table id {table_id}", exc) from None
    return Tombstone(path, removed_at, version)


def scan(store: Store, table_id: int) -> Iterator[Tombstone]:
    """Every tombstone of a table, in path order."""
    for key, value in store.scan(CATALOG, *table_range(table_id)):
        yield _decoded(table_id, key, value)


def find(store: Store, table_id: int, paths: Iterable[str]) -> list[Tombstone]:
    """The tombstones of these paths (each as a table may have stored it) that exist."""
    found = store.multi_get(CATALOG, [tombstone_key(table_id, path) for path in paths])
    return [_decoded(table_id, key, value) for key, value in sorted(found.items())]


def drop(store: Store, table_id: int, paths: Iterable[str]) -> int:
    """Delete the tombstones of these paths (inside a write transaction); returns how many there were."""
    found = store.multi_get(CATALOG, [tombstone_key(table_id, path) for path in paths])
    for key in found:
        store.delete(CATALOG, key)
    return len(found)


def rebase(store: Store, table_id: int, moved: Callable[[str], str | None]) -> None:
    """Move a table's tombstones with its folder: each path `moved(path)` is stored under that path instead (None:
    unchanged), keeping its time and version (inside a write transaction)."""
    for key, value in list(store.scan(CATALOG, *table_range(table_id))):
        new = moved(_decoded(table_id, key, value).path)
        if new is not None:
            store.delete(CATALOG, key)
            store.put(CATALOG, tombstone_key(table_id, new), value)
