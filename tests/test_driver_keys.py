"""Dimension keys read on the driver (`sargable.spark.driver_keys`) against Spark collecting the same DataFrame.

The oracle is Spark: the distinct non-NULL key values of `spark.sql(...)` over the same Parquet files. Filters are
generated (comparisons, IN with NULLs, BETWEEN, NULL tests, NOT, AND/OR, string literals Spark casts to integers
and dates) over columns with NULLs; whenever the driver answers, its answer must equal Spark's. Dimensions it must
leave to Spark (cached, functions, floating point, partitioned folders, too big, not Parquet) must give None, and
`sgs.read(..., prune_by=...)` over a driver-read dimension must return exactly Spark's own semi-join.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sargable import spark as sgs
from sargable.spark import driver_keys as dk

pytest_plugins = ["conftest_spark"]

STRINGS = ["", "a", "ab", "b", "é", "Z"]
DATES = [dt.date(2024, 1, 1), dt.date(2024, 2, 29), dt.date(1999, 12, 31)]


def _rows() -> pa.Table:
    """60 rows; every column has NULLs, the key repeats and is NULL on some rows."""
    n = 60
    return pa.table(
        {
            "k": pa.array([None if i % 11 == 0 else i % 23 for i in range(n)], pa.int64()),
            "a": pa.array([None if i % 7 == 0 else i % 5 - 2 for i in range(n)], pa.int32()),
            "s": pa.array([None if i % 9 == 0 else STRINGS[i % len(STRINGS)] for i in range(n)], pa.string()),
            "d": pa.array([None if i % 13 == 0 else DATES[i % len(DATES)] for i in range(n)], pa.date32()),
            "b": pa.array([None if i % 8 == 0 else i % 3 == 0 for i in range(n)], pa.bool_()),
            "f": pa.array([float(i % 4) for i in range(n)], pa.float64()),
        }
    )


@pytest.fixture(scope="module")
def dim(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The dimension as two Parquet files written by pyarrow, registered as the view `dim`; returns the folder."""
    folder = tmp_path_factory.mktemp("dimension")
    rows = _rows()
    pq.write_table(rows.slice(0, 30), folder / "part-0.parquet")
    pq.write_table(rows.slice(30), folder / "part-1.parquet")
    spark.read.parquet(str(folder)).createOrReplaceTempView("dim")
    return str(folder)


def _spark_keys(df: Any, name: str) -> list[Any]:
    return sorted({row[0] for row in df.select(name).collect() if row[0] is not None})


def _driver(df: Any, name: str) -> list[Any] | None:
    keys = dk.driver_keys(df, name)
    return None if keys is None else sorted(keys.to_pylist())


INTS = st.sampled_from(["-3", "-2", "0", "1", "2", "5", "22", "null", "'1'", "'-2'"])
OPS = st.sampled_from(["=", "<>", "<", "<=", ">", ">=", "<=>"])


@st.composite
def _leaf(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["a", "k", "s", "d", "b", "in", "between", "null"]))
    if kind in ("a", "k"):
        return f"{kind} {draw(OPS)} {draw(INTS)}"
    if kind == "s":
        return f"s {draw(OPS)} '{draw(st.sampled_from(STRINGS))}'"
    if kind == "d":
        day = draw(st.sampled_from(DATES)).isoformat()
        literal = draw(st.sampled_from([f"'{day}'", f"date'{day}'", f"cast('{day}' as date)"]))
        return f"d {draw(OPS)} {literal}"
    if kind == "b":
        return draw(st.sampled_from(["b", "b = true", "b <=> false", "not b"]))
    if kind == "in":
        column, values = draw(st.sampled_from([("a", INTS), ("s", st.sampled_from(["'a'", "''", "'é'", "null"]))]))
        return f"{column} in ({', '.join(draw(st.lists(values, min_size=1, max_size=4)))})"
    if kind == "between":
        low, high = sorted(draw(st.lists(st.integers(-3, 3), min_size=2, max_size=2)))
        return f"a {draw(st.sampled_from(['', 'not ']))}between {low} and {high}"
    return f"{draw(st.sampled_from(['a', 's', 'd', 'b', 'k']))} is {draw(st.sampled_from(['', 'not ']))}null"


FILTERS = st.recursive(
    _leaf(),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["and", "or"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        inner.map(lambda f: f"not ({f})"),
    ),
    max_leaves=5,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=FILTERS)
def test_driver_keys_equal_spark_keys(spark: Any, dim: str, where: str) -> None:
    df = spark.sql(f"select k from dim where {where}")
    got = _driver(df, "k")
    assert got is not None, f"the driver should evaluate {where!r}"
    assert got == _spark_keys(df, "k"), where


@pytest.mark.parametrize(
    "sql, column",
    [
        ("select k as key from dim where a > 0 and s in ('a', 'b')", "key"),
        ("select distinct k from dim where d between '2024-01-01' and '2024-12-31'", "k"),
        ("select k from (select k, a from dim) where a = 1", "k"),
        ("select k from dim", "k"),
        ("select k from dim where cast(a as bigint) = 1", "k"),
    ],
)
def test_shapes_the_driver_reads(spark: Any, dim: str, sql: str, column: str) -> None:
    df = spark.sql(sql)
    got = _driver(df, column)
    assert got is not None
    assert got == _spark_keys(df, column)


def test_dataframe_api_dimension(spark: Any, dim: str) -> None:
    df = spark.read.parquet(dim).select("k", "a", "s").where("a >= 0").where("s <> 'b'")
    assert _driver(df, "k") == _spark_keys(df, "k")


