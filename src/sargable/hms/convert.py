"""Thrift objects of the Hive metastore API <-> sargable's databases, tables and partitions, whose Hive fields are
the metastore's own (`sargable.metastore.hive`; an earlier server's reserved keys are read through `extras`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sargable.errors import MetastoreError, PathError
from sargable.hms.bindings import ttypes
from sargable.hms.catalog import NewPartition, typed_values
from sargable.hms.extras import client_parameters, damaged_fields, is_reserved, partition_fields, table_fields
from sargable.hms.validate import (
    I32,
    KEY_LIMIT,
    PRINCIPAL_TYPES,
    SORT_ORDERS,
    VIEW_TEXT_LIMIT,
    Fields,
    InvalidObjectError,
)
from sargable.metastore import DEFAULT_PARTITION_NAME, Database, Partition, TableDefinition, partition_name
from sargable.metastore.hive import DamagedFields, HiveDatabase, HivePartition, HiveStorage, HiveTable
from sargable.paths import hadoop_location, is_local
from sargable.types import DataType, format_value

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


def _parameters(check: Fields, field: str, parameters: Any) -> dict[str, str]:
    """A client's parameter map, checked; the names sargable reserves are refused."""
    params = check.parameters(parameters, field)
    reserved = sorted(k for k in params if is_reserved(k))
    if reserved:
        raise MetastoreError(f"{check.what}: {field} {reserved[0]!r} uses a name reserved by sargable serve")
    return params


def _location(check: Fields, value: Any, field: str) -> str | None:
    """A location a client sent (a Hadoop `Path` string: `%` in it is literal), in the metastore's form (None or ''
    is the default); one that does not parse as an absolute path or URI is refused."""
    text = check.text(value, field)
    if not text:
        return None
    try:
        return hadoop_location(text)
    except PathError as exc:
        raise MetastoreError(f"{check.what}: {field}: {exc}") from None


def _fields(check: Fields, value: Any, field: str) -> list[tuple[str, str, str | None, DataType | None]]:
    """A list of `FieldSchema`s: (name, type as sent, comment, type parsed or None when sargable can't type it)."""
    out = []
    for i, item in enumerate(check.items(value, field)):
        at = f"{field}[{i}]"
        column = check.struct(item, at, ttypes.FieldSchema)
        name = check.column_name(column.name, f"{at}.name")
        dtype = check.column_type(column.type, f"{at}.type")
        out.append((name, column.type, check.text(column.comment, f"{at}.comment"), dtype))
    return out


