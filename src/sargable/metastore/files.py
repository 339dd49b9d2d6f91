"""Data file entries: their keys (table id + partition values + path, and a path index), listings, deletions.

The files of many partitions are listed with one multi-range read of the store (`Store.scan_ranges`), one range
per partition, not one scan per partition.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from functools import lru_cache
from itertools import islice
from typing import Any

from sargable import keys
from sargable.errors import MetastoreError, PathError
from sargable.metastore import blockstate
from sargable.metastore.filecodec import EntryReader, decode_file, decode_header, decode_headers
from sargable.metastore.layout import layout_of, table_prefix
from sargable.metastore.records import Partition, TableDefinition, TableStats
from sargable.metastore.schema import DECODE_ERRORS, FILE_PATHS, FILES, damaged, keeps_blocks, key_range
from sargable.paths import canonical_file_path, canonical_location
from sargable.stats import FileStats, listed_files
from sargable.store import Store
from sargable.store.base import MAX_PAGE
from sargable.store.blocks import RowBlock
from sargable.types import STRING

DECODE_AT_ONCE = 256
"""Blocks of at least this many entries have their keys decoded at once (`sargable.keycolumns`, whose numpy set-up
costs some tens of microseconds); shorter ones key by key."""


def file_key(table: TableDefinition, values: tuple[Any, ...], path: str) -> bytes:
    layout = layout_of(table)
    return layout.prefix + layout.file_codec.encode([*values, path])


def file_range(table: TableDefinition, values: tuple[Any, ...]) -> tuple[bytes, bytes | None]:
    """The keys of one partition's file entries."""
    return file_ranges(table, [values])[0]


def file_ranges(table: TableDefinition, partitions: Iterable[Sequence[Any]]) -> list[tuple[bytes, bytes | None]]:
    """`file_range` of each partition's values, the table's key layout looked up once."""
    layout = layout_of(table)
    encode, prefix = layout.file_codec.encode, layout.prefix
    out = []
    for values in partitions:
        encoded = encode(list(values))
        out.append(keys.prefixed_range(prefix, encoded, keys.prefix_end(encoded)))
    return out


def path_key(table: TableDefinition, path: str) -> bytes:
    return table_prefix(table.table_id) + keys.encode([path], [STRING])


def file_base(table: TableDefinition) -> str | None:
    """What a relative file path of the table is taken below: its location (None for a relative one, stored by an
    earlier version, which names no folder for certain)."""
    try:
        return canonical_location(table.location, relative=False)
    except PathError:
        return None


def file_path(path: Any, table: TableDefinition, base: str | None) -> str:
    """The canonical form of a data file's path (`sargable.paths.canonical_file_path`: a relative path is taken
    below the table location, a `file:` URI becomes its path, `//` and `.` are dropped, `..` is refused), so that
    no file is listed under two spellings; `base` is `file_base(table)`."""
    if not isinstance(path, str) or not path:
        raise MetastoreError(f"a file needs a non-empty path, got {path!r}")
    try:
        return canonical_file_path(path, base)
    except PathError as exc:
        raise MetastoreError(f"{table.qualified_name}: {exc}") from None


def find_path(store: Store, table: TableDefinition, path: str) -> tuple[bytes, bytes | None]:
    """(path key, file key or None) of a file given as stored (an entry an earlier version wrote without
    canonicalizing it) or in a form that canonicalizes to the stored one."""
    key = path_key(table, path)
    found = store.get(FILE_PATHS, key)
    if found is None:
        try:
            canonical = file_path(path, table, file_base(table))
        except MetastoreError:
            return key, None
        if canonical != path:
            key = path_key(table, canonical)
            found = store.get(FILE_PATHS, key)
    return key, found


