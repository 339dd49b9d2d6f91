"""Unmodified pyspark (Hive support, `spark.hadoop.hive.metastore.uris`) against `sargable serve`: DDL, dynamic
partition inserts with NULL partition values, partition-filter shapes compared with DuckDB over the same rows, SHOW /
ADD / DROP PARTITION, MSCK REPAIR, a view, ANALYZE, a star join, partition values Spark escapes in folder names, and
the same answers after a server restart.

Both directions between sargable's own Spark calls and Spark SQL through the server, in the same run: a table
`sgs.write` wrote before the server started is queried by Spark SQL, and the tables Spark SQL created and filled
through the server (no file list in the metastore) are read with `sgs.read` after it stopped."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hms_server import SargableServe, self_signed_certificate
from hms_spark import run_sql
from metastore_fixtures import fresh_url
from sargable.metastore import DEFAULT_PARTITION_NAME, Metastore
from sargable.metastore.names import escape_path_name
from test_docs import blocks_of

pytest.importorskip("pymetastore")
pytestmark = pytest.mark.spark
pytest_plugins = ["conftest_spark"]

ROWS = [
    (1, "a", "2024-01-01", 1),
    (2, "b", "2024-01-02", 2),
    (3, "c", None, 3),
    (4, "d", "2024-01-02", None),
    (5, "e", "2024-01-03", 1),
    (6, "f", "2024-01-03", 3),
    (7, "g", "2024-01-10", 2),
    (8, "h", "2024-01-01", 2),
]
SHAPES = [
    "ds = '2024-01-02'",
    "ds = '2024-01-02' AND hr > 1",
    "hr IN (1, 2) AND ds <> '2024-01-01'",
    "hr IN (1, 3)",
    "ds IN ('2024-01-01', '2024-01-03')",
    "ds = '2024-01-02' OR hr = 1",
    "ds BETWEEN '2024-01-01' AND '2024-01-02'",
    "ds LIKE '2024-01-0%'",
    "ds LIKE '%-10'",
    "ds LIKE '2024%' AND hr = 1",
    "ds IS NULL",
    "ds IS NOT NULL AND hr IS NOT NULL",
    "hr IS NULL",
    "hr >= 2",
    "hr < 2",
    "hr <> 2",
    "NOT (hr = 2)",
    "hr + 1 = 3",
    "ds > '2024-01-01' AND hr <= 2",
    "ds >= '2024-01-03'",
    "ds < '2024-01-02' OR hr IS NULL",
    "(ds = '2024-01-01' AND hr = 1) OR (ds = '2024-01-03' AND hr = 3)",
    "x > 1 AND ds = '2024-01-02'",
    "ds = '2024-01-02' AND y = 'b'",
    "hr = 1 OR x = 4",
    "hr NOT IN (1, 2)",
]


def _select(shape: str) -> str:
    return f"SELECT x FROM s.ev WHERE {shape} ORDER BY x"


def _expected(sql: str) -> list[list]:
    con = duckdb.connect()
    con.execute("CREATE TABLE ev (x INTEGER, y VARCHAR, ds VARCHAR, hr INTEGER)")
    con.executemany("INSERT INTO ev VALUES (?, ?, ?, ?)", ROWS)
    con.execute("CREATE SCHEMA s")
    con.execute("CREATE VIEW s.ev AS SELECT * FROM main.ev")
    return [list(row) for row in con.execute(sql).fetchall()]


def _values(rows) -> str:
    return ", ".join(
        f"({x}, '{y}', {'NULL' if d is None else repr(d)}, {'NULL' if h is None else h})" for x, y, d, h in rows
    )


WRITTEN = [
    "SELECT x, y, ds, hr FROM w.sg ORDER BY x",
    "SELECT x FROM w.sg WHERE ds = '2024-01-02' AND hr > 1 ORDER BY x",
    "SELECT x FROM w.sg WHERE hr IS NULL OR ds LIKE '%-10' ORDER BY x",
]
"""Spark SQL through the server over `w.sg`, which `sgs.write` wrote with the rows of `ROWS`."""

SPECIAL = "#'\"\\{[*?^]}"
ESCAPED = [
    (1, "a:b"),
    (2, "a%b"),
    (3, "a%3Ab"),
    (4, "x/y"),
    (5, "k=v"),
    (6, SPECIAL),
    (7, "tab\tnl\n\x01\x7f"),
    (8, "é 日本"),
    (9, None),
    (10, ""),
    (11, "plain"),
]
"""Partition values Spark and Hive escape in folder names, in `s.esc` (Spark SQL INSERT through the server) and
`w.esc` (`sgs.write`); both store '' as NULL, as Spark's writer does."""

