"""`optimize`: compact a table's small files and cluster its rows along a space-filling curve (issue 21).

The plan comes from the metastore alone (`sargable.maintenance.plan_optimize`: the partitions to rewrite, their
files, how many files each becomes). Partitions are rewritten in batches of at most `max_batch_bytes` of input, one
commit each; per batch:

1. clustering only: a sample of each partition's clustered columns goes to the driver (the rows of a random subset of
   its files, at least 32 files or all of them, sampled down to about `sample_rows` rows), and a `Clustering` is
   fitted per partition, from that partition's own values (ranks over the whole table would give one day's
   `event_time` a thirtieth of the codes), with the keys at which its rows are cut into files (`cut_boundaries`);
2. the batch's files are read (Spark's Parquet reader over exactly those files), each row gets its partition's index
   (a broadcast join on the partition values), and an Arrow UDF over only that index and the clustered columns (for
   a compaction, a hash of the row) computes each row's curve key and output file; the rows stay in the JVM;
3. the output files are spread evenly over a few tasks (enough for the cluster's cores, about `TASK_INPUT_BYTES` of
   input each: a task per file would cost more in task overhead than the writing on small partitions),
   `sortWithinPartitions(partition keys, file, key, clustered columns)` puts each file's rows together, ordered along
   the curve, and Spark writes them into a staging folder with the file number as a last partition level (`SPLIT`),
   so every output file is cut exactly where the plan cuts it; footers, the rows check and the move into the table
   (the file number going into the file's name) are `sgs.write`'s (`sargable.spark.writer.stage`);
4. the rows written must equal, partition by partition, the rows the metastore lists for the files read; then one
   commit removes exactly those files and adds the new ones, tagged with their `layout`. A file another commit has
   removed meanwhile (a concurrent optimize or overwrite of the partition) fails the commit as a whole
   (`CommitConflictError`) and this batch's new files are deleted; a concurrent append survives, its files not being
   among those removed.

Removed files get tombstones and stay on disk for the table's retention (`sargable.metastore.tombstones`, 7 days by
default) for readers of older snapshots; after its commits, optimize deletes the removed files (this run's and
earlier ones') whose retention has passed, through `sargable.deletion` (`sargable.vacuum.expire_removed`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import operator
import random
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from sargable.curves import Clustering, cut_boundaries
from sargable.deletion import Deleter
from sargable.errors import CommitConflictError, DeletionRefusedError, OptimizeError
from sargable.maintenance import DEFAULT_CURVE, OptimizePlan, plan_optimize
from sargable.metastore import Metastore, TableDefinition, partition_name
from sargable.rewrite import DEFAULT_MIN_INPUT_FILES, DEFAULT_TARGET_FILE_BYTES, PartitionRewrite
from sargable.spark.catalog import opened, split_table_name
from sargable.spark.frames import files_frame
from sargable.spark.schema import ntz_columns, struct_type
from sargable.spark.session import job_description, parallelism
from sargable.spark.writer import discard, new_staging, stage
from sargable.stats import FileStats
from sargable.vacuum import expire_removed

DEFAULT_SAMPLE_ROWS = 50_000
"""Rows of a partition its clustering's ranks and cuts come from."""
SAMPLE_BUDGET_ROWS = 2_000_000
"""At most this many sampled rows per batch reach the driver (many small partitions get fewer each)."""
MIN_SAMPLE_FILES = 32
"""A partition's sample comes from at least this many of its files (or all), so files clustered earlier, each
covering a small box, don't bias its ranks."""
DEFAULT_MAX_BATCH_BYTES = 64 * 1024**3
TASK_INPUT_BYTES = 512 * 1024**2
"""At most about this much input per task of the staging write (more tasks only when the cluster has the cores)."""
SPLIT = "sargable_file"
"""The column (and staging folder level) numbering a batch's output files; never written into the files."""
_PART, _CURVE, _FILE, _KEY = "__sargable_part", "__sargable_curve", "__sargable_file", "key"


