"""The predicate language: one engine-neutral expression tree and the ways into and out of it.

Submodules: `nodes` (the tree and builders), `parser` (filter text), `render` (canonical text), `binary`
(compact bytes), `bind` (resolve against a schema), `evaluate` (three-valued evaluation), `normalize`
(NNF, constant folding, range merging, DNF/CNF), `sarg` (Hive SearchArgument view), `like` (LIKE patterns).
"""

from sargable.expr.nodes import (
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
    Operand,
    Or,
    Regex,
    and_,
    col,
    columns_of,
    fold,
    lit,
    or_,
    transform,
    walk,
)

__all__ = [
    "FALSE",
    "NULL_LITERAL",
    "TRUE",
    "And",
    "Between",
    "Column",
    "Comparison",
    "Expr",
    "Func",
    "In",
    "IsNull",
    "Like",
    "Literal",
    "Not",
    "Operand",
    "Or",
    "Regex",
    "and_",
    "col",
    "columns_of",
    "fold",
    "lit",
    "or_",
    "transform",
    "walk",
]
