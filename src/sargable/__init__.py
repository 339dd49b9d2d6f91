"""sargable: partition pruning, filter pushdown and data skipping for big partitioned tables.

The public API (see DESIGN.md): `parse`/`render`/`dumps`/`loads` for predicates, `Metastore` for partitions and
files, `may_match`/`select_files`/`decompose` for pushdown, and `sargable.spark` for the PySpark pipeline.
"""

from sargable.errors import (
    AlreadyExistsError,
    BindError,
    CommitConflictError,
    ExpressionTooComplexError,
    FilterSyntaxError,
    KeyEncodingError,
    MetastoreError,
    NoSuchObjectError,
    SargableError,
    SerializationError,
    StoreError,
    TypeCoercionError,
)
from sargable.expr import (
    FALSE,
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
    Or,
    Regex,
    and_,
    col,
    lit,
    or_,
)
from sargable.types import DataType, parse_type

__version__ = "0.1.0"

__all__ = [
    "FALSE",
    "TRUE",
    "AlreadyExistsError",
    "And",
    "Between",
    "BindError",
    "Column",
    "CommitConflictError",
    "Comparison",
    "DataType",
    "Expr",
    "ExpressionTooComplexError",
    "FilterSyntaxError",
    "Func",
    "In",
    "IsNull",
    "KeyEncodingError",
    "Like",
    "Literal",
    "MetastoreError",
    "NoSuchObjectError",
    "Not",
    "Or",
    "Regex",
    "SargableError",
    "SerializationError",
    "StoreError",
    "TypeCoercionError",
    "and_",
    "col",
    "lit",
    "or_",
    "parse_type",
]
