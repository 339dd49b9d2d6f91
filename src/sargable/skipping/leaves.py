"""Predicates on one column in the form file statistics answer, and the compilation of a bound expression into them.

A predicate is bound, normalized (`sargable.expr.normalize`: NNF, literals on the right, constants folded, ranges
on one operand merged, so `x < 3 AND x > 3` is empty) and compiled once into a postfix program over `Leaf`,
`Const`, AND and OR steps; negations are pushed into the leaves on the way, so no answer about a file is ever
negated, and ranges on one column inside an AND are intersected in the column's domain (`x > 4.5 AND x < 5` on an
int column is empty). Each leaf states, for one column, which outcomes (TRUE, FALSE, NULL, as bits of an outcome
set) a row can produce:

- a NULL value gives `null`; a NaN gives `nan` (by the oracle's `compare_values`: Spark's NaN ordering);
- any other value gives `inside` when it lies in the leaf's range (`kind == "range"`) or value set
  (`kind == "set"`), else `outside`; `kind == "all"` puts every value inside.

Literals are first moved into the column's domain (`sargable.domain.bound`: `hr > 3.5` on an int column is
`hr >= 4`, a bound beyond the type's range is dropped or empties the range), so the evaluator
(`sargable.skipping.vector`) compares values of the column's own type only. Everything the statistics can't answer
(functions, RLIKE, column against column) is a `Const` whose outcomes are all three.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from sargable.domain import EMPTY, INCOMPARABLE, Interval, bound, exact_value, intersect
from sargable.errors import PushdownError, SargableError
from sargable.expr.bind import bind
from sargable.expr.bound import BoundFilter
from sargable.expr.evaluate import COMPARISON_RESULT, compare_values, literal_value
from sargable.expr.like import like_matcher, like_prefix, prefix_successor
from sargable.expr.nodes import (
    And,
    Between,
    Column,
    Comparison,
    Expr,
    In,
    IsNull,
    Like,
    Literal,
    Not,
    Or,
    walk,
)
from sargable.expr.normalize import normalize
from sargable.expr.truth import TruthValue
from sargable.types import DataType, parse_type, with_struct_leaves

TRUE, FALSE, NULL = int(TruthValue.YES), int(TruthValue.NO), int(TruthValue.NULL)
ANY = TRUE | FALSE | NULL


def swap(mask: int) -> int:
    """The outcome set of NOT: TRUE and FALSE trade places, NULL stays."""
    return (mask & NULL) | ((mask & TRUE) << 1) | ((mask & FALSE) >> 1)


def _combined(a: int, b: int, conjunction: bool) -> int:
    """The outcome set of `a AND b` (or `a OR b`) for two non-empty outcome sets of rows.

    Every outcome pair can occur (rows combine independently), so e.g. AND is TRUE only from (TRUE, TRUE) and NULL
    from (NULL, NULL), (NULL, TRUE) or (TRUE, NULL). The vectorized evaluator uses the same formulas bitwise.
    """
    ta, fa, na = bool(a & TRUE), bool(a & FALSE), bool(a & NULL)
    tb, fb, nb = bool(b & TRUE), bool(b & FALSE), bool(b & NULL)
    if conjunction:
        t, f, n = ta and tb, fa or fb, (na and (nb or tb)) or (ta and nb)
    else:
        t, f, n = ta or tb, fa and fb, (na and (nb or fb)) or (fa and nb)
    return (TRUE if t else 0) | (FALSE if f else 0) | (NULL if n else 0)


AND_TABLE = tuple(tuple(_combined(a, b, True) for b in range(8)) for a in range(8))
OR_TABLE = tuple(tuple(_combined(a, b, False) for b in range(8)) for a in range(8))


@dataclass(frozen=True, slots=True)
class Leaf:
    """A predicate on one column: outcome sets for NULL, NaN, and values inside / outside its range or value set.

    `regex` (LIKE) decides membership exactly for a file's value set: a matching value gives `matched`, another
    gives `outside`; bounds alone only tell whether a value may start with the pattern's prefix (`inside`).
    """

    column: str
    dtype: DataType
    kind: str
    inside: int
    outside: int
    null: int
    nan: int
    lo: Any = None
    lo_incl: bool = True
    hi: Any = None
    hi_incl: bool = True
    values: tuple[Any, ...] = ()
    regex: Callable[[str], bool] | None = None
    matched: int = 0
    value_set: frozenset[Any] = frozenset()

    def negated(self) -> Leaf:
        return replace(
            self,
            inside=swap(self.inside),
            outside=swap(self.outside),
            null=swap(self.null),
            nan=swap(self.nan),
            matched=swap(self.matched),
        )

    @property
    def exact_inside(self) -> int:
        """Outcomes of a value known to be in the range / set / pattern (value-set evaluation)."""
        return self.matched if self.regex is not None else self.inside


@dataclass(frozen=True, slots=True)
class Const:
    """A predicate whose outcome set doesn't depend on the statistics (a constant, or what they can't answer)."""

    mask: int

    def negated(self) -> Const:
        return Const(swap(self.mask))


UNKNOWN = Const(ANY)

Step = tuple[str, Any]
"""A program step: ("leaf", Leaf), ("const", Const), ("and", n) or ("or", n) over the last n results."""


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


# -- leaves from expression nodes --------------------------------------------------------------------------------------


def _bit(value: bool | None) -> int:
    return TRUE if value is True else FALSE if value is False else NULL


def _nan_outcome(node: Expr) -> int:
    """The outcome of a leaf on a NaN value, by the oracle's ordering (NaN above every number, equal to itself)."""
    try:
        if isinstance(node, Comparison):
            found = _operand_literal(node)
            if found is None:
                return ANY
            _, op, literal = found
            return _bit(COMPARISON_RESULT[op](compare_values(math.nan, literal.value)))
        if isinstance(node, In):
            listed = [v.value for v in node.values]  # type: ignore[attr-defined]
            hit = TRUE if any(_is_nan(v) for v in listed) else (NULL if None in listed else FALSE)
            return swap(hit) if node.negated else hit
        if isinstance(node, Between):
            low = compare_values(math.nan, node.low.value) >= 0  # type: ignore[attr-defined]
            high = compare_values(math.nan, node.high.value) <= 0  # type: ignore[attr-defined]
            return _bit((low and high) != node.negated)
    except SargableError:
        return ANY
    return ANY


