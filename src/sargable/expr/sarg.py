"""The Hive SearchArgument view of an expression (seed 002): predicate leaves plus an expression tree over them.

`to_sarg` builds it as Hive's `ConvertAstToSearchArg` and `SearchArgumentImpl.BuilderImpl` do: the expression is
put in negation normal form with literals on the right, each leaf becomes a `PredicateLeaf` (`!=` is NOT EQUALS,
`>` is NOT LESS_THAN_EQUALS, `>=` is NOT LESS_THAN, NOT IN is NOT IN, IS NOT NULL is NOT IS_NULL), equal leaves are
shared, and anything a storage layer can't test against statistics (LIKE, RLIKE, functions, column-vs-column) is the
constant YES_NO_NULL ("maybe"). Then, as Hive does: maybes are dropped from ANDs and absorb ORs, the tree is
flattened and turned into CNF (an OR whose expansion would exceed 256 combinations becomes a maybe), and the leaves
are renumbered in the order they appear. `str(sarg)` prints as Hive does:
`leaf-0 = (EQUALS event_id 1), leaf-1 = (IS_NULL x), expr = (and leaf-0 (not leaf-1))`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sargable.errors import SargableError
from sargable.expr.evaluate import value_key
from sargable.expr.nodes import (
    Between,
    Column,
    Comparison,
    Expr,
    In,
    IsNull,
    Literal,
    lit,
)
from sargable.expr.normalize import flip_literals, fold_constants, fold_logic, to_nnf
from sargable.expr.truth import TruthValue
from sargable.types import DataType, format_value, infer_type

CNF_COMBINATIONS_THRESHOLD = 256
"""Hive's cap on the clauses one OR may expand into during the CNF conversion."""


class LeafOperator(enum.Enum):
    """Hive's PredicateLeaf.Operator."""

    EQUALS = "="
    NULL_SAFE_EQUALS = "<=>"
    LESS_THAN = "<"
    LESS_THAN_EQUALS = "<="
    IN = "in"
    BETWEEN = "between"
    IS_NULL = "is_null"


class LeafType(enum.Enum):
    """Hive's PredicateLeaf.Type: the family of the column a leaf tests."""

    LONG = "long"
    FLOAT = "float"
    STRING = "string"
    DATE = "date"
    DECIMAL = "decimal"
    TIMESTAMP = "timestamp"
    BOOLEAN = "boolean"


def leaf_type(dtype: DataType) -> LeafType | None:
    """The Hive leaf type of a column type (None for the NULL type)."""
    if dtype.is_integral:
        return LeafType.LONG
    if dtype.is_floating:
        return LeafType.FLOAT
    if dtype.is_string:
        return LeafType.STRING
    try:
        return LeafType(dtype.name)
    except ValueError:
        return None


def _literal_text(literal: Literal | None) -> str:
    if literal is None or literal.value is None:
        return "null"
    if isinstance(literal.value, str):
        return literal.value
    return format_value(literal.value, literal.type)


@dataclass(frozen=True, slots=True)
class PredicateLeaf:
    """One `column operator literal(s)` test: `literal` for the comparisons, `literals` for IN and BETWEEN.

    Literals are the expression's `Literal` nodes (value and type); `type` is None only for an unbound column
    whose literals don't tell it.
    """

    operator: LeafOperator
    type: LeafType | None
    column: str
    literal: Literal | None = None
    literals: tuple[Literal, ...] | None = None

    def key(self) -> tuple[Any, ...]:
        """Identity for deduplication: equal values are equal keys (NaN included), types kept apart."""
        values = (self.literal,) if self.literals is None else self.literals
        return (
            self.operator,
            self.type,
            self.column,
            self.literals is None,
            tuple(None if v is None else (value_key(v.value), v.type) for v in values),
        )

    def to_expr(self) -> Expr:
        """The leaf as an expression (evaluate it on a row for the leaf's truth value)."""
        column = Column(self.column)
        op = self.operator
        if op is LeafOperator.IS_NULL:
            return IsNull(column)
        if op is LeafOperator.IN:
            return In(column, tuple(self.literals or ()))
        if op is LeafOperator.BETWEEN:
            low, high = self.literals or ()
            return Between(column, low, high)
        return Comparison(op.value, column, self.literal)  # type: ignore[arg-type]

    def __str__(self) -> str:
        parts = [self.operator.name, self.column]
        if self.literal is not None:
            parts.append(_literal_text(self.literal))
        elif self.literals is not None:
            parts.extend(_literal_text(v) for v in self.literals)
        return "(" + " ".join(parts) + ")"


