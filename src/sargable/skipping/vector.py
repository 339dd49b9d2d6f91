"""All files at once: the outcome sets of a compiled predicate over every file of a `FileStatsTable`.

The same rules as `sargable.skipping.scalar`, on Arrow arrays with pyarrow.compute: one boolean array per outcome
(TRUE / FALSE / NULL possible) and per program step, AND / OR combined element-wise. Unknown statistics (NULL in
Arrow) never prove anything, so every "surely" test fills NULL with false. `may_match_mask` computes only the TRUE
arrays, which is all that a predicate in negation normal form needs.
"""

from __future__ import annotations

from typing import Any, Union

import pyarrow as pa
import pyarrow.compute as pc

from sargable.expr.like import prefix_successor
from sargable.skipping.leaves import FALSE, NULL, TRUE, Leaf, Program
from sargable.skipping.table import ColumnArrays, FileStatsTable, arrow_type

Bits = Union[bool, pa.BooleanArray]  # noqa: UP007 - a runtime alias
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


def _known(array: pa.Array, default: bool) -> pa.Array:
    return pc.fill_null(array, default)


class _View:
    """Derived arrays of one column, computed once per table and column."""

    def __init__(self, arrays: ColumnArrays, row_count: pa.Array) -> None:
        self.arrays = arrays
        self.type = arrow_type(arrays.dtype)
        nulls = arrays.null_count
        self.null_possible = _known(pc.greater(nulls, 0), True)
        self.nonnull = _known(pc.less(nulls, row_count), True)
        if arrays.dtype.is_floating:
            nans = arrays.nan_count
            self.nan_possible = pc.and_(self.nonnull, _known(pc.greater(nans, 0), True))
            all_special = _known(pc.greater_equal(pc.add(nulls, nans), row_count), False)
            self.values_possible = pc.and_(self.nonnull, pc.invert(all_special))
        else:
            self.nan_possible = False
            self.values_possible = self.nonnull
        self.has_distinct = None if arrays.distinct is None else pc.is_valid(arrays.distinct)
        self._upper: tuple[pa.Array, pa.Array | None] | None = None
        self._single: pa.Array | None = None
        self._listed: tuple[pa.Array, pa.Array, pa.Array, pa.Array] | None = None

    def scalar(self, value: Any) -> pa.Scalar:
        return pa.scalar(value, self.type)

    @property
    def upper(self) -> tuple[pa.Array, pa.Array | None]:
        """(u, strict): every value `v <= u`, or `v < u` where strict; an inexact string max becomes its prefix
        successor (strict), as in `scalar.upper_bound`. `strict` is None when no file has a strict bound."""
        if self._upper is None:
            arrays = self.arrays
            maxima, strict = arrays.max, None
            if arrays.dtype.is_string and not pc.all(arrays.max_exact).as_py():
                strict = pc.invert(arrays.max_exact)
                successors = [prefix_successor(v) if v is not None else None for v in maxima.filter(strict).to_pylist()]
                maxima = pc.replace_with_mask(maxima, strict, pa.array(successors, self.type))
            self._upper = (maxima, strict)
        return self._upper

    @property
    def listed(self) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array]:
        """The value sets as (dictionary of distinct values, each listed value's code, list bounds, list lengths)."""
        if self._listed is None:
            distinct = self.arrays.distinct
            assert distinct is not None
            offsets = distinct.offsets
            first = offsets[0].as_py()
            encoded = distinct.values.slice(first, offsets[-1].as_py() - first).dictionary_encode()
            bounds = pc.subtract(offsets.cast(pa.int64()), first)
            lengths = pc.subtract(bounds.slice(1), bounds.slice(0, len(bounds) - 1))
            self._listed = (encoded.dictionary, encoded.indices, bounds, lengths)
        return self._listed

    @property
    def single(self) -> pa.Array:
        """Files whose bounds prove a single non-NULL, non-NaN value (exact min == exact max)."""
        if self._single is None:
            arrays = self.arrays
            same = _known(pc.equal(arrays.min, arrays.max), False)
            self._single = pc.and_(same, pc.and_(arrays.min_exact, arrays.max_exact))
        return self._single


def _view(table: FileStatsTable, name: str) -> _View | None:
    key = ("view", name)
    if key not in table.cache:
        arrays = table.column(name)
        table.cache[key] = None if arrays is None else _View(arrays, table.row_count)
    return table.cache[key]


