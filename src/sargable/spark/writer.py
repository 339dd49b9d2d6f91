"""`write`: Spark writes Parquet, executors read the footers, one metastore commit publishes it all; and `vacuum`.

A write goes through a staging directory under the table location (`_sargable_staging/<write id>/`, which
Spark's own partition discovery ignores because it starts with `_`):

1. Spark's Parquet writer writes the DataFrame there, in Hive-style partition folders (its file names carry the
   job's UUID, so they never collide with earlier writes), counting the rows it writes (an observed metric);
2. the staged files are listed (only this write's files are there; every one must be a data file in a partition
   folder or Spark's bookkeeping) and their statistics are read from the Parquet footers by a Spark job over the
   file list, on the executors, never by re-reading the data; the footers must hold the rows Spark counted;
3. the files are renamed into `<location>/<partition folder>/`;
4. one metastore commit adds the partitions and files with their statistics (an overwrite also removes the old
   files of the partitions it writes, with tombstones: they stay on disk for the table's retention, for readers of
   older snapshots, as the files `optimize` replaces do, and are deleted through `sargable.deletion` once it has
   passed, by a later overwrite, `optimize` or `vacuum`; `sargable.metastore.tombstones`).

Before step 1 the write registers its intent in the metastore (its write id, which names the staging folder, and
the table location it writes to), and before step 3 the final paths of its files (`sargable.metastore.intents`).
Until step 4 the table is unchanged: a failure removes this write's files; a killed process leaves them for
`vacuum` (`sargable.vacuum`), which lists (and with `dry_run=False` deletes) the files that the intents of unfinished
writes name and no table lists, and nothing else.

On an object store (`s3a://`) steps 1-3 are one: nothing is staged or renamed (a rename there is a copy and a
delete per object); the executors write each file where it stays, its name carrying the write id
(`part-<write id>-...`, so `vacuum` can find what a killed write left with one listing), and return its statistics
(`sargable.spark.direct`); the write records the files' paths, and the commit is the one atomic step. Such a write
makes no listing and no copy.
"""

from __future__ import annotations

import dataclasses
import pickle
import posixpath
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sargable.deletion import Deleter
from sargable.errors import DeletionRefusedError, NoSuchObjectError, SargableError
from sargable.fs import DATA_SUFFIX, DIRECTORY, FILE, STAGING_DIR, FileSystem, hidden
from sargable.metastore import Metastore, Partition, Table, TableDefinition
from sargable.metastore.names import escape_path_name, parse_partition_name
from sargable.paths import join_path, relative_parts
from sargable.spark.catalog import opened, split_table_name
from sargable.spark.datasource import ensure_registered
from sargable.spark.direct import write_files
from sargable.spark.progress import spark_progress
from sargable.spark.schema import NTZ_PROPERTY, hive_type, ntz_columns, spark_type
from sargable.spark.session import job_description, parallelism
from sargable.spark.ship import ship
from sargable.stats import FileStats
from sargable.types import DataType
from sargable.unlisted import UnlistedReport
from sargable.vacuum import expire_removed
from sargable.vacuum import vacuum as run_vacuum

if TYPE_CHECKING:
    from rich.console import Console

MODES = ("append", "overwrite")
PHASES = ("spark write", "listing", "footers", "move", "commit", "cleanup")
"""The steps of a write whose seconds `WriteResult.phases` holds (the module docstring's 1-4, then the cleanup)."""
STAGING_OPTIONS = {
    "fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
    "fs.file.impl.disable.cache": "true",
    "mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
}
"""Hadoop settings of the staging write only (writer options reach the write job's Hadoop configuration, never the
session's): on a local file system no `.crc` checksum file per data file (written, renamed twice, then deleted by
the staging cleanup; the footers and the row counts are checked instead), and no `_SUCCESS` marker."""


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
    cleanup_failures: tuple[str, ...] = ()
    """What the write could not clean up after its commit (`path: reason`): replaced files not deleted (e.g. one
    outside the table location), a staging folder left. The write succeeded; `vacuum` finds what is left inside."""
    phases: dict[str, float] = dataclasses.field(default_factory=dict)
    """Seconds per step (`PHASES`), to see where a write's time goes."""


