"""Join-driven partition pruning (`sgs.read(..., prune_by=...)` and `sgs.join`) against Spark's own unpruned joins.

The oracle for rows is plain Spark: `spark.read.parquet(location)` (its own partition discovery, no sargable)
joined with the same dimension DataFrame. The oracle for what is read is the table's folders on disk, filtered in
Python by the dimension's key values (NULL keys never join).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from decimal import Decimal
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from sargable import spark as sgs
from sargable.errors import SargableError
from sargable.spark.join import fact_side_reason

pytest_plugins = ["conftest_spark"]

TABLE = "star.sales"
STORES = ["s1", "s2", "s3"]
NULL_FOLDER = "__HIVE_DEFAULT_PARTITION__"


def _sales_rows(parity: int) -> list[tuple]:
    """600 rows with items 0..49 (parity 0) or 50..99 (parity 1), so file statistics can skip files."""
    out = []
    for i in range(600):
        day = None if i % 37 == 0 else 1 + i % 12
        store = None if i % 41 == 0 else STORES[(i // 12) % 3]
        item = None if i % 43 == 0 else i % 50 + 50 * parity
        out.append((i + 1000 * parity, item, Decimal(i % 97) + Decimal("0.25"), day, store))
    return out


@pytest.fixture(scope="module")
def sales(spark: Any, spark_metastore: Any) -> str:
    """The fact table, partitioned by (day, store), NULL partitions included; returns its location."""
    schema = "id bigint, item int, amount decimal(10,2), day int, store string"
    # Two tasks, one per half of the rows: each partition gets one file of low items and one of high items.
    rows = spark.sparkContext.parallelize(_sales_rows(0) + _sales_rows(1), 2)
    df = spark.createDataFrame(rows, schema)
    sgs.write(df, TABLE, partition_by=["day", "store"], metastore=spark_metastore, progress=False)
    return spark_metastore.get_table("star", "sales").location


@pytest.fixture(scope="module")
def plain(spark: Any, sales: str) -> Any:
    """The same folders read by Spark alone."""
    return spark.read.parquet(sales)


@pytest.fixture(scope="module")
def days(spark: Any) -> Any:
    """Keys 1..15 (13..15 have no sales) in months of four days, and a NULL key."""
    rows = [(dk, 1 + (dk - 1) // 4) for dk in range(1, 16)] + [(None, 1)]
    return spark.createDataFrame(rows, "dk int, month int")


@pytest.fixture(scope="module")
def stores(spark: Any) -> Any:
    rows = [("s1", "east"), ("s2", "west"), ("s3", "east"), ("s9", "east"), (None, "east")]
    return spark.createDataFrame(rows, "sk string, region string")


@pytest.fixture(scope="module")
def items(spark: Any) -> Any:
    rows = [(ik, "low" if ik < 50 else "high") for ik in range(0, 100)] + [(200, "high"), (None, "low")]
    return spark.createDataFrame(rows, "ik int, kind string")


def _value(text: str, cast: Callable[[str], Any]) -> Any:
    return None if text == NULL_FOLDER else cast(text)


@pytest.fixture(scope="module")
def disk(sales: str) -> dict[tuple[Any, Any], list[str]]:
    """(day, store) of each partition folder on disk -> its data files."""
    out: dict[tuple[Any, Any], list[str]] = {}
    for root, dirs, names in os.walk(sales):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        files = [os.path.join(root, n) for n in names if n.endswith(".parquet")]
        if files:
            day_part, store_part = os.path.relpath(root, sales).split("/")
            key = (_value(day_part.split("=", 1)[1], int), _value(store_part.split("=", 1)[1], str))
            out[key] = files
    return out


def _canon(rows: list[Any]) -> list[tuple]:
    out = [tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row) for row in rows]
    return sorted(out, key=repr)


def _local(uri: str) -> str:
    """A local path from one of Spark's file URIs."""
    return unquote(urlparse(uri).path) if uri.startswith("file:") else uri


