"""Reads without Spark of files Spark wrote (`sgs.write`): the same rows as `sgs.read` gives, for the same filters,
decimals, timestamps, NaN and a NULL partition included."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import pytest

from sargable import spark as sgs

pytest_plugins = ["conftest_spark"]

TABLE = "shop.orders"
SCHEMA = (
    "id bigint, amount double, price decimal(10,2), name string, flag boolean, ts timestamp, ds date, region string"
)
FILTERS = [
    None,
    "region is null",
    "ds = '2024-01-02' and amount > 3",
    "not (region = 'eu') or amount is null",
    "name like 'b%' or id in (1, 7, null)",
    "ts >= '2024-01-01 12:00:00' and price between 1.5 and 4",
    "lower(name) = 'ab' or flag",
]


def _rows() -> list[tuple[Any, ...]]:
    out = []
    for i in range(40):
        amount = math.nan if i % 9 == 0 else (None if i % 7 == 0 else i / 4)
        out.append(
            (
                i,
                amount,
                Decimal(i % 6) + Decimal("0.25"),
                ["ab", "b", "bc", None][i % 4],
                None if i % 5 == 0 else i % 2 == 0,
                dt.datetime(2024, 1, 1) + dt.timedelta(hours=5 * i),
                dt.date(2024, 1, 1 + i % 3),
                ["eu", "us", None][i % 3],
            )
        )
    return out


@pytest.fixture(scope="module")
def orders(spark: Any, spark_metastore: Any) -> Any:
    spark_metastore.create_database("shop", if_not_exists=True)
    df = spark.createDataFrame(_rows(), SCHEMA).repartition(2)
    sgs.write(df, TABLE, partition_by=["ds", "region"], metastore=spark_metastore, progress=False)
    return spark_metastore


def _canon(values: Any) -> tuple[Any, ...]:
    return tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in values)


@pytest.mark.parametrize("where", FILTERS)
def test_reading_spark_files_gives_what_spark_reads(spark: Any, orders: Any, where: str | None) -> None:
    scan = orders.table(TABLE).scan(where)
    table = scan.to_arrow()
    names = table.column_names
    ours = sorted((_canon(r.values()) for r in table.to_pylist()), key=repr)
    spark_rows = sgs.read(spark, TABLE, where=where, metastore=orders).collect()
    theirs = sorted((_canon(r[n] for n in names) for r in spark_rows), key=repr)
    assert ours == theirs and ours
