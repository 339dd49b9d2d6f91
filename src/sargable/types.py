"""Hive column types, their Python values, and conversion of values to a type.

Every layer shares these: the binder coerces literals, the key codec encodes values, the metastore parses
partition values given as Hive strings. Python values per type: `str` (string, varchar, char), `int`
(tinyint..bigint), `float` (float, double), `decimal.Decimal` (decimal), `datetime.date` (date),
`datetime.datetime` without time zone (timestamp), `bool` (boolean); `None` is NULL in every type.

A table may also have data columns of the types that are stored and returned but never compared: `binary`,
`array<T>`, `map<K,V>` and `struct<name:T,...>` (nested, spelled as Hive spells them). They are not
`is_orderable`: no filter compares them (only IS NULL tests them), no statistics skip on them, and no partition key
has one.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Context, Decimal, InvalidOperation
from typing import Any

from sargable.errors import TypeCoercionError

INTEGER_RANGES: dict[str, tuple[int, int]] = {
    "tinyint": (-(2**7), 2**7 - 1),
    "smallint": (-(2**15), 2**15 - 1),
    "int": (-(2**31), 2**31 - 1),
    "bigint": (-(2**63), 2**63 - 1),
}
STRING_TYPES = frozenset({"string", "varchar", "char"})
FLOAT_TYPES = frozenset({"float", "double"})
TYPE_NAMES = frozenset(
    {*INTEGER_RANGES, *STRING_TYPES, *FLOAT_TYPES, "decimal", "date", "timestamp", "boolean"}
)
"""The orderable (primitive, comparable) types."""
COMPLEX_TYPES = frozenset({"array", "map", "struct"})
UNORDERED_TYPES = frozenset({"binary", *COMPLEX_TYPES})
"""Types a column may have that no filter compares: `binary` and the complex types."""
MAX_TYPE_DEPTH = 64
"""How deeply complex types may nest (`array<array<...>>`): far past any real schema, and bounded."""
_SYNONYMS = {
    "integer": "int",
    "long": "bigint",
    "short": "smallint",
    "byte": "tinyint",
    "real": "float",
    "bool": "boolean",
}
MAX_DECIMAL_PRECISION = 38
DECIMAL_CONTEXT = Context(prec=2 * MAX_DECIMAL_PRECISION)
"""Enough precision that arithmetic on any decimal(38,s) value is exact."""


@dataclass(frozen=True, slots=True)
class DataType:
    """A column type: a Hive type name plus its parameters (`varchar(n)`, `char(n)`, `decimal(p,s)`) or, for the
    complex types, its element types (`array<T>`: (T,), `map<K,V>`: (K, V), `struct<a:T,...>`: the field types,
    with `field_names`)."""

    name: str
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    children: tuple[DataType, ...] = ()
    field_names: tuple[str, ...] = ()

    def __str__(self) -> str:
        """The canonical Hive spelling, which `parse_type` reads back: `decimal(10,2)`, `map<string,array<int>>`."""
        if self.name in ("varchar", "char"):
            return f"{self.name}({self.length})"
        if self.name == "decimal":
            return f"decimal({self.precision},{self.scale})"
        if self.name == "struct":
            fields = ",".join(f"{_field_name(n)}:{t}" for n, t in zip(self.field_names, self.children, strict=True))
            return f"struct<{fields}>"
        if self.name in COMPLEX_TYPES:
            return f"{self.name}<{','.join(map(str, self.children))}>"
        return self.name

    @property
    def is_integral(self) -> bool:
        return self.name in INTEGER_RANGES

    @property
    def is_floating(self) -> bool:
        return self.name in FLOAT_TYPES

    @property
    def is_numeric(self) -> bool:
        return self.is_integral or self.is_floating or self.name == "decimal"

    @property
    def is_string(self) -> bool:
        return self.name in STRING_TYPES

    @property
    def is_complex(self) -> bool:
        """`array`, `map` or `struct`."""
        return self.name in COMPLEX_TYPES

    @property
    def is_orderable(self) -> bool:
        """Whether values compare and order: what a filter may compare, statistics may skip on, a partition key
        may have. False for `binary` and the complex types."""
        return self.name not in UNORDERED_TYPES


_BARE_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _field_name(name: str) -> str:
    return name if _BARE_FIELD.fullmatch(name) else "`" + name.replace("`", "``") + "`"


STRING = DataType("string")
TINYINT = DataType("tinyint")
SMALLINT = DataType("smallint")
INT = DataType("int")
BIGINT = DataType("bigint")
FLOAT = DataType("float")
DOUBLE = DataType("double")
DATE = DataType("date")
TIMESTAMP = DataType("timestamp")
BOOLEAN = DataType("boolean")
NULL = DataType("null")
"""The type of the bare `NULL` literal; no column has it."""


def decimal_type(precision: int, scale: int) -> DataType:
    """`decimal(precision, scale)`, validated as Hive does (1 <= p <= 38, 0 <= s <= p)."""
    if not (1 <= precision <= MAX_DECIMAL_PRECISION and 0 <= scale <= precision):
        raise TypeCoercionError(f"invalid decimal type decimal({precision},{scale}): need 1 <= p <= 38 and 0 <= s <= p")
    return DataType("decimal", precision=precision, scale=scale)


_TYPE_TOKEN = re.compile(
    r"\s*(?:(?P<word>[A-Za-z0-9_$]+)|(?P<quoted>`[^`]*(?:``[^`]*)*`)|(?P<punct>[<>,:()])|(?P<end>\Z)|(?P<other>.))",
    re.DOTALL,
)
_KNOWN = ", ".join(sorted({*TYPE_NAMES, "binary"})) + ", array<T>, map<K,V>, struct<name:T,...>"


def parse_type(text: str | DataType) -> DataType:
    """Parse a Hive type such as `int`, `varchar(20)`, `decimal(10,2)`, `array<int>`, `map<string,int>` or
    `struct<a:int,b:array<string>>` (case-insensitive, spaces allowed), iteratively however deep it nests."""
    if isinstance(text, DataType):
        return text
    if not isinstance(text, str):
        raise TypeCoercionError(f"a type must be a string such as 'int' or 'decimal(10,2)', got {text!r}")
    return _TypeParser(text).parse()


class _TypeParser:
    """One type string: its tokens and an explicit stack of the complex types still open."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = [(m.lastgroup or "", m.group(m.lastgroup or 0), m.start()) for m in _TYPE_TOKEN.finditer(text)]
        self.i = 0

    def fail(self, message: str) -> TypeCoercionError:
        kind, raw, start = self.tokens[self.i]
        found = "end of type" if kind == "end" else repr(raw)
        return TypeCoercionError(f"bad type {self.text!r}: {message} at position {start}, found {found}")

    def take(self, punct: str, message: str) -> None:
        kind, raw, _ = self.tokens[self.i]
        if kind != "punct" or raw != punct:
            raise self.fail(message)
        self.i += 1

    def peek(self) -> str:
        kind, raw, _ = self.tokens[self.i]
        return raw if kind == "punct" else kind

    def parse(self) -> DataType:
        open_types: list[tuple[str, list[DataType], list[str]]] = []
        while True:
            kind, raw, _ = self.tokens[self.i]
            if kind != "word" or raw[0].isdigit():
                if kind == "end" and not open_types and self.i == 0:
                    raise TypeCoercionError(f"unknown type {self.text!r}; known types: {_KNOWN}")
                raise self.fail("expected a type name")
            name = _SYNONYMS.get(raw.lower(), raw.lower())
            self.i += 1
            if name in COMPLEX_TYPES:
                if len(open_types) >= MAX_TYPE_DEPTH:
                    raise self.fail(f"types nest more than {MAX_TYPE_DEPTH} deep")
                self.take("<", f"expected '<' after {name}")
                open_types.append((name, [], []))
                if name == "struct":
                    self.field_name(open_types[-1][2])
                continue
            dtype = self.primitive(name)
            while True:
                if not open_types:
                    if self.peek() != "end":
                        raise self.fail("expected end of type")
                    return dtype
                name, children, names = open_types[-1]
                children.append(dtype)
                wanted = {"array": 1, "map": 2}.get(name)
                if self.peek() == "," and len(children) != wanted:
                    self.i += 1
                    if name == "struct":
                        self.field_name(names)
                    break
                if wanted is not None and len(children) < wanted:
                    raise self.fail("expected ',' and the value type in map<")
                self.take(">", f"expected '>'{' or ,' if name == 'struct' else ''} to close {name}<")
                open_types.pop()
                if name == "map" and children[0].is_complex:
                    raise TypeCoercionError(f"bad type {self.text!r}: a map's keys must be of a primitive type")
                if name == "struct" and len({n.lower() for n in names}) != len(names):
                    raise TypeCoercionError(f"bad type {self.text!r}: a struct has two fields of one name")
                dtype = DataType(name, children=tuple(children), field_names=tuple(names))

    def field_name(self, names: list[str]) -> None:
        kind, raw, _ = self.tokens[self.i]
        if kind == "quoted" and len(raw) > 2:
            names.append(raw[1:-1].replace("``", "`"))
        elif kind == "word":
            names.append(raw)
        else:
            raise self.fail("expected a struct field name")
        self.i += 1
        self.take(":", "expected ':' after a struct field name")

    def primitive(self, name: str) -> DataType:
        params: list[int] = []
        if self.peek() == "(":
            self.i += 1
            while True:
                kind, raw, _ = self.tokens[self.i]
                if kind != "word" or not raw.isdigit() or len(raw) > 10:
                    raise self.fail("expected a number (at most 10 digits) in the type's parameters")
                params.append(int(raw))
                self.i += 1
                if self.peek() != "," or len(params) == 2:
                    break
                self.i += 1
            self.take(")", "expected ')' after the type's parameters")
        if name not in TYPE_NAMES and name != "binary":
            raise TypeCoercionError(f"unknown type {self.text!r}; known types: {_KNOWN}")
        if name == "decimal":
            return decimal_type(params[0] if params else 10, params[1] if len(params) > 1 else 0)
        if name in ("varchar", "char"):
            if len(params) != 1 or params[0] < 1:
                raise TypeCoercionError(f"type {self.text!r} needs one positive length, as in {name}(20)")
            return DataType(name, length=params[0])
        if params:
            raise TypeCoercionError(f"type {name} takes no parameters, got {self.text!r}")
        return DataType(name)


