"""Encoded replies and table codecs of `sargable serve`, kept by table version, so they are never stale.

Every change of a table's partitions or definition bumps the table's version in the same transaction (the
metastore's contract), and table ids are never reused. A reply cached under (table id, call) with the version it was
read at is therefore exactly what the call returns while the table stays at that version, whichever server or writer
changed it: each call reads the table's current version first (one point read) and uses the cache when it matches.

A write that does not change what a reply holds leaves it valid (issue 32): the server's own partition adds, drops
and alters record which partitions each version step changed (`Change`: the step is this write's alone, the table's
row locked), and a reply cached with a scope (which partitions it can hold: a filter's, a spec's, some names') is
still served at a newer version when every step since its own is recorded and changed no partition in its scope. A
step the cache did not see (another server's or writer's, a table alter) ends every reply of the table at older
versions, as before. Whole-table listings have no scope. The whole cache stays under a byte budget (least recently
used replies go first).
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

from sargable.hms.catalog import Change
from sargable.hms.convert import TableView
from sargable.hms.encode import TableCodec
from sargable.metastore import TableDefinition

MAX_CODECS = 256
"""Table codecs kept (one per table; a codec holds templates and memoized partition values)."""
MAX_STEPS = 256
"""Version steps remembered per table: a reply older than this many steps is read again."""

Scope = Callable[[tuple[Any, ...]], bool]
"""Whether a partition with these values can be in a reply (True when unsure)."""


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
        self._replies: OrderedDict[tuple[int, Hashable], tuple[int, CachedReply, Scope | None]] = OrderedDict()
        self._steps: dict[int, OrderedDict[int, tuple[tuple[Any, ...], ...]]] = {}
        """Per table: version -> the values of the partitions the step to it changed (the server's own writes)."""
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

    def changed(self, change: Change) -> None:
        """Record a write's version step (call after its commit)."""
        if self.budget <= 0:
            return
        with self._lock:
            steps = self._steps.setdefault(change.table_id, OrderedDict())
            steps[change.version] = change.values
            while len(steps) > MAX_STEPS:
                steps.popitem(last=False)

    def get(self, table: TableDefinition, call: Hashable) -> CachedReply | None:
        """The reply cached for `call` on this version of the table (or on an older one, when no step since changed
        its scope), or None."""
        key = (table.table_id, call)
        with self._lock:
            entry = self._replies.get(key)
            if entry is None:
                return None
            version, reply, scope = entry
            if version != table.version:
                if version > table.version:  # a reader of an older snapshot: the reply may hold newer partitions
                    return None
                if not self._unchanged(table.table_id, version, table.version, scope):
                    self._drop(key)
                    return None
                self._replies[key] = (table.version, reply, scope)
            self._replies.move_to_end(key)
            return reply

    def _unchanged(self, table_id: int, since: int, now: int, scope: Scope | None) -> bool:
        """Whether every version step from `since` to `now` is recorded and changed no partition in `scope`."""
        steps = self._steps.get(table_id)
        if scope is None or steps is None or now - since > MAX_STEPS:
            return False
        for version in range(since + 1, now + 1):
            values = steps.get(version)
            if values is None or any(map(scope, values)):
                return False
        return True

    def put(self, table: TableDefinition, call: Hashable, reply: CachedReply, scope: Scope | None = None) -> None:
        """Keep a reply read at this version of the table, with its scope (None: any change may change it);
        ignored if too large, or if a reply read at a newer version is kept."""
        if len(reply.payload) > self.largest:
            return
        key = (table.table_id, call)
        with self._lock:
            kept = self._replies.get(key)
            if kept is not None and kept[0] > table.version:
                return
            self._drop(key)
            self._replies[key] = (table.version, reply, scope)
            self.size += len(reply.payload)
            while self.size > self.budget:
                self._drop(next(iter(self._replies)))

    def _drop(self, key: tuple[int, Hashable]) -> None:
        entry = self._replies.pop(key, None)
        if entry is not None:
            self.size -= len(entry[1].payload)
