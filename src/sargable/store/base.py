"""The ordered key-value store interface every backend implements, and the logic they share.

A store holds named keyspaces (tables of `bytes` keys to `bytes` values, kept in bytewise key order). Reads and
writes outside `transaction()` are committed one call at a time; inside it they commit together or not at all.
"""

from __future__ import annotations

import itertools
import random
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from sargable.errors import StoreError, TransactionConflictError
from sargable.store.blocks import RowBlock, parse_lengths, repeated

T = TypeVar("T")

_KEYSPACE_RE = re.compile(r"[a-z][a-z0-9_]{0,47}\Z")
TABLE_PREFIX = "kv_"
"""Keyspace `name` lives in the table `kv_name`, so keyspaces never collide with other tables of the database."""

FIRST_PAGE = 64
MAX_PAGE = 8192
"""Scans fetch pages that grow from FIRST_PAGE to MAX_PAGE rows: cheap early exits, few round trips on long scans."""
BLOCK_SIZES = (1024, 16384)
"""Rows per `scan_blocks` statement: growing to the last, which repeats."""
MAX_RANGES = 64
"""Most ranges one statement of `scan_ranges` reads (a UNION ALL of one indexed range read each, merged in key
order); shorter lists are padded with empty ranges to the next power of two, so each keyspace has a few shapes."""
RANGE_SHAPES = tuple(1 << n for n in range(MAX_RANGES.bit_length()))


def check_keyspace(name: Any) -> str:
    """Validate a keyspace name (lowercase letter, then up to 47 of lowercase letters, digits, `_`)."""
    if not isinstance(name, str) or not _KEYSPACE_RE.match(name):
        raise StoreError(
            f"invalid keyspace name {name!r}: use a lowercase letter followed by up to 47 lowercase letters, "
            "digits or underscores"
        )
    return name


def as_bytes(value: Any, what: str = "key") -> bytes:
    """A key or value as `bytes` (bytearray and memoryview are copied); anything else is a `StoreError`."""
    if type(value) is bytes:
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise StoreError(f"store {what}s are bytes, got {type(value).__name__} {value!r:.80}")


MAX_KEY_BYTES = 2048
"""The longest key any store writes. PostgreSQL's btree index refuses entries over about 2,700 bytes (what fits
depends on how well the key compresses); SQLite refuses the same keys, so both backends hold the same data."""
ABOVE_ALL_KEYS = b"\xff" * (MAX_KEY_BYTES + 1)
"""A bound above every key a store holds: the stop of an unbounded range in a statement that needs one."""


def writable_key(key: Any) -> bytes:
    """A key about to be written: bytes (see `as_bytes`) no longer than MAX_KEY_BYTES, else a `StoreError`."""
    data = as_bytes(key)
    if len(data) > MAX_KEY_BYTES:
        raise StoreError(
            f"a key of {len(data):,} bytes is longer than the {MAX_KEY_BYTES:,} bytes a store key may have; "
            "shorten the partition values or file path it holds"
        )
    return data


def successor(key: bytes) -> bytes:
    """The smallest key greater than `key`: where a forward scan resumes after it."""
    return key + b"\x00"


