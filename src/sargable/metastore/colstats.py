"""Column statistics objects that engines compute and keep in the metastore (Hive's `ANALYZE ... FOR COLUMNS`
through the metastore API), per table or per partition and column, as bytes the caller encodes.

They sit in the catalog keyspace under the table's id, so a rename keeps them, and go with the table or partition
when it is dropped; a partition's are keyed by its row key, a column's by its lower-cased name. Writes check that
the columns exist; the caller checks the table and partition in the transaction that writes.

Layout: catalog key `C` + table prefix + `\\x00` + column (a table's) or `\\x01` + the partition's row key without
the table prefix, after its length (2 bytes), + column (a partition's), the column one order-preserving string
field -> the caller's bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import Any

from sargable import keys
from sargable.errors import MetastoreError
from sargable.metastore.layout import layout_of, table_prefix
from sargable.metastore.records import TableDefinition
from sargable.metastore.schema import CATALOG, DECODE_ERRORS, damaged, key_range
from sargable.store import Store
from sargable.types import STRING

PREFIX = b"C"
_TABLE, _PARTITION = b"\x00", b"\x01"
_LENGTH = struct.Struct(">H")


def _head(table_id: int) -> bytes:
    return PREFIX + table_prefix(table_id)


def _partition_scope(table_id: int, row_key: bytes) -> bytes:
    """Where a partition's statistics go: its row key without the table prefix, after its length."""
    suffix = row_key[len(table_prefix(table_id)) :]
    return _head(table_id) + _PARTITION + _LENGTH.pack(len(suffix)) + suffix


def _scope(table: TableDefinition, partition: tuple[Any, ...] | None) -> bytes:
    if partition is None:
        return _head(table.table_id) + _TABLE
    return _partition_scope(table.table_id, layout_of(table).key(partition))


def _column(table: TableDefinition, column: str) -> str:
    """A data column of the table, by its lower-cased name; MetastoreError for one the table doesn't have."""
    name = column.lower() if isinstance(column, str) else column
    if name not in {c.lower() for c, _ in table.columns}:
        raise MetastoreError(f"{table.qualified_name} has no column {column!r} to keep statistics of")
    return name


def put(store: Store, table: TableDefinition, partition: tuple[Any, ...] | None, stats: Mapping[str, bytes]) -> None:
    """Keep the statistics of some columns of a table (`partition` None) or of one of its partitions (the caller
    checks it exists, in its transaction), replacing what was kept for those columns."""
    scope = _scope(table, partition)
    store.put_many(CATALOG, [(scope + keys.encode_field(_column(table, c), STRING), data) for c, data in stats.items()])


def get(
    store: Store, table: TableDefinition, partition: tuple[Any, ...] | None, columns: Iterable[str] | None = None
) -> dict[str, bytes]:
    """The kept statistics by column (all kept columns when `columns` is None; unknown or unkept ones left out)."""
    scope = _scope(table, partition)
    if columns is not None:
        wanted = {scope + keys.encode_field(c.lower(), STRING): c.lower() for c in columns}
        return {wanted[k]: v for k, v in store.multi_get(CATALOG, wanted).items()}
    out = {}
    for key, value in store.scan(CATALOG, *key_range(scope)):
        try:
            out[keys.decode_field(key[len(scope) :], STRING)] = value
        except DECODE_ERRORS as exc:
            raise damaged(CATALOG, key, "a column statistics key", exc) from None
    return out


def delete(store: Store, table: TableDefinition, partition: tuple[Any, ...] | None, column: str | None) -> int:
    """Forget the kept statistics of one column (every column when None); how many were kept."""
    scope = _scope(table, partition)
    if column is None:
        return store.delete_range(CATALOG, *key_range(scope))
    return int(store.delete(CATALOG, scope + keys.encode_field(_column(table, column), STRING)))


def forget_partition(store: Store, table: TableDefinition, row_key: bytes) -> None:
    """Forget a dropped partition's statistics (by its row key), in the transaction that drops it."""
    store.delete_range(CATALOG, *key_range(_partition_scope(table.table_id, row_key)))


def forget_table(store: Store, table_id: int) -> None:
    """Forget every statistics of a dropped table, in the transaction that drops it."""
    store.delete_range(CATALOG, *key_range(_head(table_id)))
