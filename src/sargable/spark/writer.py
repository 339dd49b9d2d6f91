"""`write`: Spark writes Parquet, executors read the footers, one metastore commit publishes it all; and `vacuum`.

A write goes through a staging directory under the table location (`_sargable_staging/<write id>/`, which
Spark's own partition discovery ignores because it starts with `_`):

1. Spark's Parquet writer writes the DataFrame there, in Hive-style partition folders (its file names carry the
   job's UUID, so they never collide with earlier writes);
2. the staged files are listed (only this write's files are there) and their statistics are read from the
   Parquet footers by a Spark job over the file list, on the executors, never by re-reading the data;
3. the files are renamed into `<location>/<partition folder>/`;
4. one metastore commit adds the partitions and files with their statistics (an overwrite also drops the old
   files of the partitions it writes, then deletes them from storage).

Until step 4 the table is unchanged: a failure removes this write's files; a killed process leaves them for
`vacuum`, which lists (and with `dry_run=False` deletes) files under the location that the metastore doesn't know.
"""

from __future__ import annotations

import dataclasses
import pickle
import posixpath
import time
import uuid
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from sargable.errors import NoSuchObjectError, SargableError
from sargable.metastore import Metastore, Partition, TableDefinition
from sargable.metastore.names import parse_partition_name
from sargable.spark.catalog import opened, split_table_name
from sargable.spark.datasource import ensure_registered
from sargable.spark.files import DATA_SUFFIX, FileSystem, join, relative
from sargable.spark.schema import NTZ_PROPERTY, hive_type, ntz_columns, spark_type
from sargable.spark.session import job_description, parallelism
from sargable.stats import FileStats
from sargable.types import DataType

STAGING_DIR = "_sargable_staging"
MODES = ("append", "overwrite")


@dataclass(frozen=True)
class WriteResult:
    """What one `write` committed."""

    table: str
    mode: str
    version: int
    partitions: int
    files: int
    rows: int
    bytes: int
    replaced_files: int
    seconds: float


