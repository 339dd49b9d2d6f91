"""`sargable serve` against hostile clients at the transport (issue 26 rows 8-11, issue 27's SIGINT, item 6): idle
connections beyond the limit, clients that never read their listings, huge filters in the log, strings that are not
UTF-8, a stop that says what it waits for, TLS (and mutual TLS) and an allow-list of addresses. Every client here
is pymetastore's generated client on the plain Thrift runtime or raw bytes on a socket (no sargable code)."""

from __future__ import annotations

import signal
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hms_server import SargableServe, self_signed_certificate, thrift_client

pytest.importorskip("pymetastore")
from pymetastore.hive_metastore import ThriftHiveMetastore, ttypes
from thrift.protocol.TBinaryProtocol import TBinaryProtocol, TBinaryProtocolAccelerated
from thrift.transport import TSocket, TTransport
from thrift.transport.TTransport import TMemoryBuffer, TTransportException

from sargable.hms.logs import LINE_CHARS, clip
from sargable.hms.transport import ClientStalled, Reply, ReplyBudget

MARK = "@@MARK@@"


def _wait_for(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f} s: {what}")
        time.sleep(0.05)


def _client_on(sock: socket.socket, *, framed: bool = False) -> ThriftHiveMetastore.Client:
    transport = TSocket.TSocket()
    transport.setHandle(sock)
    wrapped = TTransport.TFramedTransport(transport) if framed else TTransport.TBufferedTransport(transport)
    return ThriftHiveMetastore.Client(TBinaryProtocolAccelerated(wrapped))


