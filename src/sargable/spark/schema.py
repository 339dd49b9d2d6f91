"""Spark SQL types <-> the metastore's Hive types, and the Spark schema of a metastore table.

The metastore keeps Hive type names; Spark reads a table with the Spark type of each: `string`, `varchar(n)`
and `char(n)` read as `StringType` (Spark refuses char/varchar in a read schema), `timestamp` as `TimestampType`
unless the table property `spark.timestamp_ntz_columns` lists the column (written from a `TimestampNTZType`);
`binary`, `array<T>`, `map<K,V>` and `struct<...>` (nested to any depth) as their Spark types.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pyspark.sql import types as T

from sargable.errors import SargableError, TypeCoercionError
from sargable.types import DataType, decimal_type, parse_type

NTZ_PROPERTY = "spark.timestamp_ntz_columns"
"""Table property: comma-separated timestamp columns written from Spark's `TimestampNTZType`."""

_TO_HIVE: dict[type, str] = {
    T.StringType: "string",
    T.ByteType: "tinyint",
    T.ShortType: "smallint",
    T.IntegerType: "int",
    T.LongType: "bigint",
    T.FloatType: "float",
    T.DoubleType: "double",
    T.DateType: "date",
    T.TimestampType: "timestamp",
    T.TimestampNTZType: "timestamp",
    T.BooleanType: "boolean",
    T.BinaryType: "binary",
}

_TO_SPARK: dict[str, T.DataType] = {
    "string": T.StringType(),
    "varchar": T.StringType(),
    "char": T.StringType(),
    "tinyint": T.ByteType(),
    "smallint": T.ShortType(),
    "int": T.IntegerType(),
    "bigint": T.LongType(),
    "float": T.FloatType(),
    "double": T.DoubleType(),
    "date": T.DateType(),
    "timestamp": T.TimestampType(),
    "boolean": T.BooleanType(),
}


def hive_type(spark_type: T.DataType, column: str = "?") -> DataType:
    """The Hive type of a Spark type, complex ones (`array<string>`, `map<string,int>`, `struct<os:string>`, nested
    to any depth) and `binary` included. A `TimestampNTZType` inside a complex type is an error: the table property
    that marks NTZ columns names top-level columns only."""
    if isinstance(spark_type, T.DecimalType):
        return decimal_type(spark_type.precision, spark_type.scale)
    if isinstance(spark_type, T.VarcharType):
        return parse_type(f"varchar({spark_type.length})")
    if isinstance(spark_type, T.CharType):
        return parse_type(f"char({spark_type.length})")
    if isinstance(spark_type, (T.ArrayType, T.MapType, T.StructType)):
        try:
            return parse_type(str(_complex(spark_type, column)))
        except TypeCoercionError as exc:
            raise SargableError(f"column {column} has Spark type {spark_type.simpleString()}: {exc}") from None
    name = _TO_HIVE.get(type(spark_type))
    if name is None:
        raise SargableError(
            f"column {column} has Spark type {spark_type.simpleString()}, which a sargable table can't hold; "
            "supported: string, char, varchar, tinyint, smallint, int, bigint, float, double, decimal, date, "
            "timestamp, timestamp_ntz, boolean, binary, and arrays, maps and structs of them"
        )
    return parse_type(name)


def _complex(spark_type: T.DataType, column: str) -> DataType:
    """The Hive type of a Spark array, map or struct (validated by `parse_type` of its text)."""
    if isinstance(spark_type, T.TimestampNTZType):
        raise SargableError(
            f"column {column} holds a timestamp_ntz inside an array, map or struct, which a sargable table can't "
            "hold (only top-level timestamp_ntz columns are marked as such); cast it to timestamp"
        )
    if isinstance(spark_type, T.ArrayType):
        return DataType("array", children=(_complex(spark_type.elementType, column),))
    if isinstance(spark_type, T.MapType):
        return DataType("map", children=(_complex(spark_type.keyType, column), _complex(spark_type.valueType, column)))
    if isinstance(spark_type, T.StructType):
        children = tuple(_complex(f.dataType, column) for f in spark_type.fields)
        return DataType("struct", children=children, field_names=tuple(f.name for f in spark_type.fields))
    return hive_type(spark_type, column)


def spark_type(dtype: DataType, *, ntz: bool = False) -> T.DataType:
    """The Spark type a column of Hive type `dtype` is read as (binary and nested array, map, struct included;
    `ntz` applies to a top-level timestamp, as the table property names columns)."""
    if dtype.name == "decimal":
        assert dtype.precision is not None and dtype.scale is not None
        return T.DecimalType(dtype.precision, dtype.scale)
    if dtype.name == "timestamp" and ntz:
        return T.TimestampNTZType()
    if dtype.name == "binary":
        return T.BinaryType()
    if dtype.name == "array":
        return T.ArrayType(spark_type(dtype.children[0]), True)
    if dtype.name == "map":
        return T.MapType(spark_type(dtype.children[0]), spark_type(dtype.children[1]), True)
    if dtype.name == "struct":
        fields = zip(dtype.field_names, dtype.children, strict=True)
        return T.StructType([T.StructField(name, spark_type(child), True) for name, child in fields])
    return _TO_SPARK[dtype.name]


def ntz_columns(properties: dict[str, str]) -> set[str]:
    """Timestamp columns the table property marks as written from `TimestampNTZType`."""
    return {name for name in properties.get(NTZ_PROPERTY, "").split(",") if name}


def struct_type(schema: Sequence[tuple[str, DataType]], ntz: Iterable[str] = ()) -> T.StructType:
    """A Spark schema (all fields nullable) for `(name, Hive type)` pairs."""
    ntz_set = set(ntz)
    return T.StructType([T.StructField(name, spark_type(dtype, ntz=name in ntz_set), True) for name, dtype in schema])


def table_struct(table: object) -> T.StructType:
    """The Spark schema of a metastore table: data columns, then partition keys (how Spark orders them)."""
    return struct_type(table.schema, ntz_columns(table.properties))  # type: ignore[attr-defined]
