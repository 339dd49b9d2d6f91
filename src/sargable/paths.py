"""Canonical absolute forms of table locations and data file paths, and containment by path components.

A file has one spelling in the metastore: a plain absolute POSIX path for a local file (a `file:` URI becomes its
path), `scheme://authority/path` for another file system (the scheme lowercased, the path kept as written, not
percent-decoded, as sargable hands such paths to pyarrow). An S3 object has two spellings in the wild, Hadoop's
`s3a://bucket/key` and pyarrow's (and AWS's) `s3://bucket/key`: both are accepted and kept as `s3a://`, the form
the metastore hands to Spark, Hive and Trino, whose stock Hadoop connector registers `s3a` only (`sargable.s3`
maps it to pyarrow's `s3` for sargable's own reads). Empty components (`//`) and `.` are dropped. A `..` is
resolved lexically in a location (as Hadoop's `Path` does: `--location ../data` is natural to type) and refused in a
file path, which no writer produces. Containment compares components, never string prefixes (`/t/a` does not
contain `/t/ab`). Only a relative location consults the process (its working directory and home).
"""

from __future__ import annotations

import os
import posixpath
import re
from urllib.parse import quote, unquote

from sargable.errors import PathError

_SCHEME_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*)://")
_FILE_RE = re.compile(r"file:", re.IGNORECASE)
S3_SCHEME = "s3a"
"""The canonical scheme of an S3 object."""
_SCHEME_ALIASES = {"s3": S3_SCHEME}
"""Other spellings of a canonical scheme."""


def _check_text(kind: str, text: object) -> str:
    if not isinstance(text, str) or not text:
        raise PathError(f"a {kind} must be a non-empty string, got {text!r}")
    if "\x00" in text:
        raise PathError(f"{kind} {text!r} holds a NUL character, which no file system path can hold")
    return text


def _split(kind: str, text: str, *, percent: bool = False) -> tuple[str, str]:
    """(root, path below it): root is `""` for a local path, `scheme://authority` for another file system.

    A `file:` URI holding `%` is refused unless `percent` (it may or may not be percent-encoded)."""
    if _FILE_RE.match(text):
        rest = text[len("file:") :]
        if rest.startswith("//"):
            authority, slash, path = rest[2:].partition("/")
            if authority not in ("", "localhost"):
                raise PathError(f"{kind} {text!r} names another host ({authority!r}); only local file: URIs are read")
            rest = slash + path
        if not rest.startswith("/"):
            raise PathError(f"{kind} {text!r} is not an absolute file: URI; write file:///absolute/path")
        if "%" in rest and not percent:
            raise PathError(
                f"{kind} {text!r} is a file: URI holding '%', which may or may not be percent-encoding; "
                "give the plain path instead"
            )
        return "", rest
    match = _SCHEME_RE.match(text)
    if match:
        authority, _, path = text[match.end() :].partition("/")
        scheme = match[1].lower()
        return f"{_SCHEME_ALIASES.get(scheme, scheme)}://{authority}", "/" + path
    return "", text


def _components(kind: str, text: str, path: str, *, dotdot: bool) -> list[str]:
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not dotdot:
                raise PathError(f"{kind} {text!r} has a '..' component; give the path without it")
            if not parts:
                raise PathError(f"{kind} {text!r} climbs above the root with '..'")
            parts.pop()
            continue
        parts.append(part)
    return parts


def _join(root: str, parts: list[str]) -> str:
    return root + "/" + "/".join(parts)


def canonical_location(location: str, base: str | None = None, *, relative: bool = True) -> str:
    """The absolute canonical form of a table or database location; a relative local one is resolved against
    `base` (default: the current directory), `~` against the home directory, or refused unless `relative`."""
    text = _check_text("location", location)
    root, path = _split("location", text)
    if not root and not path.startswith("/"):
        if not relative:
            raise PathError(f"location {text!r} is relative: the folder it names depends on the current directory")
        path = os.path.expanduser(path)
        if not path.startswith("/"):
            path = posixpath.join(base if base is not None else os.getcwd(), path)
    return _join(root, _components("location", text, path, dotdot=True))


