"""The files of a partition whose files no one registered (a table an engine fills through the Hive metastore API,
`TableDefinition.files_from_folders`): listed from its folder, with statistics from their Parquet footers.

A folder is listed as Spark and Hive read one: every regular file below it whose path holds no hidden name (Spark's
rule, `sargable.fs.hidden`: `_SUCCESS`, `.crc` files, staging folders), empty files left out, symlinks never
followed (nor read). The footers give each file's row count and column statistics, so data skipping works on them.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sargable.errors import SargableError
from sargable.fs import FILE, FileSystem
from sargable.fs import hidden as hidden_name
from sargable.parquet_stats import stats_from_parquet
from sargable.stats import FileStats


def folder_files(
    folder: str, partition: Mapping[str, Any], schema: Sequence[tuple[str, Any]], *, owner: str = "the table"
) -> list[FileStats]:
    """The data files below `folder` (none when it does not exist), in path order, each carrying `partition` (its
    partition values) and its footer's statistics of the `schema` columns; `owner` names the table in errors."""
    fs = FileSystem.at(folder)
    found = []
    for entry in fs.walk(fs.location, lambda e: not hidden_name(posixpath.basename(e.path))):
        if entry.kind != FILE or entry.size == 0 or hidden_name(posixpath.basename(entry.path)):
            continue
        try:
            stats = stats_from_parquet(fs.native(entry.path), schema, partition=dict(partition), filesystem=fs.fs)
        except SargableError as exc:
            raise SargableError(
                f"{owner}: {entry.path} in a partition folder is not a readable Parquet file ({exc}); sargable reads "
                "Parquet tables only"
            ) from None
        found.append(replace(stats, path=entry.path, size_bytes=entry.size))
    return found