def _below_all(view: _View, bound: Any, bound_incl: bool) -> pa.Array:
    """Every value below a lower bound: `v < bound` (inclusive bound) or `v <= bound` (exclusive)."""
    upper, strict = view.upper
    scalar = view.scalar(bound)
    if not bound_incl:
        return _known(pc.less_equal(upper, scalar), False)
    result = pc.less(upper, scalar)
    if strict is not None:
        result = pc.or_(result, pc.and_(strict, pc.equal(upper, scalar)))
    return _known(result, False)


def _above_all(view: _View, bound: Any, bound_incl: bool) -> pa.Array:
    compare = pc.greater if bound_incl else pc.greater_equal
    return _known(compare(view.arrays.min, view.scalar(bound)), False)


def _range_possibilities(leaf: Leaf, view: _View, want_in: bool, want_out: bool) -> tuple[Bits, Bits]:
    inside: Bits = False
    outside: Bits = False
    if want_in:
        below = _below_all(view, leaf.lo, leaf.lo_incl) if leaf.lo is not None else False
        above = _above_all(view, leaf.hi, leaf.hi_incl) if leaf.hi is not None else False
        inside = _and(_not(below), _not(above))
    if want_out:
        from_low: Bits = True
        if leaf.lo is not None:
            compare = pc.greater_equal if leaf.lo_incl else pc.greater
            from_low = _known(compare(view.arrays.min, view.scalar(leaf.lo)), False)
        to_high = _below_all(view, leaf.hi, not leaf.hi_incl) if leaf.hi is not None else True
        outside = _not(_and(from_low, to_high))
    return inside, outside


def _value_set(leaf: Leaf, view: _View) -> pa.Array:
    values = list(leaf.values)
    if leaf.dtype.is_floating and 0.0 in leaf.value_set:
        values.extend([0.0, -0.0])
    return pa.array(values, view.type)


def _within_upper(view: _View, candidate: Any) -> pa.Array:
    """Files whose upper bound admits `candidate` (a scalar or an array aligned with the files)."""
    upper, strict = view.upper
    value = candidate if isinstance(candidate, pa.Array) else view.scalar(candidate)
    if strict is None:
        return _known(pc.greater_equal(upper, value), True)
    admitted = pc.or_(pc.greater(upper, value), pc.and_(pc.invert(strict), pc.equal(upper, value)))
    return _known(admitted, True)


def _successor(minima: pa.Array, values: pa.Array) -> pa.Array:
    """Per file, the least of the sorted `values` that is >= the file's min (NULL when none; unknown min: the least).

    One stable sort of files' minima and values together; in sorted order a backward fill carries each value to
    the minima before it, and the minima's ranks bring the answer back to file order.
    """
    count = len(minima)
    filled = pc.fill_null(minima, values[0])
    combined = pa.concat_arrays([filled, values])
    order = pc.sort_indices(combined)
    marked = pa.concat_arrays([pa.nulls(count, values.type), values])
    following = pc.fill_null_backward(pc.take(marked, order))
    ranks = pc.subtract(pc.rank(combined, tiebreaker="first"), 1)
    return pc.take(following, ranks.slice(0, count))


def _set_possibilities(leaf: Leaf, view: _View, want_in: bool, want_out: bool) -> tuple[Bits, Bits]:
    inside: Bits = False
    outside: Bits = False
    minima = view.arrays.min
    if want_in:
        if len(leaf.values) <= SMALL_SET:
            for value in leaf.values:
                from_min = _known(pc.less_equal(minima, view.scalar(value)), True)
                inside = _or(inside, pc.and_(from_min, _within_upper(view, value)))
        else:
            successor = _successor(minima, pa.array(leaf.values, view.type))
            inside = pc.and_(pc.is_valid(successor), _within_upper(view, successor))
    if want_out:
        member = _known(pc.is_in(minima, value_set=_value_set(leaf, view)), False)
        outside = pc.invert(pc.and_(view.single, member))
    return inside, outside


def _per_list(flags: pa.Array, bounds: pa.Array) -> pa.Array:
    """How many of each list's values are flagged: differences of a running count taken at the list bounds."""
    running = pc.cumulative_sum(flags.cast(pa.int64()))
    running = pa.concat_arrays([pa.array([0], pa.int64()), running])
    return pc.subtract(pc.take(running, bounds.slice(1)), pc.take(running, bounds.slice(0, len(bounds) - 1)))


