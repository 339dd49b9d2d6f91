"""Regular expressions in Python's `re` syntax matched in time linear in the value: no pattern can freeze a caller.

Python's `re` backtracks, so `(a+)+b` or `.*.*.*x` take exponential or high-polynomial time on a value that almost
matches, holding the GIL all along. Here a pattern becomes a Thompson NFA (counted repetitions expanded, at most
`MAX_STATES` states), run as a DFA built lazily, one state per set of NFA states, so each character of the value
costs one cached transition once warm. Only whether the pattern is found matters (`search`), so greedy and lazy
quantifiers are the same here.

The pattern is read by the standard library's own parser of `re` syntax (`re._parser`: a private module, used so
that the syntax, flags and character classes read exactly as `re` reads them, with no second parser to keep in
step), and each single-character item (a literal, `.`, a class, with its flags) is decided by `re` itself on one
character at a time. Anchors and look-arounds are tests of a position: `^ $ \\A \\Z \\b \\B` directly, a
look-behind (fixed width in `re`) or a look-ahead of bounded width by running its own automaton over at most that
many characters. What has no linear-time matching is refused with `UnsupportedPatternError` naming it:
back-references and conditionals, possessive quantifiers, atomic groups, look-aheads of unbounded width.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from functools import lru_cache
from re import _constants as sre  # the opcodes of `re._parser`'s tree (see the module docstring)
from re import _parser
from typing import Any

from sargable.deadline import check_deadline
from sargable.errors import PatternError, UnsupportedPatternError

MAX_STATES = 20_000
"""NFA states at most (counted repetitions are expanded: `(a{100}){100}` has 10,000)."""
MAX_LOOKAHEAD_WIDTH = 1_000
"""The widest look-ahead taken: it is run at every position, so its width multiplies the time per character."""
MAX_LOOKAROUND_STEPS = 10_000
"""The characters all look-arounds of a pattern may read at one position, nested ones multiplied out."""
_MAX_DFA_STATES = 4_096
"""Cached DFA states of one automaton; past this the cache starts over (memory stays bounded, time linear)."""

_CHAR, _SPLIT, _ASSERT, _MATCH = range(4)
_SINGLE = {sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN}
_REPEATS = {sre.MAX_REPEAT, sre.MIN_REPEAT}
_CATEGORIES = {
    sre.CATEGORY_DIGIT: "\\d",
    sre.CATEGORY_NOT_DIGIT: "\\D",
    sre.CATEGORY_SPACE: "\\s",
    sre.CATEGORY_NOT_SPACE: "\\S",
    sre.CATEGORY_WORD: "\\w",
    sre.CATEGORY_NOT_WORD: "\\W",
}
_REFUSED = {
    sre.GROUPREF: "a back-reference",
    sre.GROUPREF_EXISTS: "a conditional on a group ((?(1)...|...))",
    sre.POSSESSIVE_REPEAT: "a possessive quantifier (*+, ++, ?+, {n,m}+)",
    sre.ATOMIC_GROUP: "an atomic group ((?>...))",
}


def _char_text(code: int) -> str:
    return f"\\U{code:08x}"


def _single_pattern(pattern: str, op: Any, av: Any, flags: int) -> str:
    """A pattern of `re` syntax that matches one character exactly as the item `(op, av)` does under `flags`."""
    if op is sre.LITERAL:
        body = _char_text(av)
    elif op is sre.NOT_LITERAL:
        body = f"[^{_char_text(av)}]"
    elif op is sre.ANY:
        body = "."
    else:
        parts = []
        for kind, value in av:
            if kind is sre.NEGATE:
                parts.append("^")
            elif kind is sre.LITERAL:
                parts.append(_char_text(value))
            elif kind is sre.RANGE:
                parts.append(f"{_char_text(value[0])}-{_char_text(value[1])}")
            elif kind is sre.CATEGORY and value in _CATEGORIES:
                parts.append(_CATEGORIES[value])
            else:
                raise UnsupportedPatternError(pattern, f"the class item {kind} {value}")
        body = "[" + "".join(parts) + "]"
    inline = "".join(
        letter for flag, letter in ((re.IGNORECASE, "i"), (re.DOTALL, "s"), (re.ASCII, "a")) if flags & flag
    )
    return f"(?{inline}){body}" if inline else body


def _is_word(char: str, ascii_only: bool) -> bool:
    return (char.isalnum() or char == "_") and (char.isascii() or not ascii_only)


def _anchor(pattern: str, code: Any, flags: int) -> tuple[Callable[[str, int], bool], bool]:
    """A test of a position for `^ $ \\A \\Z \\b \\B`, and whether it holds only at the ends of the text."""
    multiline = bool(flags & re.MULTILINE)
    if code is sre.AT_BEGINNING_STRING or (code is sre.AT_BEGINNING and not multiline):
        return (lambda text, pos: pos == 0), True
    if code is sre.AT_END_STRING:
        return (lambda text, pos: pos == len(text)), True
    if code is sre.AT_BEGINNING:
        return (lambda text, pos: pos == 0 or text[pos - 1] == "\n"), False
    if code is sre.AT_END and multiline:
        return (lambda text, pos: pos == len(text) or text[pos] == "\n"), False
    if code is sre.AT_END:
        return (lambda text, pos: pos == len(text) or (pos == len(text) - 1 and text[pos] == "\n")), False
    ascii_only = bool(flags & re.ASCII)

    def boundary(text: str, pos: int) -> bool:
        before = pos > 0 and _is_word(text[pos - 1], ascii_only)
        after = pos < len(text) and _is_word(text[pos], ascii_only)
        return before != after

    if code is sre.AT_BOUNDARY:
        return (lambda text, pos: bool(text) and boundary(text, pos)), False
    if code is sre.AT_NON_BOUNDARY:
        return (lambda text, pos: bool(text) and not boundary(text, pos)), False
    raise UnsupportedPatternError(pattern, f"the anchor {code}")


class _DfaCache:
    """One generation of an automaton's lazily built DFA: state sets, their ids, accepting flags, transitions."""

    __slots__ = ("ids", "initial", "moves", "plain", "sets", "verdict")

    def __init__(self) -> None:
        self.sets: list[tuple[int, ...]] = []
        self.ids: dict[tuple[int, ...], int] = {}
        self.verdict: list[bool | None] = []
        """Per state: True once the match state is reached, False when no state is left (no match), else None."""
        self.plain: list[dict[str, int]] = []
        """Per state: its moves by character where no position test holds (most positions of most patterns)."""
        self.moves: dict[tuple[int, str, int], int] = {}
        """Moves where some position test holds: (state, character, tests that hold) -> state."""
        self.initial: dict[int, int] = {}


