"""The catalogs (store connections) of `sargable serve`: a bounded pool shared by the connection threads, so idle
client connections hold no database connection and a PostgreSQL server sees at most `--workers` connections."""

from __future__ import annotations

import threading
from collections.abc import Callable

from sargable.hms.catalog import Catalog


class CatalogPool:
    """At most `size` catalogs (store connections), each used by one call at a time; opened when first needed."""

    def __init__(self, open_catalog: Callable[[], Catalog], size: int) -> None:
        self._open = open_catalog
        self._idle: list[Catalog] = []
        self._all: list[Catalog] = []
        self._slots = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()

    def lease(self) -> Catalog:
        self._slots.acquire()
        with self._lock:
            if self._idle:
                return self._idle.pop()
        try:
            catalog = self._open()
        except BaseException:
            self._slots.release()
            raise
        with self._lock:
            self._all.append(catalog)
        return catalog

    def give_back(self, catalog: Catalog, *, broken: bool = False) -> None:
        """Return a leased catalog; a broken one (its store failed, or a transaction was left open) is closed."""
        broken = broken or catalog.in_transaction
        with self._lock:
            if broken:
                self._all.remove(catalog)
            else:
                self._idle.append(catalog)
        if broken:
            catalog.close()
        self._slots.release()

    def close(self) -> None:
        with self._lock:
            for catalog in self._all:
                catalog.close()
            self._all.clear()
            self._idle.clear()
