"""Printers: the canonical filter text (`render`, which `parse` reads back to the same tree) and SQL for engines.

One `Generator` walks the tree with an explicit stack, appending small strings to one list that is joined once, so
printing is iterative and linear however deep or wide the tree. Subclasses per target (as in sqlglot) change only
what differs: identifier and string quoting, type names, `!=`/`<=>` spelling, LIKE's escape and regular expressions.

Parentheses are minimal but always correct: NOT binds tighter than AND, AND tighter than OR, and every predicate
tighter than NOT. A literal whose type is not the one `parse` would infer from its text is printed as
`CAST(<text> AS <type>)`, so bound trees keep their literal types (`Literal(3, INT)` is `CAST(3 AS INT)`).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Collection, Sequence
from decimal import Decimal
from typing import Any

from sargable.errors import SargableError, TypeCoercionError
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
    set_printer,
)
from sargable.expr.tokens import BARE_IDENTIFIER, KEYWORDS
from sargable.types import (
    BOOLEAN,
    DATE,
    DOUBLE,
    NULL,
    STRING,
    TIMESTAMP,
    DataType,
    format_value,
    infer_type,
    split_path,
)

OR_PRECEDENCE, AND_PRECEDENCE, NOT_PRECEDENCE, PREDICATE_PRECEDENCE, OPERAND_PRECEDENCE = 1, 2, 3, 4, 5

Piece = tuple[Any, int]
"""An item of the print stack: a string to emit, or a node with the least precedence it may have unparenthesized."""


def _natural(value: Any) -> tuple[str, DataType | None] | None:
    """The plain literal text for a Python value and the type the parser gives that text (None if it has none)."""
    if value is None:
        return "NULL", NULL
    if isinstance(value, bool):
        return ("TRUE" if value else "FALSE"), BOOLEAN
    if isinstance(value, int):
        try:
            return str(value), _inferred(value)
        except ValueError:  # past Python's int-to-text digit limit; no engine has such an integer type
            raise SargableError(f"cannot render an integer literal of {value.bit_length()} bits") from None
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        text = repr(value).upper()
        return (text if "E" in text else text + "E0"), DOUBLE
    if isinstance(value, Decimal):
        if not value.is_finite():
            return None
        text = format(value, "f")
        return text, (_inferred(value) if "." in text else None)  # without a point, the text reads as an int
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP '{format_value(value, TIMESTAMP)}'", TIMESTAMP
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'", DATE
    return None


def _inferred(value: Any) -> DataType | None:
    try:
        return infer_type(value)
    except TypeCoercionError:
        return None


def _value_text(value: Any, dtype: DataType) -> str:
    """A value's Hive string form for a CAST from text, whatever Python type a hand-built literal holds."""
    try:
        return format_value(value, dtype)
    except (AttributeError, TypeError, ValueError):
        return str(value)


