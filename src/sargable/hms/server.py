"""The Thrift listener of `sargable serve`: a thread per client connection, catalogs (store connections) from a
bounded pool, the C-accelerated binary protocol, buffered or framed transport detected on a connection's first
bytes, one log line per call, and a clean stop on SIGTERM / Ctrl-C (in-flight calls finish, exit status 0).

Hostile input never takes the server down: a frame, string or container over its cap, garbage bytes, a truncated
message or a client that vanishes mid-call ends that connection only, and every other one keeps being served.
"""

from __future__ import annotations

import logging
import select
import signal
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from io import BytesIO
from typing import Any

from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TApplicationException, TException, TMessageType, TType
from thrift.transport.TTransport import TBufferedTransport, TMemoryBuffer, TTransportBase, TTransportException

from sargable.errors import SargableError
from sargable.hms.bindings import TBinaryProtocol, ThriftHiveMetastore
from sargable.hms.cache import ReplyCache
from sargable.hms.catalog import Catalog
from sargable.hms.encode import STOP, Encoded, field, message_header
from sargable.hms.handler import ENCODED, IMPLEMENTED, Handler
from sargable.hms.pool import CatalogPool

log = logging.getLogger("sargable.hms")

FB303_ONEWAY = frozenset({"shutdown", "reinitialize"})
"""fb303's oneway calls (Hive's client sends `shutdown` when it closes): read, never answered."""
FB303_REPLIES: dict[str, tuple[int, Callable[[HmsServer], Any]]] = {
    "getName": (TType.STRING, lambda server: "sargable"),
    "getVersion": (TType.STRING, lambda server: "sargable"),
    "getStatus": (TType.I32, lambda server: 2),  # fb_status.ALIVE
    "getStatusDetails": (TType.STRING, lambda server: "serving"),
    "aliveSince": (TType.I64, lambda server: int(server.started)),
}


@dataclass(frozen=True)
class ServerConfig:
    """Where to listen and the limits that keep one client from hurting the others."""

    host: str = "127.0.0.1"
    port: int = 9083
    read_only: bool = False
    workers: int = 8
    """Catalogs (store connections) at most; calls beyond that wait for one."""
    max_connections: int = 512
    max_message_bytes: int = 100 * 1024 * 1024
    """The largest request (a frame, or the bytes of one buffered message), as Hive's 100 MB default."""
    max_container_items: int = 10_000_000
    idle_timeout: float = 3600.0
    """A connection with no call for this long is closed."""
    read_timeout: float = 120.0
    """A request that stops arriving mid-message for this long ends its connection (and a reply the client
    stops reading)."""
    cache_bytes: int = 256 * 1024 * 1024
    """Encoded replies kept, keyed by table version (0: none)."""

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise SargableError(f"--port must be 0-65535, got {self.port}")
        if self.workers < 1:
            raise SargableError(f"--workers must be at least 1, got {self.workers}")
        if self.max_connections < 1:
            raise SargableError(f"max_connections must be at least 1, got {self.max_connections}")
        if self.cache_bytes < 0:
            raise SargableError(f"--cache-mb must be 0 or more, got {self.cache_bytes / 2**20:g}")


class MessageTooLarge(TTransportException):
    """A request over `max_message_bytes`."""


class _SocketReader(TTransportBase):
    """Reads a client socket, counting the bytes of the current request against the cap."""

    def __init__(self, sock: socket.socket, limit: int) -> None:
        self.sock = sock
        self.limit = limit
        self.count = 0

    def isOpen(self) -> bool:
        return True

    def read(self, sz: int) -> bytes:
        want = min(sz, 65536)
        if self.count + want > self.limit:
            want = self.limit - self.count + 1
        data = self.sock.recv(want)
        if not data:
            raise TTransportException(TTransportException.END_OF_FILE, "the client closed the connection")
        self.count += len(data)
        if self.count > self.limit:
            raise MessageTooLarge(TTransportException.SIZE_LIMIT, f"a request over {self.limit:,} bytes")
        return data


class _Buffered(TBufferedTransport):
    """A buffered transport that says whether it holds unread bytes (a pipelined next request)."""

    def pending(self) -> bool:
        buf: BytesIO = self.cstringio_buf
        return buf.tell() < buf.getbuffer().nbytes


class _Reply:
    """A call's reply: kept until the call has given its catalog back, then sent (`flush`); a streamed listing
    sends as it goes (`write(..., stream=True)`, at least FLUSH bytes at a time), except in one frame (framed
    transport), which is sent whole."""

    FLUSH = 256 * 1024

    def __init__(self, sock: socket.socket, framed: bool) -> None:
        self.sock = sock
        self.framed = framed
        self.parts: list[bytes] = []
        self.size = 0

    def write(self, data: bytes, *, stream: bool = False) -> None:
        self.parts.append(data)
        self.size += len(data)
        if stream and not self.framed and self.size >= self.FLUSH:
            self.flush()

    def flush(self) -> None:
        if self.framed:
            if self.parts:
                self.sock.sendall(struct.pack("!i", self.size) + self.parts[0])
                for part in self.parts[1:]:
                    self.sock.sendall(part)
        elif self.parts:
            self.sock.sendall(b"".join(self.parts))
        self.parts, self.size = [], 0


