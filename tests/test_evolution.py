"""Schema evolution (issue 30 item 2): `Table.add_columns` / `Table.widen`, `sargable alter`, and Hive's
`alter_table` through the server, by Hive's and Spark's rules: nullable columns and struct fields added at the end,
types widened within their family, everything else refused with an error naming the column and both types."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sargable as sg
from sargable.cli import main
from sargable.metastore import Metastore
from sargable.metastore.evolution import field_path, split_path, widens
from sargable.types import parse_type

COLUMNS = (("x", "int"), ("f", "float"), ("d", "decimal(10,2)"))


def _table(metastore, tmp_path, columns=COLUMNS, keys=(("ds", "string"),), partition=None):
    metastore.create_database("d")
    metastore.create_table("d", "t", list(columns), list(keys), str(tmp_path / "t"))
    table = metastore.table("d", "t")
    table.add_files([sg.FileStats(str(tmp_path / "t/ds=a/a.parquet"), 3, 30, partition=partition or {"ds": "a"})])
    return table


WIDENINGS = [
    ("tinyint", "smallint"),
    ("tinyint", "bigint"),
    ("smallint", "int"),
    ("int", "bigint"),
    ("float", "double"),
    ("decimal(10,2)", "decimal(12,2)"),
    ("decimal(10,2)", "decimal(12,4)"),
    ("varchar(5)", "varchar(9)"),
    ("varchar(5)", "string"),
    ("char(3)", "string"),
    ("struct<a:int>", "struct<a:bigint,b:string>"),
    ("array<int>", "array<bigint>"),
    ("map<string,float>", "map<string,double>"),
]
REFUSED = [
    ("bigint", "int"),
    ("int", "smallint"),
    ("double", "float"),
    ("int", "double"),
    ("int", "string"),
    ("string", "int"),
    ("decimal(10,2)", "decimal(9,2)"),
    ("decimal(10,2)", "decimal(10,3)"),
    ("decimal(10,2)", "decimal(12,1)"),
    ("date", "timestamp"),
    ("varchar(9)", "varchar(5)"),
    ("string", "varchar(5)"),
    ("struct<a:int,b:int>", "struct<a:int>"),
    ("struct<a:int,b:int>", "struct<b:int,a:int>"),
    ("map<int,int>", "map<bigint,int>"),
    ("array<int>", "int"),
]


@pytest.mark.parametrize(("old", "new"), WIDENINGS)
def test_widenings_allowed(old, new):
    assert widens(parse_type(old), parse_type(new))


@pytest.mark.parametrize(("old", "new"), REFUSED)
def test_narrowing_and_cross_family_refused(old, new):
    assert not widens(parse_type(old), parse_type(new))


_name = st.text(st.sampled_from("ab.`c_"), min_size=1, max_size=4)


@given(st.lists(_name, min_size=1, max_size=4))
def test_column_paths_round_trip(parts):
    assert split_path(field_path(parts)) == parts


def test_add_columns_and_nested_fields(metastore, tmp_path):
    table = _table(metastore, tmp_path)
    table = table.add_columns([("device", "struct<os:string,version:string>"), ("tags", "array<string>")])
    table = table.add_columns([("device.model", "string")])
    assert dict(table.columns)["device"] == parse_type("struct<os:string,version:string,model:string>")
    assert metastore.table("d", "t").columns == table.columns
    with pytest.raises(sg.SchemaChangeError, match="exists already"):
        table.add_columns([("X", "int")])
    with pytest.raises(sg.SchemaChangeError, match="already has a field 'os'"):
        table.add_columns([("device.os", "int")])
    with pytest.raises(sg.SchemaChangeError, match="'tags' is array<string>, not a struct"):
        table.add_columns([("tags.n", "int")])
    with pytest.raises(sg.SchemaChangeError, match="no column 'nope'"):
        table.add_columns([("nope.n", "int")])
    assert [f.path for f in table.scan("device IS NULL").files] == [str(tmp_path / "t/ds=a/a.parquet")]


@pytest.mark.parametrize(
    ("column", "new", "expected"),
    [("x", "bigint", "bigint"), ("f", "double", "double"), ("d", "decimal(14,4)", "decimal(14,4)")],
)
def test_widen_records_the_old_type(metastore, tmp_path, column, new, expected):
    table = _table(metastore, tmp_path)
    old = dict(table.columns)[column]
    version = table.refresh().version
    table = table.widen(column, new)
    assert str(dict(table.columns)[column]) == expected
    assert table.version == version + 1
    assert dict(metastore.table("d", "t").definition.widened) == {column: old}
    assert dict(table.widen(column, new).definition.widened) == {column: old}, "the first old type is kept"


@pytest.mark.parametrize(
    ("column", "new"),
    [("x", "smallint"), ("x", "string"), ("x", "double"), ("f", "decimal(10,2)"), ("d", "decimal(10,3)"), ("f", "int")],
)
def test_widen_refuses_narrowing_and_other_families(metastore, tmp_path, column, new):
    table = _table(metastore, tmp_path)
    old = dict(table.columns)[column]
    with pytest.raises(sg.SchemaChangeError, match=re.escape(f"column {column!r} can't change from {old} to {new}")):
        table.widen(column, new)
    assert metastore.table("d", "t").columns == table.columns, "nothing changed"


def test_widen_nested_field(metastore, tmp_path):
    table = _table(metastore, tmp_path, columns=[("device", "struct<os:string,n:struct<v:int>>")])
    table = table.widen("device.n.v", "bigint")
    assert str(dict(table.columns)["device"]) == "struct<os:string,n:struct<v:bigint>>"
    assert dict(table.definition.widened) == {"device.n.v": parse_type("int")}
    with pytest.raises(sg.SchemaChangeError, match=re.escape("'device.os' can't change from string to int")):
        table.widen("device.os", "int")
    with pytest.raises(sg.SchemaChangeError, match="widen its fields one by one"):
        table.widen("device", "struct<os:string>")


def test_partition_keys_widen_only_where_their_encoding_stays(metastore, tmp_path):
    keys = [("ds", "varchar(10)"), ("hr", "int")]
    table = _table(metastore, tmp_path, keys=keys, partition={"ds": "a", "hr": 1})
    with pytest.raises(sg.SchemaChangeError, match="partition key 'hr' can't change from int to bigint"):
        table.widen("hr", "bigint")
    table = table.widen("ds", "string")
    assert dict(table.partition_keys)["ds"] == parse_type("string")
    table.add_partitions([{"ds": "b", "hr": 2}])
    assert [p.name for p in table.partitions("ds >= 'a'")] == ["ds=a/hr=1", "ds=b/hr=2"]
    assert [f.path for f in table.scan("ds = 'a' and hr = 1").files] == [str(tmp_path / "t/ds=a/a.parquet")]


def test_alter_table_with_files_follows_the_rules(metastore, tmp_path):
    _table(metastore, tmp_path)
    with pytest.raises(sg.SchemaChangeError, match="'x' can't change from int to string"):
        metastore.alter_table("d", "t", columns=[("x", "string"), ("f", "float"), ("d", "decimal(10,2)")])
    new = metastore.alter_table("d", "t", columns=[("x", "bigint"), ("f", "double"), ("d", "decimal(10,2)")])
    assert dict(new.widened) == {"x": parse_type("int"), "f": parse_type("float")}
    with pytest.raises(sg.SchemaChangeError, match="can't be dropped"):
        metastore.alter_table("d", "t", columns=[("x", "bigint")])


# ------------------------------------------------------------------------------- the command line and the server


def test_sargable_alter_on_the_command_line(capsys, metastore, metastore_url, tmp_path):
    _table(metastore, tmp_path)
    argv = ["--metastore", metastore_url, "alter", "d.t", "--json"]
    add = "device struct<os:string,version:string>, props map<string,string>"
    assert main([*argv, "--add-columns", add, "--widen", "x:bigint", "--widen", "d:decimal(12,2)"]) == 0
    row = json.loads(capsys.readouterr().out)
    expected = "x bigint, f float, d decimal(12,2), device struct<os:string,version:string>, props map<string,string>"
    assert row["columns"] == expected
    assert ", ".join(f"{n} {t}" for n, t in metastore.table("d", "t").columns) == expected
    assert main([*argv, "--add-columns", "device.model string"]) == 0
    capsys.readouterr()
    assert main([*argv, "--widen", "x:int"]) == 1
    assert "column 'x' can't change from bigint to int" in capsys.readouterr().err
    assert main([*argv, "--widen", "x"]) == 1
    assert "COLUMN:TYPE" in capsys.readouterr().err
    assert str(dict(metastore.table("d", "t").columns)["x"]) == "bigint"


def _thrift_table(handler, name):
    """The table of a `get_table` reply's bytes, as a client decodes them."""
    from pymetastore.hive_metastore import ttypes
    from thrift.protocol.TBinaryProtocol import TBinaryProtocol
    from thrift.transport.TTransport import TMemoryBuffer

    encoded = handler.get_table("d", name)
    handler.end_call()
    table = ttypes.Table()
    table.read(TBinaryProtocol(TMemoryBuffer(bytes(encoded.head))))
    return table