ESCAPED_FOLDERS = {
    "c=a%3Ab",
    "c=a%25b",
    "c=a%253Ab",
    "c=x%2Fy",
    "c=k%3Dv",
    "c=%23%27%22%5C%7B%5B%2A%3F%5E%5D}",
    "c=tab%09nl%0A%01%7F",
    "c=é 日本",
    "c=__HIVE_DEFAULT_PARTITION__",
    "c=plain",
}
"""The folders Spark names for `ESCAPED` (`ExternalCatalogUtils.escapePathName`): the only ones either table has."""


def _sql_string(text: str) -> str:
    """A Spark SQL string literal of `text` (quotes, backslashes and control characters as `\\uXXXX`)."""
    return "'" + "".join(f"\\u{ord(c):04x}" if c in "'\\" or ord(c) < 0x20 or c == "\x7f" else c for c in text) + "'"


def _stored(value: str | None) -> str | None:
    return value or None


ESCAPED_FILTERS: dict[str, Callable[[int, str | None], bool]] = {
    "c = 'a:b'": lambda x, c: c == "a:b",
    "c IN ('a%b', 'a%3Ab', 'x/y')": lambda x, c: c in ("a%b", "a%3Ab", "x/y"),
    "c LIKE 'a%'": lambda x, c: c is not None and c.startswith("a"),
    "c IS NULL": lambda x, c: c is None,
    # Spark refuses (INTERNAL_ERROR_INVALID_PARTITION_FILTER_VALUE) to send a value holding both ' and " to the
    # metastore, so SPECIAL is selected by a prefix
    f"c LIKE '#%' OR c = {_sql_string(ESCAPED[6][1])}": lambda x, c: c in (SPECIAL, ESCAPED[6][1]),
    "c > 'k' AND x > 4": lambda x, c: c is not None and c > "k" and x > 4,
}
"""Filters on `s.esc` (Spark SQL, and `sgs.read` through `F.expr`) and the stored rows they select."""

ESCAPED_SCANS = ["c = 'a%3Ab'", "c in ('a:b', 'x/y', 'é 日本')", "c is null", "c like '%b'"]
"""`Table.scan` and `sargable explain` filters on `s.esc` (sargable's SQL dialect)."""


def _escaped_rows(select: Callable[[int, str | None], bool] = lambda x, c: True) -> list[list]:
    return [[x, _stored(c)] for x, c in ESCAPED if select(x, _stored(c))]


ESCAPED_SQL = [
    "CREATE TABLE s.esc (x INT, c STRING) USING parquet PARTITIONED BY (c)",
    "INSERT INTO s.esc VALUES " + ", ".join(f"({x}, {'NULL' if c is None else _sql_string(c)})" for x, c in ESCAPED),
    "SHOW PARTITIONS s.esc",
    "SELECT x, c FROM w.esc ORDER BY x",
    "SELECT x, c FROM w.esc WHERE c IN ('a:b', 'a%3Ab') OR c IS NULL ORDER BY x",
    "SHOW PARTITIONS w.esc",
]
"""Spark SQL through the server: `s.esc` filled, `w.esc` (written by `sgs.write`) read."""

READ_BACK = {
    "s.ev": [
        None,
        "ds = '2024-01-02' AND hr > 1",
        "hr IN (1, 2) AND ds <> '2024-01-01'",
        "ds IS NULL",
        "hr IS NULL",
        "ds LIKE '2024-01-0%'",
        "x > 1 AND ds = '2024-01-02'",
        "hr + 1 = 3",
    ],
    "s.hv": [None, "ds = '2024-01-03' OR hr IS NULL"],
    "s.mk": [None, "ds = 'b'"],
    "s.esc": [None, *ESCAPED_FILTERS],
}
"""`sgs.read` of the tables Spark SQL created and filled through the server, each against Spark SQL's own answer."""


