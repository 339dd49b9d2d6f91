"""Hive Metastore Thrift server (`sargable serve`): Spark SQL, Hive and Trino find tables and prune partitions
through sargable. The only package that imports thrift (the `hms` extra: `pip install 'sargable[hms]'`)."""

from __future__ import annotations

import gc
import logging
import os

from sargable.hms.catalog import Catalog
from sargable.hms.handler import DEFAULT_CALL_TIMEOUT
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
    call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
) -> None:
    """Serve the metastore at `url` (default: `$SARGABLE_METASTORE`) until SIGTERM / Ctrl-C; returns after a
    clean stop. New tables go under `warehouse` (default: `$SARGABLE_WAREHOUSE`); a call running longer than
    `call_timeout` seconds is refused (None: no deadline)."""
    Metastore.open(url, warehouse=warehouse).close()  # fail here, before listening, on a bad URL
    _tune_gc()
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    server = HmsServer(lambda: Catalog(Metastore.open(url, warehouse=warehouse)), config or ServerConfig())
    server.handler.call_timeout = call_timeout
    server.install_signal_handlers()
    server.serve_forever()


__all__ = ["Catalog", "HmsServer", "ServerConfig", "serve"]
