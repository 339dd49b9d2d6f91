"""Normalization: rewrites that keep `evaluate` identical on every row, NULLs included.

- `to_nnf` pushes NOT down to the leaves (De Morgan; `NOT a < b` is `a >= b`, exact under three-valued logic
  because the value order is total, NaN included; `NOT x IN` is `x NOT IN`, and so on). `NOT (a <=> b)` has no
  negated operator and stays a NOT over its leaf.
- `flip_literals` puts the literal of a comparison on the right: `10 < k` is `k > 10`.
- `fold_constants` evaluates column-free leaves, turns comparisons with a NULL literal into NULL (and `x <=> NULL`
  into `x IS NULL`), and simplifies AND/OR around TRUE, FALSE and NULL: `x AND FALSE` is FALSE, `x OR TRUE` is TRUE,
  `x AND TRUE` is `x`, but `x OR NULL` stays (it is NULL, not FALSE, where x is FALSE).
- `merge_ranges` combines the comparisons, IN lists and BETWEENs on one operand inside one AND into the tightest
  equivalent form, and unions them inside one OR when that is shorter.
- `to_dnf` / `to_cnf` distribute with a term cap that is checked before anything is built.

All of them are exact under three-valued logic (Kleene logic is a distributive De Morgan algebra; no rewrite uses
the excluded middle). Two forms stand for results that depend only on whether an operand is NULL:
`operand IS NULL AND NULL` is NULL when the operand is NULL and FALSE otherwise (an empty range, e.g.
`a > 5 AND a < 3`), and `operand IS NOT NULL OR NULL` is TRUE unless the operand is NULL (a range covering every
value, e.g. `a < 5 OR a >= 5`). Folding them to FALSE or TRUE would be wrong for a NULL operand, whose rows the
originals evaluate to NULL: visible as soon as the expression is negated.

Every pass walks only the AND/OR/NOT skeleton without recursion; a leaf such as a 100,000-value IN list is one step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from sargable.domain import Interval, intersect, union
from sargable.errors import ExpressionTooComplexError, SargableError, TypeCoercionError
from sargable.expr.evaluate import compare_values, literal_value, value_key, value_sort_key
from sargable.expr.nodes import (
    FALSE,
    FLIPPED_OP,
    NEGATED_OP,
    NULL_LITERAL,
    TRUE,
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
    Regex,
    and_,
    or_,
)

DEFAULT_MAX_TERMS = 1024
"""The default cap on the number of terms `to_dnf` / `to_cnf` may produce."""

R = TypeVar("R")


def _check(expr: Any, what: str) -> None:
    if not isinstance(expr, Expr):
        raise SargableError(f"{what} needs an expression (sargable.Expr), got {type(expr).__name__}: {expr!r}")


def fold_logic(
    expr: Expr,
    leaf: Callable[[Expr], R],
    conjunction: Callable[[Expr, list[R]], R],
    disjunction: Callable[[Expr, list[R]], R],
    negation: Callable[[Expr, R], R],
) -> R:
    """Bottom-up over the AND/OR/NOT skeleton only, without recursion: every other node is a leaf."""
    results: list[R] = []
    stack: list[tuple[Expr, int]] = [(expr, -1)]
    while stack:
        node, count = stack.pop()
        kind = type(node)
        if count > 0:
            args = results[-count:]
            del results[-count:]
            if kind is And:
                results.append(conjunction(node, args))
            elif kind is Or:
                results.append(disjunction(node, args))
            else:
                results.append(negation(node, args[0]))
        elif kind is not And and kind is not Or and kind is not Not:
            results.append(leaf(node))
        else:
            kids = node.children()
            stack.append((node, len(kids)))
            stack.extend([(kid, -1) for kid in reversed(kids)])
    return results[0]


def _rebuilt(node: Expr, kids: list[Expr]) -> Expr:
    if all(new is old for new, old in zip(kids, node.children(), strict=True)):
        return node
    return node.with_children(tuple(kids))


def _negation_kept(node: Expr, child: Expr) -> Expr:
    return node if child is node.child else Not(child)  # type: ignore[attr-defined]


def _is_null(node: Expr) -> bool:
    return type(node) is Literal and node.value is None


# -- NOT ------------------------------------------------------------------------------------------------------------


def negate(expr: Expr) -> Expr:
    """The negation of `expr` in negation normal form (`to_nnf(NOT expr)`)."""
    _check(expr, "negate")
    return to_nnf(Not(expr))


def _negate_leaf(node: Expr) -> Expr:
    kind = type(node)
    if kind is Comparison and node.op in NEGATED_OP:  # type: ignore[attr-defined]
        return Comparison(NEGATED_OP[node.op], node.left, node.right)  # type: ignore[attr-defined]
    if kind is In:
        return In(node.operand, node.values, not node.negated)  # type: ignore[attr-defined]
    if kind is Between:
        return Between(node.operand, node.low, node.high, not node.negated)  # type: ignore[attr-defined]
    if kind is IsNull:
        return IsNull(node.operand, not node.negated)  # type: ignore[attr-defined]
    if kind is Like:
        return Like(node.operand, node.pattern, node.escape, not node.negated)  # type: ignore[attr-defined]
    if kind is Regex:
        return Regex(node.operand, node.pattern, not node.negated)  # type: ignore[attr-defined]
    if kind is Literal:
        if node.value is True:  # type: ignore[attr-defined]
            return FALSE
        if node.value is False:  # type: ignore[attr-defined]
            return TRUE
        if node.value is None:  # type: ignore[attr-defined]
            return node
    return Not(node)


def to_nnf(expr: Expr) -> Expr:
    """Negation normal form: NOT only directly above leaves that have no negated form (`<=>`, boolean columns)."""
    _check(expr, "to_nnf")
    results: list[Expr] = []
    stack: list[tuple[Expr, bool, bool]] = [(expr, False, False)]
    while stack:
        node, negated, expanded = stack.pop()
        kind = type(node)
        if kind is Not:
            stack.append((node.child, not negated, False))  # type: ignore[attr-defined]
            continue
        if kind is not And and kind is not Or:
            results.append(_negate_leaf(node) if negated else node)
            continue
        kids = node.children()
        if not expanded:
            stack.append((node, negated, True))
            stack.extend((kid, negated, False) for kid in reversed(kids))
            continue
        count = len(kids)
        args = results[len(results) - count :]
        del results[len(results) - count :]
        if not negated:
            results.append(_rebuilt(node, args))
        else:
            results.append(or_(*args) if kind is And else and_(*args))
    return results[0]


# -- literals on the right ------------------------------------------------------------------------------------------


def _flip_leaf(node: Expr) -> Expr:
    if type(node) is Comparison and isinstance(node.left, Literal) and not isinstance(node.right, Literal):  # type: ignore[attr-defined]
        return Comparison(FLIPPED_OP[node.op], node.right, node.left)  # type: ignore[attr-defined]
    return node


def flip_literals(expr: Expr) -> Expr:
    """Put comparison literals on the right (`10 < k` becomes `k > 10`)."""
    _check(expr, "flip_literals")
    return fold_logic(expr, _flip_leaf, _rebuilt, _rebuilt, _negation_kept)


# -- constants ------------------------------------------------------------------------------------------------------


def _constant(node: Expr) -> Expr:
    try:
        value = literal_value(node)
    except SargableError:
        return node
    if value is True:
        return TRUE
    if value is False:
        return FALSE
    return NULL_LITERAL if value is None else node


def _fold_leaf(node: Expr) -> Expr:
    kind = type(node)
    if kind is Comparison:
        left, right = node.left, node.right  # type: ignore[attr-defined]
        left_literal, right_literal = isinstance(left, Literal), isinstance(right, Literal)
        if left_literal and right_literal:
            return _constant(node)
        if node.op == "<=>":  # type: ignore[attr-defined]
            if left_literal and left.value is None:
                return IsNull(right)
            if right_literal and right.value is None:
                return IsNull(left)
            return node
        return NULL_LITERAL if _is_null(left) or _is_null(right) else node
    if kind is In:
        if _is_null(node.operand) or all(_is_null(v) for v in node.values):  # type: ignore[attr-defined]
            return NULL_LITERAL
        if isinstance(node.operand, Literal) and all(isinstance(v, Literal) for v in node.values):  # type: ignore[attr-defined]
            return _constant(node)
        return node
    if kind is Between:
        if _is_null(node.operand) or (_is_null(node.low) and _is_null(node.high)):  # type: ignore[attr-defined]
            return NULL_LITERAL
        if all(isinstance(part, Literal) for part in node.children()):
            return _constant(node)
        return node
    if kind in (IsNull, Like, Regex) and isinstance(node.operand, Literal):  # type: ignore[attr-defined]
        return _constant(node)
    return node


def _fold_connective(node: Expr, kids: list[Expr], absorbing: bool) -> Expr:
    """AND (absorbing False) or OR (absorbing True): drop identities, stop at the absorbing value, keep one NULL."""
    seen: dict[Expr, None] = {}
    has_null = False
    for kid in kids:
        if type(kid) is Literal:
            if kid.value is absorbing:
                return TRUE if absorbing else FALSE
            if kid.value is (not absorbing):
                continue
            if kid.value is None:
                has_null = True
                continue
        seen.setdefault(kid, None)
    out = list(seen)
    if has_null:
        out.append(NULL_LITERAL)
    if len(out) == len(kids) and all(a is b for a, b in zip(out, node.children(), strict=True)):
        return node
    return or_(*out) if absorbing else and_(*out)


def _fold_not(node: Expr, child: Expr) -> Expr:
    """NOT over a folded child: a constant, or a leaf that folding changed (`x <=> NULL` became `x IS NULL`), takes
    the NOT into itself, so a normalized expression stays in NNF and normalizing it again changes nothing."""
    if child is not node.child or (type(child) is Literal and (child.value is None or type(child.value) is bool)):
        return _negate_leaf(child)
    return node


def fold_constants(expr: Expr) -> Expr:
    """Evaluate what needs no row and simplify AND/OR around TRUE/FALSE/NULL, preserving NULL exactly."""
    _check(expr, "fold_constants")
    return fold_logic(
        expr,
        _fold_leaf,
        lambda node, kids: _fold_connective(node, kids, False),
        lambda node, kids: _fold_connective(node, kids, True),
        _fold_not,
    )


# -- ranges ---------------------------------------------------------------------------------------------------------

_RANGE_OPS = frozenset({"=", "!=", "<", "<=", ">", ">="})
_AND_KINDS = frozenset({"=", "!=", "<", "<=", ">", ">=", "in", "notin", "between"})
_OR_KINDS = frozenset({"=", "!=", "<", "<=", ">", ">=", "in", "between", "notbetween"})


def _present(node: Expr) -> bool:
    return isinstance(node, Literal) and node.value is not None


def range_constraint(leaf: Expr) -> tuple[Expr, str, tuple[Literal, ...]] | None:
    """`(operand, kind, literals)` when `leaf` restricts one operand by non-NULL literals, else None.

    Kinds: `=`, `!=`, `<`, `<=`, `>`, `>=` (literal moved to the right), `in`, `notin`, `between`, `notbetween`.
    Every such leaf is NULL exactly when its operand is NULL, which is what makes merging them exact.
    """
    kind = type(leaf)
    if kind is Comparison and leaf.op in _RANGE_OPS:  # type: ignore[attr-defined]
        left, right, op = leaf.left, leaf.right, leaf.op  # type: ignore[attr-defined]
        if isinstance(left, Literal) and not isinstance(right, Literal):
            left, right, op = right, left, FLIPPED_OP[op]
        if _present(right) and not isinstance(left, Literal):
            return left, op, (right,)  # type: ignore[return-value]
    elif kind is In:
        operand, values = leaf.operand, leaf.values  # type: ignore[attr-defined]
        if not isinstance(operand, Literal) and all(_present(v) for v in values):
            return operand, "notin" if leaf.negated else "in", values  # type: ignore[attr-defined,return-value]
    elif kind is Between:
        operand, low, high = leaf.operand, leaf.low, leaf.high  # type: ignore[attr-defined]
        if not isinstance(operand, Literal) and _present(low) and _present(high):
            return operand, "notbetween" if leaf.negated else "between", (low, high)  # type: ignore[attr-defined,return-value]
    return None


def empty_range(operand: Expr) -> Expr:
    """NULL when `operand` is NULL, FALSE otherwise: what a contradictory range on `operand` evaluates to."""
    return And((IsNull(operand), NULL_LITERAL))


def full_range(operand: Expr) -> Expr:
    """TRUE unless `operand` is NULL (then NULL): what a range covering every value evaluates to."""
    return Or((IsNull(operand, negated=True), NULL_LITERAL))


def _cmp(a: Literal, b: Literal) -> int:
    """The order of two literals' values (`compare_values`): the order intervals of literals are merged in."""
    return compare_values(a.value, b.value)


