"""One comparison on a key field as a byte range: leading fields fixed, the next field within SQL bounds.

`range_for` is the building block of the seed's HBase scans, for callers holding one predicate on one field rather
than a plan: it places the bounds in the field's domain (`sargable.domain`: `>= 3.5` on an int field is `>= 4`,
`< 10**30` is unbounded, a timestamp bound on a date field falls on its day) and encodes the ends with the key codec
(`sargable.keys`). NULL never satisfies a bound, so a bounded field excludes NULL; `null_range` / `not_null_range`
are IS NULL / IS NOT NULL on the next field.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sargable import keys
from sargable.domain import BELOW, NO_VALUE, floor, max_value, min_value, predecessor, successor
from sargable.errors import KeyEncodingError
from sargable.types import DataType

__all__ = ["not_null_range", "null_range", "range_for"]


def _prefix(values: Sequence[Any], codec: keys.TupleCodec) -> bytes | None:
    """The encoded equality prefix, or None when some value can't equal any value of its field's type."""
    if isinstance(values, (str, bytes, bytearray)) or not isinstance(values, Sequence):
        raise KeyEncodingError(f"prefix values must be a sequence, got {type(values).__name__}")
    if len(values) > codec.count:
        raise KeyEncodingError(f"{len(values)} prefix values for a key of {codec.count} fields")
    parts = []
    for dtype, value in zip(codec.types, values, strict=False):
        if value is not None and not dtype.is_string:
            value = _equal_value(value, dtype)
            if value is NO_VALUE:
                return None
        parts.append(keys.encode_field(value, dtype))
    return b"".join(parts)


def _position(value: Any, dtype: DataType) -> tuple[Any, bool]:
    position = floor(value, dtype)
    if position is None:
        raise KeyEncodingError(f"can't compare a {dtype} key field with {value!r} ({type(value).__name__})")
    return position


def _equal_value(value: Any, dtype: DataType) -> Any:
    """The field value equal to a literal, or NO_VALUE when the type has none (3.5 for an int field)."""
    below, exact = _position(value, dtype)
    return below if exact else NO_VALUE


def _bound(bound: Any, name: str) -> tuple[Any, bool]:
    if not isinstance(bound, tuple) or len(bound) != 2 or not isinstance(bound[1], bool):
        raise KeyEncodingError(f"{name} must be a (value, inclusive: bool) pair or None, got {bound!r}")
    if bound[0] is None:
        raise KeyEncodingError(f"{name} value is NULL; use null_range / not_null_range for IS [NOT] NULL")
    return bound


def _lowest(lower: tuple[Any, bool], dtype: DataType) -> Any:
    """The least field value satisfying a lower bound (NO_VALUE when none does)."""
    value, inclusive = _bound(lower, "lower")
    below, exact = _position(value, dtype)
    if below is BELOW:
        return min_value(dtype)
    return below if exact and inclusive else successor(below, dtype)


def _highest(upper: tuple[Any, bool], dtype: DataType) -> Any:
    """The greatest field value satisfying an upper bound (NO_VALUE when none does)."""
    value, inclusive = _bound(upper, "upper")
    below, exact = _position(value, dtype)
    if below is BELOW:
        return NO_VALUE
    return below if inclusive or not exact else predecessor(below, dtype)


def range_for(
    prefix_values: Sequence[Any],
    types: Sequence[DataType | str],
    lower: tuple[Any, bool] | None = None,
    upper: tuple[Any, bool] | None = None,
) -> tuple[bytes, bytes | None]:
    """Half-open byte bounds [start, stop) of the keys whose leading fields equal `prefix_values` and whose next field
    lies within `lower` / `upper`, each a `(value, inclusive)` pair or None; stop None means "to the end".

    A None prefix value matches NULL (IS NULL, not SQL `=`). Bounds are SQL comparisons, so NULL never satisfies
    them: with any bound the range excludes NULL in that field (NaN ranks above +inf, as in Spark). Literals outside
    the field's domain are placed exactly (int field: `>= 3.5` is `>= 4`, `< 10**30` is unbounded). A range no key
    can fall in comes back as `keys.EMPTY_RANGE`; `keys.is_empty` tests any range.
    """
    codec = keys.tuple_codec(types)
    prefix = _prefix(prefix_values, codec)
    if prefix is None:
        return keys.EMPTY_RANGE
    if lower is None and upper is None:
        return prefix, keys.prefix_end(prefix)
    if len(prefix_values) >= codec.count:
        raise KeyEncodingError("range bounds need a field after the prefix values; all fields are already fixed")
    dtype = codec.types[len(prefix_values)]
    if dtype.is_string:
        start, stop = _string_bounds(prefix, dtype, lower, upper)
    else:
        low = min_value(dtype) if lower is None else _lowest(lower, dtype)
        high = max_value(dtype) if upper is None else _highest(upper, dtype)
        if low is NO_VALUE or high is NO_VALUE:
            return keys.EMPTY_RANGE
        start = prefix + keys.encode_field(low, dtype)
        stop = keys.prefix_end(prefix + keys.encode_field(high, dtype))
    return (start, stop) if not keys.is_empty(start, stop) else keys.EMPTY_RANGE


def _string_bounds(
    prefix: bytes, dtype: DataType, lower: tuple[Any, bool] | None, upper: tuple[Any, bool] | None
) -> tuple[bytes, bytes | None]:
    """Bounds on a string field: a string field is 0x01, the escaped string, 0x00, so its encoding with the last byte
    raised to 0x01 lies just after every key holding that string and before every longer string."""
    start: bytes = prefix + b"\x01"
    stop = keys.prefix_end(prefix)
    for bound, name in ((lower, "lower"), (upper, "upper")):
        if bound is None:
            continue
        value, inclusive = _bound(bound, name)
        if not isinstance(value, str):
            raise KeyEncodingError(f"can't compare a {dtype} key field with {value!r} ({type(value).__name__})")
        field = prefix + keys.encode_field(value, dtype)
        after = field[:-1] + b"\x01"
        if name == "lower":
            start = max(start, field if inclusive else after)
        else:
            edge = after if inclusive else field
            stop = edge if stop is None else min(stop, edge)
    return start, stop


def null_range(prefix_values: Sequence[Any], types: Sequence[DataType | str]) -> tuple[bytes, bytes | None]:
    """Bounds of the keys whose leading fields equal `prefix_values` and whose next field IS NULL."""
    codec = keys.tuple_codec(types)
    if len(prefix_values) >= codec.count:
        raise KeyEncodingError("null_range needs a field after the prefix values; all fields are already fixed")
    return range_for([*prefix_values, None], types)


def not_null_range(prefix_values: Sequence[Any], types: Sequence[DataType | str]) -> tuple[bytes, bytes | None]:
    """Bounds of the keys whose leading fields equal `prefix_values` and whose next field IS NOT NULL."""
    codec = keys.tuple_codec(types)
    if len(prefix_values) >= codec.count:
        raise KeyEncodingError("not_null_range needs a field after the prefix values; all fields are already fixed")
    prefix = _prefix(prefix_values, codec)
    if prefix is None:
        return keys.EMPTY_RANGE
    null = keys.encode_field(None, codec.types[len(prefix_values)])
    start = keys.prefix_end(prefix + null)
    assert start is not None
    stop = keys.prefix_end(prefix)
    return (start, stop) if not keys.is_empty(start, stop) else keys.EMPTY_RANGE
