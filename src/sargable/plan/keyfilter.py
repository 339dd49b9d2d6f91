"""Key filters on raw key bytes (the seed's first property): compare field bytes, decode only when a leaf needs it.

A comparison of a key column with a literal becomes a comparison of that field's bytes (`keys.field_slice`, or a
plain slice for a fixed-width field at a fixed offset) with the literal's encoding (`keys.encode_field`): the codec
keeps byte order equal to value order, NULL lowest. IN is a set lookup on field bytes, and so is an OR of branches
fixing columns to values, however wide (one lookup per set of columns fixed; of the whole key when all are);
BETWEEN, IS [NOT] NULL and prefix LIKE are byte intervals. Anything else (LIKE with wildcards inside, RLIKE,
functions, ...) decodes the key once and evaluates the leaf (`sg.evaluate`), after any byte test that can rule the
key out first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
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
        self.planned: dict[Expr, list[Box]] = {}

    def boxes(self, leaf: Expr) -> list[Box]:
        """`leaf_boxes` of a leaf, computed once per distinct leaf (wide ORs repeat the same leaves)."""
        found = self.planned.get(leaf)
        if found is None:
            found = self.planned[leaf] = leaf_boxes(leaf, self.ctx)
        return found

    def compile(self, node: Expr) -> tuple[KeyTest, bool]:
        """(test, cheap): `cheap` when the test reads only field bytes. Repeated children are compiled once, and an
        OR's branches that fix key columns to single values become one set lookup per set of columns fixed."""
        kind = type(node)
        if kind is And or kind is Or:
            kids = list(dict.fromkeys(node.children()))
            lookups: list[tuple[KeyTest, bool]] = []
            if kind is Or:
                lookups, kids = self.point_lookups(kids)
            parts = sorted([*lookups, *(self.compile(kid) for kid in kids)], key=lambda p: not p[1])
            tests = [t for t, _ in parts]
            cheap = all(c for _, c in parts)
            return _combine(tests, conjunction=kind is And), cheap
        return self.leaf(node)

    def point_lookups(self, branches: list[Expr]) -> tuple[list[tuple[KeyTest, bool]], list[Expr]]:
        """(set-lookup tests, the other branches) of an OR: its point branches grouped by the columns they fix."""
        groups: dict[tuple[int, ...], set[tuple[Any, ...]]] = {}
        others = []
        for branch in branches:
            points = self.points(branch)
            if points is None:
                others.append(branch)
                continue
            for columns, values in points:
                groups.setdefault(columns, set()).add(values)
        return [(self.lookup(columns, values), True) for columns, values in groups.items()], others

    def points(self, node: Expr) -> list[tuple[tuple[int, ...], tuple[Any, ...]]] | None:
        """The (columns, values) points on which a leaf, or an AND of leaves, is exactly TRUE (none when it never
        is), or None when it is TRUE on anything but points of key columns."""
        if type(node) is Or:
            return None
        if type(node) is not And:
            boxes = self.boxes(node)
        else:
            conjunction: Box | None = Box.everything(self.ctx.width)
            for kid in node.children():
                kid_boxes = None if type(kid) in (And, Or) else self.boxes(kid)
                if kid_boxes is None or len(kid_boxes) > 1:
                    return None
                conjunction = conjunction.intersect(kid_boxes[0]) if kid_boxes else None
                if conjunction is None:
                    return []
            boxes = [conjunction]
        out = []
        for box in boxes:
            columns = tuple(i for i, bound in enumerate(box.bounds) if bound is not None)
            if box.residual is not None or not columns:
                return None
            values = []
            for i in columns:
                is_point, value = box.bounds[i].point(self.types[i])  # type: ignore[union-attr]
                if not is_point:
                    return None
                values.append(value)
            out.append((columns, tuple(values)))
        return out

    def lookup(self, columns: tuple[int, ...], points: set[tuple[Any, ...]]) -> KeyTest:
        """Whether a key's values on `columns` are one of `points`: a hash lookup of its encoded tuple (the whole key
        when every column is fixed, else the columns' field bytes)."""
        types, offset = self.types, self.offset
        if columns == tuple(range(len(types))):
            codec = keys.tuple_codec(types)
            encoded = frozenset(codec.encode(values) for values in points)
            if offset:
                return lambda key: key[offset:] in encoded
            return encoded.__contains__
        if len(columns) == 1:
            get, dtype = self.field(columns[0]), types[columns[0]]
            fields = frozenset(keys.encode_field(value, dtype) for (value,) in points)
            return lambda key: get(key) in fields
        getters = [self.field(i) for i in columns]
        tuples = frozenset(
            tuple(keys.encode_field(value, types[i]) for i, value in zip(columns, values, strict=True))
            for values in points
        )
        return lambda key: tuple([get(key) for get in getters]) in tuples

    def leaf(self, node: Expr) -> tuple[KeyTest, bool]:
        if isinstance(node, In):
            test = self.membership(node)
            if test is not None:
                return test, True
        boxes = self.boxes(node)
        if not boxes:
            return _never, True
        parts = [self.box(box) for box in boxes]
        return _combine([t for t, _ in parts], conjunction=False), all(c for _, c in parts)

    def box(self, box: Box) -> tuple[KeyTest, bool]:
        tests = [self.interval(i, b) for i, b in enumerate(box.bounds) if b is not None]
        leftover = residuals(box.residual)
        tests.extend(self.fallback(expr) for expr in leftover)
        return _combine(tests, conjunction=True), not leftover

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
    """`key[begin:end]` as a C-level callable (no Python frame per key: a filtered scan calls it once a key)."""
    return itemgetter(slice(begin, end))


def _combine(tests: list[KeyTest], *, conjunction: bool) -> KeyTest:
    """The AND (`conjunction`) or OR of key tests, short-circuiting in order, with constant tests folded."""
    neutral, absorbing = (_always, _never) if conjunction else (_never, _always)
    tests = [t for t in tests if t is not neutral]
    if not tests:
        return neutral
    if absorbing in tests:
        return absorbing
    if len(tests) == 1:
        return tests[0]
    if len(tests) == 2:
        first, second = tests
        if conjunction:
            return lambda key: first(key) and second(key)
        return lambda key: first(key) or second(key)
    fold = all if conjunction else any
    return lambda key: fold(test(key) for test in tests)
