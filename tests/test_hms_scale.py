"""`sargable serve` under load, through an independent Thrift client: streamed listings and the reply cache never
stale, 8 clients mixing reads, adds and drops on each backend (no acknowledged write lost, none invented), two
servers over one PostgreSQL metastore seeing each other's writes, and a fuzzed listener that keeps serving.

`SARGABLE_HMS_LOAD_SECONDS` sets the length of the mixed-load run (3 s here; `make soak` runs 60 s through
tests/soak/test_soak_hms.py); the fuzz's example count scales with `SARGABLE_FUZZ_SCALE`.
"""

from __future__ import annotations

import os
import random
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hms_server import SargableServe, thrift_client
from metastore_fixtures import fresh_url

pytest.importorskip("pymetastore")
from pymetastore.hive_metastore import ThriftHiveMetastore, ttypes
from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.transport.TTransport import TMemoryBuffer

LOAD_SECONDS = float(os.environ.get("SARGABLE_HMS_LOAD_SECONDS", "3"))
FUZZ_SCALE = float(os.environ.get("SARGABLE_FUZZ_SCALE", "1"))
CLIENTS = 8
DB = "scale"
BIG = 4101
"""Partitions of the table `scale.big`: more than two pages of a streamed listing (2,048 each)."""
KEYS = [(f"2024-03-{d:02d}", str(h)) for d in range(1, 11) for h in range(8)]
"""The 80 partitions the mixed-load clients add and drop."""


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def backend(request, tmp_path_factory):
    """(metastore URL, one server over it, its work dir) with database `scale` and table `scale.big`."""
    tmp = tmp_path_factory.mktemp(f"scale-{request.param}")
    postgres = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    url = fresh_url(request.param, tmp, postgres)
    serve = SargableServe(tmp / "a", url).start()
    with thrift_client(serve.port) as client:
        client.create_database(ttypes.Database(name=DB, locationUri=f"s3a://bucket/{DB}.db"))
        client.create_table(_table("big"))
        values = _big_values(BIG)
        for start in range(0, BIG, 1000):
            client.add_partitions([_partition("big", v) for v in values[start : start + 1000]])
    yield url, serve, tmp
    assert serve.stop() == 0


def _table(name: str) -> ttypes.Table:
    return ttypes.Table(
        tableName=name,
        dbName=DB,
        sd=ttypes.StorageDescriptor(
            cols=[ttypes.FieldSchema("x", "int", None)],
            location=f"s3a://bucket/{DB}.db/{name}",
            serdeInfo=ttypes.SerDeInfo(None, "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe", {}),
        ),
        partitionKeys=[ttypes.FieldSchema("ds", "string", None), ttypes.FieldSchema("hr", "int", None)],
        parameters={},
        tableType="EXTERNAL_TABLE",
    )


def _partition(table: str, values: Sequence[str]) -> ttypes.Partition:
    return ttypes.Partition(values=list(values), dbName=DB, tableName=table, parameters={})


def _big_values(count: int) -> list[tuple[str, str]]:
    return [(f"d{i // 24:04d}", str(i % 24)) for i in range(count)]


def _order(values: tuple[str, str]) -> tuple[str, int]:
    return values[0], int(values[1])


def _name(values: Sequence[str]) -> str:
    return f"ds={values[0]}/hr={values[1]}"


def test_streamed_listing_max_parts_and_cache_never_stale(backend):
    serve = backend[1]
    expected = sorted(_big_values(BIG), key=_order)
    with thrift_client(serve.port) as client:
        for _ in range(2):  # the second time from the cache
            assert [tuple(p.values) for p in client.get_partitions(DB, "big", -1)] == expected
            assert client.get_partition_names(DB, "big", -1) == [_name(v) for v in expected]
        assert [tuple(p.values) for p in client.get_partitions(DB, "big", 10)] == expected[:10]
        assert client.get_partition_names(DB, "big", 3000) == [_name(v) for v in expected[:3000]]
        client.add_partitions([_partition("big", ("d0000", "99"))])
        after = sorted([*expected, ("d0000", "99")], key=_order)
        assert [tuple(p.values) for p in client.get_partitions(DB, "big", -1)] == after
        assert len(client.get_partitions_by_filter(DB, "big", 'ds = "d0000"', -1)) == 25
        client.drop_partition(DB, "big", ["d0000", "99"], False)
        assert client.get_partition_names(DB, "big", -1) == [_name(v) for v in expected]
        assert len(client.get_partitions_by_filter(DB, "big", 'ds = "d0000"', -1)) == 24
    calls = serve.calls()
    listings = [line for line in calls if line.startswith("get_partitions table=scale.big partitions=4101")]
    assert len(listings) >= 2 and " cached " in listings[1] and " cached " not in listings[0]