@dataclass(frozen=True)
class OptimizeResult:
    """What one `optimize` did: its plan, the commits it made (one per batch), and the files it deleted."""

    table: str
    plan: OptimizePlan
    dry_run: bool
    versions: tuple[int, ...]
    """The table version of each batch's commit."""
    partitions: int
    files_removed: int
    files_added: int
    rows: int
    bytes_removed: int
    bytes_added: int
    seconds: float
    deleted: tuple[str, ...] = ()
    """Removed files deleted because the table's retention had passed (this run's when the retention is 0)."""
    retained: int = 0
    """Removed files still on disk, kept for readers of older snapshots until the retention passes."""
    cleanup_failures: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "plan"}
        out["deleted"], out["cleanup_failures"] = len(self.deleted), list(self.cleanup_failures)
        out["versions"] = list(self.versions)
        return {**out, "plan": self.plan.to_dict()}


def _batches(entries: Sequence[PartitionRewrite], max_bytes: int) -> list[list[PartitionRewrite]]:
    """Consecutive partitions grouped into batches of at most `max_bytes` of input (at least one partition each)."""
    out: list[list[PartitionRewrite]] = []
    size = 0
    for entry in entries:
        if not out or size + entry.bytes_in > max_bytes:
            out.append([])
            size = 0
        out[-1].append(entry)
        size += entry.bytes_in
    return out


def _with_partition_index(spark: Any, df: Any, table: TableDefinition, specs: Sequence[dict[str, Any]]) -> Any:
    """The rows with the index of their partition among `specs` (a broadcast join, NULL-safe on every key)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if not table.partition_keys:
        return df.withColumn(_PART, F.lit(0))
    keys = [(f"__sargable_p{i}", dtype) for i, (_, dtype) in enumerate(table.partition_keys)]
    marked = ntz_columns(table.properties)
    ntz = {key for (key, _), name in zip(keys, table.partition_key_names) if name in marked}
    schema = T.StructType([*struct_type(keys, ntz).fields, T.StructField(_PART, T.IntegerType(), False)])
    rows = [(*(spec[name] for name in table.partition_key_names), index) for index, spec in enumerate(specs)]
    parts = spark.createDataFrame(rows, schema)
    on = functools.reduce(
        operator.and_, [df[name].eqNullSafe(parts[key]) for name, (key, _) in zip(table.partition_key_names, keys)]
    )
    return df.join(F.broadcast(parts), on=on, how="inner").drop(*(key for key, _ in keys))


def _spec(entry: PartitionRewrite) -> dict[str, Any]:
    """The partition values (key -> value) of a partition of the plan."""
    return dict(entry.rewrite[0].partition or {})


def _sample_files(entry: PartitionRewrite, rows: int, rng: random.Random) -> list[FileStats]:
    """A random subset of the partition's files holding at least `rows` rows and `MIN_SAMPLE_FILES` files (or all)."""
    files = list(entry.rewrite)
    rng.shuffle(files)
    chosen, held = [], 0
    for file in files:
        if held >= rows and len(chosen) >= MIN_SAMPLE_FILES:
            break
        chosen.append(file)
        held += file.row_count
    return chosen


