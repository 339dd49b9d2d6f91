"""S3 test fixtures (a pytest plugin, loaded by conftest.py): one S3 server per test session, counted requests.

`s3_server` starts `scripts/s3_server.py` (moto's S3 emulator behind a request-counting front, on a free port of
127.0.0.1) once per session and points sargable's pyarrow side at it through the standard variables
(`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, ...); it stops with the session, or with this process however it ends
(the server exits when its stdin closes). `s3a_jars` fetches (once, cached) the s3a connector's jars. Neither is
ever skipped: a server or jars that can't be had fail the tests that need them.
"""

from __future__ import annotations

import collections
import itertools
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
ACCESS_KEY, SECRET_KEY, REGION = "sargable-test", "sargable-test-secret", "us-east-1"


@dataclass
class Requests:
    """The S3 requests made inside one `S3Server.counted()` block, in order (filled when the block ends)."""

    entries: list[dict[str, str]] = field(default_factory=list)

    def count(self, kind: str, under: str | None = None) -> int:
        """How many requests of `kind` (LIST/HEAD/GET/PUT/DELETE/COPY), only those on keys or listing prefixes
        below `under` (`bucket/prefix`) when given."""
        return len(self.of(kind, under))

    def of(self, kind: str, under: str | None = None) -> list[dict[str, str]]:
        return [e for e in self.entries if e["kind"] == kind and (under is None or _below(e, under))]

    @property
    def kinds(self) -> collections.Counter[str]:
        return collections.Counter(e["kind"] for e in self.entries)


def _below(entry: dict[str, str], under: str) -> bool:
    """Whether a request touches `bucket/prefix` or below (a listing by its prefix parameter)."""
    from urllib.parse import parse_qs, unquote

    bucket, _, prefix = under.partition("/")
    path = unquote(entry["path"]).lstrip("/")
    if entry["kind"] == "LIST":
        listed = parse_qs(entry["query"]).get("prefix", [""])[0]
        return path.rstrip("/") == bucket and (listed + "/").startswith(prefix.rstrip("/") + "/")
    return (path + "/").startswith(f"{bucket}/{prefix.rstrip('/')}/")


class S3Server:
    """The running server: its endpoint, buckets made on request, and the requests it served."""

    def __init__(self, endpoint: str, process: subprocess.Popen[bytes]) -> None:
        self.endpoint = endpoint
        self.process = process
        self._names = itertools.count()

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )

    def bucket(self, stem: str = "sargable") -> str:
        """A new, empty bucket."""
        name = f"{stem}-{os.getpid()}-{next(self._names)}"
        self.client().create_bucket(Bucket=name)
        return name

    def _requests(self, since: int) -> list[dict[str, str]]:
        with urllib.request.urlopen(f"{self.endpoint}/_sargable/requests?since={since}", timeout=30) as response:
            return json.loads(response.read())

    def served(self) -> int:
        """How many requests the server has served so far."""
        with urllib.request.urlopen(f"{self.endpoint}/_sargable/count", timeout=30) as response:
            return int(json.loads(response.read()))

    @contextmanager
    def counted(self) -> Iterator[Requests]:
        """The requests made inside the block (by this process, Spark's JVM and its workers alike)."""
        start = self.served()
        found = Requests()
        yield found
        found.entries.extend(self._requests(start))

    def set_delay(self, seconds: float) -> None:
        request = urllib.request.Request(f"{self.endpoint}/_sargable/delay?seconds={seconds}", method="POST")
        urllib.request.urlopen(request, timeout=30).close()


class S3ServerError(RuntimeError):
    """The S3 server (scripts/s3_server.py) did not start."""


def start_s3_server() -> S3Server:
    """Start `scripts/s3_server.py` on a free port of 127.0.0.1 (it exits when its stdin closes)."""
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts" / "s3_server.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    line = process.stdout.readline().decode()
    if not line.startswith("s3_server: http://"):
        process.kill()
        raise S3ServerError(f"the S3 server (scripts/s3_server.py, moto) did not start: {line!r}")
    return S3Server(line.split()[1], process)


def client_settings(server: S3Server) -> dict[str, str]:
    """The standard AWS variables that point pyarrow, boto3 and sargable at `server`."""
    return {
        "AWS_ENDPOINT_URL": server.endpoint,
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_REGION": REGION,
        "AWS_EC2_METADATA_DISABLED": "true",
    }


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """The session's S3 server; sargable's pyarrow side reaches it through the AWS_* variables set here."""
    try:
        server = start_s3_server()
    except S3ServerError as exc:
        pytest.fail(str(exc))
    process = server.process
    settings = client_settings(server)
    saved = {name: os.environ.get(name) for name in [*settings, "AWS_ENDPOINT_URL_S3", "AWS_PROFILE"]}
    os.environ.update(settings)
    os.environ.pop("AWS_ENDPOINT_URL_S3", None)
    os.environ.pop("AWS_PROFILE", None)
    try:
        yield server
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def s3a_jars() -> list[str]:
    """The s3a connector's jars (fetched once into the cache by scripts/s3a-jars.sh)."""
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "s3a-jars.sh")], capture_output=True, text=True, env={**os.environ}
    )
    if done.returncode != 0:
        pytest.fail(f"scripts/s3a-jars.sh could not provide the s3a jars:\n{done.stderr[-3000:]}")
    return done.stdout.strip().split(",")


@pytest.fixture(scope="session")
def s3a_conf(s3_server: S3Server, s3a_jars: list[str]) -> dict[str, str]:
    """Spark settings for `s3a://` paths on the session's S3 server."""
    from sargable.spark.s3a import s3a_settings

    return s3a_settings(s3a_jars, endpoint_url=s3_server.endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY)
