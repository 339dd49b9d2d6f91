"""`plan_key_ranges`: a bound partition predicate becomes a `FilterPlan` of key ranges over the key columns.

The predicate is put in negation normal form, then planned bottom-up over its AND/OR skeleton as a union of boxes
(see `boxes`): leaves become intervals (`leaves`), AND intersects boxes (a cross product, so `p1 in (1,2) and
p2 in (3,4)` is four boxes), OR concatenates them. A box becomes one range: its leading point columns are an
equality prefix, the next column's interval bounds the range, and whatever the range does not capture exactly (later
columns, residual leaves) is the range's key filter. The ranges are then sorted, split and merged (`ranges.union`).

Caps keep planning linear: a union past `max_scans` boxes becomes its hull (one box with the union's predicate as
its filter); an AND whose cross product would pass it (or spend more than the work budget) keeps the
best-bounded side and conjoins the hull of the others. As in the seed, when some branch needs a
full-table scan the whole plan is one full scan filtered by the predicate.
"""

from __future__ import annotations

from collections.abc import Sequence

from sargable.errors import BindError, SargableError
from sargable.expr.bind import bind
from sargable.expr.bound import BoundFilter
from sargable.expr.nodes import And, Column, Comparison, Expr, IsNull, Literal, Or, and_, or_, walk
from sargable.expr.normalize import to_nnf
from sargable.plan.boxes import Box, Interval, hull, residuals
from sargable.plan.filterplan import FilterPlan, key_columns_of
from sargable.plan.leaves import KeyContext, leaf_boxes
from sargable.plan.order import END, START, cut_key
from sargable.plan.ranges import Range, union
from sargable.plan.ranges import hull as range_hull
from sargable.plan.scan import ScanMarker, ScanPlan
from sargable.types import DataType

DEFAULT_MAX_SCANS = 1000
CROSS_WORK = 16
"""An AND tries a cross product of up to CROSS_WORK * max_scans pairs (most may be empty) before degrading."""
PLAN_WORK = 64
"""A whole plan spends at most PLAN_WORK * max_scans box intersections on cross products."""


def plan_key_ranges(
    expr: Expr | BoundFilter, key_columns: Sequence[tuple[str, DataType | str]], *, max_scans: int = DEFAULT_MAX_SCANS
) -> FilterPlan:
    """Plan a predicate over key columns (in key order) as sorted, disjoint key ranges with residual key filters.

    `expr` may reference only key columns; an unbound expression is bound to them first (a `BoundFilter` is planned
    from its negation normal form as it is). At most `max_scans` ranges come out (past that, ranges are merged into
    their hull, filtered by the predicate).
    """
    columns = key_columns_of(key_columns)
    if isinstance(max_scans, bool) or not isinstance(max_scans, int) or max_scans < 1:
        raise SargableError(f"max_scans must be a positive integer, got {max_scans!r}")
    ctx = KeyContext(
        tuple(n for n, _ in columns),
        tuple(t for _, t in columns),
        tuple(Column(n, t) for n, t in columns),
        max_scans,
        [PLAN_WORK * max_scans],
    )
    predicate = expr.nnf if isinstance(expr, BoundFilter) else to_nnf(_bound(expr, columns))
    boxes = _plan_boxes(predicate, ctx)
    return FilterPlan(_scans(boxes, predicate, ctx), columns)


def _bound(expr: Expr, columns: tuple[tuple[str, DataType], ...]) -> Expr:
    """`expr` bound to the key columns (binding only when some column is unbound or spelled differently)."""
    if not isinstance(expr, Expr):
        raise BindError(f"plan_key_ranges needs an expression (sargable.Expr), got {type(expr).__name__}: {expr!r}")
    known = dict(columns)
    lowered = {name.lower(): name for name, _ in columns}
    for node in walk(expr):
        if isinstance(node, Column) and (node.type is None or known.get(node.name) != node.type):
            if node.type is not None and node.name.lower() in lowered:
                expected = known[lowered[node.name.lower()]]
                if node.type != expected:
                    raise BindError(
                        f"column {node.name!r} is bound as {node.type} but the key column is {expected}"
                    )
            return bind(expr, list(columns))
    return expr