class TreeOperator(enum.Enum):
    """Hive's ExpressionTree.Operator."""

    OR = "or"
    AND = "and"
    NOT = "not"
    LEAF = "leaf"
    CONSTANT = "constant"


@dataclass(frozen=True, slots=True, eq=False)
class ExpressionTree:
    """A node of the SearchArgument's tree: OR/AND/NOT over children, a LEAF index, or a CONSTANT truth value."""

    operator: TreeOperator
    children: tuple[ExpressionTree, ...] = ()
    leaf: int | None = None
    constant: TruthValue | None = None

    def __str__(self) -> str:
        out: list[str] = []
        stack: list[ExpressionTree | str] = [self]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                out.append(item)
            elif item.operator is TreeOperator.LEAF:
                out.append(f"leaf-{item.leaf}")
            elif item.operator is TreeOperator.CONSTANT:
                out.append(str(item.constant))
            else:
                pending: list[ExpressionTree | str] = [f"({item.operator.value}"]
                for child in item.children:
                    pending.extend((" ", child))
                pending.append(")")
                stack.extend(reversed(pending))
        return "".join(out)

    def evaluate(self, leaves: Sequence[TruthValue]) -> TruthValue:
        """The tree's truth value given each leaf's (by index), combined with Hive's TruthValue logic."""
        results: list[TruthValue] = []
        stack: list[tuple[ExpressionTree, bool]] = [(self, False)]
        while stack:
            node, expanded = stack.pop()
            op = node.operator
            if op is TreeOperator.LEAF:
                results.append(leaves[node.leaf])  # type: ignore[index]
            elif op is TreeOperator.CONSTANT:
                results.append(node.constant)  # type: ignore[arg-type]
            elif not expanded:
                stack.append((node, True))
                stack.extend((child, False) for child in reversed(node.children))
            else:
                count = len(node.children)
                args = results[len(results) - count :]
                del results[len(results) - count :]
                value = args[0]
                for other in args[1:]:
                    value = value.and_(other) if op is TreeOperator.AND else value.or_(other)
                results.append(value.not_() if op is TreeOperator.NOT else value)
        return results[0]


@dataclass(frozen=True, slots=True, eq=False)
class SearchArgument:
    """Hive's SearchArgument: the distinct predicate leaves and the expression tree that combines them."""

    leaves: tuple[PredicateLeaf, ...]
    expression: ExpressionTree

    def evaluate(self, leaves: Sequence[TruthValue]) -> TruthValue:
        """Combine per-leaf truth values (for a row group, from its statistics) into the argument's."""
        if len(leaves) != len(self.leaves):
            raise SargableError(f"need {len(self.leaves)} leaf truth values, got {len(leaves)}")
        return self.expression.evaluate(leaves)

    def __str__(self) -> str:
        parts = [f"leaf-{index} = {leaf}, " for index, leaf in enumerate(self.leaves)]
        return "".join(parts) + f"expr = {self.expression}"


def _constant(value: TruthValue) -> ExpressionTree:
    return ExpressionTree(TreeOperator.CONSTANT, constant=value)


MAYBE = _constant(TruthValue.YES_NO_NULL)


