"""Fixtures that open a fresh Metastore on each backend (SQLite file, PostgreSQL schema)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

BACKENDS = ["sqlite", "postgresql"]


def fresh_url(backend: str, tmp_path, postgres_url: str | None) -> str:
    """A URL of an empty metastore: a new SQLite file, or a new schema in the test PostgreSQL database."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / f'meta-{uuid.uuid4().hex[:8]}.db'}"
    assert postgres_url is not None
    return f"{postgres_url}?schema=t_{uuid.uuid4().hex[:12]}"


@contextmanager
def module_metastore(tmp_path_factory: Any, backend: str, postgres_url: str | None = None) -> Iterator[Any]:
    """A fresh metastore on `backend` holding database `db`, for a module-scoped fixture (closed at the end)."""
    from sargable.metastore import Metastore

    tmp = tmp_path_factory.mktemp(backend)
    ms = Metastore.open(fresh_url(backend, tmp, postgres_url), warehouse=tmp / "w")
    try:
        ms.create_database("db")
        yield ms
    finally:
        ms.close()


@pytest.fixture(params=BACKENDS)
def metastore_url(request, tmp_path) -> str:
    postgres = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    return fresh_url(request.param, tmp_path, postgres)


@pytest.fixture
def metastore(metastore_url, tmp_path):
    from sargable.metastore import Metastore

    ms = Metastore.open(metastore_url, warehouse=tmp_path / "warehouse")
    yield ms
    ms.close()
