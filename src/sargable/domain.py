"""A column type's values as a domain: where a comparison literal falls among them, and intervals of values.

Every layer that compares a column with a literal needs the same facts about the column's type; they live here once.

- The *grid* of a type's values: integers in the type's range; decimals in steps of 10**-scale within their
  precision; floats (single precision for `float`) from -inf to +inf with NaN above every number and -0.0 equal to
  0.0 (Spark's order); whole days; microseconds; false < true; strings in code-point order, of which a key holds only
  those without lone surrogates (which have no UTF-8 form).
- `floor` places a comparison literal on the grid: the greatest value at or below it (`BELOW` when there is none) and
  whether the literal is that value (`hr = 3.5` on an int column: floor 3, not exact, so nothing is equal);
  `successor` / `predecessor` step along the grid and `min_value` / `max_value` are its ends. Key ranges are planned
  with these (`sargable.plan`).
- `bound` moves one end of a range into the domain: `hr > 3.5` is `hr >= 4` on an int column, and a bound beyond the
  type's range drops the constraint or empties the range; `exact_value` is the value equal to a literal. Data
  skipping compiles its leaves with these (`sargable.skipping`).
- `Interval`: the values between two ends, each inclusive or exclusive, with `intersect`, `contains` and the `union`
  of sorted intervals, under an order given as a three-way comparison (Python's by default). Normalization merges
  comparison literals with them, data skipping intersects ranges on one column, join pruning intersects key sets.
- `integer_runs`: sorted integers as runs of consecutive values, which a range selects at once.

Only `sargable.types` is imported, so every layer may use this module.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal
from fractions import Fraction
from typing import Any

from sargable.types import DECIMAL_CONTEXT, INTEGER_RANGES, DataType, float32

__all__ = [
    "BELOW",
    "EMPTY",
    "INCOMPARABLE",
    "NO_VALUE",
    "Interval",
    "bound",
    "exact_value",
    "floor",
    "intersect",
    "max_value",
    "min_value",
    "predecessor",
    "python_order",
    "storable_string",
    "string_ceiling",
    "successor",
    "union",
]

NO_VALUE: Any = object()
"""What `successor` gives for the largest value of a type and `predecessor` for the smallest."""
BELOW: Any = object()
"""The `floor` of a literal below every value of the type."""
EMPTY: Any = object()
"""The `bound` that no value of the type satisfies."""
INCOMPARABLE: Any = object()
"""The `bound` (or `exact_value`) of a literal the type does not compare with by value."""

_TINY32 = struct.unpack(">f", bytes.fromhex("00000001"))[0]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def _special_as_float(value: Any) -> Any:
    """A decimal NaN or infinity as the float one (the only form the rest of this module handles)."""
    if isinstance(value, Decimal) and not value.is_finite():
        return math.nan if value.is_nan() else float(value)
    return value


def _midnight(value: dt.date) -> dt.datetime:
    return dt.datetime(value.year, value.month, value.day)


# -- floats ---------------------------------------------------------------------------------------------------------


def _nearest_float(number: Any, single: bool) -> float:
    """The float (float32 when `single`) nearest to an exact number, or an infinity when it is beyond the range."""
    try:
        value = float(number)
        return struct.unpack("<f", struct.pack("<f", value))[0] if single else value
    except OverflowError:
        return math.inf if number > 0 else -math.inf


def _next_float(value: float, up: bool, single: bool) -> float:
    """The float (float32 when `single`) next to a non-NaN `value` towards +inf (`up`) or -inf; an infinity does not
    move further out."""
    if math.isinf(value) and (value > 0) == up:
        return value
    if not single:
        return math.nextafter(value, math.inf if up else -math.inf)
    if value == 0:
        return _TINY32 if up else -_TINY32
    (bits,) = struct.unpack("<i", struct.pack("<f", value))
    bits += 1 if (value > 0) == up else -1
    return struct.unpack("<f", struct.pack("<i", bits))[0]


def _float_ceiling(number: Any, single: bool) -> float:
    """The least float (float32 when `single`) >= an exact number (int, Decimal or float)."""
    value = _nearest_float(number, single)
    return _next_float(value, True, single) if value < number else value


def _float_floor(number: Any, single: bool) -> float:
    """The greatest float (float32 when `single`) <= an exact number."""
    value = _nearest_float(number, single)
    return _next_float(value, False, single) if value > number else value


def _is_float32(value: float) -> bool:
    return value != value or float32(value) == value


# -- integers and decimals: a grid of exact steps --------------------------------------------------------------------


def _decimal_shape(dtype: DataType) -> tuple[int, int]:
    return dtype.precision or 38, dtype.scale or 0


def _grid(dtype: DataType) -> tuple[Fraction, Fraction, Fraction]:
    """Step and range (lowest, highest) of an integral or decimal type's values, as exact fractions."""
    if dtype.is_integral:
        low, high = INTEGER_RANGES[dtype.name]
        return Fraction(1), Fraction(low), Fraction(high)
    precision, scale = _decimal_shape(dtype)
    step = Fraction(1, 10**scale)
    top = Fraction(10 ** (precision - scale)) - step
    return step, -top, top