_PATH_PART = re.compile(r"`((?:[^`]|``)+)`|([^.`]+)")


def split_path(path: str) -> list[str]:
    """The names along a column path: `device.os` -> ['device', 'os'], `` `a.b`.c `` -> ['a.b', 'c']."""
    parts: list[str] = []
    at = 0
    while True:
        match = _PATH_PART.match(path, at)
        if match is None:
            raise TypeCoercionError(f"bad column path {path!r}: names are joined by dots, odd ones backquoted")
        parts.append(match[1].replace("``", "`") if match[1] is not None else match[2])
        at = match.end()
        if at == len(path):
            return parts
        if path[at] != ".":
            raise TypeCoercionError(f"bad column path {path!r} at position {at}: expected '.'")
        at += 1


def field_path(parts: Sequence[str]) -> str:
    """The path of nested names, the inverse of `split_path`."""
    return ".".join(p if "." not in p and "`" not in p else "`" + p.replace("`", "``") + "`" for p in parts)


def struct_leaves(name: str, dtype: DataType) -> Iterator[tuple[str, DataType]]:
    """The primitive fields reached through structs only (`device.os`), with their paths; none for a column that is
    not a struct (an array's or a map's elements have no per-file statistics of their own)."""
    if dtype.name != "struct":
        return
    stack = [([name], dtype)]
    while stack:
        parts, struct = stack.pop()
        for field, child in reversed(list(zip(struct.field_names, struct.children, strict=True))):
            if child.name == "struct":
                stack.append(([*parts, field], child))
            elif child.is_orderable:
                yield field_path([*parts, field]), child