def _edge_outcomes(node: Expr, column: Column) -> tuple[int, int]:
    """Outcome sets of a NULL row and of a NaN row (the latter only for float columns) for a leaf with non-NULL
    literals: NULL for comparisons, IN, BETWEEN and LIKE, FALSE for `<=>`."""
    floating = column.type is not None and column.type.is_floating
    if isinstance(node, IsNull):
        present = TRUE if node.negated else FALSE
        return swap(present), (present if floating else 0)
    null = FALSE if isinstance(node, Comparison) and node.op == "<=>" else NULL
    return null, (_nan_outcome(node) if floating else 0)


def _range_leaf(expr: Expr, column: Column, low: Any, high: Any, inside: int, outside: int, **extra: Any) -> Any:
    """A range leaf from canonical bounds; empty ranges put every value outside."""
    dtype = column.type
    assert dtype is not None
    if low is INCOMPARABLE or high is INCOMPARABLE:
        return UNKNOWN
    null, nan = _edge_outcomes(expr, column)
    if low is EMPTY or high is EMPTY or _empty(low, high):
        return Leaf(column.name, dtype, "all", outside, outside, null, nan)
    if low is None and high is None:
        return Leaf(column.name, dtype, "all", inside, outside, null, nan, **extra)
    lo, lo_incl = low if low is not None else (None, True)
    hi, hi_incl = high if high is not None else (None, True)
    return Leaf(column.name, dtype, "range", inside, outside, null, nan, lo, lo_incl, hi, hi_incl, **extra)


def _empty(low: tuple[Any, bool] | None, high: tuple[Any, bool] | None) -> bool:
    """Whether bounds in the column's domain (`bound`'s pairs; None: unbounded) admit no value."""
    if low is None or high is None:
        return False
    return Interval(low[0], low[1], high[0], high[1]).is_empty()


def _operand_literal(node: Comparison) -> tuple[Column, str, Literal] | None:
    flipped = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<=", "<=>": "<=>"}
    if isinstance(node.left, Column) and isinstance(node.right, Literal):
        return node.left, node.op, node.right
    if isinstance(node.right, Column) and isinstance(node.left, Literal):
        return node.right, flipped[node.op], node.left
    return None


