"""One atomic change of a table's files: add partitions and files, remove files, replace partitions' files.

`prepare` validates and encodes everything before the transaction (so bad input writes nothing and holds no lock);
`apply` runs inside the transaction, the table's row locked, and returns a `CommitResult`. Removing a file the table
no longer lists is a `CommitConflictError` (another commit removed it: the optimistic check of a rewrite, which
reads files and then replaces exactly those), and every removed file gets a tombstone (`tombstones`).

A table without partition keys commits the same way: its files belong to no partition (their key is the table
prefix and the path, `files.file_key` of the empty tuple), no partition row is written, and
`replace_partitions=[{}]` (the empty spec standing for the whole table) drops all its files.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sargable.errors import AlreadyExistsError, CommitConflictError, MetastoreError
from sargable.metastore import blockstate, files, partitions, tombstones, totals
from sargable.metastore.catalog import bump
from sargable.metastore.filecodec import encode_file
from sargable.metastore.records import TableDefinition, TableStats
from sargable.metastore.schema import FILE_PATHS, FILES, keeps_blocks
from sargable.stats import FileStats
from sargable.store import Store


@dataclass(frozen=True)
class CommitResult:
    """What one commit did: the table's new version and the partitions and files it added or removed."""

    version: int
    partitions_added: int
    files_added: int
    files_removed: int


@dataclass(frozen=True)
class Prepared:
    """A commit validated against a table definition, ready to apply."""

    new_partitions: list[tuple[Any, ...]]
    replaced: list[tuple[Any, ...]]
    added: list[tuple[tuple[Any, ...], FileStats, bytes]]
    """(partition values, file, its stored entry) of each file added."""
    removed: list[str]


def prepare(
    table: TableDefinition,
    add_partitions: Iterable[Any],
    add_files: Iterable[FileStats],
    remove_files: Iterable[str],
    replace_partitions: Iterable[Any],
) -> Prepared:
    """Validate and encode a commit's partitions and files against the table's definition; file paths are stored in
    their canonical form (`files.file_path`)."""
    new_partitions = [partitions.partition_values(table, spec) for spec in add_partitions]
    replaced = [partitions.file_partition_values(table, spec) for spec in replace_partitions]
    added = []
    base = files.file_base(table)
    for file in add_files:
        if not isinstance(file, FileStats):
            raise MetastoreError(f"add_files takes FileStats records, got {type(file).__name__}")
        path = files.file_path(file.path, table, base)
        if path != file.path:
            file = dataclasses.replace(file, path=path)
        values = partitions.file_partition_values(table, file.partition if file.partition is not None else {})
        added.append((values, file, encode_file(file, table)))
    removed = []
    for path in remove_files:
        if not isinstance(path, str) or not path:
            raise MetastoreError(f"remove_files takes file paths, got {path!r}")
        removed.append(path)
    return Prepared(new_partitions, replaced, added, list(dict.fromkeys(removed)))


def _keep_blocks(
    store: Store, table: TableDefinition, removed: list[bytes], added: list[tuple[bytes, bytes]]
) -> None:
    """The statistics blocks' share of a commit: dead marks, pending marks or block rows, a compaction when due."""
    blockstate.mark_dead(store, table, removed)
    due = not blockstate.pend(store, table, [key for key, _ in added])
    if due or blockstate.compaction_due(store, table):
        from sargable.metastore import statblocks  # pyarrow: loaded only when blocks are written

        if due:
            statblocks.added(store, table, added)
        if blockstate.compaction_due(store, table):
            statblocks.compact(store, table)


def apply(store: Store, table: TableDefinition, change: Prepared) -> CommitResult:
    """Write a prepared commit (inside a transaction, the table's row locked); bumps the table's version.

    A table that keeps statistics blocks (`statblocks`) gets the added files' rows and the removed files' dead
    marks in the same transaction; a table listing no file starts keeping them."""
    blocks = (change.added or change.removed or change.replaced) and (
        keeps_blocks(store, table.table_id) or not files.lists_files(store, table)
    )
    if blocks and not keeps_blocks(store, table.table_id):
        blockstate.start(store, table)
    dropped = totals.NO_CHANGE
    for values in change.replaced:
        dropped = totals.plus(dropped, files.delete_in(store, table, values))
    removed = []
    removed_keys = []
    for path in change.removed:
        path_key, file_key = files.find_path(store, table, path)
        value = None if file_key is None else store.get(FILES, file_key)
        if file_key is None or value is None:
            raise CommitConflictError(
                f"file {path!r} is not part of {table.qualified_name}: another commit removed it (or it never was); "
                "nothing was committed"
            )
        stored, rows, size = files.header(table, file_key, value)
        removed.append(stored)
        removed_keys.append(file_key)
        dropped = totals.plus(dropped, TableStats(0, 1, size, rows))
        store.delete(FILES, file_key)
        store.delete(FILE_PATHS, path_key)
    partitions_added = 0
    if table.partition_keys:
        partitions_added = partitions.insert(
            store,
            table,
            [*change.new_partitions, *change.replaced, *(v for v, _, _ in change.added)],
            None,
            if_not_exists=True,
        )
    path_keys = [files.path_key(table, f.path) for _, f, _ in change.added]
    if len(set(path_keys)) != len(path_keys):
        raise AlreadyExistsError("the same file path is given twice in one commit")
    found = store.multi_get(FILE_PATHS, path_keys) if path_keys else {}
    clash = [f.path for (_, f, _), k in zip(change.added, path_keys, strict=True) if found.get(k) is not None]
    if clash:
        raise AlreadyExistsError(f"file {clash[0]!r} is already part of {table.qualified_name}")
    file_rows = [(files.file_key(table, values, f.path), blob) for values, f, blob in change.added]
    store.put_many(FILES, file_rows)
    if blocks:
        _keep_blocks(store, table, removed_keys, file_rows)
    store.put_many(FILE_PATHS, [(pk, fk) for pk, (fk, _) in zip(path_keys, file_rows, strict=True)])
    added = TableStats(
        partitions_added,
        len(change.added),
        sum(f.size_bytes for _, f, _ in change.added),
        sum(f.row_count for _, f, _ in change.added),
    )
    totals.change(store, table, totals.minus(added, dropped))
    new = bump(store, table)
    tombstones.put(store, table, removed, time.time(), new.version)
    return CommitResult(
        version=new.version,
        partitions_added=partitions_added,
        files_added=len(change.added),
        files_removed=dropped.files,
    )
