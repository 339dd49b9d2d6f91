"""The embedded store: one SQLite file (standard-library sqlite3), one `WITHOUT ROWID` table per keyspace.

The database runs in WAL mode, so readers never block the writer nor it them; processes sharing the file wait for
each other through a busy timeout. Write transactions start with `BEGIN IMMEDIATE` (they take the write lock up
front, so two writers never deadlock on a lock upgrade) and are therefore serialized; read-only transactions use
`BEGIN DEFERRED` and see one snapshot. `synchronous=NORMAL`: a commit survives a crash of the process, and in WAL
mode the database stays consistent even on power loss (the last commits may be lost then).
SQL strings are constant per keyspace, so sqlite3's statement cache prepares each one once.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from sargable.errors import StoreError, TransactionConflictError
from sargable.store.base import (
    TABLE_PREFIX,
    Store,
    as_bytes,
    check_keyspace,
    check_limit,
    check_range,
    page_sizes,
    successor,
    unique_items,
    unique_keys,
    writable_key,
)

T = TypeVar("T")

BUSY_TIMEOUT_S = 60.0
"""How long a statement waits for another process's lock before failing."""
MULTI_GET_CHUNK = 256
"""Keys per `IN (...)` query of multi_get; short chunks are padded so the SQL text (and its prepared plan) is one."""


class _Statements:
    """The SQL of one keyspace, built once from its validated name."""

    def __init__(self, keyspace: str) -> None:
        table = f'"{TABLE_PREFIX}{keyspace}"'
        self.create = f"CREATE TABLE IF NOT EXISTS {table} (k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) WITHOUT ROWID"
        self.drop = f"DROP TABLE IF EXISTS {table}"
        self.get = f"SELECT v FROM {table} WHERE k = ?"
        marks = ", ".join("?" * MULTI_GET_CHUNK)
        self.multi_get = f"SELECT k, v FROM {table} WHERE k IN ({marks})"
        self.put = f"INSERT OR REPLACE INTO {table} (k, v) VALUES (?, ?)"
        self.delete = f"DELETE FROM {table} WHERE k = ?"
        self.scan_open = f"SELECT k, v FROM {table} WHERE k >= ? ORDER BY k LIMIT ?"
        self.scan = f"SELECT k, v FROM {table} WHERE k >= ? AND k < ? ORDER BY k LIMIT ?"
        self.scan_open_desc = f"SELECT k, v FROM {table} WHERE k >= ? ORDER BY k DESC LIMIT ?"
        self.scan_desc = f"SELECT k, v FROM {table} WHERE k >= ? AND k < ? ORDER BY k DESC LIMIT ?"
        self.count_open = f"SELECT count(*) FROM {table} WHERE k >= ?"
        self.count = f"SELECT count(*) FROM {table} WHERE k >= ? AND k < ?"
        self.delete_open = f"DELETE FROM {table} WHERE k >= ?"
        self.delete_range = f"DELETE FROM {table} WHERE k >= ? AND k < ?"


class SQLiteStore(Store):
    """A store in one SQLite database file (`sqlite:////abs/path.db`, `sqlite:///rel/path.db`, `sqlite://`)."""

    backend = "sqlite"

    def __init__(self, url: str, path: str, *, timeout: float = BUSY_TIMEOUT_S) -> None:
        super().__init__(url)
        self.path = path
        self._timeout = timeout
        self._statements: dict[str, _Statements] = {}
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
        self._retry(lambda: self._setup(), "open")

    def _setup(self) -> None:
        execute = self._conn.execute
        execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
        if self.path != ":memory:":
            mode = execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise StoreError(f"{self.url}: can't switch the database to WAL mode (it stays in {mode} mode)")
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
        sql = self._sql(keyspace).multi_get
        wanted = unique_keys(keys)
        found: dict[bytes, bytes] = {}
        for offset in range(0, len(wanted), MULTI_GET_CHUNK):
            chunk = list(wanted[offset : offset + MULTI_GET_CHUNK])
            chunk.extend([chunk[-1]] * (MULTI_GET_CHUNK - len(chunk)))
            rows = self._run(lambda c=chunk: self._conn.execute(sql, c).fetchall(), f"multi_get from {keyspace}")
            found.update(rows)
        return found

    def scan(
        self,
        keyspace: str,
        start: bytes | None = None,
        stop: bytes | None = None,
        *,
        reverse: bool = False,
        limit: int | None = None,
    ) -> Iterator[tuple[bytes, bytes]]:
        statements = self._sql(keyspace)
        low, high = check_range(start, stop)
        return self._scan(statements, keyspace, low, high, reverse, check_limit(limit))

    def _scan(
        self, statements: _Statements, keyspace: str, low: bytes, high: bytes | None, reverse: bool, limit: int | None
    ) -> Iterator[tuple[bytes, bytes]]:
        if high is not None and low >= high:
            return
        execute = self._conn.execute
        action = f"scan of {keyspace}"
        for size in page_sizes(limit):
            if high is None:
                sql, params = (statements.scan_open_desc if reverse else statements.scan_open), (low, size)
            else:
                sql, params = (statements.scan_desc if reverse else statements.scan), (low, high, size)
            rows = self._run(lambda s=sql, p=params: execute(s, p).fetchall(), action)
            yield from rows
            if len(rows) < size:
                return
            if reverse:
                high = rows[-1][0]
            else:
                low = successor(rows[-1][0])

    def count(self, keyspace: str, start: bytes | None = None, stop: bytes | None = None) -> int:
        statements = self._sql(keyspace)
        low, high = check_range(start, stop)
        if high is None:
            sql, params = statements.count_open, (low,)
        else:
            sql, params = statements.count, (low, high)
        return self._run(lambda: self._conn.execute(sql, params).fetchone()[0], f"count of {keyspace}")

    # --- writes ---------------------------------------------------------------------------------------------

    def put(self, keyspace: str, key: bytes, value: bytes) -> None:
        self._check_writable()
        sql = self._sql(keyspace).put
        params = (writable_key(key), as_bytes(value, "value"))
        self._run(lambda: self._cursor.execute(sql, params), f"put into {keyspace}")

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

    def delete(self, keyspace: str, key: bytes) -> bool:
        self._check_writable()
        sql = self._sql(keyspace).delete
        params = (as_bytes(key),)
        return self._run(lambda: self._conn.execute(sql, params).rowcount, f"delete from {keyspace}") > 0

    def delete_range(self, keyspace: str, start: bytes | None = None, stop: bytes | None = None) -> int:
        self._check_writable()
        statements = self._sql(keyspace)
        low, high = check_range(start, stop)
        if high is None:
            sql, params = statements.delete_open, (low,)
        else:
            if low >= high:
                return 0
            sql, params = statements.delete_range, (low, high)
        return self._run(lambda: self._conn.execute(sql, params).rowcount, f"delete_range of {keyspace}")