class Store(ABC):
    """An ordered key-value store with named keyspaces and ACID transactions.

    Transactions: `with store.transaction():` commits on success and rolls back on an exception. A nested
    `transaction()` is a savepoint: an exception inside it undoes only its own writes (and propagates). A
    `transaction(readonly=True)` reads one consistent snapshot and refuses writes. A `Store` object is meant for one
    thread at a time; open one per thread or process (stores are safe to share between processes).
    """

    backend: str
    url: str
    """The store's URL without any password."""
    blocks_of_long_values = True
    """Whether `scan_blocks` reads rows with long values (file entries, hundreds of bytes each) at least as fast as
    `scan_pages`; False where the backend's aggregate of long values costs more than the rows (PostgreSQL's
    `string_agg`, twice the time of the rows at 100,000 file entries)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._depth = 0
        self._readonly = False
        self._closed = False
        self._serial = 0

    # --- backend primitives ---------------------------------------------------------------------------------

    @abstractmethod
    def _begin(self, readonly: bool) -> None: ...

    @abstractmethod
    def _commit(self) -> None: ...

    @abstractmethod
    def _rollback(self) -> None: ...

    @abstractmethod
    def _execute(self, sql: str) -> None:
        """Run one parameterless statement (savepoint handling)."""

    @abstractmethod
    def _close(self) -> None: ...

    # --- transactions ---------------------------------------------------------------------------------------

    @property
    def files(self) -> tuple[str, ...]:
        """The local files that hold the store (an embedded database and its side files); none for a server."""
        return ()

    @property
    def in_transaction(self) -> bool:
        """Whether a `transaction()` block is open on this store object."""
        return self._depth > 0

    @property
    def transaction_id(self) -> int | None:
        """A number identifying the open outermost transaction on this store object (None outside one): two reads
        that see the same number read the same snapshot."""
        return self._serial if self._depth else None

    @contextmanager
    def transaction(self, *, readonly: bool = False) -> Iterator[Store]:
        """Run the block as one transaction (or as a savepoint inside an enclosing one); yields the store."""
        self._check_open()
        if self._depth == 0:
            self._begin(readonly)
            self._serial += 1
            self._depth, self._readonly = 1, readonly
            try:
                yield self
            except BaseException:
                self._depth, self._readonly = 0, False
                self._rollback()
                raise
            self._depth, self._readonly = 0, False
            self._commit()
            return
        if self._readonly and not readonly:
            raise StoreError(f"{self.url}: a write transaction can't be nested in a read-only one")
        savepoint = f"sargable_{self._depth}"
        self._execute(f"SAVEPOINT {savepoint}")
        self._depth += 1
        try:
            yield self
        except BaseException:
            self._depth -= 1
            self._execute(f"ROLLBACK TO SAVEPOINT {savepoint}")
            self._execute(f"RELEASE SAVEPOINT {savepoint}")
            raise
        self._depth -= 1
        self._execute(f"RELEASE SAVEPOINT {savepoint}")

    def run_in_transaction(self, fn: Callable[..., T], *args: Any, attempts: int = 10, **kwargs: Any) -> T:
        """Call `fn(*args, **kwargs)` in a transaction, re-running it when it loses a race to a concurrent one
        (`TransactionConflictError`), with jittered backoff, up to `attempts` times. Inside an open transaction
        it just calls `fn` (the enclosing transaction owns the retry)."""
        if self._depth:
            return fn(*args, **kwargs)
        for attempt in range(attempts):
            try:
                with self.transaction():
                    return fn(*args, **kwargs)
            except TransactionConflictError:
                if attempt == attempts - 1:
                    raise
                time.sleep(random.uniform(0, 0.002 * 2**attempt))
        raise AssertionError("unreachable")

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"{self.url}: the store is closed")

    def _check_writable(self) -> None:
        if self._readonly and self._depth:
            raise StoreError(f"{self.url}: write in a read-only transaction")

    # --- keyspaces ------------------------------------------------------------------------------------------

    @abstractmethod
    def create_keyspace(self, name: str) -> None:
        """Create keyspace `name` if it does not exist (idempotent)."""

    @abstractmethod
    def drop_keyspace(self, name: str) -> None:
        """Drop keyspace `name` and all its keys; dropping a missing keyspace does nothing."""

    @abstractmethod
    def keyspaces(self) -> list[str]:
        """The names of the existing keyspaces, sorted."""

    # --- reads ----------------------------------------------------------------------------------------------

    @abstractmethod
    def get(self, keyspace: str, key: bytes) -> bytes | None:
        """The value under `key`, or None."""

    def get_for_update(self, keyspace: str, key: bytes) -> bytes | None:
        """Like `get`, and inside a write transaction locks the key until commit, so a read-modify-write of it
        can't interleave with another writer's (SQLite write transactions hold the whole database already)."""
        self._check_writable()
        return self.get(keyspace, key)

    @abstractmethod
    def multi_get(self, keyspace: str, keys: Iterable[bytes]) -> dict[bytes, bytes]:
        """The values of the given keys that exist, as {key: value}; missing keys are absent from the dict."""

    @abstractmethod
    def scan(
        self,
        keyspace: str,
        start: bytes | None = None,
        stop: bytes | None = None,
        *,
        reverse: bool = False,
        limit: int | None = None,
    ) -> Iterator[tuple[bytes, bytes]]:
        """Yield `(key, value)` for start <= key < stop (None: unbounded) in key order, descending if `reverse`,
        at most `limit` pairs. Pages are fetched by key (keyset paging), so memory stays bounded; outside a
        transaction each page sees the latest committed data, inside `transaction(readonly=True)` one snapshot."""

    def scan_pages(
        self, keyspace: str, start: bytes | None = None, stop: bytes | None = None
    ) -> Iterator[list[tuple[bytes, bytes]]]:
        """`scan` of [start, stop) in key order, as lists of `(key, value)` pairs (the store's pages, none empty): for
        callers that take many rows at once, without a generator step per row. Paging and snapshots as in `scan`."""
        page: list[tuple[bytes, bytes]] = []
        for row in self.scan(keyspace, start, stop):
            page.append(row)
            if len(page) >= MAX_PAGE:
                yield page
                page = []
        if page:
            yield page

    def scan_blocks(
        self, keyspace: str, start: bytes | None = None, stop: bytes | None = None, *, uniform: bytes | None = None
    ) -> Iterator[RowBlock]:
        """`scan` of [start, stop) in key order as `RowBlock`s (none empty): for listings of many rows, without a
        Python object per row where the backend can return rows in bulk. Paging and snapshots as in `scan`.

        `uniform`: the caller knows that values which concatenate to `uniform` once per row are each `uniform`
        (true of b"" always); a backend may then skip reading each value's length while that holds."""
        return map(RowBlock.of_rows, self.scan_pages(keyspace, start, stop))

    def scan_ranges(self, keyspace: str, ranges: Sequence[tuple[bytes, bytes | None]]) -> Iterator[tuple[bytes, bytes]]:
        """Yield `(key, value)` for the keys of several ranges `[start, stop)` (stop None: unbounded), which must be
        sorted and disjoint, in key order: one read of many ranges (the files of many partitions). Paging and
        snapshots as in `scan`."""
        for start, stop in check_ranges(ranges):
            yield from self.scan(keyspace, start, stop)

    @abstractmethod
    def count(self, keyspace: str, start: bytes | None = None, stop: bytes | None = None) -> int:
        """The number of keys in [start, stop)."""

    # --- writes ---------------------------------------------------------------------------------------------

    @abstractmethod
    def put(self, keyspace: str, key: bytes, value: bytes) -> None:
        """Set `key` to `value` (insert or replace)."""

    @abstractmethod
    def put_many(self, keyspace: str, items: Iterable[tuple[bytes, bytes]]) -> int:
        """Set many keys at once (atomically, also outside a transaction); the last value of a repeated key wins.
        Returns the number of distinct keys written."""

    @abstractmethod
    def delete(self, keyspace: str, key: bytes) -> bool:
        """Delete `key`; whether it existed."""

    @abstractmethod
    def delete_range(self, keyspace: str, start: bytes | None = None, stop: bytes | None = None) -> int:
        """Delete every key in [start, stop); the number deleted."""

    # --- lifetime -------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection; an open transaction is rolled back. Closing twice is harmless."""
        if self._closed:
            return
        self._closed = True
        self._depth, self._readonly = 0, False
        self._close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url}>"


