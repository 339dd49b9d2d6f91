"""The embedded store: one SQLite file (standard-library sqlite3), one `WITHOUT ROWID` table per keyspace.

The database runs in WAL mode, so readers never block the writer nor it them; processes sharing the file wait for
each other through a busy timeout. Write transactions start with `BEGIN IMMEDIATE` (they take the write lock up
front, so two writers never deadlock on a lock upgrade) and are therefore serialized; read-only transactions use
`BEGIN DEFERRED` and see one snapshot. `synchronous=NORMAL`: a commit survives a crash of the process, and in WAL
mode the database stays consistent even on power loss (the last commits may be lost then).
SQL strings are constant per keyspace, so sqlite3's statement cache prepares each one once.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from sargable.errors import StoreError, TransactionConflictError
from sargable.store.base import (
    TABLE_PREFIX,
    KeyspaceSQL,
    SQLStore,
    Store,
    as_bytes,
    check_keyspace,
    unique_items,
    unique_keys,
)
from sargable.store.blocks import RowBlock

T = TypeVar("T")

BUSY_TIMEOUT_S = 60.0
"""How long a statement waits for another process's lock before failing."""
SIDE_FILE_SUFFIXES = ("-wal", "-shm", "-journal")
"""The files SQLite keeps beside a database (write-ahead log, its shared-memory index, rollback journal)."""
MULTI_GET_CHUNK = 256
"""Most keys per `IN (...)` query of multi_get."""
MULTI_GET_SHAPES = tuple(1 << n for n in range(MULTI_GET_CHUNK.bit_length()))
"""The `IN (...)` sizes multi_get prepares (1, 2, 4, ..., 256): a chunk is padded to the next one, at most doubling
it, so one key costs about a get and sqlite3's statement cache holds a few shapes per keyspace."""


class _Statements(KeyspaceSQL):
    """The SQL of one keyspace, built once from its validated name; every attribute is one SQL text."""

    def __init__(self, keyspace: str) -> None:
        table = f'"{TABLE_PREFIX}{keyspace}"'
        super().__init__(table, "?")
        self.create = f"CREATE TABLE IF NOT EXISTS {table} (k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) WITHOUT ROWID"
        self.put = f"INSERT OR REPLACE INTO {table} (k, v) VALUES (?, ?)"
        self.blocks(
            "SELECT CAST(group_concat(k, '') AS BLOB), group_concat({lengths}), CAST(group_concat(v, '') AS BLOB) "
            f"FROM (SELECT k, v FROM {table} WHERE k >= ? {{stop}}ORDER BY k LIMIT ?)",
            "length(k) + (length(v) << 32)",
            "length(k)",
        )
        """A blob passes through group_concat unchanged in a UTF-8 database; the subquery (a LIMIT subquery is never
        flattened) gives the aggregate its rows in key order (SQLite before 3.44 has no ORDER BY in aggregates)."""
        for marks in MULTI_GET_SHAPES:
            setattr(self, f"multi_get_{marks}", f"SELECT k, v FROM {table} WHERE k IN ({', '.join('?' * marks)})")

    def multi_get(self, count: int) -> tuple[str, int]:
        """(SQL, number of marks) of the `IN (...)` query for up to MULTI_GET_CHUNK keys: the smallest of the
        MULTI_GET_SHAPES holding `count` keys (padded by repeating a key)."""
        marks = min(MULTI_GET_CHUNK, 1 << (count - 1).bit_length())
        return getattr(self, f"multi_get_{marks}"), marks


