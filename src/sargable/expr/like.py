"""SQL LIKE patterns: validation, translation to regular expressions, and the literal prefix planners turn into ranges.

LIKE follows Spark: `%` matches any run of characters, `_` exactly one code point, newlines are ordinary characters,
matching is case-sensitive and covers the whole value. With `ESCAPE 'c'` the escape character may only precede `%`,
`_` or itself, and may not end the pattern. Without an ESCAPE clause there is no escape character (standard SQL).
"""

from __future__ import annotations

import re
from functools import lru_cache

from sargable.errors import PatternError

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


def like_to_regex(pattern: str, escape: str | None = None) -> re.Pattern[str]:
    """The compiled regular expression equivalent to `value LIKE pattern`; it is anchored at both ends."""
    return _like_regex(_tokens(pattern, escape))


@lru_cache(maxsize=4096)
def _like_regex(tokens: tuple[tuple[str, str], ...]) -> re.Pattern[str]:
    parts = []
    for kind, text in tokens:
        if kind == "lit":
            parts.append(re.escape(text))
        elif kind == "any":
            parts.append(".*")
        else:
            parts.append(".")
    return re.compile(r"\A(?:" + "".join(parts) + r")\Z", re.DOTALL)


def like_matches(value: str, pattern: str, escape: str | None = None) -> bool:
    """Whether the whole of `value` matches the LIKE `pattern` (no NULL handling: `value` is a string)."""
    return like_to_regex(pattern, escape).match(value) is not None


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


def compile_regex(pattern: str) -> re.Pattern[str]:
    """Compile an RLIKE pattern (Python `re` syntax), raising `PatternError` when it is not a valid expression."""
    if not isinstance(pattern, str):
        raise PatternError(f"a regular expression must be a string, got {pattern!r}")
    return _compile_regex(pattern)


@lru_cache(maxsize=4096)
def _compile_regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except (re.error, OverflowError, RecursionError) as exc:
        raise PatternError(f"invalid regular expression {pattern!r}: {exc}") from None
