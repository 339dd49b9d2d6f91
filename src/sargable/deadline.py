"""A deadline for the current call, checked by the long loops of the core, so no call runs without end.

An adapter sets one per call (`with deadline(60.0): ...`, as the Hive metastore server does for each request);
loops that can run long (partition scans evaluating a key filter, pattern matching over many values, listings)
call `check_deadline()`, which raises `DeadlineExceededError` once the time is up. The deadline lives in a
context variable, so each thread (each server connection) has its own, and code run without one is never
stopped. A nested `deadline` never extends the one around it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from sargable.errors import DeadlineExceededError, SargableError

_current: ContextVar[tuple[float, float] | None] = ContextVar("sargable_deadline", default=None)
"""(monotonic time the call must end by, the seconds it was given), or None: no deadline."""


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Run the block under a deadline of `seconds` from now (None: no new deadline; the outer one, if any, holds)."""
    if seconds is None:
        yield
        return
    if not seconds > 0:
        raise SargableError(f"a deadline must be a positive number of seconds, got {seconds!r}")
    ends = time.monotonic() + seconds
    outer = _current.get()
    token = _current.set(outer if outer is not None and outer[0] <= ends else (ends, seconds))
    try:
        yield
    finally:
        _current.reset(token)


def check_deadline() -> None:
    """Raise `DeadlineExceededError` if the current deadline has passed (cheap: call it from inner loops)."""
    current = _current.get()
    if current is not None and time.monotonic() >= current[0]:
        raise DeadlineExceededError(
            f"the call ran past its deadline of {current[1]:g} s and was stopped; narrow its filter or pattern, "
            f"or raise the server's --call-timeout"
        )