def _fields_by_name(df: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for field in df.schema.fields:
        key = field.name.lower()
        if key in fields:
            raise SargableError(f"the DataFrame has two columns named {field.name!r} (names are case-insensitive)")
        fields[key] = field
    return fields


def _check_partition_by(partition_by: Any, fields: dict[str, Any]) -> list[str] | None:
    if partition_by is None:
        return None
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


def _ensure_table(ms: Metastore, db: str, name: str, df: Any, partition_by: list[str] | None) -> TableDefinition:
    """The existing table (checking the partition keys), or a new one with the DataFrame's schema (without partition
    keys for `partition_by=[]`)."""
    fields = _fields_by_name(df)
    try:
        table = ms.get_table(db, name)
    except NoSuchObjectError:
        if partition_by is None:
            raise SargableError(
                f"table {db}.{name} does not exist: give partition_by=[...] to create it from the DataFrame "
                "(partition_by=[] for a table without partition keys)"
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
    if partition_by is not None and [c.lower() for c in partition_by] != [k.lower() for k in table.partition_key_names]:
        keys = f"partitioned by {table.partition_key_names}" if table.partition_keys else "without partition keys"
        raise SargableError(f"table {table.qualified_name} is {keys}, not partitioned by {partition_by}")
    known = {n.lower() for n, _ in table.schema}
    extra = [f.name for f in df.schema.fields if f.name.lower() not in known]
    if extra:
        raise SargableError(f"columns {extra} are not columns of {table.qualified_name}")
    for pkey in table.partition_key_names:
        if pkey.lower() not in fields:
            raise SargableError(f"the DataFrame has no column {pkey!r}, a partition key of {table.qualified_name}")
    return table


def _aligned(df: Any, table: TableDefinition, extra: Sequence[str] = ()) -> Any:
    """The DataFrame's columns in table order, cast to the table's types, then its `extra` columns as they are;
    missing data columns as NULL."""
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
    return df.select(*out, *(F.col(f"`{name}`") for name in extra))


def _footer_stats(
    spark: Any, items: list[tuple[str, str, dict[str, Any], int]], table: TableDefinition
) -> list[FileStats]:
    """Statistics of the staged files, read from their footers by a Spark job (on the executors).

    The job is `mapInArrow` over `spark.range(len(items))` in one task per core (a footer takes a fraction of a
    millisecond; more tasks only add overhead), not an RDD, so it runs the same way from a classic session and from
    a Spark Connect one; the function is shipped with sargable's source, for executors without it.
    """
    if not items:
        return []
    slices = max(1, min(len(items), parallelism(spark)))
    task = _footer_task(items, list(table.columns))

    def batches(source: Any) -> Any:
        import pyarrow as pa

        for batch in source:
            out = [task(i) for i in batch.column(0).to_pylist()]
            yield pa.RecordBatch.from_arrays([pa.array(out, pa.binary())], ["stats"])

    with job_description(spark, f"sargable: footer statistics of {len(items)} files for {table.qualified_name}"):
        result = spark.range(0, len(items), 1, slices).mapInArrow(ship(batches), "stats binary").toArrow()
    return [pickle.loads(value) for value in result.column(0).to_pylist()]


def _footer_task(items: Sequence[tuple[str, str, dict[str, Any], int]], columns: Sequence[tuple[str, DataType]]) -> Any:
    """A picklable function for executors: item index -> pickled FileStats read from that staged file's footer.

    Timestamp columns that Spark wrote as INT96 (its default `spark.sql.parquet.outputTimestampType`, left as the
    session has it) have no usable footer statistics: those columns' statistics are computed from their data (only
    theirs are read). Spark writes INT96 for timestamps only, so a table without a timestamp column skips the check
    (a second open of every footer).
    """
    timestamps = any(dtype.name == "timestamp" for _, dtype in columns)

    def task(index: int) -> bytes:
        import pyarrow.parquet as pq

        from sargable.parquet_stats import stats_from_arrow, stats_from_parquet

        staged, final, spec, size = items[index]
        stats = stats_from_parquet(staged, list(columns))
        int96 = {c.name for c in pq.ParquetFile(staged).schema if c.physical_type == "INT96"} if timestamps else set()
        typed = [(name, dtype) for name, dtype in columns if name in int96]
        if typed:
            data = pq.read_table(staged, columns=[name for name, _ in typed], coerce_int96_timestamp_unit="us")
            computed = stats_from_arrow(data, staged, schema=typed).columns
            stats = dataclasses.replace(stats, columns={**stats.columns, **computed})
        return pickle.dumps(dataclasses.replace(stats, path=final, partition=spec, size_bytes=size))

    return task


def _status(console: Console | None, message: str) -> AbstractContextManager:
    return console.status(message) if console is not None else nullcontext()


def _check_visible(keys: Sequence[str], table: str) -> None:
    """Refuse partition keys whose folders Spark and the staging listing would treat as hidden (`.p=1/`)."""
    for key in keys:
        if hidden(escape_path_name(key) + "="):
            raise SargableError(
                f"partition key {key!r} of {table} starts with '.': its folders ({key}=...) are hidden from Spark and "
                "from sargable's listings, so their files would be lost; rename the column"
            )


def _check_staging_root(fs: FileSystem, staging_root: str) -> None:
    """The staging folder must be a real folder of the table (or not exist yet), never a symlink to elsewhere."""
    entry = fs.info(staging_root)
    if entry is not None and entry.kind != DIRECTORY:
        raise SargableError(
            f"{staging_root} is a {entry.kind}, not a folder: writes stage their files there; remove it first"
        )


def _split_name(rel: list[str], split_by: str | None, path: str) -> tuple[list[str], str]:
    """The partition folders and the final file name of a staged file: with `split_by`, its last folder
    (`split_by=N`) is dropped and `N` goes into the name, unique within the write."""
    if split_by is None:
        return rel[:-1], rel[-1]
    prefix = f"{split_by}="
    if len(rel) < 2 or not rel[-2].startswith(prefix) or not rel[-2][len(prefix) :].isdigit():
        raise SargableError(f"Spark wrote {path!r} outside a {prefix}N folder: the rewrite is refused")
    return rel[:-2], f"{rel[-1][: -len(DATA_SUFFIX)]}-{int(rel[-2][len(prefix) :]):05d}{DATA_SUFFIX}"


def _staged_files(
    fs: FileSystem, staging: str, table: TableDefinition, split_by: str | None = None
) -> tuple[list[tuple[str, str, dict[str, Any], int]], set[str]]:
    """(staged path, final path, partition spec, size) of every data file Spark wrote, and the top folders that
    hold anything else (bookkeeping files).

    Everything in the staging folder must be accounted for: data files in partition folders of the table's keys
    (and of `split_by` below them), and Spark's bookkeeping files (`_SUCCESS`, `.crc` checksums). Anything else (a
    file in a hidden folder, a file that is not Parquet, a symlink) would be lost or misread, so it fails the write
    before the commit.
    """
    location = fs.location
    items = []
    cluttered = set()
    for entry in fs.walk(staging):
        rel = relative_parts(entry.path, staging)
        if entry.kind == DIRECTORY and not hidden(rel[-1]):
            continue
        if entry.kind == FILE and hidden(rel[-1]) and not any(hidden(part) for part in rel[:-1]):
            cluttered.add(rel[0])
            continue
        if entry.kind != FILE or any(hidden(part) for part in rel) or not rel[-1].endswith(DATA_SUFFIX):
            raise SargableError(
                f"Spark wrote {entry.path!r} ({entry.kind}), which is not a data file in a partition folder of "
                f"{table.qualified_name}: the write is refused rather than lose or misread it"
            )
        folders, file_name = _split_name(rel, split_by, entry.path)
        folder = "/".join(folders)
        values = parse_partition_name(folder, table.partition_keys) if table.partition_keys else ()
        if not table.partition_keys and folder:
            raise SargableError(
                f"Spark wrote {entry.path!r} into a folder, but {table.qualified_name} has no partitions"
            )
        spec = dict(zip(table.partition_key_names, values, strict=True))
        items.append((entry.path, join_path(location, *folders, file_name), spec, entry.size))
    return sorted(items, key=lambda item: item[0]), cluttered


def _check_totals(files: list[FileStats], spark_rows: Any, items: list[Any]) -> None:
    """The files hold exactly the rows Spark reports having written, one footer per listed file."""
    rows = sum(f.row_count for f in files)
    if len(files) != len(items) or rows != spark_rows:
        raise SargableError(
            f"the write doesn't add up: Spark reported {spark_rows} rows written, the {len(items)} files listed hold "
            f"{rows} rows in {len(files)} footers; nothing was committed"
        )


def _handle(deleter: Deleter) -> Table:
    return deleter.ms.table(deleter.table.database, deleter.table.name)


def discard(deleter: Deleter, paths: Sequence[str], staging: str, *, complete: bool = True) -> list[str]:
    """Delete a write's own files (moved into the table but not committed, and its staging folder), through
    `sargable.deletion`; returns what could not be removed (a file that a table lists is never deleted). When
    nothing is left, the write's intent ends (else `vacuum` finds what is left through it).

    `complete=False` says the write's Spark job failed before handing back its files: on an object store, where
    they are written where they stay and not in a staging folder, the ones its tasks wrote are not in `paths`, so
    the intent stays and `vacuum` finds them by the write id in their names."""
    failures = [f"{path}: {reason}" for path in paths if (reason := deleter.delete(path)) is not None]
    try:
        if not deleter.fs.object_store:
            failures.extend(f"{path}: {reason}" for path, reason in deleter.clear(staging))
            deleter.remove_folder(posixpath.dirname(staging))
        elif not complete:
            return failures
        if not failures:
            _handle(deleter).end_write(posixpath.basename(staging))
    except (OSError, SargableError) as exc:
        failures.append(f"{staging}: can't clean the staging folder: {exc}")
    return failures


def new_staging(deleter: Deleter) -> str:
    """Begin a new write to the deleter's table (its intent registered in the metastore before any file is written,
    `sargable.metastore.intents`); returns its staging folder (`_sargable_staging/<write id>`, not made yet)."""
    root = join_path(deleter.location, STAGING_DIR)
    if not deleter.fs.object_store:
        _check_staging_root(deleter.fs, root)
    handle = _handle(deleter)
    intent = handle.begin_write()
    if intent.location != deleter.table.location:
        handle.end_write(intent.write_id)
        raise SargableError(
            f"the location of {handle.qualified_name} moved to {intent.location!r} while the write was prepared; "
            "nothing was written: run it again"
        )
    return join_path(root, intent.write_id)


@contextmanager
def _timed(phases: dict[str, float], name: str) -> Iterator[None]:
    """Add the block's seconds to `phases[name]`."""
    started = time.perf_counter()
    try:
        yield
    finally:
        phases[name] = phases.get(name, 0.0) + time.perf_counter() - started


def stage(
    df: Any,
    table: TableDefinition,
    deleter: Deleter,
    staging: str,
    moved: list[str],
    console: Console | None,
    split_by: str | None = None,
    phases: dict[str, float] | None = None,
) -> list[FileStats]:
    """Steps 1-3 of the module docstring: Spark writes the DataFrame (in the table's columns and types) into
    `staging`, the files' statistics come from their footers and must add up to the rows Spark counted, and the
    files are moved into the table, each final path appended to `moved` once it is there. Nothing is committed.

    `split_by` names an int column of `df` (not written) whose every value's rows go to files of their own, so a
    task writes as many files as it holds values (optimize's output files, several per task). The seconds of each
    step are added to `phases`."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    fs = deleter.fs
    phases = {} if phases is None else phases
    observation = Observation(f"sargable-write-{uuid.uuid4().hex}")
    extra = [split_by] if split_by is not None else []
    observed = _aligned(df, table, extra).observe(observation, F.count(F.lit(1)).alias("rows"))
    if fs.object_store:
        with _timed(phases, "spark write"), spark_progress(df.sparkSession, console, f"writing {table.qualified_name}"):
            files = write_files(observed, table, fs.location, posixpath.basename(staging), split_by)
            moved.extend(f.path for f in files)
            spark_rows = observation.get["rows"]
        _handle(deleter).record_write(posixpath.basename(staging), [f.path for f in files])
        _check_totals(files, spark_rows, files)
        return files
    writer = observed.write.mode("error").options(**STAGING_OPTIONS)
    if table.partition_keys or extra:
        writer = writer.partitionBy(*table.partition_key_names, *extra)
    with _timed(phases, "spark write"), spark_progress(df.sparkSession, console, f"writing {table.qualified_name}"):
        writer.parquet(staging)
        spark_rows = observation.get["rows"]
    with _timed(phases, "listing"), _status(console, f"listing the files written to {table.qualified_name}"):
        items, cluttered = _staged_files(fs, staging, table, split_by)
    with _timed(phases, "footers"), spark_progress(df.sparkSession, console, f"reading {len(items):,} footers"):
        files = _footer_stats(df.sparkSession, items, table)
    _check_totals(files, spark_rows, items)
    record_targets(deleter, staging, [target for _, target, _, _ in items])
    with _timed(phases, "move"), _status(console, f"moving {len(items)} files into {deleter.location}"):
        _move(fs, staging, items, moved, cluttered if table.partition_keys and split_by is None else None)
    return files


def record_targets(deleter: Deleter, staging: str, targets: list[str]) -> None:
    """Record the final paths of the write's files in its intent, before they are moved there; a path where a file
    already is (one sargable did not write, or a name Spark reused) refuses the write rather than replace that file
    or let the intent claim it."""
    taken = next((target for target in targets if deleter.fs.info(target) is not None), None)
    if taken is not None:
        raise SargableError(
            f"{taken!r} already exists: the write is refused rather than replace a file it did not write; nothing "
            "was committed"
        )
    _handle(deleter).record_write(posixpath.basename(staging), targets)


def _move(
    fs: FileSystem,
    staging: str,
    items: Sequence[tuple[str, str, dict[str, Any], int]],
    moved: list[str],
    cluttered: set[str] | None,
) -> None:
    """Move the staged files to their final paths, each appended to `moved` once it is there. Unless `cluttered` is
    None, a top partition folder (`ds=2024-01-01/`) holding only data files and not yet in the table moves whole, in
    one rename (a new day of a table: one rename instead of one per file, and nothing left to clean up)."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for source, target, _, _ in items:
        groups.setdefault(relative_parts(source, staging)[0], []).append((source, target))
    for top, pairs in groups.items():
        whole = cluttered is not None and top not in cluttered and len(relative_parts(pairs[0][0], staging)) > 1
        if whole and fs.move_folder(join_path(staging, top), join_path(fs.location, top)):
            moved.extend(target for _, target in pairs)
            continue
        for source, target in pairs:
            fs.move(source, target)
            moved.append(target)


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

    `mode="overwrite"` replaces exactly the partitions present in `df` (all the files of a table without partition
    keys). Creates the table (from the DataFrame's schema, partitioned by `partition_by`; `[]`: no partition keys)
    when it doesn't exist. Everything that can fail is checked before the
    commit; after it, the staging folder is removed and replaced files whose retention has passed are deleted
    through `sargable.deletion`; what could not be is reported in `WriteResult.cleanup_failures` (the write itself
    has succeeded then).
    """
    started = time.perf_counter()
    db, name = split_table_name(table)
    if mode not in MODES:
        raise SargableError(f"mode must be one of {MODES}, got {mode!r}")
    if not hasattr(df, "sparkSession") or not hasattr(df, "write"):
        raise SargableError(f"write takes a pyspark DataFrame, got {type(df).__name__}")
    partition_by = _check_partition_by(partition_by, _fields_by_name(df))
    console = _console() if progress else None
    with opened(metastore) as ms:
        ensure_registered(df.sparkSession, ms)
        _check_visible(partition_by or [], f"{db}.{name}")
        tbl = _ensure_table(ms, db, name, df, partition_by)
        _check_visible(tbl.partition_key_names, tbl.qualified_name)
        try:
            deleter = Deleter(ms, tbl)
        except DeletionRefusedError as exc:
            raise SargableError(f"won't write to {tbl.qualified_name}: {exc}") from None
        staging = new_staging(deleter)
        moved: list[str] = []
        phases: dict[str, float] = {}
        files = None
        try:
            files = stage(df, tbl, deleter, staging, moved, console, phases=phases)
            specs = list({tuple(f.partition.items()): f.partition for f in files if f.partition}.values())
            with (
                _timed(phases, "commit"),
                _status(console, f"committing {len(files)} files in {len(specs)} partitions to {tbl.qualified_name}"),
            ):
                version, replaced = _commit(ms, tbl, files, specs, mode)
        except BaseException:
            discard(deleter, moved, staging, complete=files is not None or bool(moved))
            raise
        with _timed(phases, "cleanup"):
            failures = discard(deleter, [], staging)
            if replaced:
                expired = expire_removed(ms, tbl.database, tbl.name)
                failures.extend(f"{path}: {reason}" for path, reason in expired.kept)
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
        cleanup_failures=tuple(failures),
        phases=phases,
    )


def _commit(
    ms: Metastore, table: TableDefinition, files: list[FileStats], specs: list[dict[str, Any]], mode: str
) -> tuple[int, list[str]]:
    """Commit the files; returns the new version and the paths an overwrite replaced (removed by the commit, with
    tombstones: deleted once the table's retention has passed). An overwrite lists the partitions' files (all the
    files of a table without partition keys) and removes exactly those, failing if any other commit came in between
    (`expected_version`)."""
    db, name = table.database, table.name
    if mode == "append":
        if not files:
            return ms.get_table(db, name).version, []
        return ms.commit(db, name, add_files=files).version, []
    current = ms.get_table(db, name)
    replace = [Partition(current, tuple(s.values())) for s in specs] if current.partition_keys else None
    old = [f.path for f in ms.list_files(db, name, replace)]
    if not files and not old:
        return current.version, []
    result = ms.commit(db, name, add_files=files, remove_files=old, expected_version=current.version)
    return result.version, old


class VacuumList(list[str]):
    """What `vacuum` returns: the garbage paths (a list, as ever), and the table's unlisted files as `unlisted` (a
    `sargable.unlisted.UnlistedReport`: what failed or refused engine writes left, reported, never deleted)."""

    def __init__(self, paths: Iterable[str], unlisted: UnlistedReport) -> None:
        super().__init__(paths)
        self.unlisted = unlisted


def vacuum(
    table: str, metastore: Metastore | str | None = None, dry_run: bool = True, *, older_than: float = 0.0
) -> VacuumList:
    """The garbage of the table's failed writes (and its removed files past their retention): with
    `dry_run=False`, those deleted. See `sargable.vacuum` for what counts as garbage and what is never deleted.
    The list's `unlisted` reports the files in folders no partition lists, older than the table's retention
    (`sargable.unlisted`): never deleted.

    `older_than` (seconds) spares files younger than that, so a write still in progress keeps its staged files.
    """
    db, name = split_table_name(table)
    with opened(metastore) as ms:
        result = run_vacuum(ms, db, name, dry_run=dry_run, older_than=older_than)
    return VacuumList(result.garbage if dry_run else result.deleted, result.unlisted)


def _console() -> Console:
    """The driver's console on stderr (rich imported here: a Python worker imports this module without it)."""
    from rich.console import Console

    return Console(stderr=True)
