"""Hive-style advisory locks on databases, tables and partitions, kept in the store so that every server over one
database (two `sargable serve` over one PostgreSQL) sees the same locks.

A lock is a numbered request of one or more components (database, optional table, optional partition name, a type:
shared read, shared write or exclusive). It is granted whole or not at all: `acquire` files it and grants it at
once if nothing blocks it, else leaves it waiting; the client polls `check`, which grants it once nothing blocks it.
A component is blocked by an overlapping, conflicting component of another lock that is either granted, or waiting
with a smaller lock id and a type no stronger than its own (Hive's queue order: a waiting reader may pass a waiting
writer; writers never pass an earlier waiting writer). Types conflict as in Hive: shared reads share with shared
reads and shared writes; two shared writes conflict; an exclusive conflicts with everything. Two components overlap
when they name the same database and, where both name one, the same table and the same partition; a database-level
shared read and a table-level exclusive do not conflict (Hive's exemption).

A lock lives while it is heartbeated: one whose last heartbeat (`acquire`, `check`, `heartbeat`) is older than its
timeout is gone (removed by the next write, invisible to reads), granted or not. The timeout is the requesting
server's setting, kept with the lock, so servers with different settings still agree on when a lock expires; their
clocks must agree too.

Layout: catalog keys `L` + 8-byte lock id -> the lock as JSON; `\\x00lock-id` -> the last lock id handed out. Every
write locks the lock-id row first, so lock operations run one at a time across all servers.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace

from sargable.errors import MetastoreError, NoSuchObjectError
from sargable.metastore.catalog import lock_catalog
from sargable.metastore.schema import CATALOG, DECODE_ERRORS, damaged, key_range
from sargable.store import Store

SHARED_READ = "shared_read"
SHARED_WRITE = "shared_write"
EXCLUSIVE = "exclusive"
TYPES = (SHARED_READ, SHARED_WRITE, EXCLUSIVE)
"""The lock types, weakest first."""
ACQUIRED = "acquired"
WAITING = "waiting"

DEFAULT_TIMEOUT = 300.0
"""Seconds a lock lives without a heartbeat: Hive's `hive.txn.timeout` default."""
MAX_COMPONENTS = 10_000
"""The most components one lock may have (each check compares every component with every other lock's)."""

LOCK_PREFIX = b"L"
LOCK_ID_KEY = b"\x00lock-id"
_ID = struct.Struct(">Q")


class NoSuchLockError(NoSuchObjectError):
    """A lock id that names no live lock: never handed out, released, or expired for want of heartbeats."""


@dataclass(frozen=True)
class LockComponent:
    """What one part of a lock covers: a database, one of its tables, or one partition (by its Hive name)."""

    database: str
    table: str | None = None
    partition: str | None = None
    type: str = EXCLUSIVE

    @property
    def level(self) -> str:
        return "partition" if self.partition is not None else "table" if self.table is not None else "db"

    def overlaps(self, other: LockComponent) -> bool:
        """Whether the two cover some object in common (a missing table or partition covers them all)."""
        return (
            self.database == other.database
            and (self.table is None or other.table is None or self.table == other.table)
            and (self.partition is None or other.partition is None or self.partition == other.partition)
        )

    def conflicts(self, other: LockComponent) -> bool:
        """Whether the two can't be granted together."""
        if not self.overlaps(other):
            return False
        if {self.type, other.type} <= {SHARED_READ, SHARED_WRITE}:
            return self.type == other.type == SHARED_WRITE
        kinds = {(self.level, self.type), (other.level, other.type)}
        return kinds != {("db", SHARED_READ), ("table", EXCLUSIVE)}


@dataclass(frozen=True)
class Lock:
    """A lock as stored: its components, state, who asked for it, and its heartbeats (times in epoch seconds)."""

    id: int
    components: tuple[LockComponent, ...]
    state: str
    timeout: float
    last_heartbeat: float
    acquired_at: float | None = None
    heartbeats: int = 0
    """How many `check` and `heartbeat` calls have kept it alive."""
    user: str = ""
    host: str = ""
    agent: str = ""

    def expired(self, now: float) -> bool:
        return now - self.last_heartbeat > self.timeout


@dataclass(frozen=True)
class Blocker:
    """The first component of another lock that keeps a waiting lock from being granted (1-based index)."""

    lock_id: int
    component: int