def _storage(check: Fields, sd: Any, columns: Sequence[str]) -> HiveStorage:
    """A storage descriptor's Hive fields, checked; its bucket, sort and skewed columns must be among `columns`."""
    known = {c.lower() for c in columns}

    def column(value: Any, field: str) -> str:
        name = check.text(value, field, required=True) or ""
        if name.lower() not in known:
            raise check.refuse(field, f"names {name!r}, which is not a column of it")
        return name

    serde = check.struct(sd.serdeInfo, "sd.serdeInfo", ttypes.SerDeInfo) or ttypes.SerDeInfo()
    sort_cols = []
    for i, item in enumerate(check.items(sd.sortCols, "sd.sortCols")):
        order = check.struct(item, f"sd.sortCols[{i}]", ttypes.Order)
        name = column(order.col, f"sd.sortCols[{i}].col")
        sort_cols.append((name, check.choice(order.order, f"sd.sortCols[{i}].order", SORT_ORDERS, required=True)))
    skewed = check.struct(sd.skewedInfo, "sd.skewedInfo", ttypes.SkewedInfo)
    if skewed is not None:  # not stored (Hive's clients send it empty), but checked as Hive checks it
        for i, name in enumerate(check.items(skewed.skewedColNames, "sd.skewedInfo.skewedColNames")):
            column(name, f"sd.skewedInfo.skewedColNames[{i}]")
        for i, values in enumerate(check.items(skewed.skewedColValues, "sd.skewedInfo.skewedColValues")):
            check.texts(values, f"sd.skewedInfo.skewedColValues[{i}]")
        maps = skewed.skewedColValueLocationMaps
        if maps is not None and not isinstance(maps, dict):
            raise check.refuse("sd.skewedInfo.skewedColValueLocationMaps", "is not a map")
        for key, value in (maps or {}).items():
            check.texts(key, "sd.skewedInfo.skewedColValueLocationMaps key")
            check.text(value, f"sd.skewedInfo.skewedColValueLocationMaps[{key!r}]", required=True)
    bucket_cols = [column(c, f"sd.bucketCols[{i}]") for i, c in enumerate(check.items(sd.bucketCols, "sd.bucketCols"))]
    num_buckets = check.integer(sd.numBuckets, "sd.numBuckets", bounds=(-1, I32[1]))
    return HiveStorage(
        input_format=check.text(sd.inputFormat, "sd.inputFormat"),
        output_format=check.text(sd.outputFormat, "sd.outputFormat"),
        serde_name=check.text(serde.name, "sd.serdeInfo.name"),
        serde_lib=check.text(serde.serializationLib, "sd.serdeInfo.serializationLib"),
        serde_params=check.parameters(serde.parameters, "sd.serdeInfo.parameters"),
        compressed=bool(check.boolean(sd.compressed, "sd.compressed")),
        num_buckets=-1 if num_buckets is None else num_buckets,
        bucket_cols=tuple(bucket_cols),
        sort_cols=tuple(sort_cols),
        params=check.parameters(sd.parameters, "sd.parameters"),
        stored_as_sub_directories=bool(check.boolean(sd.storedAsSubDirectories, "sd.storedAsSubDirectories")),
    )


def table_definition(tbl: Any, *, now: int | None = None) -> NewTable:
    """A Thrift `Table` as sargable's create arguments: the columns the metastore can type, and the Hive fields;
    every field checked first (`sargable.hms.validate`: InvalidObjectError naming the field)."""
    if not isinstance(tbl, ttypes.Table):
        raise InvalidObjectError(f"a table must be a Table, got {type(tbl).__name__}")
    check = Fields("table")
    database = check.name(tbl.dbName, "dbName", "database")
    name = check.name(tbl.tableName, "tableName", "table")
    check = Fields(f"table {database}.{name}")
    sd = check.struct(tbl.sd, "sd", ttypes.StorageDescriptor) or ttypes.StorageDescriptor()
    data = _fields(check, sd.cols, "sd.cols")
    keys = _fields(check, tbl.partitionKeys, "partitionKeys")
    seen: set[str] = set()
    for field, columns in (("sd.cols", data), ("partitionKeys", keys)):
        for i, (column, *_) in enumerate(columns):
            if column.lower() in seen:
                raise check.refuse(f"{field}[{i}].name", f"is {column!r}, a column named twice")
            seen.add(column.lower())
    partition_keys = []
    for i, (column, text, _, dtype) in enumerate(keys):
        if dtype is None or not dtype.is_orderable:
            raise check.refuse(f"partitionKeys[{i}].type", f"is {text!r}, which can't key partitions")
        partition_keys.append((column, dtype))
    params = _parameters(check, "parameters", tbl.parameters)
    params.setdefault(DDL_TIME, str(now if now is not None else int(time.time())))
    table_type = check.text(tbl.tableType, "tableType", limit=KEY_LIMIT) or "MANAGED_TABLE"
    hive = HiveTable(
        table_type=table_type,
        owner=check.text(tbl.owner, "owner"),
        owner_type=check.choice(tbl.ownerType, "ownerType", PRINCIPAL_TYPES),
        create_time=check.integer(tbl.createTime, "createTime") or int(time.time()),
        last_access_time=check.integer(tbl.lastAccessTime, "lastAccessTime") or 0,
        retention=check.integer(tbl.retention, "retention") or 0,
        view_original_text=check.text(tbl.viewOriginalText, "viewOriginalText", limit=VIEW_TEXT_LIMIT),
        view_expanded_text=check.text(tbl.viewExpandedText, "viewExpandedText", limit=VIEW_TEXT_LIMIT),
        temporary=bool(check.boolean(tbl.temporary, "temporary")),
        storage=_storage(check, sd, [c for c, *_ in data]),
        columns=tuple((column, text, comment) for column, text, comment, _ in data),
        partition_comments={column: comment for column, _, comment, _ in keys if comment},
        has_location=table_type != VIRTUAL_VIEW,
    )
    return NewTable(
        database=database,
        name=name,
        columns=[(column, dtype) for column, _, _, dtype in data if dtype is not None],
        partition_keys=partition_keys,
        location=_location(check, sd.location, "sd.location"),
        properties=params,
        hive=hive,
    )


