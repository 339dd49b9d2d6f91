"""The data-skipping evaluator: the outcome sets of a compiled predicate over the statistics of files.

For each file the outcome set holds the values (TRUE / FALSE / NULL, as bits) the predicate may take on the file's
rows: a leaf's set comes from its column's statistics (NULL and NaN counts, bounds, value sets), AND / OR combine
sets as `leaves.AND_TABLE` / `OR_TABLE` do, and a file without rows has the empty set. Unknown statistics never
prove anything, so every "surely" test treats unknown as false.

The rules are written once, over column statistics with pyarrow.compute's operations, and run on two kinds of
columns: Arrow arrays holding many files' statistics (`FileStatsTable`: `may_match_mask`, `outcome_masks`), and one
file's Python values (`file_outcomes`, behind `may_match` and `file_truth`), where the same operations are plain
Python on values with None as NULL (`_Values`), so one file costs microseconds rather than Arrow calls. Only the
value-set steps differ in method: many files sort and dictionary-encode, one file bisects and loops.
"""

from __future__ import annotations

import operator
from bisect import bisect_left
from collections.abc import Callable
from typing import Any, Protocol, Union

import pyarrow as pa
import pyarrow.compute as pc

from sargable.errors import StatisticsError
from sargable.expr.like import prefix_successor
from sargable.skipping.leaves import FALSE, NULL, TRUE, Leaf, Program
from sargable.stats import UNKNOWN, FileStats, column_stats
from sargable.types import DataType

Bits = Union[bool, pa.BooleanArray]  # noqa: UP007 - a runtime alias
"""Per file, whether an outcome is possible: an Arrow array, or a bool (the same for every file, or one file)."""
SMALL_SET = 8
"""IN lists up to this size test each value against the bounds; longer ones find each file's successor by sorting."""


def _and(a: Bits, b: Bits) -> Bits:
    if a is False or b is False:
        return False
    if a is True:
        return b
    if b is True:
        return a
    return pc.and_(a, b)


def _or(a: Bits, b: Bits) -> Bits:
    if a is True or b is True:
        return True
    if a is False:
        return b
    if b is False:
        return a
    return pc.or_(a, b)


def _not(a: Bits) -> Bits:
    return (not a) if isinstance(a, bool) else pc.invert(a)


# -- the two kinds of columns ------------------------------------------------------------------------------------------