def _distinct_possibilities(leaf: Leaf, view: _View) -> tuple[Bits, Bits]:
    """(some listed value is in the leaf's range / set / pattern, some is not), for files with a value set.

    Membership is decided once per distinct value of the whole table (the dictionary), then spread to the lists.
    """
    dictionary, codes, bounds, lengths = view.listed
    if leaf.kind == "all" and leaf.regex is None:
        return pc.greater(lengths, 0), False
    if leaf.regex is not None:
        hits = [v is not None and leaf.regex.match(v) is not None for v in dictionary.to_pylist()]
        member = pa.array(hits, pa.bool_())
    elif leaf.kind == "set":
        member = pc.is_in(dictionary, value_set=_value_set(leaf, view))
    else:
        member = pc.is_valid(dictionary)
        if leaf.lo is not None:
            compare = pc.greater_equal if leaf.lo_incl else pc.greater
            member = pc.and_(member, compare(dictionary, view.scalar(leaf.lo)))
        if leaf.hi is not None:
            compare = pc.less_equal if leaf.hi_incl else pc.less
            member = pc.and_(member, compare(dictionary, view.scalar(leaf.hi)))
    flags = _known(pc.take(member, codes), False)
    inside = _per_list(flags, bounds)
    return pc.greater(inside, 0), pc.greater(pc.subtract(lengths, inside), 0)


def _leaf_bits(leaf: Leaf, table: FileStatsTable, wanted: tuple[int, ...]) -> list[Bits]:
    view = _view(table, leaf.column)
    if view is None:
        possible = leaf.null | leaf.nan | leaf.inside | (0 if leaf.kind == "all" else leaf.outside)
        return [bool(possible & bit) for bit in wanted]
    need_in = any(leaf.inside & bit for bit in wanted)
    need_out = any(leaf.outside & bit for bit in wanted)
    if leaf.kind == "all":
        bounds_in, bounds_out = True, False
    elif leaf.kind == "range":
        bounds_in, bounds_out = _range_possibilities(leaf, view, need_in, need_out)
    else:
        bounds_in, bounds_out = _set_possibilities(leaf, view, need_in, need_out)
    listed: tuple[Bits, Bits] | None = None
    if view.has_distinct is not None:
        listed = _distinct_possibilities(leaf, view)
    out: list[Bits] = []
    for bit in wanted:
        result: Bits = False
        if leaf.null & bit:
            result = _or(result, view.null_possible)
        if leaf.nan & bit:
            result = _or(result, view.nan_possible)
        values: Bits = False
        if leaf.inside & bit:
            values = _or(values, bounds_in)
        if leaf.outside & bit:
            values = _or(values, bounds_out)
        if listed is not None:
            exact: Bits = False
            if leaf.exact_inside & bit:
                exact = _or(exact, listed[0])
            if leaf.outside & bit:
                exact = _or(exact, listed[1])
            values = pc.if_else(view.has_distinct, exact, values)
        out.append(_or(result, _and(view.values_possible, values)))
    return out


def _as_array(bits: Bits, length: int) -> pa.Array:
    return pa.repeat(pa.scalar(bits, pa.bool_()), length) if isinstance(bits, bool) else bits


def _combine(op: str, args: list[list[Bits]], full: bool) -> list[Bits]:
    """AND / OR of outcome arrays ([TRUE] or [TRUE, FALSE, NULL]), as the scalar tables over non-empty sets."""
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


def _run(program: Program, table: FileStatsTable, full: bool) -> list[Bits]:
    wanted = (TRUE, FALSE, NULL) if full else (TRUE,)
    stack: list[list[Bits]] = []
    for op, item in program.steps:
        if op == "leaf":
            stack.append(_leaf_bits(item, table, wanted))
        elif op == "const":
            stack.append([bool(item.mask & bit) for bit in wanted])
        else:
            args = stack[len(stack) - item :]
            del stack[len(stack) - item :]
            stack.append(_combine(op, args, full))
    has_rows = pc.greater(table.row_count, 0)
    return [_as_array(_and(has_rows, bits), len(table)) for bits in stack[0]]


def may_match_mask(program: Program, table: FileStatsTable) -> pa.BooleanArray:
    """Per file: whether a row may satisfy the predicate."""
    return _as_array(_run(program, table, full=False)[0], len(table))


def outcome_masks(program: Program, table: FileStatsTable) -> tuple[pa.Array, pa.Array, pa.Array]:
    """Per file: whether some row may make the predicate TRUE, FALSE, NULL (all false for files without rows)."""
    yes, no, null = (_as_array(bits, len(table)) for bits in _run(program, table, full=True))
    return yes, no, null