class KeyspaceSQL:
    """The statements of one keyspace that every SQL backend words alike, from its quoted table and parameter mark;
    a backend's subclass adds the ones its dialect words differently (create, put, multi_get)."""

    create: str
    """Create the keyspace's table if it does not exist."""
    put: str
    """Insert or replace one (k, v) row: the backend's upsert."""

    def __init__(self, table: str, mark: str) -> None:
        self.mark = mark
        self.drop = f"DROP TABLE IF EXISTS {table}"
        self.get = f"SELECT v FROM {table} WHERE k = {mark}"
        self.delete = f"DELETE FROM {table} WHERE k = {mark}"
        self.scan_open = f"SELECT k, v FROM {table} WHERE k >= {mark} ORDER BY k LIMIT {mark}"
        self.scan = f"SELECT k, v FROM {table} WHERE k >= {mark} AND k < {mark} ORDER BY k LIMIT {mark}"
        self.scan_open_desc = f"SELECT k, v FROM {table} WHERE k >= {mark} ORDER BY k DESC LIMIT {mark}"
        self.scan_desc = f"SELECT k, v FROM {table} WHERE k >= {mark} AND k < {mark} ORDER BY k DESC LIMIT {mark}"
        self.count_open = f"SELECT count(*) FROM {table} WHERE k >= {mark}"
        self.count = f"SELECT count(*) FROM {table} WHERE k >= {mark} AND k < {mark}"
        self.delete_open = f"DELETE FROM {table} WHERE k >= {mark}"
        self.delete_range = f"DELETE FROM {table} WHERE k >= {mark} AND k < {mark}"
        arm = f"SELECT k, v FROM {table} WHERE k >= {mark} AND k < {mark}"
        for slots in RANGE_SHAPES:
            setattr(self, f"scan_ranges_{slots}", " UNION ALL ".join([arm] * slots) + f" ORDER BY k LIMIT {mark}")

    block: str | None = None
    """One block of rows (`Store.scan_blocks`) in one result row: the keys concatenated, each row's key length plus
    its value length << 32 as comma-separated text, and the values concatenated; parameters: start, stop, size. None:
    the backend reads blocks as pages."""
    block_open: str | None = None
    """As `block` without a stop (start, size)."""
    block_lean: str | None = None
    """As `block` with the key lengths only (a fifth cheaper: for blocks whose values the caller knows)."""
    block_lean_open: str | None = None
    """As `block_lean` without a stop."""

    def blocks(self, template: str, sized: str, lean: str) -> None:
        """Set the block statements from a template with `{lengths}` (the per-row length expression: `sized`, or
        `lean` for the key length only) and `{stop}` (where the stop condition goes, with its trailing space)."""
        mark = self.mark
        self.block = template.format(lengths=sized, stop=f"AND k < {mark} ")
        self.block_open = template.format(lengths=sized, stop="")
        self.block_lean = template.format(lengths=lean, stop=f"AND k < {mark} ")
        self.block_lean_open = template.format(lengths=lean, stop="")

    def scan_ranges(self, count: int) -> tuple[str, int]:
        """(SQL, number of range slots) of one page over up to MAX_RANGES ranges: the smallest of RANGE_SHAPES
        holding `count` ranges; its parameters are each slot's start and stop, then the page size."""
        slots = min(MAX_RANGES, 1 << (count - 1).bit_length())
        return getattr(self, f"scan_ranges_{slots}"), slots