def _plan_boxes(predicate: Expr, ctx: KeyContext) -> list[Box]:
    """The boxes of an NNF predicate, bottom-up over AND/OR without recursion; a leaf repeated across branches (as
    in a wide OR of points) is planned once."""
    results: list[list[Box]] = []
    planned: dict[Expr, list[Box]] = {}
    stack: list[tuple[Expr, bool]] = [(predicate, False)]
    while stack:
        node, expanded = stack.pop()
        kind = type(node)
        if kind is not And and kind is not Or:
            boxes = planned.get(node)
            if boxes is None:
                boxes = planned[node] = leaf_boxes(node, ctx)
            results.append(boxes)
            continue
        kids = node.children()
        if not expanded:
            stack.append((node, True))
            stack.extend((kid, False) for kid in reversed(kids))
            continue
        args = results[len(results) - len(kids) :]
        del results[len(results) - len(kids) :]
        results.append(_and(node, args, ctx) if kind is And else _or(node, args, ctx))
    return results[0]


def _quality(boxes: list[Box], ctx: KeyContext) -> float:
    return min(box.depth(ctx.types) for box in boxes)


def _and(node: Expr, kids: list[list[Box]], ctx: KeyContext) -> list[Box]:
    """Intersect the children's box unions: single boxes first, then cross products while under the caps.

    Children whose cross product would pass `max_scans` (or the work budget) are left over; of the result so far and
    the leftovers, the best-bounded keeps its boxes and the others are conjoined as their hulls.
    """
    accumulated: Box | None = Box.everything(ctx.width)
    done: list[Expr] = []
    multiple: list[tuple[Expr, list[Box]]] = []
    for child, boxes in zip(node.children(), kids, strict=True):
        if not boxes:
            return []
        if len(boxes) == 1:
            assert accumulated is not None
            accumulated = accumulated.intersect(boxes[0])
            if accumulated is None:
                return []
            done.append(child)
        else:
            multiple.append((child, boxes))
    assert accumulated is not None
    result = [accumulated]
    leftover: list[tuple[Expr | None, list[Box]]] = []
    multiple.sort(key=lambda item: len(item[1]))
    for child, boxes in multiple:
        crossed = None if leftover else _cross(result, boxes, ctx)
        if crossed is None:
            leftover.append((child, boxes))
            continue
        if not crossed:
            return []
        result = crossed
        done.append(child)
    if not leftover:
        return result
    candidates: list[tuple[Expr | None, list[Box]]] = [(and_(*done) if done else None, result), *leftover]
    best = 0
    if _spend(ctx, sum(len(boxes) for _, boxes in candidates)):
        best = max(range(len(candidates)), key=lambda i: (_quality(candidates[i][1], ctx), -i))
    outline: Box | None = Box.everything(ctx.width)
    for index, (expr, boxes) in enumerate(candidates):
        if index != best:
            assert outline is not None
            outline = outline.intersect(hull(boxes, expr, ctx.types))
            if outline is None:
                return []
    assert outline is not None
    _spend(ctx, len(candidates[best][1]))
    return [both for mine in candidates[best][1] if (both := mine.intersect(outline)) is not None]


def _spend(ctx: KeyContext, work: int) -> bool:
    """Take `work` from the plan's budget; whether there was enough (once spent, planning takes only linear paths)."""
    enough = work <= ctx.budget[0]
    ctx.budget[0] = max(0, ctx.budget[0] - work)
    return enough


