"""The Python data source `sargable`: Spark SQL and DataFrame reads of sargable tables with filter pushdown.

    sgs.register(spark)                      # read() and write() also do this
    spark.read.format("sargable").load("sales.events").where("ds >= '2024-01-01' and amount > 100")
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW events USING sargable OPTIONS (table 'sales.events')")
    spark.sql("SELECT count(*) FROM events WHERE ds = '2024-01-02'")

Options: `table` (or the `load()` path) names the table; `metastore` is the metastore URL (default: the one
given to `register`, else `$SARGABLE_METASTORE` or `./warehouse`), which planning workers open, so it must be
reachable from them; `splits` is the minimum number of Spark partitions to spread the files over (default 8).

How the pushdown works: Spark hands `pushFilters` the conjuncts it can translate. A conjunct over partition
keys only is applied exactly by partition pruning in the metastore and is not given back to Spark; every other
conjunct is given back (Spark applies it to the rows) but is still used to skip files by their statistics.
`read()` runs on the executors: it reads the selected Parquet files with pyarrow, adds the partition values as
constant columns, and yields Arrow record batches typed exactly as the declared schema.

Limits (all Spark's; `sgs.read` has none of them, so prefer it from Python):

- Spark pushes only conjuncts of simple `column op literal` comparisons: it never pushes an OR (`ds = 'x' OR
  hr = 3`), a function of a column, or column-to-column comparisons. Those filters still run, in Spark, but
  prune nothing. `sgs.read(spark, table, where="ds = '2024-01-01' or hr = 3")` plans ORs, IN lists and LIKE
  patterns through the metastore.
- Python data sources get no column pruning: every column is read, then Spark drops the unused ones.
- `CREATE TABLE t USING sargable` passes no options, so the source can't know which table it is: use a
  temporary view with `OPTIONS (table 'db.table')`, or `spark.read.format("sargable").load("db.table")`.
- `spark.sql.python.filterPushdown.enabled` must be true (`register` sets it); without it Spark refuses a
  source that implements `pushFilters`.
- Filters on timestamp columns are left to Spark (no pruning), because Spark hands their literals over in the
  session time zone; timestamp partition values are read as UTC.
- Planning happens in a Python worker per query, which imports sargable and opens the metastore (kept open
  for the worker's next query). Workers need pyspark and pyarrow, not sargable: the source and its reader are
  shipped with sargable's source (`sargable.spark.ship`), imported from it where sargable is not installed.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, Filter, InputPartition
from pyspark.sql.types import StructType

from sargable import s3
from sargable.analyze import decompose
from sargable.errors import SargableError
from sargable.expr import BoundFilter, bind_filter, columns_of, conjoin
from sargable.fs import resolve
from sargable.metastore import Metastore, TableDefinition, default_url, shared
from sargable.spark.catalog import metastore_url, split_table_name
from sargable.spark.schema import table_struct
from sargable.spark.ship import shipped_data_source, shipped_instance
from sargable.spark.translate import Untranslatable, from_filter

FORMAT = "sargable"
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
_TARGET_SPLIT_BYTES = 128 * 1024 * 1024
_BATCH_ROWS = 65536


@dataclass
class FileGroup(InputPartition):
    """One Spark partition of the scan: files with their partition values (in the order of `keys`)."""

    files: list[tuple[str, tuple[Any, ...]]]
    keys: tuple[str, ...] = ()


def group_files(
    files: Sequence[tuple[str, int, tuple[Any, ...]]], min_splits: int, keys: Sequence[str] = ()
) -> list[FileGroup]:
    """Contiguous groups of (path, size, values) of about equal bytes: enough for parallelism, ~128 MB each."""
    if not files:
        return []
    total = sum(size for _, size, _ in files)
    count = min(len(files), max(min_splits, math.ceil(total / _TARGET_SPLIT_BYTES)))
    per_group = max(1, total) / count
    groups: list[FileGroup] = []
    current: list[tuple[str, tuple[Any, ...]]] = []
    filled = 0
    for index, (path, size, values) in enumerate(files):
        current.append((path, values))
        filled += size
        remaining_files = len(files) - index - 1
        remaining_groups = count - len(groups) - 1
        if remaining_groups > 0 and (filled >= per_group * (len(groups) + 1) or remaining_files == remaining_groups):
            groups.append(FileGroup(current, tuple(keys)))
            current = []
    if current:
        groups.append(FileGroup(current, tuple(keys)))
    return groups


def _definition(url: str, name: str) -> TableDefinition:
    db, table = split_table_name(name)
    return shared(url).get_table(db, table)


class SargableDataSource(DataSource):
    """`spark.read.format("sargable")`: a sargable table, planned through the metastore."""

    default_metastore: str | None = None
    """Set on the class that `register` creates, so the source finds the metastore without an option."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def _table_name(self) -> str:
        name = self.options.get("table") or self.options.get("path")
        if not name:
            raise SargableError(
                "the sargable data source needs a table: spark.read.format('sargable').load('db.table'), or "
                "OPTIONS (table 'db.table') in SQL (CREATE TABLE ... USING sargable passes no options)"
            )
        return str(name)

    def _url(self) -> str:
        return str(self.options.get("metastore") or self.default_metastore or default_url())

    def schema(self) -> StructType:
        return table_struct(_definition(self._url(), self._table_name()))

    def reader(self, schema: StructType) -> DataSourceReader:
        splits = self.options.get("splits", "8")
        try:
            min_splits = int(splits)
        except ValueError:
            raise SargableError(f"option splits must be a positive integer, got {splits!r}") from None
        if min_splits < 1:
            raise SargableError(f"option splits must be a positive integer, got {splits!r}")
        return SargableReader(self._url(), self._table_name(), schema, min_splits)


