"""The Hive fields the server keeps under reserved keys, in the metastore's one codec (`sargable.metastore.hive`).

- A partition's (`HivePartition`: create / access times, its own storage descriptor) under the parameter
  `sargable.hms.partition`, written only when the partition has parameters or a storage of its own (partition rows
  have no fields for them yet).
- A table's, read only: a metastore written before tables had `TableDefinition.hive` kept them in the property
  `sargable.hms.table`; such a table is still served as it was.

Clients may not set parameters under the `sargable.hms.` prefix.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from sargable.metastore.hive import HivePartition, HiveTable, partition_from_raw, partition_raw, table_from_raw

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


def encode_partition(extras: HivePartition, parameters: Mapping[str, str]) -> dict[str, str]:
    """Partition parameters to store; the extras key only when it holds something."""
    if extras == HivePartition():
        return dict(parameters)
    return {**parameters, PARTITION_KEY: json.dumps(partition_raw(extras), separators=(",", ":"))}


def decode_partition(parameters: Mapping[str, str]) -> tuple[HivePartition, dict[str, str]]:
    """(extras, the Hive parameters) from stored partition parameters."""
    raw = parameters.get(PARTITION_KEY)
    extras = HivePartition() if raw is None else partition_from_raw(json.loads(raw))
    return extras, client_parameters(parameters)