class _Automaton:
    """An NFA (parallel arrays of state kind, successors and argument) and its lazily built DFA."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.kind: list[int] = []
        self.out1: list[int] = []
        self.out2: list[int] = []
        self.arg: list[int] = []
        self.singles: list[Callable[[str], Any]] = []
        self._single_ids: dict[str, int] = {}
        self.tests: list[Callable[[str, int], bool]] = []
        self._test_ids: dict[Any, int] = {}
        self.edge_only = True
        self.steps = 0
        """Characters the position tests read at one position, at most (look-arounds, nested ones included)."""
        self.start = 0
        self._cache = _DfaCache()
        self._memo: dict[tuple[int, str], bool] = {}
        self._edge_masks: dict[tuple[bool, bool], int] = {}
        self._lock = threading.Lock()

    # -- building ----------------------------------------------------------------------------------------------

    def state(self, kind: int, out1: int = -1, out2: int = -1, arg: int = -1) -> int:
        if len(self.kind) >= MAX_STATES:
            raise UnsupportedPatternError(
                self.pattern, f"counted repetitions that expand to more than {MAX_STATES:,} states"
            )
        self.kind.append(kind)
        self.out1.append(out1)
        self.out2.append(out2)
        self.arg.append(arg)
        return len(self.kind) - 1

    def single(self, op: Any, av: Any, flags: int) -> int:
        text = _single_pattern(self.pattern, op, av, flags & (re.IGNORECASE | re.DOTALL | re.ASCII))
        if text not in self._single_ids:
            self._single_ids[text] = len(self.singles)
            self.singles.append(re.compile(text).fullmatch)
        return self._single_ids[text]

    def test(self, key: Any, make: Callable[[], tuple[Callable[[str, int], bool], bool]]) -> int:
        if key not in self._test_ids:
            fn, edge = make()
            self._test_ids[key] = len(self.tests)
            self.tests.append(fn)
            self.edge_only = self.edge_only and edge
        return self._test_ids[key]

    def sequence(self, items: Any, flags: int, then: int) -> int:
        """States matching `items` in order, then going on to `then`; returns the first."""
        for op, av in reversed(list(items)):
            then = self.item(op, av, flags, then)
        return then

    def item(self, op: Any, av: Any, flags: int, then: int) -> int:
        if op in _SINGLE:
            return self.state(_CHAR, then, arg=self.single(op, av, flags))
        if op is sre.SUBPATTERN:
            _, add, remove, body = av
            return self.sequence(body, (flags | add) & ~remove, then)
        if op is sre.BRANCH:
            starts = [self.sequence(alternative, flags, then) for alternative in av[1]]
            first = starts[-1]
            for start in reversed(starts[:-1]):
                first = self.state(_SPLIT, start, first)
            return first
        if op in _REPEATS:
            low, high, body = av
            if high == sre.MAXREPEAT:
                loop = self.state(_SPLIT, -1, then)
                self.out1[loop] = self.sequence(body, flags, loop)
                first = loop
            else:
                first = then
                for _ in range(high - low):
                    first = self.state(_SPLIT, self.sequence(body, flags, first), then)
            for _ in range(low):
                first = self.sequence(body, flags, first)
            return first
        if op is sre.AT:
            index = self.test(("at", av, flags), lambda: _anchor(self.pattern, av, flags))
            return self.state(_ASSERT, then, arg=index)
        if op in (sre.ASSERT, sre.ASSERT_NOT):
            index = self.test((op, av[0], id(av[1]), flags), lambda: self.lookaround(op, av, flags))
            return self.state(_ASSERT, then, arg=index)
        if op in _REFUSED:
            raise UnsupportedPatternError(self.pattern, _REFUSED[op])
        raise UnsupportedPatternError(self.pattern, f"the construct {op}")

    def lookaround(self, op: Any, av: Any, flags: int) -> tuple[Callable[[str, int], bool], bool]:
        direction, body = av
        low, high = body.getwidth()
        if direction < 0 and low != high:  # what `re.compile` checks after parsing
            raise PatternError(f"invalid regular expression {self.pattern!r}: look-behind requires fixed-width pattern")
        if direction > 0 and high > MAX_LOOKAHEAD_WIDTH:
            raise UnsupportedPatternError(
                self.pattern, f"a look-ahead that can match more than {MAX_LOOKAHEAD_WIDTH:,} characters"
            )
        inner = _Automaton(self.pattern)
        inner.start = inner.sequence(body, flags, inner.state(_MATCH))
        self.steps += (high + 1) * (inner.steps + 1)
        if self.steps > MAX_LOOKAROUND_STEPS:
            raise UnsupportedPatternError(
                self.pattern, f"look-arounds that read more than {MAX_LOOKAROUND_STEPS:,} characters at each position"
            )
        wanted = op is sre.ASSERT
        if direction > 0:
            return (lambda text, pos: inner.run(text, pos, len(text)) == wanted), False
        return (lambda text, pos: (pos >= low and inner.run(text, pos - low, pos)) == wanted), False

    # -- running -----------------------------------------------------------------------------------------------

    def mask(self, text: str, pos: int) -> int:
        """The position tests that hold at `pos`, as bits."""
        if self.edge_only:  # they depend only on whether `pos` is the start or the end: 4 cases, kept
            key = (pos == 0, pos == len(text))
            found = self._edge_masks.get(key)
            if found is None:
                found = self._edge_masks[key] = self.tests_at(text, pos)
            return found
        return self.tests_at(text, pos)

    def tests_at(self, text: str, pos: int) -> int:
        bits = 0
        for index, fn in enumerate(self.tests):
            if fn(text, pos):
                bits |= 1 << index
        return bits

    def closure(self, seeds: list[int], mask: int) -> tuple[int, ...]:
        """The character and match states reachable from `seeds` through splits and the tests that hold."""
        kind, out1, out2, arg = self.kind, self.out1, self.out2, self.arg
        seen: set[int] = set()
        found = []
        stack = seeds[::-1]
        while stack:
            state = stack.pop()
            if state in seen:
                continue
            seen.add(state)
            k = kind[state]
            if k == _SPLIT:
                stack.append(out2[state])
                stack.append(out1[state])
            elif k == _ASSERT:
                if mask >> arg[state] & 1:
                    stack.append(out1[state])
            else:
                found.append(state)
        return tuple(sorted(found))

    def intern(self, cache: _DfaCache, states: tuple[int, ...]) -> int:
        found = cache.ids.get(states)
        if found is None:
            found = cache.ids[states] = len(cache.sets)
            cache.sets.append(states)
            cache.verdict.append(True if any(self.kind[s] == _MATCH for s in states) else None if states else False)
            cache.plain.append({})
        return found

    def begin(self, cache: _DfaCache, mask: int) -> int:
        with self._lock:
            found = cache.initial.get(mask)
            if found is None:
                found = cache.initial[mask] = self.intern(cache, self.closure([self.start], mask))
            return found

    def step(self, cache: _DfaCache, current: int, char: str, mask: int) -> int:
        """The DFA state after `current` reads `char` at a position where the tests `mask` hold (and cache it).

        This costs up to the NFA's size, so it checks the call's deadline: a value of millions of characters under a
        pattern whose DFA keeps growing is linear too, but long."""
        check_deadline()
        with self._lock:
            memo, singles, arg = self._memo, self.singles, self.arg
            targets = []
            for state in cache.sets[current]:
                if self.kind[state] != _CHAR:
                    continue
                key = (arg[state], char)
                hit = memo.get(key)
                if hit is None:
                    hit = memo[key] = singles[arg[state]](char) is not None
                if hit:
                    targets.append(self.out1[state])
            found = self.intern(cache, self.closure(targets, mask))
            if mask:
                cache.moves[(current, char, mask)] = found
            else:
                cache.plain[current][char] = found
            if len(cache.sets) > _MAX_DFA_STATES or len(memo) > 16 * _MAX_DFA_STATES:
                self._cache = _DfaCache()  # later runs start over; this one goes on with its cache
                self._memo = {}
            return found

    def run(self, text: str, start: int, stop: int) -> bool:
        """Whether the automaton reaches its match state reading `text` from `start`, at most up to `stop`."""
        cache = self._cache
        size = len(text)
        first = self.mask(text, start)
        current = cache.initial.get(first)
        if current is None:
            current = self.begin(cache, first)
        verdict, plain = cache.verdict, cache.plain
        if verdict[current] is not None:
            return bool(verdict[current])
        if self.edge_only:
            # No position test holds inside the text: every move but one into its very end is a plain one.
            last = stop - 1 if stop == size and stop > start else stop
            for char in text[start:last]:
                found = plain[current].get(char)
                current = self.step(cache, current, char, 0) if found is None else found
                if verdict[current] is not None:
                    return bool(verdict[current])
            if last == stop:
                return False
            start = last
        for pos in range(start, stop):
            char, mask = text[pos], self.mask(text, pos + 1)
            found = cache.moves.get((current, char, mask)) if mask else plain[current].get(char)
            current = self.step(cache, current, char, mask) if found is None else found
            if verdict[current] is not None:
                return bool(verdict[current])
        return False


class LinearRegex:
    """A compiled pattern: `search(value)` tells whether it is found anywhere in `value`, in linear time."""

    __slots__ = ("_automaton", "pattern")

    def __init__(self, pattern: str, automaton: _Automaton) -> None:
        self.pattern = pattern
        self._automaton = automaton

    def search(self, value: str) -> bool:
        """Whether the pattern matches somewhere in `value` (as `re.search(pattern, value) is not None`)."""
        return self._automaton.run(value, 0, len(value))

    def __repr__(self) -> str:
        return f"LinearRegex({self.pattern!r})"


def compile_linear(pattern: str) -> LinearRegex:
    """Compile a pattern of Python `re` syntax for linear-time search.

    Raises `PatternError` when `re` rejects it, and `UnsupportedPatternError` (a `PatternError`) for a construct
    without linear-time matching (see the module).
    """
    if not isinstance(pattern, str):
        raise PatternError(f"a regular expression must be a string, got {pattern!r}")
    return _compile(pattern)


@lru_cache(maxsize=4096)
def _compile(pattern: str) -> LinearRegex:
    check_deadline()  # compiling costs a fraction of a millisecond; a filter may hold thousands of patterns
    try:
        tree = _parser.parse(pattern, 0)
    except (re.error, OverflowError, RecursionError) as exc:
        raise PatternError(f"invalid regular expression {pattern!r}: {exc}") from None
    automaton = _Automaton(pattern)
    anywhere = automaton.single(sre.ANY, None, re.DOTALL)
    try:
        body = automaton.sequence(tree, tree.state.flags, automaton.state(_MATCH))
    except RecursionError:
        raise UnsupportedPatternError(pattern, "groups nested too deeply") from None
    loop = automaton.state(_SPLIT, -1, body)  # search: the pattern may start at any position
    automaton.out1[loop] = automaton.state(_CHAR, loop, arg=anywhere)
    automaton.start = loop
    return LinearRegex(pattern, automaton)