def _comparison_leaf(node: Comparison) -> Leaf | Const:
    found = _operand_literal(node)
    if found is None:
        return _constant(node)
    column, op, literal = found
    dtype, value = column.type, literal.value
    if dtype is None:
        return UNKNOWN
    if value is None:
        if op == "<=>":
            return Leaf(column.name, dtype, "all", FALSE, FALSE, TRUE, FALSE if dtype.is_floating else 0)
        return Const(NULL)
    if op in ("=", "!=", "<=>"):
        inside, outside = (FALSE, TRUE) if op == "!=" else (TRUE, FALSE)
        low, high = bound(value, dtype, True, True), bound(value, dtype, False, True)
        return _range_leaf(node, column, low, high, inside, outside)
    if op in ("<", "<="):
        return _range_leaf(node, column, None, bound(value, dtype, False, op == "<="), TRUE, FALSE)
    return _range_leaf(node, column, bound(value, dtype, True, op == ">="), None, TRUE, FALSE)


def _in_leaf(node: In) -> Leaf | Const:
    column = node.operand
    if not isinstance(column, Column) or column.type is None:
        return UNKNOWN if isinstance(column, Column) else _constant(node)
    if not all(isinstance(v, Literal) for v in node.values):
        return UNKNOWN
    dtype = column.type
    has_null = False
    members = set()
    for literal in node.values:
        value = literal.value  # type: ignore[attr-defined]
        if value is None:
            has_null = True
            continue
        if _is_nan(value):
            continue
        exact = exact_value(value, dtype)
        if exact is INCOMPARABLE:
            return UNKNOWN
        if exact is not None:
            members.add(exact)
    null, nan = _edge_outcomes(node, column)
    inside, outside = TRUE, (NULL if has_null else FALSE)
    if node.negated:
        inside, outside = FALSE, (NULL if has_null else TRUE)
    if not members:
        return Leaf(column.name, dtype, "all", outside, outside, null, nan)
    values = tuple(sorted(members))
    return Leaf(column.name, dtype, "set", inside, outside, null, nan, values=values, value_set=frozenset(members))


def _between_leaf(node: Between) -> tuple[Any, Any] | Leaf | Const:
    column = node.operand
    if not isinstance(column, Column) or column.type is None:
        return UNKNOWN if isinstance(column, Column) else _constant(node)
    if not (isinstance(node.low, Literal) and isinstance(node.high, Literal)):
        return UNKNOWN
    if node.low.value is None or node.high.value is None:
        low_leaf = _comparison_leaf(Comparison(">=", column, node.low))
        return low_leaf, _comparison_leaf(Comparison("<=", column, node.high))
    dtype = column.type
    inside, outside = (FALSE, TRUE) if node.negated else (TRUE, FALSE)
    low = bound(node.low.value, dtype, True, True)
    high = bound(node.high.value, dtype, False, True)
    return _range_leaf(node, column, low, high, inside, outside)


def _like_leaf(node: Like) -> Leaf | Const:
    column = node.operand
    if not isinstance(column, Column):
        return _constant(node)
    if column.type is None or not column.type.is_string:
        return UNKNOWN
    prefix, rest = like_prefix(node.pattern, node.escape)
    inside, outside = (FALSE, TRUE) if node.negated else (TRUE, FALSE)
    if rest == "":
        return _range_leaf(node, column, (prefix, True), (prefix, True), inside, outside)
    regex = like_matcher(node.pattern, node.escape)
    only_any = set(rest) == {"%"} and node.escape != "%"
    successor = prefix_successor(prefix) if prefix else None
    high = (successor, False) if successor is not None else None
    low = (prefix, True) if prefix else None
    maybe = inside if only_any else TRUE | FALSE
    return _range_leaf(node, column, low, high, maybe, outside, regex=regex, matched=inside)


def _null_leaf(node: IsNull) -> Leaf | Const:
    column = node.operand
    if not isinstance(column, Column):
        return _constant(node)
    if column.type is None:
        return UNKNOWN
    null, nan = _edge_outcomes(node, column)
    value = TRUE if node.negated else FALSE
    return Leaf(column.name, column.type, "all", value, value, null, nan)


