"""Real Spark processes for the tests: a standalone cluster and a Spark Connect server, and the drivers run on them.

A pytest plugin (`pytest_plugins = ["spark_cluster"]`) and a script. The session-scoped fixtures start the
processes with `sargable.spark.cluster` (a master and two workers of 1 core / 1 GB each; a Connect server over
local[2]) and stop them by process group id at the end of the run, failing if any process is left.

Drivers run as subprocesses (`python tests/spark_cluster.py cluster|connect ARGS_JSON`): a process holds one
SparkContext, the test process already has the shared local[2] one, and a Spark Connect client marks its whole
process as Connect. A driver prints one JSON line with what it saw, which the test compares with a local[2] run.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = "order_id bigint, amount double, name string, ds date, store int"
STORES = (1, 2)
ROWS_PER_PARTITION = 40
FILTERS = [
    None,
    "ds = '2024-01-02'",
    "ds >= '2024-01-03' and store = 2",
    "order_id < 30 or store = 1",
    "amount > 50 and name like 'a%'",
    "ds in ('2024-01-01', '2024-01-06') and amount < 20",
]
FOOTER_JOB = "sargable: footer statistics"
DRIVER_TIMEOUT = 300


def rows_for(days: list[str]) -> list[tuple[Any, ...]]:
    """Deterministic rows of the test table for some days: ROWS_PER_PARTITION per (day, store)."""
    rows = []
    for day in days:
        date = dt.date.fromisoformat(day)
        for store in STORES:
            for i in range(ROWS_PER_PARTITION):
                order_id = (date.toordinal() % 1000) * 1000 + store * 100 + i
                rows.append((order_id, round((order_id * 37 % 1000) / 10, 1), "abc"[i % 3] + str(i), date, store))
    return rows


def create_orders(url: str, warehouse: Path) -> None:
    """The test table `sales.orders` (the columns of `rows_for`, partitioned by day and store), empty."""
    from sargable.metastore import Metastore

    with Metastore.open(url, warehouse=warehouse) as ms:
        ms.create_database("sales")
        ms.create_table(
            "sales",
            "orders",
            [("order_id", "bigint"), ("amount", "double"), ("name", "string")],
            [("ds", "date"), ("store", "int")],
        )


def canonical(rows: list[Any]) -> list[list[str]]:
    """Rows as sorted lists of strings: comparable across processes through JSON."""
    return sorted([str(v) for v in row] for row in rows)


def run_driver(kind: str, args: dict[str, Any]) -> subprocess.Popen:
    """Start a driver subprocess in its own process group; `finish` collects its JSON."""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    for variable in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE"):
        env.pop(variable, None)
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), kind, json.dumps(args)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def kill(*processes: subprocess.Popen) -> None:
    """SIGKILL the process group of each driver (its JVM and Python workers) and reap it; gone ones are skipped."""
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def finish(process: subprocess.Popen, timeout: float = DRIVER_TIMEOUT) -> dict[str, Any]:
    """The driver's JSON result; kills its process group on timeout, fails with its stderr if it failed."""
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill(process)
        out, err = process.communicate()
        pytest.fail(f"driver timed out after {timeout} s:\n{err[-4000:]}")
    finally:
        kill(process)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if process.returncode != 0 or not lines:
        pytest.fail(f"driver exited {process.returncode}:\n{out[-2000:]}\n{err[-6000:]}")
    return json.loads(lines[-1])


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A standalone master and two workers (1 core, 1 GB each) on 127.0.0.1; stopped by process group id."""
    pytest.importorskip("pyspark")
    from sargable.spark.cluster import StandaloneCluster

    cluster = StandaloneCluster(workers=2, cores=1, memory="1g", directory=tmp_path_factory.mktemp("spark-cluster"))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
    assert cluster.leftovers() == []
    assert _java_processes_mentioning(cluster.master_url.split("//")[1]) == []


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The Spark Connect server of the pyspark package (over local[2]) on 127.0.0.1; stopped by process group id."""
    pytest.importorskip("pyspark")
    pytest.importorskip("grpc", reason="Spark Connect needs pip install 'sargable[connect]'")
    from sargable.spark.cluster import ConnectServer

    server = ConnectServer(directory=tmp_path_factory.mktemp("spark-connect"))
    server.start()
    try:
        yield server
    finally:
        server.stop()
    assert server.leftovers() == []
    assert _java_processes_mentioning(f"spark.connect.grpc.binding.port={server.port}") == []


def _java_processes_mentioning(text: str) -> list[int]:
    """PIDs of live processes whose command line contains `text` (what a stopped fixture must leave: none)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found


def _get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def _footer_tasks(spark: Any) -> dict[str, Any]:
    """Where the footer-statistics job ran, from the driver's own REST API: executor ids and hosts of its tasks."""
    base = f"{spark.sparkContext.uiWebUrl}/api/v1/applications/{spark.sparkContext.applicationId}"
    stages = _get_json(f"{base}/stages?details=true")
    tasks = [
        task
        for stage in stages
        if str(stage.get("description", "")).startswith(FOOTER_JOB)
        for task in stage.get("tasks", {}).values()
    ]
    executors = [e for e in _get_json(f"{base}/executors") if e["id"] != "driver"]
    return {
        "footer_task_executors": sorted({t["executorId"] for t in tasks}),
        "footer_tasks": len(tasks),
        "executors": sorted(e["id"] for e in executors),
        "executor_hosts": sorted({e["hostPort"].rsplit(":", 1)[0] for e in executors}),
    }


