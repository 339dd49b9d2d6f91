"""The server's metastore adapter and its spike encoding of Hive-only fields, in process (no server)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import sargable as sg

pytest.importorskip("pymetastore")
from sargable.hms.catalog import Catalog, NewPartition
from sargable.hms.extras import (
    PartitionExtras,
    Storage,
    TableExtras,
    decode_partition,
    decode_table,
    encode_partition,
    encode_table,
)

_text = st.text(min_size=0, max_size=12)
_params = st.dictionaries(st.text(min_size=1, max_size=8).filter(lambda k: not k.startswith("sargable.hms.")), _text)
_storage = st.builds(
    Storage,
    input_format=st.none() | _text,
    serde_lib=st.none() | _text,
    serde_params=_params,
    num_buckets=st.integers(-1, 64),
    bucket_cols=st.lists(_text, max_size=3),
    sort_cols=st.lists(st.tuples(_text, st.sampled_from([0, 1])), max_size=2),
)


@given(
    st.builds(
        TableExtras,
        table_type=st.sampled_from(["MANAGED_TABLE", "EXTERNAL_TABLE", "VIRTUAL_VIEW"]),
        owner=st.none() | _text,
        create_time=st.integers(0, 2**31 - 1),
        view_expanded_text=st.none() | _text,
        storage=_storage,
        columns=st.lists(st.tuples(_text, _text, st.none() | _text), max_size=4),
        partition_comments=_params,
    ),
    _params,
)
def test_table_extras_round_trip(extras, params):
    assert decode_table(encode_table(extras, params)) == (extras, params)


@given(st.builds(PartitionExtras, create_time=st.integers(0, 2**31 - 1), storage=st.none() | _storage), _params)
def test_partition_extras_round_trip(extras, params):
    stored = encode_partition(extras, params)
    assert decode_partition(stored) == (extras, params)
    if extras == PartitionExtras():
        assert stored == params  # nothing extra stored for the common case


def test_replace_table_keeps_partitions_files_and_indexes(metastore):
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
    renamed = catalog.replace_table(
        "d", "t", "u", [("x", "int"), ("y", "string")], table.partition_keys, "/moved/u", {"k": "v"}
    )
    assert metastore.list_tables("d") == ["u"] and renamed.properties == {"k": "v"}
    assert renamed.indexes == table.indexes and [n for n, _ in renamed.columns] == ["x", "y"]
    parts = {p.values: p for p in metastore.iter_partitions("d", "u")}
    # As in Hive, the partitions stay where they were when the table moves.
    assert parts[("a", 1)].location == "/w/d.db/t/ds=a/hr=1"
    assert parts[("a", 2)].location == "/elsewhere/a2" and parts[("a", 2)].parameters == {"numRows": "3"}
    assert [f.path for f in metastore.list_files("d", "u")] == ["/w/d.db/t/ds=a/hr=1/f.parquet"]
    assert [p.values for p in metastore.get_partitions_by_filter("d", "u", "hr = 2")] == [("a", 2)]
    with pytest.raises(sg.MetastoreError, match="partition keys"):
        catalog.replace_table("d", "u", "u", [("x", "int")], [("ds", "string")], None, {})


def test_the_c_accelerated_protocol_is_there():
    from sargable.hms.bindings import ACCELERATED

    assert ACCELERATED, "thrift.protocol.fastbinary did not build: the server falls back to pure Python"