def header(table: TableDefinition, key: bytes, value: bytes) -> tuple[str, int, int]:
    """(path, rows, bytes) of a stored file entry (see `decode_header`); damage names the entry's key."""
    try:
        return decode_header(value)
    except DECODE_ERRORS as exc:
        raise damaged(FILES, key, f"a file of {table.qualified_name}", exc) from None


def check_stats(stats: Any) -> tuple[bool, frozenset[str] | None]:
    """(decode statistics at all, only these columns' or None for all) of a `stats` argument."""
    if isinstance(stats, bool):
        return stats, None
    if isinstance(stats, (str, bytes)) or not isinstance(stats, Collection):
        raise MetastoreError(f"stats must be True, False or a collection of column names, got {stats!r}")
    return True, frozenset(stats)


def iter_files(
    store: Store, table: TableDefinition, partitions: Iterable[Partition] | None, stats: bool | Collection[str]
) -> Iterator[FileStats]:
    """The files of the given partitions (all when None) in partition key order: one store read either way, decoded
    a block of entries at a time (`block_files`)."""
    decoded, only = check_stats(stats)
    layout = layout_of(table)
    if partitions is None:
        start, stop = key_range(layout.prefix)
        if store.blocks_of_long_values:
            blocks: Iterator[RowBlock] = iter(store.scan_blocks(FILES, start, stop))
        else:
            blocks = map(RowBlock.of_rows, store.scan_pages(FILES, start, stop))
    else:
        ranges = sorted(set(file_ranges(table, (p.values for p in partitions))), key=lambda r: r[0])
        rows = store.scan_ranges(FILES, ranges)
        blocks = map(RowBlock.of_rows, iter(lambda: list(islice(rows, MAX_PAGE)), []))
    for block in blocks:
        yield from block_files(table, block, decoded, only)


def block_files(
    table: TableDefinition, block: RowBlock, decoded: bool, only: frozenset[str] | None
) -> list[FileStats]:
    """The files of a block of file entries (see `check_stats` for `decoded` and `only`). The partition values are
    decoded from the keys at once for a long block, and the files of one partition share one dict of them; without
    statistics, each entry's head is matched in place in the block and the file built unchecked (what the match
    found is a path and two counts)."""
    try:
        specs = _partition_specs(table, block)
        if decoded:
            decode = EntryReader(table).decode
            return [decode(value, spec, only) for value, spec in zip(block.value_list(), specs, strict=True)]
        return listed_files(*decode_headers(block.values, block.value_lengths), specs)
    except DECODE_ERRORS as exc:
        raise _damaged_entry(table, block, decoded, only, exc) from None


def _partition_specs(table: TableDefinition, block: RowBlock) -> list[dict[str, Any]]:
    """Each entry's partition (name -> value), decoded from the keys (a long block's at once, its paths not)."""
    layout = layout_of(table)
    fields = len(layout.types)
    if not fields:
        return [{} for _ in range(len(block))]
    if len(block) >= DECODE_AT_ONCE:
        from sargable.keycolumns import decode_joined_columns  # numpy: loaded on the first block that long

        columns = decode_joined_columns(block.keys, block.key_lengths, layout.file_codec, layout.size, fields)
    else:
        decode, size = layout.file_codec.decode, layout.size
        rows = [decode(key[size:]) for key in block.key_list()]
        columns = [[row[i] for row in rows] for i in range(fields)]
    return list(map(_spec_maker(tuple(table.partition_key_names)), *columns))


@lru_cache(maxsize=256)
def _spec_maker(names: tuple[str, ...]) -> Callable[..., dict[str, Any]]:
    """A function of the partition values (positional) returning their dict: one dict display, several times
    cheaper than `dict(zip(names, values))` per file. The names stay in its namespace, out of its source."""
    arguments = ", ".join(f"v{i}" for i in range(len(names)))
    entries = ", ".join(f"k{i}: v{i}" for i in range(len(names)))
    namespace: dict[str, Any] = {f"k{i}": name for i, name in enumerate(names)}
    exec(f"def spec({arguments}):\n    return {{{entries}}}", namespace)  # the source holds generated names only
    return namespace["spec"]


