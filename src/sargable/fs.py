"""File-system operations of the pipeline (list, inspect, move), through `pyarrow.fs`; deleting is `sargable.deletion`.

A `FileSystem` is rooted at one canonical location (`sargable.paths`): a local path, an S3 prefix (`s3a://`,
through `sargable.s3`), or a URI whose file system pyarrow opens (`hdfs://...`); paths handed in and out are
canonical, in the location's form. Listings never follow a symlink: they report it and don't descend (pyarrow's
local listing follows them, so local folders are listed with `os.scandir`, which also gives the change time).

On S3 there are no folders, only keys: a walk is one flat listing of the prefix (a LIST request per 1,000 keys,
not one per folder), folders are the ones the keys imply, and nothing is ever renamed (a rename is a copy and a
delete per object): writes put their files where they stay.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from pyarrow import fs as pafs

from sargable import s3
from sargable.errors import SargableError
from sargable.paths import canonical_location, is_local, is_s3, join_path, relative_parts

DATA_SUFFIX = ".parquet"
STAGING_DIR = "_sargable_staging"
_DIRECT_NAME = re.compile(r"part-([0-9a-f]{32})-")


def direct_name(write_id: str, rest: str) -> str:
    """The name (without suffix) of a file a write to an object store puts where it stays: `part-<write id>-<rest>`,
    so that what a killed write left is found by its id (`direct_write_id`) with one listing."""
    return f"part-{write_id}-{rest}"


def direct_write_id(name: str) -> str | None:
    """The write id in a file name `direct_name` made, or None."""
    match = _DIRECT_NAME.match(name)
    return None if match is None else match[1]
"""The folder under a table's location where writes stage their files (hidden from Spark by its leading `_`)."""

FILE, DIRECTORY, SYMLINK, OTHER = "file", "directory", "symlink", "other"


def hidden(name: str) -> bool:
    """Spark's rule for entries that are not data: names starting with `.`, or with `_` and holding no `=`."""
    return name.startswith(".") or (name.startswith("_") and "=" not in name)


@dataclass(frozen=True)
class Entry:
    """One entry of a listing: its path (in the location's form), kind, size, and when it last changed."""

    path: str
    kind: str
    """FILE (a regular file), DIRECTORY, SYMLINK (never followed) or OTHER (a device, socket, FIFO...)."""
    size: int
    changed: float
    """The later of modification and status-change time (seconds since the epoch), so a file a writer has just
    renamed into place (which updates only its ctime) counts as new; modification time where there's no ctime."""


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return SYMLINK
    if stat.S_ISREG(mode):
        return FILE
    if stat.S_ISDIR(mode):
        return DIRECTORY
    return OTHER


def _local_entry(path: str, st: os.stat_result) -> Entry:
    return Entry(path, _kind(st.st_mode), st.st_size, max(st.st_mtime, st.st_ctime))


