"""sargable: partition pruning, filter pushdown and data skipping for big partitioned tables.

The public API (see docs/api.md): `parse`/`render`/`dumps`/`loads` for predicates (node classes in
`sargable.expr`), `Metastore` and its `Table` handle for partitions and files, `Table.scan` -> `Scan` for what a
query reads, `may_match`/`select_files`/`decompose` for pushdown, and `sargable.spark` for the PySpark pipeline.

Importing the package is cheap: each public name is imported from its module on first use (PEP 562), so
`import sargable` loads neither pyarrow nor numpy, and a command that only lists tables never loads them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from sargable.errors import (
    AlreadyExistsError,
    BindError,
    CommitConflictError,
    DamagedMetastoreError,
    DeletionRefusedError,
    ExpressionTooComplexError,
    FilterSyntaxError,
    InvalidExpressionError,
    KeyEncodingError,
    MetastoreError,
    NoSuchObjectError,
    OptimizeError,
    PathError,
    PatternError,
    PushdownError,
    SargableError,
    SchemaChangeError,
    SerializationError,
    StatisticsError,
    StoreError,
    TypeCoercionError,
)

if TYPE_CHECKING:
    from sargable.analyze import Decomposed, PredicateAnalyzer, SearchCondition, decompose
    from sargable.expr import (
        FALSE,
        TRUE,
        BoundFilter,
        Expr,
        SearchArgument,
        and_,
        bind,
        bind_filter,
        col,
        dumps,
        evaluate,
        evaluate_many,
        lit,
        loads,
        normalize,
        or_,
        parse,
        render,
        to_cnf,
        to_dnf,
        to_nnf,
        to_sarg,
    )
    from sargable.metastore import (
        CommitResult,
        FilterExplain,
        Metastore,
        Partition,
        Table,
        TableDefinition,
        TableStats,
    )
    from sargable.parquet_stats import stats_from_arrow, stats_from_parquet
    from sargable.plan import FilterPlan, ScanMarker, ScanPlan
    from sargable.scan import KeySet, Scan, ScanReport
    from sargable.skipping import FileStatsTable, Truth, TruthValue, file_truth, may_match, select_files, truth_value
    from sargable.stats import ColumnStats, FileStats
    from sargable.types import DataType, parse_type

_EXPORTS: dict[str, tuple[str, ...]] = {
    "sargable.analyze": ("Decomposed", "PredicateAnalyzer", "SearchCondition", "decompose"),
    "sargable.expr": (
        "FALSE",
        "TRUE",
        "BoundFilter",
        "Expr",
        "SearchArgument",
        "and_",
        "bind",
        "bind_filter",
        "col",
        "dumps",
        "evaluate",
        "evaluate_many",
        "lit",
        "loads",
        "normalize",
        "or_",
        "parse",
        "render",
        "to_cnf",
        "to_dnf",
        "to_nnf",
        "to_sarg",
    ),
    "sargable.metastore": (
        "CommitResult",
        "FilterExplain",
        "Metastore",
        "Partition",
        "Table",
        "TableDefinition",
        "TableStats",
    ),
    "sargable.parquet_stats": ("stats_from_arrow", "stats_from_parquet"),
    "sargable.plan": ("FilterPlan", "ScanMarker", "ScanPlan"),
    "sargable.scan": ("KeySet", "Scan", "ScanReport"),
    "sargable.skipping": (
        "FileStatsTable",
        "Truth",
        "TruthValue",
        "file_truth",
        "may_match",
        "select_files",
        "truth_value",
    ),
    "sargable.stats": ("ColumnStats", "FileStats"),
    "sargable.types": ("DataType", "parse_type"),
}
"""The modules the public names (besides the errors) are imported from, on first use."""
_LAZY = {name: module for module, names in _EXPORTS.items() for name in names}

__version__ = "0.1.0"

__all__ = [
    "FALSE",
    "TRUE",
    "AlreadyExistsError",
    "BindError",
    "BoundFilter",
    "ColumnStats",
    "CommitConflictError",
    "CommitResult",
    "DamagedMetastoreError",
    "DataType",
    "Decomposed",
    "DeletionRefusedError",
    "Expr",
    "ExpressionTooComplexError",
    "FileStats",
    "FileStatsTable",
    "FilterExplain",
    "FilterPlan",
    "FilterSyntaxError",
    "InvalidExpressionError",
    "KeyEncodingError",
    "KeySet",
    "Metastore",
    "MetastoreError",
    "NoSuchObjectError",
    "OptimizeError",
    "Partition",
    "PathError",
    "PatternError",
    "PredicateAnalyzer",
    "PushdownError",
    "SargableError",
    "Scan",
    "ScanMarker",
    "ScanPlan",
    "ScanReport",
    "SchemaChangeError",
    "SearchArgument",
    "SearchCondition",
    "SerializationError",
    "StatisticsError",
    "StoreError",
    "Table",
    "TableDefinition",
    "TableStats",
    "Truth",
    "TruthValue",
    "TypeCoercionError",
    "and_",
    "bind",
    "bind_filter",
    "col",
    "decompose",
    "dumps",
    "evaluate",
    "evaluate_many",
    "file_truth",
    "lit",
    "loads",
    "may_match",
    "normalize",
    "or_",
    "parse",
    "parse_type",
    "render",
    "select_files",
    "stats_from_arrow",
    "stats_from_parquet",
    "to_cnf",
    "to_dnf",
    "to_nnf",
    "to_sarg",
    "truth_value",
]


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use, and keep it (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sargable' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
