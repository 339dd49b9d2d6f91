"""The Hive fields an earlier server kept under reserved keys, read in the metastore's one codec
(`sargable.metastore.hive`): before tables and partitions had `hive` fields of their own, a table's were in the
property `sargable.hms.table` and a partition's in the parameter `sargable.hms.partition`. Such tables and
partitions are still served as they were. Clients may not set parameters under the `sargable.hms.` prefix.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from sargable.metastore.hive import HivePartition, HiveTable, partition_from_raw, table_from_raw

PREFIX = "sargable.hms."
TABLE_KEY = PREFIX + "table"
PARTITION_KEY = PREFIX + "partition"


def is_reserved(key: str) -> bool:
    """Whether a parameter name belongs to this module (clients may not set it)."""
    return key.startswith(PREFIX)


def client_parameters(properties: Mapping[str, str]) -> dict[str, str]:
    """The parameters a client set, without the reserved keys."""
    return {k: v for k, v in properties.items() if not is_reserved(k)}


def legacy_table(properties: Mapping[str, str]) -> HiveTable | None:
    """A table's Hive fields as an earlier server kept them in its properties, or None."""
    raw = properties.get(TABLE_KEY)
    return None if raw is None else table_from_raw(json.loads(raw))


def partition_fields(hive: HivePartition | None, parameters: Mapping[str, str]) -> tuple[HivePartition, dict[str, str]]:
    """A partition's Hive fields (its own, else an earlier server's reserved parameter, else none) and the parameters
    a client set."""
    raw = parameters.get(PARTITION_KEY) if hive is None else None
    if hive is None:
        hive = HivePartition() if raw is None else partition_from_raw(json.loads(raw))
    return hive, client_parameters(parameters)