def _read_back_sql(table: str, where: str | None) -> str:
    return f"SELECT * FROM {table}" + ("" if where is None else f" WHERE {where}") + " ORDER BY x"


ALTERS = [
    "ALTER TABLE s.dim ADD COLUMNS (note STRING)",
    "INSERT INTO s.dim VALUES ('2024-01-04', true, 'new')",
    "SELECT d, keep, note FROM s.dim ORDER BY d",
    "ALTER TABLE s.dim RENAME TO s.dim2",
    "SELECT d, note FROM s.dim2 ORDER BY d",
    "CREATE TABLE s.rn (x INT, ds STRING) USING parquet PARTITIONED BY (ds)",
    "INSERT INTO s.rn VALUES (1, 'a'), (2, 'b')",
    "ALTER TABLE s.rn RENAME TO s.rn2",
    "SELECT x, ds FROM s.rn2 ORDER BY x",
    "CREATE TABLE s.rn (x INT, ds STRING) USING parquet PARTITIONED BY (ds)",
    "SELECT count(*) FROM s.rn",
]
"""ALTER on a table without partition keys (issue 27 row 1) and a managed table's rename, whose data moves with it
(its old name is free again: re-creating it failed with LOCATION_ALREADY_EXISTS)."""


def _flow(repair_dir) -> list[str]:
    return [
        *WRITTEN,
        "CREATE DATABASE IF NOT EXISTS s",
        "CREATE TABLE s.ev (x INT, y STRING, ds STRING, hr INT) USING parquet PARTITIONED BY (ds, hr)",
        f"INSERT INTO s.ev VALUES {_values(ROWS)}",
        "CREATE TABLE s.hv (x INT, y STRING) PARTITIONED BY (ds STRING, hr INT) STORED AS PARQUET",
        "INSERT INTO s.hv PARTITION (ds, hr) SELECT x, y, ds, hr FROM s.ev",
        *(_select(shape) for shape in SHAPES),
        "SELECT x FROM s.hv WHERE ds = '2024-01-03' OR hr IS NULL ORDER BY x",
        "SHOW PARTITIONS s.ev",
        "ALTER TABLE s.ev ADD PARTITION (ds='2024-02-01', hr=9)",
        "SHOW PARTITIONS s.ev PARTITION (ds='2024-02-01')",
        "ALTER TABLE s.ev DROP PARTITION (ds='2024-02-01', hr=9)",
        "SHOW PARTITIONS s.ev PARTITION (ds='2024-02-01')",
        f"CREATE TABLE s.mk (x INT, ds STRING) USING parquet PARTITIONED BY (ds) LOCATION '{repair_dir}'",
        "SHOW PARTITIONS s.mk",
        "MSCK REPAIR TABLE s.mk",
        "SHOW PARTITIONS s.mk",
        "SELECT x FROM s.mk WHERE ds = 'b' ORDER BY x",
        "CREATE VIEW s.v AS SELECT x, ds FROM s.ev WHERE hr = 1",
        "SELECT * FROM s.v ORDER BY x",
        "ANALYZE TABLE s.ev COMPUTE STATISTICS",
        "ANALYZE TABLE s.ev PARTITION (ds='2024-01-02', hr) COMPUTE STATISTICS",
        "CREATE TABLE s.dim (d STRING, keep BOOLEAN) USING parquet",
        "INSERT INTO s.dim VALUES ('2024-01-02', true), ('2024-01-03', true), ('2024-01-01', false)",
        "SELECT e.x FROM s.ev e JOIN s.dim d ON e.ds = d.d WHERE d.keep ORDER BY e.x",
        *ALTERS,
        *ESCAPED_SQL,
        *(_read_back_sql(table, where) for table, shapes in READ_BACK.items() for where in shapes),
    ]


DOC_CHECK = "SELECT id, ds, hr FROM sales.events ORDER BY id"
"""What the snippet of docs/hms.md inserted, read back in the same driver."""

BATCHED_FETCH = {
    "spark.sql.hive.metastorePartitionPruningFastFallback": "true",
    "spark.hadoop.hive.metastore.batch.retrieve.max": "2",
}
"""Spark's batched fetch: a partition filter it can't send to the metastore (`hr + 1 = 3`, `ds IS NULL`) makes it
list the partition names, prune them itself and fetch the survivors by name, in batches of
`hive.metastore.batch.retrieve.max` (Hive's client setting; Spark 4.3 has no `spark.sql.hive.metastore.batchSize`)."""