def check_components(components: Iterable[LockComponent]) -> tuple[LockComponent, ...]:
    """The components of a new lock, with database and table names lower-cased; a clear error for a bad one."""
    out = []
    for component in components:
        if not isinstance(component, LockComponent):
            raise MetastoreError(f"a lock component is a LockComponent, got {component!r:.80}")
        if component.type not in TYPES:
            raise MetastoreError(f"unknown lock type {component.type!r}: use one of {', '.join(TYPES)}")
        for what, name in (("database", component.database), ("table", component.table)):
            if (name is not None or what == "database") and (not isinstance(name, str) or not name):
                raise MetastoreError(f"a lock component's {what} name must be a non-empty string, got {name!r}")
        if component.partition is not None:
            if component.table is None:
                raise MetastoreError(f"a partition lock ({component.partition!r}) names its table as well")
            if not isinstance(component.partition, str) or not component.partition:
                raise MetastoreError(f"a partition name must be a non-empty string, got {component.partition!r}")
        table = None if component.table is None else component.table.lower()
        out.append(replace(component, database=component.database.lower(), table=table))
    if not out:
        raise MetastoreError("a lock request needs at least one component")
    if len(out) > MAX_COMPONENTS:
        raise MetastoreError(f"a lock request has {len(out):,} components; at most {MAX_COMPONENTS:,} are allowed")
    return tuple(out)


def blocker(lock: Lock, others: Iterable[Lock]) -> Blocker | None:
    """What keeps `lock` from being granted now, given the other live locks (None: it can be granted)."""
    rank = {kind: n for n, kind in enumerate(TYPES)}
    for other in others:
        if other.id == lock.id:
            continue
        for component in lock.components:
            for index, theirs in enumerate(other.components, 1):
                if not component.conflicts(theirs):
                    continue
                if other.state == ACQUIRED or (other.id < lock.id and rank[theirs.type] <= rank[component.type]):
                    return Blocker(other.id, index)
    return None


# ------------------------------------------------------------------------------------------------- the store


def _key(lock_id: int) -> bytes:
    return LOCK_PREFIX + _ID.pack(lock_id)


def _encode(lock: Lock) -> bytes:
    return json.dumps(
        {
            "components": [[c.database, c.table, c.partition, c.type] for c in lock.components],
            "state": lock.state,
            "timeout": lock.timeout,
            "last_heartbeat": lock.last_heartbeat,
            "acquired_at": lock.acquired_at,
            "heartbeats": lock.heartbeats,
            "user": lock.user,
            "host": lock.host,
            "agent": lock.agent,
        },
        separators=(",", ":"),
    ).encode()


def _decode(key: bytes, raw: bytes) -> Lock:
    try:
        (lock_id,) = _ID.unpack(key[len(LOCK_PREFIX) :])
        record = json.loads(raw)
        components = tuple(LockComponent(db, table, part, kind) for db, table, part, kind in record["components"])
        lock = Lock(
            lock_id,
            components,
            record["state"],
            float(record["timeout"]),
            float(record["last_heartbeat"]),
            None if record["acquired_at"] is None else float(record["acquired_at"]),
            int(record["heartbeats"]),
            str(record["user"]),
            str(record["host"]),
            str(record["agent"]),
        )
        if lock.state not in (ACQUIRED, WAITING) or any(c.type not in TYPES for c in components):
            raise ValueError(f"unknown state or lock type in {record!r:.200}")
    except DECODE_ERRORS as exc:
        raise damaged(CATALOG, key, "a Hive lock", exc) from None
    return lock


def _all(store: Store) -> list[Lock]:
    return [_decode(key, raw) for key, raw in store.scan(CATALOG, *key_range(LOCK_PREFIX))]


def _serialize(store: Store) -> int:
    """Lock the lock-id row (so lock writes run one at a time); the last lock id handed out (0: none yet).
    The row is made on first use under the DDL lock, so two first lockers can't both make it."""
    raw = store.get_for_update(CATALOG, LOCK_ID_KEY)
    if raw is None:
        lock_catalog(store)
        raw = store.get_for_update(CATALOG, LOCK_ID_KEY)
        if raw is None:
            store.put(CATALOG, LOCK_ID_KEY, _ID.pack(0))
            return 0
    try:
        return _ID.unpack(raw)[0]
    except DECODE_ERRORS as exc:
        raise damaged(CATALOG, LOCK_ID_KEY, "the last lock id", exc) from None


