"""`read`: a DataFrame over only the files that can hold matching rows, planned through the metastore.

The filter (text, a sargable `Expr`, or a pyspark `Column`) is bound to the table schema and decomposed; the
metastore prunes partitions exactly, file statistics skip files, and Spark's native Parquet reader reads the
surviving files with the table's schema (partition columns come from the folder names, typed as in the
metastore, not inferred). The residual is applied with `DataFrame.where`, so `df.explain()` shows it in Spark's plan.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sargable.errors import SargableError
from sargable.expr import Expr, columns_of, parse, render_sql
from sargable.metastore import Metastore, Table
from sargable.paths import canonical_location
from sargable.spark.catalog import opened, split_table_name
from sargable.spark.columns import split_column
from sargable.spark.datasource import ensure_registered
from sargable.spark.scan import ScanPlan, ScanReport, plan_scan
from sargable.spark.schema import ntz_columns, table_struct

_REPORTS: weakref.WeakKeyDictionary[Any, ScanReport] = weakref.WeakKeyDictionary()
_LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
MANIFEST_MIN_FILES = 1000
"""Scans of this many files or more hand Spark a manifest instead of the file paths."""
_BLOCK_SIZE = 128 * 1024 * 1024
_UTC_ZONES = frozenset({"UTC", "Etc/UTC", "GMT", "Etc/GMT", "Z", "+00:00", "UCT", "Universal", "Zulu"})


def _where(spark: Any, where: Any) -> tuple[Expr | None, list[Any], list[str]]:
    """(planned expression, Columns Spark applies unplanned, notes) for a `where` argument.

    A Column's timestamp literals are instants: they are read in the session time zone, as Spark compares them.
    """
    if where is None:
        return None, [], []
    if isinstance(where, Expr):
        return where, [], []
    if isinstance(where, str):
        return parse(where), [], []
    if type(where).__name__ == "Column":
        expr, leftover = split_column(where, time_zone=str(spark.conf.get("spark.sql.session.timeZone")))
        notes = [f"applied by Spark without pruning (no sargable translation): {c}" for c in leftover]
        return expr, leftover, notes
    raise SargableError(f"where must be filter text, a sargable Expr or a pyspark Column, got {type(where).__name__}")


def instant_columns(spark: Any, table: Any) -> list[str]:
    """Timestamp columns whose file statistics don't compare with this session's literals.

    Spark's TIMESTAMP is an instant: the footers hold UTC values, but a literal in a filter is wall-clock time in
    the session time zone. Unless that zone is UTC, file statistics of such columns are not used.
    """
    if str(spark.conf.get("spark.sql.session.timeZone")) in _UTC_ZONES:
        return []
    ntz = ntz_columns(table.properties)
    return [name for name, dtype in table.columns if dtype.name == "timestamp" and name not in ntz]


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


def _read_paths(spark: Any, struct: Any, location: str, paths: list[str]) -> Any:
    """Spark's Parquet reader over explicit files; `basePath` makes the partition folders columns.

    Spark checks and stats every path it is given; above its parallel-discovery threshold it would start a
    listing job with a task per path, so the threshold is raised for this one call (the driver lists them).
    """
    conf = spark.conf
    previous = conf.get(_LISTING_THRESHOLD)
    conf.set(_LISTING_THRESHOLD, str(max(len(paths) + 1, int(previous))))
    try:
        return spark.read.schema(struct).option("basePath", location).parquet(*paths)
    finally:
        conf.set(_LISTING_THRESHOLD, previous)


def _file_uri(path: str) -> str:
    """A file's URI, its path percent-encoded (partition folders hold literal `%`, as in `region=a%2Fb`)."""
    if "://" not in path:
        return Path(path).as_uri()
    scheme, authority_path = path.split("://", 1)
    authority, slash, rest = authority_path.partition("/")
    return f"{scheme}://{authority}{slash}{quote(rest, safe='/')}"


@contextmanager
def _manifest(files: Sequence[Any]) -> Iterator[str]:
    """A temporary directory whose `_spark_metadata` log lists exactly `files` (deleted on exit).

    Spark reads a directory with such a log (the format of its streaming file sink) through
    `MetadataLogFileIndex`: the files come from the log, with no listing and no per-file existence check, and the
    partition columns from their folder names. The index reads the log when the DataFrame is created.
    """
    directory = tempfile.mkdtemp(prefix="sargable-scan-")
    try:
        log = Path(directory, "_spark_metadata")
        log.mkdir()
        entries = [
            json.dumps(
                {
                    "path": _file_uri(f.path),
                    "size": f.size_bytes,
                    "isDir": False,
                    "modificationTime": 0,
                    "blockReplication": 1,
                    "blockSize": _BLOCK_SIZE,
                    "action": "add",
                }
            )
            for f in files
        ]
        (log / "0").write_text("\n".join(["v1", *entries]))
        yield Path(directory).as_uri()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def dataframe_for(spark: Any, plan: ScanPlan, spark_filters: Sequence[Any] = ()) -> Any:
    """The DataFrame of a planned scan: native Parquet over the surviving files, then the residual filters.

    Up to `MANIFEST_MIN_FILES` files are given to Spark as paths (`explain()` lists them); more go through a
    manifest, which spares Spark a file-system call per file.
    """
    struct = table_struct(plan.table)
    if not plan.files:
        df = spark.createDataFrame([], struct)
    elif len(plan.files) < MANIFEST_MIN_FILES:
        location = canonical_location(plan.table.location)
        df = _read_paths(spark, struct, location, [f.path for f in plan.files])
    else:
        with _manifest(plan.files) as uri:
            df = spark.read.schema(struct).parquet(uri)
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

    def plan(ms: Metastore, tbl: Table, expr: Expr | None, notes: list[str], unusable: list[str]) -> ScanPlan:
        return plan_scan(ms, tbl, expr, notes=notes, unusable_stats=unusable)

    return read_planned(spark, table, where, columns, metastore, plan)


Planner = Callable[[Metastore, Table, Expr | None, list[str], list[str]], ScanPlan]
"""Plans a scan from (metastore, table, filter, notes, columns whose statistics are unusable)."""


def read_planned(
    spark: Any,
    table: str,
    where: Any,
    columns: Sequence[str] | None,
    metastore: Metastore | str | None,
    plan: Planner,
    *,
    notes: Sequence[str] = (),
    finish: Callable[[Any, ScanPlan], Any] | None = None,
) -> Any:
    """The DataFrame of a scan planned by `plan`, then `finish(df, plan)`, with its columns and its report.

    The one path of `read` and the join-pruned reads: parse `where`, open the metastore, note the statistics the
    session time zone makes unusable, plan, read the files, select the columns, and keep the report.
    """
    db, name = split_table_name(table)
    expr, spark_filters, where_notes = _where(spark, where)
    with opened(metastore) as ms:
        ensure_registered(spark, ms)
        tbl = ms.get_table(db, name)
        selected = _columns(columns, [n for n, _ in tbl.schema])
        all_notes = [*where_notes, *notes]
        unusable = instant_columns(spark, tbl)
        if unusable and expr is not None and {c.lower() for c in columns_of(expr)} & {c.lower() for c in unusable}:
            all_notes.append(f"statistics of {', '.join(unusable)} unused: the session time zone is not UTC")
        scan = plan(ms, tbl, expr, all_notes, unusable)
    df = dataframe_for(spark, scan, spark_filters)
    if finish is not None:
        df = finish(df, scan)
    if selected is not None:
        df = df.select(*[f"`{c}`" for c in selected])
    _REPORTS[df] = scan.report
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
