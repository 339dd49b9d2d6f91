"""Write intents: sargable's writes registered in the metastore before they write a file, so that `vacuum` can tell
the garbage of sargable's own failed writes from files it never wrote (which it never deletes).

A writer (`sgs.write`, `sgs.optimize`) begins a write (`Table.begin_write`) before Spark writes anything: in one
transaction, a catalog row `W` + table prefix + `\\x00` + encoded write id -> the table location the write was issued
for and when. The write stages its files in `<that location>/_sargable_staging/<write id>/` (`sargable.fs`); before
it moves them into the table it records their final paths, one row each, `W` + table prefix + `\\x01` + encoded
path -> the write id; after its commit and cleanup it ends the write (both kinds of rows go). A write killed on the
way leaves its rows: the files they name that no table lists are the garbage `vacuum` may delete.

An intent belongs to its table's location: changing the location drops the table's intents (they name files of a
folder the table no longer owns, and must not apply if it ever comes back there), while a folder moved with its
table (a managed rename) takes its intents along, rebased like its files.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from sargable import keys
from sargable.errors import MetastoreError
from sargable.metastore.layout import table_prefix
from sargable.metastore.schema import CATALOG, DECODE_ERRORS, damaged, key_range
from sargable.store import Store
from sargable.types import STRING

INTENT_PREFIX = b"W"
"""Catalog key prefix of a table's write intents: `W` + the table prefix + `\\x00` (a write) or `\\x01` (a path)."""
_WRITE, _PATH = b"\x00", b"\x01"
_WRITE_ID = re.compile(r"[0-9a-f]{32}\Z")


@dataclass(frozen=True)
class WriteIntent:
    """A write of sargable to a table that has begun and not ended: its id, the location it was issued for (files
    staged in `<location>/_sargable_staging/<write id>/`), and when it began (the writer's clock)."""

    write_id: str
    location: str
    started: float


def check_write_id(write_id: object) -> str:
    """A write id as `begin` makes them (32 lower-case hex digits); anything else is a MetastoreError."""
    if not isinstance(write_id, str) or not _WRITE_ID.match(write_id):
        raise MetastoreError(f"a write id is 32 lower-case hex digits, got {write_id!r}")
    return write_id


def _prefix(table_id: int) -> bytes:
    return INTENT_PREFIX + table_prefix(table_id)


def _write_key(table_id: int, write_id: str) -> bytes:
    return _prefix(table_id) + _WRITE + keys.encode([write_id], [STRING])


def _path_key(table_id: int, path: str) -> bytes:
    return _prefix(table_id) + _PATH + keys.encode([path], [STRING])


def table_range(table_id: int) -> tuple[bytes, bytes | None]:
    """The catalog keys of one table's intents (writes and paths)."""
    return key_range(_prefix(table_id))


def begin(store: Store, table_id: int, write_id: str, location: str, started: float) -> WriteIntent:
    """Register a write (inside a write transaction, the table's row locked)."""
    intent = WriteIntent(check_write_id(write_id), location, started)
    store.put(CATALOG, _write_key(table_id, write_id), json.dumps({"location": location, "started": started}).encode())
    return intent


def _decoded(table_id: int, key: bytes, raw: bytes) -> WriteIntent:
    try:
        (write_id,) = keys.decode(key[len(_prefix(table_id)) + 1 :], [STRING])
        value = json.loads(raw)
        location, started = value["location"], value["started"]
        if not isinstance(location, str) or not isinstance(started, (int, float)):
            raise ValueError(f"expected a location and a time, got {value!r}")
    except DECODE_ERRORS as exc:
        raise damaged(CATALOG, key, f"a write intent of table id {table_id}", exc) from None
    return WriteIntent(write_id, location, float(started))


def get(store: Store, table_id: int, write_id: str) -> WriteIntent | None:
    """The intent of one write, if it has begun and not ended."""
    key = _write_key(table_id, check_write_id(write_id))
    raw = store.get(CATALOG, key)
    return None if raw is None else _decoded(table_id, key, raw)


def writes(store: Store, table_id: int) -> list[WriteIntent]:
    """Every write of the table that has begun and not ended."""
    return [_decoded(table_id, key, raw) for key, raw in store.scan(CATALOG, *key_range(_prefix(table_id) + _WRITE))]


def record(store: Store, table_id: int, write_id: str, paths: Iterable[str]) -> None:
    """Record the final paths a begun write is about to move its files to (inside a write transaction)."""
    if get(store, table_id, write_id) is None:
        raise MetastoreError(
            f"write {write_id} of table id {table_id} is not registered: the table's location changed while it ran "
            "(a location change ends the table's unfinished writes), or it has ended; nothing of it was committed"
        )
    store.put_many(CATALOG, [(_path_key(table_id, path), write_id.encode()) for path in paths])


def recorded(store: Store, table_id: int) -> dict[str, str]:
    """Every recorded path of the table's writes -> its write id."""
    out = {}
    start = _prefix(table_id) + _PATH
    for key, raw in store.scan(CATALOG, *key_range(start)):
        try:
            (path,) = keys.decode(key[len(start) :], [STRING])
            out[path] = raw.decode()
        except DECODE_ERRORS as exc:
            raise damaged(CATALOG, key, f"a path of a write intent of table id {table_id}", exc) from None
    return out


def writer_of(store: Store, table_id: int, paths: Iterable[str]) -> str | None:
    """The write id that recorded one of these paths (spellings of one file), if any."""
    found = store.multi_get(CATALOG, [_path_key(table_id, path) for path in paths])
    return next((raw.decode() for raw in found.values() if raw is not None), None)


def end(store: Store, table_id: int, write_id: str) -> None:
    """End a write: its row and the paths it recorded go (inside a write transaction)."""
    store.delete(CATALOG, _write_key(table_id, check_write_id(write_id)))
    forget(store, table_id, [p for p, w in recorded(store, table_id).items() if w == write_id])


def forget(store: Store, table_id: int, paths: Iterable[str]) -> None:
    """Drop recorded paths (files gone from disk, or listed by a commit)."""
    for path in paths:
        store.delete(CATALOG, _path_key(table_id, path))


def drop_all(store: Store, table_id: int) -> None:
    """Drop every intent of a table (its location changed, or it is dropped)."""
    store.delete_range(CATALOG, *table_range(table_id))


def rebase(store: Store, table_id: int, location: str, moved: Callable[[str], str | None]) -> None:
    """Move a table's intents with its folder: each write's location becomes `location`, each recorded path
    `moved(path)` (None: a path outside the folder, dropped)."""
    for intent in writes(store, table_id):
        begin(store, table_id, intent.write_id, location, intent.started)
    paths: Mapping[str, str] = recorded(store, table_id)
    forget(store, table_id, paths)
    store.put_many(
        CATALOG,
        [(_path_key(table_id, new), w.encode()) for p, w in paths.items() if (new := moved(p)) is not None],
    )