AFTER_RESTART = [
    _select("ds = '2024-01-02' AND hr > 1"),
    _select("ds LIKE '2024-01-0%'"),
    "SHOW PARTITIONS s.ev",
    "SELECT * FROM s.v ORDER BY x",
    "DESCRIBE TABLE EXTENDED s.ev",
    "DESCRIBE TABLE EXTENDED s.ev PARTITION (ds='2024-01-02', hr=2)",
]


DOC = Path(__file__).resolve().parent.parent / "docs" / "hms.md"
DOC_URI, DOC_WAREHOUSE = "thrift://127.0.0.1:9083", "/data/warehouse"


def _doc_serve_command() -> list[str]:
    """The `sargable ... serve` command docs/hms.md shows, as arguments; it must be the one `SargableServe` runs."""
    lines = [line for b in blocks_of(DOC) for line in b.text.splitlines() if line.startswith("sargable ")]
    args = shlex.split(lines[0])[1:]
    expected = ["serve", "--create", "--port", "9083", "--warehouse", DOC_WAREHOUSE]
    assert args[0] == "--metastore" and args[2:] == expected, args
    return args


def _doc_session_code(uri: str, warehouse: Path) -> str:
    """The pyspark snippet of docs/hms.md, pointed at the test's server and warehouse."""
    code = next(b.text for b in blocks_of(DOC) if b.lang == "python" and "enableHiveSupport" in b.text)
    assert DOC_URI in code and DOC_WAREHOUSE in code
    return code.replace(DOC_URI, uri).replace(DOC_WAREHOUSE, str(warehouse))


def _sgs_write(spark, url: str, warehouse) -> None:
    """`w.sg` written by `sgs.write`, partitioned by (ds, hr), with the rows of `ROWS`; `w.esc` by c, `ESCAPED`."""
    import sargable.spark as sgs

    with Metastore.open(url, warehouse=warehouse) as ms:
        ms.create_database("w", if_not_exists=True)
    frame = spark.createDataFrame(ROWS, "x INT, y STRING, ds STRING, hr INT")
    sgs.write(frame, "w.sg", partition_by=["ds", "hr"], metastore=url, progress=False)
    escaped = spark.createDataFrame(ESCAPED, "x INT, c STRING")
    sgs.write(escaped, "w.esc", partition_by=["c"], metastore=url, progress=False)


def _sgs_read_back(spark, url: str, warehouse) -> dict[tuple[str, str | None], list[list]]:
    """`sgs.read` of each `READ_BACK` table and filter (a Spark Column: sargable plans what it can translate)."""
    from pyspark.sql import functions as F

    import sargable.spark as sgs

    out = {}
    with Metastore.open(url, warehouse=warehouse) as ms:
        for table, shapes in READ_BACK.items():
            for where in shapes:
                df = sgs.read(spark, table, None if where is None else F.expr(where), metastore=ms)
                rows = df.orderBy("x").collect()
                out[(table, where)] = [list(row) for row in rows]
    return out


def _scan_escaped(url: str) -> dict[str, dict]:
    """Per `ESCAPED_SCANS` filter: the rows of the files `Table.scan` selects in `s.esc` (read with pyarrow, the
    partition value from the scan), and what `sargable explain --json` says of it."""
    out = {}
    with Metastore.open(url) as ms:
        table = ms.table("s", "esc")
        for where in ESCAPED_SCANS:
            scan = table.scan(where)
            rows = [[x, f.partition["c"]] for f in scan.files for x in pq.read_table(f.path)["x"].to_pylist()]
            out[where] = {"rows": sorted(rows), "folders": sorted(Path(p.location).name for p in scan.partitions)}
    for where in ESCAPED_SCANS:
        command = [sys.executable, "-m", "sargable.cli", "--metastore", url, "explain", "s.esc", where, "--json"]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        out[where]["explain"] = json.loads(done.stdout)
    return out


