"""Encoded replies and table codecs of `sargable serve`, keyed by table version, so they are never stale.

Every change of a table's partitions or definition bumps the table's version in the same transaction (the
metastore's contract), and table ids are never reused. A reply cached under (table id, version, call) is therefore
exactly what the call returns while the table stays at that version, whichever server or writer changed it: each
call reads the table's current version first (one point read) and uses the cache only when it matches. Older
versions of a table are dropped when a newer one is seen; the whole cache stays under a byte budget (least recently
used replies go first).
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import NamedTuple

from sargable.hms.convert import TableView
from sargable.hms.encode import TableCodec
from sargable.metastore import TableDefinition

MAX_CODECS = 256
"""Table codecs kept (one per table; a codec holds templates and memoized partition values)."""


class CachedReply(NamedTuple):
    """An encoded success value and how many partitions (or names) it holds (for the log line)."""

    count: int
    payload: bytes


def _definition(table: TableDefinition) -> TableDefinition:
    """The table without its version: what a codec depends on."""
    return dataclasses.replace(table, version=0)


class ReplyCache:
    """Thread-safe: shared by every worker of a server."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget = budget_bytes
        self.largest = budget_bytes // 4
        """The largest reply kept: one huge listing must not evict everything else."""
        self.size = 0
        self._replies: OrderedDict[tuple[int, Hashable], tuple[int, CachedReply]] = OrderedDict()
        self._calls: dict[int, set[Hashable]] = {}
        self._versions: dict[int, int] = {}
        self._codecs: OrderedDict[int, tuple[TableDefinition, TableCodec]] = OrderedDict()
        self._lock = threading.Lock()

    def codec(self, table: TableDefinition) -> TableCodec:
        """The codec of this table definition (built on first use, rebuilt when the definition changes)."""
        definition = _definition(table)
        with self._lock:
            entry = self._codecs.get(table.table_id)
            if entry is not None and entry[0] == definition:
                self._codecs.move_to_end(table.table_id)
                return entry[1]
        codec = TableCodec(TableView(table))
        with self._lock:
            self._codecs[table.table_id] = (definition, codec)
            self._codecs.move_to_end(table.table_id)
            while len(self._codecs) > MAX_CODECS:
                self._codecs.popitem(last=False)
        return codec

    def get(self, table: TableDefinition, call: Hashable) -> CachedReply | None:
        """The reply cached for `call` on this version of the table, or None."""
        key = (table.table_id, call)
        with self._lock:
            entry = self._replies.get(key)
            if entry is None or entry[0] != table.version:
                return None
            self._replies.move_to_end(key)
            return entry[1]

    def put(self, table: TableDefinition, call: Hashable, reply: CachedReply) -> None:
        """Keep a reply read at this version of the table (ignored if a newer version was seen, or too large)."""
        if len(reply.payload) > self.largest:
            return
        table_id, version = table.table_id, table.version
        with self._lock:
            seen = self._versions.get(table_id)
            if seen is not None and version < seen:
                return
            if seen is not None and version > seen:
                for old in self._calls.pop(table_id, ()):
                    self._drop((table_id, old))
            self._versions[table_id] = version
            key = (table_id, call)
            self._drop(key)
            self._replies[key] = (version, reply)
            self._calls.setdefault(table_id, set()).add(call)
            self.size += len(reply.payload)
            while self.size > self.budget:
                (old_id, old_call), _ = next(iter(self._replies.items()))
                self._drop((old_id, old_call))
                self._calls.get(old_id, set()).discard(old_call)

    def _drop(self, key: tuple[int, Hashable]) -> None:
        entry = self._replies.pop(key, None)
        if entry is not None:
            self.size -= len(entry[1].payload)