def _keys(df: Any, column: str) -> set[Any]:
    """The non-NULL values of a dimension column (collected by plain Spark, independently of sargable)."""
    return {row[0] for row in df.select(column).collect() if row[0] is not None}


def _expected(
    disk: dict[tuple[Any, Any], list[str]], keep: Callable[[Any, Any], bool]
) -> tuple[int, int, set[tuple[Any, Any]]]:
    """(partitions, files, partition keys) on disk that `keep(day, store)` selects."""
    chosen = {key for key in disk if keep(*key)}
    return len(chosen), sum(len(disk[k]) for k in chosen), chosen


# ------------------------------------------------------------------------------------------------ eligibility


ELIGIBILITY = [
    # (how, fact_side, prunes)
    ("inner", "left", True),
    ("left_semi", "left", True),
    ("right", "left", True),
    ("left", "left", False),
    ("full", "left", False),
    ("left_anti", "left", False),
    ("inner", "right", True),
    ("left", "right", True),
    ("left_semi", "right", True),
    ("left_anti", "right", True),
    ("right", "right", False),
    ("full", "right", False),
]


def test_fact_side_reason_follows_the_seed() -> None:
    for how, side, prunes in ELIGIBILITY:
        assert (fact_side_reason(how, side) is None) == prunes, (how, side)


@pytest.mark.parametrize(("how", "fact_side", "prunes"), ELIGIBILITY)
def test_join_kinds_prune_only_when_the_fact_is_inner(
    spark: Any,
    spark_metastore: Any,
    plain: Any,
    days: Any,
    disk: dict,
    how: str,
    fact_side: str,
    prunes: bool,
) -> None:
    dim = days.where("month = 2")
    got = sgs.join(TABLE, dim, on=[("day", "dk")], how=how, fact_side=fact_side, metastore=spark_metastore)
    condition = plain["day"] == dim["dk"]
    oracle = plain.join(dim, condition, how) if fact_side == "left" else dim.join(plain, condition, how)
    assert got.columns == oracle.columns
    assert _canon(got.collect()) == _canon(oracle.collect())

    report = sgs.scan_report(got)
    assert [p.applied for p in report.pruning] == [prunes]
    if prunes:
        wanted = _keys(dim, "dk")
        partitions, files, _ = _expected(disk, lambda day, store: day in wanted)
        assert (report.partitions_selected, report.files_selected) == (partitions, files)
        assert report.pruning[0].target == "partitions" and report.pruning[0].mode == "values"
        assert report.pruning[0].values == len(wanted)
    else:
        assert (report.partitions_selected, report.files_selected) == (len(disk), sum(map(len, disk.values())))
        assert report.pruning[0].reason and any("not pruned" in note for note in report.notes)


WRAPPED_KEYS = {
    "dim Column expression": lambda: ("day", F.col("dk") + 0),
    "fact expression text": lambda: ("day + 0", "dk"),
    "dim function text": lambda: ("day", "coalesce(dk, -1)"),
}


@pytest.mark.parametrize("variant", sorted(WRAPPED_KEYS))
def test_keys_wrapped_in_functions_join_unpruned(
    spark: Any, spark_metastore: Any, plain: Any, days: Any, disk: dict, variant: str
) -> None:
    fact_key, dim_key = WRAPPED_KEYS[variant]()
    dim = days.where("month = 1")
    got = sgs.join(TABLE, dim, on=[(fact_key, dim_key)], metastore=spark_metastore)
    report = sgs.scan_report(got)
    assert not report.pruning[0].applied and "function" in (report.pruning[0].reason or "")
    assert report.partitions_selected == len(disk)
    oracle = plain.join(dim, plain["day"] == dim["dk"])
    assert got.columns == oracle.columns
    assert _canon(got.collect()) == _canon(oracle.collect())