@pytest.mark.parametrize(
    "sql",
    [
        "select k from dim where s like 'a%'",
        "select k from dim where f > 1",
        "select k from dim where upper(s) = 'A'",
        "select k from dim where a + 1 = 2",
        "select k + 1 as k from dim",
        "select k from dim where a = 1.5",
        "select x.k from dim x join dim y on x.k = y.a",
    ],
)
def test_left_to_spark(spark: Any, dim: str, sql: str) -> None:
    assert _driver(spark.sql(sql), "k") is None


def test_cached_dimension_left_to_spark(spark: Any, dim: str) -> None:
    df = spark.read.parquet(dim)
    df.cache()
    try:
        df.count()
        assert _driver(df.where("a = 1").select("k"), "k") is None
    finally:
        df.unpersist()


def test_other_sources_left_to_spark(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    local = spark.createDataFrame([(1, 2)], "k bigint, a int")
    assert _driver(local, "k") is None
    folder = tmp_path / "parted"
    pq.write_table(pa.table({"k": pa.array([1, 2], pa.int64())}), tmp_path / "one.parquet")
    (folder / "p=1").mkdir(parents=True)
    pq.write_table(pa.table({"k": pa.array([3], pa.int64())}), folder / "p=1" / "x.parquet")
    assert _driver(spark.read.parquet(str(folder)), "k") is None
    (tmp_path / "one.csv").write_text("k\n1\n")
    assert _driver(spark.read.option("header", True).csv(str(tmp_path / "one.csv")), "k") is None
    single = spark.read.parquet(str(tmp_path / "one.parquet"))
    assert _driver(single, "k") == [1, 2]
    monkeypatch.setattr(dk, "MAX_BYTES", 10)
    assert _driver(single, "k") is None


def test_read_prunes_with_driver_keys(spark: Any, spark_metastore: Any, dim: str) -> None:
    rows = [(i, i % 25) for i in range(200)]
    fact = spark.createDataFrame(rows, "id bigint, day bigint")
    sgs.write(fact, "drv.sales", partition_by=["day"], metastore=spark_metastore, progress=False)
    dimension = spark.sql("select k from dim where a >= 1 and s is not null")
    pruned = sgs.read(spark, "drv.sales", prune_by=[(dimension, "k", "day")], metastore=spark_metastore)
    report = sgs.scan_report(pruned)
    (pruning,) = report.pruning
    assert pruning.on_driver and pruning.target == "partitions"
    assert "read on the driver" in pruning.describe()
    keys = _spark_keys(dimension, "k")
    assert report.partitions_selected == len([k for k in keys if 0 <= k < 25])
    expected = sorted(fact.join(dimension, fact.day == dimension.k, "left_semi").collect())
    assert sorted(pruned.collect()) == expected


def test_keys_kept_while_the_files_are_unchanged(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second read over unchanged files reads no Parquet; a file rewritten in place (even with its old
    modification time put back) is read again, and the keys are Spark's over the new contents."""
    path = tmp_path / "dim.parquet"
    pq.write_table(pa.table({"k": pa.array([1, 2, 3], pa.int64()), "a": pa.array([1, 1, 0], pa.int32())}), path)
    reads = []
    real = dk.pq.ParquetFile

    def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(dk.pq, "ParquetFile", counted)

    def dimension() -> Any:
        spark.catalog.refreshByPath(str(path))
        return spark.read.parquet(str(path)).where("a = 1").select("k")

    assert _driver(dimension(), "k") == [1, 2]
    assert _driver(dimension(), "k") == [1, 2]
    assert len(reads) == 1, "the second read was kept"
    before = path.stat()
    pq.write_table(pa.table({"k": pa.array([7, 8, 9], pa.int64()), "a": pa.array([0, 1, 1], pa.int32())}), path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    df = dimension()
    assert _driver(df, "k") == _spark_keys(df, "k") == [8, 9]
    assert len(reads) == 2


def test_kept_keys_are_bounded(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dk, "MAX_KEPT_BYTES", 3 * 8 * 100)
    for i in range(6):
        path = tmp_path / f"d{i}.parquet"
        pq.write_table(pa.table({"k": pa.array(range(i * 100, i * 100 + 100), pa.int64())}), path)
        assert _driver(spark.read.parquet(str(path)), "k") == list(range(i * 100, i * 100 + 100))
        assert dk.kept_bytes() <= dk.MAX_KEPT_BYTES


def test_only_spark_own_file_index(spark: Any, tmp_path: Path) -> None:
    """A Parquet relation over another file index (here the `_spark_metadata` log of a streaming sink's output, whose
    files are those the log lists, not those in the folder) is left to Spark."""
    sink = tmp_path / "sink"
    (sink / "_spark_metadata").mkdir(parents=True)
    pq.write_table(pa.table({"k": pa.array([1, 2], pa.int64())}), sink / "logged.parquet")
    pq.write_table(pa.table({"k": pa.array([3], pa.int64())}), sink / "unlisted.parquet")
    entry = {"path": (sink / "logged.parquet").as_uri(), "size": (sink / "logged.parquet").stat().st_size}
    entry |= {"isDir": False, "modificationTime": 0, "blockReplication": 1, "blockSize": 1 << 27, "action": "add"}
    (sink / "_spark_metadata" / "0").write_text("v1\n" + json.dumps(entry))
    logged = spark.read.parquet(str(sink))
    assert _spark_keys(logged, "k") == [1, 2]
    assert _driver(logged, "k") is None
