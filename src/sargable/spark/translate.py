"""Spark filters -> sargable expressions: the one translator, for classic and Connect `Column`s and the data source's
pushed `Filter`s, and the `where` argument of the Spark entry points.

Three kinds of trees, one walk: a classic Column is a tree of JVM `ColumnNode`s, walked through py4j; a Connect
Column carries its expression tree on the client (`pyspark.sql.connect.expressions`); a data source `Filter` is a
small tree of `pyspark.sql.datasource` records. Each is read as function calls over leaves (a `_Dialect`) and walked
iteratively by `_translate`, which builds every node in one place (`_apply`): columns, literals, comparisons,
AND/OR/NOT, IN, IS [NOT] NULL, LIKE, RLIKE and startswith/endswith/contains, and `F.expr("...")` text through the
filter parser. Anything else (functions, casts, column-to-column arithmetic) can't be planned by sargable:
`split_column` hands such conjuncts back as Columns for Spark to apply.

A `TimestampType` literal is an instant (pyspark makes one from a naive `datetime` in the Python process's local
zone), and Spark compares it with a `timestamp` column's wall-clock values read in the session time zone; given
`time_zone`, such a literal becomes the wall-clock time of its instant in that zone. `TimestampNTZType` literals
are wall-clock times already and are kept as written.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pyspark.sql import datasource as ds

from sargable.errors import SargableError
from sargable.expr import Comparison, Expr, In, IsNull, Like, Literal, Not, Regex, and_, col, lit, or_, parse
from sargable.types import parse_date, parse_timestamp

_COMPARISONS = {"=": "=", "==": "=", "<=>": "<=>", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "!=": "!=", "<>": "!="}
_LIKE_ESCAPE = "\\"
_CONNECT_COLUMN_MODULE = "pyspark.sql.connect.column"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_OFFSET = re.compile(r"(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?")
_JAVA_SHORT_IDS = {
    "ACT": "Australia/Darwin", "AET": "Australia/Sydney", "AGT": "America/Argentina/Buenos_Aires",
    "ART": "Africa/Cairo", "AST": "America/Anchorage", "BET": "America/Sao_Paulo", "BST": "Asia/Dhaka",
    "CAT": "Africa/Harare", "CNT": "America/St_Johns", "CST": "America/Chicago", "CTT": "Asia/Shanghai",
    "EAT": "Africa/Addis_Ababa", "ECT": "Europe/Paris", "IET": "America/Indiana/Indianapolis", "IST": "Asia/Kolkata",
    "JST": "Asia/Tokyo", "MIT": "Pacific/Apia", "NET": "Asia/Yerevan", "NST": "Pacific/Auckland",
    "PLT": "Asia/Karachi", "PNT": "America/Phoenix", "PRT": "America/Puerto_Rico", "PST": "America/Los_Angeles",
    "SST": "Pacific/Guadalcanal", "VST": "Asia/Ho_Chi_Minh", "EST": "-05:00", "MST": "-07:00", "HST": "-10:00",
}  # fmt: skip
"""Java's `ZoneId.SHORT_IDS`, which Spark accepts as session time zones."""


class Untranslatable(SargableError):
    """A Column or Filter that sargable can't turn into an expression (Spark applies it instead)."""


def _escape_like(text: str) -> str:
    return "".join(_LIKE_ESCAPE + ch if ch in "%_\\" else ch for ch in text)


def _parse_sql(text: str) -> Expr:
    """`F.expr(text)`: the filter parser's reading of the text; refused when the text holds a backslash, which Spark
    SQL reads as an escape in a string (`'a\\tb'` holds a tab) and the filter parser as a character."""
    if "\\" in text:
        raise Untranslatable(f"expression {text!r}: a backslash (an escape in Spark SQL, a character in a filter)")
    try:
        return parse(text)
    except SargableError as exc:
        raise Untranslatable(f"expression {text!r}: {exc}") from None


def _column(parts: list[str]) -> Expr:
    """The column named by an identifier's parts: one non-empty part (sargable has no nested columns)."""
    if len(parts) != 1:
        raise Untranslatable(f"nested or qualified column {'.'.join(parts)}")
    if not parts[0]:
        raise Untranslatable("empty column name")
    return col(parts[0])


