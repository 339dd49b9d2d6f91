"""The server's metastore adapter, and the Hive fields of databases, tables and partitions in the metastore's own
records (`sargable.metastore.hive`), in process (no server); metastores an earlier server wrote still decode."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import sargable as sg
from sargable.metastore import Database, Partition, TableDefinition
from sargable.metastore.hive import (
    DamagedFields,
    HiveDatabase,
    HivePartition,
    HiveStorage,
    HiveTable,
    partition_from_raw,
)
from sargable.metastore.records import decode_partition_value, encode_partition_value
from sargable.metastore.schema import CATALOG, table_key
from sargable.types import parse_type

pytest.importorskip("pymetastore")
from sargable.hms.catalog import Catalog, NewPartition
from sargable.hms.convert import TableView
from sargable.hms.extras import partition_fields

_text = st.text(min_size=0, max_size=12)
_params = st.dictionaries(st.text(min_size=1, max_size=8).filter(lambda k: not k.startswith("sargable.hms.")), _text)
_storage = st.builds(
    HiveStorage,
    input_format=st.none() | _text,
    serde_lib=st.none() | _text,
    serde_params=_params,
    compressed=st.booleans(),
    num_buckets=st.integers(-1, 64),
    bucket_cols=st.lists(_text, max_size=3).map(tuple),
    sort_cols=st.lists(st.tuples(_text, st.sampled_from([0, 1])), max_size=2).map(tuple),
    params=_params,
)
_hive_tables = st.builds(
    HiveTable,
    table_type=st.sampled_from(["MANAGED_TABLE", "EXTERNAL_TABLE", "VIRTUAL_VIEW"]),
    owner=st.none() | _text,
    owner_type=st.none() | st.integers(1, 3),
    create_time=st.integers(0, 2**31 - 1),
    view_expanded_text=st.none() | _text,
    temporary=st.booleans(),
    storage=_storage,
    columns=st.lists(st.tuples(_text, _text, st.none() | _text), max_size=4).map(tuple),
    partition_comments=_params,
    has_location=st.booleans(),
)

OLD_TABLE_PROPERTIES = {
    "k": "v",
    "sargable.hms.table": '{"table_type":"EXTERNAL_TABLE","owner":"ann","owner_type":1,"create_time":1700000000,'
    '"last_access_time":0,"retention":0,"view_original_text":null,"view_expanded_text":null,"temporary":false,'
    '"storage":{"input_format":"org.apache.hadoop.mapred.TextInputFormat","output_format":null,"serde_name":null,'
    '"serde_lib":"org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe","serde_params":{"field.delim":","},'
    '"compressed":false,"num_buckets":4,"bucket_cols":["x"],"sort_cols":[["x",1]],"params":{},'
    '"stored_as_sub_directories":false},"columns":[["x","int","the x"],["u","uniontype<int,string>",null]],'
    '"partition_comments":{"ds":"day"},"has_location":true}',
}
"""A table's properties as the server wrote them before tables had Hive fields of their own (its spike encoder)."""
OLD_PARTITION_PARAMETERS = {
    "numRows": "3",
    "sargable.hms.partition": '{"create_time":5,"last_access_time":0,"storage":{"input_format":"i","output_format":'
    'null,"serde_name":null,"serde_lib":null,"serde_params":{},"compressed":false,"num_buckets":-1,"bucket_cols":[],'
    '"sort_cols":[],"params":{},"stored_as_sub_directories":false}}',
}


@given(_hive_tables, _params)
def test_a_tables_hive_fields_round_trip_through_its_stored_definition(hive, params):
    table = TableDefinition("d", "t", 7, (("x", parse_type("int")),), (), "/w/t", params, hive=hive)
    assert TableDefinition.from_json(table.to_json()) == table