def _fields_by_name(df: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for field in df.schema.fields:
        key = field.name.lower()
        if key in fields:
            raise SargableError(f"the DataFrame has two columns named {field.name!r} (names are case-insensitive)")
        fields[key] = field
    return fields


def _check_partition_by(partition_by: Any, fields: dict[str, Any]) -> list[str]:
    if partition_by is None:
        return []
    if isinstance(partition_by, str):
        partition_by = [partition_by]
    if not isinstance(partition_by, (list, tuple)) or not all(isinstance(c, str) for c in partition_by):
        raise SargableError(f"partition_by must be a list of column names, got {partition_by!r}")
    missing = [c for c in partition_by if c.lower() not in fields]
    if missing:
        raise SargableError(f"partition_by columns {missing} are not columns of the DataFrame")
    if len({c.lower() for c in partition_by}) != len(partition_by):
        raise SargableError(f"partition_by {partition_by} names a column twice")
    return [fields[c.lower()].name for c in partition_by]


def _ensure_table(ms: Metastore, db: str, name: str, df: Any, partition_by: list[str]) -> TableDefinition:
    """The existing table (checking the partition keys), or a new one with the DataFrame's schema."""
    fields = _fields_by_name(df)
    try:
        table = ms.get_table(db, name)
    except NoSuchObjectError:
        if not partition_by:
            raise SargableError(
                f"table {db}.{name} does not exist: give partition_by=[...] to create it from the DataFrame"
            ) from None
        keys = {c.lower() for c in partition_by}
        columns = [(f.name, hive_type(f.dataType, f.name)) for f in df.schema.fields if f.name.lower() not in keys]
        if not columns:
            raise SargableError("every column is a partition column; a table needs at least one data column") from None
        pkeys = [(fields[c.lower()].name, hive_type(fields[c.lower()].dataType, c)) for c in partition_by]
        ntz = [f.name for f in df.schema.fields if type(f.dataType).__name__ == "TimestampNTZType"]
        properties = {NTZ_PROPERTY: ",".join(ntz)} if ntz else None
        ms.create_database(db, if_not_exists=True)
        return ms.create_table(db, name, columns, pkeys, properties=properties, if_not_exists=True)
    if partition_by and [c.lower() for c in partition_by] != [k.lower() for k in table.partition_key_names]:
        raise SargableError(
            f"table {table.qualified_name} is partitioned by {table.partition_key_names}, not {partition_by}"
        )
    known = {n.lower() for n, _ in table.schema}
    extra = [f.name for f in df.schema.fields if f.name.lower() not in known]
    if extra:
        raise SargableError(f"columns {extra} are not columns of {table.qualified_name}")
    for pkey in table.partition_key_names:
        if pkey.lower() not in fields:
            raise SargableError(f"the DataFrame has no column {pkey!r}, a partition key of {table.qualified_name}")
    return table


def _aligned(df: Any, table: TableDefinition) -> Any:
    """The DataFrame's columns in table order, cast to the table's types; missing data columns as NULL."""
    from pyspark.sql import functions as F

    fields = _fields_by_name(df)
    ntz = ntz_columns(table.properties)
    out = []
    for name, dtype in table.schema:
        target = spark_type(dtype, ntz=name in ntz)
        field = fields.get(name.lower())
        if field is None:
            out.append(F.lit(None).cast(target).alias(name))
        elif field.dataType == target:
            out.append(F.col(f"`{field.name}`").alias(name))
        else:
            out.append(F.col(f"`{field.name}`").cast(target).alias(name))
    return df.select(*out)


def _footer_stats(
    spark: Any, items: list[tuple[str, str, dict[str, Any], int]], table: TableDefinition
) -> list[FileStats]:
    """Statistics of the staged files, read from their footers by a Spark job (on the executors).

    The job is a Python UDF over `spark.range(len(items))`, not an RDD, so it runs the same way from a classic
    session and from a Spark Connect one.
    """
    if not items:
        return []
    from pyspark.sql.functions import col, udf
    from pyspark.sql.types import BinaryType

    slices = max(1, min(len(items), parallelism(spark) * 4))
    footer = udf(_footer_task(items, list(table.columns)), BinaryType(), useArrow=False)
    with job_description(spark, f"sargable: footer statistics of {len(items)} files for {table.qualified_name}"):
        rows = spark.range(0, len(items), 1, slices).select(footer(col("id"))).collect()
    return [pickle.loads(row[0]) for row in rows]


def _footer_task(items: Sequence[tuple[str, str, dict[str, Any], int]], columns: Sequence[tuple[str, DataType]]) -> Any:
    """A picklable function for executors: item index -> pickled FileStats read from that staged file's footer.

    Timestamp columns that Spark wrote as INT96 (its default `spark.sql.parquet.outputTimestampType`, left as the
    session has it) have no usable footer statistics: those columns' statistics are computed from their data (only
    theirs are read).
    """

    def task(index: int) -> bytes:
        import pyarrow.parquet as pq

        from sargable.parquet_stats import stats_from_arrow, stats_from_parquet

        staged, final, spec, size = items[index]
        stats = stats_from_parquet(staged, list(columns))
        int96 = {c.name for c in pq.ParquetFile(staged).schema if c.physical_type == "INT96"}
        typed = [(name, dtype) for name, dtype in columns if name in int96]
        if typed:
            data = pq.read_table(staged, columns=[name for name, _ in typed], coerce_int96_timestamp_unit="us")
            computed = stats_from_arrow(data, staged, schema=typed).columns
            stats = dataclasses.replace(stats, columns={**stats.columns, **computed})
        return pickle.dumps(dataclasses.replace(stats, path=final, partition=spec, size_bytes=size))

    return task


def _status(console: Console | None, message: str) -> AbstractContextManager:
    return console.status(message) if console is not None else nullcontext()


def write(
    df: Any,
    table: str,
    partition_by: Sequence[str] | str | None = None,
    mode: str = "append",
    *,
    metastore: Metastore | str | None = None,
    progress: bool = True,
) -> WriteResult:
    """Write a DataFrame into a sargable table: Spark Parquet files + one atomic metastore commit.

    `mode="overwrite"` replaces exactly the partitions present in `df`. Creates the table (from the DataFrame's
    schema, partitioned by `partition_by`) when it doesn't exist.
    """
    started = time.perf_counter()
    db, name = split_table_name(table)
    if mode not in MODES:
        raise SargableError(f"mode must be one of {MODES}, got {mode!r}")
    if not hasattr(df, "sparkSession") or not hasattr(df, "write"):
        raise SargableError(f"write takes a pyspark DataFrame, got {type(df).__name__}")
    partition_by = _check_partition_by(partition_by, _fields_by_name(df))
    console = Console(stderr=True) if progress else None
    with opened(metastore) as ms:
        ensure_registered(df.sparkSession, ms)
        tbl = _ensure_table(ms, db, name, df, partition_by)
        fs = FileSystem.at(tbl.location)
        location = fs.location
        staging = join(location, STAGING_DIR, uuid.uuid4().hex)
        moved: list[str] = []
        try:
            writer = _aligned(df, tbl).write.mode("error")
            if tbl.partition_keys:
                writer = writer.partitionBy(*tbl.partition_key_names)
            writer.parquet(staging)
            with _status(console, f"listing the files written to {tbl.qualified_name}"):
                staged = [(p, size) for p, size, _ in fs.list_files(staging) if p.endswith(DATA_SUFFIX)]
            items = []
            for path, size in staged:
                rel = relative(path, staging)
                folder = posixpath.dirname(rel)
                values = parse_partition_name(folder, tbl.partition_keys) if tbl.partition_keys else ()
                spec = dict(zip(tbl.partition_key_names, values, strict=True))
                items.append((path, join(location, rel), spec, size))
            files = _footer_stats(df.sparkSession, items, tbl)
            with _status(console, f"moving {len(items)} files into {location}"):
                for source, target, _, _ in items:
                    fs.move(source, target)
                    moved.append(target)
            specs = list({tuple(item[2].items()): item[2] for item in items}.values())
            with _status(console, f"committing {len(files)} files in {len(specs)} partitions to {tbl.qualified_name}"):
                version, replaced = _commit(ms, tbl, files, specs, mode)
        except BaseException:
            fs.delete_files(moved)
            fs.delete_dir(staging)
            raise
        fs.delete_files(replaced)
        fs.delete_dir(staging)
    return WriteResult(
        table=tbl.qualified_name,
        mode=mode,
        version=version,
        partitions=len(specs),
        files=len(files),
        rows=sum(f.row_count for f in files),
        bytes=sum(f.size_bytes for f in files),
        replaced_files=len(replaced),
        seconds=time.perf_counter() - started,
    )


def _commit(
    ms: Metastore, table: TableDefinition, files: list[FileStats], specs: list[dict[str, Any]], mode: str
) -> tuple[int, list[str]]:
    """Commit the files; returns the new version and the paths an overwrite replaced (to delete afterwards)."""
    db, name = table.database, table.name
    if mode == "append":
        if not files:
            return ms.get_table(db, name).version, []
        return ms.commit(db, name, add_files=files).version, []
    current = ms.get_table(db, name)
    replace = specs if current.partition_keys else []
    old = [f.path for f in ms.list_files(db, name, [Partition(current, tuple(s.values())) for s in replace])]
    if not files and not old:
        return current.version, []
    result = ms.commit(db, name, add_files=files, replace_partitions=replace, expected_version=current.version)
    return result.version, old


def vacuum(
    table: str, metastore: Metastore | str | None = None, dry_run: bool = True, *, older_than: float = 0.0
) -> list[str]:
    """Files under the table's location that the metastore doesn't reference (left by failed writes).

    With `dry_run=False` they are deleted. `older_than` (seconds) spares files younger than that, so a write
    still in progress keeps its staged files.
    """
    db, name = split_table_name(table)
    if not isinstance(older_than, (int, float)) or older_than < 0:
        raise SargableError(f"older_than must be a non-negative number of seconds, got {older_than!r}")
    with opened(metastore) as ms:
        tbl = ms.get_table(db, name)
        fs = FileSystem.at(tbl.location)
        known = {f.path for f in ms.iter_files(db, name)}
        cutoff = time.time() - older_than
        listed = fs.list_files(fs.location, data_only=False)
        orphans = [path for path, _, mtime in listed if path not in known and mtime <= cutoff]
        if not dry_run:
            fs.delete_files(orphans)
            staging_root = join(fs.location, STAGING_DIR)
            if not fs.list_files(staging_root, data_only=False):
                fs.delete_dir(staging_root)
    return orphans
