"""Timestamp literals of Column filters are instants: `sgs.read` prunes as Spark compares them in the session zone.

pyspark makes a `TimestampType` literal from a naive `datetime` in the Python process's local zone, and Spark
compares that instant with a `timestamp` partition value read from its folder name in `spark.sql.session.timeZone`.
The oracle is plain Spark over the same folders with the same Column, in sessions whose zone is not the process's.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pyspark.sql import functions as F

from sargable import spark as sgs

pytest_plugins = ["conftest_spark"]

TABLE = "tz.events"
COLUMNS = ["id", "ts", "pts"]
ZONES = ["Asia/Tokyo", "America/Los_Angeles", "UTC"]
START = dt.datetime(2024, 1, 1)
# Around the end of daylight saving time in Los Angeles: 01:30 there occurs twice on 2024-11-03.
DST_END = [dt.datetime(2024, 11, 3, h, 30) for h in (0, 1, 2)]
PARTITIONS = [START + dt.timedelta(hours=h) for h in range(36)] + DST_END

T = dt.datetime
SECOND_0130 = T(2024, 11, 3, 9, 30, tzinfo=dt.UTC)
FILTERS: list[tuple[str, Callable[[], Any]]] = [
    ("pts ==", lambda: F.col("pts") == T(2024, 1, 1, 15)),
    ("pts <", lambda: F.col("pts") < T(2024, 1, 1, 10)),
    ("pts >=", lambda: F.col("pts") >= T(2024, 1, 2, 2)),
    ("pts between", lambda: F.col("pts").between(T(2024, 1, 1, 12), T(2024, 1, 1, 16))),
    ("pts isin", lambda: F.col("pts").isin(T(2024, 1, 1, 0), T(2024, 1, 1, 12), T(2024, 1, 2, 3))),
    ("pts != and", lambda: (F.col("pts") != T(2024, 1, 1, 14)) & (F.col("pts") < T(2024, 1, 1, 16))),
    ("pts or", lambda: (F.col("pts") <= T(2024, 1, 1, 1)) | (F.col("pts") > T(2024, 1, 2, 8))),
    # 09:30 UTC is the second 01:30 of 2024-11-03 in Los Angeles, a wall-clock time Spark reads as the first
    ("pts == repeated hour", lambda: F.col("pts") == SECOND_0130),
    ("pts < repeated hour", lambda: F.col("pts") < SECOND_0130),
    ("pts aware", lambda: F.col("pts") == T(2024, 1, 1, 21, tzinfo=dt.timezone(dt.timedelta(hours=9)))),
    ("ts >", lambda: F.col("ts") > T(2024, 1, 2, 6, 20)),
    ("ts between", lambda: F.col("ts").between(T(2024, 1, 1, 5), T(2024, 1, 1, 9, 40))),
    ("ts and pts", lambda: (F.col("ts") >= T(2024, 1, 1, 14)) & (F.col("pts") < T(2024, 1, 1, 18))),
]


@pytest.fixture(scope="module")
def events(spark: Any, spark_metastore: Any) -> str:
    """Rows every 20 minutes, partitioned by the hour (`pts`), written from a UTC session."""
    stamps = [(p + dt.timedelta(minutes=20 * k), p) for p in PARTITIONS for k in (0, 1)]
    rows = [(i, ts, pts) for i, (ts, pts) in enumerate(stamps)]
    df = spark.createDataFrame(rows, "id bigint, ts timestamp, pts timestamp").repartition(1)
    sgs.write(df, TABLE, partition_by=["pts"], metastore=spark_metastore, progress=False)
    return spark_metastore.get_table("tz", "events").location


@pytest.fixture(params=ZONES)
def zone(request: pytest.FixtureRequest, spark: Any) -> Iterator[str]:
    """The session time zone, set for one test and restored after it."""
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", request.param)
    try:
        yield request.param
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)


def test_column_timestamp_literals_prune_like_spark(spark: Any, spark_metastore: Any, events: str, zone: str) -> None:
    total = len(PARTITIONS) * 2
    selective = 0
    for name, build in FILTERS:
        where = build()
        plain = spark.read.parquet(events).where(where).select(*COLUMNS).collect()
        df = sgs.read(spark, TABLE, where=where, metastore=spark_metastore)
        assert sorted(df.select(*COLUMNS).collect()) == sorted(plain), (zone, name)
        report = sgs.scan_report(df)
        if name.startswith("pts") and not report.notes:
            # an exactly translated partition filter selects just the partitions holding matching rows
            assert report.partitions_selected == len({row.pts for row in plain}), (zone, name)
        selective += 0 < len(plain) < total
    # the cases are not vacuous: most select some rows and leave others, in every zone
    assert selective >= len(FILTERS) - 4, zone


def test_repeated_hour_is_left_to_spark(spark: Any, spark_metastore: Any, events: str) -> None:
    """An instant in the second occurrence of a wall-clock time has no wall-clock value Spark reads back as it."""
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        df = sgs.read(spark, TABLE, where=F.col("pts") == SECOND_0130, metastore=spark_metastore)
        assert df.count() == 0
        assert any("without pruning" in note for note in sgs.scan_report(df).notes)
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