def test_keys_of_types_spark_casts_do_not_prune(spark: Any, spark_metastore: Any, plain: Any, disk: dict) -> None:
    dim = spark.createDataFrame([("3",), ("4",)], "dk string")
    got = sgs.join(TABLE, dim, on=[("day", "dk")], metastore=spark_metastore)
    report = sgs.scan_report(got)
    assert not report.pruning[0].applied and "cast" in (report.pruning[0].reason or "")
    assert report.partitions_selected == len(disk)
    assert _canon(got.collect()) == _canon(plain.join(dim, plain["day"] == dim["dk"]).collect())


def test_keys_of_other_exact_types_convert_to_the_fact_column(
    spark: Any, spark_metastore: Any, plain: Any, disk: dict
) -> None:
    """Decimal and bigint keys against an int partition key: values no int equals (4.5, 2**40) select nothing."""
    dim = spark.createDataFrame(
        [(Decimal("3.0"), 3), (Decimal("4.5"), 2**40), (Decimal("5.0"), 5)], "dk decimal(5,1), big bigint"
    )
    for column in ("dk", "big"):
        got = sgs.join(TABLE, dim, on=[("day", column)], metastore=spark_metastore)
        report = sgs.scan_report(got)
        assert report.pruning[0].applied, report.pruning[0].reason
        assert report.partitions_selected == _expected(disk, lambda day, store: day in (3, 5))[0]
        assert _canon(got.collect()) == _canon(plain.join(dim, plain["day"] == dim[column]).collect())


# ------------------------------------------------------------------------------------------------ pruning


def test_cascading_dimensions_intersect(
    spark: Any, spark_metastore: Any, plain: Any, days: Any, stores: Any, items: Any, disk: dict
) -> None:
    early = days.where("dk <= 6")
    even_month = days.where("month = 2")  # days 5..8: with `early`, days 5 and 6
    east = stores.where("region = 'east'")
    few = items.where("kind = 'low' and ik < 40")
    where = "amount > 10"
    df = sgs.read(
        spark,
        TABLE,
        where=where,
        prune_by=[(early, "dk", "day"), (even_month, "dk", "day"), (east, "sk", "store"), (few, "ik", "item")],
        metastore=spark_metastore,
    )
    day_keys = _keys(early, "dk") & _keys(even_month, "dk")
    store_keys, item_keys = _keys(east, "sk"), _keys(few, "ik")
    oracle = (
        plain.where(where)
        .join(early, plain["day"] == early["dk"], "left_semi")
        .join(even_month, plain["day"] == even_month["dk"], "left_semi")
        .join(east, plain["store"] == east["sk"], "left_semi")
        .join(few, plain["item"] == few["ik"], "left_semi")
    )
    assert _canon(df.collect()) == _canon(oracle.collect())
    assert df.count() > 0

    report = sgs.scan_report(df)
    partitions, files, chosen = _expected(disk, lambda day, store: day in day_keys and store in store_keys)
    assert report.partitions_selected == partitions == 4
    # Items below 40 are in the low-item files only: statistics skip the high-item files, and keep every file that
    # holds one of the items.
    chosen_files = [f for key in chosen for f in disk[key]]
    items_of = {f: set(pq.read_table(f).column("item").to_pylist()) - {None} for f in chosen_files}
    holding = {f for f in chosen_files if items_of[f] & item_keys}
    low_files = {f for f in chosen_files if items_of[f] and max(items_of[f]) < 50}
    selected = {_local(uri) for uri in df.inputFiles()}
    assert holding <= selected <= low_files
    assert report.files_selected == len(selected) < files
    assert [p.target for p in report.pruning] == ["partitions", "partitions", "partitions", "files"]
    assert report.residual is not None and "item IN" in report.residual and "amount" in report.residual
    assert report.partition_filter is None, "the static filter has no partition part; the keys prune exactly"


