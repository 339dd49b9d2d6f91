"""Three-valued evaluation of an expression against a row: the oracle every other layer is tested against.

Semantics are SQL's, as Spark implements them: a comparison with NULL is NULL; `NOT NULL` is NULL; `FALSE AND NULL`
is FALSE and `TRUE OR NULL` is TRUE; `x IN (...)` is TRUE on a match, else NULL when the list holds a NULL, else
FALSE; `BETWEEN` is `x >= lo AND x <= hi`; `<=>` is never NULL. Doubles and floats order NaN above every number
(including +inf) and NaN equals NaN; -0.0 equals 0.0. Numbers compare by exact value (an `int` column against the
literal 8589934592 or 3.5), except that a comparison of two non-literal operands where one side is floating and
the other is not compares both as doubles, as engines widen them. LIKE and RLIKE on a non-string value match its
Hive string form.

An expression is compiled once into a flat postfix program (no recursion, so any depth works) and cached; the
program runs once per row.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache, singledispatch
from typing import Any

from sargable.errors import BindError, SargableError, TypeCoercionError
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
    DOUBLE,
    INT,
    NULL,
    STRING,
    TIMESTAMP,
    DataType,
    decimal_type,
    format_value,
    infer_type,
)

Step = Callable[[list[Any], Mapping[str, Any]], Any]

_NUMBER_TYPES = (int, float, Decimal)
COMPARISON_RESULT: dict[str, Callable[[int], bool]] = {
    "=": lambda c: c == 0,
    "<=>": lambda c: c == 0,
    "!=": lambda c: c != 0,
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
}
"""Each comparison operator's result from a three-way comparison of two non-NULL values (-1, 0, 1)."""


# -- values ---------------------------------------------------------------------------------------------------------


def _family_of_value(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, _NUMBER_TYPES):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dt.date):
        return "time"
    return type(value).__name__


def _incomparable(a: Any, b: Any) -> TypeCoercionError:
    return TypeCoercionError(
        f"cannot compare {a!r} ({type(a).__name__}) with {b!r} ({type(b).__name__}); bind the expression to a schema "
        "so literals take the column types"
    )


def compare_values(a: Any, b: Any) -> int:
    """Order two non-NULL values: -1, 0 or 1. Numbers by exact value with NaN greatest and equal to itself;
    strings by code point (the UTF-8 byte order); a date against a timestamp as midnight; False < True."""
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool:
        if ta is tb:
            return (a > b) - (a < b)
        raise _incomparable(a, b)
    if isinstance(a, _NUMBER_TYPES) and isinstance(b, _NUMBER_TYPES):
        a_nan = ta is float and a != a
        b_nan = tb is float and b != b
        if a_nan or b_nan:
            return a_nan - b_nan
        return (a > b) - (a < b)
    if ta is str and tb is str:
        return (a > b) - (a < b)
    if isinstance(a, dt.date) and isinstance(b, dt.date):
        a_ts, b_ts = isinstance(a, dt.datetime), isinstance(b, dt.datetime)
        if a_ts != b_ts:
            if a_ts:
                b = dt.datetime(b.year, b.month, b.day)
            else:
                a = dt.datetime(a.year, a.month, a.day)
        return (a > b) - (a < b)
    raise _incomparable(a, b)


def value_key(value: Any) -> Any:
    """A hashable key with the equality of `compare_values`: NaN equals NaN, a date equals its midnight timestamp,
    and booleans stay apart from the numbers 0 and 1."""
    if type(value) is float and value != value:
        return ("nan",)
    if type(value) is bool:
        return ("bool", value)
    if type(value) is dt.date:
        return dt.datetime(value.year, value.month, value.day)
    return value


def value_sort_key(value: Any) -> tuple[Any, ...]:
    """A sort key agreeing with `compare_values` among comparable non-NULL values (NaN last, date as midnight);
    values of different families sort by family instead of raising."""
    kind = type(value)
    if kind is bool:
        return (0, value)
    if kind is float:
        return (1, 1, 0) if value != value else (1, 0, value)
    if isinstance(value, _NUMBER_TYPES):
        return (1, 0, value)
    if kind is str:
        return (2, value)
    if kind is dt.date:
        return (3, dt.datetime(value.year, value.month, value.day))
    if isinstance(value, dt.date):
        return (3, value)
    return (4, repr(value))


