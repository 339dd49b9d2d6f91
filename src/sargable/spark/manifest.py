"""A `_spark_metadata` manifest: a temporary directory whose log lists data files, for Spark to read with no listing.

Spark reads a directory with such a log (the format of its streaming file sink) through `MetadataLogFileIndex`: the
files come from the log, with no listing and no per-file existence check, and the partition columns from their
folder names. The index reads the log when the DataFrame is created, so the directory can go right after.
With no partition columns, Spark's index keeps only the logged files directly under the directory (none of a
table's), unless the read sets `recursiveFileLookup` (`sargable.spark.frames.UNPARTITIONED_OPTION`): a table
without partition keys is read so.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from sargable.stats import FileStats

_BLOCK_SIZE = 128 * 1024 * 1024


def file_uri(path: str) -> str:
    """A file's URI, its path percent-encoded (partition folders hold literal `%`, as in `region=a%2Fb`)."""
    if "://" not in path:
        return Path(path).as_uri()
    scheme, authority_path = path.split("://", 1)
    authority, slash, rest = authority_path.partition("/")
    return f"{scheme}://{authority}{slash}{quote(rest, safe='/')}"


@contextmanager
def manifest(files: Sequence[FileStats]) -> Iterator[str]:
    """The URI of a temporary directory whose `_spark_metadata` log lists exactly `files` (deleted on exit)."""
    directory = tempfile.mkdtemp(prefix="sargable-scan-")
    try:
        log = Path(directory, "_spark_metadata")
        log.mkdir()
        entries = [
            json.dumps(
                {
                    "path": file_uri(f.path),
                    "size": f.size_bytes,
                    "isDir": False,
                    "modificationTime": 0,
                    "blockReplication": 1,
                    "blockSize": _BLOCK_SIZE,
                    "action": "add",
                }
            )
            for f in files
        ]
        (log / "0").write_text("\n".join(["v1", *entries]))
        yield Path(directory).as_uri()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