@pytest.mark.parametrize(
    ("old", "new", "allowed"),
    [
        ("int", "bigint", True),
        ("float", "double", True),
        ("decimal(10,2)", "decimal(20,4)", True),
        ("struct<os:string>", "struct<os:string,version:string>", True),
        ("bigint", "int", False),
        ("int", "string", False),
        ("decimal(10,2)", "decimal(10,4)", False),
    ],
)
def test_hive_change_column_through_the_server(metastore_url, tmp_path, old, new, allowed):
    """Hive's `ALTER TABLE t CHANGE COLUMN c c NEW` sends `alter_table` with the new columns: a widening is
    taken, anything else is Hive's InvalidOperationException naming the column and both types."""
    pytest.importorskip("pymetastore")
    from pymetastore.hive_metastore import ttypes

    from sargable.hms.catalog import Catalog
    from sargable.hms.handler import Handler
    from sargable.hms.pool import CatalogPool

    with Metastore.open(metastore_url, warehouse=tmp_path / "w") as ms:
        ms.create_database("d")
        ms.create_table("d", "t", [("c", old)], [("ds", "string")], str(tmp_path / "t"))
        ms.table("d", "t").add_files([sg.FileStats(str(tmp_path / "t/ds=a/a.parquet"), 3, 30, partition={"ds": "a"})])
    pool = CatalogPool(lambda: Catalog(Metastore.open(metastore_url, warehouse=tmp_path / "w")), 1)
    handler = Handler(pool)
    try:
        table = _thrift_table(handler, "t")
        table.sd.cols = [ttypes.FieldSchema("c", new, None)]
        if allowed:
            handler.alter_table("d", "t", table)
        else:
            with pytest.raises(ttypes.InvalidOperationException, match=re.escape(f"'c' can't change from {old}")):
                handler.alter_table("d", "t", table)
        handler.end_call()
        assert [t.type for t in _thrift_table(handler, "t").sd.cols] == [new if allowed else old]
        key = _thrift_table(handler, "t")
        key.partitionKeys = [ttypes.FieldSchema("ds", "int", None)]
        with pytest.raises(ttypes.InvalidOperationException, match="partition key 'ds' can't change"):
            handler.alter_table("d", "t", key)
        handler.end_call()
    finally:
        pool.close()


