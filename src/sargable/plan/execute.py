"""Running a `FilterPlan` over an ordered key-value store, and `explain` with what it cost.

Ranges become byte bounds under the table's key prefix (`scan_bounds`), read a store page at a time; consecutive
Gets are fetched in `multi_get` batches. The plan's scans are sorted and disjoint, so results come out in key order
without sorting.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from sargable import keys
from sargable.deadline import check_deadline
from sargable.errors import SargableError
from sargable.plan.filterplan import FilterPlan, key_columns_of
from sargable.plan.keyfilter import KeyTest, compile_key_filter
from sargable.plan.scan import ScanMarker, ScanPlan
from sargable.store.base import Store
from sargable.store.blocks import RowBlock
from sargable.types import DataType

GET_BATCH = 512
"""Gets fetched per `multi_get` call."""


@dataclass
class ExecutionStats:
    """What executing a plan cost; filled in as the results are consumed."""

    keys_examined: int = 0
    keys_returned: int = 0
    ranges_scanned: int = 0
    gets: int = 0
    elapsed_ms: float = 0.0


@dataclass(frozen=True)
class Explain:
    """A plan and the cost of running it: keys read from the store, keys that matched, scans, gets, time."""

    plan: FilterPlan
    keys_examined: int
    keys_returned: int
    ranges_scanned: int
    gets: int
    elapsed_ms: float
    stats: ExecutionStats = field(repr=False, compare=False, default_factory=ExecutionStats)

    def __str__(self) -> str:
        return (
            f"{self.plan}\n"
            f"keys examined: {self.keys_examined}, keys returned: {self.keys_returned}, "
            f"ranges scanned: {self.ranges_scanned}, gets: {self.gets}, elapsed: {self.elapsed_ms:.3f} ms"
        )


def _before(values: tuple, types: Sequence[DataType]) -> bytes:
    return keys.encode(values, types)


def _after(values: tuple, types: Sequence[DataType]) -> bytes | None:
    return keys.prefix_end(keys.encode(values, types)) if values else None


def scan_bounds(
    scan: ScanPlan, key_columns: Sequence[tuple[str, DataType | str]], *, prefix: bytes = b""
) -> tuple[bytes, bytes | None]:
    """The half-open byte range [start, stop) of a scan's keys under a table `prefix` (stop None: unbounded)."""
    types = [t for _, t in key_columns_of(key_columns)]
    start: bytes | None
    stop: bytes | None
    if scan.start is None:
        start = b""
    else:
        start = _before(scan.start.values, types) if scan.start.inclusive else _after(scan.start.values, types)
    if scan.end is None:
        stop = None
    else:
        stop = _after(scan.end.values, types) if scan.end.inclusive else _before(scan.end.values, types)
    if start is None:
        return prefix, prefix
    return prefix + start, (prefix + stop) if stop is not None else keys.prefix_end(prefix) if prefix else None


def _check(
    plan: FilterPlan, key_columns: Sequence[tuple[str, DataType | str]] | None, prefix: bytes
) -> tuple[tuple[str, DataType], ...]:
    if not isinstance(plan, FilterPlan):
        raise SargableError(f"execute needs a FilterPlan, got {type(plan).__name__}")
    if not isinstance(prefix, bytes):
        raise SargableError(f"the key prefix must be bytes, got {type(prefix).__name__}")
    if key_columns is None:
        if not plan.key_columns:
            raise SargableError("the plan has no key_columns; pass the key's (name, type) pairs")
        return plan.key_columns
    columns = key_columns_of(key_columns)
    if plan.key_columns and plan.key_columns != columns:
        raise SargableError(
            f"the plan is over key columns {[n for n, _ in plan.key_columns]}, not {[n for n, _ in columns]}"
        )
    return columns


def execute(
    plan: FilterPlan,
    store: Store,
    keyspace: str,
    key_columns: Sequence[tuple[str, DataType | str]] | None = None,
    *,
    prefix: bytes = b"",
    stats: ExecutionStats | None = None,
) -> Iterator[tuple[bytes, bytes]]:
    """Yield `(key, value)` of every key the plan selects, in key order; `stats` (if given) counts the cost.

    Keys are `prefix + encoded key`; `key_columns` default to the plan's.
    """
    return chain.from_iterable(execute_pages(plan, store, keyspace, key_columns, prefix=prefix, stats=stats))


def execute_pages(
    plan: FilterPlan,
    store: Store,
    keyspace: str,
    key_columns: Sequence[tuple[str, DataType | str]] | None = None,
    *,
    prefix: bytes = b"",
    stats: ExecutionStats | None = None,
) -> Iterator[list[tuple[bytes, bytes]]]:
    """As `execute`, in lists of `(key, value)` pairs (the store's pages, filtered; none empty): for callers that
    decode many keys at once."""
    columns = _check(plan, key_columns, prefix)
    return _run(plan, store, keyspace, columns, prefix, stats if stats is not None else ExecutionStats(), False)


