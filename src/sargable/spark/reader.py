"""`read`: a DataFrame over only the files that can hold matching rows, planned through the metastore.

One linear path: translate the filter (text, a sargable `Expr`, or a pyspark `Column`) -> with `prune_by`, collect
the dimensions' key sets (read on the driver or by Spark jobs, before the metastore is read) -> `Table.scan` (bind
once, decompose, prune partitions exactly, skip files by statistics, in one read transaction) -> Spark's native
Parquet reader over the surviving files with the residual applied (`sargable.spark.frames`). `sgs.scan_report(df)`
tells what was pruned.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from sargable.errors import SargableError
from sargable.expr import Expr, columns_of
from sargable.metastore import Metastore, Table, TableDefinition
from sargable.scan import ScanReport
from sargable.spark.catalog import metastore_of, split_table_name
from sargable.spark.datasource import ensure_registered
from sargable.spark.dimensions import (
    DEFAULT_MAX_VALUES,
    JoinKey,
    JoinScanReport,
    KeyPruning,
    check_dataframe,
    check_max_values,
    collect_key_sets,
    resolve_key,
    semi_joined,
)
from sargable.spark.frames import dataframe, finished, scan_of
from sargable.spark.schema import ntz_columns
from sargable.spark.translate import translate_where

_UTC_ZONES = frozenset({"UTC", "Etc/UTC", "GMT", "Etc/GMT", "Z", "+00:00", "UCT", "Universal", "Zulu"})


def session_time_zone(spark: Any) -> str:
    return str(spark.conf.get("spark.sql.session.timeZone"))


def _instant_columns(time_zone: str, table: TableDefinition) -> list[str]:
    """Timestamp columns whose file statistics don't compare with this session's literals.

    Spark's TIMESTAMP is an instant: the footers hold UTC values, but a literal in a filter is wall-clock time in
    the session time zone. Unless that zone is UTC, file statistics of such columns are not used.
    """
    if time_zone in _UTC_ZONES:
        return []
    ntz = ntz_columns(table.properties)
    return [name for name, dtype in table.columns if dtype.name == "timestamp" and name not in ntz]


def _statistics_notes(time_zone: str, table: TableDefinition, expr: Expr | None) -> tuple[list[str], list[str]]:
    """(columns whose statistics the scan must not use, the note saying so when the filter uses them)."""
    unusable = _instant_columns(time_zone, table)
    used = set() if expr is None else {c.lower() for c in columns_of(expr)}
    if unusable and used & {c.lower() for c in unusable}:
        return unusable, [f"statistics of {', '.join(unusable)} unused: the session time zone is not UTC"]
    return unusable, []


def read(
    spark: Any,
    table: str,
    where: Any = None,
    columns: Sequence[str] | None = None,
    *,
    metastore: Metastore | str | None = None,
    prune_by: Sequence[Any] | None = None,
    max_values: int = DEFAULT_MAX_VALUES,
) -> Any:
    """A DataFrame of the rows of `table` where `where` is TRUE, reading only the files that can hold them.

    `sgs.scan_report(df)` tells what was pruned. A Column filter that sargable can't translate is applied by
    Spark (the report's notes say so). `prune_by=[(dim_df, dim_column, column), ...]` also prunes by the
    dimensions' join-key values (see `sargable.spark.dimensions`).
    """
    db, name = split_table_name(table)
    if prune_by is not None:
        max_values = check_max_values(max_values)
        if isinstance(prune_by, (str, bytes)) or not isinstance(prune_by, Sequence):
            raise SargableError(f"prune_by must be a list of (dim_df, dim_column, fact_column), got {prune_by!r}")
        for entry in prune_by:
            if not isinstance(entry, (tuple, list)) or len(entry) != 3:
                raise SargableError(f"each prune_by entry is (dim_df, dim_column, fact_column), got {entry!r}")
            check_dataframe(entry[0], "the first item of a prune_by entry")
    time_zone = session_time_zone(spark)
    expr, spark_filters, notes = translate_where(where, time_zone)
    ms = metastore_of(metastore)
    ensure_registered(spark, ms)
    if prune_by is None:
        with ms.snapshot():
            handle = ms.table(db, name)
            unusable, more = _statistics_notes(time_zone, handle.definition, expr)
            scan = handle.scan(expr, columns=columns, notes=[*notes, *more], ignore_stats=unusable)
        return finished(dataframe(spark, scan, spark_filters), scan)
    handle = ms.table(db, name)
    fact_names = [n for n, _ in handle.schema]
    entries = [
        (dim, resolve_key(dim_key, dim.columns, "dimension"), resolve_key(fact_key, fact_names, "fact"))
        for dim, dim_key, fact_key in prune_by
    ]
    return pruned(spark, handle, expr, spark_filters, columns, notes, entries, max_values=max_values, exact=True)


def pruned(
    spark: Any,
    table: Table,
    expr: Expr | None,
    spark_filters: Sequence[Any],
    columns: Sequence[str] | None,
    notes: Sequence[str],
    entries: Sequence[tuple[Any, JoinKey, JoinKey]],
    *,
    max_values: int,
    exact: bool,
    pruning: Sequence[KeyPruning] = (),
) -> Any:
    """The DataFrame of `table` pruned by the `(dim_df, dim key, fact key)` entries' key sets; with `exact`, a value
    set too large for an IN residual is applied exactly as a broadcast semi-join.

    The dimensions' keys are collected first (on the driver or by Spark jobs, no metastore read open), then the scan
    is planned.
    """
    collected = collect_key_sets(table.definition, entries, max_values)
    unusable, more = _statistics_notes(session_time_zone(spark), table.definition, expr)
    scan = table.scan(expr, key_sets=collected.key_sets, columns=columns, notes=[*notes, *more], ignore_stats=unusable)
    report = JoinScanReport(
        **{f.name: getattr(scan.report, f.name) for f in dataclasses.fields(ScanReport)},
        pruning=(*pruning, *collected.pruning),
        collect_ms=collected.collect_ms,
    )
    scan = dataclasses.replace(scan, report=report)
    df = dataframe(spark, scan, spark_filters)
    if exact and scan.files:
        for dim, dim_key, fact_key in entries:
            if fact_key.name in scan.ranged_keys and dim_key.name is not None:
                df = semi_joined(df, dim, fact_key.name, dim_key.name)
    return finished(df, scan)


def scan_report(df: Any) -> ScanReport:
    """The ScanReport of a DataFrame returned by `read` or `join`."""
    return scan_of(df).report
