"""`p IS TRUE` and `p IS FALSE` as ordinary two-valued predicates, for the parser's `IS [NOT] TRUE|FALSE`.

SQL's `p IS TRUE` is TRUE where `p` is TRUE and FALSE where `p` is FALSE or NULL (never NULL), so `NOT (p IS TRUE)`
keeps the rows where `p` is NULL, which `NOT p` drops. The rewrite pushes the test down to the leaves through
NOT / AND / OR (`(a AND b) IS TRUE` is `a IS TRUE AND b IS TRUE`, `(a AND b) IS FALSE` is `a IS FALSE OR b IS
FALSE`) and makes each leaf two-valued by adding the NULL tests of what can make it NULL:

- a comparison, LIKE or RLIKE is NULL exactly when one of its operands is: `a = 1 IS TRUE` is
  `a = 1 AND a IS NOT NULL`; `IS FALSE` is `NOT a = 1 AND a IS NOT NULL`;
- `<=>`, `IS [NOT] NULL` are never NULL: `IS TRUE` is the predicate itself;
- IN and BETWEEN over literals are NULL exactly when their operand is; with columns or NULL among the values
  they are first spelled out as SQL defines them (`x IN (a, b)` is `x = a OR x = b`, BETWEEN is `>= AND <=`);
- a boolean value (a column, a function, a literal) is compared null-safely: `flag IS TRUE` is `flag <=> TRUE`.

Each rewrite is exact in SQL's three-valued logic and uses only nodes every layer already handles. The walk
descends NOT / AND / OR with an explicit stack, so deep trees don't reach Python's recursion limit.
"""

from __future__ import annotations

from sargable.expr.nodes import (
    FALSE,
    TRUE,
    And,
    Between,
    Comparison,
    Expr,
    In,
    IsNull,
    Literal,
    Not,
    Operand,
    Or,
    and_,
    or_,
)


def is_true(predicate: Expr) -> Expr:
    """`predicate IS TRUE`: TRUE where `predicate` is TRUE, FALSE where it is FALSE or NULL."""
    return _rewrite(predicate, True)


def is_false(predicate: Expr) -> Expr:
    """`predicate IS FALSE`: TRUE where `predicate` is FALSE, FALSE where it is TRUE or NULL."""
    return _rewrite(predicate, False)


def _rewrite(root: Expr, truth: bool) -> Expr:
    """Post-order over NOT / AND / OR with an explicit stack; leaves go to `_leaf`."""
    results: list[Expr] = []
    stack: list[tuple[Expr, bool, bool]] = [(root, truth, False)]
    while stack:
        node, wanted, expanded = stack.pop()
        kind = type(node)
        if kind is Not:
            stack.append((node.child, not wanted, False))  # type: ignore[attr-defined]
        elif kind in (And, Or) and not expanded:
            stack.append((node, wanted, True))
            stack.extend((child, wanted, False) for child in reversed(node.children()))
        elif kind in (And, Or):
            count = len(node.children())
            parts = results[len(results) - count :]
            del results[len(results) - count :]
            results.append((and_ if (kind is And) == wanted else or_)(*parts))
        else:
            results.append(_leaf(node, wanted))
    return results[0]


def _not_null(operands: tuple[Expr, ...]) -> list[Expr]:
    """`x IS NOT NULL` for each operand that may be NULL (a literal is NULL only as the NULL literal)."""
    return [IsNull(o, negated=True) for o in operands if not isinstance(o, Literal)]


def _leaf(node: Expr, wanted: bool) -> Expr:
    """A leaf predicate's `IS TRUE` (`wanted`) or `IS FALSE` as a two-valued predicate."""
    if isinstance(node, IsNull) or (isinstance(node, Comparison) and node.op == "<=>"):
        return node if wanted else Not(node)
    if isinstance(node, Literal) and (node.value is None or isinstance(node.value, bool)):
        return TRUE if node.value is not None and node.value == wanted else FALSE
    if isinstance(node, Operand):
        return Comparison("<=>", node, TRUE if wanted else FALSE)
    if isinstance(node, In) and not all(_known(v) for v in node.values):
        spelled = [Comparison("!=" if node.negated else "=", node.operand, v) for v in node.values]
        return _rewrite((and_ if node.negated else or_)(*spelled), wanted)
    if isinstance(node, Between) and not (_known(node.low) and _known(node.high)):
        between = and_(Comparison(">=", node.operand, node.low), Comparison("<=", node.operand, node.high))
        return _rewrite(Not(between) if node.negated else between, wanted)
    operands = (node.left, node.right) if isinstance(node, Comparison) else (node.operand,)  # type: ignore[attr-defined]
    if any(isinstance(o, Literal) and o.value is None for o in operands):
        return FALSE
    return and_(node if wanted else Not(node), *_not_null(operands))


def _known(value: Expr) -> bool:
    """A non-NULL literal: an IN or BETWEEN over these is NULL only when its operand is."""
    return isinstance(value, Literal) and value.value is not None
