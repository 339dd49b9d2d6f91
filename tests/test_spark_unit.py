"""sargable.spark's parts in isolation: type mapping, Spark filter and Column translation, file grouping, files."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

import sargable as sg
from sargable.errors import SargableError
from sargable.fs import FileSystem, hidden
from sargable.spark.catalog import split_table_name
from sargable.spark.datasource import group_files
from sargable.spark.schema import hive_type, spark_type, struct_type
from sargable.spark.translate import Untranslatable, from_column, from_filter, split_column
from sargable.types import parse_type

pytest_plugins = ["conftest_spark"]

a, s, d = sg.col("a"), sg.col("s"), sg.col("d")


@pytest.mark.parametrize(
    ("spark_dtype", "hive"),
    [
        (T.StringType(), "string"),
        (T.ByteType(), "tinyint"),
        (T.ShortType(), "smallint"),
        (T.IntegerType(), "int"),
        (T.LongType(), "bigint"),
        (T.FloatType(), "float"),
        (T.DoubleType(), "double"),
        (T.DecimalType(12, 3), "decimal(12,3)"),
        (T.DateType(), "date"),
        (T.TimestampType(), "timestamp"),
        (T.BooleanType(), "boolean"),
    ],
)
def test_spark_and_hive_types_map_both_ways(spark_dtype: T.DataType, hive: str) -> None:
    assert hive_type(spark_dtype) == parse_type(hive)
    assert spark_type(parse_type(hive)) == spark_dtype


def test_char_varchar_and_ntz_types() -> None:
    assert hive_type(T.VarcharType(10)) == parse_type("varchar(10)")
    assert spark_type(parse_type("char(3)")) == T.StringType()
    assert hive_type(T.TimestampNTZType()) == parse_type("timestamp")
    assert spark_type(parse_type("timestamp"), ntz=True) == T.TimestampNTZType()
    struct = struct_type([("ts", parse_type("timestamp")), ("t2", parse_type("timestamp"))], ntz=["t2"])
    assert [f.dataType for f in struct.fields] == [T.TimestampType(), T.TimestampNTZType()]


@pytest.mark.parametrize(
    "spark_dtype",
    [
        T.DayTimeIntervalType(),
        T.ArrayType(T.YearMonthIntervalType()),
        T.StructType([T.StructField("t", T.TimestampNTZType())]),
    ],
)
def test_unsupported_spark_types_name_the_column(spark_dtype: T.DataType) -> None:
    with pytest.raises(SargableError, match="column payload"):
        hive_type(spark_dtype, "payload")


def test_complex_spark_types_are_hive_types_and_back() -> None:
    """Issue 30: `sgs.write` of an array<string> column failed with "which a sargable table can't hold"."""
    device = T.StructType([T.StructField("os", T.StringType()), T.StructField("n", T.ArrayType(T.LongType()))])
    cases = {
        "binary": T.BinaryType(),
        "array<int>": T.ArrayType(T.IntegerType()),
        "map<string,bigint>": T.MapType(T.StringType(), T.LongType()),
        "struct<os:string,n:array<bigint>>": device,
        "array<map<string,struct<os:string,n:array<bigint>>>>": T.ArrayType(T.MapType(T.StringType(), device)),
        "decimal(38,38)": T.DecimalType(38, 38),
    }
    for hive, spark in cases.items():
        assert str(hive_type(spark, "c")) == hive
        assert spark_type(parse_type(hive)) == spark


@pytest.mark.parametrize(
    ("spark_filter", "expected"),
    [
        (EqualTo(("a",), 1), a.eq(1)),
        (EqualNullSafe(("a",), None), a.null_safe_eq(None)),
        (GreaterThan(("a",), 1.5), a > 1.5),
        (GreaterThanOrEqual(("d",), dt.date(2024, 1, 2)), d >= dt.date(2024, 1, 2)),
        (LessThan(("s",), "x"), s < "x"),
        (LessThanOrEqual(("a",), Decimal("2.50")), a <= Decimal("2.50")),
        (In(("a",), (1, 2, 3)), a.isin(1, 2, 3)),
        (IsNull(("a",)), a.is_null()),
        (IsNotNull(("a",)), a.is_not_null()),
        (Not(EqualTo(("a",), 1)), sg.expr.Not(a.eq(1))),
        (Not(Not(IsNull(("a",)))), sg.expr.Not(sg.expr.Not(a.is_null()))),
        (StringStartsWith(("s",), "a%_\\"), s.like("a\\%\\_\\\\%", "\\")),
        (StringEndsWith(("s",), "z"), s.like("%z", "\\")),
        (StringContains(("s",), "mid"), s.like("%mid%", "\\")),
    ],
)
def test_spark_filters_translate(spark_filter: object, expected: sg.Expr) -> None:
    assert from_filter(spark_filter) == expected


@pytest.mark.parametrize(
    "spark_filter", [EqualTo(("a", "b"), 1), EqualTo(("a",), [1, 2]), In(("a",), ([1],)), Not(EqualTo(("s", "t"), 1))]
)
def test_untranslatable_spark_filters_are_refused(spark_filter: object) -> None:
    with pytest.raises(Untranslatable):
        from_filter(spark_filter)


@settings(max_examples=200)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=400 * 1024 * 1024), max_size=60),
    min_splits=st.integers(min_value=1, max_value=20),
)
def test_file_groups_keep_every_file_once_in_order(sizes: list[int], min_splits: int) -> None:
    files = [(f"f{i}", size, (i,)) for i, size in enumerate(sizes)]
    groups = group_files(files, min_splits)
    flattened = [entry for group in groups for entry in group.files]
    assert flattened == [(path, values) for path, _, values in files]
    assert all(group.files for group in groups)
    if files:
        assert min(len(files), min_splits) <= len(groups) <= len(files)


def test_split_table_name() -> None:
    assert split_table_name("sales.events") == ("sales", "events")
    for bad in ["events", "a.b.c", ".x", "x.", 3, None]:
        with pytest.raises(SargableError, match=r"db\.table"):
            split_table_name(bad)


def test_file_system_lists_and_moves_without_following_symlinks(tmp_path: os.PathLike) -> None:
    root = os.path.join(tmp_path, "t")
    os.makedirs(os.path.join(root, "ds=1", "_hidden"))
    os.makedirs(os.path.join(tmp_path, "elsewhere"))
    for name in ["ds=1/a.parquet", "ds=1/.a.parquet.crc", "ds=1/_SUCCESS", "ds=1/_hidden/x", "b.parquet"]:
        with open(os.path.join(root, name), "w") as handle:
            handle.write("x" * len(name))
    with open(os.path.join(tmp_path, "elsewhere", "c.parquet"), "w") as handle:
        handle.write("c")
    os.symlink(os.path.join(tmp_path, "elsewhere"), os.path.join(root, "ds=2"))
    os.symlink(os.path.join(tmp_path, "elsewhere", "c.parquet"), os.path.join(root, "ds=1", "c.parquet"))
    fs = FileSystem.at(root)
    listed = {e.path[len(root) + 1 :]: e.kind for e in fs.walk(root)}
    assert listed == {
        "b.parquet": "file",
        "ds=1": "directory",
        "ds=1/a.parquet": "file",
        "ds=1/.a.parquet.crc": "file",
        "ds=1/_SUCCESS": "file",
        "ds=1/_hidden": "directory",
        "ds=1/_hidden/x": "file",
        "ds=1/c.parquet": "symlink",
        "ds=2": "symlink",
    }
    visible = [e.path for e in fs.walk(root, lambda e: not hidden(e.path.rsplit("/", 1)[1]))]
    assert f"{root}/ds=1/_hidden/x" not in visible and f"{root}/ds=1/a.parquet" in visible
    assert fs.info(f"{root}/ds=2").kind == "symlink" and fs.info(f"{root}/missing") is None
    fs.move(f"{root}/b.parquet", f"{root}/ds=3/b.parquet")
    assert os.path.exists(f"{root}/ds=3/b.parquet") and not os.path.exists(f"{root}/b.parquet")


def test_columns_translate(spark: object) -> None:
    cases = [
        (F.col("a") > 5, a > 5),
        (
            (F.col("d") >= dt.date(2024, 1, 1)) & F.col("s").like("x%"),
            sg.and_(d >= dt.date(2024, 1, 1), s.like("x%", "\\")),
        ),
        (F.col("a").isin(1, 2) | F.col("s").isNull(), sg.or_(a.isin(1, 2), s.is_null())),
        (F.col("a") != 3, sg.expr.Not(a.eq(3))),
        (~(F.col("s") == "it's"), sg.expr.Not(s.eq("it's"))),
        (F.col("a").between(1, 3), sg.and_(a >= 1, a <= 3)),
        (F.col("a").eqNullSafe(None), a.null_safe_eq(None)),
        (F.col("s").startswith("a_b"), s.like("a\\_b%", "\\")),
        (F.col("s").endswith("z"), s.like("%z", "\\")),
        (F.col("s").contains("%"), s.like("%\\%%", "\\")),
        (F.col("s").rlike("^a.*"), sg.expr.Regex(s, "^a.*")),
        (F.col("a").isNotNull(), a.is_not_null()),
        (F.lit(3) < F.col("a"), sg.expr.Comparison("<", sg.lit(3), a)),
        (F.col("t") == dt.datetime(2024, 1, 2, 3, 4, 5), sg.col("t").eq(dt.datetime(2024, 1, 2, 3, 4, 5))),
        (F.col("p") == Decimal("1.50"), sg.col("p").eq(Decimal("1.50"))),
        (F.expr("a > 5 and s = 'x'"), sg.and_(a > 5, s.eq("x"))),
    ]
    for column, expected in cases:
        assert from_column(column) == expected, str(column)


def test_untranslatable_conjuncts_are_left_to_spark(spark: object) -> None:
    expr, leftover = split_column((F.col("a") > 1) & (F.upper("s") == "X") & (F.col("a") + 1 > F.col("b")))
    assert expr == (a > 1)
    assert len(leftover) == 2
    assert "upper" in str(leftover[0])
    expr, leftover = split_column(F.upper("s") == "X")
    assert expr is None and len(leftover) == 1


def test_sql_text_with_a_backslash_is_left_to_spark(spark: object) -> None:
    """Spark SQL reads `'a\\tb'` as a tab and the filter parser as a backslash and a `t`: such text is Spark's to
    apply, never pruned on the other reading (issue 27: `sgs.read` lost the rows of a value with a tab)."""
    expr, leftover = split_column(F.expr("a > 1") & F.expr("s = 'a\\tb'") & F.expr("s LIKE 'x\\%%'"))
    assert expr == (a > 1)
    assert len(leftover) == 2
    with pytest.raises(Untranslatable, match="backslash"):
        from_column(F.expr("s = 'it\\'s'"))
