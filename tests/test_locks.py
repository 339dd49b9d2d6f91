"""The lock table of `sargable.metastore.locks` against an independent model of Hive's lock manager (its ordered
lock list scanned backwards through Hive's jump table of lock types and states), on both backends, each step through
either of two connections (as two servers over one store); concurrent lockers over one store; expiry without
heartbeats."""

from __future__ import annotations

import threading

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from sargable.errors import MetastoreError
from sargable.metastore import Metastore, locks
from sargable.metastore.locks import EXCLUSIVE, SHARED_READ, SHARED_WRITE, LockComponent
from sargable.metastore.schema import CATALOG, key_range

# ---------------------------------------------------------------------------------------------- the model

ACQUIRE, WAIT, KEEP_LOOKING = "acquire", "wait", "keep looking"
JUMP = {
    # (the type wanted, the type of a lock in front of it, that lock's state) -> what Hive's checkLock does
    (SHARED_READ, SHARED_READ, "acquired"): ACQUIRE,
    (SHARED_READ, SHARED_READ, "waiting"): KEEP_LOOKING,
    (SHARED_READ, SHARED_WRITE, "acquired"): ACQUIRE,
    (SHARED_READ, SHARED_WRITE, "waiting"): KEEP_LOOKING,
    (SHARED_READ, EXCLUSIVE, "acquired"): WAIT,
    (SHARED_READ, EXCLUSIVE, "waiting"): WAIT,
    (SHARED_WRITE, SHARED_READ, "acquired"): KEEP_LOOKING,
    (SHARED_WRITE, SHARED_READ, "waiting"): KEEP_LOOKING,
    (SHARED_WRITE, SHARED_WRITE, "acquired"): WAIT,
    (SHARED_WRITE, SHARED_WRITE, "waiting"): WAIT,
    (SHARED_WRITE, EXCLUSIVE, "acquired"): WAIT,
    (SHARED_WRITE, EXCLUSIVE, "waiting"): WAIT,
    (EXCLUSIVE, SHARED_READ, "acquired"): WAIT,
    (EXCLUSIVE, SHARED_READ, "waiting"): WAIT,
    (EXCLUSIVE, SHARED_WRITE, "acquired"): WAIT,
    (EXCLUSIVE, SHARED_WRITE, "waiting"): WAIT,
    (EXCLUSIVE, EXCLUSIVE, "acquired"): WAIT,
    (EXCLUSIVE, EXCLUSIVE, "waiting"): WAIT,
}
STRENGTH = {SHARED_READ: 0, SHARED_WRITE: 1, EXCLUSIVE: 2}


def path(c: LockComponent) -> tuple[str, ...]:
    return tuple(x for x in (c.database, c.table, c.partition) if x is not None)


def overlap(a: LockComponent, b: LockComponent) -> bool:
    """One covers the other: a database covers its tables, a table its partitions."""
    pa, pb = path(a), path(b)
    return pa[: len(pb)] == pb or pb[: len(pa)] == pa


def exempt(a: LockComponent, b: LockComponent) -> bool:
    """Hive's `ignoreConflict`: a database shared read and a table exclusive let each other be."""
    kinds = {(len(path(a)), a.type), (len(path(b)), b.type)}
    return kinds == {(1, SHARED_READ), (2, EXCLUSIVE)}


class Model:
    """Locks as Hive's TxnHandler keeps them, with Hive's checkLock: every acquired component and every waiting
    component of an earlier lock, sorted acquired first, then weakest type first, then by lock id; a wanted
    component looks backwards from its own place through the jump table."""

    def __init__(self) -> None:
        self.locks: dict[int, dict] = {}
        self.last_id = 0

    def live(self, now: float) -> dict[int, dict]:
        return {i: lock for i, lock in self.locks.items() if now - lock["heartbeat"] <= lock["timeout"]}

    def expire(self, now: float) -> None:
        self.locks = self.live(now)

    def grantable(self, lock_id: int) -> bool:
        me = self.locks[lock_id]
        for n, wanted in enumerate(me["components"]):
            entries = [
                (0 if other["state"] == "acquired" else 1, STRENGTH[c.type], other_id, k, c, other["state"])
                for other_id, other in self.locks.items()
                if other_id != lock_id and (other["state"] == "acquired" or other_id < lock_id)
                for k, c in enumerate(other["components"])
            ]
            mine = (1, STRENGTH[wanted.type], lock_id, n, wanted, "waiting")
            ordered = sorted([*entries, mine], key=lambda e: e[:4])
            for entry in reversed(ordered[: ordered.index(mine)]):
                theirs, state = entry[4], entry[5]
                if not overlap(wanted, theirs) or exempt(wanted, theirs):
                    continue
                action = JUMP[wanted.type, theirs.type, state]
                if action == WAIT:
                    return False
                if action == ACQUIRE:
                    break
        return True


