"""The Spark pipeline end to end: `sgs.read` and the `sargable` data source return exactly Spark's rows.

The oracle is plain Spark over the same folders (`spark.read.parquet(location).where(filter)`), which discovers
the partitions itself. Scan reports are checked against counts taken independently: the files and partitions that
hold matching rows (from Spark's `input_file_name()`), and the folders on disk.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from decimal import Decimal
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
from pyspark.sql import functions as F

import sargable as sg
from sargable import spark as sgs
from sargable.errors import CommitConflictError, SargableError
from sargable.expr import columns_of, parse
from sargable.vacuum import expire_removed

pytest_plugins = ["conftest_spark"]

TABLE = "shop.sales"
COLUMNS = ["id", "hr", "amount", "price", "name", "flag", "ts", "ds", "region"]
REGIONS = ["us-east", "eu west", "a/b=c", None]
NAMES = ["n0", "n1", "n2", "n3", "ñ5", None, "it's", "n1%"]

FILTERS = [
    # partition keys only: answered exactly by the metastore
    "ds = '2024-01-02'",
    "ds >= '2024-01-03'",
    "ds < '2024-01-02' or ds > '2024-01-04'",
    "ds between '2024-01-02' and '2024-01-04'",
    "ds not between '2024-01-02' and '2024-01-04'",
    "ds in ('2024-01-01', '2024-01-05')",
    "ds not in ('2024-01-01', '2024-01-05')",
    "ds != '2024-01-03'",
    "region = 'us-east'",
    "region is null",
    "region is not null",
    "not (region = 'us-east')",
    "region <=> null",
    "region like 'eu%'",
    "region like '%/%'",
    "region not like 'us%'",
    "region in ('a/b=c', 'eu west')",
    "region > 'b'",
    "ds = '2024-01-03' and region = 'nowhere'",
    "(ds = '2024-01-01' and region = 'us-east') or (ds = '2024-01-05' and region is null)",
    # data columns: file statistics, then Spark
    "id < 100",
    "id >= 1500",
    "id = 1234",
    "id between 990 and 1010",
    "id > 5000",
    "hr = 3",
    "hr <> 2",
    "amount > 900.5",
    "amount <= 3.0",
    "price = 12.34",
    "price >= 500",
    "name = 'n3'",
    "name like 'n1%'",
    "name like 'n1!%' escape '!'",
    "name is null",
    "name in ('n2', 'ñ5', 'it''s')",
    "flag = true",
    "flag is null or flag = false",
    "name rlike '^n[0-2]$'",
    "upper(name) = 'N3'",
    "ts >= '2024-01-02 12:00:00'",
    # mixed, and ORs across partition and data columns
    "hr in (1, 2) and ds = '2024-01-04'",
    "ds = '2024-01-02' or id < 50",
    "region is null or amount > 900",
    "(ds = '2024-01-01' and region = 'us-east') or (ds = '2024-01-05' and id > 1900)",
    "not (ds = '2024-01-01' or id > 100)",
    "ts < '2024-01-01 06:00:00' and region like 'us%'",
    "ds >= '2024-01-02' and id < 1000 and amount > 10",
    "region in ('us-east') and (name = 'n1' or price < 100)",
]


def _rows(spark: Any, index: int, count: int) -> list[tuple]:
    """Deterministic rows: ids grow with the write, so file statistics can skip."""
    out = []
    for i in range(index * count, (index + 1) * count):
        amount = math.nan if i % 97 == 0 else (i * 7919 % 1000) + 0.5
        price = None if i % 13 == 0 else Decimal(i % 1000) + Decimal("0.34")
        out.append(
            (
                i,
                i % 5 if i % 11 else None,
                amount,
                price,
                NAMES[i % len(NAMES)],
                None if i % 17 == 0 else i % 3 == 0,
                dt.datetime(2024, 1, 1) + dt.timedelta(minutes=37 * i),
                dt.date(2024, 1, 1 + i % 5),
                REGIONS[i % len(REGIONS)],
            )
        )
    return out


SCHEMA = (
    "id bigint, hr int, amount double, price decimal(10,2), name string, flag boolean, ts timestamp, "
    "ds date, region string"
)


@pytest.fixture(scope="module")
def sales(spark: Any, spark_metastore: Any) -> str:
    """The table, written in two appends of 1000 rows (two files in most partitions)."""
    for index in range(2):
        df = spark.createDataFrame(_rows(spark, index, 1000), SCHEMA).repartition(1)
        sgs.write(df, TABLE, partition_by=["ds", "region"], metastore=spark_metastore, progress=False)
    sgs.register(spark, spark_metastore)
    return spark_metastore.get_table("shop", "sales").location


def _canon(rows: list[Any]) -> list[tuple]:
    """Rows as sortable tuples (NaN made comparable)."""
    out = []
    for row in rows:
        out.append(tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row))
    return sorted(out, key=repr)


def _plain(spark: Any, location: str, where: str) -> Any:
    """Plain Spark: its own partition discovery over the table's folders, then the filter."""
    return spark.read.parquet(location).where(where).select(*COLUMNS)