def _mixed_client(port: int, seed: int, deadline: float, table: str) -> dict:
    """Random adds (if not exists, with the result), drops and reads of KEYS until the deadline."""
    rng = random.Random(seed)
    created: Counter = Counter()
    dropped: Counter = Counter()
    problems: list[str] = []
    reads = 0
    with thrift_client(port) as client:
        while time.monotonic() < deadline:
            op = rng.random()
            if op < 0.35:
                chosen = rng.sample(KEYS, rng.randint(1, 6))
                request = ttypes.AddPartitionsRequest(DB, table, [_partition(table, v) for v in chosen], True, True)
                for part in client.add_partitions_req(request).partitions:
                    created[tuple(part.values)] += 1
            elif op < 0.65:
                key = rng.choice(KEYS)
                try:
                    if client.drop_partition(DB, table, list(key), False):
                        dropped[key] += 1
                except ttypes.NoSuchObjectException:
                    pass
            else:
                which = rng.randrange(4)
                if which == 0:
                    got = [tuple(p.values) for p in client.get_partitions(DB, table, -1)]
                elif which == 1:
                    day = rng.choice(KEYS)[0]
                    got = [tuple(p.values) for p in client.get_partitions_by_filter(DB, table, f'ds = "{day}"', -1)]
                    if any(v[0] != day for v in got):
                        problems.append(f"filter ds = {day} returned {got}")
                elif which == 2:
                    got = [tuple(p.values) for p in client.get_partitions_by_filter(DB, table, "hr = 3", -1)]
                    if any(v[1] != "3" for v in got):
                        problems.append(f"filter hr = 3 returned {got}")
                else:
                    got = [
                        tuple(n.replace("ds=", "").replace("hr=", "").split("/"))
                        for n in client.get_partition_names(DB, table, -1)
                    ]
                if got != sorted(set(got), key=_order) or not set(got) <= set(KEYS):
                    problems.append(f"a read returned {got}")
                reads += 1
    return {"created": created, "dropped": dropped, "problems": problems, "reads": reads}


