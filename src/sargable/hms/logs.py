"""Log lines of `sargable serve` that no client can flood: what a client sent is cut to a bounded length (saying how
long it was) with its control characters escaped, every line of the server's logger is bounded, and warnings about
connections (refused, not Thrift, a failed TLS handshake) are throttled."""

from __future__ import annotations

import logging
import threading
import time

FIELD_CHARS = 200
"""A client's text (a filter, a name) in a log line: at most this many of its characters."""
LINE_CHARS = 4096
"""A log line of the server's logger: at most this many characters (then its length is said)."""
TRACEBACK_CHARS = 16384
"""A logged traceback: at most this many characters."""

_ESCAPES = {
    code: f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    for code in [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029]
}


def clip(text: str, limit: int = FIELD_CHARS, *, quote: bool = False) -> str:
    """`text` for a log line: control characters escaped (quoted as a Python literal when `quote`), cut to `limit`
    characters of the original, with `...(N chars)` after a cut. Costs O(limit) whatever the length of `text`."""
    head = text[:limit]
    shown = repr(head) if quote else head.translate(_ESCAPES)
    if len(text) > limit:
        shown += f"...({len(text):,} chars)"
    return shown


class BoundedLines(logging.Filter):
    """Bounds every record of the logger it is added to: the message escaped and cut to LINE_CHARS, a traceback
    cut to TRACEBACK_CHARS (its newlines kept)."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        record.msg, record.args = clip(message, LINE_CHARS), None
        if record.exc_info and not record.exc_text:
            trace = self._formatter.formatException(record.exc_info)
            if len(trace) > TRACEBACK_CHARS:
                trace = trace[:TRACEBACK_CHARS] + f"...(traceback of {len(trace):,} chars)"
            record.exc_text = trace
        return True


def bounded_logger(name: str) -> logging.Logger:
    """The logger `name`, each of its lines bounded (see `BoundedLines`)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, BoundedLines) for f in logger.filters):
        logger.addFilter(BoundedLines())
    return logger


class Throttle:
    """At most one line per `every` seconds for each kind of event; the lines in between are counted, and the next
    line says how many there were."""

    def __init__(self, every: float = 1.0) -> None:
        self.every = every
        self._last: dict[str, float] = {}
        self._skipped: dict[str, int] = {}
        self._lock = threading.Lock()

    def allow(self, kind: str) -> int | None:
        """None to drop this line; else the number of lines of `kind` dropped since the last one allowed."""
        now = time.monotonic()
        with self._lock:
            if now - self._last.get(kind, -self.every) < self.every:
                self._skipped[kind] = self._skipped.get(kind, 0) + 1
                return None
            self._last[kind] = now
            return self._skipped.pop(kind, 0)

    def warn(self, logger: logging.Logger, kind: str, message: str, *args: object) -> None:
        """`logger.warning(message, *args)` unless a line of `kind` was logged less than `every` seconds ago."""
        skipped = self.allow(kind)
        if skipped is not None:
            suffix = f" ({skipped} more like it not logged)" if skipped else ""
            logger.warning(message + suffix, *args)
