"""A table's totals (partitions, files, bytes, rows), kept under their own catalog key and read in O(1).

The totals are written in the same transaction as every change that alters them (create_table, add_partitions,
commit, drop_partitions, drop_table), under the table's row lock, so they always match the partitions and files a
snapshot holds. A table created before the totals were kept has no such key: it is counted (a scan of its
partition and file entries) until a write transaction stores the count.
"""

from __future__ import annotations

import struct

from sargable.metastore.files import header
from sargable.metastore.layout import table_prefix
from sargable.metastore.records import TableDefinition, TableStats
from sargable.metastore.schema import CATALOG, FILES, PARTITIONS, damaged, key_range, stats_key
from sargable.store import Store

NO_CHANGE = TableStats(0, 0, 0, 0)
_FORMAT = struct.Struct(">4Q")


def plus(a: TableStats, b: TableStats) -> TableStats:
    return TableStats(*(x + y for x, y in zip(a, b, strict=True)))


def minus(a: TableStats, b: TableStats) -> TableStats:
    return TableStats(*(x - y for x, y in zip(a, b, strict=True)))


def start(store: Store, table_id: int) -> None:
    """Store the totals of a new, empty table."""
    store.put(CATALOG, stats_key(table_id), _FORMAT.pack(*NO_CHANGE))


def read(store: Store, table: TableDefinition) -> TableStats | None:
    """The stored totals, or None for a table created before they were kept."""
    raw = store.get(CATALOG, stats_key(table.table_id))
    return None if raw is None else _decoded(table, raw)


def _decoded(table: TableDefinition, raw: bytes) -> TableStats:
    try:
        return TableStats(*_FORMAT.unpack(raw))
    except struct.error as exc:
        raise damaged(CATALOG, stats_key(table.table_id), f"totals of {table.qualified_name}", exc) from None


def store_counted(store: Store, table: TableDefinition) -> TableStats:
    """Count a table's totals and store them (inside a write transaction with the table's row locked)."""
    counted = count(store, table)
    store.put(CATALOG, stats_key(table.table_id), _FORMAT.pack(*counted))
    return counted


def count(store: Store, table: TableDefinition) -> TableStats:
    """The table's totals counted from its partition and file entries (a scan of both)."""
    prefix_range = key_range(table_prefix(table.table_id))
    files = size = rows = 0
    for key, value in store.scan(FILES, *prefix_range):
        _, row_count, size_bytes = header(table, key, value)
        files, size, rows = files + 1, size + size_bytes, rows + row_count
    return TableStats(store.count(PARTITIONS, *prefix_range), files, size, rows)


def change(store: Store, table: TableDefinition, delta: TableStats) -> None:
    """Add `delta` to the stored totals (inside the change's transaction, with the table's row locked).

    A table without stored totals (created before they were kept) is left so: it is counted when read. Totals that
    the change would make negative were damaged: they are dropped, to be counted again on the next read.
    """
    if delta == NO_CHANGE:
        return
    current = read(store, table)
    if current is None:
        return
    total = plus(current, delta)
    if min(total) < 0:
        store.delete(CATALOG, stats_key(table.table_id))
        return
    store.put(CATALOG, stats_key(table.table_id), _FORMAT.pack(*total))