def _grid_value(value: Fraction, dtype: DataType) -> Any:
    """An exact multiple of the type's step as the column's Python value (int, or Decimal with the type's scale)."""
    if dtype.is_integral:
        return int(value)
    scale = _decimal_shape(dtype)[1]
    return Decimal(int(value * 10**scale)).scaleb(-scale, context=DECIMAL_CONTEXT)


def _decimal_max(dtype: DataType) -> Decimal:
    return _grid_value(_grid(dtype)[2], dtype)


# -- the grid: ends, neighbours, floor -------------------------------------------------------------------------------


def min_value(dtype: DataType) -> Any:
    """The smallest non-NULL value of `dtype` (-inf for floats, the empty string for strings)."""
    name = dtype.name
    if dtype.is_integral:
        return INTEGER_RANGES[name][0]
    if dtype.is_floating:
        return -math.inf
    if dtype.is_string:
        return ""
    if name == "decimal":
        return DECIMAL_CONTEXT.minus(_decimal_max(dtype))
    if name == "date":
        return dt.date.min
    if name == "timestamp":
        return dt.datetime.min
    return False


def max_value(dtype: DataType) -> Any:
    """The largest value of `dtype` (NaN for floats); NO_VALUE for strings, which have none."""
    name = dtype.name
    if dtype.is_integral:
        return INTEGER_RANGES[name][1]
    if dtype.is_floating:
        return math.nan
    if dtype.is_string:
        return NO_VALUE
    if name == "decimal":
        return _decimal_max(dtype)
    if name == "date":
        return dt.date.max
    if name == "timestamp":
        return dt.datetime.max
    return True


def successor(value: Any, dtype: DataType) -> Any:
    """The next value of `dtype` after `value` (a value of the type), or NO_VALUE when `value` is the largest."""
    name = dtype.name
    try:
        if dtype.is_integral:
            return value + 1 if value < INTEGER_RANGES[name][1] else NO_VALUE
        if dtype.is_string:
            return value + "\x00"
        if dtype.is_floating:
            if value != value:
                return NO_VALUE
            return math.nan if value == math.inf else _next_float(value + 0.0, True, name == "float")
        if name == "decimal":
            bigger = DECIMAL_CONTEXT.add(value, Decimal(1).scaleb(-_decimal_shape(dtype)[1]))
            return bigger if bigger <= _decimal_max(dtype) else NO_VALUE
        if name == "date":
            return value + dt.timedelta(days=1)
        if name == "timestamp":
            return value + dt.timedelta(microseconds=1)
    except OverflowError:
        return NO_VALUE
    return True if value is False else NO_VALUE


