"""Unmodified pyspark with Hive support as a metastore client, in a subprocess.

The test process may already hold a (non-Hive) SparkContext, and pyspark allows one per process, so `run_sql`
starts `python hms_spark.py` with a JSON request on stdin: the metastore URI, a warehouse dir and SQL statements.
The child builds `SparkSession.builder.enableHiveSupport()` with `spark.hadoop.hive.metastore.uris` (or runs the
given `session_code`, which must bind `spark`: the snippet of docs/hms.md) and prints one JSON document: per
statement, its rows (values as JSON: dates and decimals as strings), milliseconds and start (epoch seconds), or the
error it raised; and where the milliseconds went: `spark.sql` (analysis, and the whole run of a command such as
SHOW PARTITIONS, which Spark executes eagerly), `collect` (planning and running a query, rows to Python) and the
driver JVM's garbage collection during the statement.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BASE_CONF = {
    "spark.master": "local[2]",
    "spark.app.name": "hms-client",
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "1g",
    "spark.hadoop.hive.exec.dynamic.partition.mode": "nonstrict",
    "spark.hadoop.hive.stats.autogather": "false",
}
"""The test driver's settings besides the metastore URI and the warehouse."""


def run_sql(
    uri: str,
    warehouse: Path | str,
    statements: Sequence[str],
    *,
    conf: dict[str, str] | None = None,
    session_code: str | None = None,
    timeout: float = 600,
) -> list[dict[str, Any]]:
    """Run `statements` in order in a fresh Hive-enabled pyspark driver; one {"rows", "ms"} or {"error"} per
    statement. `session_code` builds the session instead (it binds `spark`; `uri` and `warehouse` are then its own)."""
    request = {
        "uri": uri,
        "warehouse": str(warehouse),
        "statements": list(statements),
        "conf": conf or {},
        "session_code": session_code,
    }
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run(
        [sys.executable, __file__],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        start_new_session=True,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"the pyspark driver failed ({done.returncode}):\n{done.stderr[-6000:]}")
    return json.loads(lines[-1])["results"]


def _json_value(value: Any) -> Any:
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    return value


def _session(request: dict[str, Any]) -> Any:
    """The Hive-enabled session: `session_code` run with the test settings as spark-submit arguments, or built."""
    from pyspark.sql import SparkSession

    conf = {**BASE_CONF, **request["conf"]}
    if request["session_code"] is not None:
        arguments = [f"--conf {key}={value}" for key, value in conf.items()]
        os.environ["PYSPARK_SUBMIT_ARGS"] = " ".join([*arguments, "pyspark-shell"])
        namespace: dict[str, Any] = {}
        exec(request["session_code"], namespace)
        return namespace["spark"]
    builder = SparkSession.builder
    for key, value in {
        **conf,
        "spark.sql.warehouse.dir": request["warehouse"],
        "spark.hadoop.hive.metastore.uris": request["uri"],
    }.items():
        builder = builder.config(key, value)
    return builder.enableHiveSupport().getOrCreate()


def _gc_ms(spark: Any) -> float:
    """The driver JVM's garbage collection time so far (every collector), in milliseconds."""
    beans = spark._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    return float(sum(bean.getCollectionTime() for bean in beans))


def _driver() -> None:
    request = json.loads(sys.stdin.read())
    spark = _session(request)
    spark.sparkContext.setLogLevel("ERROR")
    results: list[dict[str, Any]] = []
    for statement in request["statements"]:
        wall = time.time()
        collected = _gc_ms(spark)
        started = time.perf_counter()
        try:
            frame = spark.sql(statement)
            planned = time.perf_counter()
            rows = frame.collect()
            ended = time.perf_counter()
            results.append(
                {
                    "rows": [[_json_value(v) for v in row] for row in rows],
                    "ms": (ended - started) * 1000,
                    "at": wall,
                    "sql_ms": (planned - started) * 1000,
                    "collect_ms": (ended - planned) * 1000,
                    "gc_ms": _gc_ms(spark) - collected,
                }
            )
        except Exception as exc:
            text = f"{type(exc).__name__}: {exc}"
            causes = [line for line in text.splitlines() if line.startswith("Caused by")]
            results.append({"error": text[:1500] + "".join(f"\n{c}" for c in causes[-3:]), "full": text})
    spark.stop()
    print(json.dumps({"results": results}), flush=True)


if __name__ == "__main__":
    _driver()
