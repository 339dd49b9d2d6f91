"""Binding: resolve an expression's columns against a schema and coerce its literals to the column types.

Binding is a separate step, as in pyiceberg: the parser knows no schema, and every later layer (normalization,
planning, data skipping, evaluation) works on bound expressions whose columns carry their types and whose literals
are already values of the compared column's type.

Literal coercion (for comparisons, IN and BETWEEN) is exact whenever `types.convert` is: `'2024-01-01'` against a
`date` column becomes a date, `'7'` against an `int` column becomes 7. Numbers keep their exact value when the
column's type can't hold it, so comparisons happen by numeric value: an integer outside the column's range, a
non-integral number against an integral column (`hr > 3.5` selects 4, 5, ...), or a decimal with more scale than a
decimal column stays as it is. Literals against a `float` (32-bit) column are rounded to single precision, the value
such a column stores; against a `double` column decimals become doubles. A timestamp literal against a `date`
column must be a midnight; a date against a `timestamp` column is its midnight. A non-string literal against a
string column becomes its Hive string form. LIKE and RLIKE on non-string columns match the value's string form.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from functools import singledispatch
from typing import Any

from sargable.errors import BindError, TypeCoercionError
from sargable.expr.evaluate import comparable_types, function_result_type
from sargable.expr.like import compile_regex, like_matcher
from sargable.expr.nodes import (
    And,
    Between,
    Column,
    Comparison,
    Expr,
    Func,
    In,
    IsNull,
    Like,
    Literal,
    Not,
    Or,
    Regex,
)
from sargable.types import (
    BOOLEAN,
    DECIMAL_CONTEXT,
    DOUBLE,
    FLOAT,
    FLOAT_TYPES,
    INTEGER_RANGES,
    STRING,
    STRING_TYPES,
    DataType,
    convert,
    field_path,
    float32,
    format_value,
    infer_type,
    parse_date,
    parse_timestamp,
    parse_type,
    split_path,
)

Bound = tuple[Expr, DataType | None]
_LISTED_COLUMNS = 50


class Schema:
    """Columns by case-insensitive name, validated: names are non-empty strings, unique ignoring case."""

    def __init__(self, columns: Sequence[tuple[str, str | DataType]]) -> None:
        if isinstance(columns, (str, bytes)) or not isinstance(columns, Sequence):
            raise BindError(f"a schema is a list of (name, type) pairs, got {type(columns).__name__}: {columns!r}")
        self.by_lower: dict[str, Column] = {}
        self.names: list[str] = []
        for entry in columns:
            if not isinstance(entry, (tuple, list)) or len(entry) != 2:
                raise BindError(f"a schema entry must be a (name, type) pair, got {entry!r}")
            name, type_text = entry
            if not isinstance(name, str) or not name:
                raise BindError(f"a column name must be a non-empty string, got {name!r}")
            try:
                dtype = parse_type(type_text)
            except TypeCoercionError as exc:
                raise TypeCoercionError(f"column {name!r}: {exc}") from None
            lowered = name.lower()
            if lowered in self.by_lower:
                other = self.by_lower[lowered].name
                raise BindError(
                    f"the schema has columns {other!r} and {name!r}, which differ only in case; "
                    "column names are case-insensitive"
                )
            self.by_lower[lowered] = Column(name, dtype)
            self.names.append(name)

    def resolve(self, name: str) -> Column:
        """The bound column for `name` (any case), or `BindError` listing the known columns."""
        found = self.by_lower.get(name.lower())
        if found is None:
            found = self._field(name)
        if found is None:
            listed = ", ".join(self.names[:_LISTED_COLUMNS])
            more = f" and {len(self.names) - _LISTED_COLUMNS} more" if len(self.names) > _LISTED_COLUMNS else ""
            raise BindError(f"unknown column {name!r}; known columns: {listed or '(none)'}{more}")
        return found


    def _field(self, path: str) -> Column | None:
        """A struct's field by its path (`device.os`, names in any case), named by its canonical path."""
        try:
            parts = split_path(path)
        except TypeCoercionError:
            return None
        top = self.by_lower.get(parts[0].lower())
        if top is None or len(parts) == 1:
            return None
        names, dtype = [top.name], top.type
        for part in parts[1:]:
            if dtype is None or dtype.name != "struct":
                return None
            lowered = [n.lower() for n in dtype.field_names]
            if part.lower() not in lowered:
                return None
            index = lowered.index(part.lower())
            names.append(dtype.field_names[index])
            dtype = dtype.children[index]
        return Column(field_path(names), dtype)


