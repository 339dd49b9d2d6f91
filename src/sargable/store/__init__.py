"""The ordered key-value store under the metastore: `open_store(url)` gives a `Store` on SQLite or PostgreSQL.

URLs:

- `sqlite:////absolute/path.db`, `sqlite:///relative/path.db` (SQLAlchemy's convention: the path follows the
  third slash), `sqlite://` or `sqlite:///:memory:` for a private in-memory database. An optional `?timeout=S`
  sets how many seconds to wait for another process's lock (default 60). Parent directories are created.
- `postgresql://user[:password]@host[:port]/dbname[?schema=name&...]` (also `postgres://`): psycopg 3, installed
  with `pip install 'sargable[postgres]'` and imported only when such a URL is opened. `schema` selects (and
  creates) the schema holding the keyspaces; other parameters go to libpq.

See `sargable.store.base.Store` for the operations and transaction semantics, and the backend modules for how each
database provides them.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, unquote, urlsplit

from sargable.errors import StoreError, TransactionConflictError
from sargable.store.base import Store, check_keyspace

__all__ = ["Store", "StoreError", "TransactionConflictError", "check_keyspace", "open_store"]


def open_store(url: str, *, create: bool = True) -> Store:
    """Open the store at `url` (see the module docstring for the URL forms). Without `create`, a SQLite file must
    exist and hold a store already (nothing is created or changed otherwise)."""
    if not isinstance(url, str):
        raise StoreError(f"a store URL is a string such as 'sqlite:////path/meta.db', got {type(url).__name__}")
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme == "sqlite":
        return _open_sqlite(url, create)
    if scheme in ("postgresql", "postgres"):
        from sargable.store.postgres import PostgresStore

        return PostgresStore(url)
    raise StoreError(f"unsupported store URL {_shown(url)!r}: use sqlite:///path/to/file.db or postgresql://...")


def _shown(url: str) -> str:
    from sargable.store.postgres import redact

    try:
        return redact(url)
    except ValueError:
        return "<unparsable URL>"


def _open_sqlite(url: str, create: bool) -> Store:
    from sargable.store.sqlite import BUSY_TIMEOUT_S, SQLiteStore

    parts = urlsplit(url)
    if parts.netloc:
        raise StoreError(
            f"{url}: a SQLite URL has no host; write sqlite:////absolute/path.db or sqlite:///relative/path.db"
        )
    path = unquote(parts.path[1:]) if parts.path.startswith("/") else unquote(parts.path)
    timeout = BUSY_TIMEOUT_S
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key != "timeout":
            raise StoreError(f"{url}: unknown SQLite URL parameter {key!r} (known: timeout)")
        try:
            timeout = float(value)
        except ValueError:
            raise StoreError(f"{url}: timeout must be a number of seconds, got {value!r}") from None
        if not 0 <= timeout <= 86400:
            raise StoreError(f"{url}: timeout must be between 0 and 86400 seconds, got {value!r}")
    return SQLiteStore(url, path or ":memory:", timeout=timeout, create=create)
