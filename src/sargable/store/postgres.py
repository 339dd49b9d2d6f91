"""The shared store: PostgreSQL through psycopg 3, one table `kv_<keyspace>` (bytea primary key) per keyspace.

`postgresql://user@host:port/db?schema=name` keeps the keyspaces in schema `name` (created if missing; default
`public`), which lets several metastores or test runs share one database. bytea compares bytewise (memcmp, then
length), the order the key codec needs, whatever the database's collation.

Statements outside a transaction commit one by one (psycopg autocommit); `put_many` outside one runs in its own
transaction. Write transactions run at READ COMMITTED: blind writes never conflict, and a read-modify-write reads
with `get_for_update` (SELECT ... FOR UPDATE), which makes a concurrent writer of the same key wait for the commit
and then see its result. Read-only transactions run at REPEATABLE READ, one snapshot for every scan page. A deadlock
or lock timeout rolls the transaction back and raises `TransactionConflictError` (statements outside a transaction
are retried; `Store.run_in_transaction` re-runs whole transactions). Every value is a bound parameter; scans are
keyset-paged, so no query returns more than one page of rows.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from sargable.errors import StoreError, TransactionConflictError
from sargable.store.base import TABLE_PREFIX, KeyspaceSQL, SQLStore, as_bytes, check_keyspace, unique_items, unique_keys

T = TypeVar("T")

_SCHEMA_RE = re.compile(r"[a-z_][a-z0-9_]{0,62}\Z")
_CONFLICT_STATES = frozenset({"40001", "40P01", "55P03"})
"""serialization_failure, deadlock_detected, lock_not_available."""
AUTOCOMMIT_ATTEMPTS = 8
PUT_BATCH = 5000
MULTI_GET_BATCH = 10000


def redact(url: str) -> str:
    """The URL without its password (in the authority or as a `password=` parameter)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        netloc = f"{userinfo.split(':', 1)[0]}@{host}"
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "password"])
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def split_schema(url: str) -> tuple[str, str]:
    """(libpq URL without the `schema` parameter, schema name) of a sargable PostgreSQL URL."""
    parts = urlsplit(url)
    params = parse_qsl(parts.query, keep_blank_values=True)
    schemas = [v for k, v in params if k == "schema"]
    if len(schemas) > 1:
        raise StoreError(f"{redact(url)}: give the schema parameter once")
    schema = schemas[0] if schemas else "public"
    if not _SCHEMA_RE.match(schema):
        raise StoreError(
            f"{redact(url)}: invalid schema name {schema!r}: use lowercase letters, digits and underscores "
            "(at most 63, not starting with a digit)"
        )
    query = urlencode([(k, v) for k, v in params if k != "schema"])
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment)), schema


def _import_psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise StoreError(
            "PostgreSQL stores need psycopg 3, which is not installed: pip install 'sargable[postgres]'"
        ) from None
    return psycopg


class _Statements(KeyspaceSQL):
    """The SQL of one keyspace, built once with properly quoted identifiers."""

    def __init__(self, psycopg: Any, conn: Any, schema: str, keyspace: str) -> None:
        table = psycopg.sql.Identifier(schema, TABLE_PREFIX + keyspace).as_string(conn)
        super().__init__(table, "%s")
        self.create = f"CREATE TABLE IF NOT EXISTS {table} (k bytea PRIMARY KEY, v bytea NOT NULL)"
        self.get_for_update = f"SELECT v FROM {table} WHERE k = %s FOR UPDATE"
        self.multi_get = f"SELECT k, v FROM {table} WHERE k = ANY(%s)"
        upsert = "ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v"
        self.put = f"INSERT INTO {table} (k, v) VALUES (%s, %s) {upsert}"
        self.put_many = f"INSERT INTO {table} (k, v) SELECT * FROM unnest(%s::bytea[], %s::bytea[]) {upsert}"
        self.blocks(
            "SELECT string_agg(k, ''::bytea), string_agg(({lengths})::text, ','), string_agg(v, ''::bytea) "
            f"FROM (SELECT k, v FROM {table} WHERE k >= %s {{stop}}ORDER BY k LIMIT %s) AS page",
            "length(k)::bigint + (length(v)::bigint << 32)",
            "length(k)",
        )
        """The aggregates take the rows in the order the subquery gives them (a LIMIT subquery is never flattened
        and runs in one stream); an `ORDER BY` in each aggregate would sort each again (PostgreSQL 15), 2-3x slower."""


