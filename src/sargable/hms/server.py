"""The Thrift listener of `sargable serve`: a thread per client connection, catalogs (store connections) from a
bounded pool, the C-accelerated binary protocol, buffered or framed transport detected on a connection's first
bytes, optional TLS and an allow-list of client addresses, one bounded log line per call, and a clean stop on
SIGTERM / Ctrl-C (in-flight calls finish, exit status 0; a second signal stops at once).

Hostile input never takes the server down: a frame, string or container over its cap, garbage bytes, a truncated
message, strings that are not UTF-8, or a client that vanishes mid-call ends that call or connection only, and
every other one keeps being served. A client that does not read its reply holds no snapshot (see `transport`), and
idle connections beyond the limit make room for new ones, the longest idle closed first.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TApplicationException, TException, TMessageType, TType
from thrift.transport.TTransport import TMemoryBuffer, TTransportException

from sargable.errors import SargableError
from sargable.hms.access import allowed, parse_networks, tls_context
from sargable.hms.bindings import TBinaryProtocol, ThriftHiveMetastore, ttypes
from sargable.hms.cache import ReplyCache
from sargable.hms.catalog import Catalog
from sargable.hms.encode import STOP, Encoded, field, message_header
from sargable.hms.handler import DEFAULT_CALL_TIMEOUT, ENCODED, IMPLEMENTED, Handler
from sargable.hms.logs import Throttle, bounded_logger, clip
from sargable.hms.pool import CatalogPool
from sargable.hms.transport import Buffered, ClientStalled, MessageTooLarge, Reply, ReplyBudget, SocketReader
from sargable.hms.utf8 import invalid_utf8

log = bounded_logger("sargable.hms")

FB303_ONEWAY = frozenset({"shutdown", "reinitialize"})
"""fb303's oneway calls (Hive's client sends `shutdown` when it closes): read, never answered."""
FB303_REPLIES: dict[str, tuple[int, Callable[[HmsServer], Any]]] = {
    "getName": (TType.STRING, lambda server: "sargable"),
    "getVersion": (TType.STRING, lambda server: "sargable"),
    "getStatus": (TType.I32, lambda server: 2),  # fb_status.ALIVE
    "getStatusDetails": (TType.STRING, lambda server: "serving"),
    "aliveSince": (TType.I64, lambda server: int(server.started)),
}
LOOPBACK = ("127.0.0.1", "::1", "localhost")


@dataclass(frozen=True)
class ServerConfig:
    """Where to listen, who may connect, and the limits that keep one client from hurting the others."""

    host: str = "127.0.0.1"
    port: int = 9083
    read_only: bool = False
    workers: int = 8
    """Catalogs (store connections) at most; calls beyond that wait for one."""
    max_connections: int = 512
    """Connections at most; a new one beyond closes the one idle longest (none idle: the new one is closed)."""
    max_message_bytes: int = 100 * 1024 * 1024
    """The largest request (a frame, or the bytes of one buffered message), as Hive's 100 MB default."""
    max_container_items: int = 10_000_000
    idle_timeout: float = 3600.0
    """A connection with no call for this long is closed."""
    read_timeout: float = 120.0
    """A request that stops arriving mid-message for this long ends its connection, as does a reply of which the
    client takes nothing for this long."""
    reply_buffer_bytes: int = 256 * 1024 * 1024
    """Bytes of streamed replies kept in memory for clients that read slower than the metastore lists, over all
    connections; beyond it a listing waits for its client, holding its snapshot at most `hold_timeout`."""
    hold_timeout: float = 10.0
    """How long a listing beyond `reply_buffer_bytes` waits for its client to take what is over (its connection
    then ends)."""
    drain_timeout: float = 60.0
    """On stop, how long calls in flight may take to finish."""
    cache_bytes: int = 256 * 1024 * 1024
    """Encoded replies kept, keyed by table version (0: none)."""
    tls_cert: str | None = None
    """PEM certificate chain: the listener speaks TLS (Hive's `hive.metastore.use.SSL`)."""
    tls_key: str | None = None
    """PEM private key of `tls_cert` (default: in the same file)."""
    tls_client_ca: str | None = None
    """PEM CA certificates: only clients with a certificate they signed are served (mutual TLS)."""
    allow: tuple[str, ...] = ()
    """Client addresses or networks (CIDR) served; a connection from elsewhere is closed before anything is read.
    Empty: any address."""
    call_timeout: float | None = DEFAULT_CALL_TIMEOUT
    """Seconds a call may run before it is refused with a MetaException (None: no deadline)."""

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise SargableError(f"--port must be 0-65535, got {self.port}")
        if self.workers < 1:
            raise SargableError(f"--workers must be at least 1, got {self.workers}")
        if self.max_connections < 1:
            raise SargableError(f"--max-connections must be at least 1, got {self.max_connections}")
        if self.cache_bytes < 0:
            raise SargableError(f"--cache-mb must be 0 or more, got {self.cache_bytes / 2**20:g}")
        if self.reply_buffer_bytes < 0:
            raise SargableError(f"reply_buffer_bytes must be 0 or more, got {self.reply_buffer_bytes}")
        if (self.tls_key or self.tls_client_ca) and not self.tls_cert:
            raise SargableError("--tls-key and --tls-client-ca need --tls-cert (the server's certificate)")
        if self.tls_cert:  # unreadable files are refused here, before anything opens the metastore
            tls_context(self.tls_cert, self.tls_key, self.tls_client_ca)
        if self.allow:
            parse_networks(self.allow)


