"""Table names and metastores as the Spark entry points take them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sargable.errors import SargableError
from sargable.metastore import Metastore, default_url, shared


def split_table_name(name: Any) -> tuple[str, str]:
    """`"db.table"` -> `("db", "table")`."""
    if not isinstance(name, str):
        raise SargableError(f"a table is named 'db.table', got {name!r}")
    db, sep, table = name.partition(".")
    if not sep or not db or not table or "." in table:
        raise SargableError(f"a table is named 'db.table', got {name!r}")
    return db, table


def metastore_of(metastore: Metastore | str | None) -> Metastore:
    """The Metastore given by the caller, or this thread's shared one for a URL (None: the default metastore's);
    a shared one stays open for the next call."""
    if isinstance(metastore, Metastore):
        return metastore
    if metastore is None or isinstance(metastore, str):
        return shared(metastore)
    raise SargableError(f"metastore must be a Metastore, a URL or None, got {type(metastore).__name__}")


@contextmanager
def opened(metastore: Metastore | str | None) -> Iterator[Metastore]:
    """`metastore_of` for a block: the caller's Metastore, or the thread's shared one (neither closed after it)."""
    yield metastore_of(metastore)


def metastore_url(metastore: Metastore | str | None) -> str:
    """The URL of a Metastore, a URL, or the default metastore's URL."""
    if isinstance(metastore, Metastore):
        return metastore.url
    if metastore is None or isinstance(metastore, str):
        return metastore or default_url()
    raise SargableError(f"metastore must be a Metastore, a URL or None, got {type(metastore).__name__}")