def predecessor(value: Any, dtype: DataType) -> Any:
    """The value of `dtype` just before `value` (a value of a non-string type), or NO_VALUE for the smallest."""
    name = dtype.name
    try:
        if dtype.is_integral:
            return value - 1 if value > INTEGER_RANGES[name][0] else NO_VALUE
        if dtype.is_floating:
            if value != value:
                return math.inf
            return NO_VALUE if value == -math.inf else _next_float(value + 0.0, False, name == "float")
        if name == "decimal":
            smaller = DECIMAL_CONTEXT.subtract(value, Decimal(1).scaleb(-_decimal_shape(dtype)[1]))
            return smaller if smaller >= DECIMAL_CONTEXT.minus(_decimal_max(dtype)) else NO_VALUE
        if name == "date":
            return value - dt.timedelta(days=1)
        if name == "timestamp":
            return value - dt.timedelta(microseconds=1)
    except OverflowError:
        return NO_VALUE
    return False if value is True else NO_VALUE


def floor(value: Any, dtype: DataType) -> tuple[Any, bool] | None:
    """Where a non-NULL comparison literal falls among the values of a non-string type: `(floor, exact)`, the greatest
    value at or below it (`BELOW` when none is) and whether the literal equals it.

    Numbers compare by exact value with any numeric type (NaN above +inf, so a NaN literal is above every integer);
    a naive datetime with a date (as its day, exact at midnight) and a date with a timestamp (as its midnight).
    None when the literal is not of a kind the type compares with by value.
    """
    name, kind = dtype.name, type(value)
    if kind is int and name in INTEGER_RANGES and INTEGER_RANGES[name][0] <= value <= INTEGER_RANGES[name][1]:
        return value, True
    if kind is dt.date and name == "date":
        return value, True
    if name == "boolean":
        return (value, True) if isinstance(value, bool) else None
    if name == "date":
        if isinstance(value, dt.datetime):
            return (value.date(), value.time() == dt.time(0)) if value.tzinfo is None else None
        return (value, True) if isinstance(value, dt.date) else None
    if name == "timestamp":
        if isinstance(value, dt.datetime):
            return (value, True) if value.tzinfo is None else None
        return (_midnight(value), True) if isinstance(value, dt.date) else None
    if not _is_number(value) or not dtype.is_numeric:
        return None
    value = _special_as_float(value)
    if dtype.is_floating:
        if isinstance(value, float) and (value != value or math.isinf(value)):
            return value, True
        below = _float_floor(value, name == "float")
        return below + 0.0, below == value
    if isinstance(value, float) and (value != value or math.isinf(value)):
        return (BELOW, False) if value < 0 else (max_value(dtype), False)
    if dtype.is_integral:
        low, high = INTEGER_RANGES[name]
        whole = math.floor(value)
        if whole < low:
            return BELOW, False
        if whole > high:
            return high, False
        return int(whole), whole == value
    largest = _decimal_max(dtype)
    number = Decimal(value)
    if number < DECIMAL_CONTEXT.minus(largest):
        return BELOW, False
    if number > largest:
        return largest, False
    step = Decimal(1).scaleb(-_decimal_shape(dtype)[1])
    below = number.quantize(step, rounding=ROUND_FLOOR, context=DECIMAL_CONTEXT)
    return below, below == number


def storable_string(value: str) -> bool:
    """Whether a string can be a key value (no lone surrogates, which have no UTF-8 form)."""
    return not any(0xD800 <= ord(char) < 0xE000 for char in value)


def string_ceiling(value: str) -> tuple[str, bool]:
    """`(ceiling, exact)`: the least storable string at or above `value`, and whether it is `value` itself."""
    for index, char in enumerate(value):
        if 0xD800 <= ord(char) < 0xE000:
            return value[:index] + "\ue000", False
    return value, True


# -- range bounds moved into the domain ------------------------------------------------------------------------------