def _folders(location: Path) -> set[str]:
    return {entry.name for entry in os.scandir(location) if entry.is_dir()}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def spark_run(request, tmp_path_factory, spark):
    """The flow's statements and results against one server; on SQLite also a second driver after a restart; and
    `sgs.write` before it / `sgs.read` after it over the same metastore."""
    tmp = tmp_path_factory.mktemp(f"hms-spark-{request.param}")
    postgres = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    url = fresh_url(request.param, tmp, postgres)
    _sgs_write(spark, url, tmp / "sg-warehouse")
    repair = tmp / "repair"
    for ds, xs in (("a", [10, 11]), ("b", [12])):
        (repair / f"ds={ds}").mkdir(parents=True)
        pq.write_table(pa.table({"x": pa.array(xs, pa.int32())}), repair / f"ds={ds}" / "part-0.parquet")
    statements = [*_flow(f"file:{repair}"), DOC_CHECK]
    _doc_serve_command()
    with SargableServe(tmp, url) as serve:
        code = _doc_session_code(serve.uri, tmp / "spark-warehouse")
        ran = run_sql(serve.uri, tmp / "spark-warehouse", statements, conf=BATCHED_FETCH, session_code=code)
        results = dict(zip(statements, ran))
        calls = serve.calls()
    read_back = _sgs_read_back(spark, url, tmp / "sg-warehouse")
    escaped = {
        "scans": _scan_escaped(url),
        "spark folders": _folders(tmp / "spark-warehouse" / "s.db" / "esc"),
        "sgs folders": _folders(tmp / "sg-warehouse" / "w.db" / "esc"),
    }
    after = {}
    if request.param == "sqlite":
        with SargableServe(tmp / "restarted", url) as serve:
            after = dict(zip(AFTER_RESTART, run_sql(serve.uri, tmp / "spark-warehouse", AFTER_RESTART)))
    return {
        "results": results,
        "calls": calls,
        "after": after,
        "backend": request.param,
        "read_back": read_back,
        "warehouse": tmp / "spark-warehouse",
        "escaped": escaped,
    }


def _rows(result: dict) -> list:
    assert "error" not in result, result["error"]
    return result["rows"]


def test_ddl_and_inserts(spark_run):
    results = spark_run["results"]
    for statement, result in results.items():
        if statement.startswith(("CREATE", "INSERT", "ALTER", "MSCK", "ANALYZE")):
            assert _rows(result) == [], statement


@pytest.mark.parametrize("shape", SHAPES)
def test_partition_filter_shapes(spark_run, shape):
    statement = _select(shape)
    assert _rows(spark_run["results"][statement]) == _expected(statement)


def test_pruning_goes_through_the_server(spark_run):
    """A pushable filter reaches sargable as get_partitions_by_filter and comes back pruned."""
    calls = spark_run["calls"]
    assert "get_partitions_by_filter table=s.ev filter='ds = \"2024-01-02\" and hr > 1' partitions=1" in "\n".join(
        calls
    )
    assert any(line.startswith("add_partitions_req table=s.ev partitions=8") for line in calls)


def test_batched_fetch_by_names(spark_run):
    """`hr + 1 = 3` selects 2 partitions: listed by name, then fetched in batches of 2 (and once more, empty)."""
    calls = [line.split(" ")[0] for line in spark_run["calls"] if "table=s.ev" in line]
    assert "get_partitions_by_names" in calls
    runs = "".join("n" if c == "get_partition_names" else "b" if c == "get_partitions_by_names" else "." for c in calls)
    assert "nbb" in runs or "n.bb" in runs, runs
    assert _rows(spark_run["results"][_select("hr + 1 = 3")]) == _expected(_select("hr + 1 = 3"))