# ----------------------------------------------------------------------- skipping through schema changes (item 3)


def _parquet(path, columns: dict, schema: pa.Schema) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns, schema=schema), path)
    return str(path)


def _register(table, path: str, partition: dict) -> None:
    table.refresh().add_files([sg.stats_from_parquet(path, table.refresh().schema, partition=partition)])


def _kept(table, where: str) -> list[str]:
    return sorted(Path(f.path).name for f in table.refresh().scan(where).files)


def test_files_written_before_a_column_was_added_read_it_as_all_null(metastore, tmp_path):
    metastore.create_database("d")
    metastore.create_table("d", "t", [("x", "int")], [("ds", "string")], str(tmp_path / "t"))
    table = metastore.table("d", "t")
    old = _parquet(tmp_path / "t/ds=a/old.parquet", {"x": [1, 2]}, pa.schema([("x", pa.int32())]))
    _register(table, old, {"ds": "a"})
    table = table.refresh().add_columns([("c", "int"), ("device", "struct<os:string>")])
    new = _parquet(
        tmp_path / "t/ds=a/new.parquet",
        {"x": [3], "c": [5], "device": [{"os": "ios"}]},
        pa.schema([("x", pa.int32()), ("c", pa.int32()), ("device", pa.struct([("os", pa.string())]))]),
    )
    _register(table, new, {"ds": "a"})
    bare = sg.FileStats(str(tmp_path / "t/ds=a/bare.parquet"), 4, 40, partition={"ds": "a"})
    table.refresh().add_files([bare])  # registered after the add, without statistics: unknown, always kept
    assert _kept(table, "c = 5") == ["bare.parquet", "new.parquet"]
    assert _kept(table, "c IS NULL") == ["bare.parquet", "old.parquet"]
    assert _kept(table, "device.os = 'ios'") == ["bare.parquet", "new.parquet"]
    assert _kept(table, "device.os IS NULL") == ["bare.parquet", "old.parquet"]
    assert _kept(table, "x = 1") == ["bare.parquet", "old.parquet"]
    table = table.refresh().add_columns([("device.version", "string")])
    assert _kept(table, "device.version = '17'") == [], "every file was registered before the field was added"
    assert _kept(table, "device.version IS NULL") == ["bare.parquet", "new.parquet", "old.parquet"]
    assert _kept(table, "device.os = 'ios'") == ["bare.parquet", "new.parquet"], "an old field keeps its statistics"