class PostgresStore(SQLStore):
    """A store in a PostgreSQL database (`postgresql://user[:password]@host[:port]/db[?schema=name]`)."""

    backend = "postgresql"
    blocks_of_long_values = False

    def __init__(self, url: str) -> None:
        super().__init__(redact(url))
        self._psycopg = psycopg = _import_psycopg()
        conninfo, self.schema = split_schema(url)
        self._statements: dict[str, _Statements] = {}
        try:
            self._conn = psycopg.connect(conninfo, autocommit=True, prepare_threshold=2)
        except psycopg.Error as exc:
            raise self._error(exc, "connect") from None
        self._cursor = self._conn.cursor(binary=True)
        if self.schema != "public":
            self._ensure_schema()

    def _ensure_schema(self) -> None:
        exists = "SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = %s"
        if self._run(lambda: self._cursor.execute(exists, (self.schema,)).fetchone(), "look up schema"):
            return
        create = f"CREATE SCHEMA IF NOT EXISTS {self._psycopg.sql.Identifier(self.schema).as_string(self._conn)}"
        try:
            self._run(lambda: self._cursor.execute(create), f"create schema {self.schema}")
        except StoreError:
            if not self._run(lambda: self._cursor.execute(exists, (self.schema,)).fetchone(), "look up schema"):
                raise

    # --- errors and retries ---------------------------------------------------------------------------------

    def _error(self, exc: Exception, action: str) -> StoreError:
        state = getattr(exc, "sqlstate", None)
        message = f"postgresql store {self.url}: {action} failed: {str(exc).strip()}"
        if state in _CONFLICT_STATES:
            return TransactionConflictError(f"{message} (a concurrent transaction won; retry)")
        if state == "42P01":
            return StoreError(f"postgresql store {self.url}: {action} failed: the keyspace does not exist")
        return StoreError(message)

    def _run(self, fn: Callable[[], T], action: str) -> T:
        """Run `fn`; outside a transaction a conflict (deadlock, serialization failure) is retried."""
        self._check_open()
        attempts = 1 if self._depth else AUTOCOMMIT_ATTEMPTS
        for attempt in range(attempts):
            try:
                return fn()
            except self._psycopg.Error as exc:
                if attempt == attempts - 1 or getattr(exc, "sqlstate", None) not in _CONFLICT_STATES:
                    raise self._error(exc, action) from None
                time.sleep(random.uniform(0, 0.002 * 2**attempt))
        raise AssertionError("unreachable")

    def _sql(self, keyspace: str) -> _Statements:
        statements = self._statements.get(keyspace)
        if statements is None:
            check_keyspace(keyspace)
            statements = _Statements(self._psycopg, self._conn, self.schema, keyspace)
            self._statements[keyspace] = statements
        return statements

    def _statement(self, sql: str, params: Sequence[Any]) -> Any:
        return self._cursor.execute(sql, params)

    # --- transaction primitives -----------------------------------------------------------------------------

    def _begin(self, readonly: bool) -> None:
        sql = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" if readonly else "BEGIN ISOLATION LEVEL READ COMMITTED"
        self._run(lambda: self._conn.execute(sql), "begin")

    def _commit(self) -> None:
        try:
            self._conn.execute("COMMIT")
        except self._psycopg.Error as exc:
            self._rollback()
            raise self._error(exc, "commit") from None

    def _rollback(self) -> None:
        if self._conn.closed or self._conn.info.transaction_status == self._psycopg.pq.TransactionStatus.IDLE:
            return
        try:
            self._conn.execute("ROLLBACK")
        except self._psycopg.Error as exc:
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
        try:
            self._run(lambda: self._cursor.execute(sql), f"create keyspace {name}")
        except StoreError:
            if self._depth or name not in self.keyspaces():
                raise

    def drop_keyspace(self, name: str) -> None:
        self._check_writable()
        sql = self._sql(name).drop
        self._run(lambda: self._cursor.execute(sql), f"drop keyspace {name}")

    def keyspaces(self) -> list[str]:
        sql = (
            "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = %s AND left(tablename, 3) = %s "
            "ORDER BY tablename"
        )
        rows = self._run(lambda: self._cursor.execute(sql, (self.schema, TABLE_PREFIX)).fetchall(), "list keyspaces")
        return [name[len(TABLE_PREFIX) :] for (name,) in rows]

    # --- reads ----------------------------------------------------------------------------------------------

    def get(self, keyspace: str, key: bytes) -> bytes | None:
        sql = self._sql(keyspace).get
        params = (as_bytes(key),)
        row = self._run(lambda: self._cursor.execute(sql, params).fetchone(), f"get from {keyspace}")
        return None if row is None else row[0]

    def get_for_update(self, keyspace: str, key: bytes) -> bytes | None:
        self._check_writable()
        statements = self._sql(keyspace)
        sql = statements.get_for_update if self._depth else statements.get
        params = (as_bytes(key),)
        row = self._run(lambda: self._cursor.execute(sql, params).fetchone(), f"get_for_update from {keyspace}")
        return None if row is None else row[0]

    def multi_get(self, keyspace: str, keys: Iterable[bytes]) -> dict[bytes, bytes]:
        sql = self._sql(keyspace).multi_get
        wanted = unique_keys(keys)
        found: dict[bytes, bytes] = {}
        for offset in range(0, len(wanted), MULTI_GET_BATCH):
            batch = list(wanted[offset : offset + MULTI_GET_BATCH])
            rows = self._run(lambda b=batch: self._cursor.execute(sql, (b,)).fetchall(), f"multi_get from {keyspace}")
            found.update(rows)
        return found

    # --- writes ---------------------------------------------------------------------------------------------

    def put_many(self, keyspace: str, items: Iterable[tuple[bytes, bytes]]) -> int:
        self._check_writable()
        sql = self._sql(keyspace).put_many
        pairs = unique_items(items)

        def write() -> None:
            for offset in range(0, len(pairs), PUT_BATCH):
                batch = pairs[offset : offset + PUT_BATCH]
                params = ([k for k, _ in batch], [v for _, v in batch])
                self._run(lambda p=params: self._cursor.execute(sql, p), f"put_many into {keyspace}")

        if pairs:
            self.run_in_transaction(write, attempts=AUTOCOMMIT_ATTEMPTS)
        return len(pairs)
