"""The bytes of one client connection of `sargable serve`: reading requests under a size cap (keeping the bytes of
the current one, for a second, strict look at its strings), and writing replies so that a client that does not read
holds no snapshot: a streamed listing goes to the socket as far as the client takes it and the rest waits in
memory, within a budget shared by all connections."""

from __future__ import annotations

import select
import socket
import ssl
import struct
import threading
import time
from io import BytesIO

from thrift.transport.TTransport import TBufferedTransport, TTransportBase, TTransportException


class MessageTooLarge(TTransportException):
    """A request over `max_message_bytes`."""


class ClientStalled(TTransportException):
    """A client that took too little of its reply while its call held a snapshot."""


class SocketReader(TTransportBase):
    """Reads a client socket, counting the bytes of the current request against the cap and keeping them
    (`recorded`); bytes read ahead (`unread`) come first."""

    def __init__(self, sock: socket.socket, limit: int) -> None:
        self.sock = sock
        self.limit = limit
        self.count = 0
        self.unread = b""
        self._chunks: list[bytes] = []

    def isOpen(self) -> bool:
        return True

    def start(self, leftover: bytes = b"") -> None:
        """A new request begins (with `leftover`, bytes of it read ahead by a buffer)."""
        self.count = 0
        self._chunks = [leftover] if leftover else []

    def recorded(self) -> bytes:
        """The bytes read since `start`, including its leftover."""
        return b"".join(self._chunks)

    def _recv(self, size: int) -> bytes:
        if self.unread:
            data, self.unread = self.unread[:size], self.unread[size:]
            return data
        data = self.sock.recv(size)
        if not data:
            raise TTransportException(TTransportException.END_OF_FILE, "the client closed the connection")
        return data

    def read(self, sz: int) -> bytes:
        want = min(sz, 65536)
        if self.count + want > self.limit:
            want = self.limit - self.count + 1
        data = self._recv(want)
        self.count += len(data)
        if self.count > self.limit:
            raise MessageTooLarge(TTransportException.SIZE_LIMIT, f"a request over {self.limit:,} bytes")
        self._chunks.append(data)
        return data

    def read_exactly(self, count: int) -> bytes:
        """`count` bytes (a frame's length or body: the caller checks the size), outside the request's count."""
        chunks, got = [], 0
        while got < count:
            data = self._recv(min(count - got, 1 << 20))
            chunks.append(data)
            got += len(data)
        return b"".join(chunks)

    def head(self, count: int) -> bytes:
        """Up to `count` first bytes (fewer when the client closes first), kept to be read again."""
        got = b""
        while len(got) < count:
            try:
                data = self._recv(count - len(got))
            except TTransportException:
                break
            got += data
        self.unread = got + self.unread
        return got


class Buffered(TBufferedTransport):
    """A buffered transport that says whether it holds unread bytes (a pipelined next request), and gives them."""

    def pending(self) -> bool:
        buf: BytesIO = self.cstringio_buf
        return buf.tell() < buf.getbuffer().nbytes

    def leftover(self) -> bytes:
        buf: BytesIO = self.cstringio_buf
        return buf.getvalue()[buf.tell() :]


class ReplyBudget:
    """Bytes of replies held in memory for clients that read slower than the metastore lists, over all connections."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._lock = threading.Lock()

    def take(self, count: int) -> bool:
        with self._lock:
            if self.used + count > self.limit:
                return False
            self.used += count
            return True

    def give(self, count: int) -> None:
        with self._lock:
            self.used -= count


_WOULD_BLOCK = (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError)


class Reply:
    """A call's reply. Kept whole until the call has given its catalog back, then sent (`flush`); a streamed
    listing (`write(..., stream=True)`, on buffered transport) goes to the socket as the client takes it, the rest
    kept in memory and charged to the shared budget, so a client that does not read holds its snapshot only while
    the listing is encoded. Only when the budget is spent does the call wait for its client, at most `hold_timeout`
    seconds for the client to take what is over. One frame (framed transport) is sent whole."""

    FLUSH = 256 * 1024
    CHUNK = 1 << 20

    def __init__(self, sock: socket.socket, framed: bool, budget: ReplyBudget, hold_timeout: float) -> None:
        self.sock = sock
        self.framed = framed
        self.budget = budget
        self.hold_timeout = hold_timeout
        self.parts: list[bytes] = []
        self.size = 0
        self.pending = bytearray()
        self.charged = 0

    def write(self, data: bytes, *, stream: bool = False) -> None:
        if self.framed or not (stream or self.pending):
            self.parts.append(data)  # kept as given: a cached reply's bytes are shared, not copied
            self.size += len(data)
            return
        if self.parts:
            self.pending += b"".join(self.parts)
            self.parts, self.size = [], 0
        self.pending += data
        if len(self.pending) >= self.FLUSH:
            self._push()

    def flush(self) -> None:
        """Send the rest (each megabyte within the socket's timeout), then give back what the budget lent."""
        try:
            if self.framed and self.parts:
                self.sock.sendall(struct.pack("!i", self.size))
            for data in (self.pending, *self.parts):
                with memoryview(data) as view:
                    for start in range(0, len(view), self.CHUNK):
                        self.sock.sendall(view[start : start + self.CHUNK])
            self.pending.clear()
            self.parts, self.size = [], 0
        finally:
            self.release()

    def release(self) -> None:
        """Give back the budget this reply holds (also when its connection ends)."""
        self.budget.give(self.charged)
        self.charged = 0

    def _push(self) -> None:
        self._send_ready()
        deadline = time.monotonic() + self.hold_timeout
        while not self._charge():
            left = deadline - time.monotonic()
            if left <= 0 or not self._writable(left):
                raise ClientStalled(
                    TTransportException.TIMED_OUT,
                    f"the client took too little of its reply in {self.hold_timeout:g} s while its call held a "
                    "snapshot (and the memory for unread replies is spent)",
                )
            self._send_ready()

    def _charge(self) -> bool:
        """Charge the budget for the bytes held (giving back what was sent); False when it can't take them."""
        held = len(self.pending)
        if held <= self.charged:
            self.budget.give(self.charged - held)
            self.charged = held
            return True
        if self.budget.take(held - self.charged):
            self.charged = held
            return True
        return False

    def _writable(self, timeout: float) -> bool:
        return bool(select.select([], [self.sock], [], timeout)[1])

    def _send_ready(self) -> None:
        """Send what the socket takes now, without waiting."""
        sent = 0
        timeout = self.sock.gettimeout()
        self.sock.settimeout(0)
        try:
            with memoryview(self.pending) as view:
                while sent < len(view):
                    try:
                        sent += self.sock.send(view[sent : sent + self.CHUNK])
                    except _WOULD_BLOCK:
                        break
        finally:
            self.sock.settimeout(timeout)
        del self.pending[:sent]