def test_static_partition_predicate_intersects_the_keys(
    spark: Any, spark_metastore: Any, plain: Any, days: Any, disk: dict
) -> None:
    dim = days.where("month in (1, 2)")
    where = "day >= 3 and store = 's2'"
    got = sgs.join(TABLE, dim, on=[("day", "dk")], how="left_semi", where=where, metastore=spark_metastore)
    wanted = _keys(dim, "dk")
    partitions, files, _ = _expected(disk, lambda day, store: day in wanted and day >= 3 and store == "s2")
    report = sgs.scan_report(got)
    assert (report.partitions_selected, report.files_selected) == (partitions, files) == (6, 12)
    oracle = plain.where(where).join(dim, plain["day"] == dim["dk"], "left_semi")
    assert _canon(got.collect()) == _canon(oracle.collect())


def test_max_values_falls_back_to_the_key_range(
    spark: Any, spark_metastore: Any, plain: Any, days: Any, items: Any, disk: dict
) -> None:
    dim = days.where("dk in (2, 5, 9)")
    df = sgs.read(spark, TABLE, prune_by=[(dim, "dk", "day")], max_values=2, metastore=spark_metastore)
    report = sgs.scan_report(df)
    pruning = report.pruning[0]
    assert (pruning.mode, pruning.low, pruning.high, pruning.values) == ("range", 2, 9, None)
    assert "range" in str(report)
    partitions, files, _ = _expected(disk, lambda day, store: day is not None and 2 <= day <= 9)
    assert (report.partitions_selected, report.files_selected) == (partitions, files)
    assert _canon(df.collect()) == _canon(plain.where("day between 2 and 9").collect())

    got = sgs.join(TABLE, dim, on=[("day", "dk")], max_values=2, metastore=spark_metastore)
    assert _canon(got.collect()) == _canon(plain.join(dim, plain["day"] == dim["dk"]).collect())

    few = items.where("ik in (10, 11, 200)")
    by_items = sgs.read(spark, TABLE, prune_by=[(few, "ik", "item")], max_values=1, metastore=spark_metastore)
    item_pruning = sgs.scan_report(by_items).pruning[0]
    assert (item_pruning.target, item_pruning.mode, item_pruning.low, item_pruning.high) == ("files", "range", 10, 200)
    assert _canon(by_items.collect()) == _canon(plain.where("item between 10 and 200").collect())


def test_null_keys_never_join(spark: Any, spark_metastore: Any, plain: Any, disk: dict) -> None:
    dim = spark.createDataFrame([(None, None), (4, 8), (None, 9)], "dk int, ik int")
    got = sgs.join(TABLE, dim, on=[("day", "dk"), ("item", "ik")], metastore=spark_metastore)
    oracle = plain.join(dim, (plain["day"] == dim["dk"]) & (plain["item"] == dim["ik"]))
    assert _canon(got.collect()) == _canon(oracle.collect())
    report = sgs.scan_report(got)
    assert [p.values for p in report.pruning] == [1, 2]
    partitions, _, chosen = _expected(disk, lambda day, store: day == 4)
    assert report.partitions_selected == partitions and all(day is not None for day, _ in chosen)

    only_nulls = spark.createDataFrame([(None,), (None,)], "dk int")
    empty = sgs.read(spark, TABLE, prune_by=[(only_nulls, "dk", "day")], metastore=spark_metastore)
    report = sgs.scan_report(empty)
    assert (report.partitions_selected, report.files_selected) == (0, 0)
    assert empty.count() == 0 and empty.columns == plain.columns
    # The fact's NULL partition and NULL items are never read or joined, whatever the dimension holds.
    everything = spark.createDataFrame([(d,) for d in range(0, 20)] + [(None,)], "dk int")
    got = sgs.read(spark, TABLE, prune_by=[(everything, "dk", "day")], metastore=spark_metastore)
    report = sgs.scan_report(got)
    assert report.partitions_selected == len([k for k in disk if k[0] is not None]) < len(disk)
    assert _canon(got.collect()) == _canon(plain.where("day is not null").collect())
    left = sgs.join(TABLE, everything, on=[("day", "dk")], how="left", fact_side="right", metastore=spark_metastore)
    oracle = everything.join(plain, everything["dk"] == plain["day"], "left")
    assert _canon(left.collect()) == _canon(oracle.collect())