def _truth(value: Any, what: str) -> bool | None:
    if value is None or type(value) is bool:
        return value
    raise TypeCoercionError(f"{what} needs a boolean predicate, got the value {value!r}")


def and3(values: Iterable[bool | None]) -> bool | None:
    """SQL AND of truth values: FALSE if any is FALSE, else NULL if any is NULL, else TRUE."""
    result: bool | None = True
    for value in values:
        if value is False:
            return False
        if value is None:
            result = None
    return result


def or3(values: Iterable[bool | None]) -> bool | None:
    """SQL OR of truth values: TRUE if any is TRUE, else NULL if any is NULL, else FALSE."""
    result: bool | None = False
    for value in values:
        if value is True:
            return True
        if value is None:
            result = None
    return result


def not3(value: bool | None) -> bool | None:
    """SQL NOT: NULL stays NULL."""
    return None if value is None else not value


def _as_text(value: Any, dtype: DataType | None) -> str:
    if type(value) is str:
        return value
    if dtype is None or dtype.name == "null" or dtype.is_string:
        dtype = infer_type(value)
    return format_value(value, dtype)


# -- functions --------------------------------------------------------------------------------------------------------


def type_family(dtype: DataType | None) -> str | None:
    """The comparison family of a type: number, string, time (date, timestamp), boolean, null; None if unknown."""
    if dtype is None:
        return None
    if dtype.name == "null":
        return "null"
    if dtype.is_numeric:
        return "number"
    if dtype.is_string:
        return "string"
    if dtype.name in ("date", "timestamp"):
        return "time"
    return dtype.name


def comparable_types(a: DataType | None, b: DataType | None) -> bool:
    """Whether values of the two types can be compared (same family, or either is NULL or unknown)."""
    fa, fb = type_family(a), type_family(b)
    return fa is None or fb is None or fa == "null" or fb == "null" or fa == fb


def common_type(types: Sequence[DataType | None]) -> DataType | None:
    """The type that holds values of all `types` (numbers widen to double, or to decimal with the largest scale)."""
    known = [t for t in types if t is not None and t.name != "null"]
    if not known:
        return NULL if types and all(t is not None for t in types) else None
    first = known[0]
    if all(t == first for t in known):
        return first
    families = {type_family(t) for t in known}
    if len(families) > 1:
        raise TypeCoercionError(f"no common type for {', '.join(str(t) for t in known)}")
    family = families.pop()
    if family == "number":
        if any(t.is_floating for t in known):
            return DOUBLE
        if any(t.name == "decimal" for t in known):
            return decimal_type(38, max(t.scale or 0 for t in known))
        return max(known, key=lambda t: ("tinyint", "smallint", "int", "bigint").index(t.name))
    if family == "time":
        return TIMESTAMP
    return STRING if family == "string" else first


def _string_result(types: Sequence[DataType | None]) -> DataType:
    return STRING


def _abs_type(types: Sequence[DataType | None]) -> DataType | None:
    dtype = types[0]
    if dtype is not None and dtype.name != "null" and not dtype.is_numeric:
        raise TypeCoercionError(f"abs() needs a number, got an argument of type {dtype}")
    return dtype


def _substr_type(types: Sequence[DataType | None]) -> DataType:
    for index in range(1, len(types)):
        if types[index] is not None and types[index].name != "null" and not types[index].is_integral:  # type: ignore[union-attr]
            raise TypeCoercionError(f"argument {index + 1} of substr() must be an integer, got {types[index]}")
    return STRING


def _substr(args: list[Any], types: Sequence[DataType | None]) -> str:
    text = _as_text(args[0], types[0])
    position = args[1]
    length = args[2] if len(args) > 2 else 2**31 - 1
    if type(position) is not int or type(length) is not int:
        raise TypeCoercionError(f"substr() needs integer position and length, got {position!r} and {length!r}")
    size = len(text)
    start = position - 1 if position > 0 else (size + position if position < 0 else 0)
    end = start + length
    start = max(start, 0)
    return "" if start >= end else text[start:end]