class _Arrow:
    """Operations over many files' statistics as Arrow arrays (pyarrow.compute; NULL is unknown)."""

    greater = staticmethod(pc.greater)
    greater_equal = staticmethod(pc.greater_equal)
    less = staticmethod(pc.less)
    less_equal = staticmethod(pc.less_equal)
    equal = staticmethod(pc.equal)
    add = staticmethod(pc.add)
    and_ = staticmethod(pc.and_)
    or_ = staticmethod(pc.or_)
    invert = staticmethod(pc.invert)
    fill_null = staticmethod(pc.fill_null)
    is_valid = staticmethod(pc.is_valid)
    if_else = staticmethod(pc.if_else)
    small_set = SMALL_SET

    @staticmethod
    def is_in(values: pa.Array, value_set: pa.Array) -> pa.Array:
        return pc.is_in(values, value_set=value_set)

    @staticmethod
    def all(values: pa.Array) -> bool:
        return bool(pc.all(values).as_py())

    @staticmethod
    def scalar(value: Any, value_type: pa.DataType) -> pa.Scalar:
        return pa.scalar(value, value_type)

    @staticmethod
    def value_set(leaf: Leaf, value_type: pa.DataType) -> pa.Array:
        values = list(leaf.values)
        if leaf.dtype.is_floating and 0.0 in leaf.value_set:
            values.extend([0.0, -0.0])
        return pa.array(values, value_type)

    @staticmethod
    def matches(regex: Callable[[str], bool], values: pa.Array) -> pa.Array:
        return pa.array([v is not None and regex(v) for v in values.to_pylist()], pa.bool_())

    @staticmethod
    def map_where(function: Callable[[Any], Any], values: pa.Array, mask: pa.Array, value_type: pa.DataType) -> Any:
        """`values` with `function` applied where `mask` is true (NULL stays NULL)."""
        changed = [function(v) if v is not None else None for v in values.filter(mask).to_pylist()]
        return pc.replace_with_mask(values, mask, pa.array(changed, value_type))

    @staticmethod
    def successor(minima: pa.Array, values: tuple[Any, ...], value_type: pa.DataType) -> pa.Array:
        """Per file, the least of the sorted `values` that is >= the file's min (NULL when none; unknown min: the
        least). One stable sort of files' minima and values together; in sorted order a backward fill carries each
        value to the minima before it, and the minima's ranks bring the answer back to file order."""
        listed = pa.array(values, value_type)
        count = len(minima)
        filled = pc.fill_null(minima, listed[0])
        combined = pa.concat_arrays([filled, listed])
        order = pc.sort_indices(combined)
        marked = pa.concat_arrays([pa.nulls(count, listed.type), listed])
        following = pc.fill_null_backward(pc.take(marked, order))
        ranks = pc.subtract(pc.rank(combined, tiebreaker="first"), 1)
        return pc.take(following, ranks.slice(0, count))

    @staticmethod
    def listed(distinct: pa.ListArray) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array]:
        """Value sets as (dictionary of distinct values, each listed value's code, list bounds, list lengths)."""
        offsets = distinct.offsets
        first = offsets[0].as_py()
        encoded = distinct.values.slice(first, offsets[-1].as_py() - first).dictionary_encode()
        bounds = pc.subtract(offsets.cast(pa.int64()), first)
        lengths = pc.subtract(bounds.slice(1), bounds.slice(0, len(bounds) - 1))
        return encoded.dictionary, encoded.indices, bounds, lengths

    @staticmethod
    def distinct_possibilities(leaf: Leaf, column: _Column) -> tuple[Bits, Bits]:
        """(some listed value is in the leaf's range / set / pattern, some is not), for files with a value set.
        Membership is decided once per distinct value of the whole table (the dictionary), then spread to the lists.
        """
        dictionary, codes, bounds, lengths = column.listed
        if leaf.kind == "all" and leaf.regex is None:
            return pc.greater(lengths, 0), False
        flags = pc.fill_null(pc.take(_member(leaf, column, dictionary), codes), False)
        running = pa.concat_arrays([pa.array([0], pa.int64()), pc.cumulative_sum(flags.cast(pa.int64()))])
        inside = pc.subtract(pc.take(running, bounds.slice(1)), pc.take(running, bounds.slice(0, len(bounds) - 1)))
        return pc.greater(inside, 0), pc.greater(pc.subtract(lengths, inside), 0)


