"""Hive Metastore Thrift server (`sargable serve`): Spark SQL, Hive and Trino find tables and prune partitions
through sargable. The only package that imports thrift (the `hms` extra: `pip install 'sargable[hms]'`)."""

from __future__ import annotations

import logging
import os

from sargable.hms.catalog import Catalog
from sargable.hms.server import HmsServer, ServerConfig
from sargable.metastore import Metastore


def serve(
    url: str | None = None,
    config: ServerConfig | None = None,
    *,
    warehouse: str | os.PathLike | None = None,
) -> None:
    """Serve the metastore at `url` (default: `$SARGABLE_METASTORE`) until SIGTERM / Ctrl-C; returns after a
    clean stop. New tables go under `warehouse` (default: `$SARGABLE_WAREHOUSE`)."""
    Metastore.open(url, warehouse=warehouse).close()  # fail here, before listening, on a bad URL
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    server = HmsServer(lambda: Catalog(Metastore.open(url, warehouse=warehouse)), config or ServerConfig())
    server.install_signal_handlers()
    server.serve_forever()


__all__ = ["Catalog", "HmsServer", "ServerConfig", "serve"]
