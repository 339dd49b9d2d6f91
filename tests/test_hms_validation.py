"""No client can damage the catalog (issue 26, row 3 and item 2): every field of a Thrift struct the server stores is
checked before the transaction, and refused with Hive's exception naming the field.

The property: after any sequence of write calls with random and None-filled structs (generated from the bindings'
own `thrift_spec`, and valid structs with one field knocked out or replaced), each call either works or raises one of
the Hive exceptions its method declares (never an internal error), and the metastore still opens, lists every
database, table and partition, reads every table, `sargable tables` works, a new table can be made in every database,
and everything drops. In process over a fresh SQLite metastore per example; a few examples over a real server's
socket. The budget scales with SARGABLE_FUZZ_SCALE, as in test_fuzz.py (`make fuzz` runs it 20 times longer).

Metastores damaged before these checks (a column without a type stored by an earlier server) keep working: the
damage refuses only its own object, naming it.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from thrift.Thrift import TException, TType

pytest.importorskip("pymetastore")

from hms_inprocess import InProcess
from hms_server import SargableServe
from sargable.cli import main
from sargable.hms.bindings import ThriftHiveMetastore, ttypes
from sargable.hms.handler import IMPLEMENTED, WRITE_METHODS
from sargable.metastore import Metastore
from sargable.metastore.hive import HiveDatabase, HivePartition, HiveStorage, HiveTable

SCALE = float(os.environ.get("SARGABLE_FUZZ_SCALE", "1"))
ROOT = Path(tempfile.mkdtemp(prefix="sargable-hms-validation-"))
"""Every local location the generated structs name is below this folder (made and removed by this module)."""
WRITES = sorted(WRITE_METHODS & IMPLEMENTED)


@pytest.fixture(scope="module", autouse=True)
def _root() -> Iterator[None]:
    (ROOT / "loc").mkdir(exist_ok=True)
    (ROOT / "loc" / "a-file").write_text("in the way")
    yield
    shutil.rmtree(ROOT, ignore_errors=True)


def budget(examples: int) -> Any:
    return settings(
        max_examples=max(1, int(examples * SCALE)),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# --------------------------------------------------------------------------------------------- strategies

WORDS = [
    "d", "e", "t", "u", "x", "y", "X", "ds", "hr", "a", "1", "", "bad name", "sargable.hms.table", "int", "string",
    "garbage", "uniontype<int,string>", "decimal(40,2)", "array<int>", "map<array<int>,int>", "struct<a:int>",
    "<derived from deserializer>", "MANAGED_TABLE", "EXTERNAL_TABLE", "VIRTUAL_VIEW", "ds=a/hr=1", "ds=a", "hr=1/ds=a",
    "x" * 300, "\udc80", "\x00",
]  # fmt: skip
LOCATIONS = [
    str(ROOT / "loc" / "a"),
    f"file://{ROOT}/loc/b",
    f"{ROOT}/loc/a/../c",
    str(ROOT / "loc" / "a-file"),
    str(ROOT / "loc" / "a-file" / "below"),
    str(ROOT / "loc" / ("n" * 300)),
    f"file:{ROOT}/loc/%41",
    "s3a://bucket/t",
    "hdfs://nn:8020/w/t",
    "relative/x",
    "file:relative",
    "/",
]
_free = st.text(max_size=6).filter(lambda s: not s.lstrip().startswith("/") and "file:" not in s.lower())
"""Random text that can't name a local absolute folder (none is ever made outside ROOT)."""
strings = st.sampled_from(WORDS) | st.sampled_from(LOCATIONS) | _free
integers = st.sampled_from([-2, -1, 0, 1, 2, 3, 7]) | st.integers(-(2**31), 2**31 - 1)


def _opt(strategy: st.SearchStrategy) -> st.SearchStrategy:
    return st.none() | strategy


