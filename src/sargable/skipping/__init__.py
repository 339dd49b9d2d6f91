"""Data skipping: decide from file statistics which files can't hold a row that satisfies a predicate.

- `may_match(expr, file, schema)`: False only when no row of the file can satisfy the predicate.
- `file_truth(expr, file, schema)`: the ORC-style view, `Truth.ALL` (every row satisfies it: the file needs no
  residual filter), `Truth.NONE` (skip the file) or `Truth.SOME`; `truth_value` gives the finer outcome set.
- `select_files(expr, files, schema)`: `may_match` over many files at once, vectorized with pyarrow over a
  `FileStatsTable` (the statistics of many files as Arrow columns); a list of `FileStats` in gives a list out.

One evaluator (`vector`) answers all of them: over Arrow columns for many files, and over one file's values for
`may_match` / `file_truth` / `truth_value`. Value-set skipping needs nothing else: `column IN (values)` is a
predicate like any other (large lists take a sort-based path), so e.g. join keys prune files through `select_files`.

The predicate is bound to `schema` (a list of `(name, type)` pairs) and compiled once per expression and schema;
negation is pushed into the leaves first, so no "may match" answer is ever negated. NULLs follow SQL's three-valued
logic, NaN follows Spark (above every number, equal to itself), a missing statistic means "unknown", and a file
without rows matches nothing.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from sargable.errors import PushdownError
from sargable.expr.nodes import Expr
from sargable.expr.truth import TruthValue
from sargable.skipping.leaves import TRUE, compile_predicate, schema_key
from sargable.skipping.table import FileStatsTable
from sargable.skipping.vector import file_outcomes, may_match_mask
from sargable.stats import FileStats


class Truth(enum.Enum):
    """What file statistics prove about a predicate over all of a file's rows."""

    ALL = "all"
    """Every row satisfies the predicate: read the file without applying the residual."""
    NONE = "none"
    """No row satisfies it: skip the file."""
    SOME = "some"
    """Some rows may satisfy it: read the file and apply the residual."""


def _file(file: Any) -> FileStats:
    if not isinstance(file, FileStats):
        raise PushdownError(f"expected a sargable.FileStats, got {type(file).__name__}")
    return file


def truth_value(expr: Expr | str, file: FileStats, schema: Sequence[tuple[str, Any]]) -> TruthValue:
    """The outcomes (TRUE / FALSE / NULL) the predicate may take on the file's rows; empty for a file without rows."""
    return TruthValue(file_outcomes(compile_predicate(expr, schema), _file(file)))


def may_match(expr: Expr | str, file: FileStats, schema: Sequence[tuple[str, Any]]) -> bool:
    """False only when no row of the file can satisfy the predicate (the file can be skipped)."""
    return bool(file_outcomes(compile_predicate(expr, schema), _file(file), full=False))


def file_truth(expr: Expr | str, file: FileStats, schema: Sequence[tuple[str, Any]]) -> Truth:
    """ALL when every row satisfies the predicate, NONE when none does, else SOME (sound both ways)."""
    outcomes = file_outcomes(compile_predicate(expr, schema), _file(file))
    if not outcomes & TRUE:
        return Truth.NONE
    return Truth.ALL if outcomes == TRUE else Truth.SOME


def select_files(expr: Expr | str, files: Any, schema: Sequence[tuple[str, Any]]) -> Any:
    """The files that may hold a matching row, in their order: `may_match` for each, computed over Arrow columns
(of a list of `FileStats`, only the statistics of the columns the predicate reads are laid out).

    Takes a list of `FileStats` (returns a list), a `FileStatsTable` (returns one), or an Arrow table in the
    `FileStatsTable` layout (returns the selected rows as an Arrow table).
    """
    if isinstance(files, FileStatsTable):
        return files.select(expr)
    if isinstance(files, pa.Table):
        return FileStatsTable.from_arrow(files, schema).select(expr).table
    if isinstance(files, (str, bytes)) or not isinstance(files, Sequence):
        raise PushdownError(
            f"select_files takes a list of FileStats, a FileStatsTable or an Arrow table, got {type(files).__name__}"
        )
    listed = [_file(f) for f in files]
    program = compile_predicate(expr, schema)
    if not listed:
        return []
    read = {name.lower() for name in program.columns}
    used = [(name, dtype) for name, dtype in schema_key(schema) if name.lower() in read]
    mask = may_match_mask(program, FileStatsTable.from_files(listed, used))
    return [f for f, keep in zip(listed, mask.to_pylist(), strict=True) if keep]


__all__ = [
    "FileStatsTable",
    "Truth",
    "TruthValue",
    "file_truth",
    "may_match",
    "select_files",
    "truth_value",
]