class Generator:
    """The canonical filter text: the syntax `parse` reads."""

    NOT_EQUAL = "!="
    NULL_SAFE_EQUAL = "<=>"

    def __init__(self) -> None:
        self._handlers: dict[type, Callable[[Any], tuple[int, Any]]] = {
            Column: self.column_sql,
            Literal: self.literal_sql,
            Func: self.func_sql,
            Comparison: self.comparison_sql,
            In: self.in_sql,
            Between: self.between_sql,
            IsNull: self.is_null_sql,
            Like: self.like_sql,
            Regex: self.regex_sql,
            Not: self.not_sql,
            And: self.and_sql,
            Or: self.or_sql,
        }

    def generate(self, expr: Expr) -> str:
        """The text of `expr`, built with an explicit stack into one list of parts."""
        if not isinstance(expr, Expr):
            raise SargableError(f"can only render an Expr, got {type(expr).__name__}")
        parts: list[str] = []
        stack: list[Piece] = [(expr, 0)]
        handlers = self._handlers
        while stack:
            item, need = stack.pop()
            if type(item) is str:
                parts.append(item)
                continue
            handler = handlers.get(type(item))
            if handler is None:
                raise SargableError(f"cannot render a {type(item).__name__} node")
            precedence, body = handler(item)
            if type(body) is str:
                parts.append(body if precedence >= need else f"({body})")
                continue
            if precedence < need:
                parts.append("(")
                stack.append((")", 0))
            stack.extend(reversed(body))
        return "".join(parts)

    # -- lexical ------------------------------------------------------------------------------------------------

    def identifier(self, name: str) -> str:
        if BARE_IDENTIFIER.fullmatch(name) and name.upper() not in KEYWORDS:
            return name
        return "`" + name.replace("`", "``") + "`"

    def function_name(self, name: str) -> str:
        return self.identifier(name)

    def string(self, value: str) -> str:
        return "'" + value.replace("'", "''") + "'"

    def type_name(self, dtype: DataType) -> str:
        return str(dtype).upper()

    def regex(self, pattern: str) -> str:
        return pattern

    # -- leaves ---------------------------------------------------------------------------------------------------

    def column_sql(self, node: Column) -> tuple[int, str]:
        return OPERAND_PRECEDENCE, self.identifier(node.name)

    def literal_sql(self, node: Literal) -> tuple[int, str]:
        value, dtype = node.value, node.type
        if isinstance(value, str):
            text = self.string(value)
            natural: tuple[str, DataType | None] | None = (text, STRING)
        else:
            natural = _natural(value)
        if natural is not None and self.plain_literal_ok(value, natural[1], dtype):
            return OPERAND_PRECEDENCE, natural[0]
        inner = natural[0] if natural is not None else self.string(_value_text(value, dtype))
        return OPERAND_PRECEDENCE, f"CAST({inner} AS {self.type_name(dtype)})"

    def plain_literal_ok(self, value: Any, natural_type: DataType | None, dtype: DataType) -> bool:
        """Whether a literal prints as its plain text: here only if the parser gives the text exactly its type."""
        return natural_type == dtype

    # -- predicates -----------------------------------------------------------------------------------------------

    def func_sql(self, node: Func) -> tuple[int, list[Piece]]:
        arguments = _joined(node.args, ", ", OPERAND_PRECEDENCE)
        return OPERAND_PRECEDENCE, [(self.function_name(node.name) + "(", 0), *arguments, (")", 0)]

    def comparison_sql(self, node: Comparison) -> tuple[int, list[Piece]]:
        op = {"!=": self.NOT_EQUAL, "<=>": self.NULL_SAFE_EQUAL}.get(node.op, node.op)
        return PREDICATE_PRECEDENCE, [(node.left, OPERAND_PRECEDENCE), (f" {op} ", 0), (node.right, OPERAND_PRECEDENCE)]

    def in_sql(self, node: In) -> tuple[int, list[Piece]]:
        keyword = " NOT IN (" if node.negated else " IN ("
        values = _joined(node.values, ", ", OPERAND_PRECEDENCE)
        return PREDICATE_PRECEDENCE, [(node.operand, OPERAND_PRECEDENCE), (keyword, 0), *values, (")", 0)]

    def between_sql(self, node: Between) -> tuple[int, list[Piece]]:
        keyword = " NOT BETWEEN " if node.negated else " BETWEEN "
        return PREDICATE_PRECEDENCE, [
            (node.operand, OPERAND_PRECEDENCE),
            (keyword, 0),
            (node.low, OPERAND_PRECEDENCE),
            (" AND ", 0),
            (node.high, OPERAND_PRECEDENCE),
        ]

    def is_null_sql(self, node: IsNull) -> tuple[int, list[Piece]]:
        text = " IS NOT NULL" if node.negated else " IS NULL"
        return PREDICATE_PRECEDENCE, [(node.operand, OPERAND_PRECEDENCE), (text, 0)]

    def like_sql(self, node: Like) -> tuple[int, list[Piece]]:
        text = (" NOT LIKE " if node.negated else " LIKE ") + self.string(node.pattern)
        escape = self.like_escape(node)
        if escape is not None:
            text += " ESCAPE " + self.string(escape)
        return PREDICATE_PRECEDENCE, [(node.operand, OPERAND_PRECEDENCE), (text, 0)]

    def like_escape(self, node: Like) -> str | None:
        return node.escape

    def regex_sql(self, node: Regex) -> tuple[int, list[Piece]]:
        text = (" NOT RLIKE " if node.negated else " RLIKE ") + self.string(self.regex(node.pattern))
        return PREDICATE_PRECEDENCE, [(node.operand, OPERAND_PRECEDENCE), (text, 0)]

    # -- logic ----------------------------------------------------------------------------------------------------

    def not_sql(self, node: Not) -> tuple[int, list[Piece]]:
        return NOT_PRECEDENCE, [("NOT ", 0), (node.child, NOT_PRECEDENCE)]

    def and_sql(self, node: And) -> tuple[int, list[Piece]]:
        return AND_PRECEDENCE, _joined(node.children_, " AND ", NOT_PRECEDENCE)

    def or_sql(self, node: Or) -> tuple[int, list[Piece]]:
        return OR_PRECEDENCE, _joined(node.children_, " OR ", AND_PRECEDENCE)