def test_large_value_sets_stay_exact_through_a_semi_join(
    spark: Any, spark_metastore: Any, plain: Any, items: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr(sys.modules["sargable.scan"], "IN_RESIDUAL_MAX", 3)
    some = items.where("ik in (1, 3, 5, 7, 9, 97)")
    df = sgs.read(spark, TABLE, prune_by=[(some, "ik", "item")], columns=["id", "item"], metastore=spark_metastore)
    report = sgs.scan_report(df)
    assert report.residual is not None and "BETWEEN" in report.residual.upper()
    assert df.columns == ["id", "item"]
    oracle = plain.join(some, plain["item"] == some["ik"], "left_semi").select("id", "item")
    assert _canon(df.collect()) == _canon(oracle.collect())


def test_column_keys_and_bad_input(spark: Any, spark_metastore: Any, plain: Any, days: Any, disk: dict) -> None:
    dim = days.where("month = 3")
    got = sgs.join(TABLE, dim, on=[(F.col("day"), dim["dk"])], metastore=spark_metastore)
    wanted = _keys(dim, "dk")
    assert sgs.scan_report(got).partitions_selected == _expected(disk, lambda d, s: d in wanted)[0]
    assert _canon(got.collect()) == _canon(plain.join(dim, plain["day"] == dim["dk"]).collect())

    with pytest.raises(SargableError, match="how must be"):
        sgs.join(TABLE, dim, on=[("day", "dk")], how="cross", metastore=spark_metastore)
    with pytest.raises(SargableError, match="fact_side"):
        sgs.join(TABLE, dim, on=[("day", "dk")], fact_side="middle", metastore=spark_metastore)
    with pytest.raises(SargableError, match="not a column"):
        sgs.join(TABLE, dim, on=[("dayz", "dk")], metastore=spark_metastore)
    with pytest.raises(SargableError, match="not a column"):
        sgs.join(TABLE, dim, on=[("day", "dkk")], metastore=spark_metastore)
    with pytest.raises(SargableError, match="on must be"):
        sgs.join(TABLE, dim, on=[], metastore=spark_metastore)
    with pytest.raises(SargableError, match="dim must be"):
        sgs.join(TABLE, "dim", on=[("day", "dk")], metastore=spark_metastore)
    with pytest.raises(SargableError, match="max_values"):
        sgs.read(spark, TABLE, prune_by=[(dim, "dk", "day")], max_values=0, metastore=spark_metastore)
    with pytest.raises(SargableError, match="prune_by"):
        sgs.read(spark, TABLE, prune_by=[(dim, "dk")], metastore=spark_metastore)
    with pytest.raises(SargableError, match="prune_by"):
        sgs.read(spark, TABLE, prune_by="dk", metastore=spark_metastore)


@pytest.mark.parametrize("first_rows", [1, 10_000])
def test_keys_taken_first_or_as_arrow_prune_alike(
    spark: Any, spark_metastore: Any, plain: Any, days: Any, disk: dict, monkeypatch: Any, first_rows: int
) -> None:
    monkeypatch.setattr(sys.modules["sargable.spark.dimensions"], "FIRST_ROWS", first_rows)
    dim = days.where("month <= 2 or dk is null")  # days 1..8 and a NULL key
    df = sgs.read(spark, TABLE, prune_by=[(dim, "dk", "day")], metastore=spark_metastore)
    report = sgs.scan_report(df)
    assert [(p.mode, p.values) for p in report.pruning] == [("values", 8)]
    partitions, files, _ = _expected(disk, lambda day, store: day is not None and day <= 8)
    assert (report.partitions_selected, report.files_selected) == (partitions, files)
    assert _canon(df.collect()) == _canon(plain.join(dim, plain["day"] == dim["dk"], "left_semi").collect())
