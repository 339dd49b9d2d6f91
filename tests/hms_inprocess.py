"""The Hive metastore API's `Handler` in process over a fresh metastore (no server, no socket): each call as the
server makes it (the call's catalog given back after it), and its encoded replies decoded as a client reads them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.transport.TTransport import TMemoryBuffer

from sargable.hms.bindings import ThriftHiveMetastore
from sargable.hms.catalog import Catalog
from sargable.hms.encode import STOP, Encoded, field
from sargable.hms.handler import Handler
from sargable.hms.pool import CatalogPool
from sargable.metastore import Metastore


class InProcess:
    """A `Handler` over the metastore at `url`; `call` runs one API call as the server does."""

    def __init__(self, url: str, warehouse: Path) -> None:
        self.url, self.warehouse = url, str(warehouse)
        self.pool = CatalogPool(lambda: Catalog(Metastore.open(self.url, warehouse=self.warehouse)), 2)
        self.handler = Handler(self.pool)

    def call(self, method: str, *args: Any) -> Any:
        """The call's result (an `Encoded` reply read back as the client's objects), or its exception raised."""
        try:
            result = getattr(self.handler, method)(*args)
            return decoded(method, result) if isinstance(result, Encoded) else result
        finally:
            self.handler.end_call()

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> InProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        # (a class, not a generator context manager: the frozen Thrift exceptions can't pass through one)
        self.close()


def decoded(method: str, reply: Encoded) -> Any:
    """An encoded reply read back as the client's objects: framed as the method's result struct's success field."""
    data = field(reply.ttype, 0) + reply.head + b"".join(reply.rest or ()) + STOP
    result = getattr(ThriftHiveMetastore, f"{method}_result")()
    result.read(TBinaryProtocol(TMemoryBuffer(data)))
    return result.success