def _constant(node: Expr) -> Const:
    """A column-free predicate evaluates once; anything else the statistics can't answer is unknown."""
    if any(isinstance(n, Column) for n in walk(node)):
        return UNKNOWN
    try:
        result = literal_value(node)
    except SargableError:
        return UNKNOWN
    return Const(TRUE if result is True else FALSE if result is False else NULL)


def leaf_of(node: Expr) -> Leaf | Const | tuple[Any, Any]:
    """The leaf for a predicate node that is not AND / OR / NOT (a pair of leaves to AND for BETWEEN with NULL)."""
    if isinstance(node, Comparison):
        return _comparison_leaf(node)
    if isinstance(node, In):
        return _in_leaf(node)
    if isinstance(node, Between):
        return _between_leaf(node)
    if isinstance(node, Like):
        return _like_leaf(node)
    if isinstance(node, IsNull):
        return _null_leaf(node)
    if isinstance(node, Literal):
        value = node.value
        return Const(TRUE if value is True else FALSE if value is False else NULL)
    if isinstance(node, Column):
        if node.type is not None and node.type.name == "boolean":
            return _range_leaf(Comparison("=", node, Literal(True, node.type)), node, (True, True), (True, True),
                               TRUE, FALSE)
        return UNKNOWN
    return _constant(node)


# -- programs ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Tree:
    """A compiled node: a leaf, a constant, or AND / OR of compiled nodes."""

    op: str
    item: Any = None
    kids: tuple[_Tree, ...] = ()


def _pair(node: Expr, kids: list[tuple[_Tree, _Tree]]) -> tuple[_Tree, _Tree]:
    """(compiled node, compiled negation), built bottom-up so negation reaches the leaves without recursion."""
    if isinstance(node, And):
        return _conjunction([p for p, _ in kids]), _Tree("or", kids=tuple(n for _, n in kids))
    if isinstance(node, Or):
        return _Tree("or", kids=tuple(p for p, _ in kids)), _conjunction([n for _, n in kids])
    if isinstance(node, Not):
        positive, negative = kids[0]
        return negative, positive
    leaf = leaf_of(node)
    if isinstance(leaf, tuple):
        both = _Tree("and", kids=tuple(_item(x) for x in leaf))
        either_fails = _Tree("or", kids=tuple(_item(x.negated()) for x in leaf))
        return (either_fails, both) if getattr(node, "negated", False) else (both, either_fails)
    return _item(leaf), _item(leaf.negated())


def _plain_range(tree: _Tree) -> bool:
    leaf = tree.item
    return (
        tree.op == "leaf"
        and leaf.kind in ("range", "all")
        and leaf.regex is None
        and (leaf.inside, leaf.outside, leaf.null) == (TRUE, FALSE, NULL)
    )


def _intersect(a: Leaf, b: Leaf) -> Leaf:
    """One leaf for `a AND b`, two ranges on one column: exact row by row (a value is TRUE only inside both)."""
    both = intersect(Interval(a.lo, a.lo_incl, a.hi, a.hi_incl), Interval(b.lo, b.lo_incl, b.hi, b.hi_incl))
    nan = AND_TABLE[a.nan][b.nan] if a.nan and b.nan else 0
    if both.is_empty():
        return Leaf(a.column, a.dtype, "all", FALSE, FALSE, NULL, nan)
    kind = "all" if both.lo is None and both.hi is None else "range"
    return Leaf(a.column, a.dtype, kind, TRUE, FALSE, NULL, nan, both.lo, both.lo_incl, both.hi, both.hi_incl)


def _conjunction(kids: list[_Tree]) -> _Tree:
    """AND of compiled nodes, with plain ranges on one column intersected (`x > 4.5 AND x < 5` on an int column
    is empty, which two separate leaves can't see)."""
    merged: dict[str, int] = {}
    out: list[_Tree] = []
    for kid in kids:
        if _plain_range(kid) and kid.item.kind == "range":
            index = merged.get(kid.item.column)
            if index is not None:
                out[index] = _item(_intersect(out[index].item, kid.item))
                continue
            merged[kid.item.column] = len(out)
        out.append(kid)
    return out[0] if len(out) == 1 else _Tree("and", kids=tuple(out))