def bind(expr: Expr, schema: Sequence[tuple[str, str | DataType]] | Schema) -> Expr:
    """Resolve columns (case-insensitively) and coerce literals to the compared columns' types.

    Raises `BindError` for an unknown column, an unknown function or a non-predicate filter,
    `TypeCoercionError` (a `BindError`) for a literal the column's type can't take, and `PatternError` (a
    `BindError`) for a malformed LIKE or RLIKE pattern.
    """
    if not isinstance(expr, Expr):
        raise BindError(f"bind needs an expression (sargable.Expr), got {type(expr).__name__}: {expr!r}")
    context = _Context(schema if isinstance(schema, Schema) else Schema(schema))
    bound, dtype = _fold(expr, context)
    _require_predicate(bound, dtype, "the filter")
    return bound


class _Context:
    """One bind call: the schema, and coerced literals by identity (parsers share equal literal objects)."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.coerced: dict[tuple[int, DataType | None], tuple[Literal, Literal]] = {}

    def coerce(self, literal: Literal, target: DataType | None, what: str) -> Literal:
        key = (id(literal), target)
        found = self.coerced.get(key)
        if found is None:
            found = self.coerced[key] = (literal, coerce_literal(check_literal(literal), target, what))
        return found[1]


def _fold(expr: Expr, context: _Context) -> Bound:
    """`nodes.fold` with `_bind`, except that an IN list of literals is bound in one step (no visit per value)."""
    results: list[Bound] = []
    stack: list[tuple[Expr, int]] = [(expr, -1)]
    while stack:
        node, count = stack.pop()
        if count > 0:
            args = results[-count:]
            del results[-count:]
            results.append(_bind(node, args, context))
            continue
        if not isinstance(node, Expr):
            raise BindError(_not_an_expression(node))
        literal_list = type(node) is In and all(type(v) is Literal for v in node.values)  # type: ignore[attr-defined]
        kids = (node.operand,) if literal_list else node.children()  # type: ignore[attr-defined]
        if kids:
            stack.append((node, len(kids)))
            stack.extend([(kid, -1) for kid in reversed(kids)])
        else:
            results.append(_bind(node, [], context))
    return results[0]


def _not_an_expression(value: object) -> str:
    hint = " (build = and != with .eq()/.ne(); == and != compare trees)" if isinstance(value, bool) else ""
    return f"found {type(value).__name__} {value!r} where an expression belongs{hint}"


def describe(node: Expr) -> str:
    """A short description of an operand for messages: `column 'hr'`, `lower(...)`, `literal 3`."""
    if isinstance(node, Column):
        return f"column {node.name!r}"
    if isinstance(node, Func):
        return f"{node.name}(...)"
    if isinstance(node, Literal):
        return f"literal {_show(node)}"
    return f"a {type(node).__name__} predicate"


def _show(literal: Literal) -> str:
    value = literal.value
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return format_value(value, literal.type)


_VALUE_CLASSES: dict[str, tuple[type, ...]] = {
    **dict.fromkeys(INTEGER_RANGES, (int,)),
    **dict.fromkeys(STRING_TYPES, (str,)),
    **dict.fromkeys(FLOAT_TYPES, (float, int)),
    "decimal": (Decimal, int),
    "date": (dt.date,),
    "timestamp": (dt.datetime,),
    "boolean": (bool,),
}
"""The Python classes a literal's value may have, by its type's name (`sargable.types.convert` gives these)."""


def check_literal(literal: Literal) -> Literal:
    """`literal` itself when its value is a Python value of its declared type (or NULL); else a `BindError`, since a
    hand-built `Literal(Decimal(0), DATE)` would otherwise fail deep inside coercion or formatting."""
    value, dtype = literal.value, literal.type
    if not isinstance(dtype, DataType):
        raise BindError(
            f"the literal {value!r} has type {dtype!r}, which is not a DataType; "
            "build literals with sg.lit(value) or sg.lit(value, sargable.types.parse_type(...))"
        )
    if value is None:
        return literal
    classes = _VALUE_CLASSES.get(dtype.name, ())
    wrong_bool = isinstance(value, bool) and dtype.name != "boolean"
    wrong_date = dtype.name == "date" and isinstance(value, dt.datetime)
    if not isinstance(value, classes) or wrong_bool or wrong_date:
        expected = " or ".join(c.__name__ for c in classes) if classes else "None"
        raise BindError(
            f"the literal {value!r} ({type(value).__name__}) is declared as {dtype}, whose values are {expected}; "
            f"build it with sg.lit({value!r}) or convert the value to the type"
        )
    return literal


def _require_predicate(node: Expr, dtype: DataType | None, where: str) -> None:
    if dtype is None or dtype.name not in ("boolean", "null"):
        raise BindError(f"{where} must be a predicate (true/false), but {describe(node)} is of type {dtype}")


@singledispatch
def _bind(node: Expr, kids: list[Bound], context: _Context) -> Bound:
    raise BindError(f"cannot bind a {type(node).__name__} node")


@_bind.register
def _(node: Column, kids: list[Bound], context: _Context) -> Bound:
    column = context.schema.resolve(node.name)
    return column, column.type


@_bind.register
def _(node: Literal, kids: list[Bound], context: _Context) -> Bound:
    return check_literal(node), node.type


def _comparable(kids: list[Bound], what: str) -> None:
    """Refuse a binary or complex operand: such columns are stored and returned, never compared."""
    for node, dtype in kids:
        if dtype is not None and not dtype.is_orderable:
            raise BindError(
                f"{describe(node)} has type {dtype}, which {what} can't take: binary and complex (array, map, "
                "struct) columns are stored and returned but never compared; only IS [NOT] NULL tests them"
            )


@_bind.register
def _(node: Func, kids: list[Bound], context: _Context) -> Bound:
    _comparable(kids, f"{node.name}()")
    args = tuple(k for k, _ in kids)
    try:
        result = function_result_type(node.name, [t for _, t in kids])
    except TypeCoercionError as exc:
        raise TypeCoercionError(f"in {node.name}(...): {exc}") from None
    return (node if _same(args, node.args) else Func(node.name, args)), result


@_bind.register
def _(node: Comparison, kids: list[Bound], context: _Context) -> Bound:
    _comparable(kids, "a comparison")
    (left, lt), (right, rt) = kids
    if isinstance(left, Literal) and (not isinstance(right, Literal) or _string_beside_other(lt, rt)):
        left = _unify(right, rt, left, lt, context)
    else:
        right = _unify(left, lt, right, rt, context)
    if left is node.left and right is node.right:
        return node, BOOLEAN
    return Comparison(node.op, left, right), BOOLEAN


@_bind.register
def _(node: In, kids: list[Bound], context: _Context) -> Bound:
    _comparable(kids, "IN")
    operand, otype = kids[0]
    if len(kids) == 1:
        what = describe(operand)
        if isinstance(operand, Literal):
            values = tuple(_unify(operand, otype, value, value.type, context) for value in node.values)  # type: ignore[attr-defined]
        else:
            values = tuple(context.coerce(value, otype, what) for value in node.values)  # type: ignore[arg-type]
    else:
        values = tuple(_unify(operand, otype, value, vtype, context) for value, vtype in kids[1:])
    if operand is node.operand and _same(values, node.values):
        return node, BOOLEAN
    return In(operand, values, node.negated), BOOLEAN


@_bind.register
def _(node: Between, kids: list[Bound], context: _Context) -> Bound:
    _comparable(kids, "BETWEEN")
    (operand, otype), (low, ltype), (high, htype) = kids
    low, high = _unify(operand, otype, low, ltype, context), _unify(operand, otype, high, htype, context)
    if operand is node.operand and low is node.low and high is node.high:
        return node, BOOLEAN
    return Between(operand, low, high, node.negated), BOOLEAN


@_bind.register
def _(node: IsNull, kids: list[Bound], context: _Context) -> Bound:
    operand = kids[0][0]
    return (node if operand is node.operand else IsNull(operand, node.negated)), BOOLEAN


@_bind.register
def _(node: Like, kids: list[Bound], context: _Context) -> Bound:
    _comparable(kids, "LIKE")
    like_matcher(node.pattern, node.escape)
    operand = kids[0][0]
    return (node if operand is node.operand else Like(operand, node.pattern, node.escape, node.negated)), BOOLEAN


@_bind.register
def _(node: Regex, kids: list[Bound], context: _Context) -> Bound:
    _comparable(kids, "RLIKE")
    compile_regex(node.pattern)
    operand = kids[0][0]
    return (node if operand is node.operand else Regex(operand, node.pattern, node.negated)), BOOLEAN


@_bind.register(Not)
@_bind.register(And)
@_bind.register(Or)
def _(node: Expr, kids: list[Bound], context: _Context) -> Bound:
    for child, dtype in kids:
        _require_predicate(child, dtype, f"each operand of {type(node).__name__.upper()}")
    children = tuple(k for k, _ in kids)
    return (node if _same(children, node.children()) else node.with_children(children)), BOOLEAN


def _string_beside_other(a: DataType | None, b: DataType | None) -> bool:
    return a is not None and a.is_string and b is not None and not b.is_string and b.name != "null"


def _same(new: Sequence[Expr], old: Sequence[Expr]) -> bool:
    return all(a is b for a, b in zip(new, old, strict=True))


def _unify(
    target: Expr, target_type: DataType | None, other: Expr, other_type: DataType | None, context: _Context
) -> Expr:
    """`other` ready to be compared with `target`: a literal coerced to the target's type, else a type check."""
    if isinstance(other, Literal):
        if not isinstance(target, Literal):
            return context.coerce(other, target_type, describe(target))
        if comparable_types(target_type, other_type):
            return other
        if other_type is not None and other_type.is_string:
            return context.coerce(other, target_type, describe(target))
    elif comparable_types(target_type, other_type):
        return other
    raise BindError(
        f"cannot compare {describe(target)} of type {target_type} with {describe(other)} of type {other_type}"
    )


