"""Predicate analysis and decomposition: which part of a filter storage answers, and what the engine still applies.

- `PredicateAnalyzer` (Hive's IndexPredicateAnalyzer): finds the `column op constant` conjuncts of a filter that a
  storage handler registered for, and returns them as `SearchCondition`s plus the residual.
- `decompose` splits a filter three ways for a partitioned table with file statistics: the partition part (exact,
  answered by the metastore, not re-applied), the file part (inclusive, answered by data skipping, so it stays in
  the residual) and the residual (what the engine applies to the rows it reads).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from sargable.errors import PushdownError
from sargable.expr.bound import BoundFilter
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
    and_,
    columns_of,
    or_,
)
from sargable.expr.normalize import fold_constants, fold_logic, merge_ranges, to_nnf
from sargable.expr.parser import parse

SUPPORTED_OPS = (
    "=",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "<=>",
    "in",
    "not in",
    "between",
    "not between",
    "is null",
    "is not null",
    "like",
    "not like",
)
"""Operators a `PredicateAnalyzer` can be asked to recognize (`add_comparison_op`)."""


def _expression(expr: Any, what: str) -> Expr:
    if isinstance(expr, str):
        return parse(expr)
    if not isinstance(expr, Expr):
        raise PushdownError(f"{what} takes a sargable.Expr or filter text, got {type(expr).__name__}: {expr!r}")
    return expr


def conjuncts(expr: Expr) -> tuple[Expr, ...]:
    """The operands of a top-level AND (ANDs are flat), or the expression itself."""
    return expr.children() if isinstance(expr, And) else (expr,)


@dataclass(frozen=True, slots=True)
class SearchCondition:
    """A conjunct of the form `column op constant` that storage can answer.

    `constant` is the literal's value; a tuple of values for `in` / `not in` (NULLs left out of `in`, which can't
    match them), `(low, high)` for `between`, None for `is null` / `is not null`, the pattern for `like` (its ESCAPE
    character is `expr.escape`). `expr` is the original conjunct, as written (a constant on the left included).
    """

    column: str
    op: str
    constant: Any
    expr: Expr


class PredicateAnalyzer:
    """Finds the sargable conjuncts of a predicate (seed: Hive's IndexPredicateAnalyzer).

    No operator is recognized until `add_comparison_op` registers it (see `SUPPORTED_OPS`). Every column is allowed
    until `clear_allowed_columns` or `allow_column` is called; from then on only the columns allowed by name
    (case-insensitive). Only the conjuncts of a top-level AND are analysed; a comparison with the constant on the
    left is flipped (`3 < x` is the condition `x > 3`).
    """

    def __init__(self) -> None:
        self._ops: set[str] = set()
        self._allowed: set[str] | None = None

    def add_comparison_op(self, op: str) -> None:
        """Register an operator the storage can answer, e.g. "=", "<", "in", "between", "is null", "like"."""
        normalized = " ".join(op.lower().split()) if isinstance(op, str) else op
        if normalized not in SUPPORTED_OPS:
            raise PushdownError(f"unknown comparison operator {op!r}; supported: {', '.join(SUPPORTED_OPS)}")
        self._ops.add(normalized)

    def clear_allowed_columns(self) -> None:
        """Allow no column (until `allow_column`); initially every column is allowed."""
        self._allowed = set()

    def allow_column(self, name: str) -> None:
        """Allow comparisons on `name`; the first call restricts analysis to the columns allowed by name."""
        if not isinstance(name, str) or not name:
            raise PushdownError(f"a column name must be a non-empty string, got {name!r}")
        if self._allowed is None:
            self._allowed = set()
        self._allowed.add(name.lower())

    def _column_ok(self, node: Expr) -> bool:
        return isinstance(node, Column) and (self._allowed is None or node.name.lower() in self._allowed)

    def _condition(self, node: Expr) -> SearchCondition | None:
        if isinstance(node, Comparison):
            left, op, right = node.left, node.op, node.right
            if isinstance(left, Literal) and isinstance(right, Column):
                left, op, right = right, FLIPPED_OP[op], left
            if not (self._column_ok(left) and isinstance(right, Literal)):
                return None
            if right.value is None and op != "<=>":
                return None
            return SearchCondition(left.name, op, right.value, node) if op in self._ops else None  # type: ignore[attr-defined]
        if isinstance(node, In):
            op = "not in" if node.negated else "in"
            literal = all(isinstance(v, Literal) for v in node.values)
            if op not in self._ops or not self._column_ok(node.operand) or not literal:
                return None
            values = tuple(v.value for v in node.values)  # type: ignore[attr-defined]
            if None in values:
                if node.negated:
                    return None
                values = tuple(v for v in values if v is not None)
                if not values:
                    return None
            return SearchCondition(node.operand.name, op, values, node)  # type: ignore[attr-defined]
        if isinstance(node, Between):
            op = "not between" if node.negated else "between"
            bounds = (node.low, node.high)
            if op not in self._ops or not self._column_ok(node.operand):
                return None
            if not all(isinstance(b, Literal) and b.value is not None for b in bounds):
                return None
            return SearchCondition(node.operand.name, op, (node.low.value, node.high.value), node)  # type: ignore[attr-defined]
        if isinstance(node, IsNull):
            op = "is not null" if node.negated else "is null"
            if op in self._ops and self._column_ok(node.operand):
                return SearchCondition(node.operand.name, op, None, node)  # type: ignore[attr-defined]
            return None
        if isinstance(node, Like):
            op = "not like" if node.negated else "like"
            if op in self._ops and self._column_ok(node.operand):
                return SearchCondition(node.operand.name, op, node.pattern, node)  # type: ignore[attr-defined]
        return None

    def analyze(self, expr: Expr | str) -> tuple[list[SearchCondition], Expr | None]:
        """The search conditions found among the top-level conjuncts, and the residual (None: storage does it all)."""
        predicate = _expression(expr, "analyze")
        conditions: list[SearchCondition] = []
        residual: list[Expr] = []
        for conjunct in conjuncts(predicate):
            condition = self._condition(conjunct)
            if condition is None:
                residual.append(conjunct)
            else:
                conditions.append(condition)
        return conditions, (and_(*residual) if residual else None)

    def translate(self, conditions: Iterable[SearchCondition]) -> Expr:
        """The conjunction of the conditions' expressions (TRUE for none), as `analyze` found them."""
        items = list(conditions)
        for item in items:
            if not isinstance(item, SearchCondition):
                raise PushdownError(f"translate takes SearchCondition objects, got {type(item).__name__}")
        return and_(*(item.expr for item in items))


class Decomposed(NamedTuple):
    """A filter split for a partitioned table: each part an `Expr` (a `BoundFilter` when the filter was one), or None
    when there is nothing to apply.

    - `partition`: references partition keys only; the metastore answers it exactly. The conjuncts made only of
      partition keys are not in `residual`; predicates implied by mixed conjuncts (`ds IN (d1, d2)` from
      `(ds = d1 AND x > 5) OR (ds = d2 AND y < 3)`) are added here and their conjuncts stay in `residual`.
    - `files`: references statistics columns only and is implied by the filter; data skipping answers it
      inclusively, so it is also in `residual`.
    - `residual`: what the engine must still apply to the rows of the files it reads.
    """

    partition: Expr | BoundFilter | None
    files: Expr | BoundFilter | None
    residual: Expr | BoundFilter | None


def _names(values: Any, what: str) -> frozenset[str]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence | set | frozenset):
        raise PushdownError(f"{what} must be a list of column names, got {values!r}")
    for value in values:
        if not isinstance(value, str) or not value:
            raise PushdownError(f"{what} must hold non-empty column names, got {value!r}")
    return frozenset(v.lower() for v in values)