# -------------------------------------------------------------------------------------------- the machine

component_st = st.builds(
    lambda db, table, part, kind: LockComponent(db, table, part if table else None, kind),
    st.sampled_from(["d1", "d2"]),
    st.sampled_from([None, "t1", "t2"]),
    st.sampled_from([None, "p=1", "p=2"]),
    st.sampled_from([SHARED_READ, SHARED_WRITE, EXCLUSIVE]),
)


class LockMachine(RuleBasedStateMachine):
    ids = Bundle("ids")

    def __init__(self, stores) -> None:
        super().__init__()
        self.stores = stores
        """Two connections to one store, as two servers have: each step goes through either."""
        self.store = stores[0]
        self.store.delete_range(CATALOG, *key_range(locks.LOCK_PREFIX))
        self.store.delete(CATALOG, locks.LOCK_ID_KEY)
        self.model = Model()
        self.now = 1000.0

    @initialize(target=ids)
    def unknown(self) -> int:
        return 999

    @rule(
        target=ids,
        components=st.lists(component_st, min_size=1, max_size=3),
        timeout=st.sampled_from([5, 20]),
        via=st.sampled_from([0, 1]),
    )
    def acquire(self, components, timeout, via) -> int:
        lock = locks.acquire(self.stores[via], components, now=self.now, timeout=timeout, user="u", host="h")
        self.model.expire(self.now)
        self.model.last_id += 1
        assert lock.id == self.model.last_id
        self.model.locks[lock.id] = {
            "components": list(components),
            "state": "waiting",
            "heartbeat": self.now,
            "timeout": timeout,
        }
        if self.model.grantable(lock.id):
            self.model.locks[lock.id]["state"] = "acquired"
        assert lock.state == self.model.locks[lock.id]["state"]
        return lock.id

    def _expect_missing(self, call, lock_id, via) -> bool:
        self.model.expire(self.now)
        if lock_id in self.model.locks:
            return False
        with pytest.raises(locks.NoSuchLockError, match=f"no lock {lock_id}"):
            call(self.stores[via], lock_id, now=self.now)
        return True

    @rule(lock_id=ids, via=st.sampled_from([0, 1]))
    def check(self, lock_id, via) -> None:
        if self._expect_missing(locks.check, lock_id, via):
            return
        lock = locks.check(self.stores[via], lock_id, now=self.now)
        mine = self.model.locks[lock_id]
        mine["heartbeat"] = self.now
        if mine["state"] == "waiting" and self.model.grantable(lock_id):
            mine["state"] = "acquired"
        assert lock.state == mine["state"]

    @rule(lock_id=ids, via=st.sampled_from([0, 1]))
    def heartbeat(self, lock_id, via) -> None:
        if self._expect_missing(locks.heartbeat, lock_id, via):
            return
        locks.heartbeat(self.stores[via], lock_id, now=self.now)
        self.model.locks[lock_id]["heartbeat"] = self.now

    @rule(lock_id=ids, via=st.sampled_from([0, 1]))
    def release(self, lock_id, via) -> None:
        if self._expect_missing(locks.release, lock_id, via):
            return
        locks.release(self.stores[via], lock_id, now=self.now)
        del self.model.locks[lock_id]

    @rule(seconds=st.sampled_from([0.5, 3, 6, 15, 25]))
    def tick(self, seconds) -> None:
        self.now += seconds

    @rule()
    def expire(self) -> None:
        before = len(self.model.locks)
        self.model.expire(self.now)
        assert locks.expire(self.store, now=self.now) == before - len(self.model.locks)

    @invariant()
    def same_locks(self) -> None:
        stored = locks.live_locks(self.store, now=self.now)
        expected = self.model.live(self.now)
        assert [lock.id for lock in stored] == sorted(expected)
        for lock in stored:
            mine = expected[lock.id]
            assert (lock.state, list(lock.components), lock.last_heartbeat) == (
                mine["state"],
                mine["components"],
                mine["heartbeat"],
            )

    @invariant()
    def granted_locks_never_conflict(self) -> None:
        granted = [lock for lock in locks.live_locks(self.store, now=self.now) if lock.state == "acquired"]
        for i, a in enumerate(granted):
            for b in granted[i + 1 :]:
                for x in a.components:
                    for y in b.components:
                        assert not (overlap(x, y) and not exempt(x, y) and JUMP[x.type, y.type, "acquired"] == WAIT)