def test_a_float_widened_to_double_keeps_files_whose_single_exceeds_the_literal(metastore, tmp_path):
    """The footer's 0.1f is 0.10000000149011612 as a double, which `f > 0.1` holds: the file must stay."""
    metastore.create_database("d")
    metastore.create_table("d", "t", [("f", "float"), ("n", "int")], [("ds", "string")], str(tmp_path / "t"))
    table = metastore.table("d", "t")
    schema = pa.schema([("f", pa.float32()), ("n", pa.int32())])
    path = _parquet(tmp_path / "t/ds=a/a.parquet", {"f": [0.1], "n": [7]}, schema)
    _register(table, path, {"ds": "a"})
    table = table.refresh().widen("f", "double").widen("n", "bigint")
    (value,) = pq.read_table(path).column("f").cast(pa.float64()).to_pylist()
    assert value > 0.1, "what a reader of the widened column sees"
    assert _kept(table, "f > 0.1") == ["a.parquet"]
    assert _kept(table, "f = 0.10000000149011612") == ["a.parquet"]
    assert _kept(table, "f < 0.1") == []
    assert _kept(table, "f < 0.05") == []  # (a footer has no NaN count: f > 0.2 may hold for a NaN)
    assert _kept(table, "n > 3000000000") == [], "old int statistics compare as bigint values"
    assert _kept(table, "n = 7") == ["a.parquet"]