def from_spec(ttype: int, spec: Any, depth: int = 0) -> st.SearchStrategy:
    """Values of one Thrift type (None included), as the bindings' `thrift_spec` describes it."""
    if ttype == TType.STRING:
        return _opt(strings)
    if ttype == TType.BOOL:
        return _opt(st.booleans())
    if ttype in (TType.I16, TType.I32, TType.I64, TType.BYTE):
        return _opt(integers)
    if ttype == TType.DOUBLE:
        return _opt(st.floats(allow_nan=False))
    if depth > 4:
        return st.none()
    if ttype in (TType.LIST, TType.SET):
        element = from_spec(spec[0], spec[1], depth + 1)
        return _opt(st.lists(element, max_size=3).map(set if ttype == TType.SET else list))
    if ttype == TType.MAP:
        key = from_spec(spec[0], spec[1], depth + 1).map(lambda k: tuple(k) if isinstance(k, list) else k)
        return _opt(st.dictionaries(key, from_spec(spec[2], spec[3], depth + 1), max_size=3))
    if ttype == TType.STRUCT:
        return _opt(structs(spec[0], depth + 1))
    return st.none()


def structs(cls: type, depth: int = 0) -> st.SearchStrategy:
    """Random structs of a bindings class, any field None."""
    fields = {entry[2]: from_spec(entry[1], entry[3], depth) for entry in cls.thrift_spec if entry}
    return st.builds(cls, **fields)


def _sd(location: Any = None, cols: Any = None) -> ttypes.StorageDescriptor:
    return ttypes.StorageDescriptor(
        cols=cols if cols is not None else [ttypes.FieldSchema("x", "int", "c"), ttypes.FieldSchema("y", "string")],
        location=location,
        inputFormat="org.apache.hadoop.mapred.TextInputFormat",
        serdeInfo=ttypes.SerDeInfo(None, "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe", {"k": "v"}),
        bucketCols=["x"],
        numBuckets=4,
        sortCols=[ttypes.Order("x", 1)],
        parameters={},
        skewedInfo=ttypes.SkewedInfo([], [], {}),
    )


def valid_table(db: str = "d", name: str = "t", location: Any = None) -> ttypes.Table:
    keys = [ttypes.FieldSchema("ds", "string", "day"), ttypes.FieldSchema("hr", "int", None)]
    return ttypes.Table(
        tableName=name, dbName=db, owner="ann", sd=_sd(location), partitionKeys=keys, parameters={"p": "q"}
    )


def valid_partition(values: Any = ("a", "1"), db: str = "d", table: str = "t") -> ttypes.Partition:
    return ttypes.Partition(values=list(values), dbName=db, tableName=table, sd=_sd(), parameters={"n": "1"})


def valid_database(name: str = "e") -> ttypes.Database:
    return ttypes.Database(name=name, description="an e", parameters={"k": "v"}, ownerName="ann", ownerType=1)


@st.composite
def mutated(draw: st.DrawFn, obj: Any, depth: int = 0) -> Any:
    """`obj` with one field somewhere in it (a struct, or an entry of a list of structs) replaced by a random value
    of its type, None included."""
    entries = [entry for entry in type(obj).thrift_spec if entry]
    entry = draw(st.sampled_from(entries))
    name, value = entry[2], getattr(obj, entry[2])
    if isinstance(value, list) and value and hasattr(value[0], "thrift_spec") and draw(st.booleans()):
        i = draw(st.integers(0, len(value) - 1))
        value = [*value[:i], draw(mutated(value[i], depth + 1)), *value[i + 1 :]]
    elif hasattr(value, "thrift_spec") and depth < 3 and draw(st.booleans()):
        value = draw(mutated(value, depth + 1))
    else:
        value = draw(from_spec(entry[1], entry[3]))
    copy = type(obj)(**{e[2]: getattr(obj, e[2]) for e in entries})
    setattr(copy, name, value)
    return copy


TEMPLATES = {
    ttypes.Table: lambda: valid_table(name="u"),
    ttypes.Partition: lambda: valid_partition(("b", "2")),
    ttypes.Database: valid_database,
    ttypes.AddPartitionsRequest: lambda: ttypes.AddPartitionsRequest("d", "t", [valid_partition(("c", "3"))], True),
}


