"""HMS locks through real `sargable serve` processes and an independent Thrift client (pymetastore's generated one):
two servers over one metastore (a SQLite file, a PostgreSQL database) agree on every lock; a lock not heartbeated
expires by its own server's timeout on the other server too; Hive's exceptions for what the locks can't do."""

from __future__ import annotations

import threading
import time

import pytest

from hms_server import SargableServe, thrift_client
from metastore_fixtures import BACKENDS, fresh_url
from sargable.hms.locking import TIMEOUT_VARIABLE

pytest.importorskip("pymetastore")
from pymetastore.hive_metastore import ttypes
from thrift.Thrift import TApplicationException

SR, SW, X = ttypes.LockType.SHARED_READ, ttypes.LockType.SHARED_WRITE, ttypes.LockType.EXCLUSIVE
ACQUIRED, WAITING = ttypes.LockState.ACQUIRED, ttypes.LockState.WAITING
SHORT_TIMEOUT = 1.0


@pytest.fixture(scope="module", params=BACKENDS)
def servers(request, tmp_path_factory):
    """Two servers over one metastore (lock timeout 600 s), and a third over it whose locks expire in 1 s."""
    tmp = tmp_path_factory.mktemp(f"locks-{request.param}")
    postgres = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    url = fresh_url(request.param, tmp, postgres)
    started = []
    try:
        for timeout in (600, 600, SHORT_TIMEOUT):
            with pytest.MonkeyPatch.context() as env:
                env.setenv(TIMEOUT_VARIABLE, str(timeout))
                started.append(SargableServe(tmp / f"s{len(started)}", url).start())
        yield started
    finally:
        for serve in started:
            assert serve.stop() == 0


def _request(*parts: tuple, user: str = "tester") -> ttypes.LockRequest:
    components = []
    for kind, db, table, *partition in parts:
        level = ttypes.LockLevel.PARTITION if partition else ttypes.LockLevel.TABLE if table else ttypes.LockLevel.DB
        components.append(
            ttypes.LockComponent(
                type=kind, level=level, dbname=db, tablename=table, partitionname=partition[0] if partition else None
            )
        )
    return ttypes.LockRequest(component=components, user=user, hostname="host-1", agentInfo="test")


def test_two_servers_agree_on_locks(servers):
    first, second, _ = servers
    with thrift_client(first.port) as a, thrift_client(second.port) as b:
        writer = a.lock(_request((X, "Sales", "Events")))
        assert writer.state == ACQUIRED
        reader = b.lock(_request((SR, "sales", "events", "ds=2024-01-01"), (SR, "sales", "other")))
        assert reader.state == WAITING
        assert reader.lockid > writer.lockid
        other_table = b.lock(_request((SW, "sales", "other")))
        assert other_table.state == ACQUIRED  # a shared write shares with the waiting reader's shared read

        shown = b.show_locks(ttypes.ShowLocksRequest(dbname="sales", tablename="events"))
        assert [(e.lockid, e.tablename, e.partname, e.state, e.type) for e in shown.locks] == [
            (writer.lockid, "events", None, ACQUIRED, X),
            (reader.lockid, "events", "ds=2024-01-01", WAITING, SR),
        ]
        waiting = shown.locks[1]
        assert (waiting.blockedByExtId, waiting.blockedByIntId, waiting.lockIdInternal) == (writer.lockid, 1, 1)
        assert (waiting.user, waiting.hostname, waiting.agentInfo) == ("tester", "host-1", "test")
        assert shown.locks[0].acquiredat is not None and waiting.acquiredat is None
        everything = a.show_locks(ttypes.ShowLocksRequest())
        assert [e.lockid for e in everything.locks] == [writer.lockid, reader.lockid, reader.lockid, other_table.lockid]

        assert b.check_lock(ttypes.CheckLockRequest(lockid=reader.lockid)).state == WAITING
        b.heartbeat(ttypes.HeartbeatRequest(lockid=writer.lockid))
        a.unlock(ttypes.UnlockRequest(lockid=writer.lockid))
        granted = a.check_lock(ttypes.CheckLockRequest(lockid=reader.lockid))
        assert (granted.lockid, granted.state) == (reader.lockid, ACQUIRED)
        shown = a.show_locks(ttypes.ShowLocksRequest(dbname="sales", tablename="events", partname="ds=2024-01-01"))
        assert [(e.lockid, e.state, e.heartbeatCount) for e in shown.locks] == [(reader.lockid, ACQUIRED, 2)]
        for lock in (reader, other_table):
            b.unlock(ttypes.UnlockRequest(lockid=lock.lockid))
        assert a.show_locks(ttypes.ShowLocksRequest()).locks == []


