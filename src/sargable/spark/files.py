"""File-system operations of the Spark pipeline (list, move, delete), through `pyarrow.fs`.

A location is a local path or a URI (`file:///...`, `hdfs://...`, `s3://...`); paths handed back keep the
location's form, so the metastore, Spark and pyarrow all see the same strings.
"""

from __future__ import annotations

import os
import posixpath
import time
from collections.abc import Iterable
from dataclasses import dataclass

from pyarrow import fs as pafs

from sargable.errors import SargableError

DATA_SUFFIX = ".parquet"


def _has_scheme(location: str) -> bool:
    head, sep, _ = location.partition("://")
    return bool(sep) and head.isidentifier()


def normalize_location(location: str) -> str:
    """An absolute local path for a scheme-less location; URIs unchanged (trailing slashes dropped)."""
    if _has_scheme(location):
        return location.rstrip("/")
    return os.path.abspath(os.path.expanduser(location))


def _hidden(name: str) -> bool:
    return name.startswith(".") or (name.startswith("_") and "=" not in name)


def join(location: str, *parts: str) -> str:
    """`location/part/...` with forward slashes."""
    return posixpath.join(location.rstrip("/"), *parts)


def relative(path: str, location: str) -> str:
    """`path` relative to `location` (which must contain it)."""
    prefix = location.rstrip("/") + "/"
    if not path.startswith(prefix):
        raise SargableError(f"{path!r} is not under {location!r}")
    return path[len(prefix) :]


@dataclass(frozen=True)
class FileSystem:
    """A pyarrow file system rooted at one location; converts between location paths and pyarrow paths."""

    fs: pafs.FileSystem
    location: str
    root: str

    @classmethod
    def at(cls, location: str) -> FileSystem:
        location = normalize_location(location)
        if _has_scheme(location):
            try:
                fs, root = pafs.FileSystem.from_uri(location)
            except (ValueError, OSError) as exc:
                raise SargableError(f"can't open the file system of {location!r}: {exc}") from None
            return cls(fs, location, root)
        return cls(pafs.LocalFileSystem(), location, location)

    def _native(self, path: str) -> str:
        return join(self.root, relative(path, self.location)) if path != self.location else self.root

    def _public(self, native: str) -> str:
        return join(self.location, relative(native, self.root)) if native != self.root else self.location

    def list_files(self, path: str, *, data_only: bool = True) -> list[tuple[str, int, float]]:
        """(path, size, modification time) of the files below `path`; data files only unless told otherwise.

        Hidden and bookkeeping entries (`.crc` files, `_SUCCESS`, anything inside a folder whose name starts with
        `.`, or with `_` and has no `=`) are skipped when `data_only`, as Spark's own listing does.
        """
        native_root = self._native(path)
        selector = pafs.FileSelector(native_root, recursive=True, allow_not_found=True)
        out = []
        for info in self.fs.get_file_info(selector):
            if info.type != pafs.FileType.File:
                continue
            if data_only and any(_hidden(part) for part in relative(info.path, native_root).split("/")):
                continue
            mtime = info.mtime.timestamp() if info.mtime is not None else time.time()
            out.append((self._public(info.path), info.size or 0, mtime))
        out.sort()
        return out

    def move(self, source: str, target: str) -> None:
        """Rename a file, creating the target's directory."""
        native_target = self._native(target)
        self.fs.create_dir(posixpath.dirname(native_target), recursive=True)
        self.fs.move(self._native(source), native_target)

    def delete_files(self, paths: Iterable[str]) -> None:
        """Delete files; ones already gone are ignored."""
        for path in paths:
            try:
                self.fs.delete_file(self._native(path))
            except FileNotFoundError:
                continue

    def delete_dir(self, path: str) -> None:
        """Delete a directory tree if it exists."""
        native = self._native(path)
        if self.fs.get_file_info(native).type == pafs.FileType.Directory:
            self.fs.delete_dir(native)