def _item(leaf: Leaf | Const) -> _Tree:
    return _Tree("leaf" if isinstance(leaf, Leaf) else "const", leaf)


def _children_for_fold(node: Expr) -> bool:
    return isinstance(node, (And, Or, Not))


def _compile_tree(bound: Expr) -> _Tree:
    results: list[tuple[_Tree, _Tree]] = []
    stack: list[tuple[Expr, bool]] = [(bound, False)]
    while stack:
        node, expanded = stack.pop()
        kids = node.children() if _children_for_fold(node) else ()
        if expanded or not kids:
            count = len(kids)
            args = results[len(results) - count :] if count else []
            if count:
                del results[len(results) - count :]
            results.append(_pair(node, args))
        else:
            stack.append((node, True))
            stack.extend((kid, False) for kid in reversed(kids))
    return results[0][0]


def _linearize(tree: _Tree) -> tuple[Step, ...]:
    """Postfix steps of a compiled tree, without recursion."""
    steps: list[Step] = []
    stack: list[tuple[_Tree, bool]] = [(tree, False)]
    while stack:
        node, expanded = stack.pop()
        if node.op in ("leaf", "const"):
            steps.append((node.op, node.item))
        elif expanded:
            steps.append((node.op, len(node.kids)))
        else:
            stack.append((node, True))
            stack.extend((kid, False) for kid in reversed(node.kids))
    return tuple(steps)


@dataclass(frozen=True, slots=True)
class Program:
    """A predicate compiled for data skipping: postfix steps and the columns its leaves read."""

    steps: tuple[Step, ...]
    columns: frozenset[str]


def schema_key(schema: Any) -> tuple[tuple[str, DataType], ...]:
    """A hashable, validated form of a `[(name, type), ...]` schema."""
    if isinstance(schema, (str, bytes)) or not isinstance(schema, Sequence):
        raise PushdownError(f"a schema is a list of (name, type) pairs, got {type(schema).__name__}: {schema!r}")
    for entry in schema:
        if not isinstance(entry, (tuple, list)) or len(entry) != 2 or not isinstance(entry[0], str):
            raise PushdownError(f"a schema entry must be a (name, type) pair, got {entry!r}")
    return _typed_schema(tuple((name, dtype) for name, dtype in schema))


@lru_cache(maxsize=256)
def _typed_schema(pairs: tuple[tuple[str, Any], ...]) -> tuple[tuple[str, DataType], ...]:
    """The typed schema with its structs' primitive fields (`device.os`), which file statistics may cover."""
    return tuple(with_struct_leaves([(name, parse_type(dtype)) for name, dtype in pairs]))


@lru_cache(maxsize=256)
def _compile(expr: Expr, schema: tuple[tuple[str, DataType], ...]) -> Program:
    """Bind, normalize (which only ever tightens the answer, so a predicate it rejects is compiled as bound),
    compile."""
    bound = bind(expr, list(schema))
    with contextlib.suppress(SargableError):
        bound = normalize(bound)
    steps = _linearize(_compile_tree(bound))
    columns = frozenset(item.column for op, item in steps if op == "leaf")
    return Program(steps, columns)


@lru_cache(maxsize=256)
def _parsed(text: str) -> Expr:
    from sargable.expr.parser import parse

    return parse(text)


@lru_cache(maxsize=256)
def _compile_bound(bound: BoundFilter) -> Program:
    """Compile a filter bound at the edge: its normalized form, neither bound nor normalized again."""
    steps = _linearize(_compile_tree(bound.normalized))
    columns = frozenset(item.column for op, item in steps if op == "leaf")
    return Program(steps, columns)


def compile_predicate(expr: Expr | str | BoundFilter, schema: Any) -> Program:
    """Bind `expr` to `schema` and compile it for data skipping (cached per expression and schema); a
    `BoundFilter` is compiled as it is."""
    if isinstance(expr, BoundFilter):
        return _compile_bound(expr)
    if isinstance(expr, str):
        expr = _parsed(expr)
    if not isinstance(expr, Expr):
        raise PushdownError(f"a predicate must be a sargable.Expr or filter text, got {type(expr).__name__}")
    return _compile(expr, schema_key(schema))