def _unknown_or(operation: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """`operation` on two values, None (unknown) when either is."""

    def apply(a: Any, b: Any) -> Any:
        return None if a is None or b is None else operation(a, b)

    return apply


class _Values:
    """`_Arrow`'s operations over one file's statistics: Python values, None meaning unknown."""

    greater = staticmethod(_unknown_or(operator.gt))
    greater_equal = staticmethod(_unknown_or(operator.ge))
    less = staticmethod(_unknown_or(operator.lt))
    less_equal = staticmethod(_unknown_or(operator.le))
    equal = staticmethod(_unknown_or(operator.eq))
    add = staticmethod(_unknown_or(operator.add))
    and_ = staticmethod(_unknown_or(lambda a, b: a and b))
    or_ = staticmethod(_unknown_or(lambda a, b: a or b))
    small_set = 0

    @staticmethod
    def invert(value: bool | None) -> bool | None:
        return None if value is None else not value

    @staticmethod
    def fill_null(value: Any, default: bool) -> Any:
        return default if value is None else value

    @staticmethod
    def is_valid(value: Any) -> bool:
        return value is not None

    @staticmethod
    def if_else(condition: bool | None, a: Any, b: Any) -> Any:
        return None if condition is None else a if condition else b

    @staticmethod
    def is_in(value: Any, value_set: frozenset[Any]) -> bool | None:
        return None if value is None else value in value_set

    @staticmethod
    def all(value: bool) -> bool:
        return value

    @staticmethod
    def scalar(value: Any, value_type: Any) -> Any:
        return value

    @staticmethod
    def value_set(leaf: Leaf, value_type: Any) -> frozenset[Any]:
        return leaf.value_set

    @staticmethod
    def matches(regex: Callable[[str], bool], value: str) -> bool:
        return regex(value)

    @staticmethod
    def map_where(function: Callable[[Any], Any], value: Any, mask: bool, value_type: Any) -> Any:
        return function(value) if mask and value is not None else value

    @staticmethod
    def successor(minimum: Any, values: tuple[Any, ...], value_type: Any) -> Any:
        start = 0 if minimum is None else bisect_left(values, minimum)
        return values[start] if start < len(values) else None

    @staticmethod
    def listed(distinct: frozenset[Any]) -> frozenset[Any]:
        return distinct

    @staticmethod
    def distinct_possibilities(leaf: Leaf, column: _Column) -> tuple[Bits, Bits]:
        members = [_member(leaf, column, value) is True for value in column.listed]
        return any(members), not all(members)


Ops = Union[type[_Arrow], type[_Values]]  # noqa: UP007 - a runtime alias


class _Column:
    """One column's statistics as the leaves read them, with what they derive from them computed once: Arrow arrays
    of many files (`ColumnArrays`) or one file's `ColumnStats` (the same attribute names), and the operations on
    them."""

    def __init__(self, ops: Ops, dtype: DataType, stats: Any, row_count: Any, value_type: Any = None) -> None:
        self.ops, self.dtype, self.stats, self.type = ops, dtype, stats, value_type
        nulls = stats.null_count
        self.null_possible = ops.fill_null(ops.greater(nulls, 0), True)
        nonnull = ops.fill_null(ops.less(nulls, row_count), True)
        if dtype.is_floating:
            nans = stats.nan_count
            self.nan_possible = ops.and_(nonnull, ops.fill_null(ops.greater(nans, 0), True))
            all_special = ops.fill_null(ops.greater_equal(ops.add(nulls, nans), row_count), False)
            self.values_possible = ops.and_(nonnull, ops.invert(all_special))
        else:
            self.nan_possible = False
            self.values_possible = nonnull
        self.has_distinct = None if stats.distinct is None else ops.is_valid(stats.distinct)
        self._upper: tuple[Any, Any] | None = None
        self._single: Any = None
        self._listed: Any = None

    def scalar(self, value: Any) -> Any:
        return self.ops.scalar(value, self.type)

    @property
    def upper(self) -> tuple[Any, Any]:
        """(u, strict): every value `v <= u`, or `v < u` where strict; an inexact string max allows every extension
        of it, which is exactly the strings below its prefix successor (strict). `strict` is None when no file has a
        strict bound."""
        if self._upper is None:
            ops, stats = self.ops, self.stats
            maxima, strict = stats.max, None
            if self.dtype.is_string and not ops.all(stats.max_exact):
                strict = ops.invert(stats.max_exact)
                maxima = ops.map_where(prefix_successor, maxima, strict, self.type)
            self._upper = (maxima, strict)
        return self._upper

    @property
    def single(self) -> Any:
        """Files whose bounds prove a single non-NULL, non-NaN value (exact min == exact max)."""
        if self._single is None:
            ops, stats = self.ops, self.stats
            same = ops.fill_null(ops.equal(stats.min, stats.max), False)
            self._single = ops.and_(same, ops.and_(stats.min_exact, stats.max_exact))
        return self._single

    @property
    def listed(self) -> Any:
        """The value sets, in the form `ops.distinct_possibilities` reads."""
        if self._listed is None:
            self._listed = self.ops.listed(self.stats.distinct)
        return self._listed


# -- the rules, once ---------------------------------------------------------------------------------------------------


def _below_all(column: _Column, bound: Any, bound_incl: bool) -> Bits:
    """Every value below a lower bound: `v < bound` (inclusive bound) or `v <= bound` (exclusive)."""
    ops = column.ops
    upper, strict = column.upper
    value = column.scalar(bound)
    if not bound_incl:
        return ops.fill_null(ops.less_equal(upper, value), False)
    result = ops.less(upper, value)
    if strict is not None:
        result = ops.or_(result, ops.and_(strict, ops.equal(upper, value)))
    return ops.fill_null(result, False)


def _above_all(column: _Column, bound: Any, bound_incl: bool) -> Bits:
    """Every value above an upper bound: `v > bound` (inclusive bound) or `v >= bound` (exclusive)."""
    ops = column.ops
    compare = ops.greater if bound_incl else ops.greater_equal
    return ops.fill_null(compare(column.stats.min, column.scalar(bound)), False)


def _range_possibilities(leaf: Leaf, column: _Column, want_in: bool, want_out: bool) -> tuple[Bits, Bits]:
    """(some value may be inside the leaf's range, some value may be outside it), from the bounds."""
    ops = column.ops
    inside: Bits = False
    outside: Bits = False
    if want_in:
        below = _below_all(column, leaf.lo, leaf.lo_incl) if leaf.lo is not None else False
        above = _above_all(column, leaf.hi, leaf.hi_incl) if leaf.hi is not None else False
        inside = _and(_not(below), _not(above))
    if want_out:
        from_low: Bits = True
        if leaf.lo is not None:
            compare = ops.greater_equal if leaf.lo_incl else ops.greater
            from_low = ops.fill_null(compare(column.stats.min, column.scalar(leaf.lo)), False)
        to_high = _below_all(column, leaf.hi, not leaf.hi_incl) if leaf.hi is not None else True
        outside = _not(_and(from_low, to_high))
    return inside, outside


def _within_upper(column: _Column, value: Any) -> Bits:
    """Files whose upper bound admits `value` (a scalar, or one value per file)."""
    ops = column.ops
    upper, strict = column.upper
    if strict is None:
        return ops.fill_null(ops.greater_equal(upper, value), True)
    admitted = ops.or_(ops.greater(upper, value), ops.and_(ops.invert(strict), ops.equal(upper, value)))
    return ops.fill_null(admitted, True)


def _set_possibilities(leaf: Leaf, column: _Column, want_in: bool, want_out: bool) -> tuple[Bits, Bits]:
    """(some value may be in the leaf's value set, some value may be outside it), from the bounds."""
    ops = column.ops
    inside: Bits = False
    outside: Bits = False
    minima = column.stats.min
    if want_in:
        if len(leaf.values) <= ops.small_set:
            for value in leaf.values:
                scalar = column.scalar(value)
                from_min = ops.fill_null(ops.less_equal(minima, scalar), True)
                inside = _or(inside, ops.and_(from_min, _within_upper(column, scalar)))
        else:
            successor = ops.successor(minima, leaf.values, column.type)
            inside = ops.and_(ops.is_valid(successor), _within_upper(column, successor))
    if want_out:
        member = ops.fill_null(ops.is_in(minima, ops.value_set(leaf, column.type)), False)
        outside = ops.invert(ops.and_(column.single, member))
    return inside, outside


def _member(leaf: Leaf, column: _Column, values: Any) -> Any:
    """Whether listed values (never NULL or NaN) are in the leaf's range / value set / pattern."""
    ops = column.ops
    if leaf.regex is not None:
        return ops.matches(leaf.regex, values)
    if leaf.kind == "set":
        return ops.is_in(values, ops.value_set(leaf, column.type))
    member = ops.is_valid(values)
    if leaf.lo is not None:
        compare = ops.greater_equal if leaf.lo_incl else ops.greater
        member = ops.and_(member, compare(values, column.scalar(leaf.lo)))
    if leaf.hi is not None:
        compare = ops.less_equal if leaf.hi_incl else ops.less
        member = ops.and_(member, compare(values, column.scalar(leaf.hi)))
    return member


def _leaf_bits(leaf: Leaf, column: _Column | None, wanted: tuple[int, ...]) -> list[Bits]:
    """Per wanted outcome, whether the leaf may produce it on some row (None: no statistics for the column)."""
    if column is None:
        possible = leaf.null | leaf.nan | leaf.inside | (0 if leaf.kind == "all" else leaf.outside)
        return [bool(possible & bit) for bit in wanted]
    ops = column.ops
    listed: tuple[Bits, Bits] | None = None
    if column.has_distinct is not None:
        listed = ops.distinct_possibilities(leaf, column)
    bounds_in: Bits = True
    bounds_out: Bits = False
    if leaf.kind != "all" and column.has_distinct is not True:
        mask = sum(wanted)
        need_in, need_out = bool(leaf.inside & mask), bool(leaf.outside & mask)
        possibilities = _range_possibilities if leaf.kind == "range" else _set_possibilities
        bounds_in, bounds_out = possibilities(leaf, column, need_in, need_out)
    out: list[Bits] = []
    for bit in wanted:
        result: Bits = column.null_possible if leaf.null & bit else False
        if leaf.nan & bit:
            result = _or(result, column.nan_possible)
        values: Bits = bounds_in if leaf.inside & bit else False
        if leaf.outside & bit:
            values = _or(values, bounds_out)
        if listed is not None:
            exact: Bits = listed[0] if leaf.exact_inside & bit else False
            if leaf.outside & bit:
                exact = _or(exact, listed[1])
            values = ops.if_else(column.has_distinct, exact, values)
        out.append(result if values is False else _or(result, _and(column.values_possible, values)))
    return out


def _combine(op: str, args: list[list[Bits]], full: bool) -> list[Bits]:
    """AND / OR of outcome bits ([TRUE] or [TRUE, FALSE, NULL]), as `leaves.AND_TABLE` / `OR_TABLE` over
    non-empty sets."""
    result = args[0]
    for other in args[1:]:
        if not full:
            result = [(_and if op == "and" else _or)(result[0], other[0])]
            continue
        (ta, fa, na), (tb, fb, nb) = result, other
        if op == "and":
            result = [_and(ta, tb), _or(fa, fb), _or(_and(na, _or(nb, tb)), _and(ta, nb))]
        else:
            result = [_or(ta, tb), _and(fa, fb), _or(_and(na, _or(nb, fb)), _and(fa, nb))]
    return result


def _run(
    program: Program, leaf_bits: Callable[[Leaf, tuple[int, ...]], list[Bits]], has_rows: Bits, full: bool
) -> list[Bits]:
    """The program's outcome bits (TRUE only, or TRUE, FALSE and NULL when `full`)."""
    wanted = (TRUE, FALSE, NULL) if full else (TRUE,)
    stack: list[list[Bits]] = []
    for op, item in program.steps:
        if op == "leaf":
            stack.append(leaf_bits(item, wanted))
        elif op == "const":
            stack.append([bool(item.mask & bit) for bit in wanted])
        else:
            args = stack[len(stack) - item :]
            del stack[len(stack) - item :]
            stack.append(_combine(op, args, full))
    return [_and(has_rows, bits) for bits in stack[0]]


# -- many files --------------------------------------------------------------------------------------------------------


class FileColumns(Protocol):
    """What the evaluator reads of a `FileStatsTable`: per-column `ColumnArrays`, row counts, a cache."""

    row_count: pa.Array
    cache: dict[Any, Any]

    def column(self, name: str) -> Any: ...

    def __len__(self) -> int: ...


def _arrow_column(table: FileColumns, name: str) -> _Column | None:
    key = ("column", name)
    if key not in table.cache:
        arrays = table.column(name)
        found = None if arrays is None else _Column(_Arrow, arrays.dtype, arrays, table.row_count, arrays.value_type)
        table.cache[key] = found
    return table.cache[key]


def _as_array(bits: Bits, length: int) -> pa.Array:
    return pa.repeat(pa.scalar(bits, pa.bool_()), length) if isinstance(bits, bool) else bits


def _run_table(program: Program, table: FileColumns, full: bool) -> list[pa.Array]:
    def leaf_bits(leaf: Leaf, wanted: tuple[int, ...]) -> list[Bits]:
        return _leaf_bits(leaf, _arrow_column(table, leaf.column), wanted)

    has_rows = pc.greater(table.row_count, 0)
    return [_as_array(bits, len(table)) for bits in _run(program, leaf_bits, has_rows, full)]


def may_match_mask(program: Program, table: FileColumns) -> pa.BooleanArray:
    """Per file: whether a row may satisfy the predicate."""
    return _run_table(program, table, full=False)[0]


def outcome_masks(program: Program, table: FileColumns) -> tuple[pa.Array, pa.Array, pa.Array]:
    """Per file: whether some row may make the predicate TRUE, FALSE, NULL (all false for files without rows)."""
    yes, no, null = _run_table(program, table, full=True)
    return yes, no, null


# -- one file ----------------------------------------------------------------------------------------------------------


def file_outcomes(program: Program, file: FileStats, *, full: bool = True) -> int:
    """The outcome set of a compiled predicate over one file's rows (0 for a file without rows); with `full=False`
    only whether TRUE is possible (the TRUE bit), which is all `may_match` needs."""
    rows = file.row_count
    if rows == 0:
        return 0
    columns: dict[str, _Column | None] = {}

    def leaf_bits(leaf: Leaf, wanted: tuple[int, ...]) -> list[Bits]:
        name = leaf.column
        try:
            if name not in columns:
                stats = column_stats(file, name)
                columns[name] = None if stats is UNKNOWN else _Column(_Values, leaf.dtype, stats, rows)
            return _leaf_bits(leaf, columns[name], wanted)
        except TypeError:
            raise StatisticsError(
                f"statistics of column {name!r} in {file.path!r} are not values of its type {leaf.dtype}"
            ) from None

    bits = _run(program, leaf_bits, True, full)
    wanted = (TRUE, FALSE, NULL) if full else (TRUE,)
    return sum(bit for bit, possible in zip(wanted, bits, strict=True) if possible)
