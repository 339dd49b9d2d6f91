"""The compact binary form of an expression (the `getPartitionsByExpr` payload): `dumps` and `loads`.

Layout: the magic `SG`, a version byte, then the nodes in postorder, each an opcode byte and its own fields;
`loads` is a stack machine that pops each node's children. Counts and lengths are unsigned LEB128 varints; every
string (column and function names, patterns, string values, decimal digits) goes through a table built as the stream
is read -- `0` and a length-prefixed UTF-8 text adds one, `k > 0` refers to entry `k - 1` -- so a repeated name
costs one byte. Likewise every column and literal defined in the stream joins a leaf table, and a repeated one is a
`LEAF_REF` to it. Literals carry their `DataType` and a value tagged by Python type (with short forms for the common
bigint and string literals), so any tree round-trips exactly, bound or not: `loads(dumps(e)) == e`.

`loads` checks every length and count against the bytes that remain (or the nodes already decoded) before using
it, so corrupt input raises `SerializationError`; what it allocates grows with the bytes actually present (at most a
node per byte), never with a length or count the bytes merely claim.
"""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from sargable.errors import SerializationError, TypeCoercionError
from sargable.expr.nodes import (
    COMPARISON_OPS,
    FALSE,
    NULL_LITERAL,
    TRUE,
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
from sargable.types import BIGINT, BOOLEAN, NULL, STRING, DataType, parse_type

MAGIC = b"SG"
VERSION = 1

# Opcodes.
COLUMN, TYPED_COLUMN, LITERAL, FUNC = 0x01, 0x02, 0x03, 0x04
LITERAL_TRUE, LITERAL_FALSE, LITERAL_NULL = 0x05, 0x06, 0x07
LEAF_REF, BIGINT_LITERAL, STRING_LITERAL = 0x08, 0x09, 0x0A
COMPARISON = 0x10  # + index of the operator in COMPARISON_OPS
IN, NOT_IN, BETWEEN, NOT_BETWEEN, IS_NULL, IS_NOT_NULL = 0x20, 0x21, 0x22, 0x23, 0x24, 0x25
LIKE, NOT_LIKE, LIKE_ESCAPE, NOT_LIKE_ESCAPE, REGEX, NOT_REGEX = 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B
NOT, AND, OR = 0x30, 0x31, 0x32

# Type tags: the parameterless Hive types, then the parameterized ones, then any other DataType spelled out.
_SIMPLE_TYPES = (
    "string", "tinyint", "smallint", "int", "bigint", "float", "double", "date", "timestamp", "boolean", "null",
)
_SIMPLE_TAG = {name: index for index, name in enumerate(_SIMPLE_TYPES)}
_SIMPLE_DTYPES = tuple(DataType(name) for name in _SIMPLE_TYPES)
TYPE_VARCHAR, TYPE_CHAR, TYPE_DECIMAL, TYPE_TEXT, TYPE_OTHER = 0x20, 0x21, 0x22, 0x3E, 0x3F
"""TYPE_TEXT: a complex type (array, map, struct) as its canonical Hive spelling."""

# Value tags: the Python type of a literal's value.
V_NONE, V_FALSE, V_TRUE, V_INT, V_BIGINT, V_FLOAT, V_DECIMAL, V_STR, V_DATE, V_DATETIME = range(10)
_MAX_VARINT_BYTES = 10
_MICROS_PER_DAY = 86_400_000_000
_DOUBLE = struct.Struct("<d")
_LIMIT_64 = 1 << 63


class _Writer:
    """Accumulates the stream; strings are written once, then referenced by table index."""

    def __init__(self) -> None:
        self.out = bytearray(MAGIC)
        self.out.append(VERSION)
        self.strings: dict[str, int] = {}

    def varint(self, value: int) -> None:
        out = self.out
        while value >= 0x80:
            out.append((value & 0x7F) | 0x80)
            value >>= 7
        out.append(value)

    def string(self, value: str) -> None:
        index = self.strings.get(value)
        if index is not None:
            self.varint(index + 1)
            return
        self.strings[value] = len(self.strings)
        data = value.encode("utf-8", "surrogatepass")
        self.out.append(0)
        self.varint(len(data))
        self.out += data

    def dtype(self, dtype: DataType) -> None:
        if not isinstance(dtype, DataType):
            raise SerializationError(f"a type must be a DataType, got {type(dtype).__name__}")
        name, length, precision, scale = dtype.name, dtype.length, dtype.precision, dtype.scale
        plain = length is None and precision is None and scale is None
        if name in _SIMPLE_TAG and plain:
            self.out.append(_SIMPLE_TAG[name])
        elif name in ("varchar", "char") and _natural(length) and precision is None and scale is None:
            self.out.append(TYPE_VARCHAR if name == "varchar" else TYPE_CHAR)
            self.varint(length)
        elif name == "decimal" and length is None and _natural(precision) and _natural(scale):
            self.out.append(TYPE_DECIMAL)
            self.varint(precision)
            self.varint(scale)
        elif dtype.children:
            self.out.append(TYPE_TEXT)
            self.string(str(dtype))
        else:
            self.out.append(TYPE_OTHER)
            self.string(name)
            for param in (length, precision, scale):
                self.varint(0 if param is None else 1 + _zigzag(param))

    def value(self, value: Any) -> None:
        out = self.out
        if value is None:
            out.append(V_NONE)
        elif isinstance(value, bool):
            out.append(V_TRUE if value else V_FALSE)
        elif isinstance(value, int):
            if -_LIMIT_64 <= value < _LIMIT_64:
                out.append(V_INT)
                self.varint(_zigzag(value))
            else:
                data = value.to_bytes((value.bit_length() + 8) // 8, "big", signed=True)
                out.append(V_BIGINT)
                self.varint(len(data))
                out += data
        elif isinstance(value, float):
            out.append(V_FLOAT)
            out += _DOUBLE.pack(value)
        elif isinstance(value, Decimal):
            out.append(V_DECIMAL)
            self.string(str(value))
        elif isinstance(value, str):
            out.append(V_STR)
            self.string(value)
        elif isinstance(value, dt.datetime):
            if value.tzinfo is not None:
                raise SerializationError(f"timestamp {value!r} has a time zone; sargable timestamps are wall-clock")
            out.append(V_DATETIME)
            self.varint(value.toordinal())
            self.varint(((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond)
        elif isinstance(value, dt.date):
            out.append(V_DATE)
            self.varint(value.toordinal())
        else:
            raise SerializationError(f"cannot serialize a literal value of Python type {type(value).__name__}")


def _natural(value: Any) -> bool:
    return type(value) is int and value >= 0


def _zigzag(value: int) -> int:
    return value * 2 if value >= 0 else -value * 2 - 1


def _unzigzag(value: int) -> int:
    return value >> 1 if not value & 1 else -((value + 1) >> 1)


def _encode(writer: _Writer, node: Expr) -> None:
    """Append one node's opcode and fields; its children are already in the stream (postorder)."""
    out = writer.out
    kind = type(node)
    if kind is Column:
        if node.type is None:
            out.append(COLUMN)
            writer.string(node.name)
        else:
            out.append(TYPED_COLUMN)
            writer.string(node.name)
            writer.dtype(node.type)
    elif kind is Literal:
        value = node.value
        if type(value) is bool and node.type == BOOLEAN:
            out.append(LITERAL_TRUE if value else LITERAL_FALSE)
        elif value is None and node.type == NULL:
            out.append(LITERAL_NULL)
        elif type(value) is int and node.type == BIGINT and -_LIMIT_64 <= value < _LIMIT_64:
            out.append(BIGINT_LITERAL)
            writer.varint(_zigzag(value))
        elif type(value) is str and node.type == STRING:
            out.append(STRING_LITERAL)
            writer.string(value)
        else:
            out.append(LITERAL)
            writer.dtype(node.type)
            writer.value(value)
    elif kind is Func:
        out.append(FUNC)
        writer.string(node.name)
        writer.varint(len(node.args))
    elif kind is Comparison:
        out.append(COMPARISON + COMPARISON_OPS.index(node.op))
    elif kind is In:
        out.append(NOT_IN if node.negated else IN)
        writer.varint(len(node.values))
    elif kind is Between:
        out.append(NOT_BETWEEN if node.negated else BETWEEN)
    elif kind is IsNull:
        out.append(IS_NOT_NULL if node.negated else IS_NULL)
    elif kind is Like:
        if node.escape is None:
            out.append(NOT_LIKE if node.negated else LIKE)
            writer.string(node.pattern)
        else:
            out.append(NOT_LIKE_ESCAPE if node.negated else LIKE_ESCAPE)
            writer.string(node.pattern)
            writer.string(node.escape)
    elif kind is Regex:
        out.append(NOT_REGEX if node.negated else REGEX)
        writer.string(node.pattern)
    elif kind is Not:
        out.append(NOT)
    elif kind in (And, Or):
        out.append(AND if kind is And else OR)
        writer.varint(len(node.children_))
    else:
        raise SerializationError(f"cannot serialize a {kind.__name__} node")


def dumps(expr: Expr) -> bytes:
    """The compact, versioned bytes of an expression tree (bound or not)."""
    if not isinstance(expr, Expr):
        raise SerializationError(f"can only serialize an Expr, got {type(expr).__name__}")
    writer = _Writer()
    leaves: dict[Any, int] = {}
    stack: list[Any] = [expr]
    while stack:
        item = stack.pop()
        if type(item) is tuple:
            _encode(writer, item[0])
            continue
        kids = item.children()
        if kids:
            stack.append((item,))
            stack.extend(reversed(kids))
            continue
        key = _leaf_key(item)  # hashable: nodes hash their values at construction
        index = leaves.get(key) if key is not None else None
        if key is None:
            _encode(writer, item)
        elif index is None:
            leaves[key] = len(leaves)
            _encode(writer, item)
        else:
            writer.out.append(LEAF_REF)
            writer.varint(index)
    return bytes(writer.out)


def _leaf_key(node: Expr) -> Any:
    """What makes a column or literal the same leaf, exactly (the sign of zero, decimal digits, True vs 1).

    Types count by identity (the tree keeps them alive, and equal types are nearly always one object), which spares
    hashing a DataType per leaf. None for nodes that don't join the leaf table: the one-byte constants, non-leaves.
    """
    kind = type(node)
    if kind is Column:
        return (node.name, id(node.type))
    if kind is not Literal:
        return None
    value = node.value
    if (value is None and node.type == NULL) or (type(value) is bool and node.type == BOOLEAN):
        return None
    if isinstance(value, float):
        exact: Any = _DOUBLE.pack(value)
    elif isinstance(value, Decimal):
        exact = str(value)
    else:
        exact = value
    return (type(value), exact, id(node.type))


class _Reader:
    """A cursor over the payload that checks every read against the bytes left."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.strings: list[str] = []
        self.leaves: list[Expr] = []

    def fail(self, message: str) -> SerializationError:
        return SerializationError(f"corrupt expression bytes at offset {self.pos}: {message}")

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise self.fail("truncated")
        self.pos += 1
        return self.data[self.pos - 1]

    def take(self, count: int) -> bytes:
        if count > len(self.data) - self.pos:
            raise self.fail(f"length {count} runs past the end ({len(self.data) - self.pos} bytes left)")
        self.pos += count
        return self.data[self.pos - count : self.pos]

    def varint(self) -> int:
        result = shift = 0
        for _ in range(_MAX_VARINT_BYTES):
            byte = self.byte()
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return result
            shift += 7
        raise self.fail("varint longer than 10 bytes")

    def count(self, stack: list[Expr], extra: int = 0) -> int:
        """A child count, which can't exceed the nodes already decoded."""
        count = self.varint()
        if count + extra > len(stack):
            raise self.fail(f"node claims {count + extra} children but only {len(stack)} are decoded")
        return count

    def string(self) -> str:
        ref = self.varint()
        if ref:
            if ref > len(self.strings):
                raise self.fail(f"string reference {ref} past the table of {len(self.strings)}")
            return self.strings[ref - 1]
        data = self.take(self.varint())
        try:
            text = data.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError as exc:
            raise self.fail(f"invalid UTF-8 text: {exc.reason}") from None
        self.strings.append(text)
        return text

    def dtype(self) -> DataType:
        tag = self.byte()
        if tag < len(_SIMPLE_DTYPES):
            return _SIMPLE_DTYPES[tag]
        if tag in (TYPE_VARCHAR, TYPE_CHAR):
            return DataType("varchar" if tag == TYPE_VARCHAR else "char", length=self.varint())
        if tag == TYPE_DECIMAL:
            return DataType("decimal", precision=self.varint(), scale=self.varint())
        if tag == TYPE_TEXT:
            text = self.string()
            try:
                return parse_type(text)
            except TypeCoercionError as exc:
                raise self.fail(f"bad type text: {exc}") from None
        if tag == TYPE_OTHER:
            name = self.string()
            params = [self.varint() for _ in range(3)]
            length, precision, scale = (None if p == 0 else _unzigzag(p - 1) for p in params)
            return DataType(name, length=length, precision=precision, scale=scale)
        raise self.fail(f"unknown type tag {tag:#04x}")

    def value(self) -> Any:
        tag = self.byte()
        if tag == V_NONE:
            return None
        if tag in (V_FALSE, V_TRUE):
            return tag == V_TRUE
        if tag == V_INT:
            return _unzigzag(self.varint())
        if tag == V_BIGINT:
            return int.from_bytes(self.take(self.varint()), "big", signed=True)
        if tag == V_FLOAT:
            return _DOUBLE.unpack(self.take(8))[0]
        if tag == V_DECIMAL:
            text = self.string()
            try:
                return Decimal(text)
            except ArithmeticError:
                raise self.fail(f"{text[:40]!r} is not a decimal") from None
        if tag == V_STR:
            return self.string()
        if tag == V_DATE:
            return self._date()
        if tag == V_DATETIME:
            day = self._date()
            micros = self.varint()
            if micros >= _MICROS_PER_DAY:
                raise self.fail(f"time of day {micros} us is past midnight")
            return dt.datetime.combine(day, dt.time()) + dt.timedelta(microseconds=micros)
        raise self.fail(f"unknown value tag {tag:#04x}")

    def _date(self) -> dt.date:
        ordinal = self.varint()
        if not 1 <= ordinal <= dt.date.max.toordinal():
            raise self.fail(f"day number {ordinal} is outside the calendar")
        return dt.date.fromordinal(ordinal)


def _pop(stack: list[Expr], count: int) -> tuple[Expr, ...]:
    if not count:
        return ()
    items = tuple(stack[len(stack) - count :])
    del stack[len(stack) - count :]
    return items


def _decode_node(reader: _Reader, opcode: int, stack: list[Expr]) -> Expr:
    """The node for one opcode, its children taken off the top of the stack."""
    handler = _DECODERS.get(opcode)
    if handler is None:
        raise reader.fail(f"unknown opcode {opcode:#04x}")
    needed = _FIXED_CHILDREN.get(opcode, 0)
    if needed > len(stack):
        raise reader.fail(f"opcode {opcode:#04x} needs {needed} children, only {len(stack)} decoded")
    return handler(reader, stack)


def _logic(kind: type) -> Callable[[_Reader, list[Expr]], Expr]:
    def decode(reader: _Reader, stack: list[Expr]) -> Expr:
        count = reader.count(stack)
        if count < 2:
            raise reader.fail(f"{kind.__name__} needs at least two children, got {count}")
        return kind(_pop(stack, count))

    return decode


def _in(negated: bool) -> Callable[[_Reader, list[Expr]], Expr]:
    def decode(reader: _Reader, stack: list[Expr]) -> Expr:
        count = reader.count(stack, extra=1)
        if count < 1:
            raise reader.fail("IN needs at least one value")
        values = _pop(stack, count)
        return In(stack.pop(), values, negated)

    return decode


def _comparison(op: str) -> Callable[[_Reader, list[Expr]], Expr]:
    def decode(reader: _Reader, stack: list[Expr]) -> Expr:
        right = stack.pop()
        return Comparison(op, stack.pop(), right)

    return decode


def _between(negated: bool) -> Callable[[_Reader, list[Expr]], Expr]:
    def decode(reader: _Reader, stack: list[Expr]) -> Expr:
        operand, low, high = _pop(stack, 3)
        return Between(operand, low, high, negated)

    return decode


def _like(negated: bool, has_escape: bool) -> Callable[[_Reader, list[Expr]], Expr]:
    def decode(reader: _Reader, stack: list[Expr]) -> Expr:
        pattern = reader.string()
        escape = reader.string() if has_escape else None
        if escape is not None and len(escape) != 1:
            raise reader.fail(f"LIKE escape {escape[:10]!r} is not one character")
        return Like(stack.pop(), pattern, escape, negated)

    return decode


def _func(reader: _Reader, stack: list[Expr]) -> Expr:
    name = reader.string()
    return Func(name, _pop(stack, reader.count(stack)))


def _leaf(build: Callable[[_Reader], Expr]) -> Callable[[_Reader, list[Expr]], Expr]:
    """A decoder for a leaf definition: the node also joins the leaf table for later `LEAF_REF`s."""

    def decode(reader: _Reader, stack: list[Expr]) -> Expr:
        node = build(reader)
        reader.leaves.append(node)
        return node

    return decode


def _leaf_ref(reader: _Reader, stack: list[Expr]) -> Expr:
    index = reader.varint()
    if index >= len(reader.leaves):
        raise reader.fail(f"leaf reference {index} past the table of {len(reader.leaves)}")
    return reader.leaves[index]


def _literal(reader: _Reader) -> Expr:
    dtype = reader.dtype()
    return Literal(reader.value(), dtype)


def _typed_column(reader: _Reader) -> Expr:
    name = reader.string()
    return Column(name, reader.dtype())


_DECODERS: dict[int, Callable[[_Reader, list[Expr]], Expr]] = {
    COLUMN: _leaf(lambda reader: Column(reader.string())),
    TYPED_COLUMN: _leaf(_typed_column),
    LITERAL: _leaf(_literal),
    BIGINT_LITERAL: _leaf(lambda reader: Literal(_unzigzag(reader.varint()), BIGINT)),
    STRING_LITERAL: _leaf(lambda reader: Literal(reader.string(), STRING)),
    LEAF_REF: _leaf_ref,
    LITERAL_TRUE: lambda reader, stack: TRUE,
    LITERAL_FALSE: lambda reader, stack: FALSE,
    LITERAL_NULL: lambda reader, stack: NULL_LITERAL,
    FUNC: _func,
    **{COMPARISON + index: _comparison(op) for index, op in enumerate(COMPARISON_OPS)},
    IN: _in(False),
    NOT_IN: _in(True),
    BETWEEN: _between(False),
    NOT_BETWEEN: _between(True),
    IS_NULL: lambda reader, stack: IsNull(stack.pop(), False),
    IS_NOT_NULL: lambda reader, stack: IsNull(stack.pop(), True),
    LIKE: _like(False, False),
    NOT_LIKE: _like(True, False),
    LIKE_ESCAPE: _like(False, True),
    NOT_LIKE_ESCAPE: _like(True, True),
    REGEX: lambda reader, stack: Regex(stack.pop(), reader.string(), False),
    NOT_REGEX: lambda reader, stack: Regex(stack.pop(), reader.string(), True),
    NOT: lambda reader, stack: Not(stack.pop()),
    AND: _logic(And),
    OR: _logic(Or),
}
_FIXED_CHILDREN = {
    **{COMPARISON + index: 2 for index in range(len(COMPARISON_OPS))},
    BETWEEN: 3,
    NOT_BETWEEN: 3,
    IS_NULL: 1,
    IS_NOT_NULL: 1,
    LIKE: 1,
    NOT_LIKE: 1,
    LIKE_ESCAPE: 1,
    NOT_LIKE_ESCAPE: 1,
    REGEX: 1,
    NOT_REGEX: 1,
    NOT: 1,
}


def loads(data: bytes) -> Expr:
    """The expression tree serialized by `dumps`; bad bytes raise `SerializationError`."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise SerializationError(f"loads takes bytes, got {type(data).__name__}")
    data = bytes(data)
    if data[:2] != MAGIC:
        raise SerializationError("not a sargable expression: the bytes don't start with b'SG'")
    if len(data) < 3:
        raise SerializationError("truncated expression bytes: no version byte")
    if data[2] != VERSION:
        raise SerializationError(f"unsupported expression format version {data[2]}; this sargable reads {VERSION}")
    reader = _Reader(data)
    reader.pos = 3
    stack: list[Expr] = []
    try:
        while reader.pos < len(data):
            opcode = data[reader.pos]
            reader.pos += 1
            stack.append(_decode_node(reader, opcode, stack))
    except SerializationError:
        raise
    except (ValueError, TypeError, OverflowError, ArithmeticError) as exc:
        raise reader.fail(f"invalid node ({exc})") from None
    if len(stack) != 1:
        raise reader.fail(f"stream holds {len(stack)} top-level nodes; expected exactly one")
    return stack[0]
