"""The server's template encoding of partitions and names against the Thrift runtime's own encoding of the same
objects, and its reply cache against a model (in process, no server)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import strategies
from sargable import keys
from sargable.metastore import Partition, TableDefinition
from sargable.types import parse_type

pytest.importorskip("pymetastore")
from pymetastore.hive_metastore import ThriftHiveMetastore, ttypes
from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.Thrift import TMessageType
from thrift.transport.TTransport import TMemoryBuffer

from sargable.hms.cache import CachedReply, ReplyCache
from sargable.hms.catalog import Change
from sargable.hms.convert import TableView
from sargable.hms.encode import TableCodec, message_header, thrift_bytes
from sargable.hms.extras import PARTITION_KEY
from sargable.metastore.hive import HivePartition, HiveStorage, HiveTable, partition_raw

_text = st.text(max_size=8)
_params = st.dictionaries(st.text(min_size=1, max_size=6).filter(lambda k: not k.startswith("sargable.hms.")), _text)
_storage = st.builds(
    HiveStorage,
    input_format=st.none() | _text,
    serde_lib=st.none() | _text,
    serde_params=_params,
    num_buckets=st.integers(-1, 8),
    bucket_cols=st.lists(_text, max_size=2).map(tuple),
    sort_cols=st.lists(st.tuples(_text, st.sampled_from([0, 1])), max_size=2).map(tuple),
)
_KEY_TYPES = ["string", "int", "bigint", "date", "timestamp", "decimal(10,2)", "double", "boolean", "varchar(5)"]


@st.composite
def tables_and_partitions(draw):
    """A table (with or without Hive fields) and partitions as the metastore returns them: values that went
    through the key codec, default or explicit locations, parameters with or without partition extras."""
    count = draw(st.integers(1, 3))
    names = draw(
        st.lists(
            st.sampled_from(["ds", "hr", "k=1", "Mixed Case", "a/b", "é"]), min_size=count, max_size=count, unique=True
        )
    )
    types = [parse_type(draw(st.sampled_from(_KEY_TYPES))) for _ in names]
    extras = draw(
        st.none()
        | st.builds(
            HiveTable,
            owner=st.none() | _text,
            create_time=st.integers(0, 2**31 - 1),
            storage=_storage,
            columns=st.lists(st.tuples(_text, _text, st.none() | _text), max_size=2).map(tuple),
        )
    )
    params = draw(_params)
    table = TableDefinition(
        database="db",
        name="tb",
        table_id=7,
        columns=(("x", parse_type("int")),),
        partition_keys=tuple(zip(names, types)),
        location=draw(st.sampled_from(["/w/db.db/tb", "file:/w/db.db/tb/", "s3a://bucket/tb"])),
        properties=params,
        hive=extras,
    )
    codec = keys.tuple_codec(types)
    rows = draw(st.lists(st.tuples(*(strategies.values(t) for t in types)), min_size=1, max_size=8))
    parts = []
    for row in rows:
        values = codec.decode(codec.encode(list(row)))
        location = draw(st.none() | st.text(min_size=1, max_size=12))
        stored = draw(_params)
        hive = draw(
            st.none()
            | st.builds(
                HivePartition,
                create_time=st.integers(0, 2**31 - 1),
                last_access_time=st.integers(0, 9),
                storage=st.none() | _storage,
            )
        )
        if hive is not None and draw(st.booleans()):  # as an earlier server kept them: in a reserved parameter
            stored, hive = {**stored, PARTITION_KEY: json.dumps(partition_raw(hive))}, None
        parts.append(Partition(table, values, location, stored, hive))
    return table, parts


@given(tables_and_partitions())
def test_partitions_encode_as_the_runtime_does(case):
    table, parts = case
    view = TableView(table)
    codec = TableCodec(view)
    for _ in range(2):  # the second round reads the memoized values
        for part in parts:
            assert codec.partition(part) == thrift_bytes(view.partition(part))
            assert codec.name(part) == part.name
    assert codec.table_bytes == thrift_bytes(view.thrift())


@given(tables_and_partitions())
def test_a_spliced_reply_reads_back_with_the_generated_client(case):
    table, parts = case
    view = TableView(table)
    codec = TableCodec(view)
    body = b"".join(codec.partitions(parts))
    reply = message_header("get_partitions", TMessageType.REPLY, 9) + b"\x0f\x00\x00\x0c"
    reply += len(parts).to_bytes(4, "big") + body + b"\x00"
    prot = TBinaryProtocol(TMemoryBuffer(reply))
    assert prot.readMessageBegin() == ("get_partitions", TMessageType.REPLY, 9)
    result = ThriftHiveMetastore.get_partitions_result()
    result.read(prot)
    assert result.success == [view.partition(p) for p in parts]
    names = b"".join(codec.names(parts))
    read = TBinaryProtocol(TMemoryBuffer(b"\x0b" + len(parts).to_bytes(4, "big") + names))
    _, size = read.readListBegin()
    assert [read.readString() for _ in range(size)] == [p.name for p in parts]


def test_message_header_is_the_runtimes():
    buffer = TMemoryBuffer()
    TBinaryProtocol(buffer).writeMessageBegin("get_table", TMessageType.REPLY, 2**31 - 1)
    assert message_header("get_table", TMessageType.REPLY, 2**31 - 1) == buffer.getvalue()


def _table(table_id: int, version: int) -> TableDefinition:
    return TableDefinition("d", f"t{table_id}", table_id, (), (("p", parse_type("int")),), "/w", {}, (), version)


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["put", "get"]),
        st.integers(1, 3),
        st.integers(0, 4),
        st.sampled_from("abc"),
        st.integers(1, 40),
    ),
    max_size=60,
)


@given(_OPS, st.integers(0, 120))
def test_reply_cache_is_never_stale(ops, budget):
    """A hit is always the latest reply put for that call on exactly that table version (no write step recorded
    here); nothing over the budget."""
    cache = ReplyCache(budget)
    latest: dict[tuple[int, str], tuple[int, bytes]] = {}
    for n, (op, table_id, version, call, size) in enumerate(ops):
        table = _table(table_id, version)
        if op == "put":
            payload = bytes([n % 256]) * size
            cache.put(table, call, CachedReply(n, payload))
            seen = latest.get((table_id, call), (-1, b""))[0]
            if version >= seen and size <= budget // 4:
                latest[(table_id, call)] = (version, payload)
        else:
            hit = cache.get(table, call)
            if hit is not None:
                assert latest.get((table_id, call)) == (version, hit.payload)
        assert cache.size <= budget


_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.sampled_from("abc"), st.none() | st.integers(0, 2)),
        st.tuples(st.just("get"), st.sampled_from("abc"), st.none()),
        st.tuples(st.just("step"), st.lists(st.integers(0, 5), max_size=3), st.booleans()),
    ),
    max_size=40,
)


@given(_STEPS)
def test_reply_cache_serves_a_reply_at_newer_versions_only_while_no_step_touched_its_scope(ops):
    """The oracle: a reply put at version v is served at version V when every step v+1..V was recorded and changed no
    partition in its scope (a reply `k` holds the partitions p with p % 3 == k; None: all); steps not recorded (a
    write the cache did not see) end every older reply."""
    cache = ReplyCache(1 << 20)
    version = 1
    steps: dict[int, list[int] | None] = {}
    kept: dict[str, tuple[int, bytes, int | None]] = {}
    for n, (op, arg, extra) in enumerate(ops):
        table = _table(1, version)
        if op == "step":
            version += 1
            steps[version] = arg if extra else None
            if extra:
                cache.changed(Change(1, version, tuple((v,) for v in arg)))
        elif op == "put":
            payload = bytes([n % 256])
            scope = None if extra is None else (lambda values, k=extra: values[0] % 3 == k)
            cache.put(table, arg, CachedReply(1, payload), scope)
            kept[arg] = (version, payload, extra)
        else:
            hit = cache.get(table, arg)
            entry = kept.get(arg)
            valid = entry is not None and all(
                steps[v] is not None and entry[2] is not None and not any(x % 3 == entry[2] for x in steps[v])
                for v in range(entry[0] + 1, version + 1)
            )
            assert (hit is not None) == valid
            if valid:
                assert hit.payload == entry[1]
                kept[arg] = (version, entry[1], entry[2])
            else:
                kept.pop(arg, None)


def test_reply_cache_keeps_the_newest_reply_and_rebuilds_codecs_on_definition_changes():
    cache = ReplyCache(1000)
    cache.put(_table(1, 1), "a", CachedReply(1, b"x"))
    assert cache.get(_table(1, 2), "a") is None  # a step it did not see: not served at the newer version
    cache.put(_table(1, 2), "a", CachedReply(1, b"y"))
    cache.put(_table(1, 1), "a", CachedReply(1, b"z"))  # a reader that saw an older version: not kept
    assert cache.get(_table(1, 1), "a") is None and cache.get(_table(1, 2), "a").payload == b"y"
    assert cache.size == 1
    first = cache.codec(_table(1, 2))
    assert cache.codec(_table(1, 5)) is first  # a new version of the same definition
    changed = dataclasses.replace(_table(1, 5), location="/elsewhere")
    assert cache.codec(changed) is not first and cache.codec(changed).view.table.location == "/elsewhere"


def test_partition_with_own_storage_is_encoded_by_the_runtime():
    table = TableDefinition("d", "t", 1, (("x", parse_type("int")),), (("ds", parse_type("string")),), "/w/t")
    own = HiveStorage(input_format="in", serde_lib="lib", num_buckets=3)
    part = Partition(table, ("a",), None, {"k": "v"}, HivePartition(create_time=5, storage=own))
    view = TableView(table)
    got = ttypes.Partition()
    got.read(TBinaryProtocol(TMemoryBuffer(TableCodec(view).partition(part))))
    assert got.sd.inputFormat == "in" and got.sd.numBuckets == 3 and got.createTime == 5
    assert got.parameters == {"k": "v"} and got.sd.location == "file:/w/t/ds=a"