def with_struct_leaves(schema: Sequence[tuple[str, DataType]]) -> list[tuple[str, DataType]]:
    """The schema followed by the primitive fields of its struct columns (`device.os`), those whose path no column
    of the schema has: what file statistics are kept for and data skipping compares."""
    names = {n.lower() for n, _ in schema}
    leaves = [leaf for name, dtype in schema for leaf in struct_leaves(name, dtype) if leaf[0].lower() not in names]
    return [*schema, *leaves] if leaves else list(schema)


def field_type(columns: Sequence[tuple[str, DataType]], path: str) -> DataType | None:
    """The type of a column or struct field by path (names compared ignoring case), or None when there is none."""
    parts = split_path(path)
    types = {n.lower(): t for n, t in columns}
    dtype = types.get(parts[0].lower())
    for part in parts[1:]:
        if dtype is None or dtype.name != "struct":
            return None
        dtype = {n.lower(): t for n, t in zip(dtype.field_names, dtype.children, strict=True)}.get(part.lower())
    return dtype


def float32(value: float) -> float:
    """Round a Python float to the nearest IEEE single-precision value, as a `float` column stores it."""
    if math.isnan(value) or math.isinf(value):
        return value
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


_DATE_RE = re.compile(r"^\s*(-?\d{1,4})-(\d{1,2})-(\d{1,2})\s*$")
_TIMESTAMP_RE = re.compile(
    r"^\s*(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?\s*$"
)


def parse_date(text: str) -> dt.date:
    """Parse `YYYY-MM-DD` (Hive's date form)."""
    match = _DATE_RE.match(text)
    if not match:
        raise TypeCoercionError(f"{text!r} is not a date; expected YYYY-MM-DD")
    try:
        return dt.date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    except ValueError as exc:
        raise TypeCoercionError(f"{text!r} is not a valid date: {exc}") from None


