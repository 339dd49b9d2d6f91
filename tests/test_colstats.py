"""`sargable.metastore.colstats`: kept per table and partition, case-insensitive by column, gone with a dropped
partition or table (nothing left in the store), refused for a column the table doesn't have."""

from __future__ import annotations

import pytest

from sargable.errors import MetastoreError
from sargable.metastore import colstats
from sargable.metastore.schema import CATALOG, key_range


def _left(ms) -> list[bytes]:
    return [key for key, _ in ms.store.scan(CATALOG, *key_range(colstats.PREFIX))]


def test_kept_and_forgotten_with_what_they_describe(metastore):
    ms = metastore
    ms.create_database("db")
    ms.create_table("db", "t", columns=[("X", "int"), ("y", "string")], partition_keys=[("ds", "string")])
    ms.add_partitions("db", "t", [{"ds": "a"}, {"ds": "b"}])
    table = ms.table("db.t").definition
    with ms.store.transaction():
        colstats.put(ms.store, table, None, {"x": b"table x", "Y": b"table y"})
        colstats.put(ms.store, table, ("a",), {"X": b"a x"})
        colstats.put(ms.store, table, ("b",), {"x": b"b x"})
    assert colstats.get(ms.store, table, None) == {"x": b"table x", "y": b"table y"}
    assert colstats.get(ms.store, table, None, ["Y", "nope"]) == {"y": b"table y"}
    assert colstats.get(ms.store, table, ("a",)) == {"x": b"a x"}
    with pytest.raises(MetastoreError, match="no column 'z'"):
        colstats.put(ms.store, table, None, {"z": b""})

    assert colstats.delete(ms.store, table, None, "y") == 1
    assert colstats.delete(ms.store, table, None, "y") == 0
    ms.drop_partitions("db", "t", "ds = 'a'")
    assert colstats.get(ms.store, table, ("a",)) == {}
    assert colstats.get(ms.store, table, ("b",)) == {"x": b"b x"}
    assert len(_left(ms)) == 2
    ms.drop_table("db", "t")
    assert _left(ms) == []
