"""A recording Thrift proxy: sits between a Hive metastore client and a server (buffered binary protocol), forwards
every message unchanged and writes one JSON line per call: method, arguments (tables, filters, partition values)
and a summary of the reply. Used to learn which calls Spark makes (docs/hms.md, "what clients call")."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Any

from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.Thrift import TMessageType, TType
from thrift.transport.TTransport import TTransportBase, TTransportException

from sargable.hms.bindings import ThriftHiveMetastore

ONEWAY = frozenset({"shutdown", "reinitialize"})


class _Recording(TTransportBase):
    """Reads from a socket and keeps every byte read, so a parsed message can be forwarded as it came."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()
        self.taken = bytearray()

    def read(self, sz: int) -> bytes:
        while not self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise TTransportException(TTransportException.END_OF_FILE, "peer closed")
            self.buffer += chunk
        out = bytes(self.buffer[:sz])
        del self.buffer[:sz]
        self.taken += out
        return out

    def take(self) -> bytes:
        out = bytes(self.taken)
        self.taken.clear()
        return out


def _summary(obj: Any, depth: int = 0) -> Any:
    """A short JSON form of a Thrift struct: partitions are counted, long lists cut, storage descriptors named."""
    if obj is None or isinstance(obj, (bool, int, float)):
        return obj
    if isinstance(obj, (bytes, bytearray)):
        return f"<{len(obj)} bytes>"
    if isinstance(obj, str):
        return obj if len(obj) <= 300 else obj[:300] + "..."
    if isinstance(obj, (list, tuple, set)):
        items = list(obj)
        if items and type(items[0]).__name__ == "Partition":
            return {"partitions": len(items), "first_values": items[0].values}
        shown = [_summary(i, depth + 1) for i in items[:8]]
        return shown + ([f"... {len(items)} in all"] if len(items) > 8 else [])
    if isinstance(obj, dict):
        return {str(k): _summary(v, depth + 1) for k, v in list(obj.items())[:40]}
    if hasattr(obj, "thrift_spec") or hasattr(obj, "__dict__"):
        name = type(obj).__name__
        if depth >= 2 and name in ("StorageDescriptor", "SerDeInfo"):
            return f"<{name} location={getattr(obj, 'location', None)}>"
        fields = {k: _summary(v, depth + 1) for k, v in vars(obj).items() if v is not None}
        return {"_type": name, **fields} if depth else fields
    return repr(obj)


class Tap:
    """Listen on `listen_port`, forward each connection to `upstream_port`, append call records to `log`."""

    def __init__(self, upstream_port: int, listen_port: int, log: Path) -> None:
        self.upstream_port = upstream_port
        self.log = log
        self.lock = threading.Lock()
        self.server = socket.create_server(("127.0.0.1", listen_port))
        self.connections = 0

    def serve_forever(self) -> None:
        while True:
            client, _ = self.server.accept()
            self.connections += 1
            threading.Thread(target=self._connection, args=(client, self.connections), daemon=True).start()

    def _write(self, record: dict[str, Any]) -> None:
        with self.lock, open(self.log, "a") as out:
            out.write(json.dumps(record, default=repr) + "\n")

    def _connection(self, client: socket.socket, number: int) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
        down, up = _Recording(client), _Recording(upstream)
        request, reply = TBinaryProtocol(down), TBinaryProtocol(up)
        try:
            while True:
                name, _, _ = request.readMessageBegin()
                args_type = getattr(ThriftHiveMetastore, f"{name}_args", None)
                record: dict[str, Any] = {"conn": number, "method": name}
                if args_type is None:
                    request.skip(TType.STRUCT)
                else:
                    args = args_type()
                    args.read(request)
                    record["args"] = _summary(args)
                request.readMessageEnd()
                upstream.sendall(down.take())
                if name in ONEWAY:
                    self._write(record)
                    continue
                _, kind, _ = reply.readMessageBegin()
                result_type = getattr(ThriftHiveMetastore, f"{name}_result", None)
                if kind == TMessageType.EXCEPTION or result_type is None:
                    reply.skip(TType.STRUCT)
                    record["reply"] = "exception" if kind == TMessageType.EXCEPTION else "?"
                else:
                    result = result_type()
                    result.read(reply)
                    record["reply"] = _summary(result)
                reply.readMessageEnd()
                client.sendall(up.take())
                self._write(record)
        except (TTransportException, OSError):
            pass
        finally:
            client.close()
            upstream.close()


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--upstream", type=int, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log", type=Path, required=True)
    args = parser.parse_args()
    Tap(args.upstream, args.port, args.log).serve_forever()


if __name__ == "__main__":
    main()