@given(
    st.none() | st.text(min_size=1, max_size=12),
    _params,
    st.none() | st.builds(HivePartition, create_time=st.integers(0, 2**31 - 1), storage=st.none() | _storage),
)
def test_a_partitions_hive_fields_round_trip_through_its_row(location, params, hive):
    stored = encode_partition_value(location, params, hive)
    assert decode_partition_value(stored) == (location, params, hive)
    if location is None and not params and hive is None:
        assert stored == b""  # nothing stored for the common case


def test_damaged_hive_fields_are_damage_of_their_object_only(metastore):
    """Hive fields that don't decode are kept as stored: the table works for everything but the Hive metastore API,
    which names it; a commit re-writes them unchanged."""
    metastore.create_database("d", location="/w/d.db")
    metastore.create_table("d", "t", [("x", "int")], [("ds", "string")], hive=HiveTable(owner="ann"))
    raw = json.loads(metastore.store.get(CATALOG, table_key("d", "t")))
    raw["hive"]["owner"] = 5
    with metastore.store.transaction():
        metastore.store.put(CATALOG, table_key("d", "t"), json.dumps(raw).encode())
    table = metastore.get_table("d", "t")
    assert table.hive == DamagedFields(raw["hive"], "field 'owner' is 5, not a str")
    with pytest.raises(sg.DamagedMetastoreError, match=r"Hive fields of table d\.t don't decode .*'owner'"):
        TableView(table)
    metastore.add_partitions("d", "t", [["a"]])
    assert json.loads(metastore.store.get(CATALOG, table_key("d", "t")))["hive"] == raw["hive"]
    damaged = partition_from_raw({"storage": {"sort_cols": [[None, None]]}})
    assert isinstance(damaged, DamagedFields)
    part = Partition(table, ("a",), parameters={"k": "v"}, hive=damaged)
    assert partition_fields(part) == (HivePartition(), {"k": "v"})  # served as the table's, never failing a listing


def test_database_hive_fields_are_stored_with_the_database(metastore):
    hive = HiveDatabase(description="sales", owner="ann", owner_type=1, parameters={"k": "v"})
    metastore.create_database("d", location="/w/d.db", hive=hive)
    metastore.create_database("plain", location="/w/plain.db")
    assert metastore.get_database("d") == Database("d", "/w/d.db", hive)
    assert metastore.get_database("plain").hive is None


def test_an_earlier_servers_reserved_properties_still_decode(metastore):
    metastore.create_database("d", location="/w/d.db")
    table = metastore.create_table("d", "t", [("x", "int")], [("ds", "string")], "/w/d.db/t", OLD_TABLE_PROPERTIES)
    assert table.hive is None
    view = TableView(table)
    assert view.parameters == {"k": "v"}
    assert view.extras.owner == "ann" and view.extras.storage.sort_cols == (("x", 1),)
    assert [(c.name, c.type, c.comment) for c in view.cols] == [
        ("x", "int", "the x"),
        ("u", "uniontype<int,string>", None),
    ]
    assert [c.comment for c in view.partition_cols] == ["day"]
    extras, params = partition_fields(Partition(table, ("a",), parameters=dict(OLD_PARTITION_PARAMETERS)))
    assert params == {"numRows": "3"}
    assert extras == HivePartition(create_time=5, storage=HiveStorage(input_format="i"))