def _table(db: str, name: str, location: str) -> ttypes.Table:
    return ttypes.Table(
        tableName=name,
        dbName=db,
        sd=ttypes.StorageDescriptor(
            cols=[ttypes.FieldSchema("x", "int", None)],
            location=location,
            serdeInfo=ttypes.SerDeInfo(None, "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe", {}),
        ),
        partitionKeys=[ttypes.FieldSchema("ds", "string", None)],
        parameters={},
        tableType="EXTERNAL_TABLE",
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server (SQLite) with database `h` and table `h.t` (partition key `ds string`)."""
    tmp = tmp_path_factory.mktemp("hostile")
    serve = SargableServe(tmp, f"sqlite:///{tmp / 'meta.db'}").start()
    with thrift_client(serve.port) as client:
        client.create_database(ttypes.Database(name="h", locationUri=f"file:{tmp}/h.db"))
        client.create_table(_table("h", "t", f"file:{tmp}/h.db/t"))
    yield serve
    assert serve.stop() == 0


# ------------------------------------------------------------------------- row 8: idle connections


def test_idle_connections_beyond_the_limit_close_the_longest_idle_not_the_new_one(tmp_path):
    with SargableServe(tmp_path, f"sqlite:///{tmp_path / 'meta.db'}", args=["--max-connections", "4"]) as serve:
        idle = [socket.create_connection(("127.0.0.1", serve.port), timeout=30) for _ in range(4)]
        idle[0].sendall(b"\x80\x01\x00\x01\x00")  # part of a request, then nothing: not in a call either
        try:
            with thrift_client(serve.port) as first:
                first.create_database(ttypes.Database(name="e", locationUri=f"file:{tmp_path}/e.db"))
                assert idle[0].recv(1) == b""  # the one idle longest made room
                with thrift_client(serve.port) as second:
                    assert second.get_database("e").name == "e"
                    assert idle[1].recv(1) == b""
                assert first.get_all_databases() == ["e"]  # a connection between calls is idle since its last
        finally:
            for sock in idle:
                sock.close()
        assert "closed 127.0.0.1:" in serve.log.read_text()


# ------------------------------------------------------------------ row 9: clients that never read


def _big_table(port: int, root: Path, partitions: int) -> None:
    """Table `h.big` whose listing is about 8 KB a partition (a long parameter)."""
    with thrift_client(port) as client:
        client.create_database(ttypes.Database(name="h", locationUri=f"file:{root}/h.db"))
        client.create_table(_table("h", "big", f"file:{root}/h.db/big"))
        parts = [
            ttypes.Partition(values=[f"v{i:05d}"], dbName="h", tableName="big", parameters={"pad": "x" * 8000})
            for i in range(partitions)
        ]
        assert client.add_partitions(parts) == partitions


def _not_reading(port: int) -> tuple[ThriftHiveMetastore.Client, socket.socket]:
    """A client with a 16 KB receive buffer, so the server can't push a long reply into the socket."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    sock.settimeout(60)
    sock.connect(("127.0.0.1", port))
    return _client_on(sock), sock


def _listings_answered(serve: SargableServe, count: int) -> Callable[[], bool]:
    return lambda: sum(line.startswith("get_partitions table=h.big") for line in serve.calls()) >= count


def test_clients_that_never_read_their_listing_hold_no_catalog(tmp_path):
    """Three clients ask for a 12 MB listing and never read it, on a server of two catalogs: the listings are
    encoded and the catalogs given back, another client's calls are served, and the replies are still whole."""
    partitions = 1500
    args = ["--workers", "2", "--cache-mb", "0"]
    with SargableServe(tmp_path, f"sqlite:///{tmp_path / 'meta.db'}", args=args) as serve:
        _big_table(serve.port, tmp_path, partitions)
        readers = [_not_reading(serve.port) for _ in range(3)]
        try:
            for client, _ in readers:
                client.send_get_partitions("h", "big", -1)
            _wait_for(_listings_answered(serve, 3), "the three listings encoded, their catalogs given back")
            with thrift_client(serve.port, timeout_ms=60_000) as other:
                assert other.get_table("h", "big").tableName == "big"
                assert len(other.get_partition_names("h", "big", -1)) == partitions
            for client, _ in readers:
                got = client.recv_get_partitions()
                assert [p.values[0] for p in got] == [f"v{i:05d}" for i in range(partitions)]
        finally:
            for _, sock in readers:
                sock.close()


def _pair() -> tuple[socket.socket, socket.socket]:
    """A connected pair with small buffers: the server's end (timeout 30 s) and a client's end."""
    server_end, client_end = socket.socketpair()
    server_end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    client_end.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    server_end.settimeout(30)
    return server_end, client_end


def _read_all(sock: socket.socket, size: int, into: bytearray) -> threading.Thread:
    def run() -> None:
        while len(into) < size:
            data = sock.recv(1 << 16)
            if not data:
                return
            into.extend(data)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_streamed_reply_waits_in_memory_for_a_client_that_does_not_read():
    """Within the budget, streaming never waits for the client (the call gives its snapshot back); the reply then
    arrives whole once the client reads, and the budget is given back."""
    server_end, client_end = _pair()
    with server_end, client_end:
        budget = ReplyBudget(64 << 20)
        reply = Reply(server_end, False, budget, hold_timeout=30)
        chunks = [bytes([i]) * Reply.FLUSH for i in range(64)]  # 16 MB, nothing read yet
        for chunk in chunks:
            reply.write(chunk, stream=True)
        assert 0 < budget.used <= 16 << 20
        received = bytearray()
        reader = _read_all(client_end, 16 << 20, received)
        reply.flush()
        reader.join(30)
        assert received == b"".join(chunks) and budget.used == 0


def test_a_streamed_reply_over_the_budget_ends_when_its_client_takes_nothing():
    server_end, client_end = _pair()
    with server_end, client_end:
        budget = ReplyBudget(1 << 20)
        reply = Reply(server_end, False, budget, hold_timeout=0.2)
        with pytest.raises(ClientStalled, match="took too little of its reply"):
            for _ in range(64):
                reply.write(b"x" * Reply.FLUSH, stream=True)
        assert budget.used <= budget.limit
        reply.release()
        assert budget.used == 0


# ------------------------------------------------------------------------------- row 10: the log


def test_a_huge_filter_or_name_logs_one_bounded_line(server):
    size = 2_000_000
    control = "".join(chr(i % 32) for i in range(size))
    before = server.log.stat().st_size
    with thrift_client(server.port) as client:
        for _ in range(3):
            with pytest.raises(ttypes.MetaException):
                client.get_partitions_by_filter("h", "t", control, -1)
        with pytest.raises((ttypes.MetaException, ttypes.NoSuchObjectException)):
            client.get_table("h", "x\n2026-01-01 00:00:00,000 sargable.hms INFO forged line")
    text = server.log.read_bytes()[before:].decode()
    lines = text.splitlines()
    calls = [line for line in lines if "get_partitions_by_filter" in line]
    assert len(calls) == 3
    assert all(len(line) < LINE_CHARS and f"({size:,} chars)" in line for line in calls)
    assert len(text) < 4 * (LINE_CHARS + 200)
    assert not any(line.startswith("2026-01-01") for line in lines)
    assert any("get_table table=h.x\\x0a2026" in line for line in lines)


@given(text=st.text(alphabet=st.characters(codec="utf-8"), max_size=600), limit=st.integers(1, 300))
def test_clip_bounds_and_escapes_any_text(text, limit):
    """Oracle: the text itself. No control character survives, the length is bounded by the limit (not the text),
    a cut says the text's length, and a short printable text is unchanged."""
    for quote in (False, True):
        shown = clip(text, limit, quote=quote)
        assert not any(ch < " " or "\x7f" <= ch <= "\x9f" or ch in "\u2028\u2029" for ch in shown)
        assert len(shown) <= 10 * limit + 40
        assert len(text) <= limit or shown.endswith(f"...({len(text):,} chars)")
    if len(text) <= limit and text.isprintable():
        assert clip(text, limit) == text


# -------------------------------------------------------------------------- row 11: invalid UTF-8


def _request(method: str, *args: object, raw: bytes) -> bytes:
    """The request `send_<method>(*args)` writes, with the one string MARK among its arguments replaced by `raw`."""
    buffer = TMemoryBuffer()
    getattr(ThriftHiveMetastore.Client(TBinaryProtocol(buffer)), f"send_{method}")(*args)
    message = buffer.getvalue()
    at = message.index(MARK.encode())
    assert message.count(MARK.encode()) == 1 and message[at - 4 : at] == struct.pack("!i", len(MARK))
    return message[: at - 4] + struct.pack("!i", len(raw)) + raw + message[at + len(MARK) :]


def _raw_call(port: int, method: str, message: bytes, *, framed: bool = False) -> object:
    """Send `message` as it is; the answer as the generated client reads it (raising a declared exception)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(struct.pack("!i", len(message)) + message if framed else message)
        return getattr(_client_on(sock, framed=framed), f"recv_{method}")()


@pytest.mark.parametrize("framed", [False, True], ids=["buffered", "framed"])
def test_partition_values_that_are_not_utf8_are_refused_and_nothing_stored(server, framed):
    for raw in (b"\xff", b"\xfe"):  # both became U+FFFD: the second was "AlreadyExists"
        message = _request("append_partition", "h", "t", [MARK], raw=raw)
        with pytest.raises(ttypes.InvalidObjectException, match=r"invalid UTF-8 in part_vals\[0\]"):
            _raw_call(server.port, "append_partition", message, framed=framed)
    with thrift_client(server.port) as client:
        assert client.get_partition_names("h", "t", -1) == []


@pytest.mark.parametrize(
    ("method", "args", "error", "where"),
    [
        ("create_database", (ttypes.Database(name="u", description=MARK),), "InvalidObjectException", "description"),
        ("create_database", (ttypes.Database(name="u", parameters={"k": MARK}),), "InvalidObjectException", "'k'"),
        ("get_table", ("h", MARK), "MetaException", "tbl_name"),
        ("get_partitions_by_filter", ("h", "t", MARK, -1), "MetaException", "filter"),
        ("partition_name_to_vals", (MARK,), "MetaException", "part_name"),
    ],
)
def test_any_string_that_is_not_utf8_is_refused_with_the_field_named(server, method, args, error, where):
    with pytest.raises(getattr(ttypes, error), match=f"invalid UTF-8 in .*{where}") as refused:
        _raw_call(server.port, method, _request(method, *args, raw=b"ok\xc3\x28"))
    assert "nothing was done" in refused.value.message
    with thrift_client(server.port) as client:
        assert "u" not in client.get_all_databases()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    raw=st.one_of(st.binary(min_size=1, max_size=6), st.text(min_size=1, max_size=4).map(str.encode)),
    framed=st.booleans(),
)
def test_a_partition_value_is_stored_exactly_when_it_is_utf8(server, raw, framed):
    """Oracle: Python's strict UTF-8 decoder. Bytes it refuses are refused with nothing stored; text it decodes
    (a real U+FFFD included) is stored as that text, or refused for another reason than its encoding."""
    try:
        text: str | None = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    message = _request("append_partition", "h", "t", [MARK], raw=raw)
    try:
        added = _raw_call(server.port, "append_partition", message, framed=framed)
    except (ttypes.InvalidObjectException, ttypes.MetaException) as exc:
        assert (text is None) == ("invalid UTF-8" in exc.message), exc.message
    else:
        assert text is not None and added.values == [text]
        with thrift_client(server.port) as client:
            assert client.drop_partition("h", "t", [text], False)
    with thrift_client(server.port) as client:
        assert client.get_partition_names("h", "t", -1) == []


# --------------------------------------------------------------------------------- SIGINT (issue 27)


def test_sigint_says_what_it_waits_for_and_a_second_one_stops_at_once(tmp_path):
    serve = SargableServe(tmp_path, f"sqlite:///{tmp_path / 'meta.db'}", args=["--cache-mb", "0"]).start()
    try:
        _big_table(serve.port, tmp_path, 1500)
        client, sock = _not_reading(serve.port)
        with sock:
            client.send_get_partitions("h", "big", -1)  # never read: the call stays in flight writing its reply
            _wait_for(_listings_answered(serve, 1), "the listing encoded")
            serve.process.send_signal(signal.SIGINT)
            waiting = "stopping on SIGINT: no new connections; waiting up to 60 s for 1 call in flight (get_partitions)"
            _wait_for(lambda: waiting in serve.log.read_text(), "the first SIGINT logged what it waits for")
            assert serve.alive()
            serve.process.send_signal(signal.SIGINT)
            assert serve.process.wait(30) == 128 + signal.SIGINT
        serve.process = None
        assert "SIGINT again: stopping now; abandoned 1 call in flight (get_partitions)" in serve.log.read_text()
    finally:
        serve.stop()


def test_a_stop_does_not_wait_for_connections_between_calls(tmp_path):
    """SIGTERM with one connection part-way through a request and one idle: both are closed at once and the server
    exits 0 (it used to wait for the half request's read timeout, past the drain)."""
    serve = SargableServe(tmp_path, f"sqlite:///{tmp_path / 'meta.db'}").start()
    with socket.create_connection(("127.0.0.1", serve.port)) as half, socket.create_connection(
        ("127.0.0.1", serve.port)
    ) as idle:
        half.sendall(b"\x80\x01\x00\x01\x00\x00\x00\x09get_ta")
        with thrift_client(serve.port) as client:
            assert client.get_all_databases() == []
        assert serve.stop() == 0
        assert idle.recv(1) == b"" and half.recv(1) == b""


# ------------------------------------------------------------------------- TLS and the allow-list


def _tls_client(port: int, ca: Path, cert: tuple[Path, Path] | None = None, *, framed: bool = False):
    context = ssl.create_default_context(cafile=str(ca))
    if cert is not None:
        context.load_cert_chain(str(cert[0]), str(cert[1]))
    sock = context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=30), server_hostname="127.0.0.1")
    return _client_on(sock, framed=framed), sock


