"""The DataFrame of a planned `Scan`: Spark's native Parquet reader over exactly the scan's files.

The table's schema is given to the reader (partition columns come from the folder names, typed as in the
metastore, not inferred); the residual is applied with `DataFrame.where`, so `df.explain()` shows it in Spark's
plan. Spark checks and stats every path it is handed, and past its parallel-discovery threshold
(`spark.sql.sources.parallelPartitionDiscovery.threshold`) would start a listing job with a task per path: up to
the threshold the files go to Spark as paths (`explain()` lists them); above it through a `_spark_metadata`
manifest (`sargable.spark.manifest`), which Spark reads with no listing and no per-file call (a table without
partition keys with `recursiveFileLookup`, `UNPARTITIONED_OPTION`). Files on an object store always go through a
manifest: s3a's status of a path handed to Spark probes it as a folder too, with a LIST request per file. A scan that is
exactly some partitions of a single-key table reads the table's base relation instead, pruned by Spark
(`sargable.spark.relations`). The session's configuration is never changed.
The returned DataFrame carries its scan in the attribute `sargable_scan` (`sgs.scan_report` reads it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sargable.errors import SargableError
from sargable.expr import columns_of, render_sql
from sargable.paths import canonical_location, is_s3
from sargable.scan import Scan
from sargable.spark.manifest import manifest
from sargable.spark.relations import pruned_frame
from sargable.spark.schema import table_struct
from sargable.spark.session import is_connect
from sargable.stats import FileStats

SCAN_ATTRIBUTE = "sargable_scan"
"""The attribute of a DataFrame returned by `read` or `join` that holds its `Scan`."""
LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
UNPARTITIONED_OPTION = ("recursiveFileLookup", "true")
"""The reader option for a table without partition keys: no partition discovery, so Spark reads every file given
(through a manifest it would keep only the files directly under the manifest's root, none of the table's) and
takes no folder name below the location (`x=1/`) for a partition column."""


def files_frame(spark: Any, table: Any, files: Sequence[FileStats]) -> Any:
    """Native Parquet over exactly these files of the table (a `Table` or `TableDefinition`): the table's schema,
    partition columns from the folder names; by paths up to the listing threshold, else through a manifest.

    From Spark Connect always by paths: the server resolves the read lazily, after a temporary manifest would be gone.
    """
    struct = table_struct(table)
    if not files:
        return spark.createDataFrame([], struct)
    reader = spark.read.schema(struct)
    if not table.partition_key_names:
        reader = reader.option(*UNPARTITIONED_OPTION)
    by_paths = len(files) <= int(spark.conf.get(LISTING_THRESHOLD)) and not any(is_s3(f.path) for f in files)
    if is_connect(spark) or by_paths:
        return reader.option("basePath", canonical_location(table.location)).parquet(*[f.path for f in files])
    with manifest(files) as uri:
        return reader.parquet(uri)


def dataframe(spark: Any, scan: Scan, spark_filters: Sequence[Any] = ()) -> Any:
    """Native Parquet over the scan's files (the table's base relation pruned by partition value where that selects
    exactly them, see `sargable.spark.relations`), then its residual and the filters Spark applies unplanned."""
    df = pruned_frame(spark, scan.table, scan.partitions, scan.files)
    if df is None:
        df = files_frame(spark, scan.table, scan.files)
    if scan.residual is not None:
        top = {name.lower() for name, _ in scan.table.schema}
        fields = [name for name in columns_of(scan.residual.expr) if name.lower() not in top]
        df = df.where(render_sql(scan.residual.expr, "spark", fields=fields))
    for column in spark_filters:
        df = df.where(column)
    return df


def finished(df: Any, scan: Scan) -> Any:
    """The DataFrame with the scan's columns selected (when asked for) and the scan attached."""
    if scan.columns is not None:
        df = df.select(*[f"`{c}`" for c in scan.columns])
    return attach(df, scan)


def attach(df: Any, scan: Scan) -> Any:
    """Keep `scan` on the DataFrame (in `SCAN_ATTRIBUTE`); returns the DataFrame."""
    setattr(df, SCAN_ATTRIBUTE, scan)
    return df


def scan_of(df: Any) -> Scan:
    """The scan attached to a DataFrame returned by `read` or `join`."""
    scan = getattr(df, "__dict__", {}).get(SCAN_ATTRIBUTE)
    if not isinstance(scan, Scan):
        raise SargableError(
            "no scan report for this DataFrame: only the DataFrame returned by sgs.read or sgs.join has one "
            "(take the report before transforming it)"
        )
    return scan