def _literal_text(expr: Expr, what: str) -> str:
    if not isinstance(expr, Literal) or not isinstance(expr.value, str):
        raise Untranslatable(f"{what} must be a string literal")
    return expr.value


@functools.cache
def _zone(name: str) -> dt.tzinfo:
    """The zone of a Spark session time zone id: a region (`Asia/Tokyo`), an offset (`+09:00`, `GMT+9`) or `Z`."""
    name = _JAVA_SHORT_IDS.get(name, name)
    if name in ("Z", "UTC", "GMT", "UT"):
        return dt.UTC
    match = _OFFSET.fullmatch(name)
    if match:
        sign, hours, minutes, seconds = match.groups()
        offset = dt.timedelta(hours=int(hours), minutes=int(minutes or 0), seconds=int(seconds or 0))
        if offset <= dt.timedelta(hours=18):
            return dt.timezone(-offset if sign == "-" else offset)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise Untranslatable(f"unknown time zone {name!r}") from None


def _wall_clock(micros: int, time_zone: str) -> dt.datetime:
    """The naive wall-clock time in `time_zone` of an instant (microseconds since the epoch).

    Spark reads a wall-clock time in the zone at its earlier offset when it occurs twice (clocks set back); an
    instant in the later occurrence has no wall-clock time that Spark would read back as it, so it stays Spark's.
    """
    zone = _zone(time_zone)
    try:
        instant = _EPOCH + dt.timedelta(microseconds=micros)
        wall = instant.astimezone(zone).replace(tzinfo=None, fold=0)
        read_back = wall.replace(tzinfo=zone).astimezone(dt.UTC)
    except OverflowError:
        raise Untranslatable(f"timestamp of {micros} microseconds since 1970 out of range") from None
    if read_back != instant:
        raise Untranslatable(f"timestamp {wall} occurs twice in {time_zone} (clocks set back)")
    return wall


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
            raise Untranslatable("IN with non-literal values")
        return In(args[0], tuple(args[1:]))
    if lowered == "between" and len(args) == 3:
        return and_(Comparison(">=", args[0], args[1]), Comparison("<=", args[0], args[2]))
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
    raise Untranslatable(f"function {name}")


class _Dialect(NamedTuple):
    """How to read one kind of Column's expression tree, and how to hand a node back to Spark as a Column."""

    call: Callable[[Any], tuple[str, list[Any]] | None]
    """A function call node's (name, argument nodes); None for a leaf."""
    leaf: Callable[[Any, str | None], Expr]
    """A leaf node's expression, timestamp literals read in a time zone (None: the zone that made them)."""
    column: Callable[[list[Any]], list[Any]]
    """Columns of some nodes of this tree (the conjuncts Spark applies)."""


def _translate(root: Any, dialect: _Dialect, time_zone: str | None) -> Expr:
    """Translate an expression tree bottom-up with an explicit stack (no recursion)."""
    results: list[Expr] = []
    stack: list[tuple[Any, tuple[str, int] | None]] = [(root, None)]
    while stack:
        node, pending_call = stack.pop()
        if pending_call is not None:
            name, count = pending_call
            args = results[len(results) - count :]
            del results[len(results) - count :]
            results.append(_apply(name, args))
            continue
        call = dialect.call(node)
        if call is None:
            results.append(dialect.leaf(node, time_zone))
            continue
        name, arguments = call
        stack.append((node, (name, len(arguments))))
        stack.extend((argument, None) for argument in reversed(arguments))
    return results[0]


# Classic Columns: JVM ColumnNodes through py4j.