def _sorted_literals(literals: Any) -> list[Literal]:
    return sorted(literals, key=lambda lit: value_sort_key(lit.value))


def _points(operand: Expr, literals: list[Literal], negated: bool = False) -> Expr:
    if len(literals) == 1:
        return Comparison("!=" if negated else "=", operand, literals[0])
    return In(operand, tuple(literals), negated)


def _check_comparable(items: list[tuple[str, tuple[Literal, ...]]]) -> None:
    first = items[0][1][0].value
    for _, literals in items:
        for literal in literals:
            compare_values(first, literal.value)


def _intersect(operand: Expr, items: list[tuple[str, tuple[Literal, ...]]]) -> Expr:
    """The conjunction of range constraints on `operand` as one tightest expression."""
    span = Interval()
    points: dict[Any, Literal] | None = None
    excluded: dict[Any, Literal] = {}
    for kind, literals in items:
        if kind in ("<", "<="):
            span = intersect(span, Interval(hi=literals[0], hi_incl=kind == "<="), _cmp)
        elif kind in (">", ">="):
            span = intersect(span, Interval(literals[0], kind == ">="), _cmp)
        elif kind == "between":
            span = intersect(span, Interval(literals[0], True, literals[1], True), _cmp)
        elif kind in ("=", "in"):
            new: dict[Any, Literal] = {}
            for literal in literals:
                new.setdefault(value_key(literal.value), literal)
            points = new if points is None else {k: v for k, v in points.items() if k in new}
        else:
            for literal in literals:
                excluded.setdefault(value_key(literal.value), literal)

    if points is not None:
        kept = _sorted_literals(v for k, v in points.items() if k not in excluded and span.contains(v, _cmp))
        return _points(operand, kept) if kept else empty_range(operand)
    if span.is_empty(_cmp):
        return empty_range(operand)
    if span.lo is not None and span.hi is not None and _cmp(span.lo, span.hi) == 0:
        if value_key(span.lo.value) in excluded:
            return empty_range(operand)
        return Comparison("=", operand, span.lo)
    remaining = []
    for literal in excluded.values():
        if span.lo is not None:
            order = _cmp(literal, span.lo)
            if order < 0 or (order == 0 and not span.lo_incl):
                continue
            if order == 0:
                span = replace(span, lo_incl=False)
                continue
        if span.hi is not None:
            order = _cmp(literal, span.hi)
            if order > 0 or (order == 0 and not span.hi_incl):
                continue
            if order == 0:
                span = replace(span, hi_incl=False)
                continue
        remaining.append(literal)
    terms: list[Expr] = []
    if span.lo is not None and span.hi is not None and span.lo_incl and span.hi_incl:
        terms.append(Between(operand, span.lo, span.hi))
    else:
        if span.lo is not None:
            terms.append(Comparison(">=" if span.lo_incl else ">", operand, span.lo))
        if span.hi is not None:
            terms.append(Comparison("<=" if span.hi_incl else "<", operand, span.hi))
    if remaining:
        terms.append(_points(operand, _sorted_literals(remaining), negated=True))
    return and_(*terms)


