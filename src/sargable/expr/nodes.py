"""The expression tree: immutable, hashable nodes, Python builders, and iterative traversal.

One tree serves every layer (parser, planner, data skipping, Spark). Nodes are frozen dataclasses; equality and
hashing are structural, computed without recursion (the hash is cached at construction from the children's), so
trees 10,000 levels deep or 100,000 terms wide work everywhere. `And`/`Or` are n-ary and always flat.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, TypeVar

from sargable.errors import InvalidExpressionError
from sargable.expr.tokens import COMPARISON_OPS
from sargable.types import BOOLEAN, NULL, DataType, infer_type

FLIPPED_OP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<=", "<=>": "<=>"}
NEGATED_OP = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


_printer: list[Callable[[Expr], str]] = []
"""The function `str(expr)` calls; empty until `sargable.expr.render` is imported (the package imports it)."""


def set_printer(printer: Callable[[Expr], str]) -> None:
    """Install `printer` as `str(expr)`: the printer module imports this one, so this one can't import it back."""
    _printer[:] = [printer]


def _value_key(value: Any) -> Any:
    """A hashable key that tells values apart by type too (True vs 1) and makes NaN equal to NaN."""
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    return (type(value).__name__, value)


class Expr:
    """Base of every node. Subclasses declare `_child_fields`; everything else is a plain attribute."""

    __slots__ = ()
    _child_fields: ClassVar[tuple[str, ...]] = ()

    def children(self) -> tuple[Expr, ...]:
        """The direct sub-expressions, in a fixed order."""
        return self._kids  # type: ignore[attr-defined]

    def _collect_children(self) -> tuple[Expr, ...]:
        out: list[Expr] = []
        for name in self._child_fields:
            value = getattr(self, name)
            if isinstance(value, tuple):
                out.extend(value)
            else:
                out.append(value)
        return tuple(out)

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        """A copy of this node with `children` (same count and order as `children()`) in place of its own."""
        if not self._child_fields:
            return self
        values: dict[str, Any] = {}
        index = 0
        for name in self._child_fields:
            current = getattr(self, name)
            if isinstance(current, tuple):
                values[name] = tuple(children[index : index + len(current)])
                index += len(current)
            else:
                values[name] = children[index]
                index += 1
        return self._rebuild(values)

    def _rebuild(self, values: dict[str, Any]) -> Expr:
        kwargs = {name: getattr(self, name) for name in self.__dataclass_fields__ if not name.startswith("_")}  # type: ignore[attr-defined]
        kwargs.update(values)
        return type(self)(**kwargs)

    def _local(self) -> tuple[Any, ...]:
        """The node's own (non-child) fields, as a comparable, hashable tuple."""
        return ()

    def _compute_hash(self) -> None:
        """Cache the children tuple and the structural hash (from the children's cached hashes: no recursion)."""
        kids = self._collect_children() if self._child_fields else ()
        object.__setattr__(self, "_kids", kids)
        object.__setattr__(self, "_hash", hash((type(self).__name__, self._local(), tuple(map(hash, kids)))))

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined]

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickle by constructor arguments: the cached hash depends on the process's string-hash seed."""
        return type(self), tuple(getattr(self, f.name) for f in fields(self) if f.init)  # type: ignore[arg-type]

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Expr):
            return NotImplemented
        stack: list[tuple[Expr, Expr]] = [(self, other)]
        while stack:
            a, b = stack.pop()
            if a is b:
                continue
            if type(a) is not type(b) or hash(a) != hash(b) or a._local() != b._local():
                return False
            ca, cb = a.children(), b.children()
            if len(ca) != len(cb):
                return False
            stack.extend(zip(ca, cb))
        return True

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __repr__(self) -> str:
        return f"{type(self).__name__}<{self}>"

    def __str__(self) -> str:
        """The canonical filter text, by the printer `sargable.expr.render` installs (`set_printer`)."""
        return _printer[0](self) if _printer else object.__repr__(self)

    def __and__(self, other: Expr) -> Expr:
        return and_(self, _as_expr(other))

    def __rand__(self, other: Expr) -> Expr:
        return and_(_as_expr(other), self)

    def __or__(self, other: Expr) -> Expr:
        return or_(self, _as_expr(other))

    def __ror__(self, other: Expr) -> Expr:
        return or_(_as_expr(other), self)

    def __invert__(self) -> Expr:
        return Not(self)

    def __bool__(self) -> bool:
        raise TypeError("an Expr has no truth value; combine predicates with &, | and ~, not and/or/not")


