"""A writer killed with SIGKILL at a random moment of a commit leaves the table exactly before or after that commit.

A child process (this file run as a script) commits in a loop: commit k adds partition k and its FILES files,
and nothing else, printing `B k` before the call and `D k` once it returned. The parent kills it with SIGKILL after
a random delay, then checks, from a fresh connection, that the table holds partitions 0..n-1 for an n that is the
state before the commit in flight (n = last done + 1) or after it (n = last begun + 1), that every partition has
exactly its files, that the file-path index matches the files, that the table version counts exactly n commits, and
that the table is readable and writable (the next round's child continues from n). Both backends; the number of
rounds is SARGABLE_CRASH_ROUNDS (3 in `make test`, more under `make soak`).

A Spark write killed the same way (the driver's whole process group, JVM and Python workers included, SIGKILLed at
a random moment of `sargable.spark.write`) leaves the table exactly as before or after the write: the same
partitions, files and rows through the metastore, every listed file readable, and whatever the dead write left on
disk unreferenced, reported by `vacuum`. SARGABLE_SPARK_CRASH_ROUNDS rounds (1, on SQLite only, in `make test`,
where each round's JVM start is most of the cost; both backends under `make soak`).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from metastore_fixtures import BACKENDS, fresh_url
from sargable.metastore import Metastore
from sargable.metastore.schema import FILE_PATHS, FILES
from sargable.stats import ColumnStats, FileStats

DB, TABLE = "crash", "events"
FILES_PER_COMMIT = 40
ROUNDS = int(os.environ.get("SARGABLE_CRASH_ROUNDS", "3"))
MAX_DELAY = 0.5
"""Seconds the parent waits, at most, before the kill (uniformly random; the child commits in a tight loop)."""


def files_of(k: int) -> list[FileStats]:
    """The files commit k adds: FILES_PER_COMMIT files of partition k, with statistics naming k."""
    return [
        FileStats(
            path=f"/warehouse/crash/events/k={k}/part-{j:03d}.parquet",
            row_count=10,
            size_bytes=1000 + j,
            columns={"v": ColumnStats(min=k, max=k + j, null_count=0)},
            partition={"k": k},
        )
        for j in range(FILES_PER_COMMIT)
    ]


SPARK_ROUNDS = int(os.environ.get("SARGABLE_SPARK_CRASH_ROUNDS", "1"))
SPARK_BACKENDS = BACKENDS if os.environ.get("SARGABLE_SOAK") == "1" else ["sqlite"]
SPARK_TABLE = "crash.sparked"
SPARK_ROWS = 20_000
SPARK_PARTITIONS = 8


def child(url: str, warehouse: str, start: int) -> None:
    """Commit partition start, start + 1, ... until killed, announcing each commit before and after."""
    ms = Metastore.open(url, warehouse=warehouse)
    os.write(1, b"R\n")
    k = start
    while True:
        os.write(1, b"B %d\n" % k)
        ms.commit(DB, TABLE, add_files=files_of(k))
        os.write(1, b"D %d\n" % k)
        k += 1


def _run_and_kill(url: str, warehouse: str, start: int, delay: float) -> tuple[int, int]:
    """Start a child committing from `start`, SIGKILL it `delay` s after it is ready; (last begun, last done)."""
    proc = subprocess.Popen(
        [sys.executable, __file__, url, warehouse, str(start)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None
    ready = proc.stdout.readline()
    assert ready == b"R\n", (ready, proc.stderr.read() if proc.poll() is not None else b"")
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, err.decode()
    begun, done = start - 1, start - 1
    for line in out.decode().splitlines():
        kind, _, number = line.partition(" ")
        if kind == "B":
            begun = int(number)
        elif kind == "D":
            done = int(number)
    assert begun - done in (0, 1)
    return begun, done


def _check_table(ms: Metastore, base_version: int) -> int:
    """The table holds whole commits 0..n-1 and nothing else; returns n."""
    partitions = [p.values[0] for p in ms.get_partitions_by_filter(DB, TABLE, "k >= 0")]
    n = len(partitions)
    assert partitions == list(range(n)), "partitions are not a prefix of the commits"
    files = ms.list_files(DB, TABLE)
    assert [f.path for f in files] == [f.path for k in range(n) for f in files_of(k)]
    assert all(f.partition == {"k": int(f.path.split("k=")[1].split("/")[0])} for f in files)
    assert all(f.columns["v"].max - f.columns["v"].min == int(f.path[-11:-8]) for f in files)
    prefix = ms.get_table(DB, TABLE).table_id.to_bytes(8, "big")
    end = (int.from_bytes(prefix, "big") + 1).to_bytes(8, "big")
    assert ms.store.count(FILES, prefix, end) == ms.store.count(FILE_PATHS, prefix, end) == n * FILES_PER_COMMIT
    assert ms.get_table(DB, TABLE).version == base_version + n
    return n


@pytest.mark.parametrize("seed", [9])
def test_writer_killed_mid_commit_leaves_whole_commits(metastore_url: str, tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    warehouse = str(tmp_path / "warehouse")
    with Metastore.open(metastore_url, warehouse=warehouse) as ms:
        ms.create_database(DB)
        ms.create_table(DB, TABLE, [("v", "bigint")], [("k", "int")])
        base_version = ms.get_table(DB, TABLE).version
    n, mid_commit, landed = 0, 0, 0
    for _ in range(ROUNDS):
        begun, done = _run_and_kill(metastore_url, warehouse, n, rng.uniform(0.05, MAX_DELAY))
        with Metastore.open(metastore_url, warehouse=warehouse) as ms:
            n = _check_table(ms, base_version)
        assert n in (done + 1, begun + 1), f"{n} partitions after a kill between commits {done} and {begun}"
        mid_commit += begun > done
        landed += begun > done and n == begun + 1
    with Metastore.open(metastore_url, warehouse=warehouse) as ms:
        ms.commit(DB, TABLE, add_files=files_of(n))
        assert _check_table(ms, base_version) == n + 1
    print(f"\ncrash rounds: {ROUNDS}, killed inside a commit: {mid_commit} (of which it landed: {landed}), "
          f"commits survived: {n}")


def spark_child(url: str, scratch: str) -> None:
    """Write SPARK_ROWS rows in SPARK_PARTITIONS partitions to SPARK_TABLE with `sargable.spark.write`."""
    from sargable import spark as sgs

    spark = sgs.local_session("sargable-crash", **{"spark.local.dir": scratch})
    df = spark.range(SPARK_ROWS).selectExpr("id AS v", f"CAST(id % {SPARK_PARTITIONS} AS INT) AS p")
    os.write(1, b"R\n")
    sgs.write(df, SPARK_TABLE, metastore=url, progress=False)
    os.write(1, b"D\n")


def _spark_state(ms: Metastore) -> tuple[list, list, int]:
    """(partition values, file paths, rows in those files read back with pyarrow): the table through the metastore."""
    import pyarrow.parquet as pq

    db, name = SPARK_TABLE.split(".")
    with ms.snapshot():
        partitions = [p.values for p in ms.get_partitions_by_filter(db, name, "p >= 0")]
        files = ms.list_files(db, name)
    rows = sum(pq.read_table(f.path).num_rows for f in files)
    assert rows == sum(f.row_count for f in files)
    return partitions, sorted(f.path for f in files), rows


def _base_table(url: str, warehouse: str) -> None:
    """SPARK_TABLE with two partitions (p = 100, 101) whose Parquet files pyarrow writes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sargable import stats_from_parquet

    db, name = SPARK_TABLE.split(".")
    with Metastore.open(url, warehouse=warehouse) as ms:
        ms.create_database(db)
        table = ms.create_table(db, name, [("v", "bigint")], [("p", "int")])
        files = []
        for p in (100, 101):
            path = Path(table.location) / f"p={p}" / "base.parquet"
            path.parent.mkdir(parents=True)
            pq.write_table(pa.table({"v": pa.array(range(p), pa.int64())}), path)
            files.append(stats_from_parquet(path, list(table.columns), partition={"p": p}))
        ms.commit(db, name, add_files=files)