def _joined(children: Sequence[Expr], separator: str, need: int) -> list[Piece]:
    """The children with `separator` between them, each needing precedence `need` (else parenthesized)."""
    body: list[Piece] = []
    for index, child in enumerate(children):
        if index:
            body.append((separator, 0))
        body.append((child, need))
    return body


def _java_regex(pattern: str) -> str:
    """A Python pattern for Java or RE2: Python's `\\Z` (very end) is `\\z` there; everything else is kept."""
    if "\\Z" not in pattern:
        return pattern
    out: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            pair = pattern[index : index + 2]
            out.append("\\z" if pair == "\\Z" else pair)
            index += 2
        else:
            out.append(char)
            index += 1
    return "".join(out)


class SqlGenerator(Generator):
    """Shared by the engine targets: identifiers always quoted, literals plain wherever the engine coerces them;
    the columns named in `fields` are struct fields, written as their path (`device`.`os`)."""

    NOT_EQUAL = "<>"

    def __init__(self, fields: Collection[str] = ()) -> None:
        super().__init__()
        self.fields = frozenset(fields)

    def quoted(self, name: str) -> str:
        """One name, quoted as the engine quotes it."""
        raise NotImplementedError

    def identifier(self, name: str) -> str:
        if name in self.fields:
            return ".".join(self.quoted(part) for part in split_path(name))
        return self.quoted(name)

    def plain_literal_ok(self, value: Any, natural_type: DataType | None, dtype: DataType) -> bool:
        if natural_type is None or value is None:
            return natural_type == dtype
        return natural_type == dtype or (
            (natural_type.is_integral and dtype.is_integral)
            or (natural_type.is_string and dtype.is_string)
            or (natural_type.name == "decimal" and dtype.name == "decimal")
        )

    def function_name(self, name: str) -> str:
        return name if BARE_IDENTIFIER.fullmatch(name) else self.identifier(name)

    def regex(self, pattern: str) -> str:
        return _java_regex(pattern)


class SparkGenerator(SqlGenerator):
    """Spark SQL: backquoted names, backslash escapes in strings, `<=>`, Java regular expressions for RLIKE."""

    def quoted(self, name: str) -> str:
        return "`" + name.replace("`", "``") + "`"

    def string(self, value: str) -> str:
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"

    def like_escape(self, node: Like) -> str | None:
        """Spark's LIKE escapes with a backslash by default, so a pattern without ESCAPE gets an unused character."""
        if node.escape is not None or "\\" not in node.pattern:
            return node.escape
        used = set(node.pattern)
        code = 0x21
        while chr(code) in used or chr(code) in "%_'\\":
            code += 1
        return chr(code)


class DuckDBGenerator(SqlGenerator):
    """DuckDB: double-quoted names, `''` in strings, `IS NOT DISTINCT FROM`, RE2 through `regexp_matches`."""

    NULL_SAFE_EQUAL = "IS NOT DISTINCT FROM"

    def quoted(self, name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    def type_name(self, dtype: DataType) -> str:
        if dtype.is_string:
            return "VARCHAR"
        return super().type_name(dtype)

    def regex_sql(self, node: Regex) -> tuple[int, list[Piece]]:
        pattern = self.string(self.regex(node.pattern))
        body: list[Piece] = [("regexp_matches(", 0), (node.operand, 0), (f", {pattern})", 0)]
        if node.negated:
            return NOT_PRECEDENCE, [("NOT ", 0), *body]
        return PREDICATE_PRECEDENCE, body


_CANONICAL = Generator()
SQL_DIALECTS: dict[str, Generator] = {"spark": SparkGenerator(), "duckdb": DuckDBGenerator()}


def render(expr: Expr) -> str:
    """Canonical filter text for `expr`: `parse(render(e)) == e`."""
    return _CANONICAL.generate(expr)


set_printer(render)


def render_sql(expr: Expr, dialect: str = "spark", *, fields: Collection[str] = ()) -> str:
    """SQL text of `expr` for an engine (`"spark"` or `"duckdb"`), e.g. the residual filter handed to Spark; the
    columns named in `fields` are struct fields, written as paths (`device.os` as `device`.`os`)."""
    generator = SQL_DIALECTS.get(dialect)
    if generator is None:
        raise SargableError(f"unknown SQL dialect {dialect!r}; expected one of {', '.join(SQL_DIALECTS)}")
    if fields:
        generator = type(generator)(fields)
    return generator.generate(expr)