def _cross(mine: list[Box], theirs: list[Box], ctx: KeyContext) -> list[Box] | None:
    """All non-empty pairwise intersections; None when there would be more than `max_scans` or the work budget
    is spent."""
    work = len(mine) * len(theirs)
    if work > CROSS_WORK * ctx.max_scans or not _spend(ctx, work):
        return None
    out: list[Box] = []
    for a in mine:
        for b in theirs:
            both = a.intersect(b)
            if both is not None:
                out.append(both)
                if len(out) > ctx.max_scans:
                    return None
    return out


def _or(node: Expr, kids: list[list[Box]], ctx: KeyContext) -> list[Box]:
    """Concatenate the children's boxes; past the cap, one hull box filtered by the OR."""
    out: list[Box] = []
    for boxes in kids:
        for box in boxes:
            if box.is_everything:
                return [box]
        out.extend(boxes)
    _spend(ctx, len(out))
    if len(out) > ctx.max_scans:
        return [hull(out, node, ctx.types)]
    return out


def _scans(boxes: list[Box], predicate: Expr, ctx: KeyContext) -> list[ScanPlan]:
    if not boxes:
        return []
    ranges = [box_range(box, ctx) for box in boxes]
    full = [r for r in ranges if r.start_key == START and r.end_key == END]
    if full:
        if any(r.scan.key_filter is None for r in full):
            return [ScanPlan(None, None)]
        return [ScanPlan(None, None, full[0].scan.key_filter if len(ranges) == 1 else predicate)]
    merged = union(ranges)
    if len(merged) > ctx.max_scans:
        return [range_hull(merged, predicate).scan]
    return [r.scan for r in merged]


def box_range(box: Box, ctx: KeyContext) -> Range:
    """One box as a key range: leading points are the prefix, the next column bounds it, the rest is filtered."""
    types, width = ctx.types, ctx.width
    prefix: list = []
    while len(prefix) < width:
        bound = box.bounds[len(prefix)]
        if bound is None:
            break
        is_point, value = bound.point(types[len(prefix)])
        if not is_point:
            break
        prefix.append(value)
    values = tuple(prefix)
    position = len(values)
    parts: list[Expr] = []
    for index in range(position + 1, width):
        bound = box.bounds[index]
        if bound is not None and not bound.covered:
            parts.extend(interval_exprs(bound, ctx.columns[index], types[index]))
    parts.extend(residuals(box.residual))
    key_filter = and_(*parts) if parts else None
    if position == width:
        marker = ScanMarker(values, True)
        scan = ScanPlan(marker, marker, key_filter, True)
        return Range(cut_key(values, False, types), cut_key(values, True, types), scan)
    bound = box.bounds[position]
    lo = None if bound is None else bound.lo
    hi = None if bound is None else bound.hi
    start = (ScanMarker(values, True) if values else None) if lo is None else ScanMarker((*values, lo[0]), not lo[1])
    end = (ScanMarker(values, True) if values else None) if hi is None else ScanMarker((*values, hi[0]), hi[1])
    start_key = START if start is None else cut_key(start.values, not start.inclusive, types)
    end_key = END if end is None else cut_key(end.values, end.inclusive, types)
    return Range(start_key, end_key, ScanPlan(start, end, key_filter, False))


def interval_exprs(bound: Interval, column: Column, dtype: DataType) -> list[Expr]:
    """Predicates on `column` equivalent to the interval (used for columns the range can't bound)."""
    if bound.source is not None:
        return [bound.source]
    is_point, value = bound.point(dtype)
    if is_point:
        return [IsNull(column) if value is None else Comparison("=", column, Literal(value, dtype))]
    lo, hi = bound.lo, bound.hi
    parts: list[Expr] = []
    if lo is not None and lo[0] is not None:
        parts.append(Comparison(">" if lo[1] else ">=", column, Literal(lo[0], dtype)))
    if hi is not None and hi[0] is not None:
        parts.append(Comparison("<=" if hi[1] else "<", column, Literal(hi[0], dtype)))
    holds_null = lo is None or lo == (None, False)
    if holds_null:
        return [or_(IsNull(column), *parts)] if parts else []
    if not parts:
        return [IsNull(column, negated=True)]
    return parts
