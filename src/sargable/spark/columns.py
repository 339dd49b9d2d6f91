"""pyspark `Column` filters -> sargable expressions.

A classic (non-Connect) Column is a tree of JVM `ColumnNode`s; this walks it through py4j, iteratively, and
translates columns, literals, comparisons, AND/OR/NOT, IN, IS [NOT] NULL, LIKE, RLIKE and
startswith/endswith/contains, and `F.expr("...")` text through the filter parser. Anything else (functions,
casts, column-to-column arithmetic) can't be planned by sargable: `split_column` hands such conjuncts back as
Columns for Spark to apply.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sargable.errors import SargableError
from sargable.expr import Comparison, Expr, In, IsNull, Like, Literal, Not, Regex, and_, col, lit, or_
from sargable.types import parse_date, parse_timestamp

_COMPARISONS = {"=": "=", "==": "=", "<=>": "<=>", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "!=": "!=", "<>": "!="}
_LIKE_ESCAPE = "\\"


class UntranslatableColumn(SargableError):
    """A Column that sargable can't turn into an expression (Spark applies it instead)."""


def _escape_like(text: str) -> str:
    return "".join(_LIKE_ESCAPE + ch if ch in "%_\\" else ch for ch in text)


def _literal_value(node: Any) -> Any:
    """The Python value of a JVM Literal (py4j converts primitives; dates and timestamps come as Java objects)."""
    value = node.value()
    if value is None or isinstance(value, (bool, int, float, str, Decimal)):
        return value
    class_name = value.getClass().getName() if hasattr(value, "getClass") else type(value).__name__
    text = str(value.toString())
    if class_name in ("java.sql.Date", "java.time.LocalDate"):
        return parse_date(text)
    if class_name in ("java.sql.Timestamp", "java.time.LocalDateTime"):
        return parse_timestamp(text.replace("T", " "))
    raise UntranslatableColumn(f"literal of Java type {class_name} ({text})")


def _leaf(node: Any) -> Expr:
    kind = node.getClass().getSimpleName()
    if kind == "UnresolvedAttribute":
        seq = node.nameParts()
        parts = [str(seq.apply(i)) for i in range(seq.size())]
        if len(parts) != 1:
            raise UntranslatableColumn(f"nested or qualified column {'.'.join(parts)}")
        return col(parts[0])
    if kind == "Literal":
        return lit(_literal_value(node))
    if kind == "SqlExpression":
        from sargable.expr import parse

        try:
            return parse(str(node.expression()))
        except SargableError as exc:
            raise UntranslatableColumn(f"expression {node.expression()!r}: {exc}") from None
    raise UntranslatableColumn(f"{kind} {node.sql()}")


def _literal_text(expr: Expr, what: str) -> str:
    if not isinstance(expr, Literal) or not isinstance(expr.value, str):
        raise UntranslatableColumn(f"{what} must be a string literal")
    return expr.value


def _apply(name: str, args: list[Expr]) -> Expr:
    """Build the node for Spark function `name` over already-translated arguments."""
    lowered = name.lower()
    if name in _COMPARISONS and len(args) == 2:
        return Comparison(_COMPARISONS[name], args[0], args[1])
    if lowered == "and" and len(args) == 2:
        return and_(*args)
    if lowered == "or" and len(args) == 2:
        return or_(*args)
    if lowered in ("!", "not") and len(args) == 1:
        return Not(args[0])
    if lowered == "in" and len(args) >= 2:
        if not all(isinstance(arg, Literal) for arg in args[1:]):
            raise UntranslatableColumn("IN with non-literal values")
        return In(args[0], tuple(args[1:]))
    if lowered == "isnull" and len(args) == 1:
        return IsNull(args[0])
    if lowered == "isnotnull" and len(args) == 1:
        return IsNull(args[0], negated=True)
    if lowered == "like" and len(args) in (2, 3):
        escape = _literal_text(args[2], "LIKE escape") if len(args) == 3 else _LIKE_ESCAPE
        return Like(args[0], _literal_text(args[1], "LIKE pattern"), escape)
    if lowered in ("rlike", "regexp", "regexp_like") and len(args) == 2:
        return Regex(args[0], _literal_text(args[1], "RLIKE pattern"))
    if lowered == "startswith" and len(args) == 2:
        return Like(args[0], _escape_like(_literal_text(args[1], "startswith prefix")) + "%", _LIKE_ESCAPE)
    if lowered == "endswith" and len(args) == 2:
        return Like(args[0], "%" + _escape_like(_literal_text(args[1], "endswith suffix")), _LIKE_ESCAPE)
    if lowered == "contains" and len(args) == 2:
        return Like(args[0], "%" + _escape_like(_literal_text(args[1], "contains text")) + "%", _LIKE_ESCAPE)
    raise UntranslatableColumn(f"function {name}")


def _translate_node(root: Any) -> Expr:
    """Translate a JVM ColumnNode tree bottom-up with an explicit stack (no recursion)."""
    results: list[Expr] = []
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if node.getClass().getSimpleName() != "UnresolvedFunction":
            results.append(_leaf(node))
            continue
        arguments = node.arguments()
        count = arguments.size()
        if expanded:
            args = results[len(results) - count :] if count else []
            del results[len(results) - count :]
            if node.isDistinct() or node.isUserDefinedFunction():
                raise UntranslatableColumn(f"function {node.functionName()}")
            results.append(_apply(str(node.functionName()), args))
        else:
            stack.append((node, True))
            stack.extend((arguments.apply(i), False) for i in reversed(range(count)))
    return results[0]


def _jvm_node(column: Any) -> Any:
    jc = getattr(column, "_jc", None)
    if jc is None:
        raise UntranslatableColumn("only classic (non-Connect) pyspark Columns can be translated")
    return jc.node()


def from_column(column: Any) -> Expr:
    """The sargable expression of a pyspark Column; `UntranslatableColumn` if any part has no translation."""
    return _translate_node(_jvm_node(column))


def split_column(column: Any) -> tuple[Expr | None, list[Any]]:
    """Split a Column filter into (translated conjuncts as one expression, untranslatable conjuncts as Columns)."""
    from pyspark.sql.classic.column import Column as ClassicColumn

    try:
        root = _jvm_node(column)
    except UntranslatableColumn:
        return None, [column]
    conjuncts: list[Any] = []
    pending = [root]
    while pending:
        node = pending.pop()
        if node.getClass().getSimpleName() == "UnresolvedFunction" and str(node.functionName()).lower() == "and":
            arguments = node.arguments()
            pending.extend(arguments.apply(i) for i in reversed(range(arguments.size())))
        else:
            conjuncts.append(node)
    translated: list[Expr] = []
    leftover: list[Any] = []
    for node in conjuncts:
        try:
            translated.append(_translate_node(node))
        except UntranslatableColumn:
            leftover.append(node)
    columns = []
    if leftover:
        from pyspark import SparkContext

        sc = SparkContext._active_spark_context
        assert sc is not None and sc._jvm is not None
        columns = [ClassicColumn(sc._jvm.org.apache.spark.sql.Column(node)) for node in leftover]
    return (and_(*translated) if translated else None), columns
