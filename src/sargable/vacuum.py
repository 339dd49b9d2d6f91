"""`vacuum`: list, and on request delete, the files under a table's location that no table lists (left by failed
or killed writes, or replaced by an overwrite whose cleanup failed). Needs no Spark.

The garbage set of a table is every regular file below its location that
- is reached without passing through a symlink (a symlink is reported, never followed, never deleted);
- is not hidden (Spark's rule: a name starting with `.`, or with `_` and holding no `=`, and anything below such a
  folder), except inside the writers' staging folder `_sargable_staging`, which is sargable's own;
- is not listed by the table under any form of its path (entries of earlier versions included), nor by any other
  table (asked again right before each delete), and does not lie under the location of another table nested in
  this one's (or sharing it);
- is not the metastore or one of its side files;
- has not changed for `older_than` seconds (the later of modification and status-change time, so a file that a
  writer has just renamed into place is young);
- was not removed from the table by a commit (an optimize) less than the table's retention ago: such a file is
  reported as kept, with the time it has left (`sargable.metastore.tombstones`).

The staging folder's subfolders that had not changed for `older_than` seconds either are then removed if empty, and
the tombstones of removed files that are gone from disk are dropped.

`expire_removed` deletes only the files commits removed whose retention has passed (what `optimize` runs after its
commit), whatever their age on disk: a tombstone proves the file was committed, so no write is still making it.

Deleting goes through `sargable.deletion`, which re-checks each file immediately before deleting it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sargable.deletion import Deleter
from sargable.errors import PathError, SargableError
from sargable.fs import DIRECTORY, FILE, STAGING_DIR, SYMLINK, Entry, hidden
from sargable.metastore import Metastore, Table
from sargable.paths import canonical_location, is_within, join_path, relative_parts, stored_forms


def _canonical(locations: list[str]) -> list[str]:
    """The absolute ones of these locations, canonical (a relative one, stored by an earlier version, names no
    folder for certain and is skipped)."""
    out = []
    for location in locations:
        try:
            out.append(canonical_location(location, relative=False))
        except PathError:
            continue
    return out


@dataclass(frozen=True)
class VacuumResult:
    """What one vacuum found and did."""

    table: str
    garbage: tuple[str, ...]
    """The unreferenced files older than the cutoff (deleted unless this was a dry run)."""
    deleted: tuple[str, ...]
    """The files deleted (none in a dry run)."""
    kept: tuple[tuple[str, str], ...]
    """(path, reason) of what vacuum saw but leaves alone: symlinks, files another table owns, files removed by a
    commit within the table's retention, and garbage files whose delete was refused or failed."""


def _forget_gone(table: Table, deleter: Deleter) -> int:
    """Drop the tombstones whose file is gone from disk under every reading of its stored path."""
    gone = [t.path for t in table.tombstones() if all(deleter.fs.file_entry(f) is None for f in stored_forms(t.path))]
    return table.forget_tombstones(gone)


def expire_removed(ms: Metastore, database: str, table: str) -> VacuumResult:
    """Delete the files that commits removed from the table once its retention has passed, through
    `sargable.deletion`, and drop their tombstones; `garbage` lists the files past retention."""
    handle = ms.table(database, table)
    deleter = Deleter(ms, handle.definition)
    cutoff = time.time() - handle.retention_seconds
    expired = [path for t in handle.tombstones() if t.removed_at <= cutoff for path in sorted(stored_forms(t.path))]
    deleted: list[str] = []
    kept: list[tuple[str, str]] = []
    for path in expired:
        if deleter.fs.file_entry(path) is None:
            continue
        reason = deleter.delete(path)
        if reason is None:
            deleted.append(path)
        else:
            kept.append((path, reason))
    _forget_gone(handle, deleter)
    return VacuumResult(handle.qualified_name, tuple(expired), tuple(deleted), tuple(kept))


def vacuum(ms: Metastore, database: str, table: str, *, dry_run: bool = True, older_than: float = 0.0) -> VacuumResult:
    """Find the table's garbage files (see the module docstring) and, unless `dry_run`, delete them.

    `older_than` (seconds) spares files that changed more recently, so a write still in progress keeps its files.
    """
    if isinstance(older_than, bool) or not isinstance(older_than, (int, float)) or not older_than >= 0:
        raise SargableError(f"older_than must be a non-negative number of seconds, got {older_than!r}")
    with ms.snapshot():
        tbl = ms.get_table(database, table)
        if tbl.files_from_folders:
            raise SargableError(
                f"table {tbl.qualified_name} is filled by engines that don't register their files (it was made "
                "through the Hive metastore API): every data file would look unreferenced, so vacuum refuses it"
            )
        listed = [f.path for f in ms.iter_files(database, table, stats=False)]
        others = [loc for name, loc in ms.table_locations().items() if name != tbl.qualified_name]
    deleter = Deleter(ms, tbl)
    known: set[str] = set()
    for path in listed:
        known |= stored_forms(path)
    location = deleter.location
    foreign = [loc for loc in _canonical(others) if is_within(loc, location)]
    cutoff = time.time() - older_than

    def visible(entry: Entry) -> bool:
        parts = relative_parts(entry.path, location)
        if any(is_within(entry.path, loc) for loc in foreign):
            return False
        return parts[0] == STAGING_DIR or not any(hidden(part) for part in parts)

    staging = join_path(location, STAGING_DIR)
    top = None if deleter.fs.object_store else deleter.fs.info(staging)  # no folders to remove on a bucket
    old_folders = [staging] if top is not None and top.kind == DIRECTORY and top.changed <= cutoff else []
    garbage: list[str] = []
    kept: list[tuple[str, str]] = []
    for entry in deleter.fs.walk(location, visible):
        if not visible(entry):
            continue
        if entry.kind == DIRECTORY:
            if is_within(entry.path, staging) and entry.changed <= cutoff:
                old_folders.append(entry.path)
            continue
        if entry.kind == SYMLINK:
            kept.append((entry.path, "a symlink: not followed, not deleted"))
            continue
        if entry.kind != FILE or entry.path in known or entry.changed > cutoff:
            continue
        reason = deleter.refusal(entry.path)
        if reason is None:
            garbage.append(entry.path)
        else:
            kept.append((entry.path, reason))
    deleted: list[str] = []
    if not dry_run:
        for path in garbage:
            reason = deleter.delete(path)
            if reason is None:
                deleted.append(path)
            else:
                kept.append((path, reason))
        for folder in sorted(old_folders, key=lambda path: path.count("/"), reverse=True):
            deleter.remove_folder(folder)
        _forget_gone(ms.table(database, table), deleter)
    return VacuumResult(tbl.qualified_name, tuple(garbage), tuple(deleted), tuple(kept))
