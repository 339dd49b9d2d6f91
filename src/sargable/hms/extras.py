"""The Hive fields sargable's metastore has no place for yet, kept in a table's properties and a partition's
parameters under one reserved key each (`sargable.hms.table`, `sargable.hms.partition`) as JSON.

The one encoder/decoder of that spike format: when the metadata model grows first-class fields (issue 17), this
module is what goes. What it holds for a table: type, owner, create time, retention, view texts, the storage
descriptor without its location (formats, SerDe and its parameters, buckets, sort columns, stored-as-subdirectories),
every data column as Hive wrote it (name, type text, comment: so complex types and comments round-trip while the
metastore keeps the scalar ones typed) and partition-key comments. For a partition: its create / access times and its
storage descriptor when it differs from the table's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

PREFIX = "sargable.hms."
TABLE_KEY = PREFIX + "table"
PARTITION_KEY = PREFIX + "partition"


@dataclass
class Storage:
    """A storage descriptor's fields other than its location and columns."""

    input_format: str | None = None
    output_format: str | None = None
    serde_name: str | None = None
    serde_lib: str | None = None
    serde_params: dict[str, str] = field(default_factory=dict)
    compressed: bool = False
    num_buckets: int = -1
    bucket_cols: list[str] = field(default_factory=list)
    sort_cols: list[tuple[str, int]] = field(default_factory=list)
    params: dict[str, str] = field(default_factory=dict)
    stored_as_sub_directories: bool = False

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Storage:
        data = dict(raw)
        data["sort_cols"] = [(str(c), int(o)) for c, o in data.get("sort_cols", [])]
        return cls(**data)


@dataclass
class TableExtras:
    """A table's Hive-only fields (see the module docstring)."""

    table_type: str = "MANAGED_TABLE"
    owner: str | None = None
    owner_type: int | None = None
    create_time: int = 0
    last_access_time: int = 0
    retention: int = 0
    view_original_text: str | None = None
    view_expanded_text: str | None = None
    temporary: bool = False
    storage: Storage = field(default_factory=Storage)
    columns: list[tuple[str, str, str | None]] = field(default_factory=list)
    """Every data column as Hive wrote it: (name, type text, comment)."""
    partition_comments: dict[str, str] = field(default_factory=dict)
    has_location: bool = True
    """False for a view: its storage descriptor has no location."""


@dataclass
class PartitionExtras:
    """A partition's Hive-only fields; `storage` only when it differs from its table's."""

    create_time: int = 0
    last_access_time: int = 0
    storage: Storage | None = None


def is_reserved(key: str) -> bool:
    """Whether a parameter name belongs to this module (clients may not set it)."""
    return key.startswith(PREFIX)


def encode_table(extras: TableExtras, parameters: Mapping[str, str]) -> dict[str, str]:
    """Table properties to store: the Hive parameters plus the extras under `TABLE_KEY`."""
    return {**parameters, TABLE_KEY: json.dumps(asdict(extras), separators=(",", ":"))}


def decode_table(properties: Mapping[str, str]) -> tuple[TableExtras | None, dict[str, str]]:
    """(extras or None for a table made outside the server, the Hive parameters) from stored properties."""
    params = {k: v for k, v in properties.items() if not is_reserved(k)}
    raw = properties.get(TABLE_KEY)
    if raw is None:
        return None, params
    data = json.loads(raw)
    data["storage"] = Storage.from_json(data.get("storage") or {})
    data["columns"] = [(n, t, c) for n, t, c in data.get("columns", [])]
    return TableExtras(**data), params


def encode_partition(extras: PartitionExtras, parameters: Mapping[str, str]) -> dict[str, str]:
    """Partition parameters to store; the extras key only when it holds something."""
    if extras == PartitionExtras():
        return dict(parameters)
    return {**parameters, PARTITION_KEY: json.dumps(asdict(extras), separators=(",", ":"))}


def decode_partition(parameters: Mapping[str, str]) -> tuple[PartitionExtras, dict[str, str]]:
    """(extras, the Hive parameters) from stored partition parameters."""
    params = {k: v for k, v in parameters.items() if not is_reserved(k)}
    raw = parameters.get(PARTITION_KEY)
    if raw is None:
        return PartitionExtras(), params
    data = json.loads(raw)
    storage = data.get("storage")
    data["storage"] = None if storage is None else Storage.from_json(storage)
    return PartitionExtras(**data), params
