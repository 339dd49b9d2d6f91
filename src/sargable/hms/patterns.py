"""Hive's name patterns (`get_databases`, `get_tables`): `*` any run of characters, `|` between alternatives,
case-insensitive, over the whole name; matched in time linear in the name, with no regular expression.

Each alternative is a glob with `*` only, so it matches exactly when its first piece starts the name, its last piece
ends it, and the pieces between are found in order, each at its leftmost place after the one before (an earlier
place never leaves less room for the rest). A pattern longer than `MAX_NAME_PATTERN_CHARS` is refused.
"""

from __future__ import annotations

from collections.abc import Callable

from sargable.deadline import check_deadline
from sargable.errors import PatternError

MAX_NAME_PATTERN_CHARS = 1024
"""The longest name pattern taken (Hive names are at most 128 characters; a real pattern is a few of them)."""


def _glob_matches(pieces: tuple[str, ...], name: str) -> bool:
    """Whether `name` is `pieces[0]`, then anything, `pieces[1]`, ..., anything, `pieces[-1]`."""
    first, last = pieces[0], pieces[-1]
    if len(name) < len(first) + len(last) or not name.startswith(first) or not name.endswith(last):
        return False
    at, end = len(first), len(name) - len(last)
    for piece in pieces[1:-1]:
        found = name.find(piece, at, end)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def name_matcher(pattern: str | None) -> Callable[[str], bool]:
    """A test of names against Hive's name `pattern` (None, empty or `*`: every name).

    Raises `PatternError` for a pattern longer than `MAX_NAME_PATTERN_CHARS`.
    """
    if not pattern or pattern == "*":
        return lambda name: True
    if len(pattern) > MAX_NAME_PATTERN_CHARS:
        raise PatternError(
            f"a name pattern of {len(pattern):,} characters is longer than the limit of {MAX_NAME_PATTERN_CHARS:,}; "
            f"list the names (get_all_tables, get_all_databases) and filter them instead"
        )
    exact: set[str] = set()
    globs: set[tuple[str, ...]] = set()
    for alternative in pattern.lower().split("|"):
        pieces = tuple(alternative.strip().split("*"))
        if len(pieces) == 1:
            exact.add(pieces[0])
        elif not any(pieces):
            return lambda name: True
        else:
            globs.add(pieces)
    ordered = sorted(globs)

    def matches(name: str) -> bool:
        check_deadline()
        lowered = name.lower()
        return lowered in exact or any(_glob_matches(pieces, lowered) for pieces in ordered)

    return matches
