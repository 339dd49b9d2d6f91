"""Leaf predicates as boxes: each comparison, IN, BETWEEN, IS NULL or LIKE on a key column becomes intervals.

Everything the planner can't turn into intervals (functions, two columns compared, RLIKE, NOT LIKE, ...) becomes a
box constraining nothing whose residual is the leaf: a full range, filtered. Literals outside the column's domain
are placed exactly (`hr < 3.5` is `hr <= 3`, `hr = 3.5` matches nothing), and NULL never satisfies a comparison, so
every comparison interval starts after NULL.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sargable.domain import storable_string
from sargable.expr.evaluate import evaluate
from sargable.expr.like import like_prefix, prefix_successor
from sargable.expr.nodes import (
    FLIPPED_OP,
    Between,
    Column,
    Comparison,
    Expr,
    In,
    IsNull,
    Like,
    Literal,
    Not,
    columns_of,
)
from sargable.plan.boxes import Box, hull, interval
from sargable.plan.order import domain_position, sort_key
from sargable.types import DataType

AFTER_NULL = (None, True)
NULL_POINT = ((None, False), (None, True))


@dataclass(frozen=True)
class KeyContext:
    """The key being planned for: column names, types, the bound Column nodes, the union cap, and what is left of
    the planning work budget (box intersections an AND may still spend on cross products)."""

    names: tuple[str, ...]
    types: tuple[DataType, ...]
    columns: tuple[Column, ...]
    max_scans: int
    budget: list[int] = field(default_factory=lambda: [0])

    @property
    def width(self) -> int:
        return len(self.types)

    def index_of(self, node: Expr) -> int | None:
        """The key position of a Column node, or None for anything else."""
        if isinstance(node, Column):
            for index, column in enumerate(self.columns):
                if column.name == node.name:
                    return index
        return None


def residual_box(node: Expr, ctx: KeyContext) -> list[Box]:
    """A leaf the key can't bound: every key, filtered by the leaf (or none or all keys for a constant)."""
    if not columns_of(node):
        return [Box.everything(ctx.width)] if evaluate(node, {}) is True else []
    return [Box.everything(ctx.width, node)]


def leaf_boxes(node: Expr, ctx: KeyContext) -> list[Box]:
    """The boxes of a leaf predicate (empty list: never TRUE)."""
    if isinstance(node, Literal):
        return [Box.everything(ctx.width)] if node.value is True else []
    if isinstance(node, Comparison):
        return _comparison(node, ctx)
    if isinstance(node, In):
        return _in(node, ctx)
    if isinstance(node, Between):
        return _between(node, ctx)
    if isinstance(node, IsNull):
        return _is_null(node, ctx)
    if isinstance(node, Like):
        return _like(node, ctx)
    if isinstance(node, Not) and isinstance(node.child, Comparison) and node.child.op == "<=>":
        return _not_null_safe_equal(node, node.child, ctx)
    index = ctx.index_of(node.child if isinstance(node, Not) else node)
    if index is not None and ctx.types[index].name == "boolean":
        value = not isinstance(node, Not)
        bound = interval((value, False), (value, True), ctx.types[index], False, node)
        return [Box.on(ctx.width, index, bound)]
    return residual_box(node, ctx)


def _boxes(ctx: KeyContext, index: int, bounds: Sequence[tuple[Any, Any]], source: Expr | None = None) -> list[Box]:
    """Boxes of intervals on column `index`; `source` is the leaf, when it is exactly one interval."""
    dtype = ctx.types[index]
    out = []
    for lo, hi in bounds:
        bound = interval(lo, hi, dtype, False, source if len(bounds) == 1 else None)
        if not bound.is_empty:
            out.append(Box.on(ctx.width, index, bound))
    return out


def comparison_intervals(op: str, value: Any, dtype: DataType) -> list[tuple[Any, Any]] | None:
    """The intervals of `column op value` (None when the literal does not compare by value with the column)."""
    if value is None:
        return [NULL_POINT] if op == "<=>" else []
    position = domain_position(value, dtype)
    if position is None:
        return None
    below, above = position
    exact = below != above
    if op in ("=", "<=>"):
        return [(below, above)] if exact else []
    if op == "!=":
        return [(AFTER_NULL, below), (above, None)] if exact else [(AFTER_NULL, None)]
    if op == "<":
        return [(AFTER_NULL, below)]
    if op == "<=":
        return [(AFTER_NULL, above)]
    if op == ">":
        return [(above, None)]
    return [(below, None)]


