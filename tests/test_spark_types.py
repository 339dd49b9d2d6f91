"""Every column type of a Spark Parquet table through sargable (issue 30 item 1): written by `sgs.write`, recorded
by the metastore with its Hive type, read back by `sgs.read` and the `sargable` data source equal to the source
rows. One small table per type, on the shared session."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from sargable import spark as sgs
from sargable.errors import SargableError
from sargable.types import float32

pytest_plugins = ["conftest_spark"]

T = pytest.importorskip("pyspark.sql.types")

UTC = dt.UTC
CASES: list[tuple[str, Any, str, list[Any]]] = [
    ("tags", T.ArrayType(T.StringType()), "array<string>", [["a", "b"], [], None, ["a", None]]),
    ("props", T.MapType(T.StringType(), T.StringType()), "map<string,string>", [{"k": "v", "j": None}, {}, None]),
    (
        "device",
        T.StructType([T.StructField("os", T.StringType()), T.StructField("version", T.StringType())]),
        "struct<os:string,version:string>",
        [("ios", "17"), None, (None, "1")],
    ),
    (
        "items",
        T.ArrayType(
            T.StructType(
                [
                    T.StructField("sku", T.StringType()),
                    T.StructField("qty", T.IntegerType()),
                    T.StructField("tags", T.MapType(T.StringType(), T.ArrayType(T.LongType()))),
                ]
            )
        ),
        "array<struct<sku:string,qty:int,tags:map<string,array<bigint>>>>",
        [[("a", 1, {"x": [1, 2]}), ("b", None, None)], [], None],
    ),
    ("blob", T.BinaryType(), "binary", [bytearray(b"\x00\xff"), bytearray(b""), None]),
    (
        "amount",
        T.DecimalType(38, 10),
        "decimal(38,10)",
        [Decimal("1234567890123456789012345678.0123456789"), Decimal("-0.0000000001"), None],
    ),
    ("small", T.DecimalType(5, 2), "decimal(5,2)", [Decimal("123.45"), None]),
    ("ts", T.TimestampType(), "timestamp", [dt.datetime(2024, 3, 1, 12, 30, 1, 5, tzinfo=UTC), None]),
    ("ntz", T.TimestampNTZType(), "timestamp", [dt.datetime(1900, 1, 1, 0, 0, 0, 1), None]),
    ("day", T.DateType(), "date", [dt.date(2024, 2, 29), dt.date(1, 1, 1), None]),
]


@pytest.fixture(scope="module")
def written(spark, spark_metastore) -> dict[str, Any]:
    """One table with a column of each type (rows past a column's values NULL), written once and read back once
    through `sgs.read` and once through the data source."""
    width = max(len(values) for *_, values in CASES)
    fields = [T.StructField("id", T.IntegerType())] + [T.StructField(c, t) for c, t, *_ in CASES]
    rows = [(i, *(v[i] if i < len(v) else None for *_, v in CASES)) for i in range(width)]
    source = spark.createDataFrame(rows, T.StructType(fields))
    sgs.write(source, "types.every", partition_by=[], metastore=spark_metastore, progress=False)
    sgs.register(spark, spark_metastore)  # the shared session's data source reads this module's metastore
    read = sgs.read(spark, "types.every", metastore=spark_metastore)
    return {
        "source": source.orderBy("id").collect(),
        "table": dict(spark_metastore.table("types.every").columns),
        "read": read.orderBy("id").collect(),
        "read_schema": read.schema,
        "source_read": spark.read.format("sargable").load("types.every").orderBy("id").collect(),
    }


@pytest.mark.parametrize(("column", "spark_type", "hive", "values"), CASES, ids=[c[0] for c in CASES])
def test_every_type_round_trips(written, column, spark_type, hive, values) -> None:
    assert str(written["table"][column]) == hive
    assert written["read_schema"][column].dataType == spark_type
    expected = [row[column] for row in written["source"]]
    assert [row[column] for row in written["read"]] == expected
    assert [row[column] for row in written["source_read"]] == expected


def test_char_and_varchar_columns_take_strings(spark, spark_metastore) -> None:
    spark_metastore.create_table("types", "chars", [("id", "int"), ("code", "char(3)"), ("label", "varchar(8)")])
    source = spark.createDataFrame([(1, "abc", "label"), (2, None, "")], "id int, code string, label string")
    sgs.write(source, "types.chars", mode="append", metastore=spark_metastore, progress=False)
    read = sgs.read(spark, "types.chars", metastore=spark_metastore)
    assert [tuple(r) for r in read.orderBy("id").collect()] == [(1, "abc", "label"), (2, None, "")]


def test_timestamp_ntz_inside_a_struct_is_refused_clearly(spark, spark_metastore) -> None:
    schema = "id int, s struct<at:timestamp_ntz>"
    source = spark.createDataFrame([(1, (dt.datetime(2024, 1, 1),))], schema)
    with pytest.raises(SargableError, match="column s holds a timestamp_ntz inside"):
        sgs.write(source, "types.nested_ntz", partition_by=[], metastore=spark_metastore, progress=False)


def test_struct_fields_filter_and_old_files_read_through_schema_changes(spark, spark_metastore) -> None:
    """`device.os = 'ios'` skips by the struct field's statistics; after columns and a struct field are added and
    `n`, `f` widened, files written before read NULL for what is new and their values widened, and a widened float
    is compared as the double it is (0.1f > 0.1)."""
    ms, name = spark_metastore, "types.evolving"
    sgs.register(spark, ms)  # the shared session's data source reads this module's metastore
    old = "n int, f float, device struct<os:string,version:string>"
    first = spark.createDataFrame([(1, 0.1, ("ios", "17"))], old)
    sgs.write(first, name, partition_by=[], metastore=ms, progress=False)
    sgs.write(spark.createDataFrame([(2, 2.5, ("android", "14"))], old), name, metastore=ms, progress=False)
    ios = sgs.read(spark, name, where="device.os = 'ios'", metastore=ms)
    assert [r.n for r in ios.collect()] == [1]
    assert sgs.scan_report(ios).files_selected == 1 < sgs.scan_report(ios).files_total

    ms.table(name).add_columns([("tags", "array<string>"), ("device.model", "string")]).widen("n", "bigint")
    ms.table(name).widen("f", "double")
    new = "n bigint, f double, device struct<os:string,version:string,model:string>, tags array<string>"
    rows = [(3_000_000_000, 0.1, ("ios", "18", "x"), ["t"])]
    sgs.write(spark.createDataFrame(rows, new), name, metastore=ms, progress=False)
    read = sgs.read(spark, name, metastore=ms)
    assert str(read.schema["n"].dataType) == "LongType()" and str(read.schema["f"].dataType) == "DoubleType()"
    single = float32(0.1)
    assert sorted(tuple(r) for r in read.collect()) == [
        (1, single, ("ios", "17", None), None),
        (2, 2.5, ("android", "14", None), None),
        (3_000_000_000, 0.1, ("ios", "18", "x"), ["t"]),
    ]
    above = sgs.read(spark, name, where="f > 0.1 and device.model is null", metastore=ms)
    assert sorted(r.n for r in above.collect()) == [1, 2]
    pushed = spark.read.format("sargable").load(name).where("f > 0.1")
    assert sorted(r.n for r in pushed.collect()) == [1, 2]
    model = sgs.read(spark, name, where="device.model = 'x'", metastore=ms)
    assert [r.n for r in model.collect()] == [3_000_000_000]
    assert sgs.scan_report(model).files_selected == 1, "the files written before the field was added are skipped"