def _damaged_entry(
    table: TableDefinition, block: RowBlock, decoded: bool, only: frozenset[str] | None, exc: BaseException
) -> Exception:
    """The error naming the first entry of a block that doesn't decode, each read alone (the block's own error, on
    its first key, if each does)."""
    layout = layout_of(table)
    decode, size = layout.file_codec.decode, layout.size
    names = table.partition_key_names
    for key, value in block.rows():
        try:
            partition = dict(zip(names, decode(key[size:])[:-1], strict=True))
            if decoded:
                decode_file(value, table, partition, only)
            else:
                FileStats(*decode_header(value), partition=partition)
        except DECODE_ERRORS as error:
            return damaged(FILES, key, f"a file of {table.qualified_name}", error)
    return damaged(FILES, block.key_list()[0], f"a file of {table.qualified_name}", exc)


def entries(store: Store, table: TableDefinition) -> Iterator[tuple[bytes, bytes]]:
    """(key, stored entry) of each of the table's files, in key order."""
    return store.scan(FILES, *key_range(layout_of(table).prefix))


def files_at(
    store: Store, table: TableDefinition, file_keys: Sequence[bytes], stats: bool | Collection[str]
) -> list[FileStats]:
    """The files of these keys (sorted) that the table lists, in key order: one multi-get (a key no longer listed,
    a file removed since, is left out). As `iter_files` for the candidates of `statblocks.candidates`."""
    decoded, only = check_stats(stats)
    layout = layout_of(table)
    found = store.multi_get(FILES, file_keys) if file_keys else {}
    decode, size = layout.file_codec.decode, layout.size
    names = table.partition_key_names
    out = []
    for key in file_keys:
        value = found.get(key)
        if value is None:
            continue
        try:
            partition = dict(zip(names, decode(key[size:])[:-1], strict=True))
            if decoded:
                out.append(decode_file(value, table, partition, only))
            else:
                path, row_count, size_bytes = decode_header(value)
                out.append(FileStats(path=path, row_count=row_count, size_bytes=size_bytes, partition=partition))
        except DECODE_ERRORS as exc:
            raise damaged(FILES, key, f"a file of {table.qualified_name}", exc) from None
    return out


def partition_of(table: TableDefinition, key: bytes) -> tuple[Any, ...]:
    """The partition values of a file key."""
    layout = layout_of(table)
    try:
        return tuple(layout.file_codec.decode(key[layout.size :])[:-1])
    except DECODE_ERRORS as exc:
        raise damaged(FILES, key, f"a file of {table.qualified_name}", exc) from None


def lists_files(store: Store, table: TableDefinition) -> bool:
    """Whether the table lists any file (one short scan)."""
    return next(iter(store.scan(FILES, *key_range(layout_of(table).prefix), limit=1)), None) is not None


def has_file(store: Store, table: TableDefinition, path: str) -> bool:
    """Whether the table lists this file, given as stored or in any form that canonicalizes to it."""
    return find_path(store, table, path)[1] is not None


def delete_in(store: Store, table: TableDefinition, values: tuple[Any, ...]) -> TableStats:
    """Delete the file entries of one partition (both keyspaces; their statistics blocks' rows marked dead); returns
    their count, bytes and rows."""
    start, stop = file_range(table, values)
    files = size = rows = 0
    removed = []
    for key, value in list(store.scan(FILES, start, stop)):
        path, row_count, size_bytes = header(table, key, value)
        store.delete(FILE_PATHS, path_key(table, path))
        removed.append(key)
        files, size, rows = files + 1, size + size_bytes, rows + row_count
    store.delete_range(FILES, start, stop)
    if removed and keeps_blocks(store, table.table_id):
        blockstate.mark_dead(store, table, removed)
    return TableStats(0, files, size, rows)
