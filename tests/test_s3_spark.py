"""Every Spark path on a bucket (issue 28), with the S3 requests counted by the test server's front.

The shared Spark session reads `s3a://` on the test S3 server; the tables here live under `s3a://<bucket>/wh`.
Counts asserted (they don't depend on the machine): a write of F files makes no LIST of the table prefix and no
COPY (files are written where they stay); a selective read of k files makes no LIST at all and touches only those
k files, with at most two opens (HEAD) each; the results equal an oracle computed in Python from the rows written.
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from collections import Counter
from typing import Any
from urllib.parse import unquote

import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hms_server import SargableServe
from hms_spark import run_sql
from sargable import s3
from sargable import spark as sgs
from sargable.metastore import RETENTION_PROPERTY, Metastore
from sargable.paths import canonical_file_path
from sargable.spark.direct import write_files
from sargable.vacuum import vacuum

pytest_plugins = ["conftest_spark"]
pytestmark = pytest.mark.spark

DAYS = [dt.date(2024, 1, d) for d in (1, 2, 3, 4)]
SCHEMA = "id bigint, amount double, ds date, country string"


def rows_of(start: int, count: int) -> list[tuple[Any, ...]]:
    return [(i, float(i % 97), DAYS[i % 4], "US" if i % 3 else "DE") for i in range(start, start + count)]


def keys_under(s3_server: Any, bucket: str, prefix: str, *, markers: bool = False) -> set[str]:
    """The keys below `prefix/`; with `markers`, also pyarrow's empty folder markers (`ds=1/`), which it writes
    after deleting a file (`sargable.s3.filesystem`)."""
    pages = s3_server.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/")
    return {o["Key"] for page in pages for o in page.get("Contents", []) if markers or not o["Key"].endswith("/")}


def table_keys(ms: Metastore, table: str) -> set[str]:
    """The keys (below the bucket) of the files the table lists and those its commits removed but keeps."""
    handle = ms.table(table)
    paths = [f.path for f in handle.files()] + [t.path for t in handle.tombstones()]
    return {s3.native(canonical_file_path(p)).partition("/")[2] for p in paths}


def collected(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(row[c] for c in ("id", "amount", "ds", "country")) for row in df.collect())


class Tables:
    """The module's bucket and metastore, the rows written so far, and the requests of the writes."""

    def __init__(self, spark: Any, s3_server: Any, tmp_path: Any) -> None:
        self.spark = spark
        self.server = s3_server
        self.bucket = s3_server.bucket("spark")
        self.url = f"sqlite:///{tmp_path / 'meta.db'}"
        self.ms = Metastore.open(self.url, warehouse=f"s3a://{self.bucket}/wh")
        self.rows = rows_of(0, 400) + rows_of(400, 200)
        self.writes = []
        for start, count in ((0, 400), (400, 200)):
            df = spark.createDataFrame(rows_of(start, count), SCHEMA).repartition(2)
            with s3_server.counted() as requests:
                result = sgs.write(df, "s3.events", partition_by=["ds", "country"], metastore=self.ms, progress=False)
            self.writes.append((result, requests))
        one_key = spark.createDataFrame(self.rows, SCHEMA).repartition(2)
        sgs.write(one_key, "s3.days", partition_by=["ds"], metastore=self.ms, progress=False)

    def prefix(self, table: str) -> str:
        return s3.native(self.ms.table(table).location).partition("/")[2]


