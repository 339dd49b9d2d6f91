"""Bound sargable predicates -> `pyarrow.compute.Expression`s: the one translator for reads without Spark.

A scan's residual is translated once, conjunct by conjunct (`split_for_arrow`): the conjuncts with an exact Arrow
form become one expression that Arrow's dataset scanner (or DuckDB and Polars, through a dataset) applies; the rest
stay sargable expressions for `sargable.expr.evaluate` to apply to the rows read, never dropped.

Exact means SQL's three-valued logic as `sargable.expr.evaluate` defines it. Arrow's `&`, `|` and `~` are Kleene's,
as SQL's are; comparisons, IN, BETWEEN and IS NULL translate when their operands are columns and literals of one
Arrow type; LIKE on a string column becomes Arrow's `match_like`, its ESCAPE character rewritten as Arrow's
backslash; `x IN (..., NULL)` uses Arrow's SQL null matching. Floating-point columns compare with NaN above every
number and equal to itself, as in sargable (Arrow's IEEE comparisons put it nowhere), and `x IN (...)` on one becomes
a chain of such equalities (Arrow's set lookup hashes -0.0 apart from 0.0). Everything else stays with sargable's
evaluator: functions, RLIKE (Python regular expressions, not RE2), LIKE on non-string values (their Hive text form),
and comparisons of values of two types (an `int` column against 3.5: sargable compares exact values).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sargable.errors import SargableError
from sargable.expr.evaluate import literal_value
from sargable.expr.nodes import (
    FLIPPED_OP,
    And,
    Between,
    Column,
    Comparison,
    Expr,
    In,
    IsNull,
    Like,
    Literal,
    Not,
    Or,
    and_,
    fold,
)
from sargable.skipping.table import arrow_type
from sargable.types import DataType

_ARROW_LIKE_ESCAPE = "\\"
_ARROW_OPS = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}
_NULL = pa.scalar(None, pa.bool_())
MAX_DEPTH = 128
"""Arrow expressions nest at most this deep: Arrow binds and simplifies them recursively, and a chain thousands deep
overflows its stack (a crash, not an error). A deeper predicate stays with sargable's evaluator, which is iterative.
AND and OR of many terms are balanced trees, so a long list adds only its logarithm."""


class NoArrowForm(SargableError):
    """A predicate with no exact Arrow expression (sargable's evaluator applies it instead)."""


def split_for_arrow(expr: Expr | None) -> tuple[pc.Expression | None, Expr | None]:
    """(the Arrow expression of the conjuncts of a bound predicate that have one, the AND of those that don't);
    None for an empty side. Rows where the whole predicate is TRUE are those where both are."""
    if expr is None:
        return None, None
    translated: list[_Translated] = []
    kept: list[Expr] = []
    for conjunct in expr.children() if isinstance(expr, And) else (expr,):
        try:
            translated.append(_predicate(fold(conjunct, _visit)))
        except NoArrowForm:
            kept.append(conjunct)
    arrow = _balanced(translated, lambda a, b: a & b, checked=False).expression if translated else None
    return arrow, (and_(*kept) if kept else None)


def to_arrow_expression(expr: Expr) -> pc.Expression:
    """The Arrow expression of a bound predicate, TRUE, FALSE and NULL exactly where sargable's evaluation is;
    `NoArrowForm` when some part has none (or it would nest deeper than `MAX_DEPTH`)."""
    return _predicate(fold(expr, _visit)).expression


class _Translated:
    """An Arrow expression made while folding, and how deep it nests."""

    __slots__ = ("depth", "expression")

    def __init__(self, expression: pc.Expression, depth: int, *, checked: bool = True) -> None:
        if checked and depth > MAX_DEPTH:
            raise NoArrowForm(f"an Arrow expression would nest more than {MAX_DEPTH} deep")
        self.expression = expression
        self.depth = depth


_LEAF_DEPTH = 4
"""The depth of a leaf predicate's expression at most (`if_else(is_null(x), NULL, is_in(x))`)."""


def _balanced(kids: list[_Translated], combine: Any, *, checked: bool = True) -> _Translated:
    """The AND or OR of translated predicates as a balanced tree (`checked`: refused past `MAX_DEPTH`)."""
    level = kids
    while len(level) > 1:
        paired = []
        for index in range(0, len(level) - 1, 2):
            a, b = level[index], level[index + 1]
            paired.append(_Translated(combine(a.expression, b.expression), max(a.depth, b.depth) + 1, checked=checked))
        level = paired + level[len(paired) * 2 :]
    return level[0]


class _Operand:
    """A column or a literal met while folding: what a predicate node above it is made of."""

    __slots__ = ("node",)

    def __init__(self, node: Column | Literal) -> None:
        self.node = node


class _Constant:
    """A column-free subtree met while folding: evaluated by sargable once, where a predicate needs its value."""

    __slots__ = ("node",)

    def __init__(self, node: Expr) -> None:
        self.node = node


def _is_constant(result: Any) -> bool:
    return isinstance(result, _Constant) or (isinstance(result, _Operand) and isinstance(result.node, Literal))


def _visit(node: Expr, kids: list[Any]) -> Any:
    if isinstance(node, (Column, Literal)):
        return _Operand(node)
    if all(_is_constant(kid) for kid in kids):
        return _Constant(node)
    if isinstance(node, And):
        return _balanced([_predicate(kid) for kid in kids], lambda a, b: a & b)
    if isinstance(node, Or):
        return _balanced([_predicate(kid) for kid in kids], lambda a, b: a | b)
    if isinstance(node, Not):
        child = _predicate(kids[0])
        return _Translated(~child.expression, child.depth + 1)
    if isinstance(node, In):
        member = _member(node.operand, node.values)
        return _Translated(~member.expression, member.depth + 1) if node.negated else member
    return _Translated(_leaf(node), _LEAF_DEPTH)


def _leaf(node: Expr) -> pc.Expression:
    """A comparison, BETWEEN, IS NULL or LIKE over a column."""
    if isinstance(node, Comparison):
        return _compare(node.op, node.left, node.right)
    if isinstance(node, Between):
        within = _compare(">=", node.operand, node.low) & _compare("<=", node.operand, node.high)
        return ~within if node.negated else within
    if isinstance(node, IsNull):
        field = _field(node.operand)
        return field.is_valid() if node.negated else field.is_null()
    if isinstance(node, Like):
        matched = pc.match_like(_string_field(node.operand), arrow_like_pattern(node.pattern, node.escape))
        return ~matched if node.negated else matched
    raise NoArrowForm(f"{type(node).__name__} {node} has no Arrow form")


def _constant(node: Expr) -> pc.Expression:
    """A column-free predicate, evaluated once by sargable (one it can't evaluate stays with the evaluator, which
    raises its error when a row is read)."""
    try:
        value = literal_value(node)
    except SargableError:
        raise NoArrowForm(f"{node} can't be evaluated once") from None
    if value is not None and type(value) is not bool:
        raise NoArrowForm(f"{node} is not a predicate")
    return pc.scalar(pa.scalar(value, pa.bool_()))


def _predicate(result: Any) -> _Translated:
    """A folded child as a predicate: a boolean column or literal is one."""
    if isinstance(result, _Translated):
        return result
    if isinstance(result, _Constant):
        return _Translated(_constant(result.node), 1)
    node = result.node
    if node.type is None or node.type.name not in ("boolean", "null"):
        raise NoArrowForm(f"{node} is not a predicate")
    if isinstance(node, Literal):
        return _Translated(pc.scalar(pa.scalar(node.value, pa.bool_())), 1)
    return _Translated(pc.field(node.name), 1)


def _column_type(node: Expr) -> DataType:
    if not isinstance(node, Column) or node.type is None:
        raise NoArrowForm(f"{node} is not a bound column")
    return node.type


def _field(node: Expr) -> pc.Expression:
    _column_type(node)
    assert isinstance(node, Column)
    return pc.field(node.name)


def _string_field(node: Expr) -> pc.Expression:
    if not _column_type(node).is_string:
        raise NoArrowForm(f"LIKE on {node}, not a string column, matches its text form")
    return _field(node)


def _arrow_type_of(dtype: DataType) -> pa.DataType:
    try:
        return arrow_type(dtype)
    except SargableError:
        raise NoArrowForm(f"no Arrow type for {dtype}") from None


def _scalar(literal: Literal, dtype: DataType) -> pa.Scalar:
    """A literal as an Arrow scalar of the column's type, when it is a value of that type (as binding makes it)."""
    if literal.type.name != "null" and _arrow_type_of(literal.type) != _arrow_type_of(dtype):
        raise NoArrowForm(f"{literal} ({literal.type}) against a {dtype} column compares exact values")
    try:
        return pa.scalar(literal.value, _arrow_type_of(dtype))
    except (pa.ArrowException, ValueError, OverflowError):  # a string with no UTF-8 form (a lone surrogate)
        raise NoArrowForm(f"{literal} has no Arrow value") from None


def _compare(op: str, left: Expr, right: Expr) -> pc.Expression:
    """`left op right` over columns and literals of one Arrow type."""
    if isinstance(left, Literal):
        left, right, op = right, left, FLIPPED_OP[op]
    dtype = _column_type(left)
    assert isinstance(left, Column)
    field = pc.field(left.name)
    if isinstance(right, Column):
        return _compare_columns(op, field, dtype, right)
    if not isinstance(right, Literal):
        raise NoArrowForm(f"{right} is neither a column nor a literal")
    value = _scalar(right, dtype)
    if value.as_py() is None:
        return field.is_null() if op == "<=>" else pc.scalar(_NULL)
    if op == "<=>":
        return pc.coalesce(_compare("=", left, right), pc.scalar(False))
    if dtype.is_floating:
        return _compare_floating(op, field, value)
    return _ARROW_OPS[op](field, pc.scalar(value))


def _compare_columns(op: str, field: pc.Expression, dtype: DataType, other: Column) -> pc.Expression:
    other_type = _column_type(other)
    if dtype.is_floating or _arrow_type_of(dtype) != _arrow_type_of(other_type):
        raise NoArrowForm(f"a comparison of columns of types {dtype} and {other_type}")
    right = pc.field(other.name)
    if op == "<=>":
        either = field.is_null() | right.is_null()
        return pc.if_else(either, field.is_null() & right.is_null(), field == right)
    return _ARROW_OPS[op](field, right)


def _compare_floating(op: str, field: pc.Expression, value: pa.Scalar) -> pc.Expression:
    """`field op value` for a float or double column, NaN above every number and equal to NaN."""
    nan = pc.is_nan(field)
    if value.as_py() != value.as_py():
        return {
            "=": nan,
            ">=": nan,
            "!=": ~nan,
            "<": ~nan,
            "<=": nan | ~nan,
            ">": nan & ~nan,
        }[op]
    compared = _ARROW_OPS[op](field, pc.scalar(value))
    return compared | nan if op in (">", ">=") else compared


def _member(operand: Expr, values: Iterable[Expr]) -> _Translated:
    """`operand IN (values)` (NULL when nothing matches and the list holds a NULL, or the operand is NULL)."""
    dtype = _column_type(operand)
    literals = list(values)
    if not all(isinstance(v, Literal) for v in literals):
        raise NoArrowForm("IN with values that are not literals")
    scalars = [_scalar(v, dtype) for v in literals]  # type: ignore[arg-type]
    present = [s for s in scalars if s.as_py() is not None]
    if not present:
        return _Translated(pc.scalar(_NULL), 1)
    if dtype.is_floating:
        assert isinstance(operand, Column)
        equal = [_Translated(_compare("=", operand, Literal(s.as_py(), dtype)), _LEAF_DEPTH) for s in present]
        if len(present) < len(scalars):
            equal.append(_Translated(pc.scalar(_NULL), 1))
        return _balanced(equal, lambda a, b: a | b)
    field = _field(operand)
    value_set = pa.array([s.as_py() for s in present], _arrow_type_of(dtype))
    found = pc.is_in(field, value_set=value_set, skip_nulls=True)
    if len(present) < len(scalars):
        return _Translated(pc.if_else(found, pc.scalar(True), pc.scalar(_NULL)), _LEAF_DEPTH)
    return _Translated(pc.if_else(field.is_null(), pc.scalar(_NULL), found), _LEAF_DEPTH)


def arrow_like_pattern(pattern: str, escape: str | None) -> str:
    """A sargable LIKE pattern (escape character `escape`, or none) as Arrow's `match_like` pattern (backslash)."""
    out: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if escape is not None and char == escape and index + 1 < len(pattern):
            index += 1
            out.append(_literal_like_char(pattern[index]))
        elif char in "%_":
            out.append(char)
        else:
            out.append(_literal_like_char(char))
        index += 1
    return "".join(out)


def _literal_like_char(char: str) -> str:
    """One character matching itself in an Arrow LIKE pattern."""
    return _ARROW_LIKE_ESCAPE + char if char in ("%", "_", _ARROW_LIKE_ESCAPE) else char
