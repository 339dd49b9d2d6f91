"""PyIceberg as a benchmark peer: a SQLite `SqlCatalog` table partitioned by identity(ds), identity(hr) over the data
columns of a sargable schema, and a `DataFile` for a file with the statistics sargable keeps for it.

Shared by benchmarks/readers.py and benchmarks/file_planning.py; pyiceberg is a bench extra, imported only when a
function here runs.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

EPOCH = dt.date(1970, 1, 1)
DATABASE = "bench"


def iceberg_type(dtype: str) -> Any:
    """The Iceberg type of a sargable (Hive) type name, for the types the benchmarks use."""
    from pyiceberg.types import DateType, DoubleType, IntegerType, LongType, StringType

    types = {"bigint": LongType, "double": DoubleType, "string": StringType, "int": IntegerType, "date": DateType}
    return types[dtype]()


def create_table(
    root: Path, name: str, columns: Sequence[tuple[str, str]], keys: Sequence[tuple[str, str]]
) -> tuple[Any, Any]:
    """(catalog, table): a catalog on `root/catalog.db` holding `bench.<name>` with the data columns then the
    partition keys as fields 1.., identity-partitioned by the keys, with a name mapping (as `add_files` sets) so
    field-id-less Parquet files read."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.table.name_mapping import create_mapping_from_schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import NestedField

    root.mkdir(parents=True, exist_ok=True)
    catalog = open_catalog(root)
    catalog.create_namespace(DATABASE)
    fields = [*columns, *keys]
    schema = Schema(
        *(NestedField(i, n, iceberg_type(t), required=False) for i, (n, t) in enumerate(fields, start=1))
    )
    spec = PartitionSpec(
        *(
            PartitionField(len(columns) + k, 1000 + k - 1, IdentityTransform(), n)
            for k, (n, _) in enumerate(keys, start=1)
        )
    )
    mapping = create_mapping_from_schema(schema).model_dump_json()
    table = catalog.create_table(
        f"{DATABASE}.{name}", schema=schema, partition_spec=spec, properties={"schema.name-mapping.default": mapping}
    )
    return catalog, table


def open_catalog(root: Path) -> Any:
    """The SQLite catalog kept under `root`."""
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog("bench", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}")


def partition_record(values: Iterable[Any]) -> Any:
    """The identity partition tuple of a file (dates as days since 1970-01-01, as Iceberg stores them)."""
    from pyiceberg.typedef import Record

    return Record(*((v - EPOCH).days if isinstance(v, dt.date) else v for v in values))


def data_file(
    table: Any,
    path: str,
    partition: Iterable[Any],
    record_count: int,
    size_bytes: int,
    *,
    lower: dict[int, bytes] | None = None,
    upper: dict[int, bytes] | None = None,
    value_counts: dict[int, int] | None = None,
    null_counts: dict[int, int] | None = None,
    nan_counts: dict[int, int] | None = None,
) -> Any:
    """A Parquet `DataFile` of `table`'s default spec with the given metrics (keyed by field id)."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat

    return DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=partition_record(partition),
        record_count=record_count,
        file_size_in_bytes=size_bytes,
        value_counts=value_counts or {},
        null_value_counts=null_counts or {},
        nan_value_counts=nan_counts or {},
        lower_bounds=lower or {},
        upper_bounds=upper or {},
        sort_order_id=None,
        spec_id=table.metadata.default_spec_id,
        equality_ids=None,
        key_metadata=None,
    )


def data_file_of(table: Any, stats: Any, columns: Sequence[tuple[str, str]], keys: Sequence[str]) -> Any:
    """The `DataFile` of a sargable `FileStats`: the same bounds, value, null and NaN counts for each data column
    (field ids in `columns` order from 1), its partition values in `keys` order."""
    from pyiceberg.conversions import to_bytes

    lower, upper, values, nulls, nans = {}, {}, {}, {}, {}
    for field_id, (name, dtype) in enumerate(columns, start=1):
        column = stats.columns.get(name)
        if column is None:
            continue
        values[field_id] = stats.row_count
        kind = iceberg_type(dtype)
        if column.min is not None:
            lower[field_id] = to_bytes(kind, _iceberg_value(column.min))
        if column.max is not None:
            upper[field_id] = to_bytes(kind, _iceberg_value(column.max))
        if column.null_count is not None:
            nulls[field_id] = column.null_count
        if column.nan_count is not None:
            nans[field_id] = column.nan_count
    return data_file(
        table,
        stats.path,
        [stats.partition[k] for k in keys],
        stats.row_count,
        stats.size_bytes,
        lower=lower,
        upper=upper,
        value_counts=values,
        null_counts=nulls,
        nan_counts=nans,
    )


def fast_append(table: Any, files: Iterable[Any]) -> None:
    """One snapshot (one new manifest) adding `files` to `table`."""
    with table.transaction() as tx, tx.update_snapshot().fast_append() as append:
        for file in files:
            append.append_data_file(file)


def _iceberg_value(value: Any) -> Any:
    if isinstance(value, dt.date):
        return (value - EPOCH).days
    return value
