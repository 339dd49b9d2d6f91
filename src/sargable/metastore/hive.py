"""The Hive metastore's own fields of databases, tables and partitions (what `sargable serve` round-trips), as typed
records, and their one codec to and from the stored JSON form.

`HiveDatabase` rides in a database's record, `HiveTable` in a table's definition (`TableDefinition.hive`),
`HivePartition` in a partition's row. The field decoders refuse anything but what the encoders write (ValueError
saying what). A database's, table's or partition's Hive fields that don't decode (as a server before issue 26's
checks could store them: a column without a type, a sort column without a name) are kept as `DamagedFields`, exactly
as stored: only the Hive metastore API needs them, so the object and everything else in the metastore keep working
(reads, commits, drops, listings of other tables), and the API refuses just that object, naming it, until it is
dropped or its fields are written anew.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class HiveStorage:
    """A storage descriptor's fields other than its location and columns: formats, SerDe, buckets, sort columns."""

    input_format: str | None = None
    output_format: str | None = None
    serde_name: str | None = None
    serde_lib: str | None = None
    serde_params: Mapping[str, str] = field(default_factory=dict)
    compressed: bool = False
    num_buckets: int = -1
    bucket_cols: tuple[str, ...] = ()
    sort_cols: tuple[tuple[str, int], ...] = ()
    params: Mapping[str, str] = field(default_factory=dict)
    stored_as_sub_directories: bool = False


@dataclass(frozen=True)
class HiveDatabase:
    """A database's Hive fields: description, owner and its type, parameters."""

    description: str | None = None
    owner: str | None = None
    owner_type: int | None = None
    parameters: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HiveTable:
    """A table's Hive fields (its parameters are the definition's `properties`)."""

    table_type: str = "MANAGED_TABLE"
    owner: str | None = None
    owner_type: int | None = None
    create_time: int = 0
    last_access_time: int = 0
    retention: int = 0
    view_original_text: str | None = None
    view_expanded_text: str | None = None
    temporary: bool = False
    storage: HiveStorage = field(default_factory=HiveStorage)
    columns: tuple[tuple[str, str, str | None], ...] = ()
    """Every data column as the client wrote it: (name, type text, comment). The definition's `columns` hold the
    ones the metastore can type; this keeps comments, spelling and types it can't parse (`uniontype<...>`)."""
    partition_comments: Mapping[str, str] = field(default_factory=dict)
    has_location: bool = True
    """False for a view: its storage descriptor has no location."""


@dataclass(frozen=True)
class HivePartition:
    """A partition's Hive fields; `storage` only when it differs from its table's."""

    create_time: int = 0
    last_access_time: int = 0
    storage: HiveStorage | None = None


@dataclass(frozen=True)
class DamagedFields:
    """Stored Hive fields that don't decode, kept as they were stored (re-written unchanged with their record)."""

    raw: Any
    error: str
    """Why they don't decode."""


# ------------------------------------------------------------------------------------------------------ encode


def _storage_raw(storage: HiveStorage) -> dict[str, Any]:
    return {
        "input_format": storage.input_format,
        "output_format": storage.output_format,
        "serde_name": storage.serde_name,
        "serde_lib": storage.serde_lib,
        "serde_params": dict(storage.serde_params),
        "compressed": storage.compressed,
        "num_buckets": storage.num_buckets,
        "bucket_cols": list(storage.bucket_cols),
        "sort_cols": [[c, o] for c, o in storage.sort_cols],
        "params": dict(storage.params),
        "stored_as_sub_directories": storage.stored_as_sub_directories,
    }


def database_raw(database: HiveDatabase) -> dict[str, Any]:
    """The stored (JSON-ready) form of a database's Hive fields."""
    return {
        "description": database.description,
        "owner": database.owner,
        "owner_type": database.owner_type,
        "parameters": dict(database.parameters),
    }


def table_raw(table: HiveTable | DamagedFields) -> Any:
    """The stored (JSON-ready) form of a table's Hive fields (damaged ones as they were stored)."""
    if isinstance(table, DamagedFields):
        return table.raw
    return {
        "table_type": table.table_type,
        "owner": table.owner,
        "owner_type": table.owner_type,
        "create_time": table.create_time,
        "last_access_time": table.last_access_time,
        "retention": table.retention,
        "view_original_text": table.view_original_text,
        "view_expanded_text": table.view_expanded_text,
        "temporary": table.temporary,
        "storage": _storage_raw(table.storage),
        "columns": [list(c) for c in table.columns],
        "partition_comments": dict(table.partition_comments),
        "has_location": table.has_location,
    }


def partition_raw(partition: HivePartition | DamagedFields) -> Any:
    """The stored (JSON-ready) form of a partition's Hive fields (damaged ones as they were stored)."""
    if isinstance(partition, DamagedFields):
        return partition.raw
    return {
        "create_time": partition.create_time,
        "last_access_time": partition.last_access_time,
        "storage": None if partition.storage is None else _storage_raw(partition.storage),
    }


