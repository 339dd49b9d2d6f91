"""Readers under ingest, short (issue 32, item 4; `make soak` runs it for a minute): one client adds a partition
every 100 ms while 4 clients run selective `get_partitions_by_filter` calls and list every name (one call in ten; a
names listing the server keeps grows by each partition added after it) through `sargable serve`; every read sees
every partition acknowledged before it began, holds nothing else, and nothing is lost (tests/hms_ingest.py)."""

from __future__ import annotations

import os

import pytest

from hms_ingest import run_ingest
from hms_server import SargableServe, thrift_client
from metastore_fixtures import BACKENDS, fresh_url

pytest.importorskip("pymetastore")
from pymetastore.hive_metastore import ttypes

SECONDS = float(os.environ.get("SARGABLE_INGEST_SECONDS", "3"))


def ingest_through_serve(url: str, root, seconds: float) -> dict:
    """The scenario through one `sargable serve` over the metastore at `url` (table `ingest.events`)."""
    with SargableServe(root, url) as serve:
        with thrift_client(serve.port) as client:
            client.create_database(ttypes.Database(name="ingest", locationUri="s3a://bucket/ingest.db"))
            client.create_table(
                ttypes.Table(
                    tableName="events",
                    dbName="ingest",
                    sd=ttypes.StorageDescriptor(cols=[ttypes.FieldSchema("x", "int", None)]),
                    partitionKeys=[ttypes.FieldSchema("ds", "string", None), ttypes.FieldSchema("hr", "int", None)],
                    parameters={},
                    tableType="EXTERNAL_TABLE",
                )
            )

        def partition(values: tuple[str, str]) -> ttypes.Partition:
            return ttypes.Partition(values=list(values), dbName="ingest", tableName="events", parameters={})

        figures = run_ingest(serve.port, "ingest", "events", partition, seconds)
        errors = [line for line in serve.calls() if "internal error" in line]
    assert errors == []
    return figures


@pytest.mark.parametrize("backend", BACKENDS)
def test_readers_see_every_acknowledged_partition_while_one_client_adds(backend, request, tmp_path):
    postgres = request.getfixturevalue("postgres_url") if backend == "postgresql" else None
    figures = ingest_through_serve(fresh_url(backend, tmp_path, postgres), tmp_path / "serve", SECONDS)
    assert figures["problems"] == []
    assert figures["adds"] >= 2 and figures["reads"] >= 4 and figures["names_reads"] >= 1
