"""Fixtures that open a fresh Metastore on each backend (SQLite file, PostgreSQL schema)."""

from __future__ import annotations

import uuid

import pytest

BACKENDS = ["sqlite", "postgresql"]


def fresh_url(backend: str, tmp_path, postgres_url: str | None) -> str:
    """A URL of an empty metastore: a new SQLite file, or a new schema in the test PostgreSQL database."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / f'meta-{uuid.uuid4().hex[:8]}.db'}"
    assert postgres_url is not None
    return f"{postgres_url}?schema=t_{uuid.uuid4().hex[:12]}"


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
