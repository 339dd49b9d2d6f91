"""A deadline for the current call, checked by the long loops of the core, so no call runs without end.

An adapter sets one per call (`with Deadline(60.0): ...`, as the Hive metastore server does for each request);
loops that can run long (partition scans evaluating a key filter, pattern matching over many values, listings)
call `check_deadline()`, which raises `DeadlineExceededError` once the time is up. The deadline lives in a
context variable, so each thread (each server connection) has its own, and code run without one is never
stopped. A nested `Deadline` never extends the one around it.
"""

from __future__ import annotations

import time
from contextvars import ContextVar, Token

from sargable.errors import DeadlineExceededError, SargableError

_current: ContextVar[tuple[float, float] | None] = ContextVar("sargable_deadline", default=None)
"""(monotonic time the call must end by, the seconds it was given), or None: no deadline."""


class Deadline:
    """Run a block under a deadline of `seconds` from now (None: no new deadline; the outer one, if any, holds).

    A class rather than a `contextlib.contextmanager`: that one assigns to an exception's `__traceback__` as it
    passes through, which the frozen Thrift exception structs of the metastore server refuse.
    """

    __slots__ = ("_seconds", "_token")

    def __init__(self, seconds: float | None) -> None:
        if seconds is not None and not seconds > 0:
            raise SargableError(f"a deadline must be a positive number of seconds, got {seconds!r}")
        self._seconds = seconds
        self._token: Token[tuple[float, float] | None] | None = None

    def __enter__(self) -> None:
        if self._seconds is None:
            return
        ends = time.monotonic() + self._seconds
        outer = _current.get()
        self._token = _current.set(outer if outer is not None and outer[0] <= ends else (ends, self._seconds))

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _current.reset(self._token)
            self._token = None


def check_deadline() -> None:
    """Raise `DeadlineExceededError` if the current deadline has passed (cheap: call it from inner loops)."""
    current = _current.get()
    if current is not None and time.monotonic() >= current[0]:
        raise DeadlineExceededError(
            f"the call ran past its deadline of {current[1]:g} s and was stopped; narrow its filter or pattern, "
            f"or raise the server's --call-timeout"
        )
