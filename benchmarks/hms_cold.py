"""Cold partition calls side by side, interleaved (issue 32, items 2 and 1): Hive's metastore 2.3.10 on PostgreSQL
(direct SQL on), its partitions loaded by SQL into its schema (`benchmarks/hms.py`'s `hive_sql_load`, then checked
through its Thrift API: the count, and a sample field by field), against `sargable serve --cache-mb 0` on SQLite and
on PostgreSQL (every call reads the store and encodes: no reply cache), all running at once.

For each size, every read of `benchmarks/hms.py` (`reads`) is first answered by every system and the answers
compared, then timed round-robin: one call on each system in turn, `--repeat` rounds, so a moment of load on the
shared machine falls on every system alike. The median, the fastest and the slowest call are kept; the load
average is printed with the table. Hive calls that return more partition objects than `--hive-max-objects` are left
out (a listing of 1,000,000 `Partition`s needs more heap than Hive's 1 GiB; `--hive-heap` raises it).

Then the whole-table listings right after an add (a table taking a partition a minute): each round adds one new
partition (the newest in key order) to every system, then times `get_partition_names` and `get_partitions` on each,
the same on every system; a fourth server, `sargable serve` with its reply cache over the same SQLite store, takes the
SQLite adds, so its kept listings grow by the added partitions (`sargable.hms.cache`) where the cold servers read
the store again.

    bash scripts/postgres.sh run -- .venv/bin/python benchmarks/hms_cold.py --sizes 10000,100000,1000000 \\
        --jdbc-jar PATH/postgresql-42.7.13.jar --json benchmarks/results/hms-cold.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack, suppress
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from pymetastore.hive_metastore import ttypes

from hive_peer import POSTGRES_JDBC_JAR, HivePeer, postgres_conf
from hms import (
    DB,
    START,
    Cell,
    Client,
    answer_of,
    check_sql_load,
    hive_postgres_database,
    hive_sql_load,
    load_table,
    reads,
    storage,
)
from hms_server import SargableServe, peak_rss_mb

SYSTEMS = ("hive postgresql", "sargable sqlite", "sargable postgresql")
CACHED = "sargable sqlite, cached"
"""The server with its reply cache (over the SQLite store), in the listings right after an add."""
AFTER_ADD = "after an add"
"""The `cache` of the cells of the listings right after an add."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--repeat", type=int, default=9, help="rounds of timed calls per read")
    parser.add_argument("--postgres", default=os.environ.get("SARGABLE_TEST_POSTGRES_URL"))
    parser.add_argument("--jdbc-jar", type=Path, default=POSTGRES_JDBC_JAR)
    parser.add_argument("--hive-heap", default="1g")
    parser.add_argument("--hive-max-objects", type=int, default=100_000)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if not args.postgres or not args.jdbc_jar.is_file():
        parser.error("needs PostgreSQL (scripts/postgres.sh) and --jdbc-jar")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    loads = [os.getloadavg()[0]]
    cells: list[Cell] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="hms-cold-") as tmp, ExitStack() as stack:
        root = Path(tmp)
        database = stack.enter_context(hive_postgres_database(args.postgres))
        hive = stack.enter_context(
            HivePeer(root / "hive", extra_conf=postgres_conf(database), classpath=[args.jdbc_jar], heap=args.hive_heap)
        )
        schema = f"{args.postgres}{'&' if '?' in args.postgres else '?'}schema=cold_{uuid.uuid4().hex[:8]}"
        servers = {
            "hive postgresql": hive,
            "sargable sqlite": stack.enter_context(
                SargableServe(root / "sqlite", f"sqlite:///{root / 'meta.db'}", args=["--cache-mb", "0"])
            ),
            "sargable postgresql": stack.enter_context(SargableServe(root / "pg", schema, args=["--cache-mb", "0"])),
        }
        cached = stack.enter_context(SargableServe(root / "sqlite-cached", f"sqlite:///{root / 'meta.db'}"))
        clients = {system: Client(server.port) for system, server in servers.items()}
        grower = Client(cached.port)
        stack.callback(grower.close)
        for system, client in clients.items():
            stack.callback(client.close)
            base = f"file:{root / 'warehouse'}" if system.startswith("hive") else "s3a://bench"
            with suppress(ttypes.AlreadyExistsException):
                client.thrift.create_database(ttypes.Database(name=DB, locationUri=f"{base}/bench.db", parameters={}))
        for size in sizes:
            table = f"events_{size}"
            for system, client in clients.items():
                started = time.perf_counter()
                if system.startswith("hive"):
                    location = f"file:{root / 'warehouse' / 'bench.db' / table}"
                    seconds = hive_sql_load(database, client, table, location, size)
                    check_sql_load(client, table, size)
                    notes.append(f"{system}: {size:,} partitions loaded by SQL in {seconds:.1f} s, checked")
                else:
                    load_table(client, table, f"s3a://bench/bench.db/{table}", size, 10_000)
                    notes.append(f"{system}: {size:,} partitions added in {time.perf_counter() - started:.1f} s")
                print(notes[-1], file=sys.stderr, flush=True)
            for read in reads(size):
                expected = None
                timed = []
                for system, client in clients.items():
                    if system.startswith("hive") and read.label == "get_partitions" and size > args.hive_max_objects:
                        continue
                    result = read.call(client, table, True)
                    answer = answer_of(result)
                    expected = answer if expected is None else expected
                    if answer != expected:
                        raise SystemExit(f"{system} disagrees on {read.label} at {size:,}")
                    timed.append((system, client, len(result)))
                times: dict[str, list[float]] = {system: [] for system, _, _ in timed}
                for _ in range(args.repeat):
                    for system, client, _ in timed:
                        started = time.perf_counter()
                        read.call(client, table, False)
                        times[system].append((time.perf_counter() - started) * 1000)
                for system, _, count in timed:
                    mine = times[system]
                    cell = Cell(system, "cold", size, read.label, count, statistics.median(mine), min(mine), max(mine))
                    cells.append(cell)
                print(
                    f"  {size:,} {read.label}: "
                    + ", ".join(f"{s} {statistics.median(t):,.2f}" for s, t in times.items()),
                    file=sys.stderr,
                    flush=True,
                )
            cells += after_adds(table, size, clients, grower, args)
            for system, server in {**servers, CACHED: cached}.items():
                assert server.process is not None
                notes.append(f"{size:,}: peak resident memory of {system}: {peak_rss_mb(server.process.pid):,.0f} MiB")
    loads.append(os.getloadavg()[0])
    text = report(cells, sizes, args, loads)
    print("\n".join([text, *notes]))
    if args.json:
        command = "python benchmarks/hms_cold.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
        args.json.parent.mkdir(parents=True, exist_ok=True)
        data = {"command": command, "loads": loads, "cells": [asdict(c) for c in cells], "notes": notes}
        args.json.write_text(json.dumps(data, indent=1))