@dataclass(frozen=True)
class FileSystem:
    """A pyarrow file system rooted at one location; converts between location paths and pyarrow paths."""

    fs: pafs.FileSystem
    location: str
    root: str

    @classmethod
    def at(cls, location: str) -> FileSystem:
        """The file system of a location (a relative local one is resolved against the current directory)."""
        location = canonical_location(location)
        fs, root = resolve(location)
        return cls(fs, location, root)

    @property
    def local(self) -> bool:
        return is_local(self.location)

    def native(self, path: str) -> str:
        """pyarrow's path of a path at or below the location."""
        return join_path(self.root, *relative_parts(path, self.location))

    def _public(self, native: str) -> str:
        return join_path(self.location, *relative_parts(native, self.root))

    @property
    def object_store(self) -> bool:
        """Whether the location is an object store's prefix (keys, no folders, no rename)."""
        return is_s3(self.location)

    def file_entry(self, path: str) -> Entry | None:
        """The entry of the file at `path` (as `info`), None when no file is there. On an object store one HEAD
        request, never a listing (`info` lists the prefix to tell a missing key from a folder)."""
        if not self.object_store:
            return self.info(path)
        try:
            with self.fs.open_input_file(self.native(path)) as handle:
                size = handle.size()
        except (FileNotFoundError, IsADirectoryError):
            return None
        return Entry(path, FILE, size, time.time())

    def info(self, path: str) -> Entry | None:
        """The entry of one path, a symlink reported as itself (not its target); None when nothing is there."""
        if self.local:
            try:
                return _local_entry(path, os.lstat(path))
            except FileNotFoundError:
                return None
        info = self.fs.get_file_info(self.native(path))
        return None if info.type == pafs.FileType.NotFound else self._entry(info)

    def _entry(self, info: pafs.FileInfo) -> Entry:
        kind = {pafs.FileType.File: FILE, pafs.FileType.Directory: DIRECTORY}.get(info.type, OTHER)
        changed = info.mtime.timestamp() if info.mtime is not None else time.time()
        return Entry(self._public(info.path), kind, info.size or 0, changed)

    def walk(
        self,
        path: str,
        descend: Callable[[Entry], bool] = lambda entry: True,
        listing: Sequence[Entry] | None = None,
    ) -> Iterator[Entry]:
        """Every entry below `path` (not `path` itself), folder by folder. Symlinks are reported and never followed;
        a directory is reported, then descended into when `descend(entry)` says so. On an object store `listing`
        may hand in the entries of a walk of `path` made before (`list(walk(path))`): walked again with no request."""
        if self.object_store:
            yield from self._walk_flat(path, descend, listing)
            return
        pending = [path]
        while pending:
            children = sorted(self._children(pending.pop()), key=lambda e: e.path)
            yield from children
            pending.extend(e.path for e in reversed(children) if e.kind == DIRECTORY and descend(e))

    def _walk_flat(
        self, path: str, descend: Callable[[Entry], bool], listing: Sequence[Entry] | None
    ) -> Iterator[Entry]:
        """`walk` from one recursive listing (or `listing`): the entries in path order, none below a folder
        `descend` refuses."""
        if listing is None:
            selector = pafs.FileSelector(self.native(path), recursive=True, allow_not_found=True)
            listing = [self._entry(info) for info in self.fs.get_file_info(selector)]
        entries = sorted(listing, key=lambda e: e.path)
        refused: set[tuple[str, ...]] = set()
        for entry in entries:
            parts = relative_parts(entry.path, path)
            if not parts:
                continue  # the folder a key with an empty component (`t//x`) implies: `path` itself
            if any(parts[:n] in refused for n in range(1, len(parts))):
                continue
            yield entry
            if entry.kind == DIRECTORY and not descend(entry):
                refused.add(parts)

    def _children(self, folder: str) -> list[Entry]:
        if self.local:
            try:
                with os.scandir(folder) as it:
                    return [_local_entry(join_path(folder, e.name), e.stat(follow_symlinks=False)) for e in it]
            except (FileNotFoundError, NotADirectoryError):
                return []
        selector = pafs.FileSelector(self.native(folder), recursive=False, allow_not_found=True)
        return [self._entry(info) for info in self.fs.get_file_info(selector)]

    def move(self, source: str, target: str) -> None:
        """Rename a file, creating the target's directory."""
        native_target = self.native(target)
        self.fs.create_dir(posixpath.dirname(native_target), recursive=True)
        self.fs.move(self.native(source), native_target)

    def move_folder(self, source: str, target: str) -> bool:
        """Rename a folder with everything in it to `target` where nothing is, in one rename (local file systems
        only); False, and nothing moved, where that can't be done (another file system, `target` exists)."""
        if not self.local or os.path.lexists(target):
            return False
        os.makedirs(posixpath.dirname(target), exist_ok=True)
        try:
            os.rename(source, target)
        except OSError:
            return False
        return True


def resolve(path: str) -> tuple[pafs.FileSystem, str]:
    """pyarrow's file system of a canonical path or location, and the path in its terms."""
    if is_local(path):
        return pafs.LocalFileSystem(), path
    if is_s3(path):
        return s3.filesystem(), s3.native(path)
    try:
        return pafs.FileSystem.from_uri(path)
    except (ValueError, OSError) as exc:
        raise SargableError(f"can't open the file system of {path!r}: {exc}") from None
