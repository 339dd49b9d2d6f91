"""Strings of a request that were not UTF-8. The C-accelerated Thrift decoder replaces invalid bytes with U+FFFD, so
`b"\\xff"` and `b"\\xfe"` would both arrive as "\\ufffd"; a request whose decoded strings hold U+FFFD is decoded
again by the pure-Python protocol, invalid bytes kept as lone surrogates, to tell a real U+FFFD a client sent from
bytes that were not UTF-8, and to name the field that held them."""

from __future__ import annotations

from typing import Any

from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.transport.TTransport import TMemoryBuffer

REPLACEMENT = "\ufffd"


def _has_replacement(text: str) -> bool:
    return REPLACEMENT in text


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


def invalid_utf8(args: Any, request: bytes) -> str | None:
    """Where the decoded arguments `args` of `request` (a whole message, as received) held bytes that are not UTF-8:
    the field's path, or None when every string was UTF-8."""
    if find_string(args, _has_replacement, "") is None:
        return None
    protocol = _LenientProtocol(TMemoryBuffer(request))
    protocol.readMessageBegin()
    again = type(args)()
    again.read(protocol)
    return find_string(again, _has_surrogate, "")
