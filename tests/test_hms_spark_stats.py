"""Spark SQL's `ANALYZE TABLE ... COMPUTE STATISTICS [FOR COLUMNS]` through `sargable serve`, on a table without
partition keys and a partitioned one: what Spark computed is read back by a second, fresh driver (nothing cached in
Spark), as `DESCRIBE EXTENDED` shows it. Spark keeps these statistics in table and partition parameters (through
`alter_table` / `alter_partitions`), never through the metastore's column statistics calls, so the store's backend
plays no part: SQLite only (two Spark drivers are two minutes here)."""

from __future__ import annotations

import pytest

from hms_server import SargableServe
from hms_spark import run_sql
from metastore_fixtures import fresh_url

pytest.importorskip("pyspark")

ANALYZE = [
    "CREATE DATABASE an",
    "CREATE TABLE an.dim (k INT, name STRING) USING parquet",
    "INSERT INTO an.dim VALUES (1, 'a'), (2, 'b'), (7, NULL)",
    "CREATE TABLE an.fact (x BIGINT, ds STRING) USING parquet PARTITIONED BY (ds)",
    "INSERT INTO an.fact VALUES (10, 'd1'), (-4, 'd1'), (5, 'd2')",
    "ANALYZE TABLE an.dim COMPUTE STATISTICS FOR COLUMNS k, name",
    "ANALYZE TABLE an.fact COMPUTE STATISTICS FOR COLUMNS x",
    "ANALYZE TABLE an.fact PARTITION (ds) COMPUTE STATISTICS",
]
READ_BACK = [
    "DESCRIBE EXTENDED an.dim k",
    "DESCRIBE EXTENDED an.dim name",
    "DESCRIBE EXTENDED an.fact x",
    "DESCRIBE TABLE EXTENDED an.dim",
    "DESCRIBE TABLE EXTENDED an.fact PARTITION (ds = 'd1')",
]


def _info(result: dict) -> dict[str, str]:
    assert "error" not in result, result["error"]
    return {row[0]: row[1] for row in result["rows"]}


def test_analyze_is_kept_and_read_back(tmp_path):
    with SargableServe(tmp_path, fresh_url("sqlite", tmp_path, None)) as serve:
        warehouse = tmp_path / "spark-warehouse"
        for statement, result in zip(ANALYZE, run_sql(serve.uri, warehouse, ANALYZE)):
            assert "error" not in result, (statement, result["error"])
        k, name, x, dim, part = (_info(r) for r in run_sql(serve.uri, warehouse, READ_BACK))
    assert (k["min"], k["max"], k["num_nulls"], k["distinct_count"]) == ("1", "7", "0", "3")
    assert (name["num_nulls"], name["max_col_len"]) == ("1", "1")
    assert (x["min"], x["max"], x["num_nulls"]) == ("-4", "10", "0")
    assert dim["Statistics"].endswith("3 rows")
    assert part["Partition Statistics"].endswith("2 rows")
