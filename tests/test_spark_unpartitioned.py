"""A table without partition keys through Spark: `sgs.write(df, t, partition_by=[])` (append, overwrite), `sgs.read`
with file skipping (by paths and through a manifest), the `sargable` data source and `sgs.optimize`; the rows read
are always the source's. Kept small: one shared session, a few hundred rows."""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

from sargable import spark as sgs
from sargable.errors import SargableError
from sargable.spark.driver_keys import driver_keys
from sargable.spark.frames import LISTING_THRESHOLD

pytest_plugins = ["conftest_spark"]

SCHEMA = "id bigint, s string, v double"


def _frame(spark: Any, start: int, count: int) -> Any:
    """Rows `start..start+count-1` in 4 files of disjoint id ranges (so statistics skip files)."""
    rows = [(i, None if i % 11 == 0 else f"s{i % 7}", i / 4) for i in range(start, start + count)]
    return spark.createDataFrame(rows, SCHEMA).repartitionByRange(4, "id")


def _rows(df: Any) -> Counter:
    return Counter(tuple(row) for row in df.select("id", "s", "v").collect())


def _reads_exactly_its_files(df: Any) -> bool:
    """Whether Spark's input files are exactly the scan's files (the registered ones statistics kept)."""
    read = {unquote(urlparse(uri).path) for uri in df.inputFiles()}
    return read == {f.path for f in df.sargable_scan.files}


def _expected(start: int, count: int, low: int = -1) -> Counter:
    return Counter(
        (i, None if i % 11 == 0 else f"s{i % 7}", i / 4) for i in range(start, start + count) if i > low
    )


def test_write_read_overwrite_and_optimize_without_partition_keys(spark: Any, spark_metastore: Any) -> None:
    ms, name = spark_metastore, "dims.plain"
    written = sgs.write(_frame(spark, 0, 200), name, partition_by=[], metastore=ms, progress=False)
    table = ms.table(name)
    assert table.partition_keys == () and (written.partitions, written.rows) == (0, 200)
    assert table.stats().files == written.files == len(table.files()) >= 2

    df = sgs.read(spark, name, where="id > 150", metastore=ms)
    report = sgs.scan_report(df)
    assert _rows(df) == _expected(0, 200, 150) and _reads_exactly_its_files(df)
    assert report.files_selected < report.files_total == written.files, "statistics skip files"

    sgs.write(_frame(spark, 200, 40), name, mode="append", metastore=ms, progress=False)
    previous = spark.conf.get(LISTING_THRESHOLD)
    spark.conf.set(LISTING_THRESHOLD, "1")
    try:
        through_manifest = sgs.read(spark, name, where="id > 150", metastore=ms)
        assert _rows(through_manifest) == _expected(0, 240, 150), "a manifest of such a table read no file before"
        assert _reads_exactly_its_files(through_manifest)
    finally:
        spark.conf.set(LISTING_THRESHOLD, previous)
    sgs.register(spark, ms)  # the session's data source reads this module's metastore
    pushed = spark.read.format("sargable").load(name).where("id > 150")
    assert _rows(pushed) == _expected(0, 240, 150)

    first = ms.table(name).files()[0]
    moved = str(Path(ms.table(name).location, "k=1", Path(first.path).name))
    os.makedirs(os.path.dirname(moved))
    os.rename(first.path, moved)
    ms.table(name).commit(remove_files=[first.path], add_files=[dataclasses.replace(first, path=moved)])
    everything = sgs.read(spark, name, metastore=ms)
    assert everything.columns == ["id", "s", "v"], "a folder name below the location is no partition column"
    assert _rows(everything) == _expected(0, 240) and _reads_exactly_its_files(everything)

    old = {f.path for f in ms.table(name).files()}
    replaced = sgs.write(_frame(spark, 1000, 60), name, mode="overwrite", metastore=ms, progress=False)
    assert replaced.replaced_files == len(old)
    assert _rows(sgs.read(spark, name, metastore=ms)) == _expected(1000, 60)
    assert old <= {t.path for t in ms.table(name).tombstones()}, "the replaced files have tombstones"

    before = ms.table(name).stats()
    result = sgs.optimize(spark, name, cluster_by=["id"], min_input_files=2, metastore=ms, progress=False)
    after = ms.table(name).stats()
    assert (result.partitions, result.files_removed) == (1, before.files)
    assert after.files < before.files and after.rows == before.rows
    assert _rows(sgs.read(spark, name, metastore=ms)) == _expected(1000, 60)


def test_partition_by_names_the_table_s_keys(spark: Any, spark_metastore: Any) -> None:
    df = _frame(spark, 0, 4)
    with pytest.raises(SargableError, match=r"partition_by=\[\] for a table without partition keys"):
        sgs.write(df, "dims.missing", metastore=spark_metastore, progress=False)
    spark_metastore.create_database("dims", if_not_exists=True)
    spark_metastore.create_table("dims", "keyed", [("s", "string"), ("v", "double")], [("id", "bigint")])
    with pytest.raises(SargableError, match="is partitioned by"):
        sgs.write(df, "dims.keyed", partition_by=[], metastore=spark_metastore, progress=False)
    spark_metastore.create_table("dims", "flat", [("id", "bigint"), ("s", "string"), ("v", "double")])
    with pytest.raises(SargableError, match="without partition keys, not partitioned by"):
        sgs.write(df, "dims.flat", partition_by=["s"], metastore=spark_metastore, progress=False)
    assert spark_metastore.table("dims.flat").stats().files == 0


def test_a_dimension_without_partition_keys_is_keyed_on_the_driver(spark: Any, spark_metastore: Any) -> None:
    """A star join's dimension read through `sgs.read` from a table without partition keys: its keys are read on
    the driver (no Spark job), equal to Spark's, and prune the fact table's partitions to Spark's semi-join."""
    ms = spark_metastore
    sgs.write(_frame(spark, 0, 60), "dims.days", partition_by=[], metastore=ms, progress=False)
    fact = spark.createDataFrame([(i, i % 25) for i in range(100)], "n bigint, day bigint")
    sgs.write(fact, "dims.sales", partition_by=["day"], metastore=ms, progress=False)
    dimension = sgs.read(spark, "dims.days", metastore=ms).where("id between 10 and 40 and s <> 's3'").select("id")
    keys = driver_keys(dimension, "id")
    assert keys is not None and sorted(keys.to_pylist()) == sorted(r.id for r in dimension.collect())
    pruned = sgs.read(spark, "dims.sales", prune_by=[(dimension, "id", "day")], metastore=ms)
    (pruning,) = sgs.scan_report(pruned).pruning
    assert pruning.on_driver and pruning.target == "partitions"
    assert sorted(pruned.collect()) == sorted(fact.join(dimension, fact.day == dimension.id, "left_semi").collect())
