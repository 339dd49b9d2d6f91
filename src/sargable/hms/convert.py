"""Thrift objects of the Hive metastore API <-> sargable's databases, tables and partitions, whose Hive fields are
the metastore's own (`sargable.metastore.hive`; an earlier server's reserved keys are read through `extras`)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sargable.errors import MetastoreError, PathError, TypeCoercionError
from sargable.hms.bindings import ttypes
from sargable.hms.catalog import NewPartition, typed_values
from sargable.hms.extras import client_parameters, is_reserved, legacy_table, partition_fields
from sargable.metastore import DEFAULT_PARTITION_NAME, Database, Partition, TableDefinition, partition_name
from sargable.metastore.hive import HiveDatabase, HivePartition, HiveStorage, HiveTable
from sargable.paths import canonical_location, is_local
from sargable.types import DataType, format_value, parse_type

DDL_TIME = "transient_lastDdlTime"
VIRTUAL_VIEW = "VIRTUAL_VIEW"

PARQUET = HiveStorage(
    input_format="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
    output_format="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
    serde_lib="org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
    serde_params={"serialization.format": "1"},
)
"""The storage of a table made outside the server (`sgs.write` writes Parquet)."""


@dataclass(frozen=True)
class NewTable:
    """What `create_table` / `replace_table` take, from a Thrift `Table`."""

    database: str
    name: str
    columns: list[tuple[str, DataType]]
    partition_keys: list[tuple[str, DataType]]
    location: str | None
    properties: dict[str, str]
    hive: HiveTable


def _check_parameters(kind: str, parameters: Mapping[str, str] | None) -> dict[str, str]:
    params = {str(k): str(v) for k, v in (parameters or {}).items()}
    reserved = sorted(k for k in params if is_reserved(k))
    if reserved:
        raise MetastoreError(f"{kind} parameter {reserved[0]!r} uses a name reserved by sargable serve")
    return params


def _storage(sd: Any) -> HiveStorage:
    serde = sd.serdeInfo or ttypes.SerDeInfo()
    return HiveStorage(
        input_format=sd.inputFormat,
        output_format=sd.outputFormat,
        serde_name=serde.name,
        serde_lib=serde.serializationLib,
        serde_params=dict(serde.parameters or {}),
        compressed=bool(sd.compressed),
        num_buckets=sd.numBuckets if sd.numBuckets is not None else -1,
        bucket_cols=tuple(sd.bucketCols or ()),
        sort_cols=tuple((o.col, o.order) for o in sd.sortCols or ()),
        params=dict(sd.parameters or {}),
        stored_as_sub_directories=bool(sd.storedAsSubDirectories),
    )


def table_definition(tbl: Any, *, now: int | None = None) -> NewTable:
    """A Thrift `Table` as sargable's create arguments: the columns the metastore can type, and the Hive fields."""
    if not tbl.dbName or not tbl.tableName:
        raise MetastoreError("a table needs dbName and tableName")
    sd = tbl.sd or ttypes.StorageDescriptor()
    columns: list[tuple[str, DataType]] = []
    hive_columns = []
    for field in sd.cols or []:
        hive_columns.append((field.name, field.type, field.comment))
        try:
            columns.append((field.name, parse_type(field.type)))
        except TypeCoercionError:
            continue
    partition_keys = []
    for field in tbl.partitionKeys or []:
        try:
            dtype = parse_type(field.type)
        except TypeCoercionError as exc:
            raise MetastoreError(f"partition column {field.name!r}: {exc}") from None
        if not dtype.is_orderable:
            raise MetastoreError(f"partition column {field.name!r} is of type {dtype}, which can't key partitions")
        partition_keys.append((field.name, dtype))
    params = _check_parameters("table", tbl.parameters)
    params.setdefault(DDL_TIME, str(now if now is not None else int(time.time())))
    hive = HiveTable(
        table_type=tbl.tableType or "MANAGED_TABLE",
        owner=tbl.owner,
        owner_type=tbl.ownerType,
        create_time=tbl.createTime or int(time.time()),
        last_access_time=tbl.lastAccessTime or 0,
        retention=tbl.retention or 0,
        view_original_text=tbl.viewOriginalText,
        view_expanded_text=tbl.viewExpandedText,
        temporary=bool(tbl.temporary),
        storage=_storage(sd),
        columns=tuple(hive_columns),
        partition_comments={f.name: f.comment for f in tbl.partitionKeys or [] if f.comment},
        has_location=tbl.tableType != VIRTUAL_VIEW,
    )
    return NewTable(
        database=tbl.dbName,
        name=tbl.tableName,
        columns=columns,
        partition_keys=partition_keys,
        location=sd.location or None,
        properties=params,
        hive=hive,
    )