class SQLStore(Store):
    """A store over a SQL database, one table per keyspace: the reads and writes whose logic (keyset paging, range
    checks) is the same on every backend, which supplies its statements (`_sql`) and how it runs one (`_run`,
    `_statement`)."""

    @abstractmethod
    def _sql(self, keyspace: str) -> KeyspaceSQL:
        """The statements of a keyspace (its name validated by `check_keyspace`), built once."""

    @abstractmethod
    def _run(self, fn: Callable[[], T], action: str) -> T:
        """Call `fn`, which runs statements, turning the driver's errors into `StoreError`s (and retrying conflicts
        where the backend can)."""

    @abstractmethod
    def _statement(self, sql: str, params: Sequence[Any]) -> Any:
        """Execute one statement with bound parameters; the driver's cursor (fetchall / fetchone / rowcount)."""

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
        self, statements: KeyspaceSQL, keyspace: str, low: bytes, high: bytes | None, reverse: bool, limit: int | None
    ) -> Iterator[tuple[bytes, bytes]]:
        for page in self._pages(statements, keyspace, low, high, reverse, limit):
            yield from page

    def scan_pages(
        self, keyspace: str, start: bytes | None = None, stop: bytes | None = None
    ) -> Iterator[list[tuple[bytes, bytes]]]:
        statements = self._sql(keyspace)
        low, high = check_range(start, stop)
        return self._pages(statements, keyspace, low, high, False, None)

    def _pages(
        self, statements: KeyspaceSQL, keyspace: str, low: bytes, high: bytes | None, reverse: bool, limit: int | None
    ) -> Iterator[list[tuple[bytes, bytes]]]:
        """Keyset paging: each page starts past the last key of the previous one, so no query holds a cursor open."""
        if high is not None and low >= high:
            return
        statement, run = self._statement, self._run
        action = f"scan of {keyspace}"
        for size in page_sizes(limit):
            if high is None:
                sql, params = (statements.scan_open_desc if reverse else statements.scan_open), (low, size)
            else:
                sql, params = (statements.scan_desc if reverse else statements.scan), (low, high, size)
            rows = run(lambda s=sql, p=params: statement(s, p).fetchall(), action)
            if rows:
                yield rows
            if len(rows) < size:
                return
            if reverse:
                high = rows[-1][0]
            else:
                low = successor(rows[-1][0])

    def scan_blocks(
        self, keyspace: str, start: bytes | None = None, stop: bytes | None = None, *, uniform: bytes | None = None
    ) -> Iterator[RowBlock]:
        statements = self._sql(keyspace)
        if statements.block is None:
            return super().scan_blocks(keyspace, start, stop, uniform=uniform)
        low, high = check_range(start, stop)
        return self._blocks(statements, keyspace, low, high, uniform)

    def _blocks(
        self, statements: KeyspaceSQL, keyspace: str, low: bytes, high: bytes | None, uniform: bytes | None
    ) -> Iterator[RowBlock]:
        """Keyset paging as `_pages`, a block per statement: without the value lengths while the values are
        `uniform`; a block whose values are not is read again with them, and so are the blocks after it."""
        if high is not None and low >= high:
            return
        statement, run = self._statement, self._run
        action = f"scan of {keyspace}"
        for n in itertools.count():
            size = BLOCK_SIZES[min(n, len(BLOCK_SIZES) - 1)]
            params = (low, size) if high is None else (low, high, size)
            if uniform is not None:
                sql = statements.block_lean_open if high is None else statements.block_lean
                keys, lengths, values = run(lambda s=sql, p=params: statement(s, p).fetchone(), action)
                if keys is None:
                    return
                key_lengths = parse_lengths(lengths)
                if values == uniform * len(key_lengths):
                    block = RowBlock(keys, key_lengths, values, repeated(len(uniform), key_lengths))
                else:
                    uniform = None
            if uniform is None:
                sql = statements.block_open if high is None else statements.block
                keys, lengths, values = run(lambda s=sql, p=params: statement(s, p).fetchone(), action)
                if keys is None:
                    return
                packed = parse_lengths(lengths)
                block = RowBlock(keys, packed & 0xFFFFFFFF, values, packed >> 32)
            yield block
            if len(block) < size:
                return
            low = successor(block.last_key())

    def scan_ranges(self, keyspace: str, ranges: Sequence[tuple[bytes, bytes | None]]) -> Iterator[tuple[bytes, bytes]]:
        statements = self._sql(keyspace)
        checked = check_ranges(ranges)
        if len(checked) == 1:
            return self._scan(statements, keyspace, *checked[0], False, None)
        return self._scan_ranges(statements, keyspace, checked)

    def _scan_ranges(
        self, statements: KeyspaceSQL, keyspace: str, ranges: list[tuple[bytes, bytes | None]]
    ) -> Iterator[tuple[bytes, bytes]]:
        """Keyset paging over batches of ranges: each page resumes past the last key read, ranges behind it dropped."""
        statement, run = self._statement, self._run
        action = f"scan of {keyspace}"
        for offset in range(0, len(ranges), MAX_RANGES):
            pending = ranges[offset : offset + MAX_RANGES]
            for size in page_sizes(None):
                sql, slots = statements.scan_ranges(len(pending))
                params: list[Any] = [b for lo, hi in pending for b in (lo, ABOVE_ALL_KEYS if hi is None else hi)]
                params.extend([b"", b""] * (slots - len(pending)))
                params.append(size)
                rows = run(lambda s=sql, p=params: statement(s, p).fetchall(), action)
                yield from rows
                if len(rows) < size:
                    break
                resume = successor(rows[-1][0])
                pending = [(max(lo, resume), hi) for lo, hi in pending if hi is None or hi > resume]
                if not pending:
                    break

    def count(self, keyspace: str, start: bytes | None = None, stop: bytes | None = None) -> int:
        statements = self._sql(keyspace)
        low, high = check_range(start, stop)
        if high is None:
            sql, params = statements.count_open, (low,)
        else:
            sql, params = statements.count, (low, high)
        return self._run(lambda: self._statement(sql, params).fetchone()[0], f"count of {keyspace}")

    def put(self, keyspace: str, key: bytes, value: bytes) -> None:
        self._check_writable()
        sql = self._sql(keyspace).put
        params = (writable_key(key), as_bytes(value, "value"))
        self._run(lambda: self._statement(sql, params), f"put into {keyspace}")

    def delete(self, keyspace: str, key: bytes) -> bool:
        self._check_writable()
        sql = self._sql(keyspace).delete
        params = (as_bytes(key),)
        return self._run(lambda: self._statement(sql, params).rowcount, f"delete from {keyspace}") > 0

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
        return self._run(lambda: self._statement(sql, params).rowcount, f"delete_range of {keyspace}")


