"""sargable on a real Spark standalone cluster (a master and two workers started by the `spark_cluster` fixture).

Two drivers (subprocesses) write different days of one table at the same time through the cluster, with the
PostgreSQL metastore; each then reads a corpus of filters through the cluster. The footer statistics must have
been read by tasks on the workers' executors, every partition and file of both writes must be in the metastore and
on disk, and every read must equal the same read of the same rows written and read by the local[2] session.
"""

from __future__ import annotations

import os
import time
import uuid

import pytest

pytest.register_assert_rewrite("spark_cluster")
from spark_cluster import FILTERS, SCHEMA, canonical, create_orders, finish, kill, rows_for, run_driver  # noqa: E402

pytest_plugins = ["conftest_spark", "spark_cluster"]

DAYS_A = ["2024-01-01", "2024-01-02", "2024-01-03"]
DAYS_B = ["2024-01-04", "2024-01-05", "2024-01-06"]


@pytest.fixture(scope="module")
def cluster_run(spark_cluster, postgres_url, tmp_path_factory):
    """Both drivers' results, the metastore URL (a schema of this run) and the table name."""
    schema = f"cluster_{uuid.uuid4().hex[:8]}"
    url = f"{postgres_url}{'&' if '?' in postgres_url else '?'}schema={schema}"
    create_orders(url, tmp_path_factory.mktemp("cluster-warehouse"))
    total = (len(DAYS_A) + len(DAYS_B)) * 2
    common = {"master": spark_cluster.master_url, "metastore": url, "table": "sales.orders", "cores": 1}
    drivers = [
        run_driver("cluster", {**common, "name": "a", "days": DAYS_A, "wait_partitions": total}),
        run_driver("cluster", {**common, "name": "b", "days": DAYS_B, "wait_partitions": total}),
    ]
    try:
        results = [finish(driver) for driver in drivers]
    finally:
        kill(*drivers)
    return results, url


@pytest.fixture(scope="module")
def local_reads(spark, spark_metastore):
    """The reads of FILTERS by the local[2] session, on the same rows written by it into a SQLite metastore."""
    from sargable import spark as sgs

    df = spark.createDataFrame(rows_for(DAYS_A + DAYS_B), SCHEMA)
    sgs.write(df, "sales.orders_local", partition_by=["ds", "store"], metastore=spark_metastore, progress=False)
    return {
        where: canonical(sgs.read(spark, "sales.orders_local", where=where, metastore=spark_metastore).collect())
        for where in FILTERS
    }


def test_drivers_ran_on_the_cluster(cluster_run, spark_cluster):
    results, _ = cluster_run
    for result in results:
        assert result["master"] == spark_cluster.master_url
        assert len(result["executors"]) == 1  # spark.cores.max=1: one executor (one worker) per driver
    deadline = time.monotonic() + 60
    while True:  # the master marks an application completed once it notices its driver is gone
        names = {app["name"] for app in spark_cluster.state()["completedapps"]}
        if {"sargable-test-a", "sargable-test-b"} <= names or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert {"sargable-test-a", "sargable-test-b"} <= names


def test_footers_are_read_on_executors(cluster_run):
    results, _ = cluster_run
    for result in results:
        assert result["footer_tasks"] >= 1
        assert result["footer_task_executors"], "the footer job ran no task"
        assert "driver" not in result["footer_task_executors"]
        assert set(result["footer_task_executors"]) <= set(result["executors"])
        assert result["executor_hosts"] == ["127.0.0.1"]


def test_concurrent_writes_both_land(cluster_run):
    from sargable.fs import FileSystem, hidden
    from sargable.metastore import Metastore

    results, url = cluster_run
    with Metastore.open(url) as ms:
        table = ms.get_table("sales", "orders")
        files = ms.list_files("sales", "orders")
        stats = ms.table_stats("sales", "orders")
        names = sorted(ms.list_partition_names("sales", "orders"))
    expected = sorted(f"ds={day}/store={store}" for day in DAYS_A + DAYS_B for store in (1, 2))
    assert names == expected
    assert sum(r["write"]["files"] for r in results) == len(files) == stats.files
    assert sum(r["write"]["rows"] for r in results) == stats.rows == sum(f.row_count for f in files)
    assert stats.rows == len(rows_for(DAYS_A + DAYS_B))
    assert stats.partitions == len(expected)
    assert stats.bytes == sum(f.size_bytes for f in files)
    fs = FileSystem.at(table.location)
    on_disk = {e.path for e in fs.walk(fs.location, lambda e: not hidden(e.path.rsplit("/", 1)[1])) if e.kind == "file"}
    assert on_disk == {f.path for f in files}
    assert table.version == 2  # one commit per driver


def test_cluster_reads_equal_local(cluster_run, local_reads):
    results, _ = cluster_run
    for result in results:
        assert [r["where"] for r in result["reads"]] == FILTERS
        for read in result["reads"]:
            assert read["rows"] == local_reads[read["where"]], read["where"]
    assert len(local_reads[None]) == len(rows_for(DAYS_A + DAYS_B))
    assert 0 < len(local_reads["ds = '2024-01-02'"]) < len(local_reads[None])


def test_local_session_reads_the_cluster_table(cluster_run, spark, local_reads):
    from sargable import spark as sgs

    _, url = cluster_run
    for where in FILTERS:
        assert canonical(sgs.read(spark, "sales.orders", where=where, metastore=url).collect()) == local_reads[where]


def test_stop_ends_the_whole_process_group(tmp_path):
    """A launched process's children (as a worker's executors) go with it, even when they ignore SIGTERM."""
    from sargable.spark.cluster import _launch

    script = "trap '' TERM; sleep 300 & sleep 300 & wait"
    process = _launch("fake-worker", ["bash", "-c", script], dict(os.environ), tmp_path)
    time.sleep(0.3)
    assert process.alive
    process.stop(timeout=1.0)
    assert not process.alive
    assert process.popen.poll() is not None


def test_bad_cluster_arguments():
    from sargable.errors import SargableError
    from sargable.spark.cluster import StandaloneCluster

    with pytest.raises(SargableError, match="workers must be a positive integer"):
        StandaloneCluster(workers=0)