def _within(node: Expr, allowed: frozenset[str]) -> bool:
    return all(name.lower() in allowed for name in columns_of(node))


def _skippable(node: Expr) -> bool:
    """Leaves that file statistics can answer: a column against literals, NULL tests, LIKE, constants."""
    if isinstance(node, Comparison):
        sides = (node.left, node.right)
        return any(isinstance(s, Column) for s in sides) and any(isinstance(s, Literal) for s in sides)
    if isinstance(node, In):
        return isinstance(node.operand, Column) and all(isinstance(v, Literal) for v in node.values)
    if isinstance(node, Between):
        return isinstance(node.operand, Column) and isinstance(node.low, Literal) and isinstance(node.high, Literal)
    if isinstance(node, (IsNull, Like)):
        return isinstance(node.operand, Column)
    return isinstance(node, (Column, Literal))


def implied(expr: Expr, allowed: frozenset[str], leaf_ok: Any = None) -> Expr | None:
    """The tightest predicate over `allowed` columns that this method finds implied by `expr` (None: nothing).

    In negation normal form every leaf that uses other columns (or that `leaf_ok` rejects) is replaced by TRUE,
    which can only make the predicate weaker; the result is then simplified (`x = 1 OR x = 2` is `x IN (1, 2)`).
    """

    def leaf(node: Expr) -> Expr | None:
        keep = _within(node, allowed) and (leaf_ok is None or leaf_ok(node))
        return node if keep else None

    def conjunction(node: Expr, kids: list[Expr | None]) -> Expr | None:
        kept = [k for k in kids if k is not None]
        return and_(*kept) if kept else None

    def disjunction(node: Expr, kids: list[Expr | None]) -> Expr | None:
        return None if any(k is None for k in kids) else or_(*kids)  # type: ignore[arg-type]

    def negation(node: Expr, child: Expr | None) -> Expr | None:
        return None if child is None else Not(child)

    projected = fold_logic(to_nnf(expr), leaf, conjunction, disjunction, negation)
    if projected is None:
        return None
    simplified = fold_constants(merge_ranges(projected))
    return None if isinstance(simplified, Literal) and simplified.value is True else simplified


def decompose(
    expr: Expr | str | BoundFilter, partition_keys: Sequence[str], stats_columns: Sequence[str]
) -> Decomposed:
    """Split a filter into the exact partition part, the inclusive file-statistics part and the residual.

    A `BoundFilter` splits into bound parts, taken as they are by the layers below (nothing is bound again).
    """
    if isinstance(expr, BoundFilter):
        parts = _decompose(expr.expr, partition_keys, stats_columns)
        return Decomposed(*(None if part is None else expr.part(part) for part in parts))
    return _decompose(_expression(expr, "decompose"), partition_keys, stats_columns)


def _decompose(predicate: Expr, partition_keys: Sequence[str], stats_columns: Sequence[str]) -> Decomposed:
    keys = _names(partition_keys, "partition_keys")
    stats = _names(stats_columns, "stats_columns")
    partition: list[Expr] = []
    implied_partition: list[Expr] = []
    files: list[Expr] = []
    residual: list[Expr] = []
    for conjunct in conjuncts(predicate):
        if keys and _within(conjunct, keys):
            partition.append(conjunct)
            continue
        residual.append(conjunct)
        if keys:
            found = implied(conjunct, keys)
            if found is not None:
                implied_partition.append(found)
        if stats:
            found = implied(conjunct, stats, _skippable)
            if found is not None:
                files.append(found)
    parts = [*partition, *implied_partition]
    return Decomposed(
        partition=and_(*parts) if parts else None,
        files=and_(*files) if files else None,
        residual=and_(*residual) if residual else None,
    )