def test_show_add_drop_repair_view_join(spark_run):
    r = spark_run["results"]
    names = sorted(
        f"ds={'__HIVE_DEFAULT_PARTITION__' if d is None else d}/hr={'__HIVE_DEFAULT_PARTITION__' if h is None else h}"
        for _, _, d, h in ROWS
    )
    assert [row[0] for row in _rows(r["SHOW PARTITIONS s.ev"])] == sorted(set(names))
    assert _rows(r["SELECT x FROM s.hv WHERE ds = '2024-01-03' OR hr IS NULL ORDER BY x"]) == [[4], [5], [6]]
    shown = [key for key in r if key.startswith("SHOW PARTITIONS s.ev PARTITION")]
    assert len(shown) == 1  # the same statement before the drop and after: dict keeps the last
    assert _rows(r["SHOW PARTITIONS s.ev PARTITION (ds='2024-02-01')"]) == []
    assert _rows(r["SHOW PARTITIONS s.mk"]) == [["ds=a"], ["ds=b"]]
    assert _rows(r["SELECT x FROM s.mk WHERE ds = 'b' ORDER BY x"]) == [[12]]
    assert _rows(r["SELECT * FROM s.v ORDER BY x"]) == [[1, "2024-01-01"], [5, "2024-01-03"]]
    join = "SELECT e.x FROM s.ev e JOIN s.dim d ON e.ds = d.d WHERE d.keep ORDER BY e.x"
    assert _rows(r[join]) == [[2], [4], [5], [6]]


def test_alter_an_unpartitioned_table_and_rename_moving_data(spark_run):
    r, warehouse = spark_run["results"], spark_run["warehouse"]
    assert _rows(r["SELECT d, keep, note FROM s.dim ORDER BY d"]) == [
        ["2024-01-01", False, None],
        ["2024-01-02", True, None],
        ["2024-01-03", True, None],
        ["2024-01-04", True, "new"],
    ]
    assert [row[1] for row in _rows(r["SELECT d, note FROM s.dim2 ORDER BY d"])] == [None, None, None, "new"]
    assert _rows(r["SELECT x, ds FROM s.rn2 ORDER BY x"]) == [[1, "a"], [2, "b"]]
    assert _rows(r["SELECT count(*) FROM s.rn"]) == [[0]]
    moved = warehouse / "s.db" / "rn2"
    assert sorted(p.name for p in moved.iterdir() if not p.name.startswith((".", "_"))) == ["ds=a", "ds=b"]
    assert not any((warehouse / "s.db" / "rn").rglob("*.parquet")), "the data moved with the rename"


def test_same_answers_after_restart(spark_run):
    if spark_run["backend"] != "sqlite":
        pytest.skip("the restart runs on the SQLite backend only (a Spark driver per backend costs ~30 s)")
    before, after = spark_run["results"], spark_run["after"]
    for statement in AFTER_RESTART[:4]:
        assert _rows(after[statement]) == _rows(before[statement]), statement
    table = {row[0]: row[1] for row in _rows(after["DESCRIBE TABLE EXTENDED s.ev"])}
    assert table["Statistics"].endswith(f"{len(ROWS)} rows")
    partition = {
        row[0]: row[1] for row in _rows(after["DESCRIBE TABLE EXTENDED s.ev PARTITION (ds='2024-01-02', hr=2)"])
    }
    assert partition["Partition Statistics"].endswith("1 rows")


def test_a_table_sgs_wrote_is_queried_by_spark_sql_through_the_server(spark_run):
    r = spark_run["results"]
    assert _rows(r[WRITTEN[0]]) == [list(row) for row in sorted(ROWS)]
    for statement in WRITTEN[1:]:
        assert _rows(r[statement]) == _expected(statement.replace("w.sg", "s.ev")), statement


@pytest.mark.parametrize("table,where", [(t, w) for t, shapes in READ_BACK.items() for w in shapes])
def test_tables_spark_sql_filled_through_the_server_are_read_by_sgs_read(spark_run, table, where):
    """Files listed from the selected partitions' folders (the metastore has no file list): Spark SQL's rows."""
    expected = _rows(spark_run["results"][_read_back_sql(table, where)])
    assert expected, "the comparison needs rows"
    assert spark_run["read_back"][(table, where)] == expected


def test_the_docs_snippet_ran_on_the_documented_server_command(spark_run):
    assert _rows(spark_run["results"][DOC_CHECK]) == [[1, "2024-01-02", 3], [2, "2024-01-02", 4], [3, "2024-01-03", 1]]


