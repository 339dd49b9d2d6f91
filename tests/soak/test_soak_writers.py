"""Concurrent writers soak: 4 processes commit partitions and files to one table for a minute while 2 readers query.

Reuses the machinery of tests/test_metastore_concurrency.py (its writers clash on a file path every 7th commit,
send an invalid statistic every 11th, and the even ones commit optimistically with `expected_version`, retrying on
CommitConflictError; its readers check, in one snapshot per read, that every commit is whole and that commits never
disappear), at soak length: SARGABLE_SOAK_SECONDS (60 by default). Afterwards the table must hold exactly the union
of the acknowledged commits, with every index entry, and the table version must count them. The figures (commits/s,
conflicts retried, commits refused, reads) are printed; docs/reliability.md records them.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

import test_metastore_concurrency as concurrency
from metastore_fixtures import BACKENDS, fresh_url

SECONDS = float(os.environ.get("SARGABLE_SOAK_SECONDS", "60"))
WRITERS = 4
READERS = 2


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path) -> str:
    postgres = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    return fresh_url(request.param, tmp_path, postgres)


def test_soak_concurrent_writers_and_readers(url: str) -> None:
    concurrency._create(url)
    with concurrency._open(url) as ms:
        initial = ms.get_table(concurrency.DB, concurrency.TABLE).version
    start, stop = concurrency._SPAWN.Event(), concurrency._SPAWN.Event()
    writers = [f"w{w}" for w in range(WRITERS)]
    jobs: dict[str, tuple] = {
        name: (concurrency._writer, (url, w, start, SECONDS, w % 2 == 0)) for w, name in enumerate(writers)
    }
    jobs.update({f"r{r}": (concurrency._reader, (url, start, stop)) for r in range(READERS)})
    threading.Timer(0.5, start.set).start()
    began = time.monotonic()
    results = concurrency._run_processes(jobs, stop=stop, until=writers)
    elapsed = time.monotonic() - began

    for r in range(READERS):
        assert results[f"r{r}"]["problems"] == []
        assert results[f"r{r}"]["reads"] >= 3
    acked = {(w, i) for w in range(WRITERS) for i in results[f"w{w}"]["acked"]}
    failed = {(w, i) for w in range(WRITERS) for i in results[f"w{w}"]["failed"]}
    assert acked and failed and not acked & failed
    with concurrency._open(url) as ms:
        sides, files, version = concurrency._state(ms)
        assert concurrency._check_state(sides, files) == []
        assert sides["a"] == acked
        assert version == initial + len(acked)
        assert ms.count_partitions(concurrency.DB, concurrency.TABLE) == concurrency.FILLERS + 2 * len(acked)
        assert len(list(ms.store.scan("pindex"))) == 2 * (concurrency.FILLERS + 2 * len(acked))
    conflicts = sum(results[w]["conflicts"] for w in writers)
    reads = sum(results[f"r{r}"]["reads"] for r in range(READERS))
    print(
        f"\nsoak {url.split(':')[0]}: {WRITERS} writers x {SECONDS:.0f} s: {len(acked)} commits acknowledged "
        f"({len(acked) / SECONDS:.1f} commits/s), {conflicts} optimistic conflicts retried, {len(failed)} commits "
        f"refused (clash or invalid), {reads} snapshot reads by {READERS} readers, {elapsed:.0f} s wall"
    )
