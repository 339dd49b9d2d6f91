"""Readers under ingest (issue 32, item 4): one client adds a partition every `interval` seconds while `readers`
clients run selective `get_partitions_by_filter` calls and, one call in `1 / names_share`, list every partition name
(`get_partition_names`, as SHOW PARTITIONS does), against any Hive metastore API server (sargable's or Hive's).

The consistency check, per read: every partition whose add was acknowledged before the read began and that the
filter selects is in the reply (read-your-acknowledged-writes across clients); the reply holds only partitions the
writer added, each once, each matching the filter. At the end every acknowledged partition is listed, and nothing
else: nothing lost. The figures: reads, adds, p50 and p99 of the read latency (filters and listings apart) and of
the add latency.
"""

from __future__ import annotations

import datetime as dt
import random
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from hms_server import thrift_client

START = dt.date(2024, 1, 1)


def values_of(i: int) -> tuple[str, str]:
    """The writer's i-th partition: (ds, hr), a day of 24 hours after another."""
    return (START + dt.timedelta(days=i // 24)).isoformat(), str(i % 24)


def _values(name: str) -> tuple[str, str]:
    """(ds, hr) of a partition name `ds=.../hr=...` (the writer's values need no unescaping)."""
    ds, hr = name.split("/")
    return ds.removeprefix("ds="), hr.removeprefix("hr=")


def _percentile(times: list[float], q: float) -> float:
    if not times:
        return 0.0
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_ingest(
    port: int,
    db: str,
    table: str,
    new_partition: Callable[[tuple[str, str]], Any],
    seconds: float,
    *,
    interval: float = 0.1,
    readers: int = 4,
    names_share: float = 0.1,
    seed: int = 0,
) -> dict[str, Any]:
    """Run the scenario on `db.table` (made by the caller, partitioned by `(ds string, hr int)`, empty) through the
    server at `port`; `new_partition(values)` is the Thrift `Partition` to add. Returns the figures and `problems`
    (every consistency violation seen, empty when none)."""
    lock = threading.Lock()
    sent: set[tuple[str, str]] = set()
    """Every partition the writer sent (before its call): what a reply may hold."""
    acked: list[tuple[str, str]] = []
    problems: list[str] = []
    read_ms: list[float] = []
    names_ms: list[float] = []
    add_ms: list[float] = []
    stop = threading.Event()
    failures: list[BaseException] = []

    def writer() -> None:
        with thrift_client(port) as client:
            i = 0
            next_at = time.monotonic()
            while not stop.is_set():
                values = values_of(i)
                with lock:
                    sent.add(values)
                started = time.monotonic()
                client.add_partition(new_partition(values))
                done = time.monotonic()
                with lock:
                    acked.append(values)
                    add_ms.append((done - started) * 1000)
                i += 1
                next_at += interval
                stop.wait(max(0.0, next_at - time.monotonic()))

    def reader(n: int) -> None:
        rng = random.Random(seed * 1000 + n)
        with thrift_client(port) as client:
            while not stop.is_set():
                with lock:
                    before = list(acked)
                target = values_of(rng.randrange(len(before) + 3))
                if rng.random() < names_share:
                    text, selects, times = "every name", lambda v: True, names_ms
                    started = time.monotonic()
                    got = [_values(name) for name in client.get_partition_names(db, table, -1)]
                elif rng.random() < 0.5:
                    text, selects, times = (
                        f'ds = "{target[0]}" and hr = {target[1]}',
                        lambda v, t=target: v == t,
                        read_ms,
                    )
                    started = time.monotonic()
                    got = [tuple(p.values) for p in client.get_partitions_by_filter(db, table, text, -1)]
                else:
                    text, selects, times = f'ds = "{target[0]}"', lambda v, t=target: v[0] == t[0], read_ms
                    started = time.monotonic()
                    got = [tuple(p.values) for p in client.get_partitions_by_filter(db, table, text, -1)]
                elapsed = (time.monotonic() - started) * 1000
                with lock:
                    times.append(elapsed)
                    known = set(sent)
                missing = [v for v in before if selects(v) and v not in got]
                wrong = [v for v in got if not selects(v) or v not in known]
                if missing or wrong or len(set(got)) != len(got):
                    with lock:
                        problems.append(f"{text}: missing {missing}, not expected {wrong}, returned {got}")

    def guarded(work: Callable[..., None], *args: Any) -> Callable[[], None]:
        def run() -> None:
            try:
                work(*args)
            except BaseException as exc:  # reported by run_ingest
                failures.append(exc)
                stop.set()

        return run

    threads = [threading.Thread(target=guarded(writer))]
    threads += [threading.Thread(target=guarded(reader, n)) for n in range(readers)]
    for thread in threads:
        thread.start()
    stop.wait(seconds)
    stop.set()
    for thread in threads:
        thread.join(300)
    if failures:
        raise failures[0]
    with thrift_client(port) as client:
        names = client.get_partition_names(db, table, -1)
    listed = [_values(name) for name in names]
    if sorted(listed) != sorted(acked):
        lost = sorted(set(acked) - set(listed))[:5]
        extra = sorted(set(listed) - set(acked))[:5]
        problems.append(f"at the end: {len(listed)} listed, {len(acked)} acknowledged; lost {lost}, extra {extra}")
    return {
        "seconds": seconds,
        "readers": readers,
        "interval_ms": interval * 1000,
        "adds": len(acked),
        "reads": len(read_ms),
        "read_p50_ms": statistics.median(read_ms) if read_ms else 0.0,
        "read_p99_ms": _percentile(read_ms, 0.99),
        "names_reads": len(names_ms),
        "names_p50_ms": statistics.median(names_ms) if names_ms else 0.0,
        "names_p99_ms": _percentile(names_ms, 0.99),
        "add_p50_ms": statistics.median(add_ms) if add_ms else 0.0,
        "add_p99_ms": _percentile(add_ms, 0.99),
        "problems": problems,
    }