def test_partitions_are_added_with_parameters_and_hive_fields_in_one_write(metastore):
    metastore.create_database("d", location="/w/d.db")
    metastore.create_table("d", "t", [("x", "int")], [("ds", "string"), ("hr", "int")], "/w/d.db/t", index_all=True)
    own = HivePartition(create_time=9, storage=HiveStorage(input_format="text"))
    writes = []
    store = metastore.store
    real = store.transaction

    def counted(*args, **kwargs):
        writes.append(kwargs.get("readonly", False))
        return real(*args, **kwargs)

    store.transaction = counted
    try:
        added = metastore.add_partitions(
            "d", "t", [("a", 1), ("a", 2), ("b", 1)], parameters=[{"n": "1"}, None, {}], hive=[own, None, own]
        )
    finally:
        del store.transaction
    assert added == 3 and writes.count(False) == 1
    by_values = {p.values: p for p in metastore.iter_partitions("d", "t")}
    assert (by_values[("a", 1)].parameters, by_values[("a", 1)].hive) == ({"n": "1"}, own)
    assert (by_values[("a", 2)].parameters, by_values[("a", 2)].hive) == ({}, None)
    assert by_values[("b", 1)].hive == own
    via_index = metastore.get_partitions_by_filter("d", "t", "hr = 1")  # the secondary index's copy of the row
    assert [(p.values, p.hive) for p in via_index] == [(("a", 1), own), (("b", 1), own)]
    later = HivePartition(create_time=10)
    changed = metastore.alter_partition("d", "t", ("a", 2), parameters={"numRows": "3"}, hive=later)
    assert metastore.get_partitions_by_filter("d", "t", "hr = 2") == [changed]
    assert changed.hive == later and changed.parameters == {"numRows": "3"}
    kept = metastore.alter_partition("d", "t", ("a", 2), parameters={"numRows": "4"})
    assert kept.hive == later


def test_alter_table_keeps_partitions_files_and_indexes(metastore):
    catalog = Catalog(metastore)
    metastore.create_database("d", location="/w/d.db")
    metastore.create_table("d", "t", [("x", "int")], [("ds", "string"), ("hr", "int")], "/w/d.db/t", index_all=True)
    added = catalog.add_partitions(
        "d",
        "t",
        [
            NewPartition(("a", "1"), None, {}),
            NewPartition(("a", "2"), "/elsewhere/a2", {"numRows": "3"}),
            NewPartition(("__HIVE_DEFAULT_PARTITION__", "3"), None, {}),
        ],
        if_not_exists=False,
    )
    assert [p.values for p in added] == [("a", 1), ("a", 2), (None, 3)]
    assert sorted(added, key=lambda p: p.name) == sorted(metastore.iter_partitions("d", "t"), key=lambda p: p.name)
    again = catalog.add_partitions("d", "t", [NewPartition(("a", "1"), None, {})], if_not_exists=True)
    assert again == []
    with pytest.raises(sg.AlreadyExistsError):
        catalog.add_partitions("d", "t", [NewPartition(("a", "1"), None, {})], if_not_exists=False)
    file = sg.FileStats("/w/d.db/t/ds=a/hr=1/f.parquet", 1, 10, partition={"ds": "a", "hr": 1})
    metastore.add_files("d", "t", [file])

    table = metastore.get_table("d", "t")
    hive = HiveTable(owner="bob", columns=(("x", "int", "the x"), ("y", "string", None)))
    renamed = catalog.alter_table(
        "d", "t", "u", [("x", "int"), ("y", "string")], table.partition_keys, "/moved/u", {"k": "v"}, hive
    )
    assert metastore.list_tables("d") == ["u"] and renamed.properties == {"k": "v"}
    assert metastore.get_table("d", "u").hive == hive
    assert renamed.indexes == table.indexes and [n for n, _ in renamed.columns] == ["x", "y"]
    parts = {p.values: p for p in metastore.iter_partitions("d", "u")}
    # As in Hive, the partitions stay where they were when the table moves.
    assert parts[("a", 1)].location == "/w/d.db/t/ds=a/hr=1"
    assert parts[("a", 2)].location == "/elsewhere/a2" and parts[("a", 2)].parameters == {"numRows": "3"}
    assert [f.path for f in metastore.list_files("d", "u")] == ["/w/d.db/t/ds=a/hr=1/f.parquet"]
    assert [p.values for p in metastore.get_partitions_by_filter("d", "u", "hr = 2")] == [("a", 2)]
    with pytest.raises(sg.MetastoreError, match="partition keys"):
        catalog.alter_table("d", "u", "u", [("x", "int")], [("ds", "string")], None, {}, hive)


def test_the_c_accelerated_protocol_is_there():
    from sargable.hms.bindings import ACCELERATED

    assert ACCELERATED, "thrift.protocol.fastbinary did not build: the server falls back to pure Python"