class _Builder:
    """Collects distinct leaves (first-seen numbering) while the tree is built."""

    def __init__(self) -> None:
        self.leaves: list[PredicateLeaf] = []
        self.index: dict[tuple[Any, ...], int] = {}

    def leaf(self, leaf: PredicateLeaf, negated: bool = False) -> ExpressionTree:
        key = leaf.key()
        if key not in self.index:
            self.index[key] = len(self.leaves)
            self.leaves.append(leaf)
        node = ExpressionTree(TreeOperator.LEAF, leaf=self.index[key])
        return ExpressionTree(TreeOperator.NOT, (node,)) if negated else node

    def convert(self, node: Expr) -> ExpressionTree:
        """One expression leaf (after NNF and literal flipping) as a tree: a leaf, NOT leaf, or constant."""
        if isinstance(node, Literal):
            if node.value is True:
                return _constant(TruthValue.YES)
            if node.value is False:
                return _constant(TruthValue.NO)
            return _constant(TruthValue.NULL) if node.value is None else MAYBE
        if isinstance(node, Column):
            kind = leaf_type(node.type) if node.type is not None else LeafType.BOOLEAN
            if kind is not LeafType.BOOLEAN:
                return MAYBE
            return self.leaf(PredicateLeaf(LeafOperator.EQUALS, kind, node.name, lit(True)))
        operand = getattr(node, "operand", None) if not isinstance(node, Comparison) else node.left
        if not isinstance(operand, Column):
            return MAYBE
        return self._leaf_of(node, operand)

    def _leaf_of(self, node: Expr, column: Column) -> ExpressionTree:
        if isinstance(node, IsNull):
            kind = self._type(column, ())
            return self.leaf(PredicateLeaf(LeafOperator.IS_NULL, kind, column.name), node.negated)
        if isinstance(node, Comparison):
            literal = node.right
            if not isinstance(literal, Literal):
                return MAYBE
            kind = self._type(column, (literal,))
            operator, negated = _COMPARISON_LEAVES[node.op]
            return self.leaf(PredicateLeaf(operator, kind, column.name, literal), negated)
        if isinstance(node, In):
            if not all(isinstance(v, Literal) for v in node.values):
                return MAYBE
            values: tuple[Literal, ...] = node.values  # type: ignore[assignment]
            kind = self._type(column, values)
            return self.leaf(PredicateLeaf(LeafOperator.IN, kind, column.name, literals=values), node.negated)
        if isinstance(node, Between):
            low, high = node.low, node.high
            if not (isinstance(low, Literal) and isinstance(high, Literal)) or low.value is None or high.value is None:
                return MAYBE
            kind = self._type(column, (low, high))
            return self.leaf(PredicateLeaf(LeafOperator.BETWEEN, kind, column.name, literals=(low, high)), node.negated)
        return MAYBE

    @staticmethod
    def _type(column: Column, literals: Sequence[Literal]) -> LeafType | None:
        if column.type is not None:
            return leaf_type(column.type)
        for literal in literals:
            if literal.value is not None:
                return leaf_type(infer_type(literal.value))
        return None


_COMPARISON_LEAVES = {
    "=": (LeafOperator.EQUALS, False),
    "!=": (LeafOperator.EQUALS, True),
    "<": (LeafOperator.LESS_THAN, False),
    "<=": (LeafOperator.LESS_THAN_EQUALS, False),
    ">": (LeafOperator.LESS_THAN_EQUALS, True),
    ">=": (LeafOperator.LESS_THAN, True),
    "<=>": (LeafOperator.NULL_SAFE_EQUALS, False),
}


def _negate(child: ExpressionTree) -> ExpressionTree:
    """NOT over a converted leaf; over a constant it is the negated constant, as Hive's pushDownNot does."""
    if child.operator is TreeOperator.CONSTANT:
        return _constant(child.constant.not_())  # type: ignore[union-attr]
    return ExpressionTree(TreeOperator.NOT, (child,))


def _tree_fold(
    tree: ExpressionTree, visit: Callable[[ExpressionTree, tuple[ExpressionTree, ...]], ExpressionTree]
) -> ExpressionTree:
    """Bottom-up rebuild of an ExpressionTree without recursion: `visit(node, new_children)`."""
    results: list[ExpressionTree] = []
    stack: list[tuple[ExpressionTree, bool]] = [(tree, False)]
    while stack:
        node, expanded = stack.pop()
        if not node.children:
            results.append(visit(node, ()))
        elif not expanded:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node.children))
        else:
            count = len(node.children)
            kids = tuple(results[len(results) - count :])
            del results[len(results) - count :]
            results.append(visit(node, kids))
    return results[0]


def _fold_maybe(node: ExpressionTree, kids: tuple[ExpressionTree, ...]) -> ExpressionTree:
    """Hive's foldMaybe: a maybe is dropped from an AND and absorbs an OR (NOT over a maybe is a maybe)."""
    if not kids:
        return node
    is_maybe = [k.operator is TreeOperator.CONSTANT and k.constant is TruthValue.YES_NO_NULL for k in kids]
    if not any(is_maybe):
        return ExpressionTree(node.operator, kids)
    if node.operator is TreeOperator.AND:
        remaining = tuple(k for k, maybe in zip(kids, is_maybe, strict=True) if not maybe)
        return ExpressionTree(TreeOperator.AND, remaining) if remaining else MAYBE
    return MAYBE