def _native(value: Any, dtype: DataType) -> bool:
    """Whether a literal is already exactly a value of the column's type (the common case, decided quickly)."""
    kind = type(value)
    if dtype.is_integral:
        low, high = INTEGER_RANGES[dtype.name]
        return kind is int and low <= value <= high
    if dtype.is_string:
        return kind is str
    if dtype.is_floating:
        return kind is float and value == value and (dtype.name == "double" or _is_float32(value))
    if dtype.name == "decimal":
        if kind is not Decimal or not value.is_finite():
            return False
        precision, scale = _decimal_shape(dtype)
        parts = value.as_tuple()
        return parts.exponent == -scale and len(parts.digits) <= precision
    expected = {"date": dt.date, "timestamp": dt.datetime, "boolean": bool}.get(dtype.name)
    return kind is expected


def bound(value: Any, dtype: DataType, lower: bool, inclusive: bool) -> Any:
    """One end of a range (`column >= value` when `lower`, `column <= value` otherwise; strict unless `inclusive`)
    moved into the domain of `dtype`: a `(value, inclusive)` pair of the type's own values, None when the end
    constrains no value of the type, `EMPTY` when no value satisfies it, or `INCOMPARABLE`.

    NaN is above every number, so `>= NaN` leaves no number and `<= NaN` every number (NaN itself is the caller's).
    """
    if _native(value, dtype):
        return value, inclusive
    value = _special_as_float(value)
    if isinstance(value, float) and value != value:
        if not dtype.is_numeric:
            return INCOMPARABLE
        return EMPTY if lower else None
    if dtype.is_integral or dtype.name == "decimal":
        if not _is_number(value):
            return INCOMPARABLE
        step, low, high = _grid(dtype)
        if isinstance(value, float) and math.isinf(value):
            edge: Any = value
        else:
            steps = Fraction(value) / step
            whole = math.ceil(steps) if lower else math.floor(steps)
            if not inclusive and whole == steps:
                whole += 1 if lower else -1
            edge = whole * step
        if edge > high:
            return EMPTY if lower else None
        if edge < low:
            return None if lower else EMPTY
        return _grid_value(edge, dtype), True
    if dtype.is_floating:
        if not _is_number(value):
            return INCOMPARABLE
        single = dtype.name == "float"
        candidate = _float_ceiling(value, single) if lower else _float_floor(value, single)
        return (candidate, inclusive) if candidate == value else (candidate, True)
    if dtype.is_string:
        return (value, inclusive) if isinstance(value, str) else INCOMPARABLE
    if dtype.name == "date":
        if isinstance(value, dt.datetime):
            if value == _midnight(value.date()):
                return value.date(), inclusive
            day = value.date()
            if lower:
                following = successor(day, dtype)
                return EMPTY if following is NO_VALUE else (following, True)
            return day, True
        return (value, inclusive) if isinstance(value, dt.date) else INCOMPARABLE
    if dtype.name == "timestamp":
        if isinstance(value, dt.datetime):
            return value, inclusive
        return (_midnight(value), inclusive) if isinstance(value, dt.date) else INCOMPARABLE
    if dtype.name == "boolean":
        return (value, inclusive) if isinstance(value, bool) else INCOMPARABLE
    return INCOMPARABLE


def exact_value(value: Any, dtype: DataType) -> Any:
    """The value of `dtype` equal to a non-NULL literal, None when no value of the type equals it (or the literal is
    NaN, which is the caller's as in `bound`), INCOMPARABLE when the type does not compare with the literal by value."""
    if _native(value, dtype):
        return value
    low = bound(value, dtype, True, True)
    high = bound(value, dtype, False, True)
    if low is INCOMPARABLE or high is INCOMPARABLE:
        return INCOMPARABLE
    if low is None or high is None or low is EMPTY or high is EMPTY:
        return None
    return low[0] if low[0] == high[0] else None