def _mostly(likely: st.SearchStrategy, other: st.SearchStrategy) -> st.SearchStrategy:
    """`likely` 4 times in 5, else `other`: calls that get past the names reach the deeper checks."""
    return st.integers(0, 4).flatmap(lambda i: likely if i else other)


NAMED = {
    ("dbName", "db_name", "dbname"): st.sampled_from(["d", "d", "e"]),
    ("tbl_name", "tableName", "name"): st.sampled_from(["t", "t", "u", "d", "e"]),
    ("part_name",): st.sampled_from(["ds=a/hr=1", "ds=b/hr=2", "ds=c/hr=x", "hr=1/ds=a", "ds=a"]),
    ("part_vals",): st.sampled_from([["a", "1"], ["b", "2"], ["a"], ["c", "x"], ["a", "1", "2"]]),
}


def argument(entry: tuple) -> st.SearchStrategy:
    """One argument of a write call: for the structs clients store, mostly a valid one with a field knocked out or
    replaced; for names, mostly ones that exist."""
    ttype, spec, name = entry[1], entry[3], entry[2]
    if ttype == TType.STRUCT and spec[0] in TEMPLATES:
        template = TEMPLATES[spec[0]]
        return _mostly(mutated(template()), st.just(template()) | from_spec(ttype, spec))
    if ttype == TType.LIST and spec[0] == TType.STRUCT and spec[1][0] is ttypes.Partition:
        return st.lists(_mostly(mutated(valid_partition(("c", "4"))), st.just(valid_partition(("c", "5")))), max_size=3)
    for names, likely in NAMED.items():
        if name in names:
            return _mostly(likely, from_spec(ttype, spec))
    return from_spec(ttype, spec)


calls = st.sampled_from(WRITES).flatmap(
    lambda method: st.tuples(
        st.just(method),
        st.tuples(*(argument(e) for e in getattr(ThriftHiveMetastore, f"{method}_args").thrift_spec if e)),
    )
)


# ------------------------------------------------------------------------------------------------ checks


def declared(method: str) -> tuple[type, ...]:
    """The exception types a method's result declares."""
    spec = getattr(ThriftHiveMetastore, f"{method}_result").thrift_spec
    return tuple(entry[3][0] for entry in spec if entry and entry[2] != "success")


def setup(hms: InProcess) -> None:
    hms.call("create_database", ttypes.Database(name="d", locationUri=str(ROOT / "w" / "d.db")))
    hms.call("create_table", valid_table())
    hms.call("add_partition", valid_partition())


def write(hms: InProcess, method: str, args: tuple) -> None:
    """One write call: it works, or raises an exception its method declares."""
    try:
        hms.call(method, *args)
    except TException as exc:
        assert isinstance(exc, declared(method)), f"{method} raised undeclared {exc!r}"