@pytest.fixture(scope="module")
def tables(spark: Any, s3_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    made = Tables(spark, s3_server, tmp_path_factory.mktemp("s3-spark"))
    yield made
    made.ms.close()


def test_a_write_puts_each_file_where_it_stays(tables: Tables) -> None:
    prefix = tables.prefix("s3.events")
    for result, requests in tables.writes:
        assert result.files > 0 and result.rows in (400, 200)
        assert requests.count("LIST", under=f"{tables.bucket}/{prefix}") == 0
        assert requests.count("COPY") == 0 and requests.count("DELETE") == 0
        assert all(e["path"].lstrip("/").startswith(f"{tables.bucket}/{prefix}/") for e in requests.of("PUT"))
    on_bucket = keys_under(tables.server, tables.bucket, prefix)
    assert on_bucket == table_keys(tables.ms, "s3.events"), "every key written is a file the table lists"
    assert not any("_sargable_staging" in key or "_temporary" in key for key in on_bucket)
    names = tables.ms.list_partition_names("s3", "events")
    assert names[:2] == ["ds=2024-01-01/country=DE", "ds=2024-01-01/country=US"]


def test_statistics_are_the_footers_of_the_files_on_the_bucket(tables: Tables) -> None:
    fs = s3.filesystem()
    for f in tables.ms.table("s3.events").files():
        meta = pq.read_metadata(s3.native(f.path), filesystem=fs)
        amounts = [meta.row_group(g).column(1).statistics for g in range(meta.num_row_groups)]
        assert f.row_count == meta.num_rows
        assert f.columns["amount"].min == min(s.min for s in amounts)
        assert f.columns["amount"].max == max(s.max for s in amounts)
        assert f.size_bytes == fs.get_file_info(s3.native(f.path)).size


@pytest.mark.parametrize(
    ("table", "where", "keep"),
    [
        ("s3.events", "ds = '2024-01-02' and country = 'DE'", lambda r: r[2] == DAYS[1] and r[3] == "DE"),
        ("s3.events", "ds >= '2024-01-03' and amount > 90", lambda r: r[2] >= DAYS[2] and r[1] > 90),
        ("s3.days", "ds = '2024-01-04'", lambda r: r[2] == DAYS[3]),
    ],
)
def test_a_selective_read_makes_no_list(tables: Tables, table: str, where: str, keep: Any) -> None:
    with tables.server.counted() as requests:
        df = sgs.read(tables.spark, table, where=where, metastore=tables.ms)
        got = collected(df)
    assert got == sorted(r for r in tables.rows if keep(r))
    report = sgs.scan_report(df)
    assert 0 < report.files_selected < report.files_total
    selected = {s3.native(f.path) for f in df.sargable_scan.files}
    assert requests.count("LIST") == 0
    touched = {e["path"] for e in requests.entries}
    assert {unquote(p).lstrip("/") for p in touched} <= selected, "only the selected files are touched"
    assert requests.count("HEAD") <= 2 * len(selected)


def test_the_data_source_reads_the_bucket_with_no_list(tables: Tables) -> None:
    with tables.server.counted() as requests:
        df = tables.spark.read.format("sargable").option("metastore", tables.url).load("s3.events")
        got = collected(df.where("ds = '2024-01-03' and country = 'US'"))
    assert got == sorted(r for r in tables.rows if r[2] == DAYS[2] and r[3] == "US")
    assert requests.count("LIST") == 0 and requests.count("GET") > 0


def test_join_pruning_on_the_bucket(tables: Tables) -> None:
    dim = tables.spark.createDataFrame([(DAYS[0],), (DAYS[3],)], "day date")
    with tables.server.counted() as requests:
        df = sgs.read(tables.spark, "s3.events", prune_by=[(dim, "day", "ds")], metastore=tables.ms)
        got = collected(df)
    assert got == sorted(r for r in tables.rows if r[2] in (DAYS[0], DAYS[3]))
    assert sgs.scan_report(df).partitions_selected == 4
    assert requests.count("LIST") == 0


def test_overwrite_on_the_bucket_keeps_replaced_files_for_the_retention(tables: Tables) -> None:
    table, prefix = "s3.days", tables.prefix("s3.days")
    replaced = {f.path for f in tables.ms.table(table).files() if f.partition["ds"] == DAYS[1]}
    new_rows = [(10_000 + i, 1.0, DAYS[1], "FR") for i in range(5)]
    with tables.server.counted() as requests:
        result = sgs.write(tables.spark.createDataFrame(new_rows, SCHEMA), table, mode="overwrite", metastore=tables.ms)
    assert result.replaced_files == len(replaced)
    assert requests.count("LIST", under=f"{tables.bucket}/{prefix}") == 0
    assert requests.count("COPY") == 0 and requests.count("DELETE") == 0
    rows = [r for r in tables.rows if r[2] != DAYS[1]] + new_rows
    assert collected(sgs.read(tables.spark, table, metastore=tables.ms)) == sorted(rows)
    on_bucket = keys_under(tables.server, tables.bucket, prefix)
    assert {s3.native(p).partition("/")[2] for p in replaced} <= on_bucket, "kept for readers of older snapshots"
    assert on_bucket == table_keys(tables.ms, table)

    tables.ms.table(table).set_properties({RETENTION_PROPERTY: "0"})
    again = [(20_000, 2.0, DAYS[1], "FR")]
    with tables.server.counted() as requests:
        second = sgs.write(tables.spark.createDataFrame(again, SCHEMA), table, mode="overwrite", metastore=tables.ms)
    gone = {s3.native(p).partition("/")[2] for p in replaced}
    assert not gone & keys_under(tables.server, tables.bucket, prefix), "past the retention they are deleted"
    assert requests.count("DELETE") == len(replaced) + second.replaced_files
    assert requests.count("LIST", under=f"{tables.bucket}/{prefix}") == 0
    assert all(e["path"].lstrip("/").startswith(f"{tables.bucket}/{prefix}/") for e in requests.of("DELETE"))
    left = keys_under(tables.server, tables.bucket, prefix, markers=True)
    assert {k for k in left if not k.endswith("/")} == table_keys(tables.ms, table)
    assert {k for k in left if k.endswith("/")} <= {f"{prefix}/ds=2024-01-02/"}, "pyarrow's folder marker"


def test_optimize_on_the_bucket(tables: Tables) -> None:
    table, prefix = "s3.events", tables.prefix("s3.events")
    before = Counter(collected(sgs.read(tables.spark, table, metastore=tables.ms)))
    files_before = len(tables.ms.table(table).files())
    with tables.server.counted() as requests:
        result = sgs.optimize(tables.spark, table, cluster_by=["id"], metastore=tables.ms, progress=False)
    assert result.files_removed == files_before and result.files_added < files_before
    assert Counter(collected(sgs.read(tables.spark, table, metastore=tables.ms))) == before
    assert requests.count("COPY") == 0
    assert requests.count("LIST", under=f"{tables.bucket}/{prefix}") == 0
    assert keys_under(tables.server, tables.bucket, prefix) == table_keys(tables.ms, table)


def test_a_failed_write_leaves_only_what_vacuum_finds(tables: Tables, monkeypatch: pytest.MonkeyPatch) -> None:
    from sargable.spark import writer

    table, prefix = "s3.days", tables.prefix("s3.days")
    before = keys_under(tables.server, tables.bucket, prefix)
    version = tables.ms.table(table).version

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the commit fails")

    monkeypatch.setattr(writer, "_commit", refused)
    with pytest.raises(RuntimeError, match="the commit fails"):
        sgs.write(tables.spark.createDataFrame(rows_of(0, 50), SCHEMA), table, metastore=tables.ms, progress=False)
    assert keys_under(tables.server, tables.bucket, prefix) == before, "a failed write removes its own files"
    assert tables.ms.table(table).version == version
    assert tables.ms.table(table).write_intents() == ([], {}), "and ends its intent"

    handle = tables.ms.table("s3", "days")
    definition = handle.definition
    frame = tables.spark.createDataFrame(rows_of(0, 50), SCHEMA).select("id", "amount", "country", "ds")
    stranger = write_files(frame, definition, definition.location, uuid.uuid4().hex)  # named like a write's: foreign
    killed = write_files(frame, definition, definition.location, handle.begin_write().write_id)
    assert killed and vacuum(tables.ms, "s3", "days", dry_run=True).garbage == tuple(sorted(f.path for f in killed))
    with tables.server.counted() as requests:
        deleted = vacuum(tables.ms, "s3", "days", dry_run=False).deleted
    assert sorted(deleted) == sorted(f.path for f in killed)
    assert requests.count("LIST") == 1 and requests.count("DELETE") == len(killed)
    strays = {s3.native(f.path).partition("/")[2] for f in stranger}
    assert keys_under(tables.server, tables.bucket, prefix) == before | strays
    assert tables.ms.table(table).write_intents() == ([], {}), "vacuum ended the killed write"
    client = tables.server.client()
    for key in strays:
        client.delete_object(Bucket=tables.bucket, Key=key)


def test_a_write_whose_spark_job_fails_leaves_its_files_to_vacuum(
    tables: Tables, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The executors wrote files but the driver never got their list: the write's intent stays, so vacuum finds
    them by the write id in their names (were it ended, they would be foreign for good)."""
    from sargable.spark import writer

    table, prefix = "s3.days", tables.prefix("s3.days")
    before = keys_under(tables.server, tables.bucket, prefix)

    def failing(*args: Any, **kwargs: Any) -> Any:
        write_files(*args, **kwargs)
        raise RuntimeError("the job fails after its tasks wrote")

    monkeypatch.setattr(writer, "write_files", failing)
    with pytest.raises(RuntimeError, match="the job fails"):
        sgs.write(tables.spark.createDataFrame(rows_of(0, 50), SCHEMA), table, metastore=tables.ms, progress=False)
    left = keys_under(tables.server, tables.bucket, prefix) - before
    assert left, "the tasks wrote files"
    writes, _ = tables.ms.table(table).write_intents()
    assert len(writes) == 1, "the write's intent stays"
    assert {s3.native(p).partition("/")[2] for p in vacuum(tables.ms, "s3", "days").garbage} == left
    vacuum(tables.ms, "s3", "days", dry_run=False)
    assert keys_under(tables.server, tables.bucket, prefix) == before
    assert tables.ms.table(table).write_intents() == ([], {})


def test_spark_sql_through_sargable_serve_creates_fills_and_queries_an_s3a_table(
    tables: Tables, s3a_conf: dict[str, str], tmp_path: Any
) -> None:
    url = f"sqlite:///{tmp_path / 'serve.db'}"
    location = f"s3a://{tables.bucket}/sql/{uuid.uuid4().hex[:6]}/t"
    statements = [
        "CREATE DATABASE IF NOT EXISTS lake",
        f"CREATE TABLE lake.t (x INT, ds STRING) USING parquet PARTITIONED BY (ds) LOCATION '{location}'",
        "INSERT INTO lake.t VALUES (1, 'a'), (2, 'a'), (3, 'b')",
        "INSERT INTO lake.t VALUES (4, 'c')",
        "SELECT x FROM lake.t WHERE ds = 'a' ORDER BY x",
        "SELECT count(*) FROM lake.t WHERE ds > 'a'",
        "SHOW PARTITIONS lake.t",
    ]
    with SargableServe(tmp_path, url) as serve:
        ran = run_sql(serve.uri, tmp_path / "spark-warehouse", statements, conf=s3a_conf)
    results = dict(zip(statements, ran))
    assert all("error" not in r for r in ran), [r.get("error") for r in ran if "error" in r]
    assert results[statements[4]]["rows"] == [[1], [2]]
    assert results[statements[5]]["rows"] == [[2]]
    assert results[statements[6]]["rows"] == [["ds=a"], ["ds=b"], ["ds=c"]]
    with Metastore.open(url) as ms:
        assert ms.get_table("lake", "t").location == location
        [partition] = ms.get_partitions_by_filter("lake", "t", "ds = 'a'")
        assert partition.location.startswith(location)
        with tables.server.counted() as requests:
            df = sgs.read(tables.spark, "lake.t", where="ds = 'a'", metastore=ms)
            got = sorted(row["x"] for row in df.collect())
    assert got == [1, 2]
    prefix = s3.native(location).partition("/")[2]
    assert requests.count("LIST") == 1, "the files of a table Spark SQL filled come from one listing of the folder"
    assert requests.count("LIST", under=f"{tables.bucket}/{prefix}/ds=a") == 1


def test_types_and_partition_values_round_trip_through_a_bucket(tables: Tables) -> None:
    import decimal

    schema = "id int, ts timestamp, ntz timestamp_ntz, dec decimal(10,2), flag boolean, f float, region string, n int"
    when = dt.datetime(2024, 5, 6, 7, 8, 9, 123456)
    rows = [
        (i, when + dt.timedelta(hours=i), when, decimal.Decimal(f"{i}.25"), i % 2 == 0, i / 4, region, n)
        for i, (region, n) in enumerate([("a/b", 1), ("50%", 2), ("é=x", None), ("", 3), (None, 3), ("a/b", 1)])
    ]
    df = tables.spark.createDataFrame(rows, schema)
    sgs.write(df, "s3.types", partition_by=["region", "n"], metastore=tables.ms, progress=False)
    region = df.columns.index("region")
    expected = sorted(tuple(None if i == region and v == "" else v for i, v in enumerate(r)) for r in df.collect())
    got = sgs.read(tables.spark, "s3.types", metastore=tables.ms).select(*df.columns)
    assert sorted(tuple(r) for r in got.collect()) == expected, "an empty string partition value is NULL, as in Spark"
    assert sorted(r.id for r in sgs.read(tables.spark, "s3.types", where="region = 'a/b'", metastore=tables.ms)
                  .collect()) == [0, 5]



def test_a_file_written_to_a_bucket_has_row_groups_not_a_group_per_arrow_batch(tables: Tables) -> None:
    df = tables.spark.range(25_000).selectExpr("id", "cast(id as double) as amount", "'p' as part").coalesce(1)
    sgs.write(df, "s3.groups", partition_by=["part"], metastore=tables.ms, progress=False)
    [written] = tables.ms.table("s3.groups").files()
    meta = pq.read_metadata(s3.native(written.path), filesystem=s3.filesystem())
    assert (meta.num_rows, meta.num_row_groups) == (25_000, 1), "Spark hands the rows over in batches of 10,000"
    assert (written.columns["id"].min, written.columns["id"].max) == (0, 24_999)


@given(st.lists(st.tuples(st.sampled_from([None, math.nan, 0.0, 1.0]), st.sampled_from([None, 0, 1])), min_size=1))
def test_a_write_task_cuts_a_file_per_run_of_equal_partition_values(rows: list[tuple[Any, Any]]) -> None:
    """`sargable.spark.direct` cuts files where the sorted partition values change: NULL equals NULL and NaN equals
    NaN (each is one folder), against `itertools.groupby` over the values with NaN made comparable."""
    import itertools

    import pyarrow as pa
    import pyarrow.compute as pc

    from sargable.spark.direct import _runs

    batch = pa.RecordBatch.from_arrays(
        [pa.array([r[0] for r in rows], pa.float64()), pa.array([r[1] for r in rows], pa.int32())], ["f", "i"]
    )
    comparable = [("nan" if f is not None and math.isnan(f) else f, i) for f, i in rows]
    lengths = [len(list(group)) for _, group in itertools.groupby(comparable)]
    assert [end - start for start, end in _runs(batch, ["f", "i"], pc)] == lengths