class TableView:
    """One table as the Thrift API shows it; builds its partitions' Thrift objects sharing the table's parts."""

    def __init__(self, table: TableDefinition) -> None:
        self.table = table
        self.parameters = client_parameters(table.properties)
        hive = table.hive or legacy_table(table.properties)
        self.extras = hive or HiveTable(storage=PARQUET, table_type="EXTERNAL_TABLE")
        """The table's Hive fields; a table made outside the server is shown as an external Parquet table."""
        if hive is None or not self.extras.columns:
            self.cols = [ttypes.FieldSchema(n, str(t), None) for n, t in table.columns]
        else:
            self.cols = [ttypes.FieldSchema(n, t, c) for n, t, c in self.extras.columns]
        comments = self.extras.partition_comments
        self.partition_cols = [ttypes.FieldSchema(n, str(t), comments.get(n)) for n, t in table.partition_keys]
        self.storage_parts = self._sd_parts(self.extras.storage)

    def _sd_parts(self, storage: HiveStorage) -> dict[str, Any]:
        serde = ttypes.SerDeInfo(storage.serde_name, storage.serde_lib, dict(storage.serde_params))
        return {
            "cols": self.cols,
            "inputFormat": storage.input_format,
            "outputFormat": storage.output_format,
            "compressed": storage.compressed,
            "numBuckets": storage.num_buckets,
            "serdeInfo": serde,
            "bucketCols": list(storage.bucket_cols),
            "sortCols": [ttypes.Order(c, o) for c, o in storage.sort_cols],
            "parameters": dict(storage.params),
            "skewedInfo": ttypes.SkewedInfo([], [], {}),
            "storedAsSubDirectories": storage.stored_as_sub_directories,
        }

    def thrift(self) -> Any:
        t, x = self.table, self.extras
        location = hive_location(t.location) if x.has_location else None
        return ttypes.Table(
            tableName=t.name,
            dbName=t.database,
            owner=x.owner,
            createTime=x.create_time,
            lastAccessTime=x.last_access_time,
            retention=x.retention,
            sd=ttypes.StorageDescriptor(location=location, **self.storage_parts),
            partitionKeys=self.partition_cols,
            parameters=dict(self.parameters),
            viewOriginalText=x.view_original_text,
            viewExpandedText=x.view_expanded_text,
            tableType=x.table_type,
            temporary=x.temporary,
            ownerType=x.owner_type,
        )

    def partition(self, part: Partition) -> Any:
        """A sargable partition as a Thrift `Partition` (values as Hive strings, NULL as the default name)."""
        extras, params = partition_fields(part.hive, part.parameters)
        parts = self.storage_parts if extras.storage is None else self._sd_parts(extras.storage)
        return ttypes.Partition(
            values=hive_values(self.table, part.values),
            dbName=self.table.database,
            tableName=self.table.name,
            createTime=extras.create_time,
            lastAccessTime=extras.last_access_time,
            sd=ttypes.StorageDescriptor(location=hive_location(part.location), **parts),
            parameters=params,
        )

    def new_partition(self, part: Any, *, now: int) -> NewPartition:
        """A Thrift `Partition` to add: values, location (None when it is the default one), parameters, Hive
        fields."""
        if part.values is None or len(part.values) != len(self.table.partition_keys):
            raise MetastoreError(
                f"partition values {part.values} don't match the partition keys "
                f"{self.table.partition_key_names} of {self.table.qualified_name}"
            )
        values = tuple(str(v) for v in part.values)
        storage = _storage(part.sd) if part.sd is not None else None
        params = _check_parameters("partition", part.parameters)
        if storage == self.extras.storage:
            storage = None
        hive = None
        if params or storage is not None:
            # A partition without parameters stays an empty row: its create time is not kept (Hive's is).
            hive = HivePartition(create_time=part.createTime or now, storage=storage)
        location = part.sd.location if part.sd is not None and part.sd.location else None
        canonical = None if location is None else _canonical(location)
        if canonical is not None:  # (one the metastore refuses is passed on, for its error)
            location = None if canonical == self.default_location(values) else canonical
        return NewPartition(values, location, params, hive)

    def default_location(self, values: Sequence[str]) -> str:
        """Where the metastore puts a partition with these values when it is given no location."""
        name = partition_name(self.table.partition_keys, typed_values(self.table, values))
        return f"{self.table.location.rstrip('/')}/{name}"


def hive_values(table: TableDefinition, values: Sequence[Any]) -> list[str]:
    """Typed partition values as the Hive strings clients expect."""
    return [
        DEFAULT_PARTITION_NAME if value is None else format_value(value, dtype)
        for value, (_, dtype) in zip(values, table.partition_keys)
    ]


def hive_location(location: str) -> str:
    """A stored location as Hive's clients expect it: a local path as a `file:` URI (as Spark sends it and Hive's
    metastore returns it; a bare path would be taken on a cluster's default file system), any other URI as it is."""
    return "file:" + location if is_local(location) else location


def _canonical(location: str) -> str | None:
    """The metastore's form of a location a client sent, or None when it has none (the metastore refuses it)."""
    try:
        return canonical_location(location, relative=False)
    except PathError:
        return None


def database_fields(database: Any) -> HiveDatabase:
    """A Thrift `Database`'s Hive fields (its name and location are the metastore's own)."""
    return HiveDatabase(
        description=database.description,
        owner=database.ownerName,
        owner_type=database.ownerType,
        parameters=_check_parameters("database", database.parameters),
    )


def database(record: Database) -> Any:
    """A database record as a Thrift `Database`."""
    hive = record.hive or HiveDatabase()
    return ttypes.Database(
        name=record.name,
        description=hive.description,
        locationUri=hive_location(record.location),
        parameters=dict(hive.parameters),
        ownerName=hive.owner,
        ownerType=hive.owner_type,
    )
