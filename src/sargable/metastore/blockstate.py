"""The bookkeeping of a table's statistics blocks (`statblocks`) that commits write without pyarrow: the state row,
the keys, the pending marks of files not yet in the blocks, and the dead marks of removed files.

Keys in the `statblocks` keyspace, each after the table's 8-byte prefix: `s` the state, `d` + column the column's
directory, `b` + id a block, `p` + file key a pending file, `x` + file key a dead mark (the table version that
removed the file: a block row of that key written before it is dead).

A commit of few files only writes pending marks (`pend`); a commit that brings `PENDING_MAX` of them, or compaction
coming due (`compaction_due`), is when the caller loads `statblocks` (and pyarrow) to write blocks.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sargable import keys as keycodec
from sargable.metastore.layout import table_prefix
from sargable.metastore.records import TableDefinition
from sargable.metastore.schema import BLOCKS, DECODE_ERRORS, FILES, blocks_state_key, damaged, key_range
from sargable.store import Store
from sargable.types import STRING

BLOCK_ROWS = 2048
"""Files per block at most: a block is read whole, and the directory has a row per block."""
COMPACT_FRACTION = 4
"""A table's blocks are compacted when more than 1 / COMPACT_FRACTION of their rows are dead (and at least
`BLOCK_ROWS // COMPACT_FRACTION`), so the work is paid for by the removals that made them dead."""
PENDING_MAX = 128
"""Files of small commits wait as pending marks (their keys only) until this many have come, and are then written to
the blocks together: a commit of one file then costs a few point writes, not a rewrite of every column's last
block. A scan takes every pending file as a candidate (its per-file step decides), reading at most this many file
entries more."""

_STATE = struct.Struct(">qqqq")
"""The state row: next block id, live files, dead rows, pending files (every column's blocks have the same files)."""
VERSION = struct.Struct(">q")
"""A dead mark's value (the removing version) and a block id in a block key."""
DIRECTORY, BLOCK, DEAD, PENDING = b"d", b"b", b"x", b"p"
UNUSABLE = b""
"""A directory value saying the column's blocks can't be kept (statistics with no Arrow form): never read."""


@dataclass
class State:
    """A table's block bookkeeping: the next block id, its live files, its dead rows (per column) and its files not
    yet in the blocks (pending)."""

    next_id: int
    live: int
    dead: int
    pending: int


def prefix(table: TableDefinition, kind: bytes) -> bytes:
    """The keys of one kind (`DIRECTORY`, `BLOCK`, `DEAD`, `PENDING`) of a table start with this."""
    return table_prefix(table.table_id) + kind


def directory_key(table: TableDefinition, column: str) -> bytes:
    return prefix(table, DIRECTORY) + keycodec.encode([column.lower()], [STRING])


def block_key(table: TableDefinition, block_id: int) -> bytes:
    return prefix(table, BLOCK) + VERSION.pack(block_id)


def read_state(store: Store, table: TableDefinition) -> State | None:
    """The table's block state, None when it keeps no blocks."""
    key = blocks_state_key(table.table_id)
    raw = store.get(BLOCKS, key)
    if raw is None:
        return None
    try:
        return State(*_STATE.unpack(raw))
    except DECODE_ERRORS as exc:
        raise damaged(BLOCKS, key, f"the block state of {table.qualified_name}", exc) from None


def put_state(store: Store, table: TableDefinition, state: State) -> None:
    raw = _STATE.pack(state.next_id, state.live, state.dead, state.pending)
    store.put(BLOCKS, blocks_state_key(table.table_id), raw)


def start(store: Store, table: TableDefinition) -> State:
    """Keep blocks for a table from now on, with none yet (what it had is dropped); returns its state."""
    store.delete_range(BLOCKS, *key_range(table_prefix(table.table_id)))
    state = State(0, 0, 0, 0)
    put_state(store, table, state)
    return state


def pend(store: Store, table: TableDefinition, file_keys: Sequence[bytes]) -> bool:
    """Note files a commit adds as pending, when they and those waiting stay under `PENDING_MAX`: True then, False
    when they must go to the blocks now (`statblocks.added`). The table keeps blocks."""
    state = read_state(store, table)
    if state is None or not file_keys:
        return True
    if state.pending + len(file_keys) >= PENDING_MAX:
        state.live += len(file_keys)
        put_state(store, table, state)
        return False
    store.put_many(BLOCKS, [(prefix(table, PENDING) + key, b"") for key in file_keys])
    state.live += len(file_keys)
    state.pending += len(file_keys)
    put_state(store, table, state)
    return True


def pending_keys(store: Store, table: TableDefinition) -> list[bytes]:
    """The keys (in `files`) of the table's pending files, sorted."""
    start, stop = key_range(prefix(table, PENDING))
    return [key[len(start) :] for key, _ in store.scan(BLOCKS, start, stop)]


def take_pending(store: Store, table: TableDefinition, state: State) -> list[tuple[bytes, bytes]]:
    """(key, stored entry) of the pending files the table still lists; their marks are dropped."""
    if not state.pending:
        return []
    keys = pending_keys(store, table)
    store.delete_range(BLOCKS, *key_range(prefix(table, PENDING)))
    state.pending = 0
    found = store.multi_get(FILES, keys) if keys else {}
    return [(key, found[key]) for key in keys if key in found]


def mark_dead(store: Store, table: TableDefinition, file_keys: Iterable[bytes]) -> None:
    """Mark the rows of removed files dead, as of this commit's version (the table keeps blocks)."""
    state = read_state(store, table)
    marks = [(prefix(table, DEAD) + key, VERSION.pack(table.version)) for key in file_keys]
    if state is None or not marks:
        return
    store.put_many(BLOCKS, marks)
    state.live -= len(marks)
    state.dead += len(marks)
    put_state(store, table, state)


def compaction_due(store: Store, table: TableDefinition) -> bool:
    """Whether dead rows passed a `COMPACT_FRACTION` of the rows (`statblocks.compact` is then due)."""
    state = read_state(store, table)
    return state is not None and state.dead > max(BLOCK_ROWS, state.live) // COMPACT_FRACTION