@dataclass(eq=False)
class _Client:
    """One client connection: its socket and whether it waits for a request (since when) or is in a call (which)."""

    sock: socket.socket
    name: str
    idle_since: float | None
    method: str | None = None
    evicted: bool = False


class _Evicted(TTransportException):
    """The connection was closed to make room for a new one while it waited for a request."""


def _refusal(result_type: type, where: str) -> TException:
    """The error for a request with strings that are not UTF-8: the method's InvalidObjectException or
    MetaException (whichever it declares first), else a protocol error."""
    message = f"invalid UTF-8 in {where}: Thrift strings are UTF-8; nothing was done"
    declared = {spec[3][0] for spec in result_type.thrift_spec if spec is not None and spec[2] != "success"}
    for kind in (ttypes.InvalidObjectException, ttypes.MetaException):
        if kind in declared:
            return kind(message=message)
    return TApplicationException(TApplicationException.PROTOCOL_ERROR, message)


class HmsServer:
    """Serves the Hive metastore API over `open_catalog()` catalogs until `stop()` (or SIGTERM / SIGINT)."""

    def __init__(self, open_catalog: Callable[[], Catalog], config: ServerConfig) -> None:
        self.config = config
        self.pool = CatalogPool(open_catalog, config.workers)
        self.handler = Handler(
            self.pool,
            read_only=config.read_only,
            cache=ReplyCache(config.cache_bytes),
            call_timeout=config.call_timeout,
        )
        self.methods = {
            name: (getattr(ThriftHiveMetastore, f"{name}_args"), getattr(ThriftHiveMetastore, f"{name}_result"))
            for name in IMPLEMENTED
        }
        self.budget = ReplyBudget(config.reply_buffer_bytes)
        self.networks = parse_networks(config.allow) if config.allow else ()
        self.tls = tls_context(config.tls_cert, config.tls_key, config.tls_client_ca) if config.tls_cert else None
        self.started = time.time()
        self._stopping = threading.Event()
        self._signal: str | None = None
        self._threads: set[threading.Thread] = set()
        self._clients: set[_Client] = set()
        self._lock = threading.Lock()
        self._throttle = Throttle()
        self._listener = socket.create_server((config.host, config.port), backlog=128)
        self.port = self._listener.getsockname()[1]

    # ------------------------------------------------------------------------------------------- lifecycle

    def install_signal_handlers(self) -> None:
        """SIGTERM and SIGINT stop the server cleanly; a second one stops it at once (call from the main thread)."""
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if self._stopping.is_set():
            log.warning("%s again: stopping now; abandoned %s", name, self._in_flight())
            os._exit(128 + signum)
        self._signal = name
        self.stop()

    def stop(self) -> None:
        """Stop accepting; connections end after their in-flight call. Safe from a signal handler."""
        self._stopping.set()

    def serve_forever(self) -> None:
        """Accept connections until stopped, then wait for in-flight calls and close every catalog."""
        config = self.config
        log.info(
            "serving the Hive metastore API on %s:%d (%s, %d workers%s%s)",
            config.host,
            self.port,
            "read-only" if config.read_only else "read-write",
            config.workers,
            ", TLS" + (" with client certificates" if config.tls_client_ca else "") if self.tls else "",
            f", clients from {', '.join(map(str, self.networks))}" if self.networks else "",
        )
        if config.host not in LOOPBACK and not self.networks and not config.tls_client_ca:
            log.warning(
                "listening on %s with neither --allow nor --tls-client-ca: anyone who can reach the port can %s",
                config.host,
                "read every table" if config.read_only else "create, change and drop every table",
            )
        self._listener.settimeout(0.2)
        try:
            while not self._stopping.is_set():
                try:
                    sock, peer = self._listener.accept()
                except TimeoutError:
                    continue
                except OSError:
                    if self._stopping.is_set():
                        break
                    raise
                self._start_connection(sock, peer)
        finally:
            self._listener.close()
            self._drain()

    def _drain(self) -> None:
        """Wait up to the drain timeout for the calls in flight, saying what is waited for; close every catalog."""
        why = f" on {self._signal}" if self._signal else ""
        again = f"; {self._signal} again stops at once" if self._signal else ""
        log.info(
            "stopping%s: no new connections; waiting up to %g s for %s%s",
            why,
            self.config.drain_timeout,
            self._in_flight(),
            again,
        )
        with self._lock:  # connections between calls (or part-way through a request) end now
            for client in [client for client in self._clients if client.idle_since is not None]:
                self._evict(client, log_it=False)
        deadline = time.monotonic() + self.config.drain_timeout
        for thread in list(self._threads):
            thread.join(max(0.0, deadline - time.monotonic()))
        if any(thread.is_alive() for thread in self._threads):
            log.warning("drain timeout: abandoned %s", self._in_flight())
        self.pool.close()
        log.info("stopped")

    def _in_flight(self) -> str:
        """The calls in flight, for a log line: `2 calls in flight (get_partitions x2)`. Takes no lock (it runs in a
        signal handler too, which may interrupt the main thread holding one): a copy of the set is atomic."""
        clients = self._clients.copy()
        methods = [client.method or "?" for client in clients if client.idle_since is None]
        if not methods:
            return "no calls in flight"
        counts = {m: methods.count(m) for m in sorted(set(methods))}
        listed = ", ".join(m if n == 1 else f"{m} x{n}" for m, n in counts.items())
        return f"{len(methods)} call{'s' if len(methods) > 1 else ''} in flight ({listed})"

    def _start_connection(self, sock: socket.socket, peer: Any) -> None:
        name = f"{peer[0]}:{peer[1]}"
        if self.networks and not allowed(self.networks, peer[0]):
            self._throttle.warn(log, "allow", "refused %s: not in --allow", name)
            sock.close()
            return
        with self._lock:
            if len(self._clients) >= self.config.max_connections:
                idle = [client for client in self._clients if client.idle_since is not None]
                if not idle:
                    self._throttle.warn(log, "full", "refused %s: %d connections in calls", name, len(self._clients))
                    sock.close()
                    return
                oldest = min(idle, key=lambda client: client.idle_since or 0.0)
                self._evict(oldest)
            client = _Client(sock, name, time.monotonic())
            thread = threading.Thread(target=self._connection, args=(client,), daemon=True)
            self._clients.add(client)
            self._threads.add(thread)
        thread.start()

    def _evict(self, client: _Client, *, log_it: bool = True) -> None:
        """Close a connection between calls (under the lock): its thread wakes up to an ended connection."""
        if log_it:
            idle = time.monotonic() - (client.idle_since or 0.0)
            self._throttle.warn(
                log, "evict", "closed %s, idle %.0f s: %d connections open", client.name, idle, len(self._clients)
            )
        client.evicted = True
        self._clients.discard(client)
        with contextlib.suppress(OSError):  # already closed by its client
            socket.socket.shutdown(client.sock, socket.SHUT_RDWR)  # the plain socket's: no TLS state touched

    def _busy(self, client: _Client, method: str) -> None:
        """The connection's request is read: it is in a call now, no longer one to close for room."""
        with self._lock:
            if client.evicted:
                raise _Evicted(TTransportException.END_OF_FILE, "closed to make room for a new connection")
            client.idle_since, client.method = None, method

    def _idle(self, client: _Client) -> None:
        with self._lock:
            client.idle_since, client.method = time.monotonic(), None

    # ----------------------------------------------------------------------------------------- connections

    def _wait_readable(self, sock: socket.socket) -> bool:
        """Wait for the next request's first byte; False when the server stops or the connection idles out."""
        deadline = time.monotonic() + self.config.idle_timeout
        while not self._stopping.is_set():
            if isinstance(sock, ssl.SSLSocket) and sock.pending():
                return True
            if time.monotonic() > deadline:
                return False
            readable, _, _ = select.select([sock], [], [], 0.2)
            if readable:
                return True
        return False

    @staticmethod
    def _framing(head: bytes) -> bool | None:
        """True for framed transport, False for buffered (unframed) binary, None for anything else."""
        if not head:
            return None
        if head[0] == 0x80:
            return False
        if len(head) == 6 and head[4:6] == b"\x80\x01":
            return True
        return None

    def _handshake(self, client: _Client) -> socket.socket | None:
        """The connection's TLS socket after its handshake; None when the handshake fails (logged, throttled) or the
        client closed before sending anything (as a port probe does: not logged)."""
        assert self.tls is not None
        if not client.sock.recv(1, socket.MSG_PEEK):
            return None
        with self._lock:
            client.sock = self.tls.wrap_socket(client.sock, server_side=True, do_handshake_on_connect=False)
        try:
            client.sock.do_handshake()
        except (ssl.SSLError, OSError) as exc:
            if not client.evicted:
                self._throttle.warn(log, "tls", "%s: TLS handshake failed: %s", client.name, exc)
            return None
        return client.sock

    def _connection(self, client: _Client) -> None:
        name = client.name
        reply: Reply | None = None
        try:
            client.sock.settimeout(self.config.read_timeout)
            client.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if not self._wait_readable(client.sock):
                return
            sock = self._handshake(client) if self.tls else client.sock
            if sock is None or not self._wait_readable(sock):
                return
            reader = SocketReader(sock, self.config.max_message_bytes)
            framed = self._framing(reader.head(6))
            if framed is None:
                if reader.unread:
                    self._throttle.warn(log, "protocol", "%s: not the Thrift binary protocol; closing", name)
                return
            buffered = Buffered(reader)
            while True:
                ready = reader.unread or (not framed and buffered.pending())
                if not ready and not self._wait_readable(sock):
                    return
                if framed:
                    size = struct.unpack("!i", reader.read_exactly(4))[0]
                    if size <= 0 or size > self.config.max_message_bytes:
                        log.warning("%s: a frame of %d bytes (cap %d); closing", name, size, reader.limit)
                        return
                    frame = reader.read_exactly(size)
                    source: Any = TMemoryBuffer(frame)
                    request: Callable[[], bytes] = lambda frame=frame: frame  # noqa: E731
                else:
                    reader.start(buffered.leftover())
                    source, request = buffered, reader.recorded
                reply = Reply(sock, framed, self.budget, self.config.hold_timeout)
                self._call(self._protocol(source), reply, client, request)
                reply.flush()
                reply = None
                self._idle(client)
        except MessageTooLarge as exc:
            log.warning("%s: %s; closing", name, exc.message)
        except ClientStalled as exc:
            log.warning("%s: %s; closing", name, exc.message)
        except OverflowError as exc:
            log.warning("%s: %s; closing", name, exc)
        except (TTransportException, TProtocolException, OSError, EOFError, ValueError, struct.error) as exc:
            log.debug("%s: connection ended: %s", name, exc)
        except Exception:
            log.exception("%s: connection failed", name)
        finally:
            if reply is not None:
                reply.release()
            client.sock.close()
            with self._lock:
                self._clients.discard(client)
                self._threads.discard(threading.current_thread())

    def _protocol(self, transport: Any) -> Any:
        return TBinaryProtocol.TBinaryProtocolAccelerated(
            transport,
            string_length_limit=self.config.max_message_bytes,
            container_length_limit=self.config.max_container_items,
        )

    def _call(self, iprot: Any, reply: Reply, client: _Client, request: Callable[[], bytes]) -> None:
        """Read one request and write its answer (a malformed request, or a reply that fails mid-stream, raises:
        the connection ends). Logs one line, every client-given text in it clipped."""
        started = time.perf_counter()
        method, kind, seqid = iprot.readMessageBegin()
        if kind not in (TMessageType.CALL, TMessageType.ONEWAY):
            raise TProtocolException(TProtocolException.INVALID_DATA, f"message type {kind} from a client")
        status = "ok"
        note = self.handler.note
        try:
            if method in FB303_ONEWAY:
                iprot.skip(TType.STRUCT)
                iprot.readMessageEnd()
            elif method in FB303_REPLIES:
                iprot.skip(TType.STRUCT)
                iprot.readMessageEnd()
                reply.write(self._fb303_reply(method, seqid))
            elif method in self.methods:
                self._api_call(method, seqid, iprot, reply, client, request)
                status = note.error or "ok"
            else:
                iprot.skip(TType.STRUCT)
                iprot.readMessageEnd()
                error = TApplicationException(
                    TApplicationException.UNKNOWN_METHOD, f"Unknown function {clip(method, 1000)}"
                )
                reply.write(self._message(method, TMessageType.EXCEPTION, seqid, error))
                status = "unknown method"
        except Exception:
            status = note.error or "malformed"
            raise
        finally:
            fields = [clip(method)]
            if note.table:
                fields.append(f"table={clip(note.table)}")
            if note.filter is not None:
                fields.append(f"filter={clip(note.filter, quote=True)}")
            if note.partitions is not None:
                fields.append(f"partitions={note.partitions}")
            if note.cached:
                fields.append("cached")
            fields.append(f"ms={(time.perf_counter() - started) * 1000:.1f}")
            fields.append(status)
            fields.append(f"peer={client.name}")
            self.handler.end_call()
            log.info(" ".join(fields))

    def _api_call(
        self, method: str, seqid: int, iprot: Any, reply: Reply, client: _Client, request: Callable[[], bytes]
    ) -> None:
        """Read the arguments, refuse strings that are not UTF-8, call the handler and write its answer: `Encoded`
        bytes (a long listing streamed chunk by chunk) or the method's result struct; a declared Hive exception in
        its field of the result struct, as the generated processor does."""
        args_type, result_type = self.methods[method]
        args = args_type()
        args.read(iprot)
        iprot.readMessageEnd()
        self._busy(client, method)
        where = invalid_utf8(args, request)
        if where is not None:
            error = _refusal(result_type, where)
            self.handler.note.error = type(error).__name__
            reply.write(self._exception_reply(result_type, method, seqid, error))
            return
        kwargs = {spec[2]: getattr(args, spec[2]) for spec in args.thrift_spec if spec is not None}
        try:
            value = getattr(self.handler, method)(**kwargs)
        except TTransportException:
            raise
        except TException as exc:
            reply.write(self._exception_reply(result_type, method, seqid, exc))
            return
        except Exception:
            log.exception("%s: unexpected error in the handler", method)
            error = TApplicationException(TApplicationException.INTERNAL_ERROR, "Internal error")
            reply.write(self._exception_reply(result_type, method, seqid, error))
            return
        if method not in ENCODED:
            result = result_type()
            if result.thrift_spec and result.thrift_spec[0] is not None:
                result.success = value
            reply.write(self._message(method, TMessageType.REPLY, seqid, result))
            return
        encoded: Encoded = value
        reply.write(message_header(method, TMessageType.REPLY, seqid) + field(encoded.ttype, 0))
        reply.write(encoded.head)
        if encoded.rest is not None:
            try:
                for chunk in encoded.rest:
                    reply.write(chunk, stream=True)
            except Exception:
                self.handler.note.error = "failed mid-reply"
                raise
            finally:
                encoded.rest.close()
        reply.write(STOP)

    def _message(self, method: str, kind: int, seqid: int, result: Any) -> bytes:
        out = TMemoryBuffer()
        oprot = self._protocol(out)
        oprot.writeMessageBegin(method, kind, seqid)
        result.write(oprot)
        oprot.writeMessageEnd()
        return out.getvalue()

    def _exception_reply(self, result_type: type, method: str, seqid: int, exc: TException) -> bytes:
        """The reply carrying `exc`: in its declared field of the result struct, else as a TApplicationException."""
        result: Any = result_type()
        kind = TMessageType.EXCEPTION
        for spec in result.thrift_spec:
            if spec is not None and spec[2] != "success" and spec[1] == TType.STRUCT and isinstance(exc, spec[3][0]):
                setattr(result, spec[2], exc)
                kind = TMessageType.REPLY
                break
        else:
            if not isinstance(exc, TApplicationException):
                log.error("%s: %s is not declared by the method", method, type(exc).__name__)
                exc = TApplicationException(TApplicationException.INTERNAL_ERROR, "Internal error")
            result = exc
        return self._message(method, kind, seqid, result)

    def _fb303_reply(self, method: str, seqid: int) -> bytes:
        ttype, value = FB303_REPLIES[method]
        out = TMemoryBuffer()
        oprot = self._protocol(out)
        oprot.writeMessageBegin(method, TMessageType.REPLY, seqid)
        oprot.writeStructBegin(f"{method}_result")
        oprot.writeFieldBegin("success", ttype, 0)
        {TType.STRING: oprot.writeString, TType.I32: oprot.writeI32, TType.I64: oprot.writeI64}[ttype](value(self))
        oprot.writeFieldEnd()
        oprot.writeFieldStop()
        oprot.writeStructEnd()
        oprot.writeMessageEnd()
        return out.getvalue()