def parse_timestamp(text: str) -> dt.datetime:
    """Parse `YYYY-MM-DD[ HH:MM[:SS[.fffffffff]]]`; digits past microseconds must be zero."""
    match = _TIMESTAMP_RE.match(text)
    if not match:
        raise TypeCoercionError(f"{text!r} is not a timestamp; expected YYYY-MM-DD HH:MM:SS[.ffffff]")
    year, month, day, hour, minute, second, fraction = match.groups()
    fraction = fraction or ""
    if fraction[6:].strip("0"):
        raise TypeCoercionError(f"{text!r} has more precision than microseconds")
    try:
        return dt.datetime(
            int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
            int((fraction[:6]).ljust(6, "0")),
        )
    except ValueError as exc:
        raise TypeCoercionError(f"{text!r} is not a valid timestamp: {exc}") from None


_INTEGER_RE = re.compile(r"[+-]?[0-9]+\Z")
_NUMBER_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")


def _parse_number(text: str) -> Decimal | float:
    """A number from its text: ASCII digits with an optional sign, point and exponent, or NaN / Infinity."""
    lowered = text.lower()
    if lowered in ("nan", "+nan", "-nan"):
        return math.nan
    if lowered in ("inf", "+inf", "infinity", "+infinity"):
        return math.inf
    if lowered in ("-inf", "-infinity"):
        return -math.inf
    if not _NUMBER_RE.match(text):
        raise TypeCoercionError(f"{text!r} is not a number")
    return Decimal(text)


def _decimal_fits(value: Decimal, dtype: DataType) -> bool:
    assert dtype.precision is not None and dtype.scale is not None
    if value.copy_abs() >= Decimal(10).scaleb(dtype.precision - dtype.scale - 1):
        return False
    return value.quantize(Decimal(1).scaleb(-dtype.scale), context=DECIMAL_CONTEXT) == value


def format_value(value: Any, dtype: DataType) -> str:
    """A value's Hive string form: what appears in a partition name and in rendered literals."""
    if value is None:
        return "NULL"
    name = dtype.name
    if name == "boolean":
        return "true" if value else "false"
    if name == "date":
        return value.isoformat()
    if name == "timestamp":
        text = value.strftime("%Y-%m-%d %H:%M:%S") if value.year >= 1000 else value.isoformat(sep=" ")[:19]
        if value.microsecond:
            text += f".{value.microsecond:06d}".rstrip("0")
        return text
    if name in FLOAT_TYPES:
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if name == "float":
            return _shortest_float32(value)
        return repr(float(value))
    if name == "decimal":
        return format(value, "f")
    return str(value)


def _shortest_float32(value: float) -> str:
    """The shortest decimal text that reads back as the same single-precision value (0.1, not 0.100000001...)."""
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        if float32(float(text)) == value:
            return repr(float(text))
    return repr(float(value))


_OWN_PYTHON_TYPES = {
    **{name: str for name in STRING_TYPES},
    **{name: int for name in INTEGER_RANGES},
    "date": dt.date,
    "boolean": bool,
}


def split_converted(values: Iterable[Any], dtype: DataType) -> tuple[list[Any], list[Any]]:
    """(the values `convert` returns as they are, told from their exact Python type and an integer's range without
    converting; the others): a fast path for many values, e.g. thousands of join keys."""
    own = _OWN_PYTHON_TYPES.get(dtype.name)
    lo, hi = INTEGER_RANGES.get(dtype.name, (None, None))
    kept: list[Any] = []
    rest: list[Any] = []
    for value in values:
        if type(value) is own and (lo is None or lo <= value <= hi):
            kept.append(value)
        else:
            rest.append(value)
    return kept, rest