def test_lock_expires_without_heartbeat_on_every_server(servers):
    first, _, short = servers
    with thrift_client(short.port) as s, thrift_client(first.port) as a:
        lost = s.lock(_request((X, "exp", "t")))
        assert lost.state == ACQUIRED
        blocked = a.lock(_request((SW, "exp", "t")))
        assert blocked.state == WAITING
        time.sleep(SHORT_TIMEOUT * 1.5)
        assert a.check_lock(ttypes.CheckLockRequest(lockid=blocked.lockid)).state == ACQUIRED
        for call, request in [
            (a.check_lock, ttypes.CheckLockRequest(lockid=lost.lockid)),
            (a.heartbeat, ttypes.HeartbeatRequest(lockid=lost.lockid)),
            (s.unlock, ttypes.UnlockRequest(lockid=lost.lockid)),
        ]:
            with pytest.raises(ttypes.NoSuchLockException, match=f"no lock {lost.lockid}"):
                call(request)
        a.unlock(ttypes.UnlockRequest(lockid=blocked.lockid))


def test_what_locks_refuse(servers):
    first = servers[0]
    with thrift_client(first.port) as a:
        with pytest.raises(ttypes.NoSuchTxnException, match="keeps no Hive transactions"):
            a.lock(ttypes.LockRequest(component=_request((X, "db", "t")).component, txnid=7, user="u", hostname="h"))
        with pytest.raises(ttypes.NoSuchTxnException):
            a.heartbeat(ttypes.HeartbeatRequest(lockid=1, txnid=7))
        with pytest.raises(TApplicationException, match="at least one component"):
            a.lock(ttypes.LockRequest(component=[], user="u", hostname="h"))
        part = ttypes.LockComponent(type=X, level=ttypes.LockLevel.PARTITION, dbname="db", tablename="t")
        with pytest.raises(TApplicationException, match="names no table or partition"):
            a.lock(ttypes.LockRequest(component=[part], user="u", hostname="h"))
        with pytest.raises(ttypes.NoSuchLockException, match="no lock 123456"):
            a.check_lock(ttypes.CheckLockRequest(lockid=123456))
        with pytest.raises(ttypes.NoSuchLockException, match="no lock 123456"):
            a.unlock(ttypes.UnlockRequest(lockid=123456))
        assert a.get_all_databases() is not None  # the connection still serves
        assert a.show_locks(ttypes.ShowLocksRequest()).locks == []


def test_read_only_server_serves_locks(servers, tmp_path):
    """Hive clients take shared read locks to query: a read-only server grants them (they change no metadata)."""
    url = servers[0].metastore_url
    with SargableServe(tmp_path, url, read_only=True) as serve, thrift_client(serve.port) as client:
        lock = client.lock(_request((SR, "ro", "t")))
        assert lock.state == ACQUIRED
        client.unlock(ttypes.UnlockRequest(lockid=lock.lockid))


def test_a_bad_lock_timeout_setting_is_named(servers, tmp_path, monkeypatch):
    monkeypatch.setenv(TIMEOUT_VARIABLE, "soon")
    with SargableServe(tmp_path, servers[0].metastore_url) as serve, thrift_client(serve.port) as client:
        with pytest.raises(TApplicationException, match=r"SARGABLE_LOCK_TIMEOUT must be a positive number.*'soon'"):
            client.lock(_request((X, "db", "t")))
        assert client.show_locks(ttypes.ShowLocksRequest()).locks == []


def test_exclusive_holders_through_two_servers_never_overlap(servers):
    """Four clients, two per server, take one exclusive table lock ten times each, polling while they wait: no two
    ever hold it at once, and every request is granted in the end."""
    holders, most, entered, errors = [0], [0], [0], []
    guard = threading.Lock()

    def client(port: int) -> None:
        try:
            with thrift_client(port) as c:
                for _ in range(10):
                    lock = c.lock(_request((X, "mutex", "t")))
                    polls = 0
                    while lock.state != ACQUIRED:
                        polls += 1
                        assert polls < 5000, "never granted"
                        time.sleep(0.002)
                        lock = c.check_lock(ttypes.CheckLockRequest(lockid=lock.lockid))
                    with guard:
                        holders[0] += 1
                        most[0] = max(most[0], holders[0])
                        entered[0] += 1
                    time.sleep(0.001)
                    with guard:
                        holders[0] -= 1
                    c.unlock(ttypes.UnlockRequest(lockid=lock.lockid))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(servers[n % 2].port,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert (entered[0], most[0]) == (40, 1)