def _wait_for_partitions(url: str, table: str, count: int, timeout: float = 180.0) -> None:
    from sargable.metastore import Metastore

    db, name = table.split(".")
    deadline = time.monotonic() + timeout
    with Metastore.open(url) as ms:
        while ms.count_partitions(db, name) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{table} has {ms.count_partitions(db, name)} of {count} partitions")
            time.sleep(0.5)


def _reads(spark: Any, table: str, url: str) -> list[dict[str, Any]]:
    from sargable import spark as sgs

    out = []
    for where in FILTERS:
        df = sgs.read(spark, table, where=where, metastore=url)
        report = sgs.scan_report(df)
        out.append({"where": where, "rows": canonical(df.collect()), "files": report.files_selected})
    return out


def cluster_driver(args: dict[str, Any]) -> dict[str, Any]:
    """Write some days through the cluster, wait for the other driver's partitions, read every filter."""
    from sargable import spark as sgs
    from sargable.spark.cluster import free_port

    conf = {
        "spark.ui.enabled": "true",
        "spark.ui.port": str(free_port()),
        "spark.executor.memory": "512m",
        "spark.cores.max": str(args["cores"]),
        "spark.driver.memory": "1g",
    }
    spark = sgs.local_session(f"sargable-test-{args['name']}", master=args["master"], **conf)
    try:
        df = spark.createDataFrame(rows_for(args["days"]), SCHEMA)
        result = sgs.write(df, args["table"], partition_by=["ds", "store"], metastore=args["metastore"], progress=False)
        where = _footer_tasks(spark)
        _wait_for_partitions(args["metastore"], args["table"], args["wait_partitions"])
        return {
            "master": spark.sparkContext.master,
            "write": {"files": result.files, "partitions": result.partitions, "rows": result.rows},
            **where,
            "reads": _reads(spark, args["table"], args["metastore"]),
        }
    finally:
        spark.stop()


def _attempt(out: dict[str, Any], key: str, step: Any) -> None:
    """Run one step of the Connect driver; record its result or its error (class and first line)."""
    try:
        out[key] = {"ok": step()}
    except Exception as exc:
        out[key] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}


def connect_driver(args: dict[str, Any]) -> dict[str, Any]:
    """sgs.write, sgs.read (text, Column, prune_by), the data source and vacuum from a Spark Connect session."""
    from pyspark.sql import functions as F

    from sargable import spark as sgs
    from sargable.spark.session import is_connect, remote_session

    spark = remote_session(args["url"])
    table, url = args["table"], args["metastore"]
    out: dict[str, Any] = {"connect": is_connect(spark)}
    try:
        df = spark.createDataFrame(rows_for(args["days"]), SCHEMA)

        def write() -> dict[str, int]:
            result = sgs.write(df, table, partition_by=["ds", "store"], metastore=url, progress=False)
            return {"files": result.files, "partitions": result.partitions, "rows": result.rows}

        _attempt(out, "write", write)
        _attempt(out, "reads", lambda: _reads(spark, table, url))

        def column_read(where: Any) -> dict[str, Any]:
            read = sgs.read(spark, table, where=where, metastore=url)
            report = sgs.scan_report(read)
            return {"rows": canonical(read.collect()), "files": report.files_selected, "notes": list(report.notes)}

        where = (F.col("ds") == F.lit(dt.date(2024, 1, 2))) & (F.col("store") == 1)
        _attempt(out, "column_read", lambda: column_read(where))
        mixed = (F.col("ds") >= dt.date(2024, 1, 2)) & (F.upper("name") == "A3") & F.col("name").startswith("a")
        _attempt(out, "mixed_column_read", lambda: column_read(mixed))

        def data_source() -> dict[str, Any]:
            source = spark.read.format("sargable").load(table).where("ds = '2024-01-02' and amount > 50")
            return {"rows": canonical(source.collect())}

        _attempt(out, "data_source", data_source)

        def pruned_by_dimension() -> dict[str, Any]:
            days = spark.createDataFrame([(dt.date(2024, 1, 2),), (dt.date(2024, 1, 3),)], "d date")
            read = sgs.read(spark, table, where="store = 2", prune_by=[(days, "d", "ds")], metastore=url)
            report = sgs.scan_report(read)
            return {"rows": canonical(read.collect()), "partitions": report.partitions_selected}

        _attempt(out, "prune_by", pruned_by_dimension)

        def many_files() -> dict[str, Any]:
            threshold = "spark.sql.sources.parallelPartitionDiscovery.threshold"
            spark.conf.set(threshold, "1")
            try:
                read = sgs.read(spark, table, metastore=url)
                return {"rows": canonical(read.collect()), "files": sgs.scan_report(read).files_selected}
            finally:
                spark.conf.unset(threshold)

        _attempt(out, "many_files", many_files)
        _attempt(out, "vacuum", lambda: sgs.vacuum(table, metastore=url))
    finally:
        spark.stop()
    return out


def main() -> None:
    kind, args = sys.argv[1], json.loads(sys.argv[2])
    sys.path.insert(0, str(ROOT / "tests"))
    result = cluster_driver(args) if kind == "cluster" else connect_driver(args)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
