"""The predicate language: one engine-neutral expression tree and the ways into and out of it.

Submodules: `tokens` (the lexicon: keywords, operators, tokenizers), `nodes` (the tree and builders), `parser`
(filter text), `render` (canonical text), `binary` (compact bytes), `bind` (resolve against a schema), `bound`
(`BoundFilter`: a filter bound once, at the edge, for the layers below), `evaluate` (three-valued evaluation),
`normalize` (NNF, constant folding, range merging, DNF/CNF), `sarg` (Hive SearchArgument view), `like` (LIKE
patterns), `java_regex` (Java regular expressions as Python's), `linear_regex` (linear-time matching of those
patterns), `truth_tests` (`IS [NOT] TRUE|FALSE`).
"""

from sargable.expr.binary import dumps, loads
from sargable.expr.bind import bind
from sargable.expr.bound import BoundFilter, bind_filter, conjoin
from sargable.expr.evaluate import evaluate, evaluate_many
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
from sargable.expr.normalize import fold_constants, merge_ranges, normalize, to_cnf, to_dnf, to_nnf
from sargable.expr.parser import parse
from sargable.expr.render import render, render_sql
from sargable.expr.sarg import SearchArgument, to_sarg

__all__ = [
    "FALSE",
    "NULL_LITERAL",
    "TRUE",
    "And",
    "Between",
    "BoundFilter",
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
    "SearchArgument",
    "and_",
    "bind",
    "bind_filter",
    "col",
    "columns_of",
    "conjoin",
    "dumps",
    "evaluate",
    "evaluate_many",
    "fold",
    "fold_constants",
    "lit",
    "loads",
    "merge_ranges",
    "normalize",
    "or_",
    "parse",
    "render",
    "render_sql",
    "to_cnf",
    "to_dnf",
    "to_nnf",
    "to_sarg",
    "transform",
    "walk",
]