def check_range(start: bytes | None, stop: bytes | None) -> tuple[bytes, bytes | None]:
    """Validate scan bounds; a None start becomes b"" (the smallest key)."""
    return (b"" if start is None else as_bytes(start, "bound")), (None if stop is None else as_bytes(stop, "bound"))


def check_ranges(ranges: Any) -> list[tuple[bytes, bytes | None]]:
    """Validate the ranges of `scan_ranges`: (start, stop) pairs, sorted and disjoint; empty ones are dropped."""
    if isinstance(ranges, (str, bytes, bytearray, memoryview)):
        raise StoreError("scan_ranges takes a sequence of (start, stop) pairs")
    out: list[tuple[bytes, bytes | None]] = []
    for item in ranges:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise StoreError(f"scan_ranges takes (start, stop) pairs, got {item!r:.80}")
        start, stop = check_range(*item)
        if stop is not None and start >= stop:
            continue
        if out and (out[-1][1] is None or start < out[-1][1]):  # type: ignore[operator]
            raise StoreError("the ranges of scan_ranges must be sorted by start and must not overlap")
        out.append((start, stop))
    return out


def check_limit(limit: int | None) -> int | None:
    """Validate a scan limit (None or a non-negative int)."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise StoreError(f"scan limit must be a non-negative integer or None, got {limit!r}")
    return limit


def page_sizes(limit: int | None) -> Iterator[int]:
    """The row counts of successive scan pages: growing, and never past `limit` in total."""
    size, left = FIRST_PAGE, limit
    while left is None or left > 0:
        page = size if left is None else min(size, left)
        yield page
        if left is not None:
            left -= page
        size = min(size * 4, MAX_PAGE)


def unique_items(items: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Validated pairs in key order, the last value of a repeated key winning (sorted writes avoid deadlocks)."""
    merged: dict[bytes, bytes] = {}
    try:
        for key, value in items:
            merged[writable_key(key)] = as_bytes(value, "value")
    except (TypeError, ValueError):
        raise StoreError("put_many takes an iterable of (key, value) pairs of bytes") from None
    return sorted(merged.items())


def unique_keys(keys: Iterable[bytes]) -> Sequence[bytes]:
    """Validated distinct keys of a multi_get."""
    if isinstance(keys, (bytes, bytearray, memoryview, str)):
        raise StoreError("multi_get takes an iterable of keys, not a single key")
    try:
        return list(dict.fromkeys(as_bytes(k) for k in keys))
    except TypeError:
        raise StoreError("multi_get takes an iterable of bytes keys") from None