def _abs(args: list[Any], types: Sequence[DataType | None]) -> Any:
    value = args[0]
    if isinstance(value, bool) or not isinstance(value, _NUMBER_TYPES):
        raise TypeCoercionError(f"abs() needs a number, got {value!r}")
    return value.copy_abs() if isinstance(value, Decimal) else abs(value)


@dataclass(frozen=True, slots=True)
class Function:
    """A scalar function: arity, result type from argument types (raises on bad ones), and its implementation."""

    name: str
    min_args: int
    max_args: int | None
    result_type: Callable[[Sequence[DataType | None]], DataType | None]
    apply: Callable[[list[Any], Sequence[DataType | None]], Any]
    nulls_propagate: bool = True


FUNCTIONS: dict[str, Function] = {
    f.name: f
    for f in (
        Function("lower", 1, 1, _string_result, lambda a, t: _as_text(a[0], t[0]).lower()),
        Function("upper", 1, 1, _string_result, lambda a, t: _as_text(a[0], t[0]).upper()),
        Function("trim", 1, 1, _string_result, lambda a, t: _as_text(a[0], t[0]).strip(" ")),
        Function("length", 1, 1, lambda t: INT, lambda a, t: len(_as_text(a[0], t[0]))),
        Function("abs", 1, 1, _abs_type, _abs),
        Function("substr", 2, 3, _substr_type, _substr),
        Function("substring", 2, 3, _substr_type, _substr),
        Function("coalesce", 1, None, common_type, lambda a, t: next((v for v in a if v is not None), None), False),
    )
}
"""Functions that binding accepts and evaluation implements (string forms as in Spark: 1-based `substr`, `trim`
removes spaces only, `length` counts code points)."""


def function_result_type(name: str, arg_types: Sequence[DataType | None]) -> DataType | None:
    """Check a call's arity and argument types and give its result type; unknown names raise `BindError`."""
    function = FUNCTIONS.get(name)
    if function is None:
        raise BindError(f"unknown function {name}(); known functions: {', '.join(sorted(FUNCTIONS))}")
    count = len(arg_types)
    if count < function.min_args or (function.max_args is not None and count > function.max_args):
        expected = (
            str(function.min_args)
            if function.min_args == function.max_args
            else f"{function.min_args} or more"
            if function.max_args is None
            else f"{function.min_args} to {function.max_args}"
        )
        raise BindError(f"{name}() takes {expected} arguments, got {count}")
    return function.result_type(arg_types)


# -- compilation ------------------------------------------------------------------------------------------------------


def _static_type(node: Expr, child_types: list[DataType | None]) -> DataType | None:
    if isinstance(node, (Column, Literal)):
        return node.type
    if isinstance(node, Func):
        function = FUNCTIONS.get(node.name)
        if function is None:
            return None
        try:
            return function.result_type(child_types)
        except SargableError:
            return None
    return BOOLEAN


def _widens(a: Expr, ta: DataType | None, b: Expr, tb: DataType | None) -> bool:
    """Two non-literal numeric operands of which exactly one is floating compare as doubles."""
    if isinstance(a, Literal) or isinstance(b, Literal) or ta is None or tb is None:
        return False
    return ta.is_numeric and tb.is_numeric and ta.is_floating != tb.is_floating


def _compare_op(op: str, widen: bool) -> Callable[[Any, Any], bool | None]:
    if op == "<=>":

        def null_safe(a: Any, b: Any) -> bool:
            if a is None or b is None:
                return a is None and b is None
            if widen:
                a, b = float(a), float(b)
            return compare_values(a, b) == 0

        return null_safe
    result = COMPARISON_RESULT[op]

    def compare(a: Any, b: Any) -> bool | None:
        if a is None or b is None:
            return None
        if widen:
            a, b = float(a), float(b)
        return result(compare_values(a, b))

    return compare


