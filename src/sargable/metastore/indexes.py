"""Secondary indexes on partition keys: their entries, and creating one (back-filled in its transaction).

An index entry's key is the table prefix, the indexed key's position, then the partition values with the indexed
key first; its value is `COVERED` plus the partition row's value, so a lookup through the index needs no second
read. Every partition write maintains the entries in the same transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sargable.errors import AlreadyExistsError, MetastoreError
from sargable.metastore.catalog import bump
from sargable.metastore.layout import IndexLayout, layout_of
from sargable.metastore.records import TableDefinition
from sargable.metastore.schema import COVERED, DECODE_ERRORS, INDEXES, PARTITIONS, damaged, key_range
from sargable.store import Store

BATCH = 2000
"""Index entries written per `put_many` while back-filling."""


def index_keys(table: TableDefinition, values: Sequence[Any]) -> list[bytes]:
    """The index entry keys of one partition, one per index of the table."""
    return [index.key(values) for index in layout_of(table).indexes.values()]


def create_index(store: Store, table: TableDefinition, column: Any) -> TableDefinition:
    """Index a partition key other than the first (the table's row locked by the caller's transaction); returns
    the new definition."""
    names = {n.lower(): n for n in table.partition_key_names}
    if not isinstance(column, str) or column.lower() not in names:
        raise MetastoreError(
            f"can't index {column!r}: not a partition key of {table.qualified_name} ({table.partition_key_names})"
        )
    column = names[column.lower()]
    if column == table.partition_key_names[0]:
        raise MetastoreError(f"{column!r} is the first partition key: the primary key order already serves it")
    if column in table.indexes:
        raise AlreadyExistsError(f"{table.qualified_name} already has an index on {column!r}")
    new = bump(store, table, indexes=(*table.indexes, column))
    layout = layout_of(table)
    index = IndexLayout(layout.prefix, table.partition_keys, column)
    batch: list[tuple[bytes, bytes]] = []
    for key, value in store.scan(PARTITIONS, *key_range(layout.prefix)):
        try:
            values = layout.values(key)
        except DECODE_ERRORS as exc:
            raise damaged(PARTITIONS, key, f"a partition of {table.qualified_name}", exc) from None
        batch.append((index.key(values), COVERED + value))
        if len(batch) >= BATCH:
            store.put_many(INDEXES, batch)
            batch = []
    store.put_many(INDEXES, batch)
    return new