class TableView:
    """One table as the Thrift API shows it; builds its partitions' Thrift objects sharing the table's parts."""

    def __init__(self, table: TableDefinition) -> None:
        self.table = table
        self.parameters = client_parameters(table.properties)
        hive = table_fields(table)
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
        extras, params = partition_fields(part)
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
        """A Thrift `Partition` to add or alter: values, location (None when it is the default one), parameters,
        Hive fields; every field checked first (`sargable.hms.validate`: InvalidObjectError naming the field)."""
        table = self.table
        if not isinstance(part, ttypes.Partition):
            raise InvalidObjectError(f"a partition of {table.qualified_name} must be a Partition, got {part!r}")
        check = Fields(f"a partition of {table.qualified_name}")
        values = check.texts(part.values, "values")
        if len(values) != len(table.partition_keys):
            raise MetastoreError(
                f"partition values {values} don't match the partition keys "
                f"{table.partition_key_names} of {table.qualified_name}"
            )
        check = Fields(f"partition {values} of {table.qualified_name}")
        check.text(part.dbName, "dbName")
        check.text(part.tableName, "tableName")
        sd = check.struct(part.sd, "sd", ttypes.StorageDescriptor)
        storage = location = None
        if sd is not None:
            own = [column for column, *_ in _fields(check, sd.cols, "sd.cols")]
            storage = _storage(check, sd, own or [c.name for c in self.cols])
            location = _location(check, sd.location, "sd.location")
        params = _parameters(check, "parameters", part.parameters)
        create_time = check.integer(part.createTime, "createTime")
        check.integer(part.lastAccessTime, "lastAccessTime")
        if storage == self.extras.storage:
            storage = None
        hive = None
        if params or storage is not None:
            # A partition without parameters stays an empty row: its create time is not kept (Hive's is).
            hive = HivePartition(create_time=create_time or now, storage=storage)
        if location is not None and location == self.default_location(values):
            location = None
        return NewPartition(tuple(values), location, params, hive)

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


def database_fields(database: Any) -> tuple[str | None, HiveDatabase]:
    """A Thrift `Database`'s location in the metastore's form (None: the default) and its Hive fields (its name is
    the metastore's own), every field checked first (`sargable.hms.validate`: InvalidObjectError naming the
    field)."""
    if not isinstance(database, ttypes.Database):
        raise InvalidObjectError(f"a database must be a Database, got {type(database).__name__}")
    check = Fields("database")
    check = Fields(f"database {check.name(database.name, 'name', 'database')}")
    location = _location(check, database.locationUri, "locationUri")
    return location, HiveDatabase(
        description=check.text(database.description, "description"),
        owner=check.text(database.ownerName, "ownerName"),
        owner_type=check.choice(database.ownerType, "ownerType", PRINCIPAL_TYPES),
        parameters=_parameters(check, "parameters", database.parameters),
    )


def database(record: Database) -> Any:
    """A database record as a Thrift `Database` (DamagedMetastoreError naming it when its Hive fields don't
    decode)."""
    hive = record.hive or HiveDatabase()
    if isinstance(hive, DamagedFields):
        raise damaged_fields(f"database {record.name}", hive)
    return ttypes.Database(
        name=record.name,
        description=hive.description,
        locationUri=hive_location(record.location),
        parameters=dict(hive.parameters),
        ownerName=hive.owner,
        ownerType=hive.owner_type,
    )