def test_lock_table_follows_hives_rules(metastore, metastore_url, tmp_path):
    examples = 60 if metastore.store.backend == "sqlite" else 25
    with Metastore.open(metastore_url, warehouse=tmp_path) as other:
        stores = (metastore.store, other.store)
        run_state_machine_as_test(
            lambda: LockMachine(stores), settings=settings(max_examples=examples, stateful_step_count=30)
        )


# ----------------------------------------------------------------------------------------- plain behaviour


def test_waiting_writer_granted_after_readers_leave(metastore):
    store = metastore.store
    reader = locks.acquire(store, [LockComponent("db", "t", type=SHARED_READ)], now=0)
    writer = locks.acquire(store, [LockComponent("DB", "T", "p=1")], now=1)
    assert (reader.state, writer.state) == ("acquired", "waiting")
    assert writer.components == (LockComponent("db", "t", "p=1", EXCLUSIVE),)
    assert locks.check(store, writer.id, now=2).state == "waiting"
    locks.release(store, reader.id, now=3)
    granted = locks.check(store, writer.id, now=4)
    assert (granted.state, granted.acquired_at, granted.heartbeats) == ("acquired", 4.0, 2)


def test_lock_expires_without_heartbeat_and_lives_with_them(metastore):
    store = metastore.store
    kept = locks.acquire(store, [LockComponent("db", "kept")], now=0, timeout=10)
    dropped = locks.acquire(store, [LockComponent("db", "dropped")], now=0, timeout=10)
    for now in (8, 16, 24):
        locks.heartbeat(store, kept.id, now=now)
    assert [lock.id for lock in locks.live_locks(store, now=25)] == [kept.id]
    with pytest.raises(locks.NoSuchLockError):
        locks.check(store, dropped.id, now=25)
    with pytest.raises(locks.NoSuchLockError):
        locks.release(store, dropped.id, now=25)
    follower = locks.acquire(store, [LockComponent("db", "dropped")], now=25)
    assert follower.state == "acquired"
    assert locks.expire(store, now=100) == 1  # kept (timeout 10); the follower has the default 300
    assert locks.expire(store, now=400) == 1
    assert locks.live_locks(store, now=0) == []


@pytest.mark.parametrize(
    ("components", "message"),
    [
        ([], "at least one component"),
        ([LockComponent("", "t")], "database name must be a non-empty string"),
        ([LockComponent("db", None, "p=1")], "names its table as well"),
        ([LockComponent("db", "t", type="upgrade")], "unknown lock type 'upgrade'"),
    ],
)
def test_bad_requests_are_refused_and_take_nothing(metastore, components, message):
    with pytest.raises(MetastoreError, match=message):
        locks.acquire(metastore.store, components, now=0)
    assert locks.live_locks(metastore.store, now=0) == []


def test_concurrent_lockers_get_distinct_ids_and_one_grant(metastore_url, tmp_path):
    """Eight lockers over their own store connections ask for one exclusive lock at once: one is granted."""
    results, errors = [], []
    start = threading.Barrier(8)

    def locker() -> None:
        try:
            with Metastore.open(metastore_url, warehouse=tmp_path) as ms:
                start.wait()
                results.append(locks.acquire(ms.store, [LockComponent("db", "t")], now=0))
        except BaseException as exc:
            errors.append(exc)

    with Metastore.open(metastore_url, warehouse=tmp_path):
        pass  # set the store up before the race
    threads = [threading.Thread(target=locker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(lock.id for lock in results) == list(range(1, 9))
    assert [lock.state for lock in results].count("acquired") == 1