def _flatten(node: ExpressionTree, kids: tuple[ExpressionTree, ...]) -> ExpressionTree:
    """Hive's flatten: nested ANDs (ORs) merge into their parent; a one-child AND/OR is its child."""
    if not kids:
        return node
    if node.operator in (TreeOperator.AND, TreeOperator.OR):
        flat: list[ExpressionTree] = []
        for kid in kids:
            if kid.operator is node.operator:
                flat.extend(kid.children)
            else:
                flat.append(kid)
        if len(flat) == 1:
            return flat[0]
        return ExpressionTree(node.operator, tuple(flat))
    return ExpressionTree(node.operator, kids)


def _to_cnf(node: ExpressionTree, kids: tuple[ExpressionTree, ...]) -> ExpressionTree:
    """Hive's convertToCNF: an OR over ANDs distributes into an AND of ORs, unless that exceeds the threshold."""
    if not kids:
        return node
    if node.operator is not TreeOperator.OR:
        return ExpressionTree(node.operator, kids)
    ands: list[ExpressionTree] = []
    others: list[ExpressionTree] = []
    for kid in kids:
        if kid.operator is TreeOperator.AND:
            ands.append(kid)
        elif kid.operator is TreeOperator.OR:
            others.extend(kid.children)
        else:
            others.append(kid)
    if not ands:
        return ExpressionTree(TreeOperator.OR, kids)
    combinations = 1
    for child in ands:
        combinations *= len(child.children)
        if combinations > CNF_COMBINATIONS_THRESHOLD:
            return MAYBE
    clauses: list[tuple[ExpressionTree, ...]] = [tuple(others)]
    for child in ands:
        clauses = [(*clause, grandkid) for grandkid in child.children for clause in clauses]
    return ExpressionTree(TreeOperator.AND, tuple(ExpressionTree(TreeOperator.OR, clause) for clause in clauses))


def _renumber(tree: ExpressionTree, leaves: list[PredicateLeaf]) -> tuple[ExpressionTree, tuple[PredicateLeaf, ...]]:
    """Hive's compactLeaves: keep the leaves still referenced, numbered in depth-first order of appearance."""
    order: dict[int, int] = {}
    stack = [tree]
    while stack:
        node = stack.pop()
        if node.operator is TreeOperator.LEAF:
            order.setdefault(node.leaf, len(order))  # type: ignore[arg-type]
        stack.extend(reversed(node.children))

    def visit(node: ExpressionTree, kids: tuple[ExpressionTree, ...]) -> ExpressionTree:
        if node.operator is TreeOperator.LEAF:
            return ExpressionTree(TreeOperator.LEAF, leaf=order[node.leaf])  # type: ignore[index]
        return ExpressionTree(node.operator, kids) if kids else node

    renumbered = _tree_fold(tree, visit)
    kept = [None] * len(order)
    for old, new in order.items():
        kept[new] = leaves[old]  # type: ignore[call-overload]
    return renumbered, tuple(kept)  # type: ignore[arg-type]


def to_sarg(expr: Expr) -> SearchArgument:
    """The Hive SearchArgument of an expression (bound or not; bound columns give the leaf types)."""
    if not isinstance(expr, Expr):
        raise SargableError(f"to_sarg needs an expression (sargable.Expr), got {type(expr).__name__}: {expr!r}")
    prepared = fold_constants(flip_literals(to_nnf(expr)))
    builder = _Builder()
    tree = fold_logic(
        prepared,
        builder.convert,
        lambda node, kids: ExpressionTree(TreeOperator.AND, tuple(kids)),
        lambda node, kids: ExpressionTree(TreeOperator.OR, tuple(kids)),
        lambda node, child: _negate(child),
    )
    for step in (_fold_maybe, _flatten, _to_cnf, _flatten):
        tree = _tree_fold(tree, step)
    expression, leaves = _renumber(tree, builder.leaves)
    return SearchArgument(leaves, expression)