def coerce_literal(literal: Literal, target: DataType | None, what: str = "the column") -> Literal:
    """`literal` as a value of `target` (see the module docstring for the rules); `TypeCoercionError` if it can't be."""
    value = literal.value
    if value is None or target is None or target.name == "null":
        return literal
    if type(value) is int and target.is_integral:
        low, high = INTEGER_RANGES[target.name]
        if low <= value <= high:
            return literal if literal.type == target else Literal(value, target)
    elif type(value) is str and target.is_string and literal.type == STRING:
        return literal
    try:
        value, dtype = _coerce(literal.value, literal.type, target)
    except TypeCoercionError as exc:
        raise TypeCoercionError(
            f"cannot compare {what} of type {target} with the literal {_show(literal)}: {exc}"
        ) from None
    if dtype == literal.type and type(value) is type(literal.value) and value == literal.value:
        return literal
    return Literal(value, dtype)


def _coerce(value: Any, ltype: DataType, target: DataType) -> tuple[Any, DataType]:
    name = target.name
    if target.is_string:
        return (value if isinstance(value, str) else format_value(value, ltype)), STRING
    if target.is_numeric:
        return _coerce_number(_number(value), target)
    if name == "date":
        return _to_date(value), target
    if name == "timestamp":
        if isinstance(value, str):
            return parse_timestamp(value), target
        if isinstance(value, dt.date):
            return convert(value, target), target
        raise TypeCoercionError(f"a {ltype} is not a timestamp")
    if name == "boolean":
        if isinstance(value, (bool, str)):
            return convert(value, BOOLEAN), BOOLEAN
        raise TypeCoercionError(f"a {ltype} is not a boolean; use true or false")
    raise TypeCoercionError(f"no coercion to {target}")