# -- intervals -------------------------------------------------------------------------------------------------------

Compare = Callable[[Any, Any], int]
"""A three-way comparison of two interval ends' values: negative, zero or positive."""


def python_order(a: Any, b: Any) -> int:
    """Python's own order as a three-way comparison."""
    return (a > b) - (a < b)


@dataclass(frozen=True, slots=True)
class Interval:
    """The values between `lo` and `hi` (None: unbounded on that side), each end inclusive or exclusive."""

    lo: Any = None
    lo_incl: bool = True
    hi: Any = None
    hi_incl: bool = True

    @classmethod
    def point(cls, value: Any) -> Interval:
        """The interval holding `value` alone."""
        return cls(value, True, value, True)

    def is_empty(self, compare: Compare = python_order) -> bool:
        """Whether the ends admit no value: the low end above the high one, or equal to it and not both inclusive."""
        if self.lo is None or self.hi is None:
            return False
        order = compare(self.lo, self.hi)
        return order > 0 or (order == 0 and not (self.lo_incl and self.hi_incl))

    def contains(self, value: Any, compare: Compare = python_order) -> bool:
        """Whether `value` lies between the ends."""
        if self.lo is not None:
            order = compare(value, self.lo)
            if order < 0 or (order == 0 and not self.lo_incl):
                return False
        if self.hi is not None:
            order = compare(value, self.hi)
            if order > 0 or (order == 0 and not self.hi_incl):
                return False
        return True


def intersect(a: Interval, b: Interval, compare: Compare = python_order) -> Interval:
    """The values in both intervals: the higher low end and the lower high end. On a tie the end keeps `a`'s value
    (equal values may differ in form, as `1` and `1.0`) and is inclusive only if both ends are."""
    lo, lo_incl = a.lo, a.lo_incl
    if b.lo is not None:
        order = 1 if lo is None else compare(b.lo, lo)
        if order > 0:
            lo, lo_incl = b.lo, b.lo_incl
        elif order == 0:
            lo_incl = lo_incl and b.lo_incl
    hi, hi_incl = a.hi, a.hi_incl
    if b.hi is not None:
        order = -1 if hi is None else compare(b.hi, hi)
        if order < 0:
            hi, hi_incl = b.hi, b.hi_incl
        elif order == 0:
            hi_incl = hi_incl and b.hi_incl
    return Interval(lo, lo_incl, hi, hi_incl)


def union(intervals: Iterable[Interval], compare: Compare = python_order) -> list[Interval]:
    """The union of intervals sorted by their low ends (unbounded first, inclusive before exclusive on a tie), as
    sorted, disjoint intervals: overlapping ones and ones that touch at an end one of them includes are merged."""
    merged: list[Interval] = []
    for item in intervals:
        if merged:
            last = merged[-1]
            touches = last.hi is None or item.lo is None
            if not touches:
                order = compare(item.lo, last.hi)
                touches = order < 0 or (order == 0 and (last.hi_incl or item.lo_incl))
            if touches:
                hi, hi_incl = last.hi, last.hi_incl
                if hi is not None:
                    if item.hi is None:
                        hi, hi_incl = None, False
                    else:
                        order = compare(item.hi, hi)
                        if order > 0 or (order == 0 and item.hi_incl):
                            hi, hi_incl = item.hi, item.hi_incl or (order == 0 and hi_incl)
                merged[-1] = Interval(last.lo, last.lo_incl, hi, hi_incl)
                continue
        merged.append(item)
    return merged


def integer_runs(ordered: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted distinct integers as runs of consecutive values, each `(first, last)`: join pruning plans a long run
    as one key range, and Spark filters a run of partitions with one BETWEEN."""
    runs: list[tuple[int, int]] = []
    for value in ordered:
        if runs and runs[-1][1] + 1 == value:
            runs[-1] = (runs[-1][0], value)
        else:
            runs.append((value, value))
    return runs
