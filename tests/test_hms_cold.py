"""Cold replies (issue 32, item 2): the partition calls of a server without a reply cache encode the store's pages
(in Arrow for long ones) instead of `Partition` objects, and a server with a cache keeps replies across writes that
can't change them.

The property: after any sequence of adds (some with their own location or parameters) and drops, every partition
call answers the same bytes from a cold handler (`--cache-mb 0`), a warm one (its reply cache kept across the
writes, half of them its own, so replies a write can't change are kept) and the oracle: the Thrift runtime's
encoding of the partitions the metastore lists as objects, selected in Python; and that listing holds exactly the
partitions added and not dropped. Both encoders run: Arrow's from pages of one partition up (`ARROW_MIN` 1) and the
row one (`ARROW_MIN` above every page).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from thrift.Thrift import TType

from metastore_fixtures import fresh_url
from sargable.hms import encode
from sargable.hms.bindings import ttypes
from sargable.hms.cache import ReplyCache
from sargable.hms.catalog import Catalog
from sargable.hms.convert import TableView
from sargable.hms.encode import list_header, string, thrift_bytes
from sargable.hms.handler import Handler
from sargable.hms.pool import CatalogPool
from sargable.metastore import DEFAULT_PARTITION_NAME, Metastore, Partition

SCALE = float(os.environ.get("SARGABLE_FUZZ_SCALE", "1"))
DS = ["2024-01-01", "2024-01-02", "a/b", "x=y", "ü", "%41", ""]
"""Values of the string key: some escaped in names, '' is NULL."""
HR = ["0", "3", "12", DEFAULT_PARTITION_NAME]


def _sd(location: str | None) -> ttypes.StorageDescriptor:
    return ttypes.StorageDescriptor(
        cols=[ttypes.FieldSchema("x", "int", None)],
        location=location,
        inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
        serdeInfo=ttypes.SerDeInfo(None, "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe", {"a": "b"}),
        numBuckets=-1,
    )


class Servers:
    """A cold and a warm `Handler` over one metastore, with table `d.t (ds string, hr int)`."""

    def __init__(self, url: str, root: Path) -> None:
        self.pool = CatalogPool(lambda: Catalog(Metastore.open(url, warehouse=str(root))), 2)
        self.cold = Handler(self.pool, cache=ReplyCache(0))
        self.warm = Handler(self.pool, cache=ReplyCache(64 << 20))
        self.call(self.cold, "create_database", ttypes.Database(name="d", locationUri=f"file:{root}/d.db"))
        table = ttypes.Table(
            tableName="t",
            dbName="d",
            owner="o",
            sd=_sd(f"file:{root}/d.db/t"),
            partitionKeys=[ttypes.FieldSchema("ds", "string", None), ttypes.FieldSchema("hr", "int", None)],
            parameters={},
            tableType="EXTERNAL_TABLE",
        )
        self.call(self.cold, "create_table", table)
        self.url, self.root = url, root
        self.cached = False

    def call(self, handler: Handler, method: str, *args: Any) -> Any:
        """One call as the server makes it; an encoded reply as its bytes (`cached`: whether it came from the reply
        cache)."""
        try:
            result = getattr(handler, method)(*args)
            self.cached = handler.note.cached
            if isinstance(result, encode.Encoded):
                return result.head + b"".join(result.rest or ())
            return result
        finally:
            handler.end_call()

    def close(self) -> None:
        self.pool.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request, tmp_path_factory):
    postgres = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    return lambda: fresh_url(request.param, tmp_path_factory.mktemp("cold"), postgres)


_adds = st.lists(
    st.tuples(st.sampled_from(DS), st.sampled_from(HR), st.sampled_from([None, "own", "params"])),
    min_size=1,
    max_size=12,
    unique_by=lambda add: add[:2],
)
_ops = st.lists(
    st.one_of(st.tuples(st.just("add"), _adds), st.tuples(st.sampled_from(["drop", "alter"]), st.integers(0, 50))),
    max_size=6,
)


def _hr(text: str) -> int | None:
    return None if text == DEFAULT_PARTITION_NAME else int(text)


def _calls(model: dict) -> list[tuple[str, tuple, Callable[[Partition], bool] | None, bool]]:
    """(method, arguments, which partitions it returns in the oracle (None: by names), names?) of each call."""
    known = sorted(model)
    wanted = [*known[::2], "ds=nope/hr=1"]
    by_name = set(wanted)
    return [
        ("get_partitions", ("d", "t", -1), lambda p: True, False),
        ("get_partitions", ("d", "t", 3), None, False),
        ("get_partition_names", ("d", "t", -1), lambda p: True, True),
        ("get_partitions_by_filter", ("d", "t", 'ds = "2024-01-01"', -1), lambda p: p.values[0] == "2024-01-01", False),
        ("get_partitions_by_filter", ("d", "t", "hr = 3", -1), lambda p: p.values[1] == 3, False),
        (
            "get_partitions_by_filter",
            ("d", "t", 'ds >= "a" and hr < 12', -1),
            lambda p: p.values[0] is not None and p.values[0] >= "a" and p.values[1] is not None and p.values[1] < 12,
            False,
        ),
        ("get_partitions_by_names", ("d", "t", wanted), lambda p: p.name in by_name, False),
        ("get_partitions_ps", ("d", "t", ["a/b", ""], -1), lambda p: p.values[0] == "a/b", False),
        ("get_partitions_ps", ("d", "t", ["", "12"], -1), lambda p: p.values[1] == 12, False),
        ("get_partition_names_ps", ("d", "t", ["", "0"], -1), lambda p: p.values[1] == 0, True),
    ]


def _oracle(servers: Servers, keep: Callable[[Partition], bool] | None, limit: int, names: bool) -> bytes:
    """What a call returns: the Thrift runtime's encoding of the metastore's `Partition` objects it selects."""
    with Metastore.open(servers.url, warehouse=str(servers.root)) as ms:
        table = ms.table("d", "t")
        parts = table.partitions()
        view = TableView(table.definition)
    chosen = [p for p in parts if keep(p)] if keep is not None else parts[:limit]
    body = [string(p.name) if names else thrift_bytes(view.partition(p)) for p in chosen]
    return list_header(TType.STRING if names else TType.STRUCT, len(body)) + b"".join(body)


def _apply(servers: Servers, model: dict, op: tuple, step: int) -> None:
    """One write, through the warm handler (its cache records the step) or the cold one (a step the warm one's cache
    did not see, as another server's), by turns."""
    kind, arg = op
    writer = servers.warm if step % 2 else servers.cold
    if kind == "alter":
        if model:
            name = sorted(model)[arg % len(model)]
            values = servers.call(writer, "partition_name_to_vals", name)
            part = ttypes.Partition(values=values, dbName="d", tableName="t", sd=_sd(None), parameters={"n": str(step)})
            servers.call(writer, "alter_partitions", "d", "t", [part])
        return
    if kind == "drop":
        if model:
            name = sorted(model)[arg % len(model)]
            assert servers.call(writer, "drop_partition_by_name", "d", "t", name, False)
            del model[name]
        return
    parts = []
    for n, (ds, hr, extra) in enumerate(arg):
        location = f"s3a://elsewhere/{step}/{n}" if extra == "own" else None
        params = {"k": str(n)} if extra == "params" else {}
        parts.append(ttypes.Partition(values=[ds, hr], dbName="d", tableName="t", sd=_sd(location), parameters=params))
    request = ttypes.AddPartitionsRequest(dbName="d", tblName="t", parts=parts, ifNotExists=True, needResult=False)
    servers.call(writer, "add_partitions_req", request)
    for ds, hr, _ in arg:
        name = f"ds={ds.replace('/', '%2F').replace('=', '%3D').replace('%41', '%2541') or DEFAULT_PARTITION_NAME}"
        model.setdefault(f"{name}/hr={hr}", True)


@pytest.mark.parametrize("arrow_min", [1, 1 << 30])
def test_cold_replies_equal_warm_ones_and_the_oracle_after_adds_and_drops(backend, tmp_path_factory, arrow_min):
    @settings(
        max_examples=max(1, int(8 * SCALE)),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(_ops)
    def run(ops):
        servers = Servers(backend(), tmp_path_factory.mktemp("root"))
        try:
            model: dict = {}
            for step, op in enumerate([("add", [("2024-01-01", "3", None)]), *ops]):
                _apply(servers, model, op, step)
                with Metastore.open(servers.url) as ms:
                    assert sorted(p.name for p in ms.table("d", "t").partitions()) == sorted(model)
                for method, args, keep, names in _calls(model):
                    cold = servers.call(servers.cold, method, *args)
                    servers.call(servers.warm, method, *args)
                    warm = servers.call(servers.warm, method, *args)
                    expected = _oracle(servers, keep, 3, names)
                    assert cold == expected, (method, args)
                    assert warm == expected, (method, args)
        finally:
            servers.close()

    original = encode.ARROW_MIN
    encode.ARROW_MIN = arrow_min
    try:
        run()
    finally:
        encode.ARROW_MIN = original


def test_a_write_keeps_the_replies_it_cannot_change(backend, tmp_path):
    servers = Servers(backend(), tmp_path)
    warm, cold = servers.warm, servers.cold

    def add(handler: Handler, ds: str, hr: str = "3") -> None:
        part = ttypes.Partition(values=[ds, hr], dbName="d", tableName="t", sd=_sd(None), parameters={})
        servers.call(handler, "add_partitions", [part])

    calls = {
        "day": ("get_partitions_by_filter", "d", "t", 'ds = "2024-01-01"', -1),
        "hour": ("get_partitions_by_filter", "d", "t", "hr = 3", -1),
        "names": ("get_partitions_by_names", "d", "t", ["ds=2024-01-01/hr=3"]),
        "spec": ("get_partitions_ps", "d", "t", ["2024-01-02", ""], -1),
        "all": ("get_partition_names", "d", "t", -1),
        "every": ("get_partitions", "d", "t", -1),
    }

    def served() -> dict[str, bool]:
        """Whether each call came from the warm handler's cache; each reply checked against the cold one's."""
        out = {}
        for label, (method, *args) in calls.items():
            reply = servers.call(warm, method, *args)
            out[label] = servers.cached
            assert reply == servers.call(cold, method, *args), label
        return out

    try:
        add(warm, "2024-01-01")
        add(warm, "2024-01-02")
        served()
        assert served() == dict.fromkeys(calls, True)
        add(warm, "2024-01-03")  # in the hour's scope; after every key: appended to the whole listing
        assert served() == {"day": True, "hour": False, "names": True, "spec": True, "all": True, "every": True}
        add(warm, "2024-01-03", "4")
        add(warm, "2024-01-04", "0")  # two steps since the listing was read, each after the one before
        assert served() == {"day": True, "hour": True, "names": True, "spec": True, "all": True, "every": True}
        add(warm, "2024-01-03", "1")  # before the listing's last key: it is read again
        assert served() == {"day": True, "hour": True, "names": True, "spec": True, "all": False, "every": False}
        altered = ttypes.Partition(values=["2024-01-03", "3"], dbName="d", tableName="t", sd=_sd(None))
        altered.parameters = {"k": "v"}
        servers.call(warm, "alter_partition", "d", "t", altered)  # in the hour's scope; an alter ends the listing
        assert served() == {"day": True, "hour": False, "names": True, "spec": True, "all": False, "every": False}
        assert servers.call(warm, "drop_partition_by_name", "d", "t", "ds=2024-01-02/hr=3", False)
        assert served() == {"day": True, "hour": False, "names": True, "spec": False, "all": False, "every": False}
        add(cold, "2024-01-09")  # a step the warm cache did not see (as another server's write): nothing is kept
        assert served() == dict.fromkeys(calls, False)
    finally:
        servers.close()


def test_a_cold_handler_reads_each_name_once_and_builds_no_scope(backend, tmp_path, monkeypatch):
    """A server without a reply cache does no work for one: `get_partitions_by_names` parses each name once (it
    parsed them again for the scope of a reply it could not keep), and a filter call compiles no scope."""
    from sargable.hms import handler as handler_module
    from sargable.metastore import partitions

    servers = Servers(backend(), tmp_path)
    parsed: list[str] = []
    scopes: list[str] = []
    parse, compile_scope = partitions.parse_partition_name, handler_module.compile_predicate
    monkeypatch.setattr(partitions, "parse_partition_name", lambda name, keys: parsed.append(name) or parse(name, keys))
    monkeypatch.setattr(handler_module, "compile_predicate", lambda expr: scopes.append(expr) or compile_scope(expr))
    try:
        part = ttypes.Partition(values=["2024-01-01", "3"], dbName="d", tableName="t", sd=_sd(None), parameters={})
        servers.call(servers.cold, "add_partitions", [part])
        names = ["ds=2024-01-01/hr=3", "ds=2024-01-02/hr=3"]
        parsed.clear()
        reply = servers.call(servers.cold, "get_partitions_by_names", "d", "t", names)
        assert sorted(parsed) == sorted(names)
        assert reply == servers.call(servers.warm, "get_partitions_by_names", "d", "t", names)
        scopes.clear()
        servers.call(servers.cold, "get_partitions_by_filter", "d", "t", "hr = 3", -1)
        assert scopes == []
        servers.call(servers.warm, "get_partitions_by_filter", "d", "t", "hr = 3", -1)
        assert len(scopes) == 1
    finally:
        servers.close()