def _disk(location: str) -> tuple[set[str], list[str], int]:
    """(partition folders, data files, bytes) found by walking the table's folder."""
    folders, files, size = set(), [], 0
    for root, dirs, names in os.walk(location):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        for name in names:
            if name.endswith(".parquet"):
                folders.add(os.path.relpath(root, location))
                files.append(os.path.join(root, name))
                size += os.path.getsize(os.path.join(root, name))
    return folders, files, size


def _local(uri: str) -> str:
    """A local path from Spark's `input_file_name()` (a `file:` URI with the path URL-encoded)."""
    return unquote(urlparse(uri).path) if uri.startswith("file:") else uri


@pytest.fixture(scope="module")
def disk(sales: str) -> tuple[set[str], list[str], int]:
    return _disk(sales)


@pytest.mark.parametrize("where", FILTERS)
def test_read_and_data_source_return_exactly_sparks_rows(
    spark: Any, spark_metastore: Any, sales: str, disk: tuple[set[str], list[str], int], where: str
) -> None:
    plain = spark.read.parquet(sales).where(where).select(*COLUMNS, F.input_file_name().alias("file")).collect()
    expected = _canon([row[:-1] for row in plain])
    df = sgs.read(spark, TABLE, where=where, metastore=spark_metastore)
    assert _canon(df.select(*COLUMNS).collect()) == expected
    source = spark.read.format("sargable").load(TABLE).where(where).select(*COLUMNS)
    assert _canon(source.collect()) == expected

    report = sgs.scan_report(df)
    folders, files, size = disk
    assert (report.partitions_total, report.files_total, report.bytes_total) == (len(folders), len(files), size)
    files_with_rows = {_local(row.file) for row in plain}
    partitions_with_rows = {(row.ds, row.region) for row in plain}
    selected = {f.path for f in spark_metastore.table(TABLE).scan(where).files}
    assert files_with_rows <= selected
    assert report.files_selected == len(selected) >= len(files_with_rows)
    assert report.bytes_selected <= report.bytes_total
    assert report.partitions_selected >= len(partitions_with_rows)
    if columns_of(parse(where)) <= {"ds", "region"}:
        # A partition predicate is exact: the selected partitions are those where it is TRUE, all their files read.
        assert report.partitions_selected == len(partitions_with_rows)
        assert report.files_selected == len(files_with_rows)


def test_data_source_in_sql_view(spark: Any, sales: str) -> None:
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW sales_view USING sargable OPTIONS (table '{TABLE}')")
    got = spark.sql("SELECT id FROM sales_view WHERE ds = '2024-01-02' AND region = 'eu west' AND id < 1500")
    expected = _plain(spark, sales, "ds = '2024-01-02' and region = 'eu west' and id < 1500").select("id")
    assert sorted(got.collect()) == sorted(expected.collect())
    assert got.count() > 0


def test_data_source_prunes_and_hands_back_only_data_filters(spark: Any, spark_metastore: Any, sales: str) -> None:
    table = spark_metastore.table(TABLE)
    one_file_per_split = spark.read.format("sargable").option("splits", "100000").load(TABLE)
    for where, spark_filters in [
        ("ds = '2024-01-02' and region like 'eu%'", False),
        ("ds >= '2024-01-04' and id >= 1500", True),
        ("id < 100", True),
    ]:
        df = one_file_per_split.where(where)
        planned = table.scan(where).files
        assert df.rdd.getNumPartitions() == max(1, len(planned)), where
        plan = df._jdf.queryExecution().executedPlan().toString()
        filter_lines = [line for line in plan.splitlines() if ") Filter (" in line]
        assert bool(filter_lines) == spark_filters, plan
        assert not any("ds#" in line for line in filter_lines), "partition predicates are not re-applied by Spark"


def test_data_source_without_a_table_says_how_to_name_one(spark: Any, sales: str) -> None:
    with pytest.raises(Exception, match="needs a table"):
        spark.read.format("sargable").load().collect()


