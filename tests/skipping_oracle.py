"""A second, independent data-skipping evaluator, for property tests to compare `sargable.skipping` against.

It walks a compiled `Program` one file at a time with plain Python rules written separately from the evaluator in
`sargable.skipping.vector` (which it was, before that evaluator became the only one): the outcome set of each leaf
comes straight from the column's `ColumnStats`, AND / OR combine sets through `AND_TABLE` / `OR_TABLE`. A file with
no rows has the empty set.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

from sargable.errors import StatisticsError
from sargable.expr.like import prefix_successor
from sargable.skipping.leaves import AND_TABLE, OR_TABLE, Leaf, Program
from sargable.stats import ColumnStats, FileStats, column_stats


def contains(leaf: Leaf, value: Any) -> bool:
    """Whether a non-NULL, non-NaN value of the column is in the leaf's range / value set / pattern."""
    if leaf.regex is not None:
        return leaf.regex(value)
    if leaf.kind == "set":
        return value in leaf.value_set
    if leaf.kind == "all":
        return True
    if leaf.lo is not None and (value < leaf.lo if leaf.lo_incl else value <= leaf.lo):
        return False
    return not (leaf.hi is not None and (value > leaf.hi if leaf.hi_incl else value >= leaf.hi))


def upper_bound(stats: ColumnStats, string: bool) -> tuple[Any, bool] | None:
    """(u, strict) with every value `v <= u` (or `v < u` when strict); None when unbounded or unknown.

    An inexact string max `m` allows every extension of `m`, which is exactly the strings below its prefix successor.
    """
    if stats.max is None:
        return None
    if string and not stats.max_exact:
        successor = prefix_successor(stats.max)
        return None if successor is None else (successor, True)
    return stats.max, False


def below_all(upper: tuple[Any, bool] | None, bound: Any, bound_incl: bool) -> bool:
    """Whether every value is below a lower bound: `v < bound` (inclusive bound) or `v <= bound` (exclusive)."""
    if upper is None:
        return False
    value, strict = upper
    if bound_incl and not strict:
        return value < bound
    return value <= bound


def above_all(low: Any, bound: Any, bound_incl: bool) -> bool:
    """Whether every value is above an upper bound: `v > bound` (inclusive bound) or `v >= bound` (exclusive)."""
    if low is None:
        return False
    return low > bound if bound_incl else low >= bound


def _range_possibilities(leaf: Leaf, stats: ColumnStats) -> tuple[bool, bool]:
    """(some value may be inside the range, some value may be outside it), from the bounds."""
    upper = upper_bound(stats, leaf.dtype.is_string)
    low = stats.min
    below = leaf.lo is not None and below_all(upper, leaf.lo, leaf.lo_incl)
    above = leaf.hi is not None and above_all(low, leaf.hi, leaf.hi_incl)
    inside = not below and not above
    from_low = leaf.lo is None or (low is not None and (low >= leaf.lo if leaf.lo_incl else low > leaf.lo))
    to_high = leaf.hi is None or below_all(upper, leaf.hi, not leaf.hi_incl)
    return inside, not (from_low and to_high)


def single_value(stats: ColumnStats) -> bool:
    """Whether the bounds prove that every non-NULL, non-NaN value equals `min`."""
    return stats.min is not None and stats.min_exact and stats.max_exact and stats.min == stats.max


def _set_possibilities(leaf: Leaf, stats: ColumnStats) -> tuple[bool, bool]:
    values = leaf.values
    start = 0 if stats.min is None else bisect_left(values, stats.min)
    inside = False
    if start < len(values):
        upper = upper_bound(stats, leaf.dtype.is_string)
        candidate = values[start]
        inside = upper is None or (candidate < upper[0] if upper[1] else candidate <= upper[0])
    outside = not (single_value(stats) and stats.min in leaf.value_set)
    return inside, outside


def leaf_outcomes(leaf: Leaf, stats: ColumnStats, rows: int) -> int:
    """The outcome set of a leaf over a file with `rows` rows (at least one) and these column statistics."""
    nulls = stats.null_count
    mask = leaf.null if nulls is None or nulls > 0 else 0
    if nulls is not None and nulls >= rows:
        return mask
    nans = stats.nan_count if leaf.dtype.is_floating else 0
    if nans is None or nans > 0:
        mask |= leaf.nan
    if nulls is not None and nans is not None and nulls + nans >= rows:
        return mask
    if stats.distinct is not None:
        for value in stats.distinct:
            mask |= leaf.exact_inside if contains(leaf, value) else leaf.outside
        return mask
    if leaf.kind == "all":
        return mask | leaf.inside
    inside, outside = _range_possibilities(leaf, stats) if leaf.kind == "range" else _set_possibilities(leaf, stats)
    if inside:
        mask |= leaf.inside
    if outside:
        mask |= leaf.outside
    return mask


def file_outcomes(program: Program, file: FileStats) -> int:
    """The outcome set of a compiled predicate over a file's rows (0 for a file without rows)."""
    rows = file.row_count
    if rows == 0:
        return 0
    stack: list[int] = []
    for op, item in program.steps:
        if op == "leaf":
            try:
                stack.append(leaf_outcomes(item, column_stats(file, item.column), rows))
            except TypeError:
                raise StatisticsError(
                    f"statistics of column {item.column!r} in {file.path!r} are not values of its type {item.dtype}"
                ) from None
        elif op == "const":
            stack.append(item.mask)
        else:
            table = AND_TABLE if op == "and" else OR_TABLE
            args = stack[len(stack) - item :]
            del stack[len(stack) - item :]
            mask = args[0]
            for other in args[1:]:
                mask = table[mask][other]
            stack.append(mask)
    return stack[0]
