"""Reads through a table's base relation (`sargable.spark.relations`) against Spark's own reads of the folders.

The oracle for rows is `spark.read.parquet(location)` with the same filter; the oracle for what is read is Spark's
`numFiles` metric of the executed scan, which must equal the scan report's file count (never more files than
planned), and a commit must be read at its new version.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from pyspark.sql import functions as F

from sargable import spark as sgs
from sargable.spark.relations import MAX_BASES, kept

pytest_plugins = ["conftest_spark"]

KEYS = {
    "int": ("k int", [1, 2, 3, None]),
    "string": ("k string", ["a/b=c", "x%y", "q'u\\ote", "plain", None]),
    "date": ("k date", [dt.date(2024, 1, 1), dt.date(2024, 2, 29), None]),
}


def _rows(values: list[Any]) -> list[tuple]:
    """Two ids per (half, value): the first half's ids are below 1000, the second's above."""
    return [(half * 1000 + i, values[i % len(values)]) for half in (0, 1) for i in range(4 * len(values))]


@pytest.fixture(scope="module")
def tables(spark: Any, spark_metastore: Any) -> dict[str, str]:
    """One table per key type, each partition with two files (one per half of the ids); name -> location."""
    out = {}
    for kind, (column, values) in KEYS.items():
        rows = spark.sparkContext.parallelize(_rows(values), 2)
        df = spark.createDataFrame(rows, f"id bigint, {column}")
        name = f"rel.{kind}"
        sgs.write(df, name, partition_by=["k"], metastore=spark_metastore, progress=False)
        out[name] = spark_metastore.get_table("rel", kind).location
    return out


def _canon(rows: list[Any]) -> list[tuple]:
    return sorted((tuple(r) for r in rows), key=repr)


def _files_read(df: Any) -> int:
    """Spark's `numFiles` metric of the executed file scan (after the DataFrame ran)."""
    stack = [df._jdf.queryExecution().executedPlan()]
    while stack:
        node = stack.pop()
        kind = node.getClass().getSimpleName()
        if kind == "AdaptiveSparkPlanExec":
            stack.append(node.executedPlan())
        elif kind.endswith("QueryStageExec"):
            stack.append(node.plan())
        elif kind == "FileSourceScanExec":
            return int(node.metrics().get("numFiles").get().value())
        else:
            children = node.children()
            stack.extend(children.apply(i) for i in range(children.size()))
    raise AssertionError("no file scan in the plan")


def _relation(df: Any) -> str | None:
    """The manifest directory of the relation the DataFrame reads (None: Spark was handed paths)."""
    found = re.search(r"sargable-scan-[^/\],\s]+", df._jdf.queryExecution().executedPlan().toString())
    return None if found is None else found.group()


def _checked(df: Any, plain: Any) -> int:
    """Assert the rows equal plain Spark's and Spark read exactly the planned files; returns the files read."""
    assert df.columns == plain.columns == ["id", "k"]
    assert _canon(df.collect()) == _canon(plain.collect())
    report = sgs.scan_report(df)
    read = _files_read(df) if report.files_selected else 0
    assert read == report.files_selected
    return read


@pytest.mark.parametrize("kind", list(KEYS))
def test_whole_partitions_read_the_base_relation(
    spark: Any, spark_metastore: Any, tables: dict[str, str], kind: str
) -> None:
    name = f"rel.{kind}"
    values = KEYS[kind][1]
    plain = spark.read.schema(f"id bigint, {KEYS[kind][0]}").parquet(tables[name])
    relations = set()
    neighbours, apart = F.col("k").isin(values[1:3]), F.col("k").isin([values[0], values[2]])
    for column in [None, F.col("k") == F.lit(values[0]), neighbours, apart, F.col("k").isNull()]:
        df = sgs.read(spark, name, where=column, metastore=spark_metastore)
        expected = plain if column is None else plain.where(column)
        files = _checked(df, expected)
        partitions = len({r.k for r in expected.select("k").distinct().collect()})
        assert sgs.scan_report(df).partitions_selected == partitions and files == 2 * partitions
        relations.add(_relation(df))
    assert len(relations) == 1 and None not in relations, "every read shares the table version's base relation"

    dim = spark.createDataFrame([(v,) for v in values[:2]] + [(None,)], KEYS[kind][0].replace("k ", "dk "))
    pruned = sgs.read(spark, name, prune_by=[(dim, "dk", "k")], metastore=spark_metastore)
    _checked(pruned, plain.where(F.col("k").isin(values[:2])))
    assert _relation(pruned) in relations


def test_a_commit_is_read_at_its_new_version(spark: Any, spark_metastore: Any, tables: dict[str, str]) -> None:
    name, location = "rel.int", tables["rel.int"]
    before = sgs.read(spark, name, where="k = 2", metastore=spark_metastore)
    assert _checked(before, spark.read.parquet(location).where("k = 2")) == 2
    more = spark.createDataFrame([(5000, 2), (5001, 9)], "id bigint, k int")
    sgs.write(more, name, partition_by=["k"], metastore=spark_metastore, progress=False)
    after = sgs.read(spark, name, where="k = 2 or k = 9", metastore=spark_metastore)
    assert _checked(after, spark.read.parquet(location).where("k = 2 or k = 9")) == 4
    assert 5000 in {r.id for r in after.collect()} and _relation(after) != _relation(before)
    replaced = spark.createDataFrame([(7000, 2)], "id bigint, k int")
    sgs.write(replaced, name, mode="overwrite", metastore=spark_metastore, progress=False)
    again = sgs.read(spark, name, where="k = 2", metastore=spark_metastore)
    assert [r.id for r in again.collect()] == [7000]
    assert _files_read(again) == sgs.scan_report(again).files_selected == 1


def test_files_skipped_inside_a_partition_are_never_read(
    spark: Any, spark_metastore: Any, tables: dict[str, str]
) -> None:
    name = "rel.string"
    plain = spark.read.parquet(tables[name])
    df = sgs.read(spark, name, where="k = 'plain' and id >= 1000", metastore=spark_metastore)
    assert _checked(df, plain.where("k = 'plain' and id >= 1000")) == 1, "statistics skip the low ids' file"
    assert _relation(df) is None


def test_base_relations_are_bounded(spark: Any, spark_metastore: Any) -> None:
    for index in range(MAX_BASES + 2):
        df = spark.createDataFrame([(index, index)], "id bigint, k int")
        sgs.write(df, f"rel.many{index}", partition_by=["k"], metastore=spark_metastore, progress=False)
        assert [r.id for r in sgs.read(spark, f"rel.many{index}", metastore=spark_metastore).collect()] == [index]
    assert kept() == MAX_BASES
