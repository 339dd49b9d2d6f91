"""`join`: Spark's join of a fact table with a dimension, the fact table pruned by the dimension's key values.

`join(fact="db.fact", dim=dim_df, on=[(fact_column, dim_column)], how="inner")` broadcasts the dimension and joins
it with the fact table read through `sargable.spark.reader.pruned` when the join lets the fact table be pruned:
equi-join keys that are bare columns, the fact table on the inner side (inner, semi, or the non-preserved side of
an outer join). Otherwise it reads the fact table unpruned; `scan_report` says why either way. NULL keys never
join, so they never select a partition or a file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sargable.errors import SargableError
from sargable.metastore import Metastore
from sargable.spark.catalog import metastore_of, split_table_name
from sargable.spark.datasource import ensure_registered
from sargable.spark.dimensions import (
    DEFAULT_MAX_VALUES,
    HIDDEN_PREFIX,
    JoinKey,
    KeyPruning,
    check_dataframe,
    check_max_values,
    resolve_key,
)
from sargable.spark.frames import attach, scan_of
from sargable.spark.reader import pruned, session_time_zone
from sargable.spark.translate import translate_where

_HOW = {
    "inner": "inner",
    "left": "left",
    "leftouter": "left",
    "left_outer": "left",
    "right": "right",
    "rightouter": "right",
    "right_outer": "right",
    "full": "full",
    "outer": "full",
    "fullouter": "full",
    "full_outer": "full",
    "semi": "left_semi",
    "leftsemi": "left_semi",
    "left_semi": "left_semi",
    "anti": "left_anti",
    "leftanti": "left_anti",
    "left_anti": "left_anti",
}


def fact_side_reason(how: str, fact_side: str) -> str | None:
    """Why a join of this kind can't prune the fact table (it is on a preserved side), or None when it can."""
    if fact_side == "left":
        reasons = {
            "left": "the fact table is the preserved side of a left outer join (its rows without a match are kept)",
            "full": "a full outer join preserves the fact table's rows without a match",
            "left_anti": "an anti join keeps the fact rows without a match, which pruning would remove",
        }
    else:
        reasons = {
            "right": "the fact table is the preserved side of a right outer join (its rows without a match are kept)",
            "full": "a full outer join preserves the fact table's rows without a match",
        }
    return reasons.get(how)


def join(
    fact: str,
    dim: Any,
    on: Sequence[tuple[Any, Any]],
    how: str = "inner",
    where: Any = None,
    spark: Any = None,
    *,
    fact_side: str = "left",
    max_values: int = DEFAULT_MAX_VALUES,
    metastore: Metastore | str | None = None,
) -> Any:
    """Spark's join of the fact table (pruned by the dimension's key values when the join allows) with `dim`.

    `on` pairs `(fact key, dim key)`: column names, pyspark Columns or SQL expressions (an expression joins but
    can't prune). `how` is Spark's join type for `fact JOIN dim` (`fact_side="left"`) or `dim JOIN fact`
    (`fact_side="right"`). `where` filters the fact table before the join. `sgs.scan_report(result)` describes
    the fact scan and what each key pruned, or why it couldn't.
    """
    from pyspark.sql import functions as F

    check_dataframe(dim, "dim")
    spark = spark if spark is not None else dim.sparkSession
    max_values = check_max_values(max_values)
    canonical = _HOW.get(how.lower().replace(" ", "")) if isinstance(how, str) else None
    if canonical is None:
        raise SargableError(f"how must be one of {sorted(set(_HOW))} (an equi-join), got {how!r}")
    if fact_side not in ("left", "right"):
        raise SargableError(f"fact_side must be 'left' or 'right', got {fact_side!r}")
    if isinstance(on, (str, bytes)) or not isinstance(on, Sequence) or not on:
        raise SargableError(f"on must be a non-empty list of (fact_column, dim_column) pairs, got {on!r}")
    db, name = split_table_name(fact)
    ms = metastore_of(metastore)
    ensure_registered(spark, ms)
    handle = ms.table(db, name)
    fact_names = [n for n, _ in handle.schema]
    pairs = []
    for pair in on:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise SargableError(f"each item of on is a (fact_column, dim_column) pair, got {pair!r}")
        pairs.append((resolve_key(pair[0], fact_names, "fact"), resolve_key(pair[1], dim.columns, "dimension")))
    expr, spark_filters, notes = translate_where(where, session_time_zone(spark))
    reason = fact_side_reason(canonical, fact_side)
    if reason is None:
        entries = [(dim, dim_key, fact_key) for fact_key, dim_key in pairs]
        fact_df = pruned(spark, handle, expr, spark_filters, None, notes, entries, max_values=max_values, exact=False)
    else:
        skipped = [KeyPruning(f.text, d.text, reason=reason) for f, d in pairs]
        notes = [*notes, f"join not pruned: {reason}"]
        fact_df = pruned(
            spark, handle, expr, spark_filters, None, notes, [], max_values=max_values, exact=False, pruning=skipped
        )
    scan = scan_of(fact_df)
    left, right = fact_df, dim
    conditions = []
    hidden: list[str] = []
    for index, (fact_key, dim_key) in enumerate(pairs):
        fact_column = _side_column(fact_key)
        dim_column = _side_column(dim_key)
        if fact_key.name is None:
            hidden.append(f"{HIDDEN_PREFIX}f{index}")
            left = left.withColumn(hidden[-1], fact_column)
            fact_column = F.col(hidden[-1])
        if dim_key.name is None:
            hidden.append(f"{HIDDEN_PREFIX}d{index}")
            right = right.withColumn(hidden[-1], dim_column)
            dim_column = F.col(hidden[-1])
        left_column = left[f"`{fact_key.name}`"] if fact_key.name is not None else fact_column
        right_column = right[f"`{dim_key.name}`"] if dim_key.name is not None else dim_column
        conditions.append(left_column == right_column)
    condition = conditions[0]
    for extra in conditions[1:]:
        condition = condition & extra
    if fact_side == "left":
        joined = left.join(F.broadcast(right), condition, canonical)
    else:
        joined = F.broadcast(right).join(left, condition, canonical)
    if hidden:
        joined = joined.drop(*hidden)
    return attach(joined, scan)


def _side_column(key: JoinKey) -> Any:
    """The Column of a join key's expression (text through `F.expr`)."""
    from pyspark.sql import functions as F

    if key.name is not None:
        return F.col(f"`{key.name}`")
    return F.expr(key.expression) if isinstance(key.expression, str) else key.expression