def test_scan_report_counts_for_known_filters(spark: Any, spark_metastore: Any, sales: str) -> None:
    folders = _disk(sales)[0]
    cases = {
        "ds = '2024-01-02' and region = 'us-east'": 1,
        "ds = '2024-01-02'": len({f for f in folders if f.startswith("ds=2024-01-02/")}),
        "region is null": len({f for f in folders if f.endswith("region=__HIVE_DEFAULT_PARTITION__")}),
        "ds in ('2024-01-01', '2024-01-05') and region like 'a%'": 2,
    }
    for where, partitions in cases.items():
        report = sgs.scan_report(sgs.read(spark, TABLE, where=where, metastore=spark_metastore))
        assert report.partitions_selected == partitions, where
        assert report.partitions_total == len(folders)
        assert report.planning_ms > 0
    # ids grow with the write: the first write's files can't hold id >= 1500
    report = sgs.scan_report(sgs.read(spark, TABLE, where="id >= 1500", metastore=spark_metastore))
    assert report.files_selected < report.files_total
    assert report.partitions_selected == report.partitions_total
    assert report.residual is not None and "id" in report.residual
    empty = sgs.read(spark, TABLE, where="id > 5000", metastore=spark_metastore)
    assert sgs.scan_report(empty).files_selected == 0
    assert empty.count() == 0 and empty.columns == COLUMNS
    assert "id" in str(sgs.scan_report(empty))


def test_column_filters_and_projection(spark: Any, spark_metastore: Any, sales: str) -> None:
    df = sgs.read(
        spark,
        TABLE,
        where=(F.col("ds") >= dt.date(2024, 1, 4)) & (F.upper("name") == "N3"),
        columns=["id", "ds"],
        metastore=spark_metastore,
    )
    report = sgs.scan_report(df)
    expected = _plain(spark, sales, "ds >= '2024-01-04' and upper(name) = 'N3'").select("id", "ds")
    assert sorted(df.collect()) == sorted(expected.collect())
    assert df.columns == ["id", "ds"]
    assert report.partitions_selected < report.partitions_total
    assert any("upper" in note for note in report.notes)
    expr = sg.col("ds") >= dt.date(2024, 1, 4)
    by_expr = sgs.read(spark, TABLE, where=expr, metastore=spark_metastore).count()
    assert by_expr == _plain(spark, sales, "ds >= '2024-01-04'").count()


def test_timestamp_statistics_are_not_used_outside_utc(spark: Any, spark_metastore: Any, sales: str) -> None:
    # Footers hold UTC instants; in New York '06:00' is 11:00 UTC, so files starting between 06:00 and 11:00 UTC
    # hold matching rows although their minimum is above the literal.
    where = "ts < '2024-01-01 06:00:00'"
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        df = sgs.read(spark, TABLE, where=where, metastore=spark_metastore)
        assert _canon(df.select(*COLUMNS).collect()) == _canon(_plain(spark, sales, where).collect())
        assert any("time zone" in note for note in sgs.scan_report(df).notes)
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def test_read_rejects_bad_input(spark: Any, spark_metastore: Any, sales: str) -> None:
    with pytest.raises(SargableError, match="unknown columns"):
        sgs.read(spark, TABLE, columns=["nope"], metastore=spark_metastore)
    with pytest.raises(SargableError):
        sgs.read(spark, TABLE, where="nope = 1", metastore=spark_metastore)
    with pytest.raises(SargableError):
        sgs.read(spark, TABLE, where="ds = 'not a date'", metastore=spark_metastore)
    with pytest.raises(SargableError, match="where must be"):
        sgs.read(spark, TABLE, where=42, metastore=spark_metastore)
    with pytest.raises(SargableError):
        sgs.read(spark, "shop.missing", metastore=spark_metastore)
    with pytest.raises(SargableError, match="scan report"):
        sgs.scan_report(spark.range(3))


def _snapshot(spark: Any, ms: Any, table: str) -> tuple[int, list[str], list[tuple]]:
    db, name = table.split(".")
    rows = sgs.read(spark, table, metastore=ms).collect()
    return ms.get_table(db, name).version, sorted(f.path for f in ms.list_files(db, name)), _canon(rows)


