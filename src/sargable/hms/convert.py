"""Thrift objects of the Hive metastore API <-> sargable's tables and partitions (with `extras` for the Hive fields
the metastore has no place for yet)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sargable.errors import MetastoreError, PathError, TypeCoercionError
from sargable.hms.bindings import ttypes
from sargable.hms.catalog import NewPartition, typed_values
from sargable.hms.extras import (
    PartitionExtras,
    Storage,
    TableExtras,
    decode_partition,
    decode_table,
    encode_partition,
    encode_table,
    is_reserved,
)
from sargable.metastore import DEFAULT_PARTITION_NAME, Partition, TableDefinition, partition_name
from sargable.paths import canonical_location, is_local
from sargable.types import DataType, format_value, parse_type

DDL_TIME = "transient_lastDdlTime"
VIRTUAL_VIEW = "VIRTUAL_VIEW"

PARQUET = Storage(
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


def _check_parameters(kind: str, parameters: Mapping[str, str] | None) -> dict[str, str]:
    params = {str(k): str(v) for k, v in (parameters or {}).items()}
    reserved = sorted(k for k in params if is_reserved(k))
    if reserved:
        raise MetastoreError(f"{kind} parameter {reserved[0]!r} uses a name reserved by sargable serve")
    return params


def _storage(sd: Any) -> Storage:
    serde = sd.serdeInfo or ttypes.SerDeInfo()
    return Storage(
        input_format=sd.inputFormat,
        output_format=sd.outputFormat,
        serde_name=serde.name,
        serde_lib=serde.serializationLib,
        serde_params=dict(serde.parameters or {}),
        compressed=bool(sd.compressed),
        num_buckets=sd.numBuckets if sd.numBuckets is not None else -1,
        bucket_cols=list(sd.bucketCols or []),
        sort_cols=[(o.col, o.order) for o in sd.sortCols or []],
        params=dict(sd.parameters or {}),
        stored_as_sub_directories=bool(sd.storedAsSubDirectories),
    )


def table_definition(tbl: Any, *, now: int | None = None) -> NewTable:
    """A Thrift `Table` as sargable's create arguments: scalar columns typed, everything else in the extras."""
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
    extras = TableExtras(
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
        columns=hive_columns,
        partition_comments={f.name: f.comment for f in tbl.partitionKeys or [] if f.comment},
        has_location=tbl.tableType != VIRTUAL_VIEW,
    )
    return NewTable(
        database=tbl.dbName,
        name=tbl.tableName,
        columns=columns,
        partition_keys=partition_keys,
        location=sd.location or None,
        properties=encode_table(extras, params),
    )


class TableView:
    """One table as the Thrift API shows it; builds its partitions' Thrift objects sharing the table's parts."""

    def __init__(self, table: TableDefinition) -> None:
        self.table = table
        extras, self.parameters = decode_table(table.properties)
        self.extras = extras or TableExtras(storage=PARQUET, table_type="EXTERNAL_TABLE")
        if extras is None or not self.extras.columns:
            self.cols = [ttypes.FieldSchema(n, str(t), None) for n, t in table.columns]
        else:
            self.cols = [ttypes.FieldSchema(n, t, c) for n, t, c in self.extras.columns]
        comments = self.extras.partition_comments
        self.partition_cols = [ttypes.FieldSchema(n, str(t), comments.get(n)) for n, t in table.partition_keys]
        self.storage_parts = self._sd_parts(self.extras.storage)

    def _sd_parts(self, storage: Storage) -> dict[str, Any]:
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
        extras, params = decode_partition(part.parameters)
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
        """A Thrift `Partition` to add: values, location (None when it is the default one), parameters + extras."""
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
        if params or storage is not None:
            # A partition without parameters stays an empty row: its create time is not kept (Hive's is).
            params = encode_partition(PartitionExtras(create_time=part.createTime or now, storage=storage), params)
        location = part.sd.location if part.sd is not None and part.sd.location else None
        canonical = None if location is None else _canonical(location)
        if canonical is not None:  # (one the metastore refuses is passed on, for its error)
            location = None if canonical == self.default_location(values) else canonical
        return NewPartition(values, location, params)

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


def database(name: str, location: str) -> Any:
    return ttypes.Database(
        name=name, description=None, locationUri=hive_location(location), parameters={}, ownerType=None
    )
