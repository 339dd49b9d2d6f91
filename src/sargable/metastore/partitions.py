"""Partitions: typed values from what callers give, and the partition rows with their index entries.

A partition row's key is the table prefix plus the order-preserving encoding of its values (seed 000); its value is
empty for the common case (default location, no parameters). Listings run a chosen access path (`access`): the
primary key order or a secondary index, and come back in primary key order either way.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from sargable.errors import AlreadyExistsError, MetastoreError, NoSuchObjectError, SargableError, TypeCoercionError
from sargable.metastore import files
from sargable.metastore.access import AccessPath
from sargable.metastore.hive import HivePartition
from sargable.metastore.indexes import index_keys
from sargable.metastore.layout import IndexLayout, TableLayout, layout_of
from sargable.metastore.names import DEFAULT_PARTITION_NAME, parse_partition_name
from sargable.metastore.records import (
    Partition,
    TableDefinition,
    TableStats,
    decode_partition_value,
    encode_partition_value,
)
from sargable.metastore.schema import COVERED, DECODE_ERRORS, INDEXES, PARTITIONS, damaged, key_range
from sargable.metastore.totals import NO_CHANGE, plus
from sargable.plan import FilterPlan, execute
from sargable.store import Store
from sargable.types import convert

BATCH = 2000
"""Partition keys looked up per `multi_get`."""

PartitionSpec = Mapping[str, Any] | Sequence[Any] | str
"""A partition as callers give it: a dict of key -> value, the values in key order, or a Hive name."""


def partition_values(table: TableDefinition, spec: Any) -> tuple[Any, ...]:
    """Typed values from a dict, a sequence in key order, or a Hive name; Hive strings are accepted."""
    pkeys = table.partition_keys
    if not pkeys:
        raise MetastoreError(f"table {table.qualified_name} is not partitioned")
    if isinstance(spec, Partition):
        spec = spec.values
    if spec.__class__ is tuple or spec.__class__ is list:
        raw = spec
    elif isinstance(spec, str):
        return parse_partition_name(spec, pkeys)
    elif isinstance(spec, Mapping):
        lowered = {str(k).lower(): v for k, v in spec.items()}
        unknown = set(lowered) - {n.lower() for n, _ in pkeys}
        missing = [n for n, _ in pkeys if n.lower() not in lowered]
        if unknown or missing:
            raise MetastoreError(
                f"partition {dict(spec)!r} of {table.qualified_name}: expected exactly the keys "
                f"{table.partition_key_names}"
                + (f"; unknown {sorted(unknown)}" if unknown else "")
                + (f"; missing {missing}" if missing else "")
            )
        raw = [lowered[n.lower()] for n, _ in pkeys]
    elif isinstance(spec, Sequence) and not isinstance(spec, (bytes, bytearray)):
        raw = list(spec)
    else:
        raise MetastoreError(f"a partition is a dict, a list of values or a Hive name, got {spec!r}")
    if len(raw) != len(pkeys):
        raise MetastoreError(
            f"partition {spec!r} of {table.qualified_name} has {len(raw)} values; "
            f"the partition keys are {table.partition_key_names}"
        )
    values = []
    for value, (column, dtype) in zip(raw, pkeys, strict=True):
        if value == DEFAULT_PARTITION_NAME or (value == "" and dtype.is_string):
            values.append(None)
            continue
        try:
            values.append(convert(value, dtype))
        except TypeCoercionError as exc:
            raise MetastoreError(
                f"partition value {value!r} for column {column} ({dtype}) of {table.qualified_name}: {exc}"
            ) from None
        if isinstance(values[-1], str) and "\x00" in values[-1]:
            raise MetastoreError(
                f"partition value {value!r} for column {column} of {table.qualified_name} holds a NUL character, "
                "which no folder name can hold"
            )
    return tuple(values)


def encode_key(table: TableDefinition, values: tuple[Any, ...], layout: TableLayout | None = None) -> bytes:
    """The partition row key of these values (a value the key can't hold is a MetastoreError)."""
    try:
        return (layout or layout_of(table)).key(values)
    except SargableError as exc:
        raise MetastoreError(f"partition {values!r} of {table.qualified_name}: {exc}") from None


def _name(table: TableDefinition, values: tuple[Any, ...]) -> str:
    return Partition(table, values).name


# ------------------------------------------------------------------------------------------------------ writes


def insert(
    store: Store,
    table: TableDefinition,
    values: Sequence[tuple[Any, ...]],
    locations: Sequence[str | None] | None,
    *,
    if_not_exists: bool,
    parameters: Sequence[Mapping[str, str] | None] | None = None,
    hive: Sequence[HivePartition | None] | None = None,
) -> int:
    """Write partition rows (each with its location, parameters and Hive fields when given) and their index entries;
    returns how many were new (existing ones are an error unless `if_not_exists`)."""
    layout = layout_of(table)
    rows: dict[bytes, tuple[tuple[Any, ...], bytes]] = {}
    for i, vals in enumerate(values):
        key = encode_key(table, vals, layout)
        if key in rows and not if_not_exists:
            raise AlreadyExistsError(f"partition {_name(table, vals)} is given twice")
        params = parameters[i] if parameters is not None else None
        rows[key] = (
            vals,
            encode_partition_value(
                locations[i] if locations is not None else None,
                None if params is None else {str(k): str(v) for k, v in params.items()},
                hive[i] if hive is not None else None,
            ),
        )
    key_list = list(rows)
    existing: list[bytes] = []
    for start in range(0, len(key_list), BATCH):
        batch = key_list[start : start + BATCH]
        found = store.multi_get(PARTITIONS, batch)
        existing.extend(k for k in batch if found.get(k) is not None)
    if existing and not if_not_exists:
        vals = rows[existing[0]][0]
        raise AlreadyExistsError(
            f"partition {_name(table, vals)} of {table.qualified_name} already exists"
            + (f" (and {len(existing) - 1} more)" if len(existing) > 1 else "")
        )
    for key in existing:
        del rows[key]
    stored = {key: value for key, (_, value) in rows.items()}
    store.put_many(PARTITIONS, stored.items())
    for index in layout.indexes.values():
        store.put_many(INDEXES, [(index.key(vals), COVERED + stored[key]) for key, (vals, _) in rows.items()])
    return len(rows)


def alter(
    store: Store,
    table: TableDefinition,
    values: tuple[Any, ...],
    location: str | None,
    parameters: Mapping[str, str] | None,
    hive: HivePartition | None = None,
) -> Partition:
    """Set a partition's location, parameters and/or Hive fields (the table's row locked by the caller's
    transaction)."""
    key = encode_key(table, values)
    raw = store.get(PARTITIONS, key)
    if raw is None:
        raise NoSuchObjectError(f"partition {_name(table, values)} of {table.qualified_name} does not exist")
    try:
        old_location, old_params, old_hive = decode_partition_value(raw)
    except DECODE_ERRORS as exc:
        raise damaged(PARTITIONS, key, f"partition {_name(table, values)}", exc) from None
    new_location = location if location is not None else old_location
    new_params = {str(k): str(v) for k, v in parameters.items()} if parameters is not None else old_params
    new_hive = hive if hive is not None else old_hive
    stored = encode_partition_value(new_location, new_params, new_hive)
    store.put(PARTITIONS, key, stored)
    for index_key in index_keys(table, values):
        store.put(INDEXES, index_key, COVERED + stored)
    return Partition(table, values, new_location, new_params, new_hive)


def delete(store: Store, table: TableDefinition, values: Sequence[tuple[Any, ...]]) -> TableStats:
    """Delete partitions with their index and file entries; returns the totals of the files deleted."""
    deleted = NO_CHANGE
    for vals in values:
        store.delete(PARTITIONS, encode_key(table, vals))
        for index_key in index_keys(table, vals):
            store.delete(INDEXES, index_key)
        deleted = plus(deleted, files.delete_in(store, table, vals))
    return deleted


# ------------------------------------------------------------------------------------------------------- reads


def count(store: Store, table: TableDefinition) -> int:
    return store.count(PARTITIONS, *key_range(layout_of(table).prefix))


def scan_all(store: Store, table: TableDefinition) -> Iterator[Partition]:
    """Every partition of the table, in key order."""
    layout = layout_of(table)
    return _from_rows(table, layout, store.scan(PARTITIONS, *key_range(layout.prefix)))


def by_names(store: Store, table: TableDefinition, names: Iterable[Any]) -> list[Partition]:
    """The partitions with these Hive names (or specs) that exist, in key order."""
    layout = layout_of(table)
    wanted = sorted({encode_key(table, partition_values(table, n), layout) for n in names})
    out: list[Partition] = []
    for start in range(0, len(wanted), BATCH):
        batch = wanted[start : start + BATCH]
        found = store.multi_get(PARTITIONS, batch)
        out.extend(_from_rows(table, layout, ((k, found[k]) for k in batch if k in found)))
    return out


def run(store: Store, table: TableDefinition, path: AccessPath) -> Iterator[Partition]:
    """The partitions an access path selects, in primary key order."""
    layout = layout_of(table)
    scans = path.plan.scans
    if path.index is None and len(scans) == 1 and scans[0].is_get and scans[0].key_filter is None:
        yield from _get_one(store, table, layout, scans[0].start.values, path)  # type: ignore[union-attr]
        return
    if path.index is None:
        rows = execute(path.plan, store, PARTITIONS, list(table.partition_keys), prefix=path.prefix, stats=path.stats)
        yield from _from_rows(table, layout, rows)
        return
    index = layout.indexes[path.index]
    if path.groups is not None and len(path.groups) == 1:
        yield from _from_index(store, table, layout, index, path.plan, path)
        return
    codec = layout.codec
    assert codec is not None
    if path.groups is None:
        found = list(_from_index(store, table, layout, index, path.plan, path))
        found.sort(key=lambda p: codec.encode(p.values))
        yield from found
        return
    streams = [_from_index(store, table, layout, index, group, path) for group in path.groups]
    yield from heapq.merge(*streams, key=lambda p: codec.encode(p.values))


def _from_rows(table: TableDefinition, layout: TableLayout, rows: Iterable[tuple[bytes, bytes]]) -> Iterator[Partition]:
    """Partitions from their rows (key, stored value) in the partitions keyspace."""
    decode, size = layout.codec.decode, layout.size  # type: ignore[union-attr]
    for key, value in rows:
        try:
            if value:
                partition = Partition(table, decode(key[size:]), *decode_partition_value(value))
            else:
                partition = Partition(table, decode(key[size:]))
        except DECODE_ERRORS as exc:
            raise damaged(PARTITIONS, key, f"a partition of {table.qualified_name}", exc) from None
        yield partition


def _get_one(
    store: Store, table: TableDefinition, layout: TableLayout, values: tuple[Any, ...], path: AccessPath
) -> Iterator[Partition]:
    """The partition with these values, if it exists: one point read (a one-Get plan)."""
    stats = path.stats
    stats.gets += 1
    key = layout.key(values)
    value = store.get(PARTITIONS, key)
    if value is not None:
        stats.keys_examined += 1
        stats.keys_returned += 1
        yield from _from_rows(table, layout, [(key, value)])


def _from_index(
    store: Store,
    table: TableDefinition,
    layout: TableLayout,
    index: IndexLayout,
    plan: FilterPlan,
    path: AccessPath,
) -> Iterator[Partition]:
    """Partitions from the index entries a plan selects, in index key order."""
    values_of = index.values
    rows = execute(plan, store, INDEXES, index.columns, prefix=index.prefix, stats=path.stats)
    for key, value in rows:
        try:
            values = values_of(key)
            if value == COVERED:
                partition = Partition(table, values)
            elif value[:1] == COVERED:
                partition = Partition(table, values, *decode_partition_value(value[1:]))
            else:
                partition = None
        except DECODE_ERRORS as exc:
            raise damaged(INDEXES, key, f"an index entry of {table.qualified_name}", exc) from None
        if partition is None:
            row_key = layout.key(values)
            raw = store.get(PARTITIONS, row_key)
            if raw is None:
                continue
            partition = next(_from_rows(table, layout, [(row_key, raw)]))
        yield partition