def _classic_value(node: Any, time_zone: str | None) -> Any:
    """The Python value of a JVM Literal (py4j converts primitives; dates and timestamps come as Java objects).

    A `java.sql.Timestamp` or `java.time.Instant` is an instant: its microseconds are taken as Spark takes them
    (`DateTimeUtils`), then read in `time_zone`; with None, a Timestamp is read in the JVM's default zone.
    """
    value = node.value()
    if value is None or isinstance(value, (bool, int, float, str, Decimal)):
        return value
    if not hasattr(value, "getClass"):
        raise Untranslatable(f"literal of Python type {type(value).__name__} ({value!r})")
    class_name = value.getClass().getName()
    text = str(value.toString())
    if class_name in ("java.sql.Date", "java.time.LocalDate"):
        return parse_date(text)
    if class_name in ("java.sql.Timestamp", "java.time.Instant") and time_zone is not None:
        from pyspark import SparkContext

        assert SparkContext._jvm is not None
        utils = SparkContext._jvm.org.apache.spark.sql.catalyst.util.DateTimeUtils
        micros = utils.fromJavaTimestamp(value) if class_name == "java.sql.Timestamp" else utils.instantToMicros(value)
        return _wall_clock(int(micros), time_zone)
    if class_name in ("java.sql.Timestamp", "java.time.LocalDateTime"):
        return parse_timestamp(text.replace("T", " "))
    raise Untranslatable(f"literal of Java type {class_name} ({text})")


def _classic_leaf(node: Any, time_zone: str | None) -> Expr:
    kind = node.getClass().getSimpleName()
    if kind == "UnresolvedAttribute":
        seq = node.nameParts()
        return _column([str(seq.apply(i)) for i in range(seq.size())])
    if kind == "Literal":
        return lit(_classic_value(node, time_zone))
    if kind == "SqlExpression":
        return _parse_sql(str(node.expression()))
    raise Untranslatable(f"{kind} {node.sql()}")


def _classic_call(node: Any) -> tuple[str, list[Any]] | None:
    if node.getClass().getSimpleName() != "UnresolvedFunction":
        return None
    if node.isDistinct() or node.isUserDefinedFunction():
        raise Untranslatable(f"function {node.functionName()}")
    arguments = node.arguments()
    return str(node.functionName()), [arguments.apply(i) for i in range(arguments.size())]


def _classic_columns(nodes: list[Any]) -> list[Any]:
    from pyspark import SparkContext
    from pyspark.sql.classic.column import Column as ClassicColumn

    sc = SparkContext._active_spark_context
    assert sc is not None and sc._jvm is not None
    return [ClassicColumn(sc._jvm.org.apache.spark.sql.Column(node)) for node in nodes]


_CLASSIC = _Dialect(_classic_call, _classic_leaf, _classic_columns)


# Spark Connect Columns: the client's expression tree (classes of pyspark.sql.connect.expressions, registered
# with the dispatchers below when the first Connect Column shows up: importing them needs the Connect extras).


@functools.singledispatch
def _connect_leaf(node: Any, time_zone: str | None) -> Expr:
    raise Untranslatable(f"{type(node).__name__} {node!r}")


@functools.singledispatch
def _connect_call(node: Any) -> tuple[str, list[Any]] | None:
    return None