def test_tls_serves_tls_clients_and_closes_plain_ones(tmp_path):
    cert, key = self_signed_certificate(tmp_path, "server")
    args = ["--tls-cert", str(cert), "--tls-key", str(key)]
    with SargableServe(tmp_path, f"sqlite:///{tmp_path / 'meta.db'}", args=args) as serve:
        client, sock = _tls_client(serve.port, cert)
        with sock:
            client.create_database(ttypes.Database(name="s", locationUri=f"file:{tmp_path}/s.db"))
            assert client.get_all_databases() == ["s"]
        client, sock = _tls_client(serve.port, cert, framed=True)
        with sock:
            assert client.get_database("s").name == "s"
        with pytest.raises(TTransportException), thrift_client(serve.port) as plain:
            plain.get_all_databases()
        client, sock = _tls_client(serve.port, cert)
        with sock:
            assert client.get_all_databases() == ["s"]
        assert "TLS handshake failed" in serve.log.read_text()


def test_mutual_tls_serves_only_clients_with_a_certificate_of_the_ca(tmp_path):
    cert, key = self_signed_certificate(tmp_path, "server")
    client_cert = self_signed_certificate(tmp_path, "client")
    args = ["--tls-cert", str(cert), "--tls-key", str(key), "--tls-client-ca", str(client_cert[0])]
    with SargableServe(tmp_path, f"sqlite:///{tmp_path / 'meta.db'}", args=args) as serve:
        client, sock = _tls_client(serve.port, cert, client_cert)
        with sock:
            assert client.get_all_databases() == []
        with pytest.raises((ssl.SSLError, OSError, TTransportException)):
            client, sock = _tls_client(serve.port, cert)
            with sock:
                client.get_all_databases()


def test_allow_list_closes_other_addresses_before_reading(tmp_path):
    url = f"sqlite:///{tmp_path / 'meta.db'}"
    with SargableServe(tmp_path / "a", url, args=["--allow", "10.0.0.0/8,192.168.0.0/16"]) as serve:
        with pytest.raises(TTransportException), thrift_client(serve.port) as client:
            client.get_all_databases()
        assert "not in --allow" in serve.log.read_text()
    allow = ["--allow", "10.0.0.0/8", "--allow", "127.0.0.1"]
    with SargableServe(tmp_path / "b", url, args=allow) as serve, thrift_client(serve.port) as client:
        assert client.get_all_databases() == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--allow", "10.0.0.300/8"], "is not an address or a network"),
        (["--tls-cert", "/no/such/cert.pem"], "can't load the certificate"),
        (["--tls-client-ca", "/no/such/ca.pem"], "need --tls-cert"),
    ],
)
def test_bad_access_options_are_one_error_line(tmp_path, args, message):
    command = [sys.executable, "-m", "sargable.cli", "--metastore", f"sqlite:///{tmp_path / 'm.db'}", "serve"]
    done = subprocess.run([*command, "--port", "0", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and message in done.stderr and "Traceback" not in done.stderr
