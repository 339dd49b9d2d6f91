"""Boxes: the planner's internal form of one conjunction — an interval per key column plus residual predicates.

A predicate plans as a union of boxes (its DNF, capped). A box holds, for each key column, an `Interval` of values
(NULL sorts first and counts as a value, so `IS NULL` is the point NULL and a comparison starts after NULL), and the
predicates no interval expresses (kept as a tree of joins, flattened once at the end, so a wide AND stays linear).
AND intersects boxes column by column; an empty interval drops the box.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sargable.expr.nodes import Expr
from sargable.plan.order import END, START, canonical_cut, cut_key
from sargable.types import DataType

Cut = tuple[Any, bool]
"""A position among a column's values: (value, after) — before or after `value` (None is NULL)."""


class Interval:
    """The values of one column between two cuts (None: unbounded), with canonical keys for exact comparisons.

    `covered` means the box's residual predicates already imply the interval, so it need not be re-checked;
    `source` is a leaf predicate equivalent to the interval, shown instead of bounds when the interval is filtered.
    """

    __slots__ = ("_point", "covered", "hi", "hi_key", "lo", "lo_key", "source")

    def __init__(
        self, lo: Cut | None, hi: Cut | None, lo_key: tuple, hi_key: tuple, covered: bool, source: Expr | None = None
    ) -> None:
        self.lo, self.hi, self.lo_key, self.hi_key = lo, hi, lo_key, hi_key
        self.covered, self.source = covered, source
        self._point: tuple[bool, Any] | None = None

    @property
    def is_empty(self) -> bool:
        return self.lo_key >= self.hi_key

    def point(self, dtype: DataType) -> tuple[bool, Any]:
        """(True, value) when the interval holds exactly one value (possibly NULL), else (False, None)."""
        if self._point is None:
            self._point = self._find_point(dtype)
        return self._point

    def _find_point(self, dtype: DataType) -> tuple[bool, Any]:
        if self.lo is None:
            value = None
        elif not self.lo[1]:
            value = self.lo[0]
        else:
            before = canonical_cut((self.lo[0],), self.lo[1], (dtype,))[1]
            if before is None:
                return False, None
            value = before[0] if before else None
        return (cut_key((value,), True, (dtype,)) == self.hi_key), value

    def intersect(self, other: Interval) -> Interval:
        lo, lo_key = (self.lo, self.lo_key) if self.lo_key >= other.lo_key else (other.lo, other.lo_key)
        hi, hi_key = (self.hi, self.hi_key) if self.hi_key <= other.hi_key else (other.hi, other.hi_key)
        source = (
            self.source
            if (lo_key, hi_key) == (self.lo_key, self.hi_key)
            else other.source
            if (lo_key, hi_key) == (other.lo_key, other.hi_key)
            else None
        )
        return Interval(lo, hi, lo_key, hi_key, self.covered and other.covered, source)


def interval(
    lo: Cut | None, hi: Cut | None, dtype: DataType, covered: bool = False, source: Expr | None = None
) -> Interval:
    """An interval of one column of type `dtype`."""
    lo_key = START if lo is None else cut_key((lo[0],), lo[1], (dtype,))
    hi_key = END if hi is None else cut_key((hi[0],), hi[1], (dtype,))
    return Interval(lo, hi, lo_key, hi_key, covered, source)


class ResidualAnd:
    """The AND of two residual trees; flattened by `residuals`."""

    __slots__ = ("left", "right")

    def __init__(self, left: Residual, right: Residual) -> None:
        self.left, self.right = left, right


Residual = Expr | ResidualAnd | None


def and_residuals(a: Residual, b: Residual) -> Residual:
    """AND of two residual trees."""
    if a is None:
        return b
    if b is None:
        return a
    return ResidualAnd(a, b)


def residuals(tree: Residual) -> list[Expr]:
    """The distinct predicates of a residual tree, in order."""
    out: dict[Expr, None] = {}
    stack = [tree]
    while stack:
        node = stack.pop()
        if node is None:
            continue
        if isinstance(node, ResidualAnd):
            stack.append(node.right)
            stack.append(node.left)
        else:
            out[node] = None
    return list(out)


class Box:
    """One conjunction: an interval (or None: unconstrained) per key column, and residual predicates."""

    __slots__ = ("bounds", "residual")

    def __init__(self, bounds: tuple[Interval | None, ...], residual: Residual = None) -> None:
        self.bounds, self.residual = bounds, residual

    @classmethod
    def everything(cls, width: int, residual: Residual = None) -> Box:
        return cls((None,) * width, residual)

    @classmethod
    def on(cls, width: int, index: int, bound: Interval, residual: Residual = None) -> Box:
        """A box constraining only column `index`."""
        bounds: list[Interval | None] = [None] * width
        bounds[index] = bound
        return cls(tuple(bounds), residual)

    @property
    def is_everything(self) -> bool:
        return self.residual is None and all(b is None for b in self.bounds)

    def intersect(self, other: Box) -> Box | None:
        """The conjunction of two boxes, or None when some column's interval becomes empty."""
        bounds = list(self.bounds)
        for index, theirs in enumerate(other.bounds):
            if theirs is None:
                continue
            mine = bounds[index]
            merged = theirs if mine is None else mine.intersect(theirs)
            if merged.is_empty:
                return None
            bounds[index] = merged
        return Box(tuple(bounds), and_residuals(self.residual, other.residual))

    def depth(self, types: Sequence[DataType]) -> float:
        """How far the box narrows the key: leading point columns, plus a half for a bounded next column."""
        count = 0
        for bound, dtype in zip(self.bounds, types, strict=True):
            if bound is None:
                return count
            if not bound.point(dtype)[0]:
                return count + 0.5
            count += 1
        return count


def hull(boxes: Sequence[Box], residual: Residual, types: Sequence[DataType]) -> Box:
    """One box holding all of `boxes`: per column the widest bounds, marked covered by `residual`."""
    bounds: list[Interval | None] = []
    for index in range(len(types)):
        column = [box.bounds[index] for box in boxes]
        if any(b is None for b in column):
            bounds.append(None)
            continue
        lo = min(column, key=lambda b: b.lo_key)  # type: ignore[union-attr]
        hi = max(column, key=lambda b: b.hi_key)  # type: ignore[union-attr]
        assert lo is not None and hi is not None
        bounds.append(Interval(lo.lo, hi.hi, lo.lo_key, hi.hi_key, True))
    return Box(tuple(bounds), residual)
