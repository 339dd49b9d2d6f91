"""Store benchmark: 1,000,000 keys of (date, int, string) on SQLite and PostgreSQL.

Measures bulk load time, point `get` latency (median, p99), full-scan throughput, one-day range scans and
`multi_get` of 1,000 keys, and prints one table. PostgreSQL comes from `--postgres URL` or
SARGABLE_TEST_POSTGRES_URL, as set by `bash scripts/postgres.sh run -- .venv/bin/python benchmarks/store.py`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from sargable import keys
from sargable.store import Store, open_store

TYPES = ["date", "int", "string"]
DAY0 = dt.date(2022, 1, 1)
REGIONS = [f"region-{i}" for i in range(10)]


def row(i: int) -> tuple[dt.date, int, str]:
    """The i-th key: 1,000 keys per day, 100 hours (ints) per day, 10 regions per hour."""
    return DAY0 + dt.timedelta(days=i // 1000), (i // 10) % 100, REGIONS[i % 10]


def value(i: int) -> bytes:
    return b"/warehouse/sales/events/part-%09d.parquet|rows=%d" % (i, i % 5000)


def load(store: Store, n: int) -> float:
    started = time.perf_counter()
    batch = 100_000
    with store.transaction():
        for offset in range(0, n, batch):
            chunk = range(offset, min(n, offset + batch))
            store.put_many("bench", ((keys.encode(row(i), TYPES), value(i)) for i in chunk))
    return time.perf_counter() - started


def point_gets(store: Store, n: int, samples: int) -> list[float]:
    rng = random.Random(1)
    probes = [keys.encode(row(rng.randrange(n)), TYPES) for _ in range(samples)]
    timings = []
    get = store.get
    for key in probes:
        started = time.perf_counter_ns()
        found = get("bench", key)
        timings.append((time.perf_counter_ns() - started) / 1000)
        assert found is not None
    return timings


def full_scan(store: Store, n: int) -> float:
    started = time.perf_counter()
    count = 0
    for _ in store.scan("bench"):
        count += 1
    elapsed = time.perf_counter() - started
    assert count == n, count
    return n / elapsed


def day_scans(store: Store, n: int, samples: int) -> list[float]:
    rng = random.Random(2)
    timings = []
    for _ in range(samples):
        day = DAY0 + dt.timedelta(days=rng.randrange(max(1, n // 1000)))
        start, stop = keys.prefix_range([day], TYPES)
        started = time.perf_counter()
        found = sum(1 for _ in store.scan("bench", start, stop))
        timings.append((time.perf_counter() - started) * 1000)
        assert found == min(1000, n)
    return timings


def multi_gets(store: Store, n: int, samples: int) -> list[float]:
    rng = random.Random(3)
    timings = []
    for _ in range(samples):
        wanted = [keys.encode(row(rng.randrange(n)), TYPES) for _ in range(1000)]
        started = time.perf_counter()
        found = store.multi_get("bench", wanted)
        timings.append((time.perf_counter() - started) * 1000)
        assert len(found) == len(set(wanted))
    return timings


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench(url: str, n: int) -> dict[str, str]:
    with open_store(url) as store:
        store.drop_keyspace("bench")
        store.create_keyspace("bench")
        load_s = load(store, n)
        gets = point_gets(store, n, 20_000)
        scan_rate = full_scan(store, n)
        days = day_scans(store, n, 50)
        multi = multi_gets(store, n, 30)
        store.drop_keyspace("bench")
        return {
            "backend": store.backend,
            "bulk load": f"{load_s:.1f} s ({n / load_s:,.0f} keys/s)",
            "get median": f"{statistics.median(gets):.1f} µs",
            "get p99": f"{percentile(gets, 0.99):.1f} µs",
            "full scan": f"{scan_rate:,.0f} keys/s",
            "1-day range scan (1,000 keys)": f"{statistics.median(days):.2f} ms",
            "multi_get 1,000 keys": f"{statistics.median(multi):.2f} ms",
        }


def print_table(results: list[dict[str, str]], n: int) -> None:
    rows = list(results[0])
    width = max(len(r) for r in rows)
    columns = [max(len(res[r]) for r in rows) for res in results]
    print(f"\nstore benchmark: {n:,} keys of ({', '.join(TYPES)})")
    line = "-" * (width + sum(c + 3 for c in columns))
    print(line)
    for r in rows:
        print(f"{r:<{width}}" + "".join(f" | {res[r]:>{c}}" for res, c in zip(results, columns, strict=True)))
        if r == "backend":
            print(line)
    print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1_000_000, help="number of keys (default 1,000,000)")
    parser.add_argument("--postgres", default=os.environ.get("SARGABLE_TEST_POSTGRES_URL"),
                        help="PostgreSQL URL (default: $SARGABLE_TEST_POSTGRES_URL); omit to bench SQLite only")
    parser.add_argument("--sqlite", default=None, help="SQLite file (default: a temporary file)")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.sqlite) if args.sqlite else Path(tmp) / "bench.db"
        results.append(bench(f"sqlite:///{path.resolve()}", args.keys))
    if args.postgres:
        separator = "&" if "?" in args.postgres else "?"
        results.append(bench(f"{args.postgres}{separator}schema=bench_{uuid.uuid4().hex[:8]}", args.keys))
    else:
        print("PostgreSQL skipped: pass --postgres URL or run under scripts/postgres.sh")
    print_table(results, args.keys)


if __name__ == "__main__":
    main()