def test_overwrite_replaces_exactly_the_partitions_written(spark: Any, spark_metastore: Any) -> None:
    table = "shop.overwrite"
    base = spark.createDataFrame([(i, f"k{i % 3}", i % 2) for i in range(60)], "v bigint, k string, p int")
    sgs.write(base, table, partition_by=["k", "p"], metastore=spark_metastore, progress=False)
    location = spark_metastore.get_table("shop", "overwrite").location
    old_files = {f.path for f in spark_metastore.list_files("shop", "overwrite")}
    new = spark.createDataFrame([(1000 + i, "k1", 0) for i in range(5)], "v bigint, k string, p int")
    result = sgs.write(new, table, mode="overwrite", metastore=spark_metastore, progress=False)
    assert result.partitions == 1 and result.rows == 5 and result.replaced_files >= 1
    got = _canon(sgs.read(spark, table, metastore=spark_metastore).select("v", "k", "p").collect())
    expected = _canon([(i, f"k{i % 3}", i % 2) for i in range(60) if (f"k{i % 3}", i % 2) != ("k1", 0)])
    assert got == _canon(expected + [(1000 + i, "k1", 0) for i in range(5)])
    replaced = old_files - {f.path for f in spark_metastore.list_files("shop", "overwrite")}
    assert len(replaced) == result.replaced_files and all(os.path.exists(p) for p in replaced)
    assert {t.path for t in spark_metastore.table(table).tombstones()} == replaced, "kept for older snapshots"
    spark_metastore.table(table).set_properties({"sargable.deleted_file_retention_seconds": "0"})
    assert set(expire_removed(spark_metastore, "shop", "overwrite").deleted) == replaced
    plain = spark.read.parquet(location).select("v", "k", "p").collect()
    assert _canon(plain) == got, "the replaced files are gone from storage too"
    remaining = {f.path for f in spark_metastore.list_files("shop", "overwrite")}
    assert all(os.path.exists(p) for p in remaining)
    assert not any(os.path.exists(p) for p in old_files - remaining)


def test_failed_write_leaves_the_table_unchanged(spark: Any, spark_metastore: Any, monkeypatch: Any) -> None:
    table = "shop.atomic"
    df = spark.createDataFrame([(i, dt.date(2024, 2, 1 + i % 3)) for i in range(30)], "v bigint, ds date")
    sgs.write(df, table, partition_by=["ds"], metastore=spark_metastore, progress=False)
    location = spark_metastore.get_table("shop", "atomic").location
    before = _snapshot(spark, spark_metastore, table)
    more = spark.createDataFrame([(100 + i, dt.date(2024, 2, 1 + i % 5)) for i in range(30)], "v bigint, ds date")

    def failing_commit(*args: Any, **kwargs: Any) -> None:
        assert len(_disk(location)[1]) > len(before[1]), "the new files are in place"
        raise RuntimeError("injected failure before the commit")

    monkeypatch.setattr(spark_metastore, "commit", failing_commit)
    with pytest.raises(RuntimeError, match="injected"):
        sgs.write(more, table, metastore=spark_metastore, progress=False)
    monkeypatch.undo()
    assert _snapshot(spark, spark_metastore, table) == before
    assert spark.read.parquet(location).count() == 30, "the failed write's files were removed"
    assert sgs.vacuum(table, metastore=spark_metastore) == []


def test_killed_write_leaves_orphans_for_vacuum(spark: Any, spark_metastore: Any, monkeypatch: Any) -> None:
    from sargable.spark import writer

    table = "shop.killed"
    df = spark.createDataFrame([(i, i % 4) for i in range(40)], "v bigint, p int")
    sgs.write(df, table, partition_by=["p"], metastore=spark_metastore, progress=False)
    before = _snapshot(spark, spark_metastore, table)

    class Killed(BaseException):
        """Stands in for the process dying: nothing after it runs, not even the cleanup."""

    monkeypatch.setattr(spark_metastore, "commit", lambda *a, **k: (_ for _ in ()).throw(Killed()))
    monkeypatch.setattr(writer, "discard", lambda *args, **kwargs: [])
    with pytest.raises(Killed):
        sgs.write(df, table, metastore=spark_metastore, progress=False)
    monkeypatch.undo()
    assert _snapshot(spark, spark_metastore, table) == before, "readable and unchanged through the metastore"
    orphans = sgs.vacuum(table, metastore=spark_metastore)
    assert orphans and any(p.endswith(".parquet") for p in orphans)
    assert sgs.vacuum(table, metastore=spark_metastore, older_than=3600) == []
    assert sgs.vacuum(table, metastore=spark_metastore, dry_run=False) == orphans
    assert sgs.vacuum(table, metastore=spark_metastore) == []
    assert not any(os.path.exists(p) for p in orphans)
    location = spark_metastore.get_table("shop", "killed").location
    assert _canon(spark.read.parquet(location).select("v", "p").collect()) == before[2]