def test_spark_sql_over_tls_with_hives_ssl_settings(tmp_path):
    """Unmodified Spark SQL with Hive's client settings `hive.metastore.use.SSL` and a JKS truststore (made by
    keytool from the server's certificate) against `sargable serve --tls-cert --tls-key`: DDL, an insert, a pruned
    read, all through the TLS listener."""
    if shutil.which("keytool") is None:
        pytest.skip("no keytool command")
    cert, key = self_signed_certificate(tmp_path, "server")
    truststore = tmp_path / "truststore.jks"
    command = ["keytool", "-importcert", "-noprompt", "-alias", "sargable", "-file", str(cert)]
    subprocess.run(
        [*command, "-keystore", str(truststore), "-storepass", "changeit"],
        check=True,
        capture_output=True,
    )
    conf = {
        "spark.hadoop.hive.metastore.use.SSL": "true",
        "spark.hadoop.hive.metastore.truststore.path": str(truststore),
        "spark.hadoop.hive.metastore.truststore.password": "changeit",
    }
    statements = [
        "CREATE DATABASE tls",
        "CREATE TABLE tls.t (x INT) PARTITIONED BY (ds STRING) STORED AS PARQUET",
        "INSERT INTO tls.t PARTITION (ds) VALUES (1, 'a'), (2, 'b')",
        "SELECT x, ds FROM tls.t WHERE ds = 'b'",
    ]
    args = ["--tls-cert", str(cert), "--tls-key", str(key)]
    with SargableServe(tmp_path, f"sqlite:///{tmp_path / 'meta.db'}", args=args) as serve:
        ran = run_sql(serve.uri, tmp_path / "spark-warehouse", statements, conf=conf)
        calls = serve.calls()
    assert _rows(ran[-1]) == [[2, "b"]]
    assert any(line.startswith("get_partitions_by_filter table=tls.t") for line in calls)
    assert "TLS handshake failed" not in serve.log.read_text()


def test_escaped_values_read_back_by_sgs_read(spark_run):
    """Values Spark escapes in folder names (issue 27): Spark SQL's INSERT through the server makes Spark's folders
    and no decoded twin; `sgs.read` with filters on those values returns exactly their rows (Spark SQL's answer is
    compared by the read-back test); a `Table.scan` and `sargable explain` select exactly their partitions."""
    r, escaped = spark_run["results"], spark_run["escaped"]
    assert escaped["spark folders"] == ESCAPED_FOLDERS
    assert [row[0] for row in _rows(r["SHOW PARTITIONS s.esc"])] == sorted(ESCAPED_FOLDERS)
    for where, select in ESCAPED_FILTERS.items():
        assert _rows(r[_read_back_sql("s.esc", where)]) == _escaped_rows(select), where
        assert spark_run["read_back"][("s.esc", where)] == _escaped_rows(select), where
    assert spark_run["read_back"][("s.esc", None)] == _escaped_rows()
    for where, scan in escaped["scans"].items():
        assert scan["rows"], where
        folders = {f"c={escape_path_name(c) if c is not None else DEFAULT_PARTITION_NAME}" for _, c in scan["rows"]}
        assert scan["folders"] == sorted(folders) and folders <= ESCAPED_FOLDERS, where
        assert scan["explain"]["partitions_returned"] == len(folders), where
        assert scan["explain"]["files_selected"] >= len(folders), where
    expected = {
        "c = 'a%3Ab'": [[3, "a%3Ab"]],
        "c in ('a:b', 'x/y', 'é 日本')": [[1, "a:b"], [4, "x/y"], [8, "é 日本"]],
        "c is null": [[9, None], [10, None]],
        "c like '%b'": [[1, "a:b"], [2, "a%b"], [3, "a%3Ab"]],
    }
    assert {where: scan["rows"] for where, scan in escaped["scans"].items()} == expected


def test_escaped_values_sgs_wrote_are_read_by_spark_sql_through_the_server(spark_run):
    """`sgs.write` names the folders as Spark does, and Spark SQL reads them back through the server."""
    r = spark_run["results"]
    assert spark_run["escaped"]["sgs folders"] == ESCAPED_FOLDERS
    assert [row[0] for row in _rows(r["SHOW PARTITIONS w.esc"])] == sorted(ESCAPED_FOLDERS)
    assert _rows(r["SELECT x, c FROM w.esc ORDER BY x"]) == _escaped_rows()
    where = "SELECT x, c FROM w.esc WHERE c IN ('a:b', 'a%3Ab') OR c IS NULL ORDER BY x"
    assert _rows(r[where]) == _escaped_rows(lambda x, c: c in ("a:b", "a%3Ab", None))
