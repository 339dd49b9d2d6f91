"""Unlisted files: what a failed or refused engine write leaves under a table's location, found and reported by
`vacuum`, never deleted.

Spark SQL through `sargable serve` writes a partition's files itself and then calls `add_partition`: when the
server refuses that call (`--read-only`) or the job dies, the files stay in a folder no partition lists, and no
reader of the table ever sees them. sargable never saw them being written, so nothing tells them from files another
program put there: they are reported (path, size, age), never deleted (`docs/reliability.md`).

An unlisted file is a regular file below the table's location, reached without a symlink (the walk never follows
one), that no table lists and

- lies in no folder a partition of the table lists (a partitioned table), nor in one a partition lists of a table
  sharing the location or holding it; below no other table's location nested in this one; and is not data of a
  table without partition keys at or above the location (engines read every path of such a table's folder that
  holds no hidden name);
- holds no hidden name (Spark's rule, `sargable.fs.hidden`: `_SUCCESS`, `.crc` files, sargable's own
  `_sargable_staging`), unless the first hidden name on its path is one of the staging folders engines write a job
  into and remove when it ends (`_temporary`, `.spark-staging-*`, `.hive-staging*`): one that outlived the
  retention is a dead job's leftover, and everything in it is reported;
- has not changed (the later of modification and status-change time) for `min_age` seconds: vacuum passes the
  table's retention, or `--older-than` if longer, so a job still writing is not reported.

Partition folders are compared by path as stored and, for local ones, with symlinks resolved; a `file:` URI holding
`%` lists both its raw and its percent-decoded reading. A partition whose location names no folder for certain (a
relative one) makes no report: which folders are listed is then unknown.
Partitions of other tables are not searched (a partition of a table elsewhere may point into this location).
"""

from __future__ import annotations

import os
import posixpath
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from sargable.errors import PathError, SargableError
from sargable.fs import DIRECTORY, FILE, Entry, FileSystem, hidden
from sargable.metastore import Metastore, TableDefinition
from sargable.paths import canonical_location, is_local, is_within, join_path, relative_parts, stored_forms

PROGRESS_EVERY = 1000
"""How many entries the walk sees between two progress calls in one folder (it also calls at each folder)."""
ENGINE_STAGING_NAMES = ("_temporary",)
ENGINE_STAGING_PREFIXES = (".spark-staging-", ".hive-staging")


def engine_staging(name: str) -> bool:
    """Whether a folder name is one an engine stages a job's output in (Hadoop's output committer `_temporary`,
    Spark's dynamic-overwrite `.spark-staging-<job>`, Hive's `.hive-staging_hive_<...>`)."""
    return name in ENGINE_STAGING_NAMES or name.startswith(ENGINE_STAGING_PREFIXES)


@dataclass(frozen=True)
class UnlistedFile:
    """One unlisted file: its path, size in bytes, and when it last changed (seconds since the epoch)."""

    path: str
    size: int
    changed: float


@dataclass(frozen=True)
class UnlistedReport:
    """The unlisted files of one table (see the module docstring): reported, never deleted."""

    files: tuple[UnlistedFile, ...] = ()
    min_age: float = 0.0
    """The age (seconds) a file had to reach to be reported."""
    walked: int = 0
    """How many entries below the location the walk saw."""
    not_made: str | None = None
    """Why there is no report (a partition location that names no folder for certain), else None."""

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)


def _forms(location: str) -> set[str]:
    """A canonical location as written and, for a local one, with symlinks resolved."""
    return {location, os.path.realpath(location)} if is_local(location) else {location}


def _first_hidden(parts: Iterable[str]) -> str | None:
    return next((part for part in parts if hidden(part)), None)