def test_struct_leaves_are_skipped_on_and_complex_columns_never_compared(metastore, tmp_path):
    metastore.create_database("d")
    columns = [("a", "struct<b:struct<c:int>,s:string>"), ("tags", "array<string>"), ("m", "map<string,int>")]
    metastore.create_table("d", "t", columns, [("ds", "string")], str(tmp_path / "t"))
    table = metastore.table("d", "t")
    schema = pa.schema(
        [
            ("a", pa.struct([("b", pa.struct([("c", pa.int32())])), ("s", pa.string())])),
            ("tags", pa.list_(pa.string())),
            ("m", pa.map_(pa.string(), pa.int32())),
        ]
    )
    for name, c in (("low", 1), ("high", 9)):
        rows = {"a": [{"b": {"c": c}, "s": name}, None], "tags": [["x"], None], "m": [[("k", c)], None]}
        _register(table, _parquet(tmp_path / f"t/ds=a/{name}.parquet", rows, schema), {"ds": "a"})
    stats = {Path(f.path).name: f.columns for f in table.refresh().files()}
    assert set(stats["low.parquet"]) == {"a.b.c", "a.s"}, "no statistics for arrays, maps or the struct itself"
    assert _kept(table, "a.b.c > 3") == ["high.parquet"]
    assert _kept(table, "A.B.C <= 3 and a.s = 'low'") == ["low.parquet"]
    assert _kept(table, "a.`s` in ('high')") == ["high.parquet"]
    assert _kept(table, "a IS NULL") == ["high.parquet", "low.parquet"]
    assert _kept(table, "tags IS NOT NULL") == ["high.parquet", "low.parquet"]
    with pytest.raises(sg.BindError, match=re.escape("unknown column 'a.b.nope'")):
        table.scan("a.b.nope = 1")


def test_a_table_engines_fill_keeps_the_rules_without_registered_files(metastore, tmp_path):
    """A table made through the server (`files_from_folders`) has files the metastore doesn't list: its folders may
    hold rows of any age, so narrowing is refused even though no file is registered."""
    metastore.create_database("d")
    metastore.create_table("d", "t", [("x", "int")], [("ds", "string")], str(tmp_path / "t"), files_from_folders=True)
    with pytest.raises(sg.SchemaChangeError, match="'x' can't change from int to string"):
        metastore.alter_table("d", "t", columns=[("x", "string")])
    assert str(dict(metastore.alter_table("d", "t", columns=[("x", "bigint")]).columns)["x"]) == "bigint"
    metastore.create_table("d", "u", [("x", "int")], [("ds", "string")], str(tmp_path / "u"))
    assert str(dict(metastore.alter_table("d", "u", columns=[("x", "string")]).columns)["x"]) == "string"


def test_sparks_copy_of_the_schema_changes_with_the_columns():
    """Spark SQL reads a data source table's schema from `spark.sql.sources.schema`, not the Hive columns: a widening
    or an addition made with sargable's API changes it too (whole or split into parts), partition columns last."""
    from pyspark.sql import types as T

    from sargable.metastore.evolution import SPARK_SCHEMA, spark_schema

    def columns(text):
        return tuple((n, parse_type(t)) for n, t in (c.split(" ", 1) for c in text.split("; ")))

    old = columns("n int; v varchar(5); s struct<a:int>; l array<struct<x:float>>")
    new = columns("n bigint; v string; s struct<a:bigint,b:string>; l array<struct<x:double>>; m map<string,date>")
    def struct(**fields):
        return T.StructType([T.StructField(n, t) for n, t in fields.items()])

    before = struct(
        n=T.IntegerType(),
        v=T.VarcharType(5),
        s=struct(a=T.IntegerType()),
        l=T.ArrayType(struct(x=T.FloatType())),
        ds=T.IntegerType(),
    )
    text = before.json()
    expected = (
        "struct<n:bigint,v:string,s:struct<a:bigint,b:string>,l:array<struct<x:double>>,m:map<string,date>,ds:int>"
    )
    split = {f"{SPARK_SCHEMA}.numParts": "2", f"{SPARK_SCHEMA}.part.0": text[:9], f"{SPARK_SCHEMA}.part.1": text[9:]}
    for properties in ({SPARK_SCHEMA: text, "k": "v"}, {**split, "k": "v"}):
        changed = spark_schema(properties, old, new)
        assert set(changed) == {SPARK_SCHEMA, "k"}
        assert T.StructType.fromJson(json.loads(changed[SPARK_SCHEMA])).simpleString() == expected
    assert spark_schema({"k": "v"}, old, new) == {"k": "v"}