def convert(value: Any, dtype: DataType) -> Any:
    """Convert a value, or its Hive string form, to the Python value of `dtype` exactly.

    Used for partition values and stored data: an integer outside the type's range, a decimal that needs
    rounding, or text that is not of the type raises `TypeCoercionError`.
    """
    if value is None:
        return None
    name = dtype.name
    if name in UNORDERED_TYPES:
        raise TypeCoercionError(
            f"{dtype} values are stored and returned but never compared: no filter or partition value takes one"
        )
    if isinstance(value, str) and name not in STRING_TYPES and (not value.isascii() or value != value.strip()):
        raise TypeCoercionError(
            f"{value!r} is not a valid {dtype}: typed values are written in ASCII, without surrounding spaces"
        )
    try:
        if name in STRING_TYPES:
            if isinstance(value, str):
                return value
            if isinstance(value, bool):
                return "true" if value else "false"
            if isinstance(value, (int, float, Decimal, dt.date)):
                return format_value(value, infer_type(value))
        elif name in INTEGER_RANGES:
            if value.__class__ is str and _INTEGER_RE.match(value):  # (the common case: Hive's text of an integer)
                integer = int(value)
                lo, hi = INTEGER_RANGES[name]
                if lo <= integer <= hi:
                    return integer
            number = _as_number(value)
            if isinstance(value, str) and not _INTEGER_RE.match(value):
                raise TypeCoercionError(f"{value!r} is not an integer: write ASCII digits, with an optional sign")
            if number is not None:
                if isinstance(number, float) and not number.is_integer():
                    raise TypeCoercionError(f"{value!r} is not an integer")
                if isinstance(number, Decimal) and number != number.to_integral_value():
                    raise TypeCoercionError(f"{value!r} is not an integer")
                integer = int(number)
                lo, hi = INTEGER_RANGES[name]
                if not lo <= integer <= hi:
                    raise TypeCoercionError(f"{value!r} is outside the range of {name} [{lo}, {hi}]")
                return integer
        elif name in FLOAT_TYPES:
            number = _as_number(value)
            if number is not None:
                number = float(number)
                return float32(number) if name == "float" else number
        elif name == "decimal":
            number = _as_number(value)
            if number is not None:
                if isinstance(number, float):
                    if not math.isfinite(number):
                        raise TypeCoercionError(f"{value!r} is not a finite decimal")
                    number = Decimal(repr(number))
                number = Decimal(number)
                if not _decimal_fits(number, dtype):
                    raise TypeCoercionError(f"{value!r} does not fit {dtype} without rounding")
                return number.quantize(Decimal(1).scaleb(-(dtype.scale or 0)), context=DECIMAL_CONTEXT)
        elif name == "date":
            if isinstance(value, dt.datetime):
                if value.time() != dt.time(0) or value.tzinfo is not None:
                    raise TypeCoercionError(f"{value!r} has a time part; a date has none")
                return value.date()
            if isinstance(value, dt.date):
                return value
            if isinstance(value, str):
                return parse_date(value)
        elif name == "timestamp":
            if isinstance(value, dt.datetime):
                if value.tzinfo is not None:
                    raise TypeCoercionError(f"{value!r} has a time zone; timestamps are wall-clock time")
                return value
            if isinstance(value, dt.date):
                return dt.datetime(value.year, value.month, value.day)
            if isinstance(value, str):
                return parse_timestamp(value)
        elif name == "boolean":
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.strip().lower() in ("true", "false"):
                return value.strip().lower() == "true"
            if isinstance(value, int) and value in (0, 1):
                return bool(value)
    except TypeCoercionError:
        raise
    except (ValueError, OverflowError, InvalidOperation) as exc:
        raise TypeCoercionError(f"{value!r} is not a valid {dtype}: {exc}") from None
    raise TypeCoercionError(f"{value!r} ({type(value).__name__}) is not a valid {dtype}")


def _as_number(value: Any) -> int | float | Decimal | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float, Decimal)):
        return value
    if isinstance(value, str):
        return _parse_number(value)
    return None


def infer_type(value: Any) -> DataType:
    """The natural type of a Python value, used for literals built from Python (`sg.lit(3)` is a bigint)."""
    if value is None:
        return NULL
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int):
        lo, hi = INTEGER_RANGES["bigint"]
        if lo <= value <= hi:
            return BIGINT
        digits = len(str(abs(value)))
        if digits > MAX_DECIMAL_PRECISION:
            raise TypeCoercionError(f"integer literal {value} has more than {MAX_DECIMAL_PRECISION} digits")
        return decimal_type(digits, 0)
    if isinstance(value, float):
        return DOUBLE
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise TypeCoercionError(f"decimal literal {value} is not finite")
        _, digits, exponent = value.as_tuple()
        scale = max(0, -int(exponent))
        precision = max(len(digits) + max(0, int(exponent)), scale, 1)
        if precision > MAX_DECIMAL_PRECISION:
            raise TypeCoercionError(f"decimal literal {value} has more than {MAX_DECIMAL_PRECISION} digits")
        return decimal_type(precision, scale)
    if isinstance(value, str):
        return STRING
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            raise TypeCoercionError(f"{value!r} has a time zone; timestamps are wall-clock time")
        return TIMESTAMP
    if isinstance(value, dt.date):
        return DATE
    raise TypeCoercionError(f"no sargable type for a Python {type(value).__name__} value {value!r}")