def hadoop_location(location: str) -> str:
    """The canonical form of an absolute location given as a Hadoop `Path` string, as Hive's and Spark's clients send
    it (`Path.toString()`, which is not percent-encoded): a `%` in a `file:` URI is a character of a folder name (Hive
    writes the partition value `a:b` as the folder `k=a%3Ab`), read as Hive's metastore reads it, with
    `new Path(text)`."""
    text = _check_text("location", location)
    root, path = _split("location", text, percent=True)
    if not root and not path.startswith("/"):
        raise PathError(f"location {text!r} is relative: the folder it names depends on the current directory")
    return _join(root, _components("location", text, path, dotdot=True))


def canonical_file_path(path: str, base: str | None = None) -> str:
    """The canonical form of a data file's path, as the metastore stores it: a relative path is taken below the
    canonical location `base` (its table's), or refused without one; `..` is refused."""
    text = _check_text("file path", path)
    root, below = _split("file path", text)
    if not root and not below.startswith("/"):
        if base is None:
            raise PathError(f"file path {text!r} is relative; give an absolute path or a URI")
        root, base_below = ("", base) if is_local(base) else _split("location", base)
        below = base_below + "/" + below
    parts = _components("file path", text, below, dotdot=False)
    if not parts:
        raise PathError(f"file path {text!r} names a root, not a file")
    return _join(root, parts)


def is_local(path: str) -> bool:
    """Whether a canonical path or location is a local one (a plain absolute path)."""
    return path.startswith("/")


def parts_of(path: str) -> tuple[str, tuple[str, ...]]:
    """(root, components) of a canonical path: root `""` for a local path, `scheme://authority` otherwise."""
    root, below = ("", path) if path.startswith("/") else _split("path", path)
    return root, tuple(p for p in below.split("/") if p)


def is_within(path: str, location: str) -> bool:
    """Whether canonical `path` is `location` or lies below it (compared by components)."""
    root, parts = parts_of(path)
    location_root, location_parts = parts_of(location)
    return root == location_root and parts[: len(location_parts)] == location_parts


def overlaps(a: str, b: str) -> bool:
    """Whether one canonical location contains the other."""
    return is_within(a, b) or is_within(b, a)


def relative_parts(path: str, location: str) -> tuple[str, ...]:
    """The components of canonical `path` below canonical `location`, which must contain it."""
    if not is_within(path, location):
        raise PathError(f"{path!r} is not under {location!r}")
    return parts_of(path)[1][len(parts_of(location)[1]) :]


def join_path(location: str, *parts: str) -> str:
    """`location/part/...` (parts are single components or relative paths with forward slashes)."""
    return posixpath.join(location.rstrip("/") or "/", *parts)


def is_s3(path: str) -> bool:
    """Whether a canonical path or location names an S3 object or prefix."""
    return path.startswith(f"{S3_SCHEME}://")


def spellings(path: str) -> tuple[str, ...]:
    """The ways a canonical local path may have been registered, by this version or an earlier one: the path, and
    `file:` URIs of it (raw or percent-encoded); an S3 path as `s3a://` and `s3://`. A path of another file system
    has only its own spelling."""
    if is_s3(path):
        return (path, "s3" + path[len(S3_SCHEME) :])
    if not is_local(path):
        return (path,)
    encoded = quote(path, safe="/")
    forms = (path, f"file://{path}", f"file:{path}", f"file://localhost{path}", f"file://{encoded}", f"file:{encoded}")
    return tuple(dict.fromkeys(forms))


def stored_forms(stored: str) -> set[str]:
    """Every canonical path a path read back from the metastore may name: its canonical form, or for an entry an
    earlier version stored without canonicalizing it, each reading of it (`..` resolved lexically; a `file:` URI
    taken raw or percent-decoded). Empty for a relative or malformed path, which names no file for certain."""
    readings = {stored, unquote(stored)} if _FILE_RE.match(stored) else {stored}
    forms = set()
    for text in readings:
        try:
            root, below = _split("file path", text, percent=True)
            if root or below.startswith("/"):
                forms.add(_join(root, _components("file path", text, below, dotdot=True)))
        except PathError:
            continue
    return forms
