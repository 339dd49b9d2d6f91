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
versions, as before. Whole-table listings have no scope, but keep their last partition's row key: when every step
since only added partitions after it (a table that takes its newest partition every few minutes), the added
partitions (or their names) are appended to the reply instead of the store being read again. The whole cache stays
under a byte budget (least recently used replies go first).
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from operator import itemgetter
from typing import Any, NamedTuple

from thrift.Thrift import TType

from sargable.hms.catalog import Change
from sargable.hms.convert import TableView
from sargable.hms.encode import TableCodec, list_header
from sargable.metastore import Partition, TableDefinition
from sargable.metastore.layout import layout_of
from sargable.metastore.partitions import encode_key

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


class _Entry(NamedTuple):
    version: int
    reply: CachedReply
    scope: Scope | None
    tail: bytes | None
    """The last row key of a whole-table listing (partitions added after it can be appended)."""


class _Step(NamedTuple):
    """A recorded version step: the values of the partitions it changed and, for a step that only added partitions,
    their row keys with the partitions, in key order."""

    values: tuple[tuple[Any, ...], ...]
    added: tuple[tuple[bytes, Partition], ...] | None


def _step(change: Change) -> _Step:
    """A change as the cache keeps it: the added partitions' row keys encoded here, after the write's commit (and only
    by a server that keeps replies)."""
    if not change.added:
        return _Step(change.values, None)
    table = change.added[0].table
    layout = layout_of(table)
    keyed = sorted(((encode_key(table, p.values, layout), p) for p in change.added), key=itemgetter(0))
    return _Step(change.values, tuple(keyed))


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
        self._replies: OrderedDict[tuple[int, Hashable], _Entry] = OrderedDict()
        self._steps: dict[int, OrderedDict[int, _Step]] = {}
        """Per table: version -> the step to it (the server's own writes)."""
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
        step = _step(change)
        with self._lock:
            steps = self._steps.setdefault(change.table_id, OrderedDict())
            steps[change.version] = step
            while len(steps) > MAX_STEPS:
                steps.popitem(last=False)

    def get(self, table: TableDefinition, call: Hashable) -> CachedReply | None:
        """The reply cached for `call` on this version of the table (or on an older one, when no step since changed
        its scope, or grown by the partitions added since), or None."""
        key = (table.table_id, call)
        with self._lock:
            entry = self._replies.get(key)
            if entry is None:
                return None
            added: list[tuple[bytes, Partition]] | None = None
            if entry.version != table.version:
                if entry.version > table.version:  # a reader of an older snapshot: the reply may hold newer partitions
                    return None
                if self._unchanged(table.table_id, entry.version, table.version, entry.scope):
                    self._replies[key] = entry._replace(version=table.version)
                else:
                    added = self._appended(table.table_id, entry.version, table.version, entry.tail)
                    if added is None:
                        self._drop(key)
                        return None
            if added is None:
                self._replies.move_to_end(key)
                return entry.reply
        return self._grown(table, key, entry, added)

    def _unchanged(self, table_id: int, since: int, now: int, scope: Scope | None) -> bool:
        """Whether every version step from `since` to `now` is recorded and changed no partition in `scope`."""
        steps = self._steps.get(table_id)
        if scope is None or steps is None or now - since > MAX_STEPS:
            return False
        for version in range(since + 1, now + 1):
            step = steps.get(version)
            if step is None or any(map(scope, step.values)):
                return False
        return True

    def _appended(
        self, table_id: int, since: int, now: int, tail: bytes | None
    ) -> list[tuple[bytes, Partition]] | None:
        """The keys and partitions added from `since` to `now`, in key order, when every step between is recorded and
        only added partitions after `tail` (and after the previous step's); else None."""
        steps = self._steps.get(table_id)
        if tail is None or steps is None or now - since > MAX_STEPS:
            return None
        out: list[tuple[bytes, Partition]] = []
        for version in range(since + 1, now + 1):
            step = steps.get(version)
            if step is None or not step.added or step.added[0][0] <= tail:
                return None
            out += step.added
            tail = step.added[-1][0]
        return out

    def _grown(
        self, table: TableDefinition, key: tuple[int, Hashable], entry: _Entry, added: list[tuple[bytes, Partition]]
    ) -> CachedReply:
        """A listing with the partitions (or names) added after it appended (its count in the list header raised),
        kept in place of the older one."""
        codec = self.codec(table)
        parts = [part for _, part in added]
        more = codec.names(parts) if entry.reply.payload[0] == TType.STRING else codec.partitions(parts)
        count = entry.reply.count + len(more)
        head = list_header(entry.reply.payload[0], count)
        reply = CachedReply(count, b"".join([head, memoryview(entry.reply.payload)[len(head) :], *more]))
        with self._lock:
            if self._replies.get(key) is entry:
                self._drop(key)
                if len(reply.payload) <= self.largest:
                    self._keep(key, _Entry(table.version, reply, None, added[-1][0]))
        return reply

    def put(
        self,
        table: TableDefinition,
        call: Hashable,
        reply: CachedReply,
        scope: Scope | None = None,
        *,
        tail: bytes | None = None,
    ) -> None:
        """Keep a reply read at this version of the table, with its scope (None: any change may change it) or, for
        a whole-table listing, its last partition's row key (`tail`: b"" for an empty table); ignored if too large,
        or if a reply read at a newer version is kept."""
        if len(reply.payload) > self.largest:
            return
        key = (table.table_id, call)
        with self._lock:
            kept = self._replies.get(key)
            if kept is not None and kept.version > table.version:
                return
            self._drop(key)
            self._keep(key, _Entry(table.version, reply, scope, tail))

    def _keep(self, key: tuple[int, Hashable], entry: _Entry) -> None:
        """Add an entry (the lock held), then evict least recently used ones down to the budget."""
        self._replies[key] = entry
        self.size += len(entry.reply.payload)
        while self.size > self.budget:
            self._drop(next(iter(self._replies)))

    def _drop(self, key: tuple[int, Hashable]) -> None:
        entry = self._replies.pop(key, None)
        if entry is not None:
            self.size -= len(entry.reply.payload)
