"""What the metastore returns: `Database`, `TableDefinition`, `Partition` and `TableStats` records, and their stored
forms."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

from sargable.metastore.names import partition_name
from sargable.types import DataType, parse_type


@dataclass(frozen=True)
class Database:
    """A database's record: its name and the location its tables default under."""

    name: str
    location: str


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
        return json.dumps(
            {
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
        ).encode()

    @classmethod
    def from_json(cls, data: bytes) -> TableDefinition:
        raw = json.loads(data)
        return cls(
            database=raw["database"],
            name=raw["name"],
            table_id=raw["id"],
            columns=_columns(tuple(map(tuple, raw["columns"]))),
            partition_keys=_columns(tuple(map(tuple, raw["partition_keys"]))),
            location=raw["location"],
            properties=raw["properties"],
            indexes=tuple(raw["indexes"]),
            version=raw["version"],
        )


class TableStats(NamedTuple):
    """Totals of a whole table, kept by the metastore with every change (`Table.stats`)."""

    partitions: int
    files: int
    bytes: int
    """Sum of the files' `size_bytes`."""
    rows: int
    """Sum of the files' `row_count`."""


@lru_cache(maxsize=1024)
def _columns(pairs: tuple[tuple[str, str], ...]) -> tuple[tuple[str, DataType], ...]:
    """Typed (name, type) pairs from their stored form (cached: every metastore call re-reads its table)."""
    return tuple((name, parse_type(dtype)) for name, dtype in pairs)


class Partition:
    """One partition: typed `values` in partition-key order, `spec`, Hive `name`, `location`, `parameters`."""

    __slots__ = ("_location", "_name", "_parameters", "table", "values")

    def __init__(
        self,
        table: TableDefinition,
        values: tuple[Any, ...],
        location: str | None = None,
        parameters: dict | None = None,
    ) -> None:
        self.table = table
        self.values = values
        self._location = location
        self._name: str | None = None
        self._parameters = parameters or None

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
        )

    def __hash__(self) -> int:
        return hash((self.table.table_id, self.values))

    def __repr__(self) -> str:
        return f"Partition({self.table.qualified_name}/{self.name})"


def encode_partition_value(location: str | None, parameters: dict[str, str] | None) -> bytes:
    """Stored value of a partition row: empty for the common case (default location, no parameters)."""
    if location is None and not parameters:
        return b""
    return json.dumps({"location": location, "parameters": parameters or {}}).encode()


def decode_partition_value(data: bytes) -> tuple[str | None, dict[str, str]]:
    if not data:
        return None, {}
    raw = json.loads(data)
    return raw.get("location"), raw.get("parameters") or {}
