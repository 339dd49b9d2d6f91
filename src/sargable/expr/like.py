"""SQL LIKE patterns: validation, linear-time matching, and the literal prefix planners turn into key ranges.

LIKE follows Spark: `%` matches any run of characters, `_` exactly one code point, newlines are ordinary characters,
matching is case-sensitive and covers the whole value. With `ESCAPE 'c'` the escape character may only precede `%`,
`_` or itself, and may not end the pattern. Without an ESCAPE clause there is no escape character (standard SQL).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from sargable.errors import PatternError
from sargable.expr.linear_regex import LinearRegex, compile_linear

ANY = "%"
ONE = "_"
_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)


def _tokens(pattern: str, escape: str | None) -> tuple[tuple[str, str], ...]:
    """The pattern as ("lit", text) / ("any", "%") / ("one", "_") tokens, with adjacent literals joined."""
    if not isinstance(pattern, str):
        raise PatternError(f"a LIKE pattern must be a string, got {pattern!r}")
    if escape is not None and (not isinstance(escape, str) or len(escape) != 1):
        raise PatternError(f"the ESCAPE character must be a single character, got {escape!r}")
    return _tokenize(pattern, escape)


@lru_cache(maxsize=4096)
def _tokenize(pattern: str, escape: str | None) -> tuple[tuple[str, str], ...]:
    tokens: list[tuple[str, str]] = []
    literal: list[str] = []
    index, size = 0, len(pattern)
    while index < size:
        char = pattern[index]
        if escape is not None and char == escape:
            if index + 1 == size:
                raise PatternError(f"LIKE pattern {pattern!r} ends with the escape character {escape!r}")
            following = pattern[index + 1]
            if following not in (ANY, ONE, escape):
                raise PatternError(
                    f"in LIKE pattern {pattern!r} the escape character {escape!r} precedes {following!r}; "
                    f"it may only precede '%', '_' or itself"
                )
            literal.append(following)
            index += 2
            continue
        if char in (ANY, ONE):
            if literal:
                tokens.append(("lit", "".join(literal)))
                literal = []
            tokens.append(("any" if char == ANY else "one", char))
        else:
            literal.append(char)
        index += 1
    if literal:
        tokens.append(("lit", "".join(literal)))
    return tuple(tokens)


def validate_like(pattern: str, escape: str | None = None) -> None:
    """Raise `PatternError` unless `pattern` is a valid LIKE pattern for `escape`."""
    _tokens(pattern, escape)


def like_matcher(pattern: str, escape: str | None = None) -> Callable[[str], bool]:
    """A test of whether a whole value matches the LIKE `pattern`, in time linear in the value (no backtracking)."""
    return _like_matcher(_tokens(pattern, escape))


@lru_cache(maxsize=4096)
def _like_matcher(tokens: tuple[tuple[str, str], ...]) -> Callable[[str], bool]:
    """Without `_` a pattern is literal pieces between `%`s: the first starts the value, the last ends it, and each
    one between is found at its leftmost place after the one before (an earlier place never leaves less room for
    the rest), with `str.find`. With `_` it runs as a linear-time automaton."""
    if any(kind == "one" for kind, _ in tokens):
        return compile_linear(_like_regex(tokens)).search
    pieces: list[str] = [""]
    for kind, text in tokens:
        if kind == "lit":
            pieces[-1] += text
        else:
            pieces.append("")
    if len(pieces) == 1:
        return pieces[0].__eq__
    first, middle, last = pieces[0], pieces[1:-1], pieces[-1]
    least = len(first) + len(last)

    def matches(value: str) -> bool:
        if len(value) < least or not value.startswith(first) or not value.endswith(last):
            return False
        at, end = len(first), len(value) - len(last)
        for piece in middle:
            found = value.find(piece, at, end)
            if found < 0:
                return False
            at = found + len(piece)
        return True

    return matches


def _like_regex(tokens: tuple[tuple[str, str], ...]) -> str:
    parts = []
    for kind, text in tokens:
        if kind == "lit":
            parts.append(re.escape(text))
        elif kind == "any":
            parts.append(".*")
        else:
            parts.append(".")
    return r"(?s)\A(?:" + "".join(parts) + r")\Z"


def like_matches(value: str, pattern: str, escape: str | None = None) -> bool:
    """Whether the whole of `value` matches the LIKE `pattern` (no NULL handling: `value` is a string)."""
    return like_matcher(pattern, escape)(value)


def like_is_exact(pattern: str, escape: str | None = None) -> bool:
    """True when the pattern has no wildcard, so `LIKE pattern` is equality with `like_prefix(pattern)[0]`."""
    return all(kind == "lit" for kind, _ in _tokens(pattern, escape))


def like_prefix(pattern: str, escape: str | None = None) -> tuple[str, str]:
    """Split a pattern into its literal prefix (escapes resolved) and the rest (still a pattern, same escape).

    `like_prefix('abc%')` is `('abc', '%')`: every match lies in `[abc, prefix_successor('abc'))`, and the rest is
    only worth filtering when it is not `'%'`. An exact pattern gives `(value, '')`.
    """
    tokens = _tokens(pattern, escape)
    if not tokens or tokens[0][0] != "lit":
        return "", pattern
    prefix = tokens[0][1]
    rest = []
    for kind, text in tokens[1:]:
        if kind == "lit":
            if escape is not None:
                text = "".join(escape + c if c in (ANY, ONE, escape) else c for c in text)
            rest.append(text)
        else:
            rest.append(text)
    return prefix, "".join(rest)


def prefix_successor(prefix: str) -> str | None:
    """The least string above every string that starts with `prefix` (code-point order), or None if unbounded."""
    chars = list(prefix)
    while chars:
        code = ord(chars[-1]) + 1
        if code in _SURROGATES:
            code = _SURROGATES.stop
        if code <= _MAX_CODE_POINT:
            chars[-1] = chr(code)
            return "".join(chars)
        chars.pop()
    return None


def compile_regex(pattern: str) -> LinearRegex:
    """Compile an RLIKE pattern (Python `re` syntax) for linear-time search, raising `PatternError` when it is not
    a valid expression or has a construct without linear-time matching (`UnsupportedPatternError`)."""
    return compile_linear(pattern)
