"""How a table's rows are keyed: the codecs and key prefixes of its partitions, secondary indexes and files.

Built once per table definition (`layout_of`), so the hot loops encode and decode keys without looking up codecs.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from sargable import keys
from sargable.metastore.records import TableDefinition
from sargable.types import STRING, DataType

TABLE_ID_BYTES = 8


def table_prefix(table_id: int) -> bytes:
    """The 8-byte prefix of every key of a table, in every keyspace."""
    return table_id.to_bytes(TABLE_ID_BYTES, "big")


class IndexLayout:
    """One secondary index: its partition key moved to the front of the key, under `table prefix + position`."""

    __slots__ = ("codec", "column", "columns", "position", "prefix", "size")

    def __init__(self, table_prefix: bytes, partition_keys: Sequence[tuple[str, DataType]], column: str) -> None:
        names = [name for name, _ in partition_keys]
        self.column = column
        self.position = position = names.index(column)
        self.columns = [partition_keys[position], *partition_keys[:position], *partition_keys[position + 1 :]]
        self.codec = keys.tuple_codec([t for _, t in self.columns])
        self.prefix = table_prefix + bytes([position])
        self.size = len(self.prefix)

    def key(self, values: Sequence[Any]) -> bytes:
        """The index key of a partition's values (in partition-key order)."""
        position = self.position
        return self.prefix + self.codec.encode([values[position], *values[:position], *values[position + 1 :]])

    def values(self, key: bytes) -> tuple[Any, ...]:
        """A partition's values (in partition-key order) from its index key."""
        reordered = self.codec.decode(key[self.size :])
        position = self.position
        if position == 1:
            return (reordered[1], reordered[0], *reordered[2:])
        return (*reordered[1 : position + 1], reordered[0], *reordered[position + 1 :])


class TableLayout:
    """The key codecs of one table definition: partition keys, each secondary index, and file entries."""

    __slots__ = ("codec", "file_codec", "indexes", "prefix", "size", "types")

    def __init__(
        self, table_id: int, partition_keys: tuple[tuple[str, DataType], ...], indexes: tuple[str, ...]
    ) -> None:
        self.prefix = table_prefix(table_id)
        self.size = len(self.prefix)
        self.types = [t for _, t in partition_keys]
        self.codec = keys.tuple_codec(self.types) if partition_keys else None
        self.file_codec = keys.tuple_codec([*self.types, STRING])
        self.indexes = {column: IndexLayout(self.prefix, partition_keys, column) for column in indexes}

    def key(self, values: Sequence[Any]) -> bytes:
        """The partition row key of these values."""
        assert self.codec is not None
        return self.prefix + self.codec.encode(values)

    def values(self, key: bytes) -> tuple[Any, ...]:
        """A partition's values from its row key."""
        assert self.codec is not None
        return self.codec.decode(key[self.size :])


@lru_cache(maxsize=1024)
def _layout(table_id: int, partition_keys: tuple[tuple[str, DataType], ...], indexes: tuple[str, ...]) -> TableLayout:
    return TableLayout(table_id, partition_keys, indexes)


def layout_of(table: TableDefinition) -> TableLayout:
    """The (cached) layout of a table definition."""
    return _layout(table.table_id, table.partition_keys, table.indexes)