def run_mixed_load(ports: Sequence[int], seconds: float, table: str = "mixed") -> dict:
    """CLIENTS threads (spread over `ports`) mixing reads, adds and drops of one table for `seconds`; then every
    partition's acknowledged creations and drops must alternate: created - dropped is 1 for a partition every
    server returns, 0 for one none returns."""
    with thrift_client(ports[0]) as client:
        client.create_table(_table(table))
    deadline = time.monotonic() + seconds
    results: list[dict | BaseException] = [RuntimeError("did not finish")] * CLIENTS

    def work(n: int) -> None:
        try:
            results[n] = _mixed_client(ports[n % len(ports)], n, deadline, table)
        except BaseException as exc:  # reported below
            results[n] = exc

    threads = [threading.Thread(target=work, args=(n,)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 300)
    failed = [r for r in results if isinstance(r, BaseException)]
    assert not failed, failed[0]
    created = sum((r["created"] for r in results), Counter())  # type: ignore[index]
    dropped = sum((r["dropped"] for r in results), Counter())  # type: ignore[index]
    assert [p for r in results for p in r["problems"]] == []  # type: ignore[index]
    for port in ports:
        with thrift_client(port) as client:
            present = {tuple(p.values) for p in client.get_partitions(DB, table, -1)}
            names = set(client.get_partition_names(DB, table, -1))
        assert names == {_name(v) for v in present}
        for key in KEYS:
            assert created[key] - dropped[key] == (key in present), (key, created[key], dropped[key])
    return {
        "adds": sum(created.values()),
        "drops": sum(dropped.values()),
        "reads": sum(r["reads"] for r in results),  # type: ignore[index]
        "present": len(present),
    }


def test_clients_mixing_reads_adds_and_drops_lose_nothing(backend, tmp_path):
    url, serve, _ = backend
    if url.startswith("postgresql"):  # on PostgreSQL, half the clients go through a second server
        with SargableServe(tmp_path, url) as second:
            figures = run_mixed_load([serve.port, second.port], LOAD_SECONDS)
    else:
        figures = run_mixed_load([serve.port], LOAD_SECONDS)
    assert figures["adds"] > 0 and figures["drops"] > 0 and figures["reads"] > 0


def test_two_servers_over_one_postgresql_serve_one_catalog(postgres_url, tmp_path):
    url = fresh_url("postgresql", tmp_path, postgres_url)
    with SargableServe(tmp_path / "a", url) as a, SargableServe(tmp_path / "b", url) as b:
        with thrift_client(a.port) as one, thrift_client(b.port) as two:
            one.create_database(ttypes.Database(name=DB, locationUri=f"s3a://bucket/{DB}.db"))
            one.create_table(_table("t"))
            assert two.get_table(DB, "t").tableName == "t"
            assert one.get_metastore_db_uuid() == two.get_metastore_db_uuid() != ""
            model: set[tuple[str, str]] = set()
            rng = random.Random(5)

            def check(client: ThriftHiveMetastore.Client, day: str) -> None:
                expected = sorted(model, key=_order)
                assert [tuple(p.values) for p in client.get_partitions(DB, "t", -1)] == expected
                assert client.get_partition_names(DB, "t", -1) == [_name(v) for v in expected]
                got = client.get_partitions_by_filter(DB, "t", f'ds = "{day}"', -1)
                assert [tuple(p.values) for p in got] == [v for v in expected if v[0] == day]

            for _ in range(40):
                key = rng.choice(KEYS[:12])
                for client in (one, two, one, two):  # each server's cache holds this version's replies now
                    check(client, key[0])
                writer = rng.choice([one, two])
                if key in model:
                    assert writer.drop_partition(DB, "t", list(key), False)
                    model.discard(key)
                else:
                    writer.add_partitions([_partition("t", key)])
                    model.add(key)
                check(one, key[0])  # the next call on either server returns the change
                check(two, key[0])
            altered = two.get_table(DB, "t")
            altered.parameters = {**altered.parameters, "comment": "changed on b"}
            two.alter_table(DB, "t", altered)
            assert one.get_table(DB, "t").parameters["comment"] == "changed on b"
        assert any(" cached " in line for line in a.calls() + b.calls())


# ------------------------------------------------------------------------------------------------- fuzz


def _request(method: str, *args) -> bytes:
    """A strict binary-protocol call of `method` as pymetastore's generated client writes it."""
    buffer = TMemoryBuffer()
    client = ThriftHiveMetastore.Client(TBinaryProtocol(buffer))
    getattr(client, f"send_{method}")(*args)
    return buffer.getvalue()


REQUESTS = [
    _request("get_table", DB, "big"),
    _request("get_partitions", DB, "big", -1),
    _request("get_partition_names", DB, "big", 100),
    _request("get_partitions_by_filter", DB, "big", 'ds = "d0001" and hr > 3', -1),
    _request("get_partitions_by_names", DB, "big", ["ds=d0001/hr=1", "ds=x/hr=2"]),
    _request("add_partitions", [_partition("fuzz", ("a", "1")), _partition("fuzz", ("b", "x"))]),
    _request("set_ugi", "me", ["g"]),
    _request("get_all_databases"),
]


def _framed(data: bytes) -> bytes:
    return struct.pack("!i", len(data)) + data


@st.composite
def hostile_streams(draw) -> tuple[bytes, bool]:
    """(bytes a client sends, whether it vanishes without reading): garbage, truncated or mutated requests, huge
    length prefixes, framed or not, sometimes after a valid request."""
    kind = draw(st.sampled_from(["garbage", "truncated", "mutated", "huge", "valid"]))
    request = draw(st.sampled_from(REQUESTS))
    if kind == "garbage":
        data = draw(st.binary(max_size=300))
    elif kind == "truncated":
        data = request[: draw(st.integers(0, len(request) - 1))]
    elif kind == "mutated":
        data = bytearray(request)
        for _ in range(draw(st.integers(1, 6))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        data = bytes(data)
    elif kind == "huge":
        at = draw(st.integers(0, len(request) - 4))
        size = draw(st.sampled_from([0x7FFFFFFF, 0x7FFFFFF0, 0x10000000, -1, -(2**31)]))
        data = request[:at] + struct.pack("!i", size) + request[at + 4 :]
    else:
        data = request
    if draw(st.booleans()):
        data = _framed(data)
    if kind != "valid" and draw(st.booleans()):
        data = draw(st.sampled_from(REQUESTS)) + data  # a good call first, on the same connection
    return data, draw(st.booleans())


def test_listener_survives_fuzzed_streams(backend):
    serve = backend[1]
    with thrift_client(serve.port) as client:
        client.create_table(_table("fuzz"))

    @settings(max_examples=int(150 * FUZZ_SCALE), deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(hostile_streams())
    def send(stream: tuple[bytes, bool]) -> None:
        data, vanish = stream
        with socket.create_connection(("127.0.0.1", serve.port), timeout=10) as sock:
            try:
                sock.sendall(data)
                if not vanish:
                    sock.shutdown(socket.SHUT_WR)
                    while sock.recv(1 << 16):
                        pass
            except OSError:
                pass
        assert serve.alive()

    send()
    # more vanishing listeners than workers: each one's catalog (store connection) must have come back
    for _ in range(12):
        with socket.create_connection(("127.0.0.1", serve.port), timeout=10) as sock:
            sock.sendall(REQUESTS[1])
    with thrift_client(serve.port, timeout_ms=60_000) as client:
        assert DB in client.get_all_databases()
        assert len(client.get_partitions(DB, "big", -1)) >= BIG
