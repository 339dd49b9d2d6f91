"""The folders Hive's metastore makes for new databases, tables and partitions, made inside the transaction that
records them, before it commits: a folder that can't be made (a file in the way, a name too long) fails the call with
nothing committed, and a commit that fails after its folders were made removes them again. Only folders made here are
removed, and only while empty (the deepest first): a folder that was there before, or that someone wrote into
meanwhile, is left alone.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sargable.errors import MetastoreError
from sargable.paths import hadoop_location, is_local


def local_dir(location: str | None) -> Path | None:
    """The local folder of an absolute path or a Hadoop `Path` string's `file:` URI, whose `%` is literal (None for
    other file systems)."""
    if not location:
        return None
    path = hadoop_location(location)
    return Path(path) if is_local(path) else None


class NewFolders:
    """The folders made for one change that is not committed yet, in the order they were made."""

    def __init__(self) -> None:
        self.made: list[Path] = []

    def make(self, what: str, location: str | None) -> None:
        """Make the local folder of `location` and its missing parents (nothing for another file system); an error
        naming `what`, the location and the OS error when it can't be made (what it made before is kept for
        `undo`)."""
        path = local_dir(location)
        if path is None:
            return
        missing = []
        for folder in (path, *path.parents):
            if os.path.isdir(folder):
                break
            missing.append(folder)
        for folder in reversed(missing):
            try:
                folder.mkdir()
            except OSError as exc:
                if isinstance(exc, FileExistsError) and os.path.isdir(folder):
                    continue  # made by someone else meanwhile: theirs, never undone
                raise self._error(what, location, folder, exc) from None
            self.made.append(folder)

    @staticmethod
    def _error(what: str, location: str, folder: Path, exc: OSError) -> MetastoreError:
        reason = exc.strerror or str(exc)
        if isinstance(exc, FileExistsError):
            reason += " (a file is in the way)"
        at = "" if folder == local_dir(location) else f" (making {str(folder)!r})"
        return MetastoreError(f"can't make the folder of {what} at {location!r}{at}: {reason}; nothing was created")

    def undo(self) -> None:
        """Remove the folders made, deepest first, each only while it is empty."""
        for folder in reversed(self.made):
            try:
                folder.rmdir()
            except OSError:
                continue  # not empty (someone wrote into it) or already gone: left as it is
        self.made.clear()


@contextmanager
def new_folders() -> Iterator[NewFolders]:
    """Folders for a change made inside the block (open the block outside the change's transaction): when the
    block fails, as the transaction rolls back or its commit fails, the folders made are removed again."""
    folders = NewFolders()
    try:
        yield folders
    except BaseException:
        folders.undo()
        raise
