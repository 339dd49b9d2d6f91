"""`read`: a DataFrame over only the files that can hold matching rows, planned through the metastore.

The filter (text, a sargable `Expr`, or a pyspark `Column`) is bound to the table schema and decomposed; the
metastore prunes partitions exactly, file statistics skip files, and Spark's native Parquet reader reads the
surviving files with the table's schema (`basePath` set, so partition columns come from the folder names, typed
as in the metastore). The residual is applied with `DataFrame.where`, so `df.explain()` shows it in Spark's plan.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from sargable.errors import SargableError
from sargable.expr import Expr, parse, render_sql
from sargable.metastore import Metastore
from sargable.spark.catalog import opened, split_table_name
from sargable.spark.columns import split_column
from sargable.spark.datasource import ensure_registered
from sargable.spark.files import normalize_location
from sargable.spark.scan import ScanPlan, ScanReport, plan_scan
from sargable.spark.schema import table_struct

_REPORTS: weakref.WeakKeyDictionary[Any, ScanReport] = weakref.WeakKeyDictionary()
_LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"


def _where(where: Any) -> tuple[Expr | None, list[Any], list[str]]:
    """(planned expression, Columns Spark applies unplanned, notes) for a `where` argument."""
    if where is None:
        return None, [], []
    if isinstance(where, Expr):
        return where, [], []
    if isinstance(where, str):
        return parse(where), [], []
    if type(where).__name__ == "Column":
        expr, leftover = split_column(where)
        notes = [f"applied by Spark without pruning (no sargable translation): {c}" for c in leftover]
        return expr, leftover, notes
    raise SargableError(f"where must be filter text, a sargable Expr or a pyspark Column, got {type(where).__name__}")


def _columns(columns: Sequence[str] | None, names: list[str]) -> list[str] | None:
    if columns is None:
        return None
    if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
        raise SargableError(f"columns must be a list of column names, got {columns!r}")
    by_lower = {n.lower(): n for n in names}
    unknown = [c for c in columns if c.lower() not in by_lower]
    if unknown:
        raise SargableError(f"unknown columns {unknown}; the table has {names}")
    return [by_lower[c.lower()] for c in columns]


def dataframe_for(spark: Any, plan: ScanPlan, spark_filters: Sequence[Any] = ()) -> Any:
    """The DataFrame of a planned scan: native Parquet over the surviving files, then the residual filters."""
    struct = table_struct(plan.table)
    if plan.files:
        location = normalize_location(plan.table.location)
        paths = [f.path for f in plan.files]
        conf = spark.conf
        previous = conf.get(_LISTING_THRESHOLD)
        conf.set(_LISTING_THRESHOLD, str(max(len(paths) + 1, int(previous))))
        try:
            df = spark.read.schema(struct).option("basePath", location).parquet(*paths)
        finally:
            conf.set(_LISTING_THRESHOLD, previous)
    else:
        df = spark.createDataFrame([], struct)
    if plan.residual is not None:
        df = df.where(render_sql(plan.residual, "spark"))
    for column in spark_filters:
        df = df.where(column)
    return df


def read(
    spark: Any,
    table: str,
    where: Any = None,
    columns: Sequence[str] | None = None,
    *,
    metastore: Metastore | str | None = None,
    prune_by: Sequence[Any] | None = None,
    max_values: int = 100_000,
) -> Any:
    """A DataFrame of the rows of `table` where `where` is TRUE, reading only the files that can hold them.

    `sgs.scan_report(df)` tells what was pruned. A Column filter that sargable can't translate is applied by
    Spark (the report's notes say so). `prune_by=[(dim_df, dim_column, column), ...]` also prunes by the
    dimensions' join-key values (see `sargable.spark.join`).
    """
    if prune_by is not None:
        from sargable.spark.join import read_pruned

        return read_pruned(spark, table, where, columns, prune_by, max_values=max_values, metastore=metastore)
    db, name = split_table_name(table)
    expr, spark_filters, notes = _where(where)
    with opened(metastore) as ms:
        ensure_registered(spark, ms)
        tbl = ms.get_table(db, name)
        selected = _columns(columns, [n for n, _ in tbl.schema])
        plan = plan_scan(ms, tbl, expr, notes=notes)
    df = dataframe_for(spark, plan, spark_filters)
    if selected is not None:
        df = df.select(*[f"`{c}`" for c in selected])
    _REPORTS[df] = plan.report
    return df


def scan_report(df: Any) -> ScanReport:
    """The ScanReport of a DataFrame returned by `read`."""
    try:
        return _REPORTS[df]
    except (KeyError, TypeError):
        raise SargableError(
            "no scan report for this DataFrame: only the DataFrame returned by sgs.read has one "
            "(take the report before transforming it)"
        ) from None
