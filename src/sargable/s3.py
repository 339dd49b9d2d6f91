"""S3 for sargable's own reads and writes (pyarrow): where the endpoint and credentials come from.

The metastore spells an S3 object `s3a://bucket/key` (`sargable.paths`); pyarrow's S3 file system takes
`bucket/key`. Endpoint and credentials are never stored in the metastore: they come from where users keep them,
read when a file system is first made in a process:

- credentials: the AWS SDK's own chain (`AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`, the
  profile `AWS_PROFILE` names in `~/.aws/credentials` and `~/.aws/config`, an instance's role);
- region: `AWS_REGION` or `AWS_DEFAULT_REGION` (else the SDK's default);
- endpoint: `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL` (an S3-compatible store or an emulator, e.g.
  `http://127.0.0.1:9000`; path-style addressing), else AWS's;
- or `configure(...)` in code, which overrides each of them it is given for this process.

Spark's own reads and writes take theirs from `spark.hadoop.fs.s3a.*` (`sargable.spark.s3a`). Python workers
of Spark (the footer job, the `sargable` data source, writes to a bucket) use this module in their own process:
they see the environment they were started with, and an override made with `configure` on the driver travels with
the tasks sargable ships (`current_options`, `use_options`).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, fields, replace
from urllib.parse import urlsplit

from pyarrow import fs as pafs

from sargable.errors import SargableError
from sargable.paths import parts_of


@dataclass(frozen=True)
class S3Options:
    """Overrides of the S3 settings (None: from the environment or the SDK's defaults)."""

    endpoint_url: str | None = None
    access_key: str | None = None
    secret_key: str | None = None
    session_token: str | None = None
    region: str | None = None


_override = S3Options()
_filesystems: dict[S3Options, pafs.S3FileSystem] = {}
_lock = threading.Lock()


def configure(
    endpoint_url: str | None = None,
    access_key: str | None = None,
    secret_key: str | None = None,
    session_token: str | None = None,
    region: str | None = None,
) -> None:
    """Override S3 settings for this process (and the Spark tasks it ships); each one not given keeps coming from
    the environment. `configure()` with no argument removes every override."""
    use_options(S3Options(endpoint_url, access_key, secret_key, session_token, region))


def current_options() -> S3Options:
    """The overrides made with `configure` (what a task shipped to a Spark worker carries)."""
    return _override


def use_options(options: S3Options) -> None:
    """Make `options` this process's overrides (a Spark worker, with the driver's)."""
    global _override
    if options.endpoint_url is not None:
        _endpoint(options.endpoint_url)
    with _lock:
        _override = options


def _endpoint(url: str) -> tuple[str, str]:
    """(scheme, host:port) of an endpoint URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise SargableError(f"S3 endpoint {url!r} is not an http:// or https:// URL with a host")
    return parts.scheme, parts.netloc


def _resolved(options: S3Options) -> S3Options:
    """The overrides completed from the environment (what the file system is made with)."""
    env = os.environ
    from_env = S3Options(
        endpoint_url=env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None,
        region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
    )
    given = {f.name: getattr(options, f.name) for f in fields(options) if getattr(options, f.name) is not None}
    return replace(from_env, **given)


def filesystem() -> pafs.S3FileSystem:
    """pyarrow's S3 file system with this process's settings (one per distinct settings, kept).

    Note that pyarrow's delete of a file writes an empty folder marker object (`ds=1/`) after it, so that the
    folder stays as pyarrow sees folders: markers hold no data and every reader (Spark, pyarrow, sargable's
    listings) takes them for folders, not files."""
    with _lock:
        options = _resolved(_override)
        found = _filesystems.get(options)
    if found is not None:
        return found
    kwargs: dict[str, object] = {}
    if options.endpoint_url is not None:
        kwargs["scheme"], kwargs["endpoint_override"] = _endpoint(options.endpoint_url)
    if options.access_key is not None or options.secret_key is not None:
        kwargs.update(access_key=options.access_key, secret_key=options.secret_key)
        kwargs["session_token"] = options.session_token
    if options.region is not None:
        kwargs["region"] = options.region
    try:
        made = pafs.S3FileSystem(**kwargs)
    except (ValueError, OSError) as exc:
        raise SargableError(f"can't set up S3 access: {exc}") from None
    with _lock:
        return _filesystems.setdefault(options, made)


def native(path: str) -> str:
    """pyarrow's `bucket/key` of a canonical `s3a://bucket/key`."""
    root, parts = parts_of(path)
    bucket = root.partition("://")[2]
    if not bucket:
        raise SargableError(f"{path!r} names no bucket")
    return "/".join((bucket, *parts))