def _program_children(node: Expr) -> tuple[Expr, ...]:
    if isinstance(node, In) and all(isinstance(v, Literal) for v in node.values):
        return (node.operand,)
    return node.children()


@singledispatch
def _step(node: Expr, kid_types: list[DataType | None]) -> Step:
    raise BindError(f"cannot evaluate a {type(node).__name__} node")


@_step.register
def _(node: Column, kid_types: list[DataType | None]) -> Step:
    name = node.name

    def column(args: list[Any], row: Mapping[str, Any]) -> Any:
        try:
            return row[name]
        except KeyError:
            pass
        lowered = name.lower()
        for key in row:
            if isinstance(key, str) and key.lower() == lowered:
                return row[key]
        raise BindError(f"the row has no column {name!r}; it has {', '.join(map(repr, row)) or 'no columns'}")

    return column


@_step.register
def _(node: Literal, kid_types: list[DataType | None]) -> Step:
    value = node.value
    return lambda args, row: value


@_step.register
def _(node: Func, kid_types: list[DataType | None]) -> Step:
    function = FUNCTIONS.get(node.name)
    if function is None:
        raise BindError(f"unknown function {node.name}(); known functions: {', '.join(sorted(FUNCTIONS))}")
    apply, propagate, types = function.apply, function.nulls_propagate, tuple(kid_types)

    def call(args: list[Any], row: Mapping[str, Any]) -> Any:
        if propagate and any(a is None for a in args):
            return None
        return apply(args, types)

    return call


@_step.register
def _(node: Comparison, kid_types: list[DataType | None]) -> Step:
    compare = _compare_op(node.op, _widens(node.left, kid_types[0], node.right, kid_types[1]))
    return lambda args, row: compare(args[0], args[1])


@_step.register
def _(node: In, kid_types: list[DataType | None]) -> Step:
    negated = node.negated
    if len(kid_types) == 1:
        values = [v.value for v in node.values]  # type: ignore[attr-defined]
        has_null = any(v is None for v in values)
        present = [v for v in values if v is not None]
        keys = {value_key(v) for v in present}
        families = {_family_of_value(v) for v in present}

        def member(args: list[Any], row: Mapping[str, Any]) -> bool | None:
            x = args[0]
            if x is None:
                return None
            if _family_of_value(x) not in families and present:
                compare_values(x, present[0])
            if value_key(x) in keys:
                return not negated
            return None if has_null else negated

        return member
    operand_type = kid_types[0]
    compares = [
        _compare_op("=", _widens(node.operand, operand_type, value, vtype))
        for value, vtype in zip(node.values, kid_types[1:], strict=True)
    ]

    def member_general(args: list[Any], row: Mapping[str, Any]) -> bool | None:
        x = args[0]
        if x is None:
            return None
        result = or3(compare(x, v) for compare, v in zip(compares, args[1:], strict=True))
        return not3(result) if negated else result

    return member_general


@_step.register
def _(node: Between, kid_types: list[DataType | None]) -> Step:
    ge = _compare_op(">=", _widens(node.operand, kid_types[0], node.low, kid_types[1]))
    le = _compare_op("<=", _widens(node.operand, kid_types[0], node.high, kid_types[2]))
    negated = node.negated

    def between(args: list[Any], row: Mapping[str, Any]) -> bool | None:
        x, low, high = args
        result = and3((ge(x, low), le(x, high)))
        return not3(result) if negated else result

    return between


@_step.register
def _(node: IsNull, kid_types: list[DataType | None]) -> Step:
    negated = node.negated
    return lambda args, row: (args[0] is None) != negated


@_step.register
def _(node: Like, kid_types: list[DataType | None]) -> Step:
    matches, negated, dtype = like_matcher(node.pattern, node.escape), node.negated, kid_types[0]

    def like(args: list[Any], row: Mapping[str, Any]) -> bool | None:
        value = args[0]
        if value is None:
            return None
        return matches(_as_text(value, dtype)) != negated

    return like