def _intervals(items: list[tuple[str, tuple[Literal, ...]]]) -> list[Interval]:
    out: list[Interval] = []
    for kind, literals in items:
        first = literals[0]
        if kind in ("=", "in"):
            out.extend(Interval.point(literal) for literal in literals)
        elif kind in ("<", "<="):
            out.append(Interval(None, False, first, kind == "<="))
        elif kind in (">", ">="):
            out.append(Interval(first, kind == ">=", None, False))
        elif kind == "between":
            if _cmp(literals[0], literals[1]) <= 0:
                out.append(Interval(literals[0], True, literals[1], True))
        elif kind == "!=":
            out.extend((Interval(None, False, first, False), Interval(first, False, None, False)))
        else:
            out.extend((Interval(None, False, literals[0], False), Interval(literals[1], False, None, False)))
    return out


def _interval_order(interval: Interval) -> tuple[Any, ...]:
    low = interval.lo
    return (0,) if low is None else (1, value_sort_key(low.value), not interval.lo_incl)


def _union(operand: Expr, items: list[tuple[str, tuple[Literal, ...]]]) -> list[Expr]:
    """The disjunction of range constraints on `operand` as few terms as possible."""
    merged = union(sorted(_intervals(items), key=_interval_order), _cmp)
    if not merged:
        return [empty_range(operand)]
    if merged[0].lo is None and merged[-1].hi is None:
        if len(merged) == 1:
            return [full_range(operand)]
        gaps = [merged[i].hi for i in range(len(merged) - 1)]
        if all(
            not merged[i].hi_incl and not merged[i + 1].lo_incl and _cmp(merged[i].hi, merged[i + 1].lo) == 0
            for i in range(len(merged) - 1)
        ):
            return [_points(operand, gaps, negated=True)]  # type: ignore[arg-type]
    points = [iv.lo for iv in merged if iv.lo is not None and iv.hi is not None and _cmp(iv.lo, iv.hi) == 0]
    terms: list[Expr] = [_points(operand, points)] if points else []
    for iv in merged:
        if iv.lo is not None and iv.hi is not None:
            if _cmp(iv.lo, iv.hi) == 0:
                continue
            if iv.lo_incl and iv.hi_incl:
                terms.append(Between(operand, iv.lo, iv.hi))
                continue
        parts = []
        if iv.lo is not None:
            parts.append(Comparison(">=" if iv.lo_incl else ">", operand, iv.lo))
        if iv.hi is not None:
            parts.append(Comparison("<=" if iv.hi_incl else "<", operand, iv.hi))
        terms.append(and_(*parts))
    return terms


