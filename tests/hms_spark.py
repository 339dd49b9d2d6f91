"""Unmodified pyspark with Hive support as a metastore client, in a subprocess.

The test process may already hold a (non-Hive) SparkContext, and pyspark allows one per process, so `run_sql`
starts `python hms_spark.py` with a JSON request on stdin: the metastore URI, a warehouse dir and SQL statements.
The child builds `SparkSession.builder.enableHiveSupport()` with `spark.hadoop.hive.metastore.uris` and prints one
JSON document: per statement, its rows (values as JSON: dates and decimals as strings) and milliseconds, or the
error it raised.
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


def run_sql(
    uri: str,
    warehouse: Path | str,
    statements: Sequence[str],
    *,
    conf: dict[str, str] | None = None,
    timeout: float = 600,
) -> list[dict[str, Any]]:
    """Run `statements` in order in a fresh Hive-enabled pyspark driver; one {"rows", "ms"} or {"error"} per
    statement."""
    request = {"uri": uri, "warehouse": str(warehouse), "statements": list(statements), "conf": conf or {}}
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


def _driver() -> None:
    from pyspark.sql import SparkSession

    request = json.loads(sys.stdin.read())
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("hms-client")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.warehouse.dir", request["warehouse"])
        .config("spark.hadoop.hive.metastore.uris", request["uri"])
        .config("spark.hadoop.hive.exec.dynamic.partition.mode", "nonstrict")
        .config("spark.hadoop.hive.stats.autogather", "false")
    )
    for key, value in request["conf"].items():
        builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    results: list[dict[str, Any]] = []
    for statement in request["statements"]:
        started = time.perf_counter()
        try:
            rows = spark.sql(statement).collect()
            elapsed = (time.perf_counter() - started) * 1000
            results.append({"rows": [[_json_value(v) for v in row] for row in rows], "ms": elapsed})
        except Exception as exc:
            text = f"{type(exc).__name__}: {exc}"
            causes = [line for line in text.splitlines() if line.startswith("Caused by")]
            results.append({"error": text[:1500] + "".join(f"\n{c}" for c in causes[-3:]), "full": text})
    spark.stop()
    print(json.dumps({"results": results}), flush=True)


if __name__ == "__main__":
    _driver()
