"""The one place that deletes data files: every delete is checked, immediately before it, against each rule below.

A `Deleter` serves one table. It refuses the table outright when its location is unsafe: not absolute, a root, or
holding the metastore's files or the warehouse root (an existing one: the default warehouse, `./warehouse`, depends
on the current directory). It then deletes a file only when

1. the file is a regular file (not a symlink, device, ...) reached from the table's real location (symlinks
   resolved) without passing through a symlink: locally each folder is opened with `O_NOFOLLOW` relative to the one
   above and the file is unlinked relative to its folder, so a symlink swapped in after the checks is not followed;
2. it lies below that real location, and not below the location of another table nested inside it (tables may
   share a folder: each vacuum leaves the other's files alone);
3. it is not the metastore's database file nor one of its side files (`-wal`, `-shm`, `-journal`), by path or by
   identity (a hard link is the same file);
4. no table of the metastore lists it, under any spelling (`paths.spellings`): asked right before the delete;
5. no commit removed it from the table less than the table's retention ago (its tombstone, see
   `sargable.metastore.tombstones`): a reader of an older snapshot may still read it;
6. sargable wrote it, for this table at its current location: a commit of the table removed it (its tombstone), or
   an unfinished write of the table, begun for the location the table has now, recorded its path or staged it in
   its staging folder (`sargable.metastore.intents`). Any other file is foreign and never deleted, whatever its
   name or age: a file that was in the folder before the table's location pointed at it, or that another program
   put there. The table's current definition is read again for this check, so a location changed since the
   `Deleter` was made (an ALTER from another client) refuses every delete.

Empty folders are removed only with `rmdir` (never a recursive delete). Whatever is refused or fails is returned as
a reason, never raised, so callers (vacuum, a write's cleanup after its commit) report it.

On an object store (`s3a://`) rule 1 reads: the key is an object (one HEAD request), and the table's prefix is
compared by path components (`s3a://b/t` does not contain `s3a://b/t2/x`); there are no symlinks to swap in, and
no folders: a folder is implied by the keys below it, so removing one does nothing (a recursive delete of a prefix
could take an object written meanwhile; only single keys are deleted). Rule 6 reads: writes stage nothing there,
so a file an unfinished write made is one it recorded or one whose name carries its id (`part-<write id>-...`,
`sargable.fs.direct_name`); a key under `_sargable_staging/<write id>/` is foreign like any other.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager

from sargable.errors import DeletionRefusedError, PathError, SargableError
from sargable.fs import DIRECTORY, FILE, STAGING_DIR, FileSystem, direct_write_id
from sargable.metastore import Metastore, TableDefinition
from sargable.metastore.tombstones import retention_seconds
from sargable.paths import (
    canonical_file_path,
    canonical_location,
    is_local,
    is_within,
    join_path,
    parts_of,
    relative_parts,
    spellings,
)

_NOFOLLOW_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def _inside(path: str, locations: set[str]) -> bool:
    return any(is_within(path, location) for location in locations)


def _forms(path: str) -> set[str]:
    """A canonical path as written and, for a local one, with symlinks resolved."""
    return {path, os.path.realpath(path)} if is_local(path) else {path}


def _canonical(location: str) -> str | None:
    try:
        return canonical_location(location, relative=False)
    except PathError:
        return None


class Deleter:
    """Deletes files of one table, each only after every check of the module docstring."""

    def __init__(self, ms: Metastore, table: TableDefinition) -> None:
        self.ms = ms
        self.table = table
        name = table.qualified_name
        try:
            location = canonical_location(table.location, relative=False)
        except PathError as exc:
            raise DeletionRefusedError(f"table {name}: won't delete files in its location: {exc}") from None
        if not parts_of(location)[1]:
            raise DeletionRefusedError(f"table {name}: its location {location!r} is a root; won't delete files in it")
        self.fs = FileSystem.at(location)
        self.location = location
        self.real_location = os.path.realpath(location) if is_local(location) else location
        self._metastore_files = [os.path.abspath(path) for path in ms.store.files]
        protected = [(p, "the metastore") for p in self._metastore_files]
        if not is_local(ms.warehouse) or os.path.isdir(ms.warehouse):
            protected.append((ms.warehouse, "the warehouse root"))
        for path, what in protected:
            if any(is_within(p, mine) for p in _forms(path) for mine in _forms(location)):
                raise DeletionRefusedError(
                    f"table {name}: its location {location!r} holds {what} ({path}); won't delete files in it"
                )

    # ------------------------------------------------------------------------------------------ checks

    def _foreign_table(self, forms: set[str]) -> str | None:
        """The other table located inside this one's location (or at it) whose folder holds one of `forms` (a path
        as written and resolved), if any. (A table this one is nested in has no claim on its files.)"""
        mine = _forms(self.location) | {self.real_location}
        for other, location in self.ms.table_locations().items():
            if other == self.table.qualified_name:
                continue
            try:
                theirs = [t for t in _forms(canonical_location(location, relative=False)) if _inside(t, mine)]
            except PathError:
                continue
            if any(is_within(path, t) for path in forms for t in theirs):
                return other
        return None

    def _metastore_file(self, forms: set[str], st: os.stat_result | None) -> bool:
        for protected in self._metastore_files:
            if forms & _forms(protected):
                return True
            if st is not None:
                try:
                    other = os.stat(protected)
                except OSError:
                    continue
                if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                    return True
        return False

    def _refusal(self, path: str, real: str, st: os.stat_result | None) -> str | None:
        """Why `path` (real path `real`; its lstat `st` where local) must not be deleted, or None."""
        forms = {path, real}
        if self._metastore_file(forms, st):
            return "it is the metastore or one of its side files"
        try:
            foreign = self._foreign_table(forms)
            listed = self.ms.tables_listing(path)
            removed = self.ms.tombstones(self.table, spellings(path))
            retention = retention_seconds(self.table) if removed else 0.0
        except SargableError as exc:
            return f"can't ask the metastore about it: {exc}"
        if foreign is not None:
            return f"it lies under the location of table {foreign}"
        if listed:
            return f"table {', '.join(listed)} lists it"
        if not removed:
            return self._unclaimed(path)
        age = time.time() - max((t.removed_at for t in removed), default=0.0)
        if removed and age < retention:
            version = max(t.version for t in removed)
            return (
                f"version {version} of {self.table.qualified_name} removed it {age:,.0f} s ago; it stays for readers "
                f"of older snapshots until the table's retention ({retention:,.0f} s) has passed"
            )
        return None

    def _unclaimed(self, path: str) -> str | None:
        """Why no write of the table can have made `path` (rule 6 for a file no commit removed), or None."""
        try:
            current = self.ms.table_of_id(self.table.table_id)
            if current is None:
                return f"table {self.table.qualified_name} was dropped: nothing of it is sargable's garbage any more"
            if _canonical(current.location) != self.location:
                return (
                    f"the location of {current.qualified_name} moved to {current.location!r} since this delete was "
                    "planned"
                )
            parts = relative_parts(path, self.location)
            if self.fs.object_store:  # nothing is staged there: a write's file is written where it stays, named by it
                staged = direct_write_id(parts[-1])
            else:
                staged = parts[1] if len(parts) > 2 and parts[0] == STAGING_DIR else None
            intent = self.ms.write_intent(current, spellings(path), staged)
        except SargableError as exc:
            return f"can't ask the metastore about it: {exc}"
        if intent is None or _canonical(intent.location) != self.location:
            return (
                f"no write of {self.table.qualified_name} at {self.location} made it and no commit removed it: a "
                "file sargable did not write is never deleted"
            )
        return None

    def refusal(self, path: str) -> str | None:
        """Why `path` would not be deleted now, or None: every check of `delete`, without deleting (dry runs)."""
        return self._apply(path, delete=False)

    # ------------------------------------------------------------------------------------------ deleting

    def delete(self, path: str) -> str | None:
        """Delete one file (given in any form its table may have stored) after every check; None when it is gone,
        else why it was not deleted."""
        return self._apply(path, delete=True)

    def _apply(self, path: str, *, delete: bool) -> str | None:
        try:
            path = canonical_file_path(path)
            parts = relative_parts(path, self.location)
        except PathError as exc:
            return f"not under the table location {self.location}: {exc}"
        if not parts:
            return f"it is the table location {self.location} itself, not a file below it"
        if not self.fs.local:
            return self._apply_remote(path, delete)
        try:
            with _folder(self.real_location, parts[:-1]) as folder:
                try:
                    st = os.stat(parts[-1], dir_fd=folder, follow_symlinks=False)
                except FileNotFoundError:
                    return None if delete else "it does not exist"
                if not stat.S_ISREG(st.st_mode):
                    return "it is a symlink, not a regular file" if stat.S_ISLNK(st.st_mode) else "not a regular file"
                reason = self._refusal(path, join_path(self.real_location, *parts), st)
                if reason is not None or not delete:
                    return reason
                os.unlink(parts[-1], dir_fd=folder)
        except _Unreachable as exc:
            return str(exc)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"the delete failed: {exc}"
        return None

    def _apply_remote(self, path: str, delete: bool) -> str | None:
        try:
            info = self.fs.file_entry(path)
            if info is None:
                return None if delete else "it does not exist"
            if info.kind != FILE:
                return "not a regular file"
            reason = self._refusal(path, path, None)
            if reason is not None or not delete:
                return reason
            self.fs.fs.delete_file(self.fs.native(path))
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"the delete failed: {exc}"
        return None

    def clear(self, folder: str) -> list[tuple[str, str]]:
        """Delete every file below `folder` that passes the checks (found without following a symlink), then the
        folders left empty; returns the (path, reason) pairs of what is left."""
        if self.fs.info(folder) is None:
            return []
        left = []
        for entry in self.fs.walk(folder):
            if entry.kind != DIRECTORY:
                reason = self.delete(entry.path)
                if reason is not None:
                    left.append((entry.path, reason))
        return left + self.remove_empty_folders(folder)

    def remove_empty_folders(self, path: str) -> list[tuple[str, str]]:
        """Remove `path` (unless it is the table location) and the folders below it that are empty, deepest first,
        with `rmdir` only; returns the (folder, reason) pairs of those left (not empty, a symlink on the way, ...).
        On an object store there are no folders to remove (and no request is made)."""
        if self.fs.object_store or self.fs.info(path) is None:
            return []
        top = [] if path == self.location else [path]
        folders = [*top, *(e.path for e in self.fs.walk(path) if e.kind == DIRECTORY)]
        left = []
        for folder in sorted(folders, key=lambda p: len(parts_of(p)[1]), reverse=True):
            reason = self.remove_folder(folder)
            if reason is not None:
                left.append((folder, reason))
        return left

    def remove_folder(self, path: str) -> str | None:
        """Remove one folder if it is empty (`rmdir`, never through a symlink); None when it is gone, else why not."""
        try:
            parts = relative_parts(path, self.location)
        except PathError as exc:
            return str(exc)
        if not parts:
            return "it is the table location itself"
        if self.fs.object_store:
            return None
        try:
            if not self.fs.local:
                if self.fs.info(path) is not None:
                    if any(True for _ in self.fs.walk(path)):
                        return "not empty"
                    self.fs.fs.delete_dir(self.fs.native(path))
                return None
            with _folder(self.real_location, parts[:-1]) as folder:
                os.rmdir(parts[-1], dir_fd=folder)
        except _Unreachable as exc:
            return str(exc)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return "not empty" if exc.errno in (errno.ENOTEMPTY, errno.EEXIST) else f"can't remove it: {exc}"
        return None


class _Unreachable(Exception):
    """A folder on the way to a file is a symlink (or not a folder): the file is not reached."""


@contextmanager
def _folder(real_location: str, parts: tuple[str, ...]) -> Iterator[int]:
    """A descriptor of the folder `real_location/parts...`, each step opened without following a symlink."""
    fd = os.open(real_location, _NOFOLLOW_DIR)
    try:
        for part in parts:
            try:
                step = os.open(part, _NOFOLLOW_DIR, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _Unreachable(f"the folder {part!r} on its way is a symlink or not a folder") from None
                raise
            os.close(fd)
            fd = step
        yield fd
    finally:
        os.close(fd)
