"""Full file listings against the bare store read of the same rows (issue 29 item 3).

    .venv/bin/python benchmarks/file_listing.py [--files 100000] [--url URL] [--repeat 7] [--before SRC] [--json F]

One file per partition (`ds` date, `hr` int; 24 hours a day), each with statistics of four data columns, committed
through the public API. Each round runs, in a fresh process per side (this sargable, and with `--before` the one
whose `src` folder is given: the sides interleaved), each of: the bare store read of the table's file keys
(`Store.scan` of the FILES range, rows only), `Table.files(stats=False)`, `Table.files()` (every column's
statistics), `Metastore.open` + `table` + `scan().files` (no filter) and the same with `hr = 3` (a day's worth of
partitions selected through the secondary index on `hr`); each once untimed (to load the modules it needs), then
once timed on a new `Metastore` (cold caches: `Table.files` keeps whole listings per table version). Wall and CPU
time (of the process: a PostgreSQL server's own is not in it) are reported as medians, with the spread, and as
multiples of the same side's bare scan. `--url` measures another store;
PostgreSQL: `bash scripts/postgres.sh run -- .venv/bin/python benchmarks/file_listing.py --url
"$SARGABLE_TEST_POSTGRES_URL"`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import sargable as sg
from sargable.metastore.layout import table_prefix
from sargable.metastore.schema import FILES, key_range

COLUMNS = [("user_id", "bigint"), ("amount", "double"), ("country", "string"), ("event_time", "timestamp")]
KEYS = [("ds", "date"), ("hr", "int")]
COUNTRIES = ["BR", "CA", "DE", "FR", "IN", "JP", "UK", "US"]
FIRST_DAY = dt.date(2020, 1, 1)
BATCH = 20_000


def file_of(k: int, location: str) -> sg.FileStats:
    """The k-th file: partition (day k // 24, hour k % 24), statistics of every data column."""
    day, hour = FIRST_DAY + dt.timedelta(days=k // 24), k % 24
    start = dt.datetime.combine(day, dt.time(hour))
    rows = 1000 + k % 500
    return sg.FileStats(
        path=f"{location}/ds={day}/hr={hour}/part-{k:08d}-c000.snappy.parquet",
        row_count=rows,
        size_bytes=1_000_000 + 37 * k,
        partition={"ds": day, "hr": hour},
        columns={
            "user_id": sg.ColumnStats(min=k * 10, max=k * 10 + 9_999, null_count=0),
            "amount": sg.ColumnStats(min=0.5, max=999.25 + k % 7, null_count=k % 3, nan_count=0),
            "country": sg.ColumnStats(
                min="BR", max="US", null_count=0, distinct=frozenset(COUNTRIES[: 1 + k % len(COUNTRIES)])
            ),
            "event_time": sg.ColumnStats(min=start, max=start + dt.timedelta(minutes=59), null_count=0),
        },
    )


def build(url: str, files: int) -> None:
    """The table `bench.events` with `files` files, committed in batches."""
    with sg.Metastore.open(url) as ms:
        ms.create_database("bench", if_not_exists=True)
        if "events" in ms.list_tables("bench"):
            ms.drop_table("bench", "events")
        ms.create_table("bench", "events", COLUMNS, KEYS, index_all=True)
        location = ms.get_table("bench", "events").location
        for first in range(0, files, BATCH):
            batch = [file_of(k, location) for k in range(first, min(files, first + BATCH))]
            ms.commit("bench", "events", add_files=batch)


Case = Callable[[], tuple[int, float, float]]
"""A measurement: (rows returned, wall seconds, CPU seconds of this process)."""


def bare(url: str) -> Case:
    """The store's own read of the table's file entries: the rows, nothing decoded (the open not timed)."""

    def run() -> tuple[int, float]:
        with sg.Metastore.open(url) as ms:
            prefix = table_prefix(ms.get_table("bench", "events").table_id)
            store = ms.store
            began, cpu = time.perf_counter(), time.process_time()
            with store.transaction(readonly=True):
                rows = list(store.scan(FILES, *key_range(prefix)))
            return len(rows), time.perf_counter() - began, time.process_time() - cpu

    return run


def on_handle(url: str, fn: Callable[[sg.Table], int]) -> Case:
    """`fn` on a new metastore's table handle (cold caches), the open not timed."""

    def run() -> tuple[int, float]:
        with sg.Metastore.open(url) as ms:
            table = ms.table("bench", "events")
            began, cpu = time.perf_counter(), time.process_time()
            count = fn(table)
            return count, time.perf_counter() - began, time.process_time() - cpu

    return run


def open_and_plan(url: str, where: str | None) -> Case:
    """Open + table + plan, all timed."""

    def run() -> tuple[int, float, float]:
        began, cpu = time.perf_counter(), time.process_time()
        with sg.Metastore.open(url) as ms:
            count = len(ms.table("bench", "events").scan(where).files)
            elapsed, used = time.perf_counter() - began, time.process_time() - cpu
        return count, elapsed, used

    return run


CASES = ("bare store scan", "files(stats=False)", "files()", "open + scan().files", "open + scan('hr = 3').files")


def cases(url: str) -> dict[str, Case]:
    return dict(
        zip(
            CASES,
            (
                bare(url),
                on_handle(url, lambda t: len(t.files(stats=False))),
                on_handle(url, lambda t: len(t.files())),
                open_and_plan(url, None),
                open_and_plan(url, "hr = 3"),
            ),
            strict=True,
        )
    )


def measure(url: str) -> None:
    """One round in this process (a side's subprocess): each case once to load the modules it needs, then once
    timed, on a new `Metastore` each time; prints {case: [rows, wall ms, CPU ms]} as JSON."""
    found = {}
    for name, case in cases(url).items():
        case()
        count, wall, used = case()
        found[name] = [count, wall * 1000, used * 1000]
    print(json.dumps(found))


def run_side(url: str, source: str | None) -> dict[str, list[float]]:
    """A round of one side in a fresh process, with `source` first on its path (another version of sargable)."""
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [source, env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, __file__, "--measure", "--url", url], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--url", default=None, help="store URL (default: a new SQLite file)")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--before", default=None, help="the src folder of an earlier sargable, measured alongside")
    parser.add_argument("--json", default=None)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args.url)
        return
    with tempfile.TemporaryDirectory() as tmp:
        url = args.url or f"sqlite:///{Path(tmp) / 'metastore.db'}"
        began = time.perf_counter()
        build(url, args.files)
        print(f"built {args.files:,} files in {time.perf_counter() - began:.1f} s ({url.split(':')[0]})")
        sides = {"after": None, **({"before": args.before} if args.before else {})}
        rounds: dict[str, list[dict[str, list[float]]]] = {side: [] for side in sides}
        loads = []
        for _ in range(args.repeat):
            loads.append(os.getloadavg()[0])
            for side, source in sides.items():
                rounds[side].append(run_side(url, source))
        print(f"load average {min(loads):.1f}-{max(loads):.1f}; {args.repeat} rounds, sides interleaved, each in a "
              "fresh process; median (min-max)")
        report(rounds)
        if args.json:
            Path(args.json).write_text(json.dumps({"files": args.files, "rounds": rounds, "loads": loads}))
        if args.url:
            with sg.Metastore.open(url) as ms:
                ms.drop_table("bench", "events")


def report(rounds: dict[str, list[dict[str, list[float]]]]) -> None:
    """Medians per side and case, as multiples of the same side's bare store scan, and after vs before."""
    medians = {
        side: {name: [statistics.median(r[name][i] for r in found) for i in (1, 2)] for name in CASES}
        for side, found in rounds.items()
    }
    print(f"{'side':7} {'measurement':30} {'rows':>7} {'wall ms':>8} {'spread':>12} {'x bare':>6} {'CPU ms':>7} "
          f"{'x bare':>6} {'before/after':>12}")
    for side, found in rounds.items():
        bare_wall, bare_cpu = medians[side]["bare store scan"]
        for name in CASES:
            wall, used = medians[side][name]
            walls = [r[name][1] for r in found]
            spread = f"{min(walls):.0f}-{max(walls):.0f}"
            gain = ""
            if side == "after" and "before" in medians:
                gain = f"{medians['before'][name][0] / wall:.2f}x"
            print(f"{side:7} {name:30} {int(found[0][name][0]):>7} {wall:>8.1f} {spread:>12} {wall / bare_wall:>6.2f} "
                  f"{used:>7.1f} {used / bare_cpu:>6.2f} {gain:>12}")


if __name__ == "__main__":
    main()