def _to_date(value: Any) -> dt.date:
    if isinstance(value, str):
        try:
            return parse_date(value)
        except TypeCoercionError as date_error:
            try:
                value = parse_timestamp(value)
            except TypeCoercionError:
                raise date_error from None
    if isinstance(value, dt.datetime):
        if value.time() != dt.time(0):
            raise TypeCoercionError(
                f"the timestamp has a time of day ({value.time().isoformat()}) but a date column holds whole days; "
                f"compare with DATE '{value.date().isoformat()}' instead"
            )
        return value.date()
    if isinstance(value, dt.date):
        return value
    raise TypeCoercionError(f"{value!r} is not a date")


def _number(value: Any) -> int | float | Decimal:
    if isinstance(value, bool):
        raise TypeCoercionError("a boolean is not a number")
    if isinstance(value, (int, float, Decimal)):
        return value
    if isinstance(value, str):
        text = value.strip()
        lowered = text.lower().lstrip("+")
        if lowered in ("nan", "-nan"):
            return math.nan
        if lowered in ("inf", "infinity", "-inf", "-infinity"):
            return -math.inf if lowered.startswith("-") else math.inf
        try:
            number = Decimal(text)
        except InvalidOperation:
            raise TypeCoercionError(f"{value!r} is not a number") from None
        if not number.is_finite():
            raise TypeCoercionError(f"{value!r} is not a number")
        return number
    raise TypeCoercionError(f"a {type(value).__name__} is not a number")


def _exact(number: int | float | Decimal) -> tuple[Any, DataType]:
    """A number kept at its exact value, typed by its own kind."""
    if isinstance(number, float):
        return number, DOUBLE
    return number, infer_type(number)


def _to_float(number: int | float | Decimal) -> float:
    try:
        return float(number)
    except OverflowError:
        return math.copysign(math.inf, number)


def _coerce_number(number: int | float | Decimal, target: DataType) -> tuple[Any, DataType]:
    if target.is_integral:
        if isinstance(number, float):
            if not (math.isfinite(number) and number.is_integer()):
                return number, DOUBLE
            number = int(number)
        elif isinstance(number, Decimal):
            if number != number.to_integral_value(context=DECIMAL_CONTEXT):
                return _exact(number)
            number = int(number)
        low, high = INTEGER_RANGES[target.name]
        return (number, target) if low <= number <= high else _exact(number)
    if target.name == "float":
        return float32(_to_float(number)), FLOAT
    if target.name == "double":
        if isinstance(number, int):
            as_float = _to_float(number)
            return (as_float, DOUBLE) if as_float == number else _exact(number)
        return _to_float(number), DOUBLE
    if isinstance(number, float) and not math.isfinite(number):
        return number, DOUBLE
    try:
        return convert(number, target), target
    except TypeCoercionError:
        if isinstance(number, float):
            return _exact(Decimal(repr(number)))
        return _exact(number)

