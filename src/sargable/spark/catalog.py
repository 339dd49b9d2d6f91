"""Table names and metastore handles shared by the Spark entry points."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from sargable.errors import SargableError
from sargable.metastore import Metastore


def split_table_name(name: Any) -> tuple[str, str]:
    """`"db.table"` -> `("db", "table")`."""
    if not isinstance(name, str):
        raise SargableError(f"a table is named 'db.table', got {name!r}")
    db, sep, table = name.partition(".")
    if not sep or not db or not table or "." in table:
        raise SargableError(f"a table is named 'db.table', got {name!r}")
    return db, table


class opened(AbstractContextManager):
    """A Metastore given by the caller (left open), or opened from a URL / the default (closed on exit)."""

    def __init__(self, metastore: Metastore | str | None) -> None:
        if metastore is not None and not isinstance(metastore, (Metastore, str)):
            raise SargableError(f"metastore must be a Metastore, a URL or None, got {type(metastore).__name__}")
        self._owned = not isinstance(metastore, Metastore)
        self.ms: Metastore = Metastore.open(metastore) if self._owned else metastore  # type: ignore[arg-type]

    def __enter__(self) -> Metastore:
        return self.ms

    def __exit__(self, *exc: object) -> None:
        if self._owned:
            self.ms.close()


def metastore_url(metastore: Metastore | str | None) -> str:
    """The URL of a Metastore, a URL, or the default metastore's URL."""
    from sargable.metastore.core import default_url

    if isinstance(metastore, Metastore):
        return metastore.url
    if metastore is None or isinstance(metastore, str):
        return metastore or default_url()
    raise SargableError(f"metastore must be a Metastore, a URL or None, got {type(metastore).__name__}")