class SQLiteStore(SQLStore):
    """A store in one SQLite database file (`sqlite:////abs/path.db`, `sqlite:///rel/path.db`, `sqlite://`)."""

    backend = "sqlite"

    def __init__(self, url: str, path: str, *, timeout: float = BUSY_TIMEOUT_S, create: bool = True) -> None:
        super().__init__(url)
        self.path = path
        self._timeout = timeout
        absolute = os.path.abspath(path)
        self._files = () if path == ":memory:" else (absolute, *(absolute + suffix for suffix in SIDE_FILE_SUFFIXES))
        self._statements: dict[str, _Statements] = {}
        self._utf8 = True
        """Whether the database's text encoding is UTF-8, which `scan_blocks`' statements need (others transcode)."""
        if path != ":memory:" and not create:
            try:
                empty = os.stat(path).st_size == 0
            except OSError:
                empty = True
            if empty:
                raise StoreError(f"no store at {path}: the file is missing or empty")
        if path != ":memory:":
            try:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"{url}: can't create the directory of the database: {exc}") from None
        try:
            self._conn = sqlite3.connect(
                path, timeout=timeout, isolation_level=None, check_same_thread=False, cached_statements=512
            )
        except sqlite3.Error as exc:
            raise self._error(exc, "open") from None
        self._cursor = self._conn.cursor()
        try:
            self._retry(lambda: self._setup(create), "open")
        except StoreError:
            self._conn.close()
            raise

    @property
    def files(self) -> tuple[str, ...]:
        return self._files

    def _setup(self, create: bool) -> None:
        """Check that the file is a store (or a new, empty database) before changing anything in it, then set the
        connection up (WAL mode is a change to the file: another application's database is never switched)."""
        execute = self._conn.execute
        execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
        tables = [name for (name,) in execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()]
        ours = [name for name in tables if name.startswith(TABLE_PREFIX)]
        if tables and not ours:
            shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
            raise StoreError(
                f"{self.url} is a SQLite database of another application (tables {shown}), not a sargable store; "
                "it was left unchanged"
            )
        if not ours and not create:
            raise StoreError(f"no store at {self.path}: the database holds no sargable keyspaces")
        if self.path != ":memory:":
            mode = execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise StoreError(f"{self.url}: can't switch the database to WAL mode (it stays in {mode} mode)")
        self._utf8 = execute("PRAGMA encoding").fetchone()[0] == "UTF-8"
        execute("PRAGMA synchronous = NORMAL")
        execute("PRAGMA cache_size = -65536")
        execute("PRAGMA temp_store = MEMORY")

    # --- errors and retries ---------------------------------------------------------------------------------

    def _error(self, exc: Exception, action: str) -> StoreError:
        code = getattr(exc, "sqlite_errorcode", None)
        message = f"sqlite store {self.url}: {action} failed: {exc}"
        if code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            return TransactionConflictError(f"{message} (another process held the database lock too long)")
        if "no such table" in str(exc):
            return StoreError(f"sqlite store {self.url}: {action} failed: the keyspace does not exist ({exc})")
        return StoreError(message)

    def _retry(self, fn: Callable[[], T], action: str) -> T:
        """Run `fn`, retrying while the database is busy (for statements that are whole transactions)."""
        deadline = time.monotonic() + self._timeout
        delay = 0.001
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                busy = getattr(exc, "sqlite_errorcode", 0) & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
                if not busy or time.monotonic() >= deadline:
                    raise self._error(exc, action) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.1)
            except sqlite3.Error as exc:
                raise self._error(exc, action) from None

    def _run(self, fn: Callable[[], T], action: str) -> T:
        """Run `fn`: retried when busy outside a transaction, once inside one (it must not replay half of it)."""
        self._check_open()
        if self._depth:
            try:
                return fn()
            except sqlite3.Error as exc:
                raise self._error(exc, action) from None
        return self._retry(fn, action)

    def _sql(self, keyspace: str) -> _Statements:
        statements = self._statements.get(keyspace)
        if statements is None:
            statements = self._statements[check_keyspace(keyspace)] = _Statements(keyspace)
        return statements

    def _statement(self, sql: str, params: Sequence[Any]) -> sqlite3.Cursor:
        return self._conn.execute(sql, params)

    # --- transaction primitives -----------------------------------------------------------------------------

    def _begin(self, readonly: bool) -> None:
        self._run(lambda: self._conn.execute("BEGIN DEFERRED" if readonly else "BEGIN IMMEDIATE"), "begin")

    def _commit(self) -> None:
        try:
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            raise self._error(exc, "commit") from None

    def _rollback(self) -> None:
        if self._conn.in_transaction:
            try:
                self._conn.execute("ROLLBACK")
            except sqlite3.Error as exc:
                raise self._error(exc, "rollback") from None

    def _execute(self, sql: str) -> None:
        self._run(lambda: self._conn.execute(sql), sql.split()[0].lower())

    def _close(self) -> None:
        try:
            self._rollback()
        finally:
            self._conn.close()

    # --- keyspaces ------------------------------------------------------------------------------------------

    def create_keyspace(self, name: str) -> None:
        self._check_writable()
        sql = self._sql(name).create
        self._run(lambda: self._conn.execute(sql), f"create keyspace {name}")

    def drop_keyspace(self, name: str) -> None:
        self._check_writable()
        sql = self._sql(name).drop
        self._run(lambda: self._conn.execute(sql), f"drop keyspace {name}")

    def keyspaces(self) -> list[str]:
        sql = "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'kv\\_%' ESCAPE '\\' ORDER BY name"
        rows = self._run(lambda: self._conn.execute(sql).fetchall(), "list keyspaces")
        return [name[len(TABLE_PREFIX) :] for (name,) in rows]

    # --- reads ----------------------------------------------------------------------------------------------

    def get(self, keyspace: str, key: bytes) -> bytes | None:
        if type(key) is not bytes:
            key = as_bytes(key)
        statements = self._statements.get(keyspace) or self._sql(keyspace)
        if self._closed:
            self._check_open()
        try:
            row = self._cursor.execute(statements.get, (key,)).fetchone()
        except sqlite3.Error:
            row = self._run(lambda: self._conn.execute(statements.get, (key,)).fetchone(), f"get from {keyspace}")
        return None if row is None else row[0]

    def multi_get(self, keyspace: str, keys: Iterable[bytes]) -> dict[bytes, bytes]:
        statements = self._sql(keyspace)
        wanted = unique_keys(keys)
        found: dict[bytes, bytes] = {}
        for offset in range(0, len(wanted), MULTI_GET_CHUNK):
            chunk = list(wanted[offset : offset + MULTI_GET_CHUNK])
            sql, marks = statements.multi_get(len(chunk))
            chunk.extend([chunk[-1]] * (marks - len(chunk)))
            rows = self._run(lambda s=sql, c=chunk: self._conn.execute(s, c).fetchall(), f"multi_get from {keyspace}")
            found.update(rows)
        return found

    def scan_blocks(
        self, keyspace: str, start: bytes | None = None, stop: bytes | None = None, *, uniform: bytes | None = None
    ) -> Iterator[RowBlock]:
        if not self._utf8:
            return Store.scan_blocks(self, keyspace, start, stop, uniform=uniform)
        return super().scan_blocks(keyspace, start, stop, uniform=uniform)

    # --- writes ---------------------------------------------------------------------------------------------

    def put_many(self, keyspace: str, items: Iterable[tuple[bytes, bytes]]) -> int:
        self._check_writable()
        sql = self._sql(keyspace).put
        pairs = unique_items(items)
        if not pairs:
            return 0
        if self._depth:
            self._run(lambda: self._conn.executemany(sql, pairs), f"put_many into {keyspace}")
        else:
            with self.transaction():
                self._run(lambda: self._conn.executemany(sql, pairs), f"put_many into {keyspace}")
        return len(pairs)
