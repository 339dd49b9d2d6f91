"""Open metastores shared within a thread by URL, so repeated calls that name a metastore by URL reuse one.

A `Store` is for one thread at a time, so each thread has its own few (`PER_THREAD`, least recently used closed
first). They hold connections and the metastore's caches, which are keyed by table id and version, never by URL; a
metastore whose store was re-created at the same URL (another store id, or another SQLite file) or was closed is
opened again.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass

from sargable.errors import SargableError
from sargable.metastore.metastore import Metastore, default_url
from sargable.metastore.schema import stored_id

PER_THREAD = 8
"""Open metastores kept per thread."""

_LOCAL = threading.local()


@dataclass(frozen=True)
class _Entry:
    metastore: Metastore
    file: tuple[int, int] | None
    """(device, inode) of a SQLite database file when opened."""


def _sqlite_file(url: str) -> tuple[int, int] | None:
    if not url.startswith("sqlite:///"):
        return None
    try:
        found = os.stat(os.path.expanduser(url[len("sqlite:///") :].split("?", 1)[0]))
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _current(entry: _Entry, url: str) -> bool:
    """Whether a pooled metastore still reads the store at its URL."""
    return entry.file == _sqlite_file(url) and stored_id(entry.metastore.store) == entry.metastore.store_id


def shared(url: str | None = None) -> Metastore:
    """This thread's open `Metastore` for `url` (default: `$SARGABLE_METASTORE` or `./warehouse`), opened on first
    use; the caller must not close it."""
    url = url or default_url()
    pool: OrderedDict[str, _Entry] | None = getattr(_LOCAL, "pool", None)
    if pool is None:
        pool = _LOCAL.pool = OrderedDict()
    entry = pool.get(url)
    if entry is not None:
        if _current(entry, url):
            pool.move_to_end(url)
            return entry.metastore
        del pool[url]
        _close(entry.metastore)
    metastore = Metastore.open(url)
    pool[url] = _Entry(metastore, _sqlite_file(url))
    while len(pool) > PER_THREAD:
        _, evicted = pool.popitem(last=False)
        _close(evicted.metastore)
    return metastore


def _close(metastore: Metastore) -> None:
    try:
        metastore.close()
    except SargableError:
        return
