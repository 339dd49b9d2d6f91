"""Hive partition names: `ds=2024-01-01/hr=3`, with Hive's path escaping and its NULL folder name.

Matches Hive's `FileUtils.escapePathName` (and Spark's `ExternalCatalogUtils`): control characters and
`"#%'*/:=?\\{[]^` plus DEL are written as `%XX`; a NULL value is the folder `__HIVE_DEFAULT_PARTITION__`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sargable.errors import MetastoreError, TypeCoercionError
from sargable.types import DataType, convert, format_value

DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"

ESCAPE_PATTERN = r"[\x01-\x1f\x7f\"#%'*/:=?\\{\[\]^]"
"""The characters Hive escapes in a path segment, as a regular expression both `re` and RE2 (Arrow) read."""
_ESCAPE_RE = re.compile(ESCAPE_PATTERN)
_UNESCAPE_RE = re.compile(r"%([0-9A-Fa-f]{2})")


def escape_path_name(text: str) -> str:
    """Escape a partition column name or value for a path segment, as Hive does."""
    if _ESCAPE_RE.search(text) is None:
        return text
    return _ESCAPE_RE.sub(lambda m: f"%{ord(m.group()):02X}", text)


def unescape_path_name(text: str) -> str:
    """Undo `escape_path_name`."""
    if "%" not in text:
        return text
    return _UNESCAPE_RE.sub(lambda m: chr(int(m.group(1), 16)), text)


def value_to_name(value: Any, dtype: DataType) -> str:
    """The escaped path form of one partition value; NULL and `''` (which the metastore stores as NULL, as Hive and
    Spark do) are the Hive default partition."""
    if value is None or value == "":
        return DEFAULT_PARTITION_NAME
    return escape_path_name(format_value(value, dtype))


def partition_name(keys: Sequence[tuple[str, DataType]], values: Sequence[Any]) -> str:
    """`k1=v1/k2=v2` in partition-key order."""
    return "/".join(
        f"{escape_path_name(name)}={value_to_name(value, dtype)}" for (name, dtype), value in zip(keys, values)
    )


def parse_partition_name(name: str, keys: Sequence[tuple[str, DataType]]) -> tuple[Any, ...]:
    """Typed values from a Hive partition name; the names must be the table's partition keys, in order."""
    if not isinstance(name, str):
        raise MetastoreError(f"a partition name must be a string such as 'ds=2024-01-01/hr=3', got {name!r}")
    segments = name.strip("/").split("/")
    expected = [key for key, _ in keys]
    if len(segments) != len(keys):
        raise MetastoreError(f"partition name {name!r} does not have the table's partition keys {expected}")
    values = []
    for segment, (key, dtype) in zip(segments, keys):
        column, sep, raw = segment.partition("=")
        if not sep or unescape_path_name(column).lower() != key.lower():
            raise MetastoreError(f"partition name {name!r}: expected {key}=... in segment {segment!r}")
        values.append(value_from_name(unescape_path_name(raw), dtype, key))
    return tuple(values)


def value_from_name(text: str, dtype: DataType, column: str) -> Any:
    """A typed partition value from its (unescaped) Hive string form; `''` of a string key is NULL, as the metastore
    stores it and as Hive and Spark name it (the default partition)."""
    if text == DEFAULT_PARTITION_NAME or (text == "" and dtype.is_string):
        return None
    if "\x00" in text:
        raise MetastoreError(f"partition value {text!r} for column {column} holds a NUL character")
    try:
        return convert(text, dtype)
    except TypeCoercionError as exc:
        raise MetastoreError(f"partition value {text!r} for column {column} ({dtype}): {exc}") from None