def _name_parts(identifier: str) -> list[str]:
    """The parts of a column identifier as Spark splits it: `a.b` is two parts, backquotes quote (`` escapes `)."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    i = 0
    while i < len(identifier):
        ch = identifier[i]
        if quoted:
            if ch == "`" and identifier[i + 1 : i + 2] == "`":
                current.append("`")
                i += 1
            elif ch == "`":
                quoted = False
                if identifier[i + 1 : i + 2] not in ("", "."):
                    raise Untranslatable(f"malformed column name {identifier!r}")
            else:
                current.append(ch)
        elif ch == "`" and not current:
            quoted = True
        elif ch == "`":
            raise Untranslatable(f"malformed column name {identifier!r}")
        elif ch == ".":
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    if quoted:
        raise Untranslatable(f"malformed column name {identifier!r}")
    parts.append("".join(current))
    return parts


def _connect_reference(node: Any, time_zone: str | None) -> Expr:
    if node._is_metadata_column:
        raise Untranslatable(f"metadata column {node._unparsed_identifier}")
    return _column(_name_parts(node._unparsed_identifier))


def _connect_value(node: Any, time_zone: str | None) -> Any:
    """The Python value of a Connect literal (dates and timestamps are held in Spark's form).

    A `TimestampType` literal holds its instant's microseconds, read in `time_zone`; with None, in this process's
    local zone (as pyspark made them from a naive datetime).
    """
    from pyspark.sql import types as T

    dtype, value = node._dataType, node._value
    if value is None:
        return None
    if isinstance(dtype, T.TimestampType) and time_zone is not None:
        return _wall_clock(value, time_zone)
    if isinstance(dtype, (T.DateType, T.TimestampType, T.TimestampNTZType)):
        return dtype.fromInternal(value)
    scalar = (T.BooleanType, T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType)
    if isinstance(dtype, (*scalar, T.DecimalType, T.StringType)):
        return value
    raise Untranslatable(f"literal of type {dtype.simpleString()} ({node!r})")


def _connect_literal(node: Any, time_zone: str | None) -> Expr:
    return lit(_connect_value(node, time_zone))


def _connect_sql(node: Any, time_zone: str | None) -> Expr:
    return _parse_sql(node._expr)


def _connect_function(node: Any) -> tuple[str, list[Any]]:
    if node._is_distinct:
        raise Untranslatable(f"function {node._name}")
    return node._name, list(node._args)


def _connect_columns(nodes: list[Any]) -> list[Any]:
    from pyspark.sql.connect.column import Column as ConnectColumn

    return [ConnectColumn(node) for node in nodes]


@functools.cache
def _connect_dialect() -> _Dialect:
    """The Connect dialect, its expression classes registered (first call only)."""
    from pyspark.sql.connect import expressions as E

    _connect_leaf.register(E.ColumnReference, _connect_reference)
    _connect_leaf.register(E.LiteralExpression, _connect_literal)
    _connect_leaf.register(E.SQLExpression, _connect_sql)
    _connect_call.register(E.UnresolvedFunction, _connect_function)
    return _Dialect(_connect_call, _connect_leaf, _connect_columns)


# Data source Filters: `pyspark.sql.datasource` records. A filter is a call over its attribute (a column path) and
# its value(s), which become leaves.


@dataclass(frozen=True)
class _Attribute:
    parts: tuple[str, ...]


@dataclass(frozen=True)
class _Value:
    value: Any


_FILTER_COMPARISONS = {
    ds.EqualTo: "=",
    ds.EqualNullSafe: "<=>",
    ds.GreaterThan: ">",
    ds.GreaterThanOrEqual: ">=",
    ds.LessThan: "<",
    ds.LessThanOrEqual: "<=",
}
_FILTER_STRINGS = {ds.StringStartsWith: "startswith", ds.StringEndsWith: "endswith", ds.StringContains: "contains"}


def _filter_call(node: Any) -> tuple[str, list[Any]] | None:
    kind = type(node)
    if kind is _Attribute or kind is _Value:
        return None
    if kind is ds.Not:
        return "not", [node.child]
    if kind in _FILTER_COMPARISONS:
        return _FILTER_COMPARISONS[kind], [_Attribute(node.attribute), _Value(node.value)]
    if kind is ds.In:
        if not node.value:
            raise Untranslatable("an empty IN list")
        return "in", [_Attribute(node.attribute), *(_Value(v) for v in node.value)]
    if kind is ds.IsNull or kind is ds.IsNotNull:
        return ("isnull" if kind is ds.IsNull else "isnotnull"), [_Attribute(node.attribute)]
    if kind in _FILTER_STRINGS:
        return _FILTER_STRINGS[kind], [_Attribute(node.attribute), _Value(node.value)]
    raise Untranslatable(f"filter {kind.__name__}")


def _filter_leaf(node: Any, time_zone: str | None) -> Expr:
    if type(node) is _Attribute:
        return _column(list(node.parts))
    if isinstance(node.value, (list, tuple, dict, bytes, bytearray)):
        raise Untranslatable(f"literal {node.value!r}")
    return lit(node.value)


def _no_columns(nodes: list[Any]) -> list[Any]:
    raise Untranslatable("only a Column's conjuncts have a Column form (not a data source filter's or Catalyst's)")


_FILTERS = _Dialect(_filter_call, _filter_leaf, _no_columns)


def from_filter(spark_filter: Any) -> Expr:
    """The sargable expression of one `Filter` Spark pushes to the data source (`Untranslatable` if it has none)."""
    return _translate(spark_filter, _FILTERS, None)


# Catalyst expressions of an analyzed plan as Spark writes them in JSON (`TreeNode.toJSON`: the nodes in pre-order,
# one py4j call for a whole condition; `sargable.spark.driver_keys`): the comparisons, AND / OR / NOT, IN, BETWEEN
# and NULL tests over columns and literals; a cast only of a literal to a type that holds its value as written, or
# of an integer column to an integer type at least as wide (the same values).

_CATALYST_CALLS = {
    "And": "and", "Or": "or", "Not": "not", "EqualTo": "=", "EqualNullSafe": "<=>", "LessThan": "<",
    "LessThanOrEqual": "<=", "GreaterThan": ">", "GreaterThanOrEqual": ">=", "IsNull": "isnull",
    "IsNotNull": "isnotnull", "In": "in",
}  # fmt: skip
_INTEGER_BOUNDS = {"byte": 2**7, "short": 2**15, "integer": 2**31, "long": 2**63}
_DIGITS = re.compile(r"-?[0-9]{1,19}")
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


@dataclass(frozen=True)
class CatalystNode:
    """One node of a Catalyst expression read from Spark's JSON: its class's simple name, its fields, its children."""

    kind: str
    fields: dict[str, Any]
    children: tuple[CatalystNode, ...]


def catalyst_tree(items: list[dict[str, Any]]) -> CatalystNode:
    """The tree of a Catalyst expression from its JSON node list (pre-order, each with its `num-children`)."""
    stack: list[CatalystNode] = []
    for item in reversed(items):
        count = int(item.get("num-children", 0))
        if count > len(stack):
            raise Untranslatable("a Catalyst expression's JSON with missing children")
        children = tuple(stack.pop() for _ in range(count))
        stack.append(CatalystNode(str(item.get("class", "")).rsplit(".", 1)[-1], item, children))
    if len(stack) != 1:
        raise Untranslatable("a Catalyst expression's JSON that is not one tree")
    return stack[0]


def _catalyst_call(node: CatalystNode) -> tuple[str, list[Any]] | None:
    if node.kind == "Between":
        parts = [catalyst_tree(node.fields[name]) for name in ("input", "lower", "upper")]
        return "between", parts
    name = _CATALYST_CALLS.get(node.kind)
    return None if name is None else (name, list(node.children))


def _catalyst_value(node: CatalystNode) -> Any:
    """The Python value of a Literal of a type sargable compares as Spark does (Spark writes values as text)."""
    value, kind = node.fields.get("value"), node.fields.get("dataType")
    if value is None:
        return None
    if not isinstance(value, str):
        raise Untranslatable(f"literal {value!r} of type {kind}")
    if kind in _INTEGER_BOUNDS and _DIGITS.fullmatch(value):
        return int(value)
    if kind == "string":
        return value
    if kind == "boolean" and value in ("true", "false"):
        return value == "true"
    if kind == "date" and _ISO_DATE.fullmatch(value):
        return _iso_date(value)
    raise Untranslatable(f"literal {value!r} of type {kind}")


def _iso_date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise Untranslatable(f"date {text!r}") from None


def _cast_literal(value: Any, source: str, target: str) -> Any:
    """A literal's value cast to `target`, where every evaluation mode of Spark's cast gives that same value."""
    if value is None or source == target:
        return value
    if target in _INTEGER_BOUNDS:
        if source == "string" and _DIGITS.fullmatch(value):
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            bound = _INTEGER_BOUNDS[target]
            if -bound <= value < bound:
                return value
    if target == "date" and source == "string" and _ISO_DATE.fullmatch(value):
        return _iso_date(value)
    raise Untranslatable(f"cast of {value!r} from {source} to {target}")


def _catalyst_leaf(node: CatalystNode, time_zone: str | None) -> Expr:
    if node.kind == "AttributeReference":
        return col(str(node.fields["name"]))
    if node.kind == "Literal":
        return lit(_catalyst_value(node))
    if node.kind == "Cast" and len(node.children) == 1:
        child = node.children[0]
        source, target = child.fields.get("dataType"), node.fields.get("dataType")
        if child.kind == "Literal":
            return lit(_cast_literal(_catalyst_value(child), source, target))
        same = source == target and source in ("string", "date", "boolean", *_INTEGER_BOUNDS)
        wider = source in _INTEGER_BOUNDS and target in _INTEGER_BOUNDS
        if wider:
            same = _INTEGER_BOUNDS[source] <= _INTEGER_BOUNDS[target]
        if child.kind == "AttributeReference" and same:
            return col(str(child.fields["name"]))
    raise Untranslatable(f"Catalyst {node.kind}")


_CATALYST = _Dialect(_catalyst_call, _catalyst_leaf, _no_columns)


def from_catalyst(tree: CatalystNode) -> Expr:
    """The sargable expression of a resolved Catalyst expression (`catalyst_tree` of its JSON, e.g. an analyzed
    `Filter`'s condition); `Untranslatable` if any part has no exact translation."""
    return _translate(tree, _CATALYST, None)


def _root(column: Any) -> tuple[Any, _Dialect]:
    """The expression tree of a classic or a Connect Column, and how to read it."""
    if type(column).__module__ == _CONNECT_COLUMN_MODULE:
        return column._expr, _connect_dialect()
    jc = getattr(column, "_jc", None)
    if jc is None:
        raise Untranslatable(f"not a pyspark Column: {type(column).__name__}")
    return jc.node(), _CLASSIC


def from_column(column: Any, *, time_zone: str | None = None) -> Expr:
    """The sargable expression of a pyspark Column; `Untranslatable` if any part has no translation.

    `time_zone` is the session time zone (`spark.sql.session.timeZone`) that `timestamp` columns are read in: a
    `TimestampType` literal becomes its instant's wall-clock time there. None reads it in the zone of the process
    that made it (the JVM's for a classic Column, this process's for a Connect one), as written.
    """
    root, dialect = _root(column)
    return _translate(root, dialect, time_zone)


def split_column(column: Any, *, time_zone: str | None = None) -> tuple[Expr | None, list[Any]]:
    """Split a Column filter into (translated conjuncts as one expression, untranslatable conjuncts as Columns).

    `time_zone` as for `from_column`; a timestamp literal with no wall-clock time there leaves its conjunct to Spark.
    """
    try:
        root, dialect = _root(column)
    except Untranslatable:
        return None, [column]
    conjuncts: list[Any] = []
    pending = [root]
    while pending:
        node = pending.pop()
        try:
            call = dialect.call(node)
        except Untranslatable:
            call = None
        if call is not None and call[0].lower() == "and" and len(call[1]) == 2:
            pending.extend(reversed(call[1]))
        else:
            conjuncts.append(node)
    translated: list[Expr] = []
    leftover: list[Any] = []
    for node in conjuncts:
        try:
            translated.append(_translate(node, dialect, time_zone))
        except Untranslatable:
            leftover.append(node)
    columns = dialect.column(leftover) if leftover else []
    return (and_(*translated) if translated else None), columns


def translate_where(where: Any, time_zone: str) -> tuple[Expr | None, list[Any], list[str]]:
    """(planned expression, Columns Spark applies unplanned, notes) for the `where` of a Spark entry point: filter
    text, a sargable `Expr` or a pyspark Column (its timestamp literals read in the session's `time_zone`)."""
    if where is None:
        return None, [], []
    if isinstance(where, Expr):
        return where, [], []
    if isinstance(where, str):
        return parse(where), [], []
    if type(where).__name__ == "Column":
        expr, leftover = split_column(where, time_zone=time_zone)
        notes = [f"applied by Spark without pruning (no sargable translation): {c}" for c in leftover]
        return expr, leftover, notes
    raise SargableError(f"where must be filter text, a sargable Expr or a pyspark Column, got {type(where).__name__}")
