"""`vacuum`: list, and on request delete, the garbage of sargable's own writes to a table: files that failed or
killed writes left, and files commits removed whose retention has passed. Needs no Spark.

Nothing that isn't garbage is ever deleted, whoever moved what. Garbage is never found by walking the table's
folder for files no table lists: it starts from what the metastore says sargable wrote (the rule is in
`docs/reliability.md`):

- the files in the staging folder (`_sargable_staging/<write id>/`) of each unfinished write of the table that was
  begun for the location the table has now, and the final paths such a write recorded before moving its files
  into the table (`sargable.metastore.intents`); on an object store, where writes stage nothing and put each file
  where it stays, the recorded paths and the files whose names carry such a write's id (`part-<write id>-...`,
  `sargable.fs.direct_name`), found with one listing of the location (shared with the unlisted report);
- the files commits removed from the table (their tombstones, `sargable.metastore.tombstones`): those removed less
  than the table's retention ago are reported as kept, with the time they have left.

Of those, the garbage is every regular file that no table lists under any form of its path (asked again right before
each delete), that does not lie under the location of another table, is not the metastore or one of its side files,
and has not changed for `older_than` seconds (the later of modification and status-change time, so a file that a
writer has just renamed into place is young). A symlink is reported, never followed, never deleted. Any other file
under the location (one that was there before the location pointed at its folder, one another program put there,
one named like sargable's files) is foreign: vacuum does not list it.

After deleting, the folders of old unfinished writes are removed if empty (`rmdir` only), and the metastore forgets
what is gone: tombstones of removed files no longer on disk, recorded paths that are gone or listed, and old writes
with nothing left (on an object store, no file named by the write left either).

`expire_removed` deletes only the files commits removed whose retention has passed (what `optimize` runs after its
commit), whatever their age on disk: a tombstone proves the file was committed, so no write is still making it.

Deleting goes through `sargable.deletion`, which re-checks each file immediately before deleting it.

Apart from the garbage, vacuum reports the table's unlisted files (`sargable.unlisted`): what a failed or refused
engine write (a Spark SQL INSERT through `sargable serve`) left in folders no partition lists, older than the
table's retention. Those are found by walking the location, and never deleted, with or without `dry_run`: sargable
did not write them. Tables made through the server (`files_from_folders`) are vacuumed as any other: their garbage
is what sargable's own writes to them left, by the same rules.
"""

from __future__ import annotations

import dataclasses
import posixpath
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sargable.deletion import Deleter
from sargable.errors import PathError, SargableError
from sargable.fs import FILE, STAGING_DIR, SYMLINK, direct_write_id
from sargable.metastore import RETENTION_PROPERTY, Metastore, Table
from sargable.metastore.intents import WriteIntent
from sargable.paths import canonical_location, is_within, join_path, stored_forms
from sargable.unlisted import UnlistedReport, find_unlisted


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
    unlisted: UnlistedReport = field(default_factory=UnlistedReport)
    """The files under the location in folders no partition lists, older than the table's retention (what failed or
    refused engine writes leave, `sargable.unlisted`): reported, never deleted."""


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