def _merge(node: Expr, kids: list[Expr], conjunctive: bool) -> Expr:
    allowed = _AND_KINDS if conjunctive else _OR_KINDS
    groups: dict[Any, list[int]] = {}
    operands: dict[Any, Expr] = {}
    constraints: list[tuple[Expr, str, tuple[Literal, ...]] | None] = []
    for index, kid in enumerate(kids):
        constraint = range_constraint(kid)
        if constraint is not None and constraint[1] not in allowed:
            constraint = None
        constraints.append(constraint)
        if constraint is not None:
            operand = constraint[0]
            key = (operand.name, operand.type) if type(operand) is Column else operand  # type: ignore[attr-defined]
            groups.setdefault(key, []).append(index)
            operands.setdefault(key, operand)
    replaced: dict[int, list[Expr]] = {}
    dropped: set[int] = set()
    for key, indexes in groups.items():
        operand = operands[key]
        if len(indexes) < 2:
            continue
        items = [constraints[i][1:] for i in indexes]  # type: ignore[index]
        try:
            _check_comparable(items)  # type: ignore[arg-type]
            terms = [_intersect(operand, items)] if conjunctive else _union(operand, items)  # type: ignore[arg-type]
        except TypeCoercionError:
            continue
        if not conjunctive and len(terms) >= len(indexes):
            continue
        replaced[indexes[0]] = terms
        dropped.update(indexes[1:])
    if not replaced:
        return _rebuilt(node, kids)
    out: list[Expr] = []
    for index, kid in enumerate(kids):
        if index not in dropped:
            out.extend(replaced.get(index, (kid,)))
    return and_(*out) if conjunctive else or_(*out)