class _Owners:
    """What the tables at (or above) a location read there: the folders their partitions list, and the locations
    of those without partition keys; and the locations of the other tables nested below it."""

    def __init__(self, ms: Metastore, table: TableDefinition, location: str) -> None:
        self.listed: set[str] = set()
        self.roots: list[str] = []
        self.nested: set[str] = set()
        mine = _forms(location)
        owners = [table]
        for name, other in ms.table_locations().items():
            if name == table.qualified_name:
                continue
            try:
                theirs = _forms(canonical_location(other, relative=False))
            except PathError:
                continue
            if any(is_within(m, t) for m in mine for t in theirs):
                owners.append(ms.get_table(*name.split(".", 1)))
            elif any(is_within(t, m) for m in mine for t in theirs):
                self.nested |= theirs
        for owner in owners:
            self._add(ms, owner)

    def _add(self, ms: Metastore, table: TableDefinition) -> None:
        if not table.partition_keys:
            self.roots.extend(_forms(canonical_location(table.location, relative=False)))
            return
        for partition in ms.table(table.database, table.name).iter_partitions():
            readings = stored_forms(partition.location)
            if not readings:
                raise _NoReport(
                    f"partition {partition.name} of {table.qualified_name} has the location "
                    f"{partition.location!r}, which names no folder for certain (relative or malformed)"
                )
            for reading in readings:
                self.listed |= _forms(reading)

    def covers(self, forms: set[str]) -> bool:
        """Whether a folder (its forms) is one a partition lists or a nested table's location."""
        return bool(forms & self.listed) or bool(forms & self.nested)

    def within_listed(self, forms: set[str]) -> bool:
        """Whether a path (its forms) lies in a listed folder (at any depth; the one check done for the location)."""
        return any(is_within(f, folder) for f in forms for folder in self.listed | self.nested)

    def read_as_data(self, forms: set[str]) -> bool:
        """Whether a table without partition keys reads the path (under its location, no hidden name on the way)."""
        return any(
            is_within(f, root) and _first_hidden(relative_parts(f, root)) is None for f in forms for root in self.roots
        )


class _NoReport(Exception):
    """The listed folders can't be known: no report is made."""


def find_unlisted(
    ms: Metastore,
    table: TableDefinition,
    *,
    min_age: float,
    skip: Iterable[str] = (),
    progress: Callable[[int], None] | None = None,
    listing: Sequence[Entry] | None = None,
) -> UnlistedReport:
    """The table's unlisted files that have not changed for `min_age` seconds (see the module docstring), in path
    order; `skip` names paths reported elsewhere (vacuum's own garbage and what it keeps); `progress` is called with
    the number of entries walked so far, at each folder and every `PROGRESS_EVERY` entries. On an object store,
    `listing` hands in a walk of the location made before (vacuum's), so the prefix is listed once."""
    try:
        location = canonical_location(table.location, relative=False)
    except PathError as exc:
        return UnlistedReport(min_age=min_age, not_made=f"the table location names no folder for certain ({exc})")
    real_location = os.path.realpath(location) if is_local(location) else location
    try:
        with ms.snapshot():
            owners = _Owners(ms, table, location)
    except _NoReport as exc:
        return UnlistedReport(min_age=min_age, not_made=str(exc))
    if owners.within_listed(_forms(location)):
        return UnlistedReport(min_age=min_age)
    fs = FileSystem.at(location)
    skipped = set(skip)
    cutoff = time.time() - min_age
    walked = 0

    def forms(entry: Entry) -> set[str]:
        parts = relative_parts(entry.path, location)
        return {entry.path, join_path(real_location, *parts)}

    def zone_ok(entry: Entry) -> bool:
        """No hidden name on the way below the location, or the first one is an engine's staging folder."""
        first = _first_hidden(relative_parts(entry.path, location))
        return first is None or engine_staging(first)

    def descend(entry: Entry) -> bool:
        return zone_ok(entry) and not owners.covers(forms(entry))

    found = []
    for entry in fs.walk(location, descend, listing):
        walked += 1
        if progress is not None and (entry.kind == DIRECTORY or walked % PROGRESS_EVERY == 0):
            progress(walked)
        if entry.kind == DIRECTORY:
            continue
        if entry.kind != FILE or entry.changed > cutoff or entry.path in skipped or not zone_ok(entry):
            continue
        here = forms(entry)
        if owners.covers(here) or owners.read_as_data(here):
            continue
        found.append(entry)
    try:
        listed = ms.listed_paths(entry.path for entry in found)
    except SargableError as exc:
        return UnlistedReport(min_age=min_age, walked=walked, not_made=f"can't ask the metastore: {exc}")
    files = [UnlistedFile(e.path, e.size, e.changed) for e in found if e.path not in listed]
    if progress is not None:
        progress(walked)
    return UnlistedReport(tuple(sorted(files, key=lambda f: f.path)), min_age, walked)


def folders_of(files: Iterable[UnlistedFile]) -> list[tuple[str, int, int]]:
    """(folder, files, bytes) of the folders holding these files, in path order: a report's summary."""
    totals: dict[str, list[int]] = {}
    for f in files:
        count = totals.setdefault(posixpath.dirname(f.path), [0, 0])
        count[0] += 1
        count[1] += f.size
    return [(folder, n, size) for folder, (n, size) in sorted(totals.items())]
