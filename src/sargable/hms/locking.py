"""The Hive metastore's lock calls (`lock`, `check_lock`, `unlock`, `heartbeat`, `show_locks`) over
`sargable.metastore.locks`: Thrift structs to lock components and back, and the lock timeout setting.

sargable keeps no Hive transactions, so a request naming one (a non-zero `txnid`) is answered with Hive's
`NoSuchTxnException`. A request the locks can't take (no component, a partition lock without its table) is answered
with a `TApplicationException` carrying the reason: `lock` declares no exception for bad input.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from thrift.Thrift import TApplicationException

from sargable.errors import SargableError
from sargable.hms.bindings import ttypes
from sargable.metastore import locks
from sargable.metastore.locks import Lock, LockComponent

TIMEOUT_VARIABLE = "SARGABLE_LOCK_TIMEOUT"
"""The environment variable that sets the lock timeout of `sargable serve`, in seconds (Hive's `hive.txn.timeout`)."""

_TYPES = {
    ttypes.LockType.SHARED_READ: locks.SHARED_READ,
    ttypes.LockType.SHARED_WRITE: locks.SHARED_WRITE,
    ttypes.LockType.EXCLUSIVE: locks.EXCLUSIVE,
}
_HIVE_TYPES = {name: number for number, name in _TYPES.items()}
_STATES = {locks.ACQUIRED: ttypes.LockState.ACQUIRED, locks.WAITING: ttypes.LockState.WAITING}


def lock_timeout() -> float:
    """The lock timeout in seconds: `$SARGABLE_LOCK_TIMEOUT`, else Hive's default of 300."""
    text = os.environ.get(TIMEOUT_VARIABLE)
    if not text:
        return locks.DEFAULT_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        raise SargableError(f"${TIMEOUT_VARIABLE} must be a positive number of seconds, got {text!r}")
    return value


def refused(method: str, reason: str) -> TApplicationException:
    """The answer to a lock call the locks can't carry out (its method declares no exception that fits)."""
    return TApplicationException(TApplicationException.UNKNOWN, f"{method}: {reason}")


def no_transactions(method: str, txnid: int) -> Exception:
    return ttypes.NoSuchTxnException(
        message=f"{method}: no transaction {txnid}: sargable serve keeps no Hive transactions; lock without one"
    )


class UnknownLocks:
    """Within it, a lock id that is unknown or expired is Hive's `NoSuchLockException` (a class, not a generator:
    Thrift's exceptions are frozen, and a generator context manager sets their traceback)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        if isinstance(exc, locks.NoSuchLockError):
            raise ttypes.NoSuchLockException(message=str(exc)) from None
        return False


def components(request: Any) -> list[LockComponent]:
    """The lock components of a `LockRequest`; a `TApplicationException` for one that names too little."""
    out = []
    for part in request.component or []:
        kind = _TYPES.get(part.type)
        if kind is None:
            raise refused("lock", f"unknown lock type {part.type!r}")
        if part.level == ttypes.LockLevel.TABLE and not part.tablename:
            raise refused("lock", f"a TABLE lock component on database {part.dbname!r} names no table")
        if part.level == ttypes.LockLevel.PARTITION and not (part.tablename and part.partitionname):
            raise refused("lock", f"a PARTITION lock component on database {part.dbname!r} names no table or partition")
        out.append(LockComponent(part.dbname or "", part.tablename or None, part.partitionname or None, kind))
    return out


def response(lock: Lock) -> Any:
    return ttypes.LockResponse(lockid=lock.id, state=_STATES[lock.state])


def _millis(seconds: float | None) -> int | None:
    return None if seconds is None else int(seconds * 1000)


def show(found: Sequence[Lock], request: Any) -> Any:
    """A `ShowLocksResponse`: one element per component of each lock, filtered by the request's database, table and
    partition names (each exact, when given), in lock-id order; a waiting one names what blocks it."""
    database = (request.dbname or "").lower() or None
    table = (request.tablename or "").lower() or None
    partition = request.partname or None
    elements = []
    for lock in found:
        blocked = locks.blocker(lock, found) if lock.state == locks.WAITING else None
        for index, part in enumerate(lock.components, 1):
            if (
                (database is not None and part.database != database)
                or (table is not None and part.table != table)
                or (partition is not None and part.partition != partition)
            ):
                continue
            elements.append(
                ttypes.ShowLocksResponseElement(
                    lockid=lock.id,
                    dbname=part.database,
                    tablename=part.table,
                    partname=part.partition,
                    state=_STATES[lock.state],
                    type=_HIVE_TYPES[part.type],
                    lastheartbeat=_millis(lock.last_heartbeat),
                    acquiredat=_millis(lock.acquired_at),
                    user=lock.user,
                    hostname=lock.host,
                    heartbeatCount=lock.heartbeats,
                    agentInfo=lock.agent,
                    blockedByExtId=None if blocked is None else blocked.lock_id,
                    blockedByIntId=None if blocked is None else blocked.component,
                    lockIdInternal=index,
                )
            )
    return ttypes.ShowLocksResponse(locks=elements)