def _clusterings(
    spark: Any, table: TableDefinition, plan: OptimizePlan, batch: Sequence[PartitionRewrite], sample_rows: int
) -> list[tuple[Clustering, np.ndarray]]:
    """Per partition of the batch: its clustering, fitted on a sample of its rows, and the keys that cut it into
    files."""
    from pyspark.sql import functions as F

    columns = list(plan.rewrite.cluster_by)
    per_partition = max(1000, min(sample_rows, SAMPLE_BUDGET_ROWS // len(batch)))
    rng = random.Random(21)
    chosen = [_sample_files(entry, per_partition, rng) for entry in batch]
    fractions = [min(1.0, per_partition / max(1, sum(f.row_count for f in files))) for files in chosen]
    frame = files_frame(spark, table, [f for files in chosen for f in files])
    frame = _with_partition_index(spark, frame, table, [_spec(e) for e in batch])
    pick = F.element_at(F.array(*[F.lit(f) for f in fractions]), F.col(_PART) + 1)
    with job_description(spark, f"sargable optimize: sampling {len(batch)} partitions of {table.qualified_name}"):
        sample = frame.where(F.rand(21) < pick).select(_PART, *columns).toArrow()
    index = np.asarray(sample.column(_PART).to_numpy(zero_copy_only=False))
    out = []
    for i, entry in enumerate(batch):
        rows = sample.filter(pa.array(index == i)).select(columns)
        clustering = Clustering.fit(rows, columns, curve=plan.curve or DEFAULT_CURVE)
        keys = np.sort(np.asarray(clustering.keys(rows).to_numpy(zero_copy_only=False)))
        out.append((clustering, cut_boundaries(keys, entry.output_files)))
    return out


def _task_values(spark: Any, count: int) -> np.ndarray:
    """`count` bigint values whose Spark hash puts value `i` in task `i` of `repartition(count, value)` (Spark's
    `pmod(hash(v), count)`), found by asking Spark about consecutive integers."""
    from pyspark.sql import functions as F

    found: dict[int, int] = {}
    start, step = 0, max(1024, int(count * (math.log(count) + 8)))
    while len(found) < count:
        pairs = spark.range(start, start + step).select("id", F.expr(f"pmod(hash(id), {count})").alias("p")).toArrow()
        for value, task in zip(pairs.column("id").to_pylist(), pairs.column("p").to_pylist(), strict=True):
            found.setdefault(task, value)
        start += step
    return np.array([found[i] for i in range(count)], dtype=np.int64)


def _staging_tasks(spark: Any, batch: Sequence[PartitionRewrite], files: int) -> int:
    """How many tasks write the batch's `files` output files: enough to use the cluster and to keep each task's
    input under `TASK_INPUT_BYTES`, never more than one per file."""
    needed = -(-sum(entry.bytes_in for entry in batch) // TASK_INPUT_BYTES)
    return max(1, min(files, max(parallelism(spark), needed)))


def _curve_task(
    clusterings: Sequence[tuple[Clustering, np.ndarray]], columns: Sequence[str]
) -> Callable[..., pa.Array]:
    """The Arrow UDF's function: (partition index, clustered columns...) -> struct(key, file), the row's curve key
    and its output file among its partition's. Self-contained over numpy and pyarrow (and `sargable.curves`)."""

    def task(part: pa.Array, *values: pa.Array) -> pa.Array:
        parts = np.asarray(part.to_numpy(zero_copy_only=False), dtype=np.int64)
        keys = np.zeros(len(parts), dtype=np.int64)
        local = np.zeros(len(parts), dtype=np.int64)
        for p in np.unique(parts):
            rows = np.flatnonzero(parts == p)
            whole = len(rows) == len(parts)
            batch = pa.table(
                {name: v if whole else v.take(pa.array(rows)) for name, v in zip(columns, values, strict=True)}
            )
            clustering, bounds = clusterings[p]
            key = np.asarray(clustering.keys(batch).to_numpy(zero_copy_only=False), dtype=np.int64)
            keys[rows] = key
            local[rows] = np.searchsorted(bounds, key, side="right")
        return pa.StructArray.from_arrays([pa.array(keys), pa.array(local)], names=[_KEY, _FILE])

    return task


def _lookup(values: Sequence[int], index: Any) -> Any:
    """The Spark column `values[index]` (an int column, from 0)."""
    from pyspark.sql import functions as F

    return F.element_at(F.array(*[F.lit(int(v)) for v in values]), (index + 1).cast("int"))


def _split_column(table: TableDefinition) -> str:
    """`SPLIT`, or with underscores added until it names no column of the table."""
    taken = {name.lower() for name, _ in table.schema}
    name = SPLIT
    while name in taken:
        name += "_"
    return name


def _arranged(
    spark: Any, table: TableDefinition, plan: OptimizePlan, batch: Sequence[PartitionRewrite], sample_rows: int
) -> Any:
    """The batch's rows with their output file (column `SPLIT`), a few files per task, each file's rows together and
    ordered along the curve (module docstring, 2-3)."""
    from pyspark.sql import functions as F

    columns = list(plan.rewrite.cluster_by)
    clusterings = _clusterings(spark, table, plan, batch, sample_rows) if columns else None
    if clusterings is None:
        counts = [entry.output_files for entry in batch]
    else:
        counts = [len(bounds) + 1 for _, bounds in clusterings]
    task_values = _task_values(spark, _staging_tasks(spark, batch, sum(counts)))
    frame = files_frame(spark, table, [f for entry in batch for f in entry.rewrite])
    frame = _with_partition_index(spark, frame, table, [_spec(e) for e in batch])
    names = [f"`{name}`" for name, _ in table.schema]
    part = F.col(_PART)
    within: list[Any] = []
    if clusterings is None:
        local = F.pmod(F.hash(*[F.col(n) for n in names]).cast("bigint"), _lookup(counts, part))
    else:
        arguments = [F.col(f"`{c}`") for c in columns]
        udf = F.arrow_udf(_curve_task(clusterings, columns), f"{_KEY} bigint, {_FILE} bigint")
        frame = frame.withColumn(_CURVE, udf(part, *arguments))
        local = F.col(f"{_CURVE}.{_FILE}")
        within = [F.col(f"{_CURVE}.{_KEY}"), *arguments]
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    frame = frame.withColumn(_FILE, _lookup(offsets, part) + local)
    tasks = len(task_values)
    frame = frame.repartition(tasks, _lookup(task_values, F.pmod(F.col(_FILE), F.lit(tasks))))
    order = [*(F.col(f"`{k}`") for k in table.partition_key_names), F.col(_FILE), *within]
    return frame.sortWithinPartitions(*order).select(*names, F.col(_FILE).alias(_split_column(table)))


def _check_rows(table: TableDefinition, batch: Sequence[PartitionRewrite], files: Sequence[FileStats]) -> None:
    """Every partition's new files hold exactly the rows of the files they replace (by the metastore's counts)."""
    written: dict[str, int] = {}
    for file in files:
        values = tuple((file.partition or {}).get(k) for k in table.partition_key_names)
        name = partition_name(table.partition_keys, values) if table.partition_keys else batch[0].partition
        written[name] = written.get(name, 0) + file.row_count
    expected = {entry.partition: entry.rows_in for entry in batch}
    wrong = {n: (expected.get(n, 0), written.get(n, 0)) for n in {*expected, *written}}
    wrong = {n: counts for n, counts in wrong.items() if counts[0] != counts[1]}
    if wrong:
        name, (want, got) = sorted(wrong.items())[0]
        raise OptimizeError(
            f"optimize of {table.qualified_name} doesn't add up: partition {name} held {want:,} rows in the metastore "
            f"and {got:,} were written ({len(wrong)} partitions differ); nothing was committed"
        )


def _progress(enabled: bool, total: int, table: str) -> tuple[AbstractContextManager, Callable[[int, str], None]]:
    """A progress bar over the partitions (stderr, only when `enabled`) and the function advancing it."""
    if not enabled:
        return nullcontext(), lambda step, text: None
    from rich.console import Console  # the driver's bar: a Python worker imports this module without rich
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    progress = Progress(*columns, console=console, transient=True, disable=not console.is_terminal)
    task = progress.add_task(f"optimizing {table}", total=total)
    return progress, lambda step, text: progress.update(task, advance=step, description=text)


def optimize(
    spark: Any,
    table: str,
    where: str | None = None,
    cluster_by: Sequence[str] | str | None = None,
    target_file_bytes: int = DEFAULT_TARGET_FILE_BYTES,
    min_input_files: int = DEFAULT_MIN_INPUT_FILES,
    *,
    curve: str = DEFAULT_CURVE,
    metastore: Metastore | str | None = None,
    dry_run: bool = False,
    progress: bool = True,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    sample_rows: int = DEFAULT_SAMPLE_ROWS,
) -> OptimizeResult:
    """Compact the small files of the partitions `where` selects (a filter on partition keys; all when None) into
    files near `target_file_bytes`; with `cluster_by`, rewrite each partition whole with its rows ordered along a
    space-filling curve (`curve`: `hilbert` or `zorder`) over those data columns, so each file covers a compact box
    of them and file statistics skip more. One atomic commit per batch of partitions (module docstring);
    `dry_run=True` only plans (no Spark job). A partition another writer rewrote meanwhile fails its batch with a
    CommitConflictError, its new files deleted."""
    started = time.perf_counter()
    split_table_name(table)
    if isinstance(max_batch_bytes, bool) or not isinstance(max_batch_bytes, int) or max_batch_bytes < 1:
        raise OptimizeError(f"max_batch_bytes must be a positive number of bytes, got {max_batch_bytes!r}")
    if isinstance(sample_rows, bool) or not isinstance(sample_rows, int) or sample_rows < 1:
        raise OptimizeError(f"sample_rows must be a positive int, got {sample_rows!r}")
    with opened(metastore) as ms:
        plan = plan_optimize(
            ms,
            table,
            where,
            cluster_by,
            target_file_bytes=target_file_bytes,
            min_input_files=min_input_files,
            curve=curve,
        )
        definition = plan.table
        if dry_run or not plan.rewrite.partitions:
            return OptimizeResult(definition.qualified_name, plan, dry_run, (), 0, 0, 0, 0, 0, 0, 0.0)
        try:
            deleter = Deleter(ms, definition)
        except DeletionRefusedError as exc:
            raise OptimizeError(f"won't optimize {definition.qualified_name}: {exc}") from None
        batches = _batches(plan.rewrite.partitions, max_batch_bytes)
        versions: list[int] = []
        added: list[FileStats] = []
        failures: list[str] = []
        display, advance = _progress(progress, len(plan.rewrite.partitions), definition.qualified_name)
        with display:
            for number, batch in enumerate(batches, start=1):
                advance(0, f"optimizing {definition.qualified_name}: batch {number} of {len(batches)}")
                version, files, left = _rewrite(spark, ms, plan, batch, deleter, sample_rows, number, len(batches))
                versions.append(version)
                added.extend(files)
                failures.extend(left)
                advance(len(batch), f"optimizing {definition.qualified_name}: batch {number} of {len(batches)}")
        db, name = split_table_name(definition.qualified_name)
        expired = expire_removed(ms, db, name)
        failures.extend(f"{path}: {reason}" for path, reason in expired.kept)
        retained = len(ms.table(db, name).tombstones())
    return OptimizeResult(
        table=definition.qualified_name,
        plan=plan,
        dry_run=False,
        versions=tuple(versions),
        partitions=len(plan.rewrite.partitions),
        files_removed=plan.rewrite.files_in,
        files_added=len(added),
        rows=sum(f.row_count for f in added),
        bytes_removed=plan.rewrite.bytes_in,
        bytes_added=sum(f.size_bytes for f in added),
        seconds=time.perf_counter() - started,
        deleted=expired.deleted,
        retained=retained,
        cleanup_failures=tuple(failures),
    )


def _rewrite(
    spark: Any,
    ms: Metastore,
    plan: OptimizePlan,
    batch: Sequence[PartitionRewrite],
    deleter: Deleter,
    sample_rows: int,
    number: int,
    batches: int,
) -> tuple[int, list[FileStats], list[str]]:
    """Rewrite one batch and commit it: (the new version, the files added, what its cleanup left)."""
    table = plan.table
    staging = new_staging(deleter)
    moved: list[str] = []
    removed = [f.path for entry in batch for f in entry.rewrite]
    files = None
    try:
        with job_description(spark, f"sargable optimize {table.qualified_name}: batch {number} of {batches}"):
            frame = _arranged(spark, table, plan, batch, sample_rows)
            files = stage(frame, table, deleter, staging, moved, None, _split_column(table))
        _check_rows(table, batch, files)
        files = [dataclasses.replace(f, layout=plan.layout) for f in files]
        version = ms.table(table.qualified_name).commit(remove_files=removed, add_files=files).version
    except CommitConflictError as exc:
        discard(deleter, moved, staging)
        done = f"batches 1-{number - 1} of {batches} stay committed; " if number > 1 else ""
        raise CommitConflictError(
            f"optimize of {table.qualified_name} lost a race in batch {number} ({len(batch)} partitions, from "
            f"{batch[0].partition}): {exc}; its new files were deleted, {done}run optimize again"
        ) from None
    except BaseException:
        discard(deleter, moved, staging, complete=files is not None or bool(moved))
        raise
    return version, files, discard(deleter, [], staging)