def _live(store: Store, now: float) -> list[Lock]:
    """The live locks in id order, after deleting the expired ones."""
    live = []
    for lock in _all(store):
        if lock.expired(now):
            store.delete(CATALOG, _key(lock.id))
        else:
            live.append(lock)
    return live


def _find(locks: Sequence[Lock], lock_id: int) -> Lock | None:
    return next((lock for lock in locks if lock.id == lock_id), None)


def _found(lock: Lock | None, lock_id: int) -> Lock:
    """The lock a call found; NoSuchLockError (raised after its transaction, which keeps the expired locks it
    deleted) when it found none."""
    if lock is None:
        raise NoSuchLockError(
            f"no lock {lock_id}: it was never taken, was released, or expired without a heartbeat"
        )
    return lock


def _check_time(now: float, timeout: float | None = None) -> None:
    if not isinstance(now, (int, float)) or not math.isfinite(now):
        raise MetastoreError(f"the time of a lock operation must be a finite number, got {now!r}")
    if timeout is not None and (not isinstance(timeout, (int, float)) or not 0 < timeout < math.inf):
        raise MetastoreError(f"a lock timeout is a positive number of seconds, got {timeout!r}")


def _granted(lock: Lock, others: Sequence[Lock], now: float) -> Lock:
    if lock.state == WAITING and blocker(lock, others) is None:
        return replace(lock, state=ACQUIRED, acquired_at=float(now))
    return lock


def acquire(
    store: Store,
    components: Iterable[LockComponent],
    *,
    now: float,
    timeout: float = DEFAULT_TIMEOUT,
    user: str = "",
    host: str = "",
    agent: str = "",
) -> Lock:
    """File a new lock on `components`, granted at once if nothing blocks it, else waiting (poll it with `check`)."""
    checked = check_components(components)
    _check_time(now, timeout)

    def run() -> Lock:
        lock_id = _serialize(store) + 1
        store.put(CATALOG, LOCK_ID_KEY, _ID.pack(lock_id))
        others = _live(store, now)
        lock = Lock(lock_id, checked, WAITING, float(timeout), float(now), user=user, host=host, agent=agent)
        lock = _granted(lock, others, now)
        store.put(CATALOG, _key(lock_id), _encode(lock))
        return lock

    return store.run_in_transaction(run)


def check(store: Store, lock_id: int, *, now: float) -> Lock:
    """Heartbeat a lock and grant it if it waits and nothing blocks it any more; NoSuchLockError if it is gone."""
    _check_time(now)

    def run() -> Lock | None:
        _serialize(store)
        locks = _live(store, now)
        lock = _find(locks, lock_id)
        if lock is None:
            return None
        lock = replace(lock, last_heartbeat=float(now), heartbeats=lock.heartbeats + 1)
        lock = _granted(lock, locks, now)
        store.put(CATALOG, _key(lock_id), _encode(lock))
        return lock

    return _found(store.run_in_transaction(run), lock_id)


def heartbeat(store: Store, lock_id: int, *, now: float) -> Lock:
    """Keep a lock alive for another timeout; NoSuchLockError if it is gone."""
    _check_time(now)

    def run() -> Lock | None:
        _serialize(store)
        lock = _find(_live(store, now), lock_id)
        if lock is None:
            return None
        lock = replace(lock, last_heartbeat=float(now), heartbeats=lock.heartbeats + 1)
        store.put(CATALOG, _key(lock_id), _encode(lock))
        return lock

    return _found(store.run_in_transaction(run), lock_id)


def release(store: Store, lock_id: int, *, now: float) -> None:
    """Remove a lock, granted or waiting; NoSuchLockError if it is gone (released already, or expired)."""
    _check_time(now)

    def run() -> Lock | None:
        _serialize(store)
        lock = _find(_live(store, now), lock_id)
        if lock is not None:
            store.delete(CATALOG, _key(lock_id))
        return lock

    _found(store.run_in_transaction(run), lock_id)


def expire(store: Store, *, now: float) -> int:
    """Delete every lock whose heartbeat is older than its timeout; how many."""
    _check_time(now)

    def run() -> int:
        _serialize(store)
        before = len(_all(store))
        return before - len(_live(store, now))

    return store.run_in_transaction(run)


def live_locks(store: Store, *, now: float) -> list[Lock]:
    """The live locks in lock-id order, read from one snapshot (expired ones are left out, not deleted)."""
    _check_time(now)
    with nullcontext() if store.in_transaction else store.transaction(readonly=True):
        return [lock for lock in _all(store) if not lock.expired(now)]
