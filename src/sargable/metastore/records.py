"""What the metastore returns: `Database`, `TableDefinition`, `Partition` and `TableStats` records, and their stored
forms."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

from sargable.metastore.hive import (
    DamagedFields,
    HiveDatabase,
    HivePartition,
    HiveTable,
    partition_from_raw,
    partition_raw,
    table_from_raw,
    table_raw,
)
from sargable.metastore.names import partition_name
from sargable.types import DataType, parse_type


@dataclass(frozen=True)
class Database:
    """A database's record: its name, the location its tables default under, and its Hive fields (None when it was
    made without them)."""

    name: str
    location: str
    hive: HiveDatabase | DamagedFields | None = None


@dataclass(frozen=True)
class TableDefinition:
    """A table's definition as the catalog stores it: data columns, partition keys (in key order), location,
    properties, indexes and version (the `Table` handle of `Metastore.table` reads through one)."""

    database: str
    name: str
    table_id: int
    columns: tuple[tuple[str, DataType], ...]
    partition_keys: tuple[tuple[str, DataType], ...]
    location: str
    properties: dict[str, str] = field(default_factory=dict)
    indexes: tuple[str, ...] = ()
    """Partition keys with a secondary index, in creation order."""
    version: int = 0
    """Bumped by every commit; optimistic writers pass the version they read."""
    files_from_folders: bool = False
    """True for a table that engines fill without registering its files (one made through the Hive metastore API):
    a scan lists the folder of each selected partition (or of the unpartitioned table) that has no file registered."""
    hive: HiveTable | DamagedFields | None = None
    """The table's Hive fields (type, owner, times, storage descriptor, columns as written...; see
    `sargable.metastore.hive`), None for a table made without them, `DamagedFields` for ones that don't decode."""
    widened: tuple[tuple[str, DataType], ...] = ()
    """Columns and struct fields (lower-case paths, `device.version`) whose type was widened, each with the type it
    had before its first widening: statistics of files written before are read as that type's values."""
    added: tuple[tuple[str, int], ...] = ()
    """Columns and struct fields (lower-case paths) added while the table listed files, each with the version that
    added it: a file registered at an earlier version doesn't hold it, so all its values there are NULL."""

    @property
    def qualified_name(self) -> str:
        return f"{self.database}.{self.name}"

    @property
    def schema(self) -> list[tuple[str, DataType]]:
        """Data columns followed by partition keys: what a filter over whole rows binds against."""
        return [*self.columns, *self.partition_keys]

    @property
    def partition_key_names(self) -> list[str]:
        return [name for name, _ in self.partition_keys]

    def to_json(self) -> bytes:
        """The stored form; optional fields only when set, so a table without them is stored as before they were."""
        raw: dict[str, Any] = {
            "database": self.database,
            "name": self.name,
            "id": self.table_id,
            "columns": [[n, str(t)] for n, t in self.columns],
            "partition_keys": [[n, str(t)] for n, t in self.partition_keys],
            "location": self.location,
            "properties": self.properties,
            "indexes": list(self.indexes),
            "version": self.version,
        }
        if self.files_from_folders:
            raw["files_from_folders"] = True
        if self.hive is not None:
            raw["hive"] = table_raw(self.hive)
        if self.widened:
            raw["widened"] = [[n, str(t)] for n, t in self.widened]
        if self.added:
            raw["added"] = [[n, v] for n, v in self.added]
        return json.dumps(raw).encode()

    @classmethod
    def from_json(cls, data: bytes) -> TableDefinition:
        """The table of its stored form; anything but what `to_json` writes raises ValueError saying what is wrong."""
        raw = _object(data)
        columns = _columns(_pairs(raw.get("columns"), "columns"))
        partition_keys = _columns(_pairs(raw.get("partition_keys"), "partition_keys"))
        properties = raw.get("properties")
        indexes = raw.get("indexes")
        key_names = {name for name, _ in partition_keys}
        if not _string_map(properties):
            raise ValueError(f"properties {properties!r} are not a map of strings")
        if not isinstance(indexes, list) or not all(isinstance(i, str) and i in key_names for i in indexes):
            raise ValueError(f"indexes {indexes!r} are not partition keys")
        folders = raw.get("files_from_folders", False)
        if not isinstance(folders, bool):
            raise ValueError(f"files_from_folders {folders!r} is not a boolean")
        return cls(
            database=_field(raw, "database", str),
            name=_field(raw, "name", str),
            table_id=_field(raw, "id", int, minimum=1),
            columns=columns,
            partition_keys=partition_keys,
            location=_field(raw, "location", str),
            properties=properties,
            indexes=tuple(indexes),
            version=_field(raw, "version", int, minimum=0),
            files_from_folders=folders,
            hive=None if raw.get("hive") is None else table_from_raw(raw["hive"]),
            widened=_columns(_pairs(raw.get("widened", []), "widened")),
            added=_added(raw.get("added", [])),
        )


