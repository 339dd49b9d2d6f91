"""Key filters on raw key bytes (the seed's first property): compare field bytes, decode only when a leaf needs it.

A comparison of a key column with a literal becomes a comparison of that field's bytes (`keys.field_slice`, or a
plain slice for a fixed-width field at a fixed offset) with the literal's encoding (`keys.encode_field`): the codec
keeps byte order equal to value order, NULL lowest. IN is a set lookup on field bytes; BETWEEN, IS [NOT] NULL and
prefix LIKE are byte intervals. Anything else (LIKE with wildcards inside, RLIKE, functions, ...) decodes the key
once and evaluates the leaf (`sg.evaluate`), after any byte test that can rule the key out first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sargable import keys
from sargable.expr.evaluate import compile_predicate
from sargable.expr.nodes import And, Column, Expr, In, Literal, Or, columns_of
from sargable.plan.boxes import Box, Interval, residuals
from sargable.plan.filterplan import key_columns_of
from sargable.plan.leaves import KeyContext, leaf_boxes
from sargable.plan.order import domain_position
from sargable.types import DataType

KeyTest = Callable[[bytes], bool]
_MAX_NESTING = 64


def compile_key_filter(
    expr: Expr | None, key_columns: Sequence[tuple[str, DataType | str]], *, offset: int = 0
) -> KeyTest:
    """A function telling whether `expr` is TRUE on a key; the key's encoded tuple starts at byte `offset`.

    `expr` is a key filter of a plan (bound to `key_columns`, NOT only above leaves). A filter nested deeper than
    a few dozen AND/OR levels is evaluated as a whole on the decoded key.
    """
    if expr is None:
        return _always
    columns = key_columns_of(key_columns)
    compiler = _Compiler(columns, offset)
    if _nesting(expr) > _MAX_NESTING:
        return compiler.fallback(expr)
    return compiler.compile(expr)[0]


def _always(key: bytes) -> bool:
    return True


def _never(key: bytes) -> bool:
    return False


def _nesting(expr: Expr) -> int:
    deepest = 0
    stack = [(expr, 0)]
    while stack:
        node, depth = stack.pop()
        if type(node) in (And, Or):
            deepest = max(deepest, depth + 1)
            stack.extend((kid, depth + 1) for kid in node.children())
    return deepest


class _Compiler:
    """Compiles one key filter; all its decoding leaves share one decoded row per key."""

    def __init__(self, columns: tuple[tuple[str, DataType], ...], offset: int) -> None:
        self.names = tuple(n for n, _ in columns)
        self.types = tuple(t for _, t in columns)
        self.offset = offset
        self.ctx = KeyContext(self.names, self.types, tuple(Column(n, t) for n, t in columns), 2**62)
        self.fields: dict[int, Callable[[bytes], bytes]] = {}
        self.last: list[Any] = [None, None]

    def compile(self, node: Expr) -> tuple[KeyTest, bool]:
        """(test, cheap): `cheap` when the test reads only field bytes."""
        kind = type(node)
        if kind is And or kind is Or:
            parts = sorted((self.compile(kid) for kid in node.children()), key=lambda p: not p[1])
            tests = [t for t, _ in parts]
            cheap = all(c for _, c in parts)
            return (_all(tests) if kind is And else _any(tests)), cheap
        return self.leaf(node)

    def leaf(self, node: Expr) -> tuple[KeyTest, bool]:
        if isinstance(node, In):
            test = self.membership(node)
            if test is not None:
                return test, True
        boxes = leaf_boxes(node, self.ctx)
        if not boxes:
            return _never, True
        parts = [self.box(box) for box in boxes]
        return _any([t for t, _ in parts]), all(c for _, c in parts)

    def box(self, box: Box) -> tuple[KeyTest, bool]:
        tests = [self.interval(i, b) for i, b in enumerate(box.bounds) if b is not None]
        leftover = residuals(box.residual)
        tests.extend(self.fallback(expr) for expr in leftover)
        return _all(tests), not leftover

    def field(self, index: int) -> Callable[[bytes], bytes]:
        """A function giving field `index`'s bytes: a plain slice when the codec's layout fixes where it is.

        Following the codec's layout (`sargable.keys`): fixed-width fields before any string field sit at fixed
        offsets; with a single string field (no trailer), it ends a fixed width before the key's end, and the fields
        after it end at fixed distances from the end. Otherwise `keys.field_slice` reads the trailer.
        """
        if index in self.fields:
            return self.fields[index]
        types, offset = self.types, self.offset
        widths = [None if t.is_string else len(keys.encode_field(None, t)) for t in types]
        strings = [i for i, w in enumerate(widths) if w is None]
        getter: Callable[[bytes], bytes]
        if not any(w is None for w in widths[: index + 1]):
            begin = offset + sum(widths[:index])  # type: ignore[arg-type]
            end = begin + widths[index]  # type: ignore[operator]
            getter = _slicer(begin, end)
        elif len(strings) == 1 and strings[0] == index:
            begin = offset + sum(widths[:index])  # type: ignore[arg-type]
            tail = sum(widths[index + 1 :])  # type: ignore[arg-type]
            getter = _slicer(begin, -tail if tail else None)
        elif len(strings) == 1:
            from_end = sum(widths[index:])  # type: ignore[arg-type]
            after = from_end - widths[index]  # type: ignore[operator]
            getter = _slicer(-from_end, -after if after else None)
        else:

            def getter(key: bytes) -> bytes:
                return keys.field_slice(key, types, index, start=offset)

        self.fields[index] = getter
        return getter

    def interval(self, index: int, bound: Interval) -> KeyTest:
        dtype = self.types[index]
        get = self.field(index)
        is_point, value = bound.point(dtype)
        if is_point:
            target = keys.encode_field(value, dtype)
            return lambda key: get(key) == target
        low = None if bound.lo is None or bound.lo == (None, False) else bound.lo
        high = bound.hi
        lo_bytes = None if low is None else keys.encode_field(low[0], dtype)
        hi_bytes = None if high is None else keys.encode_field(high[0], dtype)
        if low is not None and low[1]:
            if high is None:
                return lambda key: get(key) > lo_bytes  # type: ignore[operator]
            if high[1]:
                return lambda key: lo_bytes < get(key) <= hi_bytes  # type: ignore[operator]
            return lambda key: lo_bytes < get(key) < hi_bytes  # type: ignore[operator]
        if low is not None:
            if high is None:
                return lambda key: get(key) >= lo_bytes  # type: ignore[operator]
            if high[1]:
                return lambda key: lo_bytes <= get(key) <= hi_bytes  # type: ignore[operator]
            return lambda key: lo_bytes <= get(key) < hi_bytes  # type: ignore[operator]
        if high is None:
            return _always
        if high[1]:
            return lambda key: get(key) <= hi_bytes  # type: ignore[operator]
        return lambda key: get(key) < hi_bytes  # type: ignore[operator]

    def membership(self, node: In) -> KeyTest | None:
        """IN / NOT IN of literals on a key column as a set lookup on the field's bytes."""
        index = self.ctx.index_of(node.operand)
        if index is None or not all(isinstance(v, Literal) for v in node.values):
            return None
        dtype = self.types[index]
        members: set[bytes] = set()
        has_null = False
        for literal in node.values:
            value = literal.value  # type: ignore[attr-defined]
            if value is None:
                has_null = True
                continue
            position = domain_position(value, dtype)
            if position is None:
                return None
            below, above = position
            if below != above:
                members.add(keys.encode_field(below[0], dtype))
        get = self.field(index)
        frozen = frozenset(members)
        if not node.negated:
            return lambda key: get(key) in frozen
        if has_null:
            return _never
        null = keys.encode_field(None, dtype)
        return lambda key: (field := get(key)) != null and field not in frozen

    def fallback(self, expr: Expr) -> KeyTest:
        """Evaluate `expr` on the decoded key: only its column's field when it reads one column, else the whole key
        (decoded once per key, shared by the filter's leaves)."""
        predicate = compile_predicate(expr)
        names, types, offset, last = self.names, self.types, self.offset, self.last
        used = columns_of(expr)
        index = self.ctx.index_of(Column(next(iter(used)))) if len(used) == 1 else None
        if index is not None:
            get, name, dtype = self.field(index), names[index], types[index]

            def one_field(key: bytes) -> bool:
                return predicate({name: keys.decode_field(get(key), dtype)}) is True

            return one_field

        def test(key: bytes) -> bool:
            if last[0] is not key:
                last[1] = dict(zip(names, keys.decode(key[offset:] if offset else key, types), strict=True))
                last[0] = key
            return predicate(last[1]) is True

        return test


def _slicer(begin: int, end: int | None) -> Callable[[bytes], bytes]:
    def get(key: bytes) -> bytes:
        return key[begin:end]

    return get


def _all(tests: list[KeyTest]) -> KeyTest:
    tests = [t for t in tests if t is not _always]
    if not tests:
        return _always
    if _never in tests:
        return _never
    if len(tests) == 1:
        return tests[0]
    if len(tests) == 2:
        first, second = tests
        return lambda key: first(key) and second(key)

    def conjunction(key: bytes) -> bool:
        return all(test(key) for test in tests)

    return conjunction


def _any(tests: list[KeyTest]) -> KeyTest:
    tests = [t for t in tests if t is not _never]
    if not tests:
        return _never
    if _always in tests:
        return _always
    if len(tests) == 1:
        return tests[0]
    if len(tests) == 2:
        first, second = tests
        return lambda key: first(key) or second(key)

    def disjunction(key: bytes) -> bool:
        return any(test(key) for test in tests)

    return disjunction
