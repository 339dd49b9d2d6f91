"""The value order of key columns: sort keys, successors and the storable domain of each type.

The planner reasons about key ranges in value space, with the order the key codec stores (`sargable.keys`): NULL
first, strings by code point, NaN above +inf, -0.0 equal to 0.0. A position between keys is a *cut*: "before" or
"after" a tuple of leading values. `cut_key` gives every cut one canonical, comparable form (after 5 is before 6 for
an int; after the largest value is after the prefix), so that emptiness, adjacency and overlap of ranges are exact.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
import sys
from collections.abc import Sequence
from decimal import ROUND_FLOOR, Decimal
from typing import Any

from sargable.types import DECIMAL_CONTEXT, INTEGER_RANGES, DataType, float32

NO_VALUE: Any = object()
"""Returned by `successor` for the largest value of a type."""

START: tuple = ()
"""The cut key before every key."""
END: tuple = ((3,),)
"""The cut key after every key."""

_FLOAT32_MAX = struct.unpack(">f", bytes.fromhex("7f7fffff"))[0]


def sort_key(value: Any) -> tuple:
    """A key that orders values of one key column as the key codec does: NULL first, NaN last, -0.0 equal to 0.0.

    Values of a float column are always floats and never floats elsewhere, so the Python type tells them apart.
    """
    if value is None:
        return (0,)
    if type(value) is float:
        return (1, (1,)) if value != value else (1, (0, value + 0.0))
    return (1, value)


def min_value(dtype: DataType) -> Any:
    """The smallest non-NULL value a key field of `dtype` can hold."""
    name = dtype.name
    if dtype.is_integral:
        return INTEGER_RANGES[name][0]
    if dtype.is_floating:
        return -math.inf
    if dtype.is_string:
        return ""
    if name == "decimal":
        return -_decimal_max(dtype)
    if name == "date":
        return dt.date.min
    if name == "timestamp":
        return dt.datetime.min
    return False


def successor(value: Any, dtype: DataType) -> Any:
    """The next value of `dtype` after `value` in key order, or NO_VALUE when `value` is the largest."""
    name = dtype.name
    try:
        if dtype.is_integral:
            return value + 1 if value < INTEGER_RANGES[name][1] else NO_VALUE
        if dtype.is_string:
            return value + "\x00"
        if dtype.is_floating:
            return _float_successor(value, name == "float")
        if name == "decimal":
            bigger = DECIMAL_CONTEXT.add(value, Decimal(1).scaleb(-(dtype.scale or 0)))
            return bigger if bigger <= _decimal_max(dtype) else NO_VALUE
        if name == "date":
            return value + dt.timedelta(days=1)
        if name == "timestamp":
            return value + dt.timedelta(microseconds=1)
    except OverflowError:
        return NO_VALUE
    return True if value is False else NO_VALUE


def _float_successor(value: float, single: bool) -> Any:
    if value != value:
        return NO_VALUE
    if value == math.inf:
        return math.nan
    if not single:
        return math.nextafter(value + 0.0, math.inf)
    if value == 0:
        return struct.unpack(">f", bytes.fromhex("00000001"))[0]
    (bits,) = struct.unpack(">I", struct.pack(">f", value))
    bits = bits + 1 if value > 0 else bits - 1
    return struct.unpack(">f", struct.pack(">I", bits))[0]


def _float_predecessor(value: float, single: bool) -> float:
    if not single:
        return math.nextafter(value, -math.inf)
    if value == 0:
        return -struct.unpack(">f", bytes.fromhex("00000001"))[0]
    (bits,) = struct.unpack(">I", struct.pack(">f", value))
    bits = bits - 1 if value > 0 else bits + 1
    return struct.unpack(">f", struct.pack(">I", bits))[0]


def _decimal_max(dtype: DataType) -> Decimal:
    precision, scale = dtype.precision or 10, dtype.scale or 0
    return DECIMAL_CONTEXT.subtract(DECIMAL_CONTEXT.power(Decimal(10), precision - scale), Decimal(1).scaleb(-scale))


def canonical_cut(values: Sequence[Any], after: bool, types: Sequence[DataType]) -> tuple[tuple, tuple | None]:
    """The cut before (or after) every key starting with `values`, as (sort key, values it is before).

    The second item is None for the end of the key space. Two cuts with the same key have no key between them.
    """
    vals = list(values)
    while True:
        if not after:
            while vals and vals[-1] is None:
                vals.pop()
            return tuple([sort_key(v) for v in vals]), tuple(vals)
        if not vals:
            return END, None
        index = len(vals) - 1
        last = vals[index]
        following = min_value(types[index]) if last is None else successor(last, types[index])
        if following is NO_VALUE:
            vals.pop()
            continue
        vals[index] = following
        after = False


def cut_key(values: Sequence[Any], after: bool, types: Sequence[DataType]) -> tuple:
    """The canonical sort key of the cut before (or after) every key starting with `values`."""
    if after:
        if values and values[-1] is not None:
            following = successor(values[-1], types[len(values) - 1])
            if following is not NO_VALUE:
                return (*[sort_key(v) for v in values[:-1]], sort_key(following))
        return canonical_cut(values, after, types)[0]
    size = len(values)
    while size and values[size - 1] is None:
        size -= 1
    return tuple([sort_key(values[i]) for i in range(size)])


def domain_position(value: Any, dtype: DataType) -> tuple[tuple[Any, bool], tuple[Any, bool]] | None:
    """Where a non-NULL comparison literal sits among the storable values of `dtype`, as two cuts `(value, after)`.

    For a storable value these are (before value, after value); for one outside the domain (3.5 or 10**30 for an
    int, a string with a lone surrogate) both are the single cut where it would sit (after 3, after the maximum,
    ...). None when the literal is not of a kind the column compares by value (left to the key filter).
    """
    name = dtype.name
    if dtype.is_string:
        return _string_position(value) if isinstance(value, str) else None
    if name == "boolean":
        return ((value, False), (value, True)) if isinstance(value, bool) else None
    if name == "date":
        return ((value, False), (value, True)) if type(value) is dt.date else None
    if name == "timestamp":
        ok = isinstance(value, dt.datetime) and value.tzinfo is None
        return ((value, False), (value, True)) if ok else None
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        return None
    if isinstance(value, Decimal) and not value.is_finite():
        value = math.nan if value.is_nan() else math.inf if value > 0 else -math.inf
    if dtype.is_integral:
        return _integer_position(value, dtype)
    if dtype.is_floating:
        return _float_position(value, name == "float")
    if name == "decimal":
        return _decimal_position(value, dtype)
    return None


def _exact(value: Any) -> tuple[tuple[Any, bool], tuple[Any, bool]]:
    return (value, False), (value, True)


def _between(floor: Any, dtype: DataType) -> tuple[tuple[Any, bool], tuple[Any, bool]]:
    """Both cuts at "after floor", or before the smallest value when floor is None (below the domain)."""
    cut = (min_value(dtype), False) if floor is None else (floor, True)
    return cut, cut


def _integer_position(value: Any, dtype: DataType) -> tuple[tuple[Any, bool], tuple[Any, bool]]:
    lowest, highest = INTEGER_RANGES[dtype.name]
    if isinstance(value, float):
        if value != value or value == math.inf:
            return _between(highest, dtype)
        if value == -math.inf:
            return _between(None, dtype)
    floor = math.floor(value)
    if floor < lowest:
        return _between(None, dtype)
    if floor > highest:
        return _between(highest, dtype)
    if floor == value:
        return _exact(int(floor))
    return _between(int(floor), dtype)


def _decimal_position(value: Any, dtype: DataType) -> tuple[tuple[Any, bool], tuple[Any, bool]]:
    largest = _decimal_max(dtype)
    if isinstance(value, float):
        if value != value or value == math.inf:
            return _between(largest, dtype)
        if value == -math.inf:
            return _between(None, dtype)
    number = Decimal(value)
    if number < -largest:
        return _between(None, dtype)
    if number > largest:
        return _between(largest, dtype)
    floor = number.quantize(Decimal(1).scaleb(-(dtype.scale or 0)), rounding=ROUND_FLOOR, context=DECIMAL_CONTEXT)
    return _exact(floor) if floor == number else _between(floor, dtype)


def _float_position(value: Any, single: bool) -> tuple[tuple[Any, bool], tuple[Any, bool]]:
    if isinstance(value, float) and (value != value or math.isinf(value)):
        return _exact(value)
    exact = Decimal(value)
    try:
        nearest = float(value)
    except OverflowError:
        nearest = math.inf if value > 0 else -math.inf
    if single:
        nearest = float32(nearest)
    if math.isinf(nearest):
        floor = (_FLOAT32_MAX if single else sys.float_info.max) if nearest > 0 else -math.inf
        return ((floor, True),) * 2
    if Decimal(nearest) == exact:
        return _exact(nearest + 0.0)
    floor = nearest if Decimal(nearest) < exact else _float_predecessor(nearest, single)
    return ((floor + 0.0, True),) * 2


def _string_position(value: str) -> tuple[tuple[Any, bool], tuple[Any, bool]]:
    for index, char in enumerate(value):
        if 0xD800 <= ord(char) < 0xE000:
            cut = (value[:index] + "\ue000", False)
            return cut, cut
    return _exact(value)


def storable_string(value: str) -> bool:
    """Whether a string can be a key value (no lone surrogates, which have no UTF-8 form)."""
    return not any(0xD800 <= ord(char) < 0xE000 for char in value)
