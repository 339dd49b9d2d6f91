"""The plan's building blocks: `ScanMarker` (a bound on the leading key values) and `ScanPlan` (one key range).

A marker's `values` are leading partition values (a prefix of the key); the range it bounds is compared on that
prefix. As a start, an inclusive marker means "keys whose prefix is >= values", an exclusive one "> values", so
`ScanMarker((d,), inclusive=False)` starts after every key whose first value is `d`. As an end, inclusive means
"<= values" (through every key starting with them) and exclusive "< values". None is an open end.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sargable.errors import SargableError
from sargable.expr.nodes import Expr, Literal, transform
from sargable.types import DataType, format_value, infer_type

_PLAIN_STRING_BAD = frozenset("/=()[] ,'\"\\")


@dataclass(frozen=True, slots=True)
class ScanMarker:
    """One end of a key range: leading partition values and whether keys equal to them are inside."""

    values: tuple[Any, ...]
    inclusive: bool

    def __post_init__(self) -> None:
        if not isinstance(self.values, tuple):
            raise SargableError(f"ScanMarker values must be a tuple, got {type(self.values).__name__}")
        if not isinstance(self.inclusive, bool):
            raise SargableError(f"ScanMarker inclusive must be a bool, got {self.inclusive!r}")


@dataclass(frozen=True, slots=True)
class ScanPlan:
    """A key range [start .. end] (None: open), the filter still to check on its keys, and whether it is a Get.

    `is_get` means start and end are the same full key, inclusive: one point lookup instead of a scan.
    """

    start: ScanMarker | None
    end: ScanMarker | None
    key_filter: Expr | None = None
    is_get: bool = False

    def __post_init__(self) -> None:
        for name, marker in (("start", self.start), ("end", self.end)):
            if marker is not None and type(marker) is not ScanMarker:
                raise SargableError(f"ScanPlan.{name} must be a ScanMarker or None, got {marker!r}")
        if self.key_filter is not None and not isinstance(self.key_filter, Expr):
            raise SargableError(f"ScanPlan.key_filter must be an Expr or None, got {self.key_filter!r}")
        if self.is_get and (self.start is None or self.start != self.end or not self.start.inclusive):
            raise SargableError("a Get needs equal, inclusive start and end markers holding the full key")

    @property
    def is_full_scan(self) -> bool:
        """Whether the range is the whole table (it may still have a key filter)."""
        return self.start is None and self.end is None

    def describe(self, key_columns: Sequence[tuple[str, DataType]] = ()) -> str:
        """Readable form: `Scan [ds=2024-01-01/hr=3 .. ds=2024-01-01/hr=+inf) filter: ...` or `Get ds=.../hr=3`."""
        names = [name for name, _ in key_columns]
        types = [dtype for _, dtype in key_columns]
        if self.is_get:
            assert self.start is not None
            text = "Get " + _values_text(self.start.values, (), names, types)
        else:
            text = f"Scan {_range_text(self.start, self.end, names, types)}"
        if self.key_filter is not None:
            text += f" filter: {display_expr(self.key_filter)}"
        return text

    def __str__(self) -> str:
        return self.describe()


def _range_text(start: ScanMarker | None, end: ScanMarker | None, names: list[str], types: list[Any]) -> str:
    """`[a .. b)` where a shorter marker is shown extended by the next column at -inf/+inf to match the other."""
    if start is None:
        left = "[-inf"
    else:
        extend = ()
        if end is not None and len(start.values) < len(end.values):
            extend = ("-inf",) if start.inclusive else ("+inf",)
        left = ("[" if start.inclusive or extend else "(") + _values_text(start.values, extend, names, types)
    if end is None:
        right = "+inf)"
    else:
        extend = ()
        if start is not None and len(end.values) < len(start.values):
            extend = ("+inf",) if end.inclusive else ("-inf",)
        right = _values_text(end.values, extend, names, types) + ("]" if end.inclusive and not extend else ")")
    return f"{left} .. {right}"


def _values_text(values: tuple[Any, ...], extend: tuple[str, ...], names: list[str], types: list[Any]) -> str:
    parts = []
    for index, value in enumerate(values):
        name = names[index] if index < len(names) else f"#{index + 1}"
        dtype = types[index] if index < len(types) else None
        parts.append(f"{name}={value_text(value, dtype)}")
    if extend:
        index = len(values)
        name = names[index] if index < len(names) else f"#{index + 1}"
        parts.append(f"{name}={extend[0]}")
    return "/".join(parts) if parts else "()"


def value_text(value: Any, dtype: DataType | None) -> str:
    """A partition value as shown in a plan: its Hive string form, quoted only where it would be ambiguous."""
    if value is None:
        return "NULL"
    if dtype is None:
        try:
            dtype = infer_type(value)
        except SargableError:
            return repr(value)
    try:
        text = format_value(value, dtype)
    except (AttributeError, TypeError, ValueError):
        return repr(value)
    if isinstance(value, str) and (
        not value
        or value in ("NULL", "-inf", "+inf")
        or any(c in _PLAIN_STRING_BAD or not c.isprintable() for c in value)
    ):
        body = "".join(c if c.isprintable() else f"\\u{{{ord(c):x}}}" for c in value)
        return "'" + body.replace("'", "''") + "'"
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return text


def display_expr(expr: Expr) -> str:
    """A filter as text, with literals shown as plain values (`hr = 3`) rather than typed casts."""

    def plain(node: Expr) -> Expr:
        if isinstance(node, Literal) and node.value is not None:
            try:
                natural = infer_type(node.value)
            except SargableError:
                return node
            if natural != node.type:
                return Literal(node.value, natural)
        return node

    return str(transform(expr, plain))