def test_stale_overwrite_is_a_conflict(spark: Any, spark_metastore: Any, monkeypatch: Any) -> None:
    table = "shop.conflict"
    df = spark.createDataFrame([(i, i % 2) for i in range(10)], "v bigint, p int")
    sgs.write(df, table, partition_by=["p"], metastore=spark_metastore, progress=False)
    before = _snapshot(spark, spark_metastore, table)
    real_commit = spark_metastore.commit

    def commit_after_a_rival(*args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(spark_metastore, "commit", real_commit)
        real_commit("shop", "conflict", add_partitions=[{"p": 7}])
        return real_commit(*args, **kwargs)

    monkeypatch.setattr(spark_metastore, "commit", commit_after_a_rival)
    with pytest.raises(CommitConflictError):
        sgs.write(df, table, mode="overwrite", metastore=spark_metastore, progress=False)
    version, files, rows = _snapshot(spark, spark_metastore, table)
    assert (files, rows) == before[1:] and version == before[0] + 1
    assert sgs.vacuum(table, metastore=spark_metastore) == []


def test_every_type_round_trips_through_read_and_the_data_source(spark: Any, spark_metastore: Any) -> None:
    schema = (
        "t tinyint, s smallint, i int, b bigint, f float, d double, m decimal(20,4), day date, ts timestamp, "
        "ntz timestamp_ntz, ok boolean, txt string, pd date, ps string"
    )
    rows = [
        (
            k % 100,
            k * 300,
            k * 70000,
            k * 2**40,
            k / 4,
            k / 3,
            Decimal(k) / 7 if k % 3 else None,
            dt.date(2000, 1, 1) + dt.timedelta(days=k),
            dt.datetime(2024, 5, 6, 7, 8, 9, k),
            dt.datetime(1999, 12, 31, 23, 59, 59, k),
            k % 2 == 0,
            f"x{k}",
            dt.date(2024, 1, 1 + k % 2),
            None if k % 3 == 0 else "p/q",
        )
        for k in range(12)
    ]
    df = spark.createDataFrame(rows, schema)
    df = df.withColumn("m", F.col("m").cast("decimal(20,4)"))
    sgs.write(df, "shop.types", partition_by=["pd", "ps"], metastore=spark_metastore, progress=False)
    table = spark_metastore.get_table("shop", "types")
    assert [str(t) for _, t in table.columns] == [
        "tinyint", "smallint", "int", "bigint", "float", "double", "decimal(20,4)", "date", "timestamp",
        "timestamp", "boolean", "string",
    ]
    names = [f.name for f in df.schema.fields]
    expected = _canon(df.collect())
    ours = sgs.read(spark, "shop.types", metastore=spark_metastore)
    assert ours.schema == df.schema
    assert _canon(ours.select(*names).collect()) == expected
    source = spark.read.format("sargable").load("shop.types")
    assert _canon(source.select(*names).collect()) == expected
    assert _canon(source.where("ps = 'p/q' and t < 5").select(*names).collect()) == _canon(
        df.where("ps = 'p/q' and t < 5").collect()
    )


def test_write_rejects_bad_input(spark: Any, spark_metastore: Any) -> None:
    df = spark.createDataFrame([(1, 2)], "a bigint, b int")
    with pytest.raises(SargableError, match="mode"):
        sgs.write(df, "shop.bad", partition_by=["b"], mode="upsert", metastore=spark_metastore)
    with pytest.raises(SargableError, match="partition_by"):
        sgs.write(df, "shop.bad", partition_by=["zz"], metastore=spark_metastore)
    with pytest.raises(SargableError, match="partition_by"):
        sgs.write(df, "shop.bad", metastore=spark_metastore)
    with pytest.raises(SargableError, match="DataFrame"):
        sgs.write([(1, 2)], "shop.bad", partition_by=["b"], metastore=spark_metastore)
    with pytest.raises(SargableError, match="at least one data column"):
        sgs.write(df, "shop.bad", partition_by=["a", "b"], metastore=spark_metastore)
    sgs.write(df, "shop.bad", partition_by=["b"], metastore=spark_metastore, progress=False)
    with pytest.raises(SargableError, match="partitioned by"):
        sgs.write(df, "shop.bad", partition_by=["a"], metastore=spark_metastore)
    with pytest.raises(SargableError, match="not columns"):
        sgs.write(df.withColumn("extra", F.lit(1)), "shop.bad", metastore=spark_metastore)


@pytest.mark.parametrize(
    "where",
    [None, "region = 'a/b=c'", "region is null or id < 10", "ds >= '2024-01-04' and name like 'n%'", "id > 5000"],
)
def test_large_scans_read_through_a_manifest(
    spark: Any, spark_metastore: Any, sales: str, monkeypatch: Any, where: str | None
) -> None:
    from sargable.spark.frames import LISTING_THRESHOLD

    threshold = spark.conf.get(LISTING_THRESHOLD)
    spark.conf.set(LISTING_THRESHOLD, "0")  # past Spark's listing threshold: the files go through a manifest
    try:
        df = sgs.read(spark, TABLE, where=where, metastore=spark_metastore)
    finally:
        spark.conf.set(LISTING_THRESHOLD, threshold)
    plain = spark.read.parquet(sales)
    expected = (plain.where(where) if where else plain).select(*COLUMNS)
    assert _canon(df.select(*COLUMNS).collect()) == _canon(expected.collect())
    if sgs.scan_report(df).files_selected:
        assert "MetadataLogFileIndex" in df._jdf.queryExecution().executedPlan().toString()


def test_one_read_binds_once_and_reads_the_catalog_row_once(
    spark: Any, spark_metastore: Any, sales: str, monkeypatch: Any
) -> None:
    import importlib

    from sargable.metastore.schema import CATALOG, table_key

    bind_module = importlib.import_module("sargable.expr.bind")
    made: list[Any] = []

    class CountingSchema(bind_module.Schema):
        def __init__(self, columns: Any) -> None:
            made.append(columns)
            super().__init__(columns)

    monkeypatch.setattr(bind_module, "Schema", CountingSchema)
    store, catalog_reads = spark_metastore.store, []
    real_get = store.get

    def get(keyspace: str, key: bytes) -> Any:
        if keyspace == CATALOG and key == table_key("shop", "sales"):
            catalog_reads.append(key)
        return real_get(keyspace, key)

    monkeypatch.setattr(store, "get", get)
    df = sgs.read(spark, TABLE, where="ds >= '2024-01-03' and id < 1500 and name like 'n1%'", metastore=spark_metastore)
    assert len(made) == 1, "the filter is bound once"
    assert len(catalog_reads) == 1, "the table's catalog row is read once"
    monkeypatch.undo()
    assert _canon(df.select(*COLUMNS).collect()) == _canon(
        _plain(spark, sales, "ds >= '2024-01-03' and id < 1500 and name like 'n1%'").collect()
    )


def test_reads_and_writes_leave_the_session_configuration_alone(
    spark: Any, spark_metastore: Any, sales: str, monkeypatch: Any
) -> None:
    """No conf change, even for a moment: two reads on one session, from two threads, each get their rows."""
    from concurrent.futures import ThreadPoolExecutor

    from sargable.metastore import Metastore

    changes: list[tuple[str, Any]] = []
    real_set = type(spark.conf).set
    monkeypatch.setattr(
        type(spark.conf), "set", lambda conf, key, value: changes.append((key, value)) or real_set(conf, key, value)
    )
    url = spark_metastore.url
    opened: list[str] = []
    real_open = Metastore.open.__func__
    monkeypatch.setattr(
        Metastore, "open", classmethod(lambda cls, u=None, **k: opened.append(u) or real_open(cls, u, **k))
    )
    filters = ["id < 1500", "ds >= '2024-01-02' and name is null"]

    def both() -> list[list[tuple]]:
        return [_canon(sgs.read(spark, TABLE, where=w, metastore=url).select(*COLUMNS).collect()) for w in filters]

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: both(), range(2)))
    expected = [_canon(_plain(spark, sales, w).collect()) for w in filters]
    assert results == [expected, expected]
    assert len(opened) <= 2, "each thread opens the metastore of a URL once"
    df = spark.createDataFrame([(1, dt.datetime(2024, 1, 1, 5), 7)], "v bigint, ts timestamp, p int")
    sgs.write(df, "shop.stamps", partition_by=["p"], metastore=spark_metastore, progress=False)
    assert changes == []
    (file,) = spark_metastore.list_files("shop", "stamps")
    stamps = file.columns["ts"]
    assert (stamps.min, stamps.max) == (dt.datetime(2024, 1, 1, 5), dt.datetime(2024, 1, 1, 5)), "INT96 statistics"
