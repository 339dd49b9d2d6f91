"""The bound form of a filter: a distinct type, made once at the edge, that every layer below takes as it is.

pyiceberg's `UnboundPredicate` / `BoundPredicate` split is the model. Filter text, serialized bytes or an `Expr`
come in at the edge (a metastore call, a scan, a Spark adapter); `bind_filter` coerces and binds them against a
schema once, into a `BoundFilter`: the bound tree, the schema it was bound to, and the forms derived from it
(negation normal form, normalized form, text, columns), each computed once on first use. Decomposition, key-range
planning and data skipping take a `BoundFilter` and neither bind nor normalize it again; the parts they derive from
it (`BoundFilter.part`) are bound too. `sargable.bind` stays the plain tree-to-tree function for users.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from typing import Any

from sargable.errors import BindError, SargableError
from sargable.expr.binary import loads
from sargable.expr.bind import bind
from sargable.expr.nodes import Between, Column, Expr, In, Literal, and_, columns_of
from sargable.expr.normalize import normalize, to_nnf
from sargable.expr.parser import parse
from sargable.expr.render import render
from sargable.types import DataType, parse_type

FilterInput = str | bytes | Expr
"""What `bind_filter` takes: filter text, `sargable.dumps` bytes, or an expression tree (bound or not)."""

_MADE_BY_BIND = object()


class BoundFilter:
    """A filter bound to a schema (columns resolved and typed, literals coerced), with its derived forms cached.

    Made by `bind_filter` (and the constructors of this module), never directly: holding one means binding is done.
    Equal bound filters (same tree, same schema) compare and hash equal; `str()` is the canonical text.
    """

    __slots__ = ("_columns", "_hash", "_nnf", "_normalized", "_text", "expr", "schema")

    expr: Expr
    """The bound expression tree."""
    schema: tuple[tuple[str, DataType], ...]
    """The `(name, type)` pairs it was bound against."""

    def __init__(self, expr: Expr, schema: tuple[tuple[str, DataType], ...], token: object) -> None:
        if token is not _MADE_BY_BIND:
            raise BindError("a BoundFilter is made by sargable.expr.bind_filter, which binds it")
        self.expr = expr
        self.schema = schema
        self._hash = hash((expr, schema))
        self._nnf: Expr | None = None
        self._normalized: Expr | None = None
        self._text: str | None = None
        self._columns: frozenset[str] | None = None

    @property
    def nnf(self) -> Expr:
        """The negation normal form (what key-range planning starts from), computed once."""
        if self._nnf is None:
            self._nnf = to_nnf(self.expr)
        return self._nnf

    @property
    def normalized(self) -> Expr:
        """`normalize(expr)` (what data skipping compiles), computed once; the bound tree itself when normalizing
        gives up (a rewrite past its cap), since normalizing only ever tightens what skipping proves."""
        if self._normalized is None:
            normalized = self.expr
            with contextlib.suppress(SargableError):
                normalized = normalize(self.expr)
            self._normalized = normalized
        return self._normalized

    @property
    def text(self) -> str:
        """The canonical filter text (`render`), computed once."""
        if self._text is None:
            self._text = render(self.expr)
        return self._text

    @property
    def columns(self) -> frozenset[str]:
        """The names of the columns the filter references, in lower case."""
        if self._columns is None:
            self._columns = frozenset(name.lower() for name in columns_of(self.expr))
        return self._columns

    def part(self, expr: Expr) -> BoundFilter:
        """A predicate made of this filter's bound nodes (a part that decomposition or planning derived from it),
        as a bound filter over the same schema."""
        return BoundFilter(expr, self.schema, _MADE_BY_BIND)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BoundFilter):
            return NotImplemented
        return self._hash == other._hash and self.expr == other.expr and self.schema == other.schema

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"BoundFilter({self.text!r})"

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _restore, (self.expr, self.schema)


def _restore(expr: Expr, schema: tuple[tuple[str, DataType], ...]) -> BoundFilter:
    """Unpickle a BoundFilter (it was bound when pickled)."""
    return BoundFilter(expr, schema, _MADE_BY_BIND)


def _schema(schema: Sequence[tuple[str, str | DataType]]) -> tuple[tuple[str, DataType], ...]:
    if isinstance(schema, (str, bytes)) or not isinstance(schema, Sequence):
        raise BindError(f"a schema is a list of (name, type) pairs, got {type(schema).__name__}: {schema!r}")
    out = []
    for entry in schema:
        if not isinstance(entry, (tuple, list)) or len(entry) != 2 or not isinstance(entry[0], str):
            raise BindError(f"a schema entry must be a (name, type) pair, got {entry!r}")
        out.append((entry[0], parse_type(entry[1])))
    return tuple(out)


def unbound_expr(filter: Any, dialect: str = "sql") -> Expr:
    """The expression tree of filter text, serialized bytes or an `Expr` (not bound yet)."""
    if isinstance(filter, Expr):
        return filter
    if isinstance(filter, str):
        return parse(filter, dialect=dialect)
    if isinstance(filter, (bytes, bytearray, memoryview)):
        return loads(bytes(filter))
    raise BindError(f"a filter is text, an Expr or serialized bytes, got {type(filter).__name__}")


def bind_filter(
    filter: FilterInput | BoundFilter, schema: Sequence[tuple[str, str | DataType]], *, dialect: str = "sql"
) -> BoundFilter:
    """Coerce filter text, bytes or an `Expr` and bind it to `schema`: the one binding a filter gets.

    A `BoundFilter` bound to the same schema comes back as it is; one bound to another schema is an error.
    """
    pairs = _schema(schema)
    if isinstance(filter, BoundFilter):
        if filter.schema != pairs:
            raise BindError(f"the filter {filter.text!r} is bound to another schema")
        return filter
    return BoundFilter(bind(unbound_expr(filter, dialect), list(pairs)), pairs, _MADE_BY_BIND)


def conjoin(filters: Iterable[BoundFilter]) -> BoundFilter | None:
    """The AND of bound filters over one schema (None for none)."""
    items = list(filters)
    if not items:
        return None
    schema = items[0].schema
    if any(item.schema != schema for item in items):
        raise BindError("can't conjoin filters bound to different schemas")
    if len(items) == 1:
        return items[0]
    return BoundFilter(and_(*(item.expr for item in items)), schema, _MADE_BY_BIND)


def _typed_column(schema: tuple[tuple[str, DataType], ...], column: str) -> Column:
    for name, dtype in schema:
        if name.lower() == column.lower():
            return Column(name, dtype)
    raise BindError(f"unknown column {column!r}; known columns: {', '.join(n for n, _ in schema) or '(none)'}")


def bound_in(schema: Sequence[tuple[str, str | DataType]], column: str, values: Iterable[Any]) -> BoundFilter:
    """`column IN (values)` bound to `schema`, for values already of the column's type (sorted; no coercion)."""
    pairs = _schema(schema)
    operand = _typed_column(pairs, column)
    dtype = operand.type
    assert dtype is not None
    literals = tuple(Literal(value, dtype) for value in sorted(values))
    if not literals:
        raise BindError(f"an IN list on {column!r} needs at least one value")
    return BoundFilter(In(operand, literals), pairs, _MADE_BY_BIND)


def bound_between(schema: Sequence[tuple[str, str | DataType]], column: str, low: Any, high: Any) -> BoundFilter:
    """`column BETWEEN low AND high` bound to `schema`, for bounds already of the column's type (no coercion)."""
    pairs = _schema(schema)
    operand = _typed_column(pairs, column)
    dtype = operand.type
    assert dtype is not None
    return BoundFilter(Between(operand, Literal(low, dtype), Literal(high, dtype)), pairs, _MADE_BY_BIND)