class TableStats(NamedTuple):
    """Totals of a whole table, kept by the metastore with every change (`Table.stats`)."""

    partitions: int
    files: int
    bytes: int
    """Sum of the files' `size_bytes`."""
    rows: int
    """Sum of the files' `row_count`."""


def _object(data: bytes) -> dict[str, Any]:
    """A stored JSON object (UTF-8); ValueError when the bytes are not one."""
    raw = json.loads(data)
    if not isinstance(raw, dict):
        raise ValueError(f"expected a JSON object, got {type(raw).__name__}")
    return raw


def _field(raw: dict[str, Any], name: str, kind: type, *, minimum: int | None = None) -> Any:
    value = raw.get(name)
    if type(value) is not kind or (minimum is not None and value < minimum):
        raise ValueError(f"field {name!r} is {value!r}, not a valid {kind.__name__}")
    return value


def _string_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def _pairs(value: Any, name: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in value
    ):
        raise ValueError(f"{name} {value!r} are not (name, type) pairs")
    return tuple((name, dtype) for name, dtype in value)


def _added(value: Any) -> tuple[tuple[str, int], ...]:
    if not isinstance(value, list) or not all(
        isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and type(p[1]) is int for p in value
    ):
        raise ValueError(f"added {value!r} are not (path, version) pairs")
    return tuple((path, version) for path, version in value)


@lru_cache(maxsize=1024)
def _columns(pairs: tuple[tuple[str, str], ...]) -> tuple[tuple[str, DataType], ...]:
    """Typed (name, type) pairs from their stored form (cached: every metastore call re-reads its table)."""
    return tuple((name, parse_type(dtype)) for name, dtype in pairs)


class Partition:
    """One partition: typed `values` in partition-key order, `spec`, Hive `name`, `location`, `parameters`, and
    its Hive fields `hive` (None when it has none)."""

    __slots__ = ("_location", "_name", "_parameters", "hive", "table", "values")

    def __init__(
        self,
        table: TableDefinition,
        values: tuple[Any, ...],
        location: str | None = None,
        parameters: dict | None = None,
        hive: HivePartition | DamagedFields | None = None,
    ) -> None:
        self.table = table
        self.values = values
        self._location = location
        self._name: str | None = None
        self._parameters = parameters or None
        self.hive = hive

    @property
    def parameters(self) -> dict[str, str]:
        """The partition's parameters (a dict of strings; created on first use, as most partitions have none)."""
        if self._parameters is None:
            self._parameters = {}
        return self._parameters

    @parameters.setter
    def parameters(self, value: dict[str, str]) -> None:
        self._parameters = value

    @property
    def name(self) -> str:
        """Hive form, e.g. `ds=2024-01-01/hr=3` (escaped; NULL is `__HIVE_DEFAULT_PARTITION__`)."""
        if self._name is None:
            self._name = partition_name(self.table.partition_keys, self.values)
        return self._name

    @property
    def spec(self) -> dict[str, Any]:
        return {name: value for (name, _), value in zip(self.table.partition_keys, self.values)}

    @property
    def location(self) -> str:
        """Where the partition's files live: set explicitly, or the table location plus the partition name."""
        if self._location is not None:
            return self._location
        return f"{self.table.location.rstrip('/')}/{self.name}"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Partition):
            return NotImplemented
        return (
            self.table.table_id == other.table.table_id
            and self.values == other.values
            and self.location == other.location
            and self.parameters == other.parameters
            and self.hive == other.hive
        )

    def __hash__(self) -> int:
        return hash((self.table.table_id, self.values))

    def __repr__(self) -> str:
        return f"Partition({self.table.qualified_name}/{self.name})"


def encode_partition_value(
    location: str | None, parameters: dict[str, str] | None, hive: HivePartition | DamagedFields | None = None
) -> bytes:
    """Stored value of a partition row: empty for the common case (default location, no parameters, no Hive
    fields); the Hive fields only when set."""
    if location is None and not parameters and hive is None:
        return b""
    raw: dict[str, Any] = {"location": location, "parameters": parameters or {}}
    if hive is not None:
        raw["hive"] = partition_raw(hive)
    return json.dumps(raw).encode()


def decode_partition_value(data: bytes) -> tuple[str | None, dict[str, str], HivePartition | DamagedFields | None]:
    """(location, parameters, Hive fields) of a stored partition row; ValueError when the bytes are not what was
    written."""
    if not data:
        return None, {}, None
    raw = _object(data)
    location, parameters = raw.get("location"), raw.get("parameters") or {}
    if location is not None and not isinstance(location, str):
        raise ValueError(f"location {location!r} is not a string")
    if not _string_map(parameters):
        raise ValueError(f"parameters {parameters!r} are not a map of strings")
    hive = raw.get("hive")
    return location, parameters, None if hive is None else partition_from_raw(hive)
