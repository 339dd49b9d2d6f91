"""Hive Metastore Thrift server (`sargable serve`): Spark SQL, Hive and Trino find tables and prune partitions
through sargable. The only package that imports thrift (the `hms` extra: `pip install 'sargable[hms]'`)."""

from __future__ import annotations

import gc
import logging
import os

from sargable.hms.catalog import Catalog
from sargable.hms.logs import BoundedLines
from sargable.hms.server import HmsServer, ServerConfig
from sargable.metastore import Metastore

_GC_THRESHOLDS = (100_000, 50, 100)


def _tune_gc() -> None:
    """Make the cyclic garbage collector rare in the server process: a listing allocates a few short-lived objects
    per partition, all freed by reference counting, and with Python's default thresholds (700, 10, 10) the collector
    ran 87 full collections over three 1,000,000-partition listings, 15-20% of their time, collecting nothing.
    The objects of start-up are frozen out of every collection."""
    gc.freeze()
    gc.set_threshold(*_GC_THRESHOLDS)


def serve(
    url: str | None = None,
    config: ServerConfig | None = None,
    *,
    warehouse: str | os.PathLike | None = None,
    create: bool = False,
) -> None:
    """Serve the metastore at `url` (default: `$SARGABLE_METASTORE`) until SIGTERM / Ctrl-C; returns after a
    clean stop. New tables go under `warehouse` (default: `$SARGABLE_WAREHOUSE`). The metastore must exist unless
    `create` (a mistyped URL is an error, not a new empty catalog)."""
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
        for handler in logging.getLogger().handlers:  # every logger's lines bounded, the Thrift runtime's too
            handler.addFilter(BoundedLines())
    with Metastore.open(url, warehouse=warehouse, create=create) as probe:  # fail here, before listening
        logging.getLogger(__name__).info("metastore %s, warehouse %s", probe.url, probe.warehouse)
    _tune_gc()

    def open_catalog() -> Catalog:
        return Catalog(Metastore.open(url, warehouse=warehouse, create=False))

    server = HmsServer(open_catalog, config or ServerConfig())
    server.install_signal_handlers()
    server.serve_forever()


__all__ = ["Catalog", "HmsServer", "ServerConfig", "serve"]
