"""`sargable serve` through an independent Thrift client (pymetastore's generated client on the plain Thrift runtime,
no sargable code on the client side): metadata round trips, Hive-syntax filters against DuckDB, Hive's exception
types, fb303, read-only, framed transport, hostile input, a clean stop and a restart."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import time

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hms_server import SargableServe, thrift_client
from metastore_fixtures import fresh_url
from sargable.metastore import Metastore

pytest.importorskip("pymetastore")
from pymetastore.hive_metastore import ttypes
from thrift.Thrift import TApplicationException

DATES = ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-10", "2024-02-01"]
HOURS = [0, 1, 2, 3, 5]
DEFAULT = "__HIVE_DEFAULT_PARTITION__"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"serve-{request.param}")
    postgres = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    serve = SargableServe(tmp, fresh_url(request.param, tmp, postgres)).start()
    yield serve
    assert serve.stop() == 0


def _sd(location: str | None, cols: list | None = None) -> ttypes.StorageDescriptor:
    return ttypes.StorageDescriptor(
        cols=cols or [ttypes.FieldSchema("x", "int", None)],
        location=location,
        inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
        serdeInfo=ttypes.SerDeInfo(None, "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe", {"a": "b"}),
        numBuckets=-1,
    )


def _table(db: str, name: str, location: str, keys=(("ds", "string"), ("hr", "int")), cols=None) -> ttypes.Table:
    return ttypes.Table(
        tableName=name,
        dbName=db,
        owner="tester",
        sd=_sd(location, cols),
        partitionKeys=[ttypes.FieldSchema(k, t, None) for k, t in keys],
        parameters={"p": "1"},
        tableType="EXTERNAL_TABLE",
    )


def _partition(db: str, table: str, values: list[str], location: str | None = None, params=None) -> ttypes.Partition:
    return ttypes.Partition(values=values, dbName=db, tableName=table, sd=_sd(location), parameters=params or {})


@pytest.fixture(scope="module")
def grid(server, tmp_path_factory):
    """Database `g` with table `parts` (ds string, hr int): every DATES x HOURS partition plus NULL ones."""
    root = tmp_path_factory.mktemp("grid")
    with thrift_client(server.port) as client:
        client.create_database(ttypes.Database(name="g", locationUri=f"file:{root}/g.db"))
        client.create_table(_table("g", "parts", f"file:{root}/g.db/parts"))
        values = [[d, str(h)] for d in DATES for h in HOURS] + [[DEFAULT, "1"], ["2024-01-02", DEFAULT]]
        parts = [_partition("g", "parts", v) for v in values]
        added = client.add_partitions_req(ttypes.AddPartitionsRequest("g", "parts", parts, True, True))
        assert len(added.partitions) == len(values)
    rows = [(None if d == DEFAULT else d, None if h == DEFAULT else int(h)) for d, h in values]
    return rows


def test_metadata_round_trips(server, tmp_path):
    cols = [
        ttypes.FieldSchema("x", "int", "the x"),
        ttypes.FieldSchema("tags", "array<string>", None),
        ttypes.FieldSchema("attrs", "map<string,struct<a:int,b:binary>>", "complex"),
        ttypes.FieldSchema("amount", "decimal(10,2)", None),
    ]
    with thrift_client(server.port) as client:
        assert client.set_ugi("me", ["g1"]) == ["g1", "me"]
        client.create_database(
            ttypes.Database(
                name="rt",
                description="round trips",
                locationUri=f"file:{tmp_path}/rt.db",
                parameters={"k": "v"},
                ownerName="ann",
                ownerType=ttypes.PrincipalType.USER,
            )
        )
        database = client.get_database("rt")
        assert database.locationUri == f"file:{tmp_path}/rt.db"
        assert (database.description, database.parameters, database.ownerName, database.ownerType) == (
            "round trips",
            {"k": "v"},
            "ann",
            ttypes.PrincipalType.USER,
        )
        assert "rt" in client.get_all_databases() and client.get_databases("r*") == ["rt"]
        sent = _table("rt", "t", f"file:{tmp_path}/rt.db/t", cols=cols)
        sent.sd.bucketCols, sent.sd.numBuckets = ["x"], 4
        sent.sd.sortCols = [ttypes.Order("x", 1)]
        client.create_table(sent)
        got = client.get_table("rt", "t")
        assert got.sd.cols == cols and got.partitionKeys == sent.partitionKeys
        assert (got.sd.location, got.sd.inputFormat, got.sd.outputFormat) == (
            sent.sd.location,
            sent.sd.inputFormat,
            sent.sd.outputFormat,
        )
        assert got.sd.serdeInfo.serializationLib == sent.sd.serdeInfo.serializationLib
        assert got.sd.serdeInfo.parameters == {"a": "b"}
        assert (got.sd.bucketCols, got.sd.numBuckets, got.sd.sortCols) == (["x"], 4, [ttypes.Order("x", 1)])
        assert got.owner == "tester" and got.tableType == "EXTERNAL_TABLE"
        assert got.parameters["p"] == "1" and "transient_lastDdlTime" in got.parameters
        assert client.get_tables("rt", "*") == ["t"] and client.get_all_tables("rt") == ["t"]
        assert [t.tableName for t in client.get_table_objects_by_name("rt", ["t", "missing"])] == ["t"]
        assert [f.name for f in client.get_schema("rt", "t")] == ["x", "tags", "attrs", "amount", "ds", "hr"]

        new = client.get_table("rt", "t")
        new.parameters = {**new.parameters, "numRows": "7"}
        new.sd.cols = [*cols, ttypes.FieldSchema("added", "string", "new column")]
        client.alter_table("rt", "t", new)
        after = client.get_table("rt", "t")
        assert after.parameters["numRows"] == "7" and after.sd.cols[-1].name == "added"

        view = ttypes.Table(
            tableName="v",
            dbName="rt",
            sd=ttypes.StorageDescriptor(cols=[ttypes.FieldSchema("x", "int", None)], serdeInfo=ttypes.SerDeInfo()),
            partitionKeys=[],
            parameters={},
            viewOriginalText="SELECT x FROM rt.t",
            viewExpandedText="SELECT `t`.`x` FROM `rt`.`t`",
            tableType="VIRTUAL_VIEW",
        )
        client.create_table(view)
        got_view = client.get_table("rt", "v")
        assert got_view.tableType == "VIRTUAL_VIEW" and got_view.sd.location is None
        assert got_view.viewExpandedText == view.viewExpandedText
        client.drop_table("rt", "v", False)
        assert client.get_tables("rt", "*") == ["t"]

    with Metastore.open(server.metastore_url) as ms:  # the Hive fields are the metastore's own, not properties
        stored = ms.get_table("rt", "t")
        assert stored.hive is not None and stored.hive.owner == "tester" and stored.hive.storage.num_buckets == 4
        assert stored.hive.columns[-1] == ("added", "string", "new column")
        assert set(stored.properties) == {"p", "numRows", "transient_lastDdlTime"}
        assert ms.get_database("rt").hive.description == "round trips"


def test_partition_calls(server, tmp_path):
    with thrift_client(server.port) as client:
        client.create_database(ttypes.Database(name="pc", locationUri=f"file:{tmp_path}/pc.db"))
        client.create_table(_table("pc", "t", f"file:{tmp_path}/pc.db/t"))
        first = [_partition("pc", "t", ["a", "1"]), _partition("pc", "t", ["b", "2"], f"file:{tmp_path}/elsewhere")]
        assert client.add_partitions(first) == 2
        assert (tmp_path / "elsewhere").is_dir() and (tmp_path / "pc.db" / "t" / "ds=a" / "hr=1").is_dir()
        again = [_partition("pc", "t", ["a", "1"]), _partition("pc", "t", ["c", "3"], params={"numRows": "5"})]
        with pytest.raises(ttypes.AlreadyExistsException):
            client.add_partitions_req(ttypes.AddPartitionsRequest("pc", "t", again, False, True))
        added = client.add_partitions_req(ttypes.AddPartitionsRequest("pc", "t", again, True, True))
        assert [p.values for p in added.partitions] == [["c", "3"]]
        assert added.partitions[0].parameters == {"numRows": "5"}
        assert client.get_partition_names("pc", "t", -1) == ["ds=a/hr=1", "ds=b/hr=2", "ds=c/hr=3"]
        assert client.get_partition_names("pc", "t", 2) == ["ds=a/hr=1", "ds=b/hr=2"]
        assert client.get_partition("pc", "t", ["b", "2"]).sd.location == f"file:{tmp_path}/elsewhere"
        by_name = client.get_partition_by_name("pc", "t", "ds=a/hr=1")
        assert by_name.sd.location == f"file:{tmp_path}/pc.db/t/ds=a/hr=1"
        with_auth = client.get_partition_with_auth("pc", "t", ["c", "3"], "me", [])
        assert with_auth.parameters == {"numRows": "5"}
        with pytest.raises(ttypes.NoSuchObjectException):
            client.get_partition("pc", "t", ["z", "9"])
        assert [p.values for p in client.get_partitions_ps("pc", "t", ["b", ""], -1)] == [["b", "2"]]
        assert client.get_partition_names_ps("pc", "t", ["", "3"], -1) == ["ds=c/hr=3"]
        names = client.get_partitions_by_names("pc", "t", ["ds=c/hr=3", "ds=a/hr=1", "ds=q/hr=1"])
        assert [p.values for p in names] == [["a", "1"], ["c", "3"]]
        assert client.append_partition("pc", "t", ["d", "4"]).values == ["d", "4"]
        assert client.append_partition_by_name("pc", "t", "ds=e/hr=5").values == ["e", "5"]

        changed = client.get_partition("pc", "t", ["a", "1"])
        changed.parameters = {"numRows": "10", "totalSize": "99"}
        client.alter_partitions("pc", "t", [changed])
        assert client.get_partition("pc", "t", ["a", "1"]).parameters == {"numRows": "10", "totalSize": "99"}

        assert client.drop_partition("pc", "t", ["d", "4"], False)
        assert client.drop_partition_by_name("pc", "t", "ds=e/hr=5", False)
        with pytest.raises(ttypes.NoSuchObjectException):
            client.drop_partition("pc", "t", ["d", "4"], False)
        assert len(client.get_partitions("pc", "t", -1)) == 3
        assert client.get_num_partitions_by_filter("pc", "t", "hr >= 2") == 2
        assert client.partition_name_to_vals("ds=a%2Fb/hr=1") == ["a/b", "1"]
    with Metastore.open(server.metastore_url) as ms:  # parameters and Hive fields are the partition row's own
        stored = ms.get_partitions_by_names("pc", "t", ["ds=a/hr=1"])[0]
        assert stored.parameters == {"numRows": "10", "totalSize": "99"} and stored.hive is not None


# Hive filter text -> the same predicate in DuckDB SQL (the oracle); LIKE in a Hive filter is a Java regex.
_ATOMS = st.one_of(
    st.builds(
        lambda op, d: (f'ds {op} "{d}"', f"ds {op} '{d}'"),
        st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
        st.sampled_from([*DATES, "2024-01-05"]),
    ),
    st.builds(
        lambda op, h: (f"hr {op} {h}", f"hr {op} {h}"),
        st.sampled_from(["=", "<>", "<", "<=", ">", ">="]),
        st.integers(-1, 6),
    ),
    st.builds(
        lambda p: (f'ds like "{p}"', f"regexp_full_match(ds, '{p}')"),
        st.sampled_from(["2024-01-0.*", ".*-01", "2024-0[12]-.*", "2024-01-1."]),
    ),
    st.builds(
        lambda lo, hi: (f"hr between {lo} and {hi}", f"hr between {lo} and {hi}"), st.integers(0, 3), st.integers(1, 5)
    ),
)


def _combine(children):
    return st.one_of(
        st.builds(lambda a, b: (f"({a[0]} and {b[0]})", f"({a[1]} and {b[1]})"), children, children),
        st.builds(lambda a, b: (f"({a[0]} or {b[0]})", f"({a[1]} or {b[1]})"), children, children),
    )


FILTERS = st.recursive(_ATOMS, _combine, max_leaves=4)


def _values(partitions) -> set[tuple]:
    return {(None if d == DEFAULT else d, None if h == DEFAULT else int(h)) for d, h in (p.values for p in partitions)}


@settings(max_examples=60)
@given(FILTERS)
def test_filters_match_duckdb(server, grid, pair):
    hive, sql = pair
    con = duckdb.connect()
    con.execute("create table parts (ds varchar, hr integer)")
    con.executemany("insert into parts values (?, ?)", grid)
    expected = set(con.execute(f"select ds, hr from parts where {sql}").fetchall())
    with thrift_client(server.port) as client:
        got = client.get_partitions_by_filter("g", "parts", hive, -1)
    assert _values(got) == expected, hive


@pytest.mark.parametrize(
    "hive",
    [
        '(hr) in (1, 2) and ds != "2024-01-01"',
        '(ds) in ("2024-01-01", "2024-01-03")',
        "(hr) not in (1, 2)",
        'ds >= "2024-01-02" and ds <= "2024-01-03"',
    ],
)
def test_filters_spark_sends(server, grid, hive):
    sql = hive.replace('"', "'").replace("(hr) in", "hr in").replace("(ds) in", "ds in").replace("(hr) not", "hr not")
    con = duckdb.connect()
    con.execute("create table parts (ds varchar, hr integer)")
    con.executemany("insert into parts values (?, ?)", grid)
    expected = set(con.execute(f"select ds, hr from parts where {sql}").fetchall())
    with thrift_client(server.port) as client:
        assert _values(client.get_partitions_by_filter("g", "parts", hive, -1)) == expected


def test_hive_exceptions(server, grid):
    with thrift_client(server.port) as client:
        with pytest.raises(ttypes.NoSuchObjectException, match=r"g\.nope table not found"):
            client.get_table("g", "nope")
        with pytest.raises(ttypes.NoSuchObjectException):
            client.get_database("nope")
        with pytest.raises(ttypes.AlreadyExistsException):
            client.create_database(ttypes.Database(name="g"))
        with pytest.raises(ttypes.AlreadyExistsException):
            client.create_table(_table("g", "parts", "file:/tmp/unused"))
        with pytest.raises(ttypes.MetaException, match="not a partition key"):
            client.get_partitions_by_filter("g", "parts", 'nope = "x"', -1)
        with pytest.raises(ttypes.MetaException):
            client.get_partitions_by_filter("g", "parts", "ds = = 1", -1)
        with pytest.raises(TApplicationException) as unknown:
            client.get_partitions_by_expr(ttypes.PartitionsByExprRequest("g", "parts", b"\x00"))
        assert unknown.value.type == TApplicationException.UNKNOWN_METHOD
        with pytest.raises(TApplicationException) as unknown:
            client.get_catalogs()
        assert unknown.value.type == TApplicationException.UNKNOWN_METHOD
        assert len(client.get_partitions_by_filter("g", "parts", 'ds = "2024-01-02" and hr = 3', -1)) == 1


def _call(name: str, seqid: int = 1, body: bytes = b"\x00", *, oneway: bool = False) -> bytes:
    """A strict binary-protocol message: version and type, method name, sequence id, then the argument struct."""
    kind = 4 if oneway else 1
    return struct.pack("!Ii", 0x80010000 | kind, len(name)) + name.encode() + struct.pack("!i", seqid) + body


def _still_serving(server: SargableServe) -> None:
    assert server.alive()
    with thrift_client(server.port) as client:
        assert "g" in client.get_all_databases()


def test_fb303_and_framed(server, grid):
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(_call("shutdown", oneway=True))
        sock.sendall(_call("getName", 7))
        reply = sock.recv(4096)
        assert b"getName" in reply and b"sargable" in reply
    with thrift_client(server.port, framed=True) as client:
        assert len(client.get_partitions_by_filter("g", "parts", 'ds = "2024-01-03"', -1)) == len(HOURS)
    _still_serving(server)


def _string(text: bytes) -> bytes:
    return struct.pack("!i", len(text)) + text


@pytest.mark.parametrize(
    "payload",
    [
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        b"\x7f\xff\xff\xff\x80\x01\x00\x01",  # a 2 GB frame
        _call("get_table", body=b"\x0b\x00\x01\x7f\xff\xff\xff"),  # a 2 GB string
        _call("get_table_objects_by_name", body=b"\x0f\x00\x02\x0b\x7f\xff\xff\xff"),  # a 2^31 list
        _call("get_table", body=b"\x0b\x00\x01" + _string(b"g")[:3]),  # truncated
        _call("get_partitions", body=b"\x0b\x00\x01" + _string(b"g") + b"\x0b\x00\x02" + _string(b"parts") + b"\x00"),
        b"\x80\x01\x00\x01\x00\x00\x00\x03get\x00\x00\x00\x01\x0c\x00\x01\x0c\x00\x01" * 3,
    ],
    ids=["garbage", "2gb-frame", "2gb-string", "huge-list", "truncated", "vanish-before-reply", "nonsense-structs"],
)
def test_hostile_input_leaves_server_serving(server, grid, payload):
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.settimeout(5)
        try:  # the server may close the connection before all of it is sent or read
            sock.sendall(payload)
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(65536):
                pass
        except OSError:
            pass
    _still_serving(server)


def test_read_only_restart_and_clean_stop(tmp_path):
    url = f"sqlite:///{tmp_path / 'meta.db'}"
    with SargableServe(tmp_path / "rw", url) as serve:
        with thrift_client(serve.port) as client:
            client.create_database(ttypes.Database(name="ro", locationUri=f"file:{tmp_path}/ro.db"))
            client.create_table(_table("ro", "t", f"file:{tmp_path}/ro.db/t"))
            client.add_partitions([_partition("ro", "t", ["a", str(h)]) for h in range(3)])
            before = [p.values for p in client.get_partitions_by_filter("ro", "t", "hr > 0", -1)]
        code = serve.stop()
    assert code == 0 and "stopped" in serve.log.read_text()
    with SargableServe(tmp_path / "ro", url, read_only=True) as serve:
        with thrift_client(serve.port) as client:
            assert [p.values for p in client.get_partitions_by_filter("ro", "t", "hr > 0", -1)] == before
            with pytest.raises(ttypes.MetaException, match="read-only"):
                client.add_partitions([_partition("ro", "t", ["b", "1"])])
            with pytest.raises(ttypes.MetaException, match="read-only"):
                client.drop_table("ro", "t", False)
            assert client.get_partition_names("ro", "t", -1) == ["ds=a/hr=0", "ds=a/hr=1", "ds=a/hr=2"]
        lines = serve.calls()
    assert any(line.startswith("get_partitions_by_filter table=ro.t filter='hr > 0' partitions=2") for line in lines)
    assert any(
        line.startswith("add_partitions") and line.endswith(f"MetaException peer={line.split('peer=')[1]}")
        for line in lines
    )


def test_stop_finishes_in_flight_calls(tmp_path):
    """SIGTERM while a client keeps calling: every call made gets its answer, and the server exits 0."""
    with SargableServe(tmp_path, f"sqlite:///{tmp_path / 'meta.db'}") as serve:
        answered = 0
        with thrift_client(serve.port) as client:
            client.create_database(ttypes.Database(name="s", locationUri=f"file:{tmp_path}/s.db"))
            deadline = time.monotonic() + 0.3
            while time.monotonic() < deadline:
                assert client.get_all_databases() == ["s"]
                answered += 1
            serve.process.send_signal(15)
            try:
                while True:
                    assert client.get_all_databases() == ["s"]
                    answered += 1
            except Exception:
                pass
        assert serve.process.wait(30) == 0
        serve.process = None
    assert answered > 0


def test_serve_refuses_a_missing_metastore_and_names_the_one_it_serves(tmp_path):
    """A mistyped metastore is an error that creates nothing; `--create` makes one, and the start-up log names it."""
    missing = tmp_path / "no" / "such" / "meta.db"
    refused = subprocess.run(
        [sys.executable, "-m", "sargable.cli", "--metastore", f"sqlite:///{missing}", "serve", "--port", "0"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert refused.returncode == 1, refused.stderr
    assert f"no metastore at {missing}" in refused.stderr and "serve --create" in refused.stderr
    assert not (tmp_path / "no").exists()
    url = f"sqlite:///{tmp_path / 'new' / 'meta.db'}"
    with SargableServe(tmp_path / "w", url) as serve:
        with thrift_client(serve.port) as client:
            assert client.get_all_databases() == []
        log = serve.log.read_text()
    assert f"metastore {url}, warehouse {serve.warehouse}" in log


def test_serve_without_the_hms_extra_says_how_to_install_it(tmp_path):
    """Where thrift is not installed (the venv of `make demo`), `serve` names the extra and the line that installs it
    from a checkout, instead of an internal error."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import sys\n"
        "class NoThrift:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.partition('.')[0] in ('thrift', 'pymetastore'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, NoThrift())\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-m", "sargable.cli", "--metastore", f"sqlite:///{tmp_path / 'm.db'}", "serve", "--create"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    assert done.returncode == 1
    assert "internal error" not in done.stderr
    assert "needs the hms extra" in done.stderr and "pip install -e '.[hms]'" in done.stderr, done.stderr