def merge_ranges(expr: Expr) -> Expr:
    """Merge range constraints on one operand: tightest form inside an AND, fewer terms inside an OR."""
    _check(expr, "merge_ranges")
    return fold_logic(
        expr,
        lambda node: node,
        lambda node, kids: _merge(node, kids, True),
        lambda node, kids: _merge(node, kids, False),
        _negation_kept,
    )


# -- DNF / CNF ------------------------------------------------------------------------------------------------------


def _check_cap(max_terms: Any) -> int:
    if isinstance(max_terms, bool) or not isinstance(max_terms, int) or max_terms < 1:
        raise SargableError(f"max_terms must be a positive integer, got {max_terms!r}")
    return max_terms


def _distribute(expr: Expr, max_terms: int, disjunctive: bool) -> Expr:
    """DNF (`disjunctive`) or CNF of an NNF expression: count the terms first, then build them."""
    cap = max_terms + 1

    def product(node: Expr, counts: list[int]) -> int:
        total = 1
        for count in counts:
            total = min(total * count, cap)
        return total

    def total(node: Expr, counts: list[int]) -> int:
        return min(sum(counts), cap)

    count = fold_logic(
        expr,
        lambda node: 1,
        product if disjunctive else total,
        total if disjunctive else product,
        lambda node, child: 1,
    )
    form = "DNF" if disjunctive else "CNF"
    if count > max_terms:
        raise ExpressionTooComplexError(
            f"the {form} of this filter would have more than {max_terms} terms (max_terms={max_terms}); "
            "simplify the filter or raise max_terms"
        )

    Terms = list[tuple[Expr, ...]]

    def cross(node: Expr, kids: list[Terms]) -> Terms:
        single: list[Expr] = []
        multiple: list[Terms] = []
        for terms in kids:
            if len(terms) == 1:
                single.extend(terms[0])
            else:
                multiple.append(terms)
        result: Terms = [tuple(single)]
        for terms in multiple:
            result = [left + right for left in result for right in terms]
        return result

    def concat(node: Expr, kids: list[Terms]) -> Terms:
        return [term for terms in kids for term in terms]

    terms = fold_logic(
        expr,
        lambda node: [(node,)],
        cross if disjunctive else concat,
        concat if disjunctive else cross,
        lambda node, child: [(node,)],
    )
    inner, outer = (and_, or_) if disjunctive else (or_, and_)
    built = dict.fromkeys(inner(*dict.fromkeys(term)) for term in terms)
    return outer(*built)


def to_dnf(expr: Expr, max_terms: int = DEFAULT_MAX_TERMS) -> Expr:
    """Disjunctive normal form (an OR of ANDs of leaves), or `ExpressionTooComplexError` past `max_terms` terms."""
    _check(expr, "to_dnf")
    return _distribute(to_nnf(expr), _check_cap(max_terms), True)


def to_cnf(expr: Expr, max_terms: int = DEFAULT_MAX_TERMS) -> Expr:
    """Conjunctive normal form (an AND of ORs of leaves), or `ExpressionTooComplexError` past `max_terms` terms."""
    _check(expr, "to_cnf")
    return _distribute(to_nnf(expr), _check_cap(max_terms), False)


def normalize(expr: Expr) -> Expr:
    """NNF, literals on the right, constants folded, ranges merged (not DNF): the form planners start from."""
    _check(expr, "normalize")
    return fold_constants(merge_ranges(fold_constants(flip_literals(to_nnf(expr)))))
