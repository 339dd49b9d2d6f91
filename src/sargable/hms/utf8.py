"""Strings of a request that were not UTF-8. The C-accelerated Thrift decoder replaces invalid bytes with U+FFFD, so
`b"\\xff"` and `b"\\xfe"` would both arrive as "\\ufffd"; a request whose decoded strings hold U+FFFD is decoded
again by the pure-Python protocol, invalid bytes kept as lone surrogates, to tell a real U+FFFD a client sent from
bytes that were not UTF-8, and to name the field that held them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.transport.TTransport import TMemoryBuffer

REPLACEMENT = "\ufffd"


def holds_replacement(value: Any) -> bool:
    """Whether any string in a decoded Thrift value holds U+FFFD (a quick walk: a quarter of the decoding's time)."""
    kind = type(value)
    if kind is str:
        return REPLACEMENT in value
    if kind is list or kind is set or kind is tuple or kind is frozenset:
        return any(map(holds_replacement, value))
    if kind is dict:
        return any(map(holds_replacement, value)) or any(map(holds_replacement, value.values()))
    fields = getattr(value, "__dict__", None)
    return fields is not None and any(map(holds_replacement, fields.values()))


def _has_surrogate(text: str) -> bool:
    return not text.isascii() and any("\udc80" <= ch <= "\udcff" for ch in text)


def find_string(value: Any, test: Any, path: str) -> str | None:
    """The path (`new_part.values[0]`) of the first string in a decoded Thrift value for which `test` holds."""
    if isinstance(value, str):
        return path if test(value) else None
    if isinstance(value, (list, tuple, set, frozenset)):
        for i, item in enumerate(value):
            found = find_string(item, test, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = find_string(key, test, f"{path} key") or find_string(item, test, f"{path}[{key!r:.40}]")
            if found is not None:
                return found
        return None
    spec = getattr(value, "thrift_spec", None)
    if spec:
        for entry in spec:
            if entry is not None:
                found = find_string(getattr(value, entry[2], None), test, f"{path}.{entry[2]}" if path else entry[2])
                if found is not None:
                    return found
    return None


class _LenientProtocol(TBinaryProtocol):
    """The pure-Python binary protocol, keeping bytes that are not UTF-8 as lone surrogates."""

    def readString(self) -> str:
        return self.readBinary().decode("utf-8", "surrogateescape")


def invalid_utf8(args: Any, request: Callable[[], bytes]) -> str | None:
    """Where the decoded arguments `args` of a request (`request()`: its whole message, as received, asked for only
    when a string holds U+FFFD) held bytes that are not UTF-8: the field's path, or None when every string was
    UTF-8."""
    if not holds_replacement(args):
        return None
    protocol = _LenientProtocol(TMemoryBuffer(request()))
    protocol.readMessageBegin()
    again = type(args)()
    again.read(protocol)
    return find_string(again, _has_surrogate, "")