def tables_command(url: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--metastore", url, "tables"])
    return code, out.getvalue() + err.getvalue()


def check_healthy(hms: Any, url: str | None) -> None:
    """The metastore opens, lists and reads everything, takes a new table in every database, and drops it all."""
    if url is not None:
        Metastore.open(url).close()
        code, output = tables_command(url)
        assert code == 0, output
    databases = hms.get_all_databases()
    for db in databases:
        for name in hms.get_all_tables(db):
            table = hms.get_table(db, name)
            assert table is not None
            hms.get_partitions(db, name, -1)
            hms.get_partition_names(db, name, -1)
        hms.create_table(valid_table(db, "fresh_after_fuzz"))
        assert "fresh_after_fuzz" in hms.get_all_tables(db)
    for db in databases:
        for name in hms.get_all_tables(db):
            hms.drop_table(db, name, False)
        hms.drop_database(db, False, False)
    assert hms.get_all_databases() == []


class Calls:
    """The in-process handler as a client object: `hms.get_table(...)` makes the call."""

    def __init__(self, hms: InProcess) -> None:
        self.hms = hms

    def __getattr__(self, method: str) -> Any:
        return lambda *args: self.hms.call(method, *args)


@budget(250)
@given(st.lists(calls, min_size=1, max_size=6))
def test_random_write_calls_leave_the_metastore_whole(sequence):
    with tempfile.TemporaryDirectory(dir=ROOT) as tmp:
        url = f"sqlite:///{tmp}/meta.db"
        with InProcess(url, Path(tmp) / "warehouse") as hms:
            setup(hms)
            for method, args in sequence:
                write(hms, method, args)
            check_healthy(Calls(hms), url)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("hms-validation")
    with SargableServe(workdir, f"sqlite:///{workdir / 'meta.db'}") as serve:
        yield serve


class Client:
    """A raw Thrift client of the server (a class, not a generator context manager: the frozen Thrift exceptions
    can't pass through one)."""

    def __init__(self, port: int) -> None:
        from pymetastore.hive_metastore import ThriftHiveMetastore as Bindings
        from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated
        from thrift.transport import TSocket, TTransport

        sock = TSocket.TSocket("127.0.0.1", port)
        sock.setTimeout(30_000)
        self.transport = TTransport.TBufferedTransport(sock)
        self.client = Bindings.Client(TBinaryProtocolAccelerated(self.transport))

    def __enter__(self) -> Any:
        self.transport.open()
        return self.client

    def __exit__(self, *exc: object) -> None:
        self.transport.close()


def drop_everything(client: Any) -> None:
    for db in client.get_all_databases():
        for name in client.get_all_tables(db):
            client.drop_table(db, name, False)
        client.drop_database(db, False, False)


@budget(15)
@given(st.lists(calls, min_size=1, max_size=4))
def test_random_write_calls_over_the_socket(server, sequence):
    with Client(server.port) as client:
        drop_everything(client)  # (a failed example may have left its objects)
        client.create_database(ttypes.Database(name="d", locationUri=str(ROOT / "w" / "d.db")))
        client.create_table(valid_table())
        client.add_partition(valid_partition())
    for method, args in sequence:
        with Client(server.port) as client:
            try:
                getattr(client, method)(*args)
            except TException as exc:
                assert isinstance(exc, declared(method)), f"{method} raised undeclared {exc!r}"
            except (TypeError, AttributeError, UnicodeEncodeError, OverflowError, ValueError, struct.error):
                continue  # the client can't send it (None in a list, a lone surrogate): nothing reached the server
    assert server.alive()
    assert not [line for line in server.calls() if " internal error " in line]
    with Client(server.port) as client:
        check_healthy(client, None)
    code, output = tables_command(server.metastore_url)
    assert code == 0, output


def test_missing_arguments_over_the_socket_are_declared_errors(server):
    """Thrift leaves out an argument a client did not set: the server refuses it as one the method declares (it
    was an internal error: the handler's arguments come by name over the socket)."""
    with Client(server.port) as client:
        drop_everything(client)
        client.create_database(ttypes.Database(name="d", locationUri=str(ROOT / "w" / "d.db")))
        client.create_table(valid_table())
        for call, kind, message in [
            (lambda: client.add_partition(None), ttypes.InvalidObjectException, "new_part is missing"),
            (lambda: client.drop_partition("d", "t", None, False), ttypes.MetaException, "part_vals is missing"),
            (lambda: client.alter_table("d", "t", None), ttypes.InvalidOperationException, "new_tbl is missing"),
        ]:
            with pytest.raises(kind, match=message):
                call()
        drop_everything(client)
    assert not [line for line in server.calls() if " internal error " in line]


# ------------------------------------------------------------------------------------------- regressions


def _columns(*cols: ttypes.FieldSchema) -> ttypes.StorageDescriptor:
    return ttypes.StorageDescriptor(cols=list(cols))


def _sorted_by(*orders: ttypes.Order) -> ttypes.StorageDescriptor:
    sd = _sd()
    sd.sortCols = list(orders)
    return sd


def _bucketed_by(*names: Any) -> ttypes.StorageDescriptor:
    sd = _sd()
    sd.bucketCols = list(names)
    return sd


def _serde_parameters(parameters: dict) -> ttypes.StorageDescriptor:
    sd = _sd()
    sd.serdeInfo.parameters = parameters
    return sd


BAD_DESCRIPTORS = {
    "a column without a type": ("sd.cols[0].type", lambda: _columns(ttypes.FieldSchema("x", None, None))),
    "a column without a name": ("sd.cols[0].name", lambda: _columns(ttypes.FieldSchema(None, "garbage", None))),
    "a type that is not Hive's": (
        "sd.cols[1].type",
        lambda: _columns(ttypes.FieldSchema("x", "int"), ttypes.FieldSchema("y", "garbage")),
    ),
    "a sort column without a name": ("sd.sortCols[0].col", lambda: _sorted_by(ttypes.Order(None, None))),
    "a sort order that is neither": ("sd.sortCols[0].order", lambda: _sorted_by(ttypes.Order("x", 7))),
    "a bucket column it doesn't have": ("sd.bucketCols[0]", lambda: _bucketed_by("nope")),
    "a bucket column of None": ("sd.bucketCols[0]", lambda: _bucketed_by(None)),
    "a serde parameter without a value": ("sd.serdeInfo.parameters['k']", lambda: _serde_parameters({"k": None})),
}
"""What a client sent (issue 26 row 3 and its kin) -> the field the refusal names."""


@pytest.mark.parametrize("case", sorted(BAD_DESCRIPTORS))
def test_a_bad_descriptor_is_refused_naming_the_field_and_damages_nothing(metastore_url, tmp_path, case):
    """Issue 26 row 3: these were accepted, and then no table could be created or altered in any database."""
    with InProcess(metastore_url, tmp_path / "warehouse") as hms:
        setup(hms)
        field, descriptor = BAD_DESCRIPTORS[case]
        table = valid_table(name="u")
        table.sd = descriptor()
        with pytest.raises(ttypes.InvalidObjectException, match=rf"table d\.u: {_escaped(field)}"):
            hms.call("create_table", table)
        part = valid_partition(("b", "2"))
        part.sd = descriptor()
        with pytest.raises(ttypes.InvalidObjectException, match=rf"partition \['b', '2'\] of d\.t: {_escaped(field)}"):
            hms.call("add_partition", part)
        part.values = ["a", "1"]
        with pytest.raises(ttypes.InvalidOperationException, match=_escaped(field)):
            hms.call("alter_partition", "d", "t", part)
        with pytest.raises(ttypes.InvalidOperationException, match=_escaped(field)):
            hms.call("alter_table", "d", "t", table)
        assert hms.call("get_all_tables", "d") == ["t"]
        assert [p.values for p in hms.call("get_partitions", "d", "t", -1)] == [["a", "1"]]
        check_healthy(Calls(hms), metastore_url)


def _escaped(text: str) -> str:
    return text.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")


def test_names_owner_types_and_maps_are_checked(metastore_url, tmp_path):
    with InProcess(metastore_url, tmp_path / "warehouse") as hms:
        setup(hms)
        cases = [
            ("create_database", ttypes.Database(name="bad name"), ttypes.InvalidObjectException, "name"),
            ("create_database", ttypes.Database(name="e", ownerType=9), ttypes.InvalidObjectException, "ownerType"),
            ("create_database", ttypes.Database(name="e", parameters={None: "v"}), ttypes.InvalidObjectException,
             "parameters key is missing"),
            ("create_database", ttypes.Database(name="e", locationUri="relative/x"), ttypes.MetaException,
             "locationUri.*relative"),
            ("create_table", valid_table(name=None), ttypes.InvalidObjectException, "tableName is missing"),
            ("create_table", valid_table(name="u", location="relative"), ttypes.MetaException, "sd.location"),
        ]  # fmt: skip
        table = valid_table(name="u")
        table.partitionKeys = [ttypes.FieldSchema("ds", "array<int>", None)]
        cases.append(("create_table", table, ttypes.InvalidObjectException, "partitionKeys.*can't key partitions"))
        table = valid_table(name="u")
        table.partitionKeys = [ttypes.FieldSchema("X", "string", None)]
        cases.append(("create_table", table, ttypes.InvalidObjectException, "partitionKeys.*named twice"))
        table = valid_table(name="u")
        table.parameters = {"k": "v" * ((1 << 20) + 1)}
        cases.append(("create_table", table, ttypes.InvalidObjectException, "characters, more than"))
        cases.append(("add_partition", ttypes.Partition(["a", None], "d", "t"), ttypes.InvalidObjectException,
                      r"values\[1\] is missing"))  # fmt: skip
        request = ttypes.AddPartitionsRequest("d", "t", [valid_partition(("c", "3")), None], True)
        cases.append(("add_partitions_req", request, ttypes.InvalidObjectException, r"parts\[1\] is missing"))
        cases.append(("append_partition", "d", "t", None, ttypes.InvalidObjectException, "part_vals is missing"))
        cases.append(("append_partition", "d", "t", ["a"], ttypes.MetaException, "don't match the partition keys"))
        for method, *args, kind, message in cases:
            with pytest.raises(kind, match=message):
                hms.call(method, *args)
        assert hms.call("get_all_databases") == ["d"]
        table = valid_table(name="u")  # a type sargable can't parse but Hive's: kept as the client spelled it
        table.sd.cols.append(ttypes.FieldSchema("z", "uniontype<int,string>", None))
        hms.call("create_table", table)
        assert [c.type for c in hms.call("get_table", "d", "u").sd.cols] == ["int", "string", "uniontype<int,string>"]
        check_healthy(Calls(hms), metastore_url)


def test_a_metastore_damaged_before_the_checks_keeps_working(metastore_url, tmp_path):
    """A table an earlier server stored with a column without a type, a database with a parameter without a value:
    the rest of the metastore works (new tables, listings, `sargable tables`); the API refuses just that table or
    database naming it, and both drop. A partition with a sort column without a name is listed with its table's
    storage descriptor (a listing never fails half-sent)."""
    ms = Metastore.open(metastore_url, warehouse=tmp_path / "warehouse")
    ms.create_database("d", location=str(tmp_path / "d.db"))
    damaged = HiveTable(columns=(("x", None, None),), storage=HiveStorage(sort_cols=((None, None),)))  # type: ignore[arg-type]
    ms.create_table("d", "broken", [], [("ds", "string")], hive=damaged)
    ms.add_partitions("d", "broken", [["a"]])
    ms.create_table("d", "parts", [("x", "int")], [("ds", "string")], hive=HiveTable())
    bad = HivePartition(storage=HiveStorage(sort_cols=((None, None),)))  # type: ignore[arg-type]
    ms.add_partitions("d", "parts", [["a"], ["b"]], parameters=[{"n": "1"}, None], hive=[bad, None])
    ms.create_database("old", location=str(tmp_path / "old.db"), hive=HiveDatabase(parameters={"k": None}))  # type: ignore[dict-item]
    ms.close()
    with InProcess(metastore_url, tmp_path / "warehouse") as hms:
        hms.call("create_database", ttypes.Database(name="e", locationUri=str(tmp_path / "e.db")))
        hms.call("create_table", valid_table("e", "t"))
        hms.call("create_table", valid_table("d", "t"))
        assert hms.call("get_all_tables", "d") == ["broken", "parts", "t"]
        listed = hms.call("get_partitions", "d", "parts", -1)  # a damaged partition: served with its table's fields
        assert [(p.values, p.parameters, p.sd.sortCols) for p in listed] == [(["a"], {"n": "1"}, []), (["b"], {}, [])]
        with pytest.raises(ttypes.MetaException, match=r"Hive fields of table d\.broken don't decode"):
            hms.call("get_table", "d", "broken")
        with pytest.raises(ttypes.MetaException, match=r"d\.broken"):
            hms.call("get_partitions", "d", "broken", -1)
        code, output = tables_command(metastore_url)
        assert code == 0 and "d.broken" in output, output
        hms.call("drop_table", "d", "broken", False)
        with pytest.raises(ttypes.MetaException, match="Hive fields of database old don't decode"):
            hms.call("get_database", "old")
        hms.call("create_table", valid_table("old", "t"))
        assert hms.call("get_all_databases") == ["d", "e", "old"]
        check_healthy(Calls(hms), metastore_url)