# ------------------------------------------------------------------------------------------------------ decode


def _object(raw: Any, what: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ValueError(f"{what} is not a JSON object: {raw!r}")
    return raw


def _get(raw: dict[str, Any], name: str, kinds: tuple[type, ...], default: Any) -> Any:
    value = raw.get(name, default)
    if value is default or type(value) in kinds:
        return value
    raise ValueError(f"field {name!r} is {value!r}, not a {' or '.join(k.__name__ for k in kinds)}")


def _optional_text(raw: dict[str, Any], name: str) -> str | None:
    return _get(raw, name, (str,), None)


def _int(raw: dict[str, Any], name: str, default: int) -> int:
    return _get(raw, name, (int,), default)


def _optional_int(raw: dict[str, Any], name: str) -> int | None:
    return _get(raw, name, (int,), None)


def _bool(raw: dict[str, Any], name: str, default: bool) -> bool:
    return _get(raw, name, (bool,), default)


def _strings(raw: dict[str, Any], name: str) -> dict[str, str]:
    value = raw.get(name, {})
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ValueError(f"field {name!r} is {value!r}, not a map of strings")
    return value


def _storage(value: Any) -> HiveStorage:
    raw = _object(value, "a storage descriptor")
    buckets = raw.get("bucket_cols", [])
    sorts = raw.get("sort_cols", [])
    if not isinstance(buckets, list) or not all(isinstance(c, str) for c in buckets):
        raise ValueError(f"bucket columns {buckets!r} are not a list of names")
    if not isinstance(sorts, list) or not all(
        isinstance(s, list) and len(s) == 2 and isinstance(s[0], str) and type(s[1]) is int for s in sorts
    ):
        raise ValueError(f"sort columns {sorts!r} are not (name, order) pairs")
    return HiveStorage(
        input_format=_optional_text(raw, "input_format"),
        output_format=_optional_text(raw, "output_format"),
        serde_name=_optional_text(raw, "serde_name"),
        serde_lib=_optional_text(raw, "serde_lib"),
        serde_params=_strings(raw, "serde_params"),
        compressed=_bool(raw, "compressed", False),
        num_buckets=_int(raw, "num_buckets", -1),
        bucket_cols=tuple(buckets),
        sort_cols=tuple((c, o) for c, o in sorts),
        params=_strings(raw, "params"),
        stored_as_sub_directories=_bool(raw, "stored_as_sub_directories", False),
    )


def database_from_raw(value: Any) -> HiveDatabase | DamagedFields:
    """A database's Hive fields from their stored form (`DamagedFields` when it is not what `database_raw`
    writes)."""
    try:
        raw = _object(value, "a database's Hive fields")
        return HiveDatabase(
            description=_optional_text(raw, "description"),
            owner=_optional_text(raw, "owner"),
            owner_type=_optional_int(raw, "owner_type"),
            parameters=_strings(raw, "parameters"),
        )
    except ValueError as exc:
        return DamagedFields(value, str(exc))


def table_from_raw(value: Any) -> HiveTable | DamagedFields:
    """A table's Hive fields from their stored form (`DamagedFields` when it is not what `table_raw` writes)."""
    try:
        return _table(value)
    except ValueError as exc:
        return DamagedFields(value, str(exc))


def _table(value: Any) -> HiveTable:
    raw = _object(value, "a table's Hive fields")
    columns = raw.get("columns", [])
    if not isinstance(columns, list) or not all(
        isinstance(c, list)
        and len(c) == 3
        and isinstance(c[0], str)
        and isinstance(c[1], str)
        and (c[2] is None or isinstance(c[2], str))
        for c in columns
    ):
        raise ValueError(f"columns {columns!r} are not (name, type, comment) triples")
    return HiveTable(
        table_type=_get(raw, "table_type", (str,), "MANAGED_TABLE"),
        owner=_optional_text(raw, "owner"),
        owner_type=_optional_int(raw, "owner_type"),
        create_time=_int(raw, "create_time", 0),
        last_access_time=_int(raw, "last_access_time", 0),
        retention=_int(raw, "retention", 0),
        view_original_text=_optional_text(raw, "view_original_text"),
        view_expanded_text=_optional_text(raw, "view_expanded_text"),
        temporary=_bool(raw, "temporary", False),
        storage=_storage(raw.get("storage", {})),
        columns=tuple((n, t, c) for n, t, c in columns),
        partition_comments=_strings(raw, "partition_comments"),
        has_location=_bool(raw, "has_location", True),
    )


def partition_from_raw(value: Any) -> HivePartition | DamagedFields:
    """A partition's Hive fields from their stored form (`DamagedFields` when it is not what `partition_raw`
    writes)."""
    try:
        raw = _object(value, "a partition's Hive fields")
        storage = raw.get("storage")
        return HivePartition(
            create_time=_int(raw, "create_time", 0),
            last_access_time=_int(raw, "last_access_time", 0),
            storage=None if storage is None else _storage(storage),
        )
    except ValueError as exc:
        return DamagedFields(value, str(exc))
