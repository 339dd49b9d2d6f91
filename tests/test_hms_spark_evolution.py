"""Schema changes through `sargable serve` with unmodified Spark SQL (issue 30 item 2), rows written before and
after each: `ALTER TABLE ... ADD COLUMNS` (a column and a struct), and a widening made with sargable's API (Spark
SQL refuses `CHANGE COLUMN` to another type on its own side), after which Spark SQL reads the old files' `int` and
`float` values as `bigint` and `double`. Complex columns (array, map, struct) are created, filled and read back."""

from __future__ import annotations

import pytest

from hms_server import SargableServe
from hms_spark import run_sql
from metastore_fixtures import fresh_url
from sargable.metastore import Metastore

pytest.importorskip("pymetastore")

BEFORE = [
    "CREATE DATABASE IF NOT EXISTS e",
    "CREATE TABLE e.ev (n INT, f FLOAT, tags ARRAY<STRING>, props MAP<STRING,STRING>, "
    "device STRUCT<os:STRING,version:STRING>, ds STRING) USING parquet PARTITIONED BY (ds)",
    "INSERT INTO e.ev VALUES (1, 0.5, array('a', 'b'), map('k', 'v'), named_struct('os', 'ios', 'version', '17'), 'a')",
    "ALTER TABLE e.ev ADD COLUMNS (note STRING, extra STRUCT<a:INT>)",
    "INSERT INTO e.ev VALUES (2, 1.5, array(), map(), null, 'new', named_struct('a', 7), 'b')",
    "SELECT n, f, tags, props, device.os, note, extra.a, ds FROM e.ev ORDER BY n",
    "ALTER TABLE e.ev CHANGE COLUMN n n BIGINT",
]
AFTER = [
    "INSERT INTO e.ev VALUES (3000000000, 2.25, null, null, null, null, null, 'c')",
    "SELECT n, f, note, ds FROM e.ev ORDER BY n",
    "SELECT n FROM e.ev WHERE device.os = 'ios'",
]


def test_alter_through_the_server_with_rows_before_and_after(tmp_path) -> None:
    url = fresh_url("sqlite", tmp_path, None)
    warehouse = tmp_path / "spark-warehouse"
    with SargableServe(tmp_path, url) as serve:
        before = run_sql(serve.uri, warehouse, BEFORE)
        assert [r.get("error") for r in before[:-1]] == [None] * (len(BEFORE) - 1), before
        assert before[5]["rows"] == [
            [1, 0.5, ["a", "b"], {"k": "v"}, "ios", None, None, "a"],
            [2, 1.5, [], {}, None, "new", 7, "b"],
        ]
        assert "error" in before[-1], "Spark SQL refuses a type change on its own side"
        with Metastore.open(url) as ms:
            table = ms.table("e.ev")
            assert [str(t) for _, t in table.columns][2:5] == [
                "array<string>",
                "map<string,string>",
                "struct<os:string,version:string>",
            ]
            table.widen("n", "bigint").widen("f", "double")
        after = run_sql(serve.uri, warehouse, AFTER)
    assert [r.get("error") for r in after] == [None] * len(AFTER), after
    assert after[1]["rows"] == [[1, 0.5, None, "a"], [2, 1.5, "new", "b"], [3000000000, 2.25, None, "c"]]
    assert after[2]["rows"] == [[1]]