class SargableReader(DataSourceReader):
    """Plans the scan (pushFilters, partitions) in the planning worker; reads Parquet on the executors."""

    def __init__(self, url: str, table_name: str, schema: StructType, min_splits: int) -> None:
        self.url = url
        self.table_name = table_name
        self.schema = schema
        self.min_splits = min_splits
        self.exact: list[BoundFilter] = []
        self.skipping: list[BoundFilter] = []
        self.s3_options = s3.current_options()
        """The S3 settings made in code where the reader was made (the driver's), for the executors."""

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled for the executors with sargable's source, which they may not have installed."""
        return shipped_instance(self)

    def pushFilters(self, filters: list[Filter]) -> list[Filter]:
        """Keep the partition-key conjuncts (applied exactly by pruning); give the rest back to Spark."""
        table = _definition(self.url, self.table_name)
        timestamps = {name.lower() for name, dtype in table.schema if dtype.name == "timestamp"}
        keys = {name.lower() for name in table.partition_key_names}
        schema = list(table.schema)
        data_columns = [n for n, _ in table.columns]
        unsupported: list[Filter] = []
        for spark_filter in filters:
            try:
                expr = from_filter(spark_filter)
                if any(c.lower() in timestamps for c in columns_of(expr)):
                    raise Untranslatable("timestamp column")
                bound = bind_filter(expr, schema)
            except SargableError:
                unsupported.append(spark_filter)
                continue
            parts = decompose(bound, partition_keys=table.partition_key_names, stats_columns=data_columns)
            if bound.columns <= keys and parts.residual is None:
                self.exact.append(bound)
            else:
                self.skipping.append(bound)
                unsupported.append(spark_filter)
        return unsupported

    def partitions(self) -> list[InputPartition]:
        metastore = shared(self.url)
        with metastore.snapshot():
            scan = metastore.table(*split_table_name(self.table_name)).scan(conjoin([*self.exact, *self.skipping]))
        names = scan.table.partition_key_names
        files = [(f.path, f.size_bytes, tuple((f.partition or {}).get(k) for k in names)) for f in scan.files]
        return list(group_files(files, self.min_splits, names))

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Arrow record batches of the group's files, typed as the declared schema, partition values added."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        from pyspark.sql.pandas.types import to_arrow_schema

        if not isinstance(partition, FileGroup):
            return  # no file survived planning: Spark reads one placeholder partition
        target = to_arrow_schema(self.schema, timezone="UTC")
        keys = {name: index for index, name in enumerate(partition.keys)}
        s3.use_options(self.s3_options)
        for path, values in partition.files:
            filesystem, native = resolve(path)
            parquet = pq.ParquetFile(native, filesystem=filesystem, coerce_int96_timestamp_unit="us")
            present = set(parquet.schema_arrow.names)
            data_columns = [f.name for f in target if f.name not in keys and f.name in present]
            constants: dict[int, list[Any]] = {}
            for batch in parquet.iter_batches(batch_size=_BATCH_ROWS, columns=data_columns):
                rows = batch.num_rows
                if rows not in constants:
                    constants[rows] = [
                        pa.array([values[keys[f.name]]] * rows, type=f.type) if f.name in keys else None for f in target
                    ]
                arrays = []
                for index, field in enumerate(target):
                    if field.name in keys:
                        arrays.append(constants[rows][index])
                    elif field.name in present:
                        column = batch.column(field.name)
                        arrays.append(column if column.type == field.type else column.cast(field.type))
                    else:
                        arrays.append(pa.nulls(rows, type=field.type))
                yield pa.RecordBatch.from_arrays(arrays, schema=target)


_REGISTERED: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def register(spark: Any, metastore: Metastore | str | None = None) -> None:
    """Register the `sargable` data source with a session, reading from `metastore` unless told otherwise.

    Also sets `spark.sql.python.filterPushdown.enabled`, which Spark needs before it calls `pushFilters`.
    """
    url = metastore_url(metastore)
    spark.conf.set(PUSHDOWN_CONF, "true")
    bound_class = type(
        "SargableDataSourceForMetastore",
        (SargableDataSource,),
        {"default_metastore": url, "__module__": __name__, "__doc__": SargableDataSource.__doc__},
    )
    spark.dataSource.register(shipped_data_source(FORMAT, bound_class))
    _REGISTERED[spark] = url


def ensure_registered(spark: Any, metastore: Metastore | str | None) -> None:
    """Register the data source on first use of a session by `read` or `write` (an explicit `register` wins)."""
    if spark not in _REGISTERED:
        register(spark, metastore)
