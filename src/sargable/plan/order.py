"""The value order of key columns as cuts: canonical, comparable positions between keys.

The planner reasons about key ranges in value space, with the order the key codec stores (`sargable.keys`): NULL
first, strings by code point, NaN above +inf, -0.0 equal to 0.0. A position between keys is a *cut*: "before" or
"after" a tuple of leading values. `cut_key` gives every cut one canonical, comparable form (after 5 is before 6 for
an int; after the largest value is after the prefix), so that emptiness, adjacency and overlap of ranges are exact.
Each type's values, their successors and where a literal falls among them come from `sargable.domain`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from sargable.domain import BELOW, NO_VALUE, floor, min_value, string_ceiling, successor
from sargable.types import DataType

START: tuple = ()
"""The cut key before every key."""
END: tuple = ((3,),)
"""The cut key after every key."""


def sort_key(value: Any) -> tuple:
    """A key that orders values of one key column as the key codec does: NULL first, NaN last, -0.0 equal to 0.0.

    Values of a float column are always floats and never floats elsewhere, so the Python type tells them apart.
    """
    if value is None:
        return (0,)
    if type(value) is float:
        return (1, (1,)) if value != value else (1, (0, value + 0.0))
    return (1, value)


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
    ...). None when the literal is not of a kind the column compares by value (left to the key filter): the planner
    compares a date column with dates and a timestamp column with naive datetimes only.
    """
    name = dtype.name
    if (name == "date" and type(value) is not dt.date) or (name == "timestamp" and not isinstance(value, dt.datetime)):
        return None
    if dtype.is_string:
        if not isinstance(value, str):
            return None
        ceiling, exact = string_ceiling(value)
        return ((ceiling, False), (ceiling, True)) if exact else ((ceiling, False),) * 2
    position = floor(value, dtype)
    if position is None:
        return None
    below, exact = position
    if exact:
        return (below, False), (below, True)
    if below is BELOW:
        return ((min_value(dtype), False),) * 2
    return ((below, True),) * 2
