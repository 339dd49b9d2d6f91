"""The Hive fields an earlier server kept under reserved keys, read in the metastore's one codec
(`sargable.metastore.hive`): before tables and partitions had `hive` fields of their own, a table's were in the
property `sargable.hms.table` and a partition's in the parameter `sargable.hms.partition`. Such tables and
partitions are still served as they were. Clients may not set parameters under the `sargable.hms.` prefix.

Hive fields that don't decode (`DamagedFields`, see `sargable.metastore.hive`) refuse just their database or table,
naming it; a partition's are served as none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sargable.errors import DamagedMetastoreError
from sargable.metastore import Partition, TableDefinition
from sargable.metastore.hive import DamagedFields, HivePartition, HiveTable, partition_from_raw, table_from_raw

PREFIX = "sargable.hms."
TABLE_KEY = PREFIX + "table"
PARTITION_KEY = PREFIX + "partition"


def is_reserved(key: str) -> bool:
    """Whether a parameter name belongs to this module (clients may not set it)."""
    return key.startswith(PREFIX)


def client_parameters(properties: Mapping[str, str]) -> dict[str, str]:
    """The parameters a client set, without the reserved keys."""
    return {k: v for k, v in properties.items() if not is_reserved(k)}


def damaged_fields(what: str, fields: DamagedFields) -> DamagedMetastoreError:
    """The error for an object whose Hive fields don't decode."""
    return DamagedMetastoreError(
        f"the Hive fields of {what} don't decode ({fields.error}), as a server before sargable's checks of them "
        "could store them: the rest of the metastore is fine; drop the object (its data files stay) and create it "
        "again, or restore the metastore from a backup"
    )


def _json(raw: str) -> Any:
    """A reserved key's JSON; text that is not JSON is passed on as it is, for the decoder to keep as damaged."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def table_fields(table: TableDefinition) -> HiveTable | None:
    """A table's Hive fields: its own, else an earlier server's reserved property, else None (a table made outside
    the server); DamagedMetastoreError naming the table when they don't decode."""
    hive = table.hive
    if hive is None and TABLE_KEY in table.properties:
        hive = table_from_raw(_json(table.properties[TABLE_KEY]))
    if isinstance(hive, DamagedFields):
        raise damaged_fields(f"table {table.qualified_name}", hive)
    return hive


def partition_fields(part: Partition) -> tuple[HivePartition, dict[str, str]]:
    """A partition's Hive fields (its own, else an earlier server's reserved parameter, else none) and the parameters
    a client set. Fields that don't decode are served as none (the table's storage descriptor), so that a listing of
    its table never fails half-sent; they stay stored as they are until the partition is altered or dropped."""
    hive = part.hive
    if hive is None:
        raw = part.parameters.get(PARTITION_KEY)
        hive = HivePartition() if raw is None else partition_from_raw(_json(raw))
    if isinstance(hive, DamagedFields):
        hive = HivePartition()
    return hive, client_parameters(part.parameters)
