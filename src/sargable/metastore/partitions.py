"""Partitions: typed values from what callers give, and the partition rows with their index entries.

A partition row's key is the table prefix plus the order-preserving encoding of its values (seed 000); its value is
empty for the common case (default location, no parameters). Listings run a chosen access path (`access`): the
primary key order or a secondary index, and come back in primary key order either way. A table without partition
keys has no partition rows (as in Hive): its listings are empty, and its files belong to no partition
(`file_partition_values`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain, repeat
from operator import itemgetter
from typing import Any

from sargable.errors import AlreadyExistsError, MetastoreError, NoSuchObjectError, SargableError, TypeCoercionError
from sargable.keys import TupleCodec
from sargable.metastore import colstats, files
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
from sargable.plan import FilterPlan, execute_blocks, execute_pages
from sargable.store import Store
from sargable.store.base import MAX_PAGE
from sargable.store.blocks import RowBlock, split
from sargable.types import convert

BATCH = 2000
"""Partition keys looked up per `multi_get`."""
BATCH_MIN = 256
"""Pages of at least this many keys are decoded at once (`sargable.keycolumns`, whose numpy set-up costs some tens of
microseconds a page); shorter ones key by key."""

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


def file_partition_values(table: TableDefinition, spec: Any) -> tuple[Any, ...]:
    """The values of the partition a file (or a replaced partition) belongs to, as `partition_values`; for a table
    without partition keys the empty tuple, given as None, an empty dict, list or tuple or an empty name."""
    if table.partition_keys:
        return partition_values(table, spec)
    if spec is None or (isinstance(spec, (Mapping, Sequence)) and len(spec) == 0):
        return ()
    raise MetastoreError(
        f"table {table.qualified_name} has no partition keys: its files belong to no partition, got {spec!r}"
    )


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
    """Delete partitions with their index entries, file entries and column statistics; returns the totals of the
    files deleted."""
    deleted = NO_CHANGE
    for vals in values:
        key = encode_key(table, vals)
        store.delete(PARTITIONS, key)
        colstats.forget_partition(store, table, key)
        for index_key in index_keys(table, vals):
            store.delete(INDEXES, index_key)
        deleted = plus(deleted, files.delete_in(store, table, vals))
    return deleted


# ------------------------------------------------------------------------------------------------------- reads


class Page:
    """A page of partitions as the store returned them: their keys (of the primary keyspace or an index) and stored
    values (location, parameters and Hive fields, empty for the common case), decoded on demand: as Python rows (`rows`,
    `partitions`) with the keys decoded a page at a time (`sargable.keycolumns`), or as Arrow columns
    (`sargable.metastore.columnar`). The keys are a list, or concatenated with their lengths (a store's `RowBlock`),
    whichever the store gave."""

    __slots__ = ("_joined", "_keys", "_stored", "_values", "codec", "keyspace", "offset", "order", "table")

    def __init__(
        self,
        table: TableDefinition,
        keys: Sequence[bytes] | None,
        stored: Sequence[bytes] | None,
        codec: TupleCodec,
        offset: int,
        order: list[int] | None = None,
        keyspace: str = PARTITIONS,
        values: list[tuple[Any, ...]] | None = None,
        joined: tuple[bytes, Any] | None = None,
    ) -> None:
        self.table = table
        self._keys = keys
        self._joined = joined
        """The keys concatenated and each one's length (a list, or a numpy array for a long block), when the store
        gave them so."""
        self._stored = stored
        """Each partition's stored value (`encode_partition_value`); None when every one is empty."""
        self.codec = codec
        self.offset = offset
        """Where each key's encoded tuple starts (after the table's or index's prefix)."""
        self.order = order
        """For index keys: the key field holding each partition key, in partition-key order (None: the same order)."""
        self.keyspace = keyspace
        self._values = values

    @classmethod
    def of_block(
        cls,
        table: TableDefinition,
        block: RowBlock,
        stored: Sequence[bytes] | None,
        codec: TupleCodec,
        offset: int,
        order: list[int] | None = None,
        keyspace: str = PARTITIONS,
    ) -> Page:
        """The page of a block's keys, with these stored values."""
        return cls(table, None, stored, codec, offset, order, keyspace, joined=(block.keys, block.key_lengths))

    def __len__(self) -> int:
        return len(self._keys) if self._keys is not None else len(self._joined[1])  # type: ignore[index]

    @property
    def keys(self) -> Sequence[bytes]:
        """Each partition's key."""
        if self._keys is None:
            assert self._joined is not None
            self._keys = split(*self._joined)
        return self._keys

    def last_key(self) -> bytes:
        """The page's last key (without splitting a block's keys)."""
        if self._keys is not None:
            return self._keys[-1]
        data, lengths = self._joined  # type: ignore[misc]
        return data[len(data) - int(lengths[-1]) :]

    @property
    def stored(self) -> Sequence[bytes]:
        """Each partition's stored value (`encode_partition_value`)."""
        return [b""] * len(self) if self._stored is None else self._stored

    def joined(self) -> tuple[bytes, Any]:
        """The keys concatenated and each one's length (`sargable.keycolumns.joined`)."""
        if self._joined is None:
            from sargable.keycolumns import joined  # numpy: loaded on the first page decoded at once, not on import

            self._joined = joined(self.keys)
        return self._joined

    def head(self, count: int) -> Page:
        """The page's first `count` partitions."""
        values = None if self._values is None else self._values[:count]
        stored = None if self._stored is None else self._stored[:count]
        keys = None if self._keys is None else self._keys[:count]
        joined = None
        if self._joined is not None:
            data, lengths = self._joined
            joined = (data[: int(sum(lengths[:count]))], lengths[:count])
        return Page(self.table, keys, stored, self.codec, self.offset, self.order, self.keyspace, values, joined)

    @property
    def decoded_values(self) -> list[tuple[Any, ...]] | None:
        """The values when they are decoded already (None: only the keys are)."""
        return self._values

    def values(self) -> list[tuple[Any, ...]]:
        """Each partition's typed values, in partition-key order."""
        if self._values is None:
            self._values = decoded_values(self)
        return self._values

    def explicit(self) -> list[tuple[str | None, dict[str, str], HivePartition | None]] | None:
        """Each partition's stored value decoded: (location, parameters, Hive fields), None and empty where it has
        none; None when no partition of the page has any (the common case)."""
        stored = self._stored
        if stored is None or not any(stored):
            return None
        out = []
        for i, value in enumerate(stored):
            try:
                out.append(decode_partition_value(value))
            except DECODE_ERRORS as exc:
                raise damaged(self.keyspace, self.keys[i], f"a partition of {self.table.qualified_name}", exc) from None
        return out

    def rows(self) -> list[tuple[tuple[Any, ...], str | None, dict[str, str] | None]]:
        """`(values, location, parameters)` of each partition; location and parameters None where there are none
        (the default location is the table location plus the partition name)."""
        explicit = self.explicit()
        if explicit is None:
            return [(values, None, None) for values in self.values()]
        return [(values, e[0], e[1] or None) for values, e in zip(self.values(), explicit, strict=True)]

    def partitions(self) -> list[Partition]:
        explicit, table = self.explicit(), self.table
        if explicit is None:
            return list(map(Partition, repeat(table), self.values()))
        return [Partition(table, values, *e) for values, e in zip(self.values(), explicit, strict=True)]


def coalesced(pages: Iterable[Page], rows: int) -> Iterator[Page]:
    """Consecutive pages of one listing joined into pages of at least `rows` partitions (the last may hold fewer):
    for consumers that pay a cost per page (Arrow record batches)."""
    held: list[Page] = []
    count = 0
    for page in pages:
        held.append(page)
        count += len(page)
        if count >= rows:
            yield _joined(held)
            held, count = [], 0
    if held:
        yield _joined(held)


def _joined(pages: list[Page]) -> Page:
    """One page of several pages of one listing (same key schema), in their order."""
    if len(pages) == 1:
        return pages[0]
    first = pages[0]
    decoded = any(page.decoded_values is not None for page in pages)
    values = [row for page in pages for row in page.values()] if decoded else None
    stored = None
    if any(page._stored is not None for page in pages):
        stored = [value for page in pages for value in page.stored]
    if all(page._keys is None for page in pages):
        parts = [page.joined() for page in pages]
        if any(hasattr(lengths, "dtype") for _, lengths in parts):
            import numpy as np  # a long block's lengths are a numpy array: numpy is loaded already

            lengths: Any = np.concatenate([lengths for _, lengths in parts])
        else:
            lengths = [n for _, page_lengths in parts for n in page_lengths]
        joined = (b"".join(data for data, _ in parts), lengths)
        return Page(first.table, None, stored, first.codec, first.offset, first.order, first.keyspace, values, joined)
    keys = [key for page in pages for key in page.keys]
    return Page(first.table, keys, stored, first.codec, first.offset, first.order, first.keyspace, values)


def decoded_values(page: Page) -> list[tuple[Any, ...]]:
    """The typed values of a page's keys (a long or joined page decoded at once); a key that doesn't decode is a
    DamagedMetastoreError naming it."""
    codec, offset, order = page.codec, page.offset, page.order
    try:
        if len(page) >= BATCH_MIN:
            from sargable.keycolumns import decode_joined_rows  # numpy: loaded on the first page that big

            return decode_joined_rows(*page.joined(), codec, offset, order)
        decode = codec.decode
        if order is None:
            return [decode(key[offset:]) for key in page.keys]
        return [tuple(row[i] for i in order) for row in (decode(key[offset:]) for key in page.keys)]
    except DECODE_ERRORS:
        for key in page.keys:
            try:
                codec.decode(key[offset:])
            except DECODE_ERRORS as exc:
                raise damaged(page.keyspace, key, f"a partition key of {page.table.qualified_name}", exc) from None
        raise


def count(store: Store, table: TableDefinition) -> int:
    return store.count(PARTITIONS, *key_range(layout_of(table).prefix))


def _primary_page(table: TableDefinition, layout: TableLayout, rows: list[tuple[bytes, bytes]]) -> Page:
    assert layout.codec is not None
    keys, stored = zip(*rows) if rows else ((), ())
    return Page(table, keys, stored, layout.codec, layout.size)


def pages_all(store: Store, table: TableDefinition) -> Iterator[Page]:
    """Every partition of the table, in key order, a store page at a time."""
    layout = layout_of(table)
    if layout.codec is None:
        return
    for block in store.scan_blocks(PARTITIONS, *key_range(layout.prefix), uniform=b""):
        stored = block.value_list() if block.values else None
        yield Page.of_block(table, block, stored, layout.codec, layout.size)


def scan_all(store: Store, table: TableDefinition) -> Iterator[Partition]:
    """Every partition of the table, in key order."""
    return chain.from_iterable(page.partitions() for page in pages_all(store, table))


def by_names(store: Store, table: TableDefinition, names: Iterable[Any]) -> list[Partition]:
    """The partitions with these Hive names (or specs) that exist, in key order."""
    return [part for page in pages_by_names(store, table, names) for part in page.partitions()]


def pages_by_names(store: Store, table: TableDefinition, names: Iterable[Any]) -> list[Page]:
    """The partitions with these Hive names (or specs) that exist, in key order, a page per `BATCH` names."""
    layout = layout_of(table)
    wanted = sorted({encode_key(table, partition_values(table, n), layout) for n in names})
    out: list[Page] = []
    for start in range(0, len(wanted), BATCH):
        batch = wanted[start : start + BATCH]
        found = store.multi_get(PARTITIONS, batch)
        out.append(_primary_page(table, layout, [(k, found[k]) for k in batch if k in found]))
    return out


def run(store: Store, table: TableDefinition, path: AccessPath) -> Iterator[Partition]:
    """The partitions an access path selects, in primary key order."""
    return chain.from_iterable(page.partitions() for page in run_pages(store, table, path))


def run_pages(store: Store, table: TableDefinition, path: AccessPath) -> Iterator[Page]:
    """The partitions an access path selects, in primary key order, a page at a time (none of a table without
    partition keys)."""
    layout = layout_of(table)
    if layout.codec is None:
        return
    scans = path.plan.scans
    if path.index is None and len(scans) == 1 and scans[0].is_get and scans[0].key_filter is None:
        yield from _get_one(store, table, layout, scans[0].start.values, path)  # type: ignore[union-attr]
        return
    if path.index is None:
        columns = list(table.partition_keys)
        for rows in execute_pages(path.plan, store, PARTITIONS, columns, prefix=path.prefix, stats=path.stats):
            yield _primary_page(table, layout, rows)
        return
    index = layout.indexes[path.index]
    if path.groups is not None and len(path.groups) == 1:
        yield from _from_index(store, table, layout, index, path.plan, path)
        return
    codec = layout.codec
    assert codec is not None
    groups = [path.plan] if path.groups is None else path.groups
    found = [
        (layout.key(values), values, stored)
        for group in groups
        for page in _from_index(store, table, layout, index, group, path)
        for values, stored in zip(page.values(), page.stored, strict=True)
    ]
    found.sort(key=itemgetter(0))
    for start in range(0, len(found), MAX_PAGE):
        chunk = found[start : start + MAX_PAGE]
        keys = [key for key, _, _ in chunk]
        yield Page(table, keys, [s for _, _, s in chunk], codec, layout.size, values=[v for _, v, _ in chunk])


def _get_one(
    store: Store, table: TableDefinition, layout: TableLayout, values: tuple[Any, ...], path: AccessPath
) -> Iterator[Page]:
    """The partition with these values, if it exists: one point read (a one-Get plan)."""
    stats = path.stats
    stats.gets += 1
    key = layout.key(values)
    value = store.get(PARTITIONS, key)
    if value is not None:
        stats.keys_examined += 1
        stats.keys_returned += 1
        yield _primary_page(table, layout, [(key, value)])


def _from_index(
    store: Store,
    table: TableDefinition,
    layout: TableLayout,
    index: IndexLayout,
    plan: FilterPlan,
    path: AccessPath,
) -> Iterator[Page]:
    """Partitions from the index entries a plan selects, in index key order, a page at a time. An entry holds the
    partition row's value after the COVERED marker; one written without it is looked up in the partitions. Values
    that concatenate to COVERED once per entry are each COVERED (no stored value is all COVERED bytes), so the store
    need not return their lengths (`uniform`)."""
    position = index.position
    order = [*range(1, position + 1), 0, *range(position + 1, len(index.columns))]
    blocks = execute_blocks(plan, store, INDEXES, index.columns, prefix=index.prefix, stats=path.stats, uniform=COVERED)
    for block in blocks:
        if block.all_values(COVERED):
            yield Page.of_block(table, block, None, index.codec, index.size, order, INDEXES)
            continue
        rows = block.rows()
        keys = [row[0] for row in rows]
        entries = [row[1] for row in rows]
        stored = [value[1:] for value in entries]
        page = Page(table, keys, stored, index.codec, index.size, order, INDEXES)
        if all(value[:1] == COVERED for value in entries):
            yield page
            continue
        kept_values, kept_keys, kept_stored = [], [], []
        legacy = {}
        for i, (_, value) in enumerate(rows):
            if value[:1] != COVERED:
                legacy[i] = layout.key(page.values()[i])
        found = store.multi_get(PARTITIONS, list(legacy.values())) if legacy else {}
        for i, values in enumerate(page.values()):
            if i in legacy:
                raw = found.get(legacy[i])
                if raw is None:
                    continue
                stored[i] = raw
            kept_values.append(values)
            kept_keys.append(keys[i])
            kept_stored.append(stored[i])
        if kept_values:
            yield Page(table, kept_keys, kept_stored, index.codec, index.size, order, INDEXES, kept_values)