def execute_blocks(
    plan: FilterPlan,
    store: Store,
    keyspace: str,
    key_columns: Sequence[tuple[str, DataType | str]] | None = None,
    *,
    prefix: bytes = b"",
    stats: ExecutionStats | None = None,
    uniform: bytes | None = None,
) -> Iterator[RowBlock]:
    """As `execute_pages`, as `RowBlock`s: a range without a key filter is read with the store's `scan_blocks` (no
    Python object per row; `uniform` as there); gets and filtered ranges are read as pages and made blocks."""
    columns = _check(plan, key_columns, prefix)
    stats = stats if stats is not None else ExecutionStats()
    return _run(plan, store, keyspace, columns, prefix, stats, True, uniform)


def _run(
    plan: FilterPlan,
    store: Store,
    keyspace: str,
    columns: tuple[tuple[str, DataType], ...],
    prefix: bytes,
    stats: ExecutionStats,
    blocks: bool,
    uniform: bytes | None = None,
) -> Iterator[Any]:
    """The pages (lists of pairs) of a plan, or with `blocks` its `RowBlock`s."""
    began = time.perf_counter()
    types = [t for _, t in columns]
    offset = len(prefix)
    filters: dict[int, KeyTest] = {}

    def key_test(scan: ScanPlan) -> KeyTest | None:
        if scan.key_filter is None:
            return None
        found = filters.get(id(scan.key_filter))
        if found is None:
            found = filters[id(scan.key_filter)] = compile_key_filter(scan.key_filter, columns, offset=offset)
        return found

    try:
        pending: list[tuple[bytes, KeyTest | None]] = []
        for scan in plan.scans:
            if scan.is_get:
                assert isinstance(scan.start, ScanMarker)
                pending.append((prefix + keys.encode(scan.start.values, types), key_test(scan)))
                if len(pending) >= GET_BATCH:
                    yield from _fetch(store, keyspace, pending, stats, blocks)
                    pending = []
                continue
            if pending:
                yield from _fetch(store, keyspace, pending, stats, blocks)
                pending = []
            start, stop = scan_bounds(scan, columns, prefix=prefix)
            if stop is not None and start >= stop:
                continue
            stats.ranges_scanned += 1
            test = key_test(scan)
            if test is None and blocks:
                for block in store.scan_blocks(keyspace, start, stop, uniform=uniform):
                    stats.keys_examined += len(block)
                    stats.keys_returned += len(block)
                    yield block
                continue
            for page in store.scan_pages(keyspace, start, stop):
                stats.keys_examined += len(page)
                if test is not None:
                    page = _passing(page, test)
                if page:
                    stats.keys_returned += len(page)
                    yield RowBlock.of_rows(page) if blocks else page
        if pending:
            yield from _fetch(store, keyspace, pending, stats, blocks)
    finally:
        stats.elapsed_ms += (time.perf_counter() - began) * 1000


def _passing(page: list[Any], test: KeyTest) -> list[Any]:
    """The rows of a page whose key passes the key filter, under the current call's deadline (a key filter can be
    a long OR of patterns: one page of it may take seconds)."""
    kept = []
    for row in page:
        check_deadline()
        if test(row[0]):
            kept.append(row)
    return kept


def _fetch(
    store: Store, keyspace: str, pending: list[tuple[bytes, KeyTest | None]], stats: ExecutionStats, blocks: bool
) -> Iterator[Any]:
    stats.gets += len(pending)
    found = store.multi_get(keyspace, [key for key, _ in pending])
    page = []
    for key, test in pending:
        value = found.get(key)
        if value is None:
            continue
        check_deadline()
        stats.keys_examined += 1
        if test is None or test(key):
            page.append((key, value))
    if page:
        stats.keys_returned += len(page)
        yield RowBlock.of_rows(page) if blocks else page


def explain(
    plan: FilterPlan,
    store: Store,
    keyspace: str,
    key_columns: Sequence[tuple[str, DataType | str]] | None = None,
    *,
    prefix: bytes = b"",
) -> Explain:
    """Run the plan, discarding the values, and report it with keys examined and returned, scans and time."""
    stats = ExecutionStats()
    for _ in execute(plan, store, keyspace, key_columns, prefix=prefix, stats=stats):
        pass
    return Explain(
        plan, stats.keys_examined, stats.keys_returned, stats.ranges_scanned, stats.gets, stats.elapsed_ms, stats
    )