@_step.register
def _(node: Regex, kid_types: list[DataType | None]) -> Step:
    regex, negated, dtype = compile_regex(node.pattern), node.negated, kid_types[0]

    def rlike(args: list[Any], row: Mapping[str, Any]) -> bool | None:
        value = args[0]
        if value is None:
            return None
        return regex.search(_as_text(value, dtype)) != negated

    return rlike


@_step.register
def _(node: Not, kid_types: list[DataType | None]) -> Step:
    return lambda args, row: not3(_truth(args[0], "NOT"))


@_step.register
def _(node: And, kid_types: list[DataType | None]) -> Step:
    def conjunction(args: list[Any], row: Mapping[str, Any]) -> bool | None:
        return and3(_truth(v, "AND") for v in args)

    return conjunction


@_step.register
def _(node: Or, kid_types: list[DataType | None]) -> Step:
    def disjunction(args: list[Any], row: Mapping[str, Any]) -> bool | None:
        return or3(_truth(v, "OR") for v in args)

    return disjunction


def _build_program(expr: Expr) -> Callable[[Mapping[str, Any]], Any]:
    """Flatten `expr` into postfix steps (children before parents) and return a function running them on a row."""
    program: list[tuple[Step, int]] = []
    types: list[DataType | None] = []
    stack: list[tuple[Expr, int]] = [(expr, -1)]
    while stack:
        node, count = stack.pop()
        if count < 0:
            if not isinstance(node, Expr):
                raise BindError(f"found {type(node).__name__} {node!r} where an expression belongs")
            kids = _program_children(node)
            if kids:
                stack.append((node, len(kids)))
                stack.extend([(kid, -1) for kid in reversed(kids)])
                continue
            count = 0
        kid_types = types[len(types) - count :] if count else []
        if count:
            del types[len(types) - count :]
        program.append((_step(node, kid_types), count))
        types.append(_static_type(node, kid_types))

    def run(row: Mapping[str, Any]) -> Any:
        values: list[Any] = []
        for step, count in program:
            if count:
                args = values[-count:]
                del values[-count:]
            else:
                args = []
            values.append(step(args, row))
        return values[0]

    return run


_compiled = lru_cache(maxsize=256)(_build_program)


def _check_expr(expr: Any, what: str) -> None:
    if not isinstance(expr, Expr):
        raise SargableError(f"{what} needs an expression (sargable.Expr), got {type(expr).__name__}: {expr!r}")


def _predicate_result(result: Any) -> bool | None:
    if result is None or type(result) is bool:
        return result
    raise TypeCoercionError(f"the expression is not a predicate: it evaluates to the value {result!r}")


def compile_predicate(bound: Expr, *, cache: bool = True) -> Callable[[Mapping[str, Any]], bool | None]:
    """A function evaluating `bound` on one row (TRUE, FALSE or None for NULL); compile once, call per row."""
    _check_expr(bound, "compile_predicate")
    run = _compiled(bound) if cache else _build_program(bound)

    def predicate(row: Mapping[str, Any]) -> bool | None:
        if not isinstance(row, Mapping):
            raise SargableError(f"a row must be a mapping of column name to value, got {type(row).__name__}")
        return _predicate_result(run(row))

    return predicate


def evaluate(bound: Expr, row: Mapping[str, Any]) -> bool | None:
    """Evaluate a predicate on one row with SQL three-valued logic: True, False, or None for NULL (unknown)."""
    return compile_predicate(bound)(row)


def evaluate_many(bound: Expr, rows: Iterable[Mapping[str, Any]]) -> list[bool | None]:
    """`evaluate` on each row, compiling the expression once."""
    predicate = compile_predicate(bound)
    return [predicate(row) for row in rows]


def evaluate_value(expr: Expr, row: Mapping[str, Any] | None = None) -> Any:
    """The value of any expression (an operand such as `lower(name)`, or a predicate) on a row; None is NULL."""
    _check_expr(expr, "evaluate_value")
    return _compiled(expr)({} if row is None else row)


def literal_value(expr: Expr) -> Any:
    """Evaluate a column-free expression without caching it (for constant folding); raises `SargableError`."""
    return _build_program(expr)({})
