"""Writes to an object store: the executors write each Parquet file straight to the key where it stays.

On S3 a rename is a copy and a delete per object, and Spark's file commit protocols (a `_temporary` folder renamed
into place) and `sgs.write`'s local staging (a folder renamed into the table) would both copy every file. So on an
object store Spark hands the rows to Python workers as Arrow batches (`mapInArrow`, sorted by the partition
columns within each task, as Spark's own writer sorts them), and each task writes its files with pyarrow to their
final keys, `<location>/<partition folders>/part-<write id>-<task>-<n>.parquet`, the partition columns left out of
the files as Spark leaves them out; the task returns each file's statistics from the footer it has just written
(no footer job, no listing, no read back). Nothing is visible until the metastore commit; a failed or killed write
leaves files no table lists, which `vacuum` finds (a task that fails and runs again writes under new names).
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
import pickle
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sargable.fs import direct_name, resolve
from sargable.metastore import TableDefinition
from sargable.metastore.names import partition_name
from sargable.parquet_stats import stats_from_metadata
from sargable.paths import join_path
from sargable.s3 import S3Options, current_options
from sargable.spark.session import job_description
from sargable.spark.ship import ship
from sargable.stats import FileStats
from sargable.types import DataType, convert


def write_files(
    df: Any, table: TableDefinition, location: str, write_id: str, split_by: str | None = None
) -> list[FileStats]:
    """Write `df` (the table's columns in its types, then `split_by` if given) as Parquet files below `location`,
    one file per partition value (and `split_by` value) per task, named by the write's id (`direct_name`); returns
    their statistics, nothing committed."""
    keys = list(table.partition_keys)
    sort = [name for name, _ in keys] + ([split_by] if split_by is not None else [])
    frame = df.sortWithinPartitions(*[f"`{c}`" for c in sort]) if sort else df
    task = _write_task(location, keys, split_by, list(table.columns), current_options(), write_id)

    def batches(source: Any) -> Any:
        import pyarrow as pa

        out = task(source)
        yield pa.RecordBatch.from_arrays([pa.array(out, pa.binary())], ["stats"])

    spark = df.sparkSession
    with job_description(spark, f"sargable: writing {table.qualified_name} to {location}"):
        result = frame.mapInArrow(ship(batches), "stats binary").toArrow()
    return [pickle.loads(value) for value in result.column(0).to_pylist()]


def _write_task(
    location: str,
    keys: Sequence[tuple[str, DataType]],
    split_by: str | None,
    columns: Sequence[tuple[str, DataType]],
    options: S3Options,
    write_id: str,
) -> Any:
    """A picklable function for executors: Arrow batches sorted by the partition columns (then `split_by`) -> the
    pickled FileStats of the files it wrote."""

    def task(source: Iterator[Any]) -> list[bytes]:
        import pyarrow.compute as pc

        from sargable import s3

        s3.use_options(options)
        grouping = [name for name, _ in keys] + ([split_by] if split_by is not None else [])
        task_id = uuid.uuid4().hex[:8]
        written: list[bytes] = []
        current: _OpenFile | None = None
        for batch in source:
            if batch.num_rows == 0:
                continue
            data = batch.select([n for n in batch.schema.names if n not in grouping])
            for start, end in _runs(batch, grouping, pc):
                values = tuple(_nan_free(batch.column(g)[start].as_py()) for g in grouping)
                if current is None or current.values != values:
                    if current is not None:
                        written.append(pickle.dumps(current.close(columns)))
                    name = direct_name(write_id, f"{task_id}-{len(written):05d}")
                    if split_by is not None:
                        name += f"-{int(values[-1]):05d}"
                    current = _OpenFile.start(location, keys, values, name, data.schema)
                current.add(data.slice(start, end - start))
        if current is not None:
            written.append(pickle.dumps(current.close(columns)))
        return written

    return task


ROW_GROUP_BYTES = 128 * 1024 * 1024
"""Rows are written in row groups of about this many bytes of Arrow data (Spark's Parquet block size), not one
per Arrow batch Spark hands over (10,000 rows)."""


@dataclass
class _OpenFile:
    """The Parquet file a write task is filling: its group's values, writer, output stream, path and partition, and
    the batches of its next row group."""

    values: tuple[Any, ...]
    writer: Any
    sink: Any
    path: str
    spec: dict[str, Any]
    pending: list[Any] = field(default_factory=list)
    pending_bytes: int = 0

    def add(self, batch: Any) -> None:
        """Take rows; a row group is written once about `ROW_GROUP_BYTES` have come."""
        self.pending.append(batch)
        self.pending_bytes += batch.nbytes
        if self.pending_bytes >= ROW_GROUP_BYTES:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if self.pending:
            table = pa.Table.from_batches(self.pending)
            self.writer.write_table(table, row_group_size=table.num_rows)
        self.pending, self.pending_bytes = [], 0

    @classmethod
    def start(
        cls, location: str, keys: Sequence[tuple[str, DataType]], values: tuple[Any, ...], name: str, schema: Any
    ) -> _OpenFile:
        """Open `<location>/<partition folders of values>/<name>.parquet` for writing."""
        import pyarrow.parquet as pq

        typed = [_partition_value(v, dtype) for v, (_, dtype) in zip(values, keys)]
        folders = [partition_name(keys, typed)] if keys else []
        path = join_path(location, *folders, name + ".parquet")
        filesystem, native = resolve(path)
        sink = filesystem.open_output_stream(native)
        return cls(values, pq.ParquetWriter(sink, schema), sink, path, dict(zip([n for n, _ in keys], typed)))

    def close(self, columns: Sequence[tuple[str, DataType]]) -> FileStats:
        """Finish the file; its statistics from the footer just written (no read back)."""
        self._flush()
        self.writer.close()
        size = self.sink.tell()
        self.sink.close()
        return stats_from_metadata(self.writer.writer.metadata, self.path, size, list(columns), partition=self.spec)


def _runs(batch: Any, grouping: Sequence[str], pc: Any) -> list[tuple[int, int]]:
    """(start, end) of each run of rows with equal grouping values in a batch (NULL equal to NULL and NaN to NaN,
    as a partition value: each is one folder)."""
    import pyarrow as pa

    rows = batch.num_rows
    if not grouping or rows == 1:
        return [(0, rows)]
    changed = None
    for name in grouping:
        column = batch.column(name)
        before, after = column.slice(0, rows - 1), column.slice(1)
        differs = pc.fill_null(pc.not_equal(before, after), False)
        if pa.types.is_floating(column.type):
            both_nan = pc.fill_null(pc.and_(pc.is_nan(before), pc.is_nan(after)), False)
            differs = pc.and_(differs, pc.invert(both_nan))
        nulls = pc.xor(pc.is_null(before), pc.is_null(after))
        step = pc.or_(differs, nulls)
        changed = step if changed is None else pc.or_(changed, step)
    cuts = [int(i) + 1 for i in pc.indices_nonzero(changed).to_pylist()]
    bounds = [0, *cuts, rows]
    return list(itertools.pairwise(bounds))


def _nan_free(value: Any) -> Any:
    """A grouping value that compares equal to the same value of the next row: NaN (never equal to itself) as the
    text `NaN`, which `_partition_value` turns back into NaN."""
    return "NaN" if isinstance(value, float) and math.isnan(value) else value


def _partition_value(value: Any, dtype: DataType) -> Any:
    """The metastore's value of a partition column's value as Arrow gives it: an empty string is NULL (Spark
    writes it to the default partition), an instant is naive UTC."""
    if value == "" and dtype.name in ("string", "varchar", "char"):
        return None
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return convert(value, dtype)