@pytest.mark.spark
@pytest.mark.parametrize("backend", SPARK_BACKENDS)
def test_spark_write_killed_leaves_the_table_before_or_after(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    pytest.importorskip("pyspark")
    from sargable import spark as sgs

    postgres = request.getfixturevalue("postgres_url") if backend == "postgresql" else None
    metastore_url = fresh_url(backend, tmp_path, postgres)
    rng = random.Random(9)
    warehouse = str(tmp_path / "warehouse")
    _base_table(metastore_url, warehouse)
    with Metastore.open(metastore_url, warehouse=warehouse) as ms:
        before = _spark_state(ms)
    written = {(p,) for p in range(SPARK_PARTITIONS)}
    outcomes = []
    for _ in range(SPARK_ROUNDS):
        env = {**os.environ, "SARGABLE_WAREHOUSE": warehouse}
        proc = subprocess.Popen(
            [sys.executable, __file__, "spark", metastore_url, str(tmp_path / "spark-scratch")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True,
        )
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        assert ready == b"R\n", (ready, proc.stderr.read() if proc.poll() is not None else b"")
        time.sleep(rng.uniform(0.0, 6.0))
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate(timeout=60)
        with Metastore.open(metastore_url, warehouse=warehouse) as ms:
            partitions, paths, rows = _spark_state(ms)
            if partitions == before[0]:
                assert (paths, rows) == (before[1], before[2]), "no partition added, yet the files changed"
                outcomes.append("before")
            else:
                assert partitions == sorted(set(before[0]) | written)
                assert rows == before[2] + SPARK_ROWS
                assert set(before[1]) < set(paths)
                outcomes.append("after" if b"D" in out else "after (committed, killed before returning)")
                before = (partitions, paths, rows)
            orphans = sgs.vacuum(SPARK_TABLE, metastore=ms)
            assert not set(orphans) & set(paths), "vacuum would delete a committed file"
            known = {f.path for f in ms.list_files(*SPARK_TABLE.split("."))}
            assert all(os.path.exists(p) for p in known)
    print(f"\nspark write kills: {outcomes}")


if __name__ == "__main__":
    if sys.argv[1] == "spark":
        spark_child(sys.argv[2], sys.argv[3])
    else:
        child(sys.argv[1], sys.argv[2], int(sys.argv[3]))