class Operand(Expr):
    """A value-producing node (column, literal, function call) with builder methods for predicates."""

    __slots__ = ()

    def _cmp(self, op: str, other: Any) -> Comparison:
        return Comparison(op, self, _as_expr(other))

    def __lt__(self, other: Any) -> Comparison:
        return self._cmp("<", other)

    def __le__(self, other: Any) -> Comparison:
        return self._cmp("<=", other)

    def __gt__(self, other: Any) -> Comparison:
        return self._cmp(">", other)

    def __ge__(self, other: Any) -> Comparison:
        return self._cmp(">=", other)

    def eq(self, other: Any) -> Comparison:
        """`self = other` (`==` stays structural equality of trees)."""
        return self._cmp("=", other)

    def ne(self, other: Any) -> Comparison:
        return self._cmp("!=", other)

    def null_safe_eq(self, other: Any) -> Comparison:
        return self._cmp("<=>", other)

    def isin(self, *values: Any) -> In:
        return In(self, tuple(_as_expr(v) for v in _flatten_args(values)))

    def notin(self, *values: Any) -> In:
        return In(self, tuple(_as_expr(v) for v in _flatten_args(values)), negated=True)

    def between(self, low: Any, high: Any) -> Between:
        return Between(self, _as_expr(low), _as_expr(high))

    def not_between(self, low: Any, high: Any) -> Between:
        return Between(self, _as_expr(low), _as_expr(high), negated=True)

    def is_null(self) -> IsNull:
        return IsNull(self)

    def is_not_null(self) -> IsNull:
        return IsNull(self, negated=True)

    def like(self, pattern: str, escape: str | None = None) -> Like:
        return Like(self, pattern, escape)

    def not_like(self, pattern: str, escape: str | None = None) -> Like:
        return Like(self, pattern, escape, negated=True)

    def rlike(self, pattern: str) -> Regex:
        return Regex(self, pattern)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Column(Operand):
    """A column reference; `type` is set by binding (`None` while unbound)."""

    name: str
    type: DataType | None = None
    _hash: int = field(init=False, repr=False, compare=False)
    _kids: tuple[Expr, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._compute_hash()

    def _local(self) -> tuple[Any, ...]:
        return (self.name, self.type)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Literal(Operand):
    """A constant with its type (`NULL` literal: value None, type `null`)."""

    value: Any
    type: DataType
    _hash: int = field(init=False, repr=False, compare=False)
    _kids: tuple[Expr, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._compute_hash()

    def _local(self) -> tuple[Any, ...]:
        return (_value_key(self.value), self.type)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Func(Operand):
    """A scalar function call such as `upper(name)`; storage can't answer it, so it always stays residual."""

    name: str
    args: tuple[Expr, ...] = ()
    _child_fields: ClassVar[tuple[str, ...]] = ("args",)
    _hash: int = field(init=False, repr=False, compare=False)
    _kids: tuple[Expr, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", self.name.lower())
        self._compute_hash()

    def _local(self) -> tuple[Any, ...]:
        return (self.name,)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Comparison(Expr):
    """`left op right` with op one of `=`, `!=`, `<`, `<=`, `>`, `>=`, `<=>` (null-safe equality)."""

    op: str
    left: Expr
    right: Expr
    _child_fields: ClassVar[tuple[str, ...]] = ("left", "right")
    _hash: int = field(init=False, repr=False, compare=False)
    _kids: tuple[Expr, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.op not in COMPARISON_OPS:
            raise InvalidExpressionError(f"unknown comparison operator {self.op!r}; expected one of {COMPARISON_OPS}")
        self._compute_hash()

    def _local(self) -> tuple[Any, ...]:
        return (self.op,)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class In(Expr):
    """`operand [NOT] IN (values...)`."""

    operand: Expr
    values: tuple[Expr, ...]
    negated: bool = False
    _child_fields: ClassVar[tuple[str, ...]] = ("operand", "values")
    _hash: int = field(init=False, repr=False, compare=False)
    _kids: tuple[Expr, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.values:
            raise InvalidExpressionError("IN needs at least one value")
        self._compute_hash()

    def _local(self) -> tuple[Any, ...]:
        return (self.negated, len(self.values))


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Between(Expr):
    """`operand [NOT] BETWEEN low AND high` (inclusive both ends, as in SQL)."""

    operand: Expr
    low: Expr
    high: Expr
    negated: bool = False
    _child_fields: ClassVar[tuple[str, ...]] = ("operand", "low", "high")
    _hash: int = field(init=False, repr=False, compare=False)
    _kids: tuple[Expr, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._compute_hash()

    def _local(self) -> tuple[Any, ...]:
        return (self.negated,)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class IsNull(Expr):
    """`operand IS [NOT] NULL`."""

    operand: Expr
    negated: bool = False
    _child_fields: ClassVar[tuple[str, ...]] = ("operand",)
    _hash: int = field(init=False, repr=False, compare=False)
    _kids: tuple[Expr, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._compute_hash()

    def _local(self) -> tuple[Any, ...]:
        return (self.negated,)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Like(Expr):
    """`operand [NOT] LIKE 'pattern' [ESCAPE 'c']`: SQL LIKE, `%` and `_`, case-sensitive."""

    operand: Expr
    pattern: str
    escape: str | None = None
    negated: bool = False
    _child_fields: ClassVar[tuple[str, ...]] = ("operand",)
    _hash: int = field(init=False, repr=False, compare=False)
    _kids: tuple[Expr, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.escape is not None and len(self.escape) != 1:
            raise InvalidExpressionError(f"ESCAPE must be one character, got {self.escape!r}")
        self._compute_hash()

    def _local(self) -> tuple[Any, ...]:
        return (self.pattern, self.escape, self.negated)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Regex(Expr):
    """`operand [NOT] RLIKE 'regex'`: true when the regular expression matches anywhere in the value.

    The Hive dialect's LIKE (a Java regular expression that must match the whole value) parses to this node with
    the pattern anchored as `^(?:...)\\Z`.
    """

    operand: Expr
    pattern: str
    negated: bool = False
    _child_fields: ClassVar[tuple[str, ...]] = ("operand",)
    _hash: int = field(init=False, repr=False, compare=False)
    _kids: tuple[Expr, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._compute_hash()

    def _local(self) -> tuple[Any, ...]:
        return (self.pattern, self.negated)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Not(Expr):
    """Logical NOT (three-valued: NOT NULL is NULL)."""

    child: Expr
    _child_fields: ClassVar[tuple[str, ...]] = ("child",)
    _hash: int = field(init=False, repr=False, compare=False)
    _kids: tuple[Expr, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._compute_hash()


def _flat(kind: type, children: Iterable[Expr]) -> tuple[Expr, ...]:
    out: list[Expr] = []
    for child in children:
        if type(child) is kind:
            out.extend(child.children())
        else:
            out.append(child)
    return tuple(out)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class And(Expr):
    """Logical AND of two or more children; nested ANDs are flattened at construction."""

    children_: tuple[Expr, ...]
    _child_fields: ClassVar[tuple[str, ...]] = ("children_",)
    _hash: int = field(init=False, repr=False, compare=False)
    _kids: tuple[Expr, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "children_", _flat(And, self.children_))
        if len(self.children_) < 2:
            raise InvalidExpressionError("And needs at least two children; use and_() for any number")
        self._compute_hash()

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return and_(*children)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Or(Expr):
    """Logical OR of two or more children; nested ORs are flattened at construction."""

    children_: tuple[Expr, ...]
    _child_fields: ClassVar[tuple[str, ...]] = ("children_",)
    _hash: int = field(init=False, repr=False, compare=False)
    _kids: tuple[Expr, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "children_", _flat(Or, self.children_))
        if len(self.children_) < 2:
            raise InvalidExpressionError("Or needs at least two children; use or_() for any number")
        self._compute_hash()

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return or_(*children)


TRUE = Literal(True, BOOLEAN)
FALSE = Literal(False, BOOLEAN)
NULL_LITERAL = Literal(None, NULL)


def and_(*children: Expr) -> Expr:
    """AND of any number of predicates: none is TRUE, one is itself."""
    if not children:
        return TRUE
    if len(children) == 1:
        return children[0]
    return And(tuple(children))


def or_(*children: Expr) -> Expr:
    """OR of any number of predicates: none is FALSE, one is itself."""
    if not children:
        return FALSE
    if len(children) == 1:
        return children[0]
    return Or(tuple(children))


def col(name: str) -> Column:
    """A reference to column `name`."""
    if not isinstance(name, str) or not name:
        raise InvalidExpressionError(f"a column name must be a non-empty string, got {name!r}")
    return Column(name)


def lit(value: Any, type: DataType | None = None) -> Literal:
    """A literal; its type is inferred from the Python value unless given."""
    if isinstance(value, Literal):
        return value
    return Literal(value, type if type is not None else infer_type(value))


def _as_expr(value: Any) -> Expr:
    return value if isinstance(value, Expr) else lit(value)


def _flatten_args(values: tuple[Any, ...]) -> list[Any]:
    if len(values) == 1 and isinstance(values[0], (list, tuple, set, frozenset)):
        return list(values[0])
    return list(values)


def walk(expr: Expr) -> Iterator[Expr]:
    """Every node of the tree, parents before children, without recursion."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children()))


def columns_of(expr: Expr) -> set[str]:
    """Names of the columns an expression references."""
    return {node.name for node in walk(expr) if isinstance(node, Column)}


R = TypeVar("R")


def fold(expr: Expr, visit: Callable[[Expr, list[R]], R]) -> R:
    """Bottom-up evaluation without recursion: `visit(node, results_of_children)` for every node."""
    results: list[R] = []
    stack: list[tuple[Expr, bool]] = [(expr, False)]
    while stack:
        node, expanded = stack.pop()
        kids = node.children()
        if expanded or not kids:
            count = len(kids)
            args = results[len(results) - count :] if count else []
            if count:
                del results[len(results) - count :]
            results.append(visit(node, args))
        else:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(kids))
    return results[0]


def transform(expr: Expr, rewrite: Callable[[Expr], Expr]) -> Expr:
    """Rebuild a tree bottom-up: each node gets its rewritten children, then `rewrite(node)` replaces it."""

    def visit(node: Expr, kids: list[Expr]) -> Expr:
        if kids and any(new is not old for new, old in zip(kids, node.children())):
            node = node.with_children(tuple(kids))
        return rewrite(node)

    return fold(expr, visit)
