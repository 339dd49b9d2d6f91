"""`sargable serve` soak: 8 clients mixing reads, adds and drops of one table for SARGABLE_SOAK_SECONDS (60 by
default) on each backend, through two servers over one metastore on PostgreSQL; then every partition's acknowledged
creations and drops must alternate (tests/test_hms_scale.py's check). And readers under ingest (issue 32): one client
adding a partition every 100 ms while 4 run selective filters, with its consistency check (tests/hms_ingest.py). The
figures are printed."""

from __future__ import annotations

import os

import pytest

import test_hms_scale as scale
from hms_server import SargableServe, thrift_client
from metastore_fixtures import BACKENDS, fresh_url
from test_hms_ingest import ingest_through_serve

pytest.importorskip("pymetastore")
from pymetastore.hive_metastore import ttypes

SECONDS = float(os.environ.get("SARGABLE_SOAK_SECONDS", "60"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_soak_hms_mixed_clients(backend: str, request: pytest.FixtureRequest, tmp_path) -> None:
    postgres = request.getfixturevalue("postgres_url") if backend == "postgresql" else None
    url = fresh_url(backend, tmp_path, postgres)
    servers = 2 if backend == "postgresql" else 1
    with SargableServe(tmp_path / "a", url) as first, SargableServe(tmp_path / "b", url) as second:
        ports = [first.port, second.port][:servers]
        with thrift_client(first.port) as client:
            client.create_database(ttypes.Database(name=scale.DB, locationUri=f"s3a://bucket/{scale.DB}.db"))
        figures = scale.run_mixed_load(ports, SECONDS)
        errors = [line for line in first.calls() + second.calls() if "internal error" in line]
    assert errors == []
    print(
        f"\nsoak hms {backend}: {scale.CLIENTS} clients x {SECONDS:.0f} s over {servers} server(s): "
        f"{figures['adds']} partitions created, {figures['drops']} dropped, {figures['reads']} reads "
        f"({(figures['adds'] + figures['drops'] + figures['reads']) / SECONDS:.0f} calls/s), "
        f"{figures['present']} present at the end"
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_soak_hms_readers_under_ingest(backend: str, request: pytest.FixtureRequest, tmp_path) -> None:
    """Issue 32, item 4: one client adds a partition every 100 ms, 4 clients run selective filters (and list every
    name, one call in ten), for SARGABLE_SOAK_SECONDS; every read sees every acknowledged partition, nothing is lost
    (tests/hms_ingest.py)."""
    postgres = request.getfixturevalue("postgres_url") if backend == "postgresql" else None
    figures = ingest_through_serve(fresh_url(backend, tmp_path, postgres), tmp_path / "serve", SECONDS)
    assert figures["problems"] == []
    print(
        f"\nsoak hms ingest {backend}: {figures['adds']} partitions added every {figures['interval_ms']:.0f} ms, "
        f"{figures['reads']} selective reads by {figures['readers']} clients over {SECONDS:.0f} s: read p50 "
        f"{figures['read_p50_ms']:.2f} ms, p99 {figures['read_p99_ms']:.2f} ms; {figures['names_reads']} whole name "
        f"listings: p50 {figures['names_p50_ms']:.2f} ms, p99 {figures['names_p99_ms']:.2f} ms; add p50 "
        f"{figures['add_p50_ms']:.2f} ms, p99 {figures['add_p99_ms']:.2f} ms; every read saw every acknowledged "
        "partition, none lost"
    )