def _recv_exactly(sock: socket.socket, count: int) -> bytes:
    chunks, got = [], 0
    while got < count:
        data = sock.recv(min(count - got, 1 << 20))
        if not data:
            raise TTransportException(TTransportException.END_OF_FILE, "the client closed the connection")
        chunks.append(data)
        got += len(data)
    return b"".join(chunks)


class HmsServer:
    """Serves the Hive metastore API over `open_catalog()` catalogs until `stop()` (or SIGTERM / SIGINT)."""

    def __init__(self, open_catalog: Callable[[], Catalog], config: ServerConfig) -> None:
        self.config = config
        self.pool = CatalogPool(open_catalog, config.workers)
        self.handler = Handler(self.pool, read_only=config.read_only, cache=ReplyCache(config.cache_bytes))
        self.processor = ThriftHiveMetastore.Processor(self.handler)
        processor = ThriftHiveMetastore.Processor
        self.calls = {name: getattr(processor, f"process_{name}") for name in IMPLEMENTED - ENCODED}
        self.encoded = {
            name: (getattr(ThriftHiveMetastore, f"{name}_args"), getattr(ThriftHiveMetastore, f"{name}_result"))
            for name in ENCODED
        }
        self.started = time.time()
        self._stopping = threading.Event()
        self._threads: set[threading.Thread] = set()
        self._lock = threading.Lock()
        self._listener = socket.create_server((config.host, config.port), backlog=128)
        self.port = self._listener.getsockname()[1]

    # ------------------------------------------------------------------------------------------- lifecycle

    def install_signal_handlers(self) -> None:
        """SIGTERM and SIGINT stop the server cleanly (call from the main thread)."""
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: self.stop())

    def stop(self) -> None:
        """Stop accepting; connections end after their in-flight call. Safe from a signal handler."""
        self._stopping.set()

    def serve_forever(self, drain_timeout: float = 60.0) -> None:
        """Accept connections until stopped, then wait for in-flight calls and close every catalog."""
        log.info(
            "serving the Hive metastore API on %s:%d (%s, %d workers)",
            self.config.host,
            self.port,
            "read-only" if self.config.read_only else "read-write",
            self.config.workers,
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
            deadline = time.monotonic() + drain_timeout
            for thread in list(self._threads):
                thread.join(max(0.0, deadline - time.monotonic()))
            self.pool.close()
            log.info("stopped")

    def _start_connection(self, sock: socket.socket, peer: Any) -> None:
        with self._lock:
            if len(self._threads) >= self.config.max_connections:
                log.warning("refused %s:%s: %d connections open", peer[0], peer[1], len(self._threads))
                sock.close()
                return
            thread = threading.Thread(target=self._connection, args=(sock, peer), daemon=True)
            self._threads.add(thread)
        thread.start()

    # ----------------------------------------------------------------------------------------- connections

    def _wait_readable(self, sock: socket.socket) -> bool:
        """Wait for the next request's first byte; False when the server stops or the connection idles out."""
        deadline = time.monotonic() + self.config.idle_timeout
        while not self._stopping.is_set():
            if time.monotonic() > deadline:
                return False
            readable, _, _ = select.select([sock], [], [], 0.2)
            if readable:
                return True
        return False

    def _framing(self, sock: socket.socket) -> bool | None:
        """True for framed transport, False for buffered (unframed) binary, None for anything else."""
        head = sock.recv(6, socket.MSG_PEEK | socket.MSG_WAITALL)
        if not head:
            return None
        if head[0] == 0x80:
            return False
        if len(head) == 6 and head[4:6] == b"\x80\x01":
            return True
        return None

    def _connection(self, sock: socket.socket, peer: Any) -> None:
        name = f"{peer[0]}:{peer[1]}"
        try:
            sock.settimeout(self.config.read_timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if not self._wait_readable(sock):
                return
            framed = self._framing(sock)
            if framed is None:
                if sock.recv(1, socket.MSG_PEEK):
                    log.warning("%s: not the Thrift binary protocol; closing", name)
                return
            reader = _SocketReader(sock, self.config.max_message_bytes)
            buffered = _Buffered(reader)
            while True:
                if not (not framed and buffered.pending()) and not self._wait_readable(sock):
                    return
                reader.count = 0
                if framed:
                    size = struct.unpack("!i", _recv_exactly(sock, 4))[0]
                    if size <= 0 or size > self.config.max_message_bytes:
                        log.warning("%s: a frame of %d bytes (cap %d); closing", name, size, reader.limit)
                        return
                    source: Any = TMemoryBuffer(_recv_exactly(sock, size))
                else:
                    source = buffered
                reply = _Reply(sock, framed)
                self._call(self._protocol(source), reply, name)
                reply.flush()
        except MessageTooLarge as exc:
            log.warning("%s: %s; closing", name, exc.message)
        except OverflowError as exc:
            log.warning("%s: %s; closing", name, exc)
        except (TTransportException, TProtocolException, OSError, EOFError, ValueError, struct.error) as exc:
            log.debug("%s: connection ended: %s", name, exc)
        except Exception:
            log.exception("%s: connection failed", name)
        finally:
            sock.close()
            with self._lock:
                self._threads.discard(threading.current_thread())

    def _protocol(self, transport: Any) -> Any:
        return TBinaryProtocol.TBinaryProtocolAccelerated(
            transport,
            string_length_limit=self.config.max_message_bytes,
            container_length_limit=self.config.max_container_items,
        )

    def _call(self, iprot: Any, reply: _Reply, peer: str) -> None:
        """Read one request and write its answer (a malformed request, or a reply that fails mid-stream, raises:
        the connection ends)."""
        started = time.perf_counter()
        method, kind, seqid = iprot.readMessageBegin()
        if kind not in (TMessageType.CALL, TMessageType.ONEWAY):
            raise TProtocolException(TProtocolException.INVALID_DATA, f"message type {kind} from a client")
        status = "ok"
        out = TMemoryBuffer()
        oprot = self._protocol(out)
        try:
            if method in FB303_ONEWAY:
                iprot.skip(TType.STRUCT)
                iprot.readMessageEnd()
            elif method in FB303_REPLIES:
                iprot.skip(TType.STRUCT)
                iprot.readMessageEnd()
                self._fb303_reply(oprot, method, seqid)
            elif method in self.encoded:
                self._encoded_call(method, seqid, iprot, reply)
                status = self.handler.note.error or "ok"
            elif method in self.calls:
                self.calls[method](self.processor, seqid, iprot, oprot)
                status = self.handler.note.error or "ok"
            else:
                iprot.skip(TType.STRUCT)
                iprot.readMessageEnd()
                error = TApplicationException(TApplicationException.UNKNOWN_METHOD, f"Unknown function {method}")
                oprot.writeMessageBegin(method, TMessageType.EXCEPTION, seqid)
                error.write(oprot)
                oprot.writeMessageEnd()
                status = "unknown method"
            if out.getvalue():
                reply.write(out.getvalue())
        except Exception:
            status = self.handler.note.error or "malformed"
            raise
        finally:
            note = self.handler.note
            fields = [method]
            if note.table:
                fields.append(f"table={note.table}")
            if note.filter is not None:
                fields.append(f"filter={note.filter!r}")
            if note.partitions is not None:
                fields.append(f"partitions={note.partitions}")
            if note.cached:
                fields.append("cached")
            fields.append(f"ms={(time.perf_counter() - started) * 1000:.1f}")
            fields.append(status)
            fields.append(f"peer={peer}")
            self.handler.end_call()
            log.info(" ".join(fields))

    def _encoded_call(self, method: str, seqid: int, iprot: Any, reply: _Reply) -> None:
        """Answer a method whose handler returns `Encoded` bytes: message header, the success field, its bytes
        (streamed chunk by chunk for a long listing), the result's stop byte. A declared Hive exception is written
        through the method's generated result struct, as the generated processor does."""
        args_type, result_type = self.encoded[method]
        args = args_type()
        args.read(iprot)
        iprot.readMessageEnd()
        kwargs = {spec[2]: getattr(args, spec[2]) for spec in args.thrift_spec if spec is not None}
        try:
            encoded: Encoded = getattr(self.handler, method)(**kwargs)
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
        reply.write(message_header(method, TMessageType.REPLY, seqid) + field(encoded.ttype, 0) + encoded.head)
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
        out = TMemoryBuffer()
        oprot = self._protocol(out)
        oprot.writeMessageBegin(method, kind, seqid)
        result.write(oprot)
        oprot.writeMessageEnd()
        return out.getvalue()

    def _fb303_reply(self, oprot: Any, method: str, seqid: int) -> None:
        ttype, value = FB303_REPLIES[method]
        oprot.writeMessageBegin(method, TMessageType.REPLY, seqid)
        oprot.writeStructBegin(f"{method}_result")
        oprot.writeFieldBegin("success", ttype, 0)
        {TType.STRING: oprot.writeString, TType.I32: oprot.writeI32, TType.I64: oprot.writeI64}[ttype](value(self))
        oprot.writeFieldEnd()
        oprot.writeFieldStop()
        oprot.writeStructEnd()
        oprot.writeMessageEnd()