def after_adds(table: str, size: int, clients: dict[str, Client], grower: Client, args: argparse.Namespace) -> list:
    """The whole-table listings right after an add: per listing, each system's answer compared (which also keeps it
    in the cached server), then `--repeat` rounds of one add on every system (the SQLite one through the cached
    server) and one timed call on each."""
    listers = {**clients, CACHED: grower}
    writers = {
        "hive postgresql": clients["hive postgresql"],
        CACHED: grower,
        **{s: c for s, c in clients.items() if s == "sargable postgresql"},
    }
    added = 0
    cells = []
    listings = [r for r in reads(size) if r.label in ("get_partition_names", "get_partitions")]
    for read in listings:
        timed = {
            s: c
            for s, c in listers.items()
            if not (s.startswith("hive") and read.label == "get_partitions" and size > args.hive_max_objects)
        }
        answers = {s: answer_of(read.call(c, table, True)) for s, c in timed.items()}
        if any(a != next(iter(answers.values())) for a in answers.values()):
            raise SystemExit(f"the systems disagree on {read.label} at {size:,} (before the adds)")
        times: dict[str, list[float]] = {s: [] for s in timed}
        for _ in range(args.repeat):
            ds = (START + dt.timedelta(days=size // 24 + 1 + added)).isoformat()  # (after every loaded day)
            added += 1
            for client in writers.values():
                client.thrift.add_partitions(
                    [ttypes.Partition(values=[ds, "0"], dbName=DB, tableName=table, sd=storage(None), parameters={})]
                )
            for system, client in timed.items():
                started = time.perf_counter()
                read.call(client, table, False)
                times[system].append((time.perf_counter() - started) * 1000)
        last = {s: len(read.call(c, table, True)) for s, c in timed.items()}
        if len(set(last.values())) != 1:
            raise SystemExit(f"the systems disagree on {read.label} at {size:,} after the adds: {last}")
        for system, mine in times.items():
            count = next(iter(last.values()))
            cells.append(
                Cell(system, AFTER_ADD, size, read.label, count, statistics.median(mine), min(mine), max(mine))
            )
        print(
            f"  {size:,} {read.label} right after an add: "
            + ", ".join(f"{s} {statistics.median(t):,.2f}" for s, t in times.items()),
            file=sys.stderr,
            flush=True,
        )
    return cells


def report(cells: list[Cell], sizes: list[int], args: argparse.Namespace, loads: list[float]) -> str:
    """A table per size: each system's median (fastest-slowest) and Hive's time over each sargable backend's."""
    by = {(c.system, c.size, c.call): c for c in cells if c.cache != AFTER_ADD}
    by_add = {(c.system, c.size, c.call): c for c in cells if c.cache == AFTER_ADD}
    lines = [
        f"cold partition calls, ms: median of {args.repeat} rounds, interleaved (fastest-slowest); sargable serve "
        f"--cache-mb 0; load average {loads[0]:.1f} at the start, {loads[1]:.1f} at the end"
    ]
    for size in sizes:
        header = f"{'call':<42} {'parts':>9} " + " ".join(f"{s:>26}" for s in SYSTEMS) + f" {'x sqlite | x pg':>18}"
        lines += ["", f"{size:,} partitions", header, "-" * len(header)]
        for read in reads(size):
            row = [by.get((s, size, read.label)) for s in SYSTEMS]
            count = next(c.count for c in row if c is not None)
            shown = ["-" if c is None else f"{c.ms:,.2f} ({c.low:,.1f}-{c.high:,.1f})" for c in row]
            hive = row[0]
            ratios = " | ".join("-" if hive is None or c is None else f"{hive.ms / c.ms:,.1f}x" for c in row[1:])
            lines.append(f"{read.label[:42]:<42} {count:>9,} " + " ".join(f"{s:>26}" for s in shown) + f" {ratios:>18}")
    systems = (*SYSTEMS, CACHED)
    header = f"{'listing, right after an add':<42} {'parts':>9} " + " ".join(f"{s:>26}" for s in systems)
    lines += ["", "whole-table listings, each call right after one new partition was added to every system", header]
    lines.append("-" * len(header))
    for size in sizes:
        for label in ("get_partition_names", "get_partitions"):
            row = [by_add.get((s, size, label)) for s in systems]
            if not any(row):
                continue
            count = next(c.count for c in row if c is not None)
            shown = ["-" if c is None else f"{c.ms:,.2f} ({c.low:,.1f}-{c.high:,.1f})" for c in row]
            lines.append(f"{f'{size:,}: {label}':<42} {count:>9,} " + " ".join(f"{s:>26}" for s in shown))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