def vacuum(
    ms: Metastore,
    database: str,
    table: str,
    *,
    dry_run: bool = True,
    older_than: float = 0.0,
    unlisted: bool = True,
    progress: Callable[[int], None] | None = None,
) -> VacuumResult:
    """Find the table's garbage files (see the module docstring) and, unless `dry_run`, delete them; with
    `unlisted`, also report (never delete) the files in folders no partition lists (`sargable.unlisted`), older
    than the table's retention or `older_than` if longer, calling `progress` with the entries walked so far.

    `older_than` (seconds) spares files that changed more recently, so a write still in progress keeps its files.
    """
    if isinstance(older_than, bool) or not isinstance(older_than, (int, float)) or not older_than >= 0:
        raise SargableError(f"older_than must be a non-negative number of seconds, got {older_than!r}")
    with ms.snapshot():
        handle = ms.table(database, table)
        tbl = handle.definition
        listed = [f.path for f in handle.iter_files(stats=False)]
        writes, recorded = handle.write_intents()
        removed = handle.tombstones()
    deleter = Deleter(ms, tbl)
    location = deleter.location
    known: set[str] = set()
    for path in listed:
        known |= stored_forms(path)
    writes = [w for w in writes if _canonical([w.location]) == [location]]
    live = {w.write_id for w in writes}
    cutoff = time.time() - older_than
    candidates = {form for path, write_id in recorded.items() if write_id in live for form in stored_forms(path)}
    candidates |= {form for t in removed for form in stored_forms(t.path)}
    candidates = {path for path in candidates if is_within(path, location)}
    garbage: list[str] = []
    kept: list[tuple[str, str]] = []
    listing = None
    if deleter.fs.object_store and live:  # files written where they stay: found by the write id in their names
        listing = list(deleter.fs.walk(location))
        entries = {
            e.path: e for e in listing if e.path in candidates or direct_write_id(posixpath.basename(e.path)) in live
        }
    else:
        entries = {path: entry for path in sorted(candidates) if (entry := deleter.fs.info(path)) is not None}
    for write in writes if not deleter.fs.object_store else ():
        entries.update((e.path, e) for e in deleter.fs.walk(join_path(location, STAGING_DIR, write.write_id)))
    for entry in entries.values():
        if entry.kind == SYMLINK:
            kept.append((entry.path, "a symlink: not followed, not deleted"))
            continue
        if entry.kind != FILE or entry.path in known or entry.changed > cutoff or not is_within(entry.path, location):
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
        _forget_gone(ms.table(database, table), deleter)
        left = set(entries) - set(deleted) - known if deleter.fs.object_store else set()
        named = {direct_write_id(posixpath.basename(path)) for path in left}
        old = [w for w in writes if w.started <= cutoff and w.write_id not in named]
        present = None if listing is None else {e.path for e in listing} - set(deleted)
        _forget_written(ms.table(database, table), deleter, old, recorded, known, present)
    report = UnlistedReport()
    if unlisted:
        seen = candidates | set(entries) | {path for path, _ in kept}
        min_age = max(handle.retention_seconds, float(older_than))
        report = find_unlisted(ms, tbl, min_age=min_age, skip=seen, progress=progress, listing=listing)
    return VacuumResult(tbl.qualified_name, tuple(garbage), tuple(deleted), tuple(kept), report)


def _forget_written(
    table: Table,
    deleter: Deleter,
    old: list[WriteIntent],
    recorded: dict[str, str],
    known: set[str],
    present: set[str] | None,
) -> None:
    """Remove the empty staging folders of old unfinished writes; forget the recorded paths whose files are gone or
    listed, and the old writes with nothing left on disk (`old` holds none with a file named by it left on an object
    store). `present` is what a listing of the location found, if one was made (the paths below the location are
    looked up there, not asked for one by one); a recorded path outside the location is forgotten."""
    for write in old:
        deleter.remove_empty_folders(join_path(deleter.location, STAGING_DIR, write.write_id))
    if old:
        deleter.remove_folder(join_path(deleter.location, STAGING_DIR))

    def exists(path: str) -> bool:
        if not is_within(path, deleter.location):  # never the table's garbage: nothing to keep it for
            return False
        return path in present if present is not None else deleter.fs.file_entry(path) is not None

    gone = [path for path in recorded if path in known or not any(exists(form) for form in stored_forms(path))]
    left = {write_id for path, write_id in recorded.items() if path not in gone}
    ended = [
        w.write_id
        for w in old
        if w.write_id not in left
        and (deleter.fs.object_store or deleter.fs.info(join_path(deleter.location, STAGING_DIR, w.write_id)) is None)
    ]
    table.forget_written(gone, ended)


def purge(ms: Metastore, database: str, table: str) -> VacuumResult:
    """Drop a table and delete the files sargable wrote for it (its committed files, and what its failed writes
    left), through `sargable.deletion`: what `sargable demo --rebuild` does to its own tables. Its committed files
    are first removed by a commit (tombstones) with the retention set to 0; files sargable did not write stay, and
    so do folders that are not empty."""
    handle = ms.table(database, table).set_properties({RETENTION_PROPERTY: "0"})
    paths = [f.path for f in handle.files(stats=False)]
    if paths:
        handle.commit(remove_files=paths)
    result = vacuum(ms, database, table, dry_run=False, unlisted=False)
    deleter = Deleter(ms, handle.definition)
    ms.drop_table(database, table)
    left = deleter.remove_empty_folders(deleter.location)
    return dataclasses.replace(result, kept=(*result.kept, *left))