def _comparison(node: Comparison, ctx: KeyContext) -> list[Box]:
    left, right, op = node.left, node.right, node.op
    if isinstance(left, Literal) and not isinstance(right, Literal):
        left, right, op = right, left, FLIPPED_OP[op]
    index = ctx.index_of(left)
    if index is None or not isinstance(right, Literal):
        return residual_box(node, ctx)
    bounds = comparison_intervals(op, right.value, ctx.types[index])
    if bounds is None:
        return residual_box(node, ctx)
    return _boxes(ctx, index, bounds, node)


def _not_null_safe_equal(node: Not, comparison: Comparison, ctx: KeyContext) -> list[Box]:
    """`NOT (k <=> v)`: k IS NOT NULL for a NULL v, else every key but those equal to v (NULL included)."""
    column, literal = comparison.left, comparison.right
    if isinstance(column, Literal):
        column, literal = literal, column
    index = ctx.index_of(column)
    if index is None or not isinstance(literal, Literal):
        return residual_box(node, ctx)
    if literal.value is None:
        return _boxes(ctx, index, [(AFTER_NULL, None)], node)
    position = domain_position(literal.value, ctx.types[index])
    if position is None:
        return residual_box(node, ctx)
    below, above = position
    if below == above:
        return [Box.everything(ctx.width)]
    return _boxes(ctx, index, [(None, below), (above, None)])


def _in(node: In, ctx: KeyContext) -> list[Box]:
    index = ctx.index_of(node.operand)
    if index is None or not all(isinstance(v, Literal) for v in node.values):
        return residual_box(node, ctx)
    dtype = ctx.types[index]
    points: dict[tuple, Any] = {}
    has_null = False
    for literal in node.values:
        value = literal.value  # type: ignore[attr-defined]
        if value is None:
            has_null = True
            continue
        position = domain_position(value, dtype)
        if position is None:
            return residual_box(node, ctx)
        below, above = position
        if below != above:
            points.setdefault(sort_key(below[0]), below[0])
    ordered = [points[k] for k in sorted(points)]
    if node.negated:
        if has_null:
            return []
        bounds: list[tuple[Any, Any]] = []
        lower: Any = AFTER_NULL
        for value in ordered:
            bounds.append((lower, (value, False)))
            lower = (value, True)
        bounds.append((lower, None))
        if len(bounds) > ctx.max_scans:
            return [Box.on(ctx.width, index, interval(AFTER_NULL, None, dtype, True), node)]
        return _boxes(ctx, index, bounds)
    boxes = _boxes(ctx, index, [((v, False), (v, True)) for v in ordered])
    if len(boxes) > ctx.max_scans:
        return [hull(boxes, node, ctx.types)]
    return boxes


def _between(node: Between, ctx: KeyContext) -> list[Box]:
    index = ctx.index_of(node.operand)
    if index is None or not isinstance(node.low, Literal) or not isinstance(node.high, Literal):
        return residual_box(node, ctx)
    dtype = ctx.types[index]
    if node.negated:
        below = comparison_intervals("<", node.low.value, dtype)
        above = comparison_intervals(">", node.high.value, dtype)
        if below is None or above is None:
            return residual_box(node, ctx)
        return _boxes(ctx, index, below + above)
    low = comparison_intervals(">=", node.low.value, dtype)
    high = comparison_intervals("<=", node.high.value, dtype)
    if low is None or high is None:
        return residual_box(node, ctx)
    if not low or not high:
        return []
    (lo, _), (_, hi) = low[0], high[0]
    return _boxes(ctx, index, [(lo, hi)], node)


def _is_null(node: IsNull, ctx: KeyContext) -> list[Box]:
    index = ctx.index_of(node.operand)
    if index is None:
        return residual_box(node, ctx)
    return _boxes(ctx, index, [(AFTER_NULL, None)] if node.negated else [NULL_POINT], node)


def _like(node: Like, ctx: KeyContext) -> list[Box]:
    index = ctx.index_of(node.operand)
    if index is None or node.negated or not ctx.types[index].is_string:
        return residual_box(node, ctx)
    prefix, rest = like_prefix(node.pattern, node.escape)
    if not storable_string(prefix):
        return []
    if rest == "":
        return _boxes(ctx, index, [((prefix, False), (prefix, True))], node)
    following = prefix_successor(prefix)
    lo = (prefix, False) if prefix else AFTER_NULL
    hi = None if following is None else (following, False)
    if set(rest) == {"%"} and node.escape != "%":
        return _boxes(ctx, index, [(lo, hi)], node)
    return [Box.on(ctx.width, index, interval(lo, hi, ctx.types[index], True), node)]
