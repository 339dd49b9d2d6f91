"""Planning over many files (issue 29): sargable against PyIceberg on the same files and statistics, open + plan,
for partition filters, no filter and a data-column filter, at 20,000, 100,000 and 1,000,000 files.

    .venv/bin/python benchmarks/file_planning.py [--sizes 20000,100000,1000000] [--orders clustered,scattered]
        [--rounds 5] [--peer-budget 120] [--postgres URL|none] [--cache DIR] [--json F] [--build-only] [--no-peers]

The table: partitions `ds` (date) x `hr` (int, 24 a day) from 2024-01-01 in key order, one file per partition of
`--rows` rows `(user_id bigint, amount double, country string)` (benchmarks/readers.py's schema). File `i` holds
user ids `r*R .. r*R + R-1` (R rows, r its rank), so per-file `user_id` ranges are disjoint and `user_id = v`
selects exactly one file: `clustered` ranks files in key order (what a table clustered by user_id looks like),
`scattered` by a fixed random permutation. `amount` is `i % 1000 + j/2` for row j, `country` cycles six values.

- Up to `--real-max` files (default 100,000) the Parquet files are written (Hive folders without the partition
  columns) and both sides get each footer's statistics (`sg.stats_from_parquet`; PyIceberg `DataFile`s with the same
  lower/upper bounds, value, null and NaN counts per column).
- Above it the files are not written: each file's statistics are those a written file would have (the footer
  statistics of one written file with its user_id and amount bounds, path and partition set; the same
  `size_bytes` for every file), registered the same way on both sides.

sargable: a SQLite metastore (PostgreSQL too with `--postgres`), a secondary index on `hr` (`index_all`), the files
added in commits of 20,000. PyIceberg: a SQLite `SqlCatalog`, identity(ds), identity(hr), the files appended by
fast appends of at most 100,000 (one manifest each: one at 20,000 and 100,000, ten at 1,000,000).

Timed, interleaved (each round runs every query on every side, the sides' order rotating), median of `--rounds`:
- sargable: `Metastore.open(url)` + `table("bench.events")` + `scan(filter).files` + close;
- PyIceberg (loaded once): `table.scan(row_filter=...).plan_files()` on a table loaded before the rounds;
- PyIceberg (load per query): `catalog.load_table(...)` then the same plan (the catalog object kept).
The CPU time of each call (this process, all its threads) is kept beside the wall time: the machine is shared.
A PyIceberg cell stops repeating once it has spent `--peer-budget` seconds (it always runs once, and at least three
times within the budget). Every side's file paths are checked against the files the query must select (computed
from the layout, not by either system); a mismatch is printed loudly and makes the exit status 1.

Built tables are cached under `--cache` (default /tmp/sargable-file-planning): the files, their statistics and the
PyIceberg table by size and order; the sargable metastore also by a hash of the imported sargable package's sources,
so other code (a change, or an older checkout's `src` on PYTHONPATH) builds a metastore of its own beside the others
(its stored layout may differ) and nothing else is rebuilt. `--build-only` builds the files and the PyIceberg tables
(what no code change invalidates) and stops.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import iceberg_peer
import sargable as sg
from readers import KEYS, SCHEMA, partition_of

ROOT = Path(__file__).resolve().parent.parent
COUNTRIES = ("BR", "DE", "FR", "IN", "JP", "US")
SARGABLE_BATCH = 20_000
ICEBERG_BATCH = 100_000
MIN_PEER_RUNS = 3
SQLITE, PG = "sargable sqlite", "sargable pg"
LOADED, PER_QUERY = "pyiceberg (loaded)", "pyiceberg (load per query)"
PEERS = (LOADED, PER_QUERY)


@dataclass(frozen=True)
class Query:
    """One query in both dialects and the indexes of the files it must select (None: every file)."""

    name: str
    sql: str | None
    iceberg: str | None
    expected: list[int] | None


@dataclass
class Layout:
    """Where the files of one size and order are and what each one holds."""

    size: int
    order: str
    rows: int
    root: Path
    ranks: list[int] = field(default_factory=list)

    @property
    def real(self) -> bool:
        return (self.root / "data").is_dir()

    def path(self, i: int) -> str:
        d, h = partition_of(i)
        return str(self.root / "data" / f"ds={d}" / f"hr={h}" / "part-00000.parquet")

    def user_ids(self, i: int) -> tuple[int, int]:
        low = self.ranks[i] * self.rows
        return low, low + self.rows - 1

    def amounts(self, i: int) -> tuple[float, float]:
        return float(i % 1000), i % 1000 + (self.rows - 1) / 2


def ranks(size: int, order: str) -> list[int]:
    """Each file's rank in user_id order: key order (`clustered`) or a fixed random permutation (`scattered`)."""
    if order == "clustered":
        return list(range(size))
    import numpy as np

    return np.random.default_rng(29).permutation(size).tolist()


def queries(layout: Layout) -> list[Query]:
    """Issue 29's queries: a day a third into the table, and a user id inside the file just past the middle."""
    size = layout.size
    d1 = partition_of(size // 3)[0]
    first = (d1 - partition_of(0)[0]).days * 24
    target = size // 2 + 7
    v = layout.user_ids(target)[0] + layout.rows // 3
    return [
        Query("one partition", f"ds = '{d1}' and hr = 3", f"ds = '{d1}' AND hr = 3", [first + 3]),
        Query("one day", f"ds = '{d1}'", f"ds = '{d1}'", [i for i in range(first, first + 24) if i < size]),
        Query("hr = 3", "hr = 3", "hr = 3", list(range(3, size, 24))),
        Query("no filter", None, None, None),
        Query("user_id = v", f"user_id = {v}", f"user_id = {v}", [target]),
    ]


# ------------------------------------------------------------------------------------------------ the files


def file_table(layout: Layout, i: int) -> pa.Table:
    """The rows of file `i`."""
    low, _ = layout.user_ids(i)
    base = i % 1000
    return pa.table(
        {
            "user_id": pa.array(range(low, low + layout.rows), pa.int64()),
            "amount": pa.array([base + j / 2 for j in range(layout.rows)], pa.float64()),
            "country": pa.array([COUNTRIES[j % len(COUNTRIES)] for j in range(layout.rows)]),
        }
    )


def footer_stats(layout: Layout, i: int) -> sg.FileStats:
    """The statistics in written file `i`'s footer."""
    d, h = partition_of(i)
    return sg.stats_from_parquet(layout.path(i), SCHEMA, partition={"ds": d, "hr": h})


def template_stats(layout: Layout) -> sg.FileStats:
    """The footer statistics of file 0 written alone (under `template/`), what every unwritten file's are made from."""
    folder = layout.root / "template"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "part-00000.parquet"
    pq.write_table(file_table(layout, 0), path)
    d, h = partition_of(0)
    return sg.stats_from_parquet(path, SCHEMA, partition={"ds": d, "hr": h})


def synthetic_stats(layout: Layout, template: sg.FileStats, i: int) -> sg.FileStats:
    """The statistics file `i` would have: the template's with its own path, partition and bounds."""
    d, h = partition_of(i)
    (u_low, u_high), (a_low, a_high) = layout.user_ids(i), layout.amounts(i)
    columns = dict(template.columns)
    columns["user_id"] = dataclasses.replace(columns["user_id"], min=u_low, max=u_high)
    columns["amount"] = dataclasses.replace(columns["amount"], min=a_low, max=a_high)
    return dataclasses.replace(template, path=layout.path(i), partition={"ds": d, "hr": h}, columns=columns)


def progress(what: str, done: int, total: int, started: float) -> None:
    elapsed = time.perf_counter() - started
    rate = done / elapsed if elapsed else 0.0
    left = (total - done) / rate if rate else 0.0
    print(f"  {what}: {done:,}/{total:,} ({rate:,.0f}/s, {left:,.0f} s left)", file=sys.stderr, flush=True)


def prepare_files(layout: Layout, real_max: int) -> None:
    """Write the Parquet files and keep their footer statistics (sizes up to `real_max`), or the template file."""
    done = layout.root / "files.done"
    if done.exists():
        return
    shutil.rmtree(layout.root, ignore_errors=True)
    layout.root.mkdir(parents=True)
    if layout.size > real_max:
        template_stats(layout)
        done.write_text("statistics only\n")
        return
    started = time.perf_counter()
    stats = []
    for i in range(layout.size):
        path = Path(layout.path(i))
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(file_table(layout, i), path)
        stats.append(footer_stats(layout, i))
        if (i + 1) % 10_000 == 0 or i + 1 == layout.size:
            progress("Parquet files written, footers read", i + 1, layout.size, started)
    with open(layout.root / "stats.pickle", "wb") as handle:
        pickle.dump(stats, handle, protocol=pickle.HIGHEST_PROTOCOL)
    done.write_text(f"{layout.size} files written in {time.perf_counter() - started:.0f} s\n")


def stats_batches(layout: Layout, batch: int) -> Iterator[list[sg.FileStats]]:
    """Every file's statistics, in key order, `batch` at a time."""
    if layout.real:
        with open(layout.root / "stats.pickle", "rb") as handle:
            stats = pickle.load(handle)
        for start in range(0, len(stats), batch):
            yield stats[start : start + batch]
        return
    template = template_stats(layout)
    for start in range(0, layout.size, batch):
        yield [synthetic_stats(layout, template, i) for i in range(start, min(start + batch, layout.size))]


# ------------------------------------------------------------------------------------------------ building


def source_hash() -> str:
    """A hash of the imported sargable package's Python files: other code builds a sargable metastore of its own."""
    digest = hashlib.sha256()
    package = Path(sg.__file__).parent
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def sargable_url(layout: Layout, code: str) -> str:
    return f"sqlite:///{layout.root / f'sargable-{code}.db'}"


def build_sargable(layout: Layout, system: str, url: str) -> float | None:
    """Register every file with its statistics (seconds; None when a finished build is there already)."""
    done = layout.root / f"{url.rsplit('/', 1)[-1].replace('?', '-')}.built"
    if done.exists():
        return None
    if system == SQLITE:
        Path(url.removeprefix("sqlite:///")).unlink(missing_ok=True)
    started = time.perf_counter()
    with sg.Metastore.open(url, warehouse=layout.root / "warehouse") as ms:
        if "bench" in ms.list_databases():
            ms.drop_database("bench", cascade=True)
        ms.create_database("bench")
        ms.create_table("bench", "events", SCHEMA, KEYS, location=str(layout.root / "data"), index_all=True)
        added = 0
        for batch in stats_batches(layout, SARGABLE_BATCH):
            added += ms.add_files("bench", "events", batch)
            if added % 100_000 == 0 or added == layout.size:
                progress(f"{system} files registered", added, layout.size, started)
    seconds = time.perf_counter() - started
    done.write_text(f"{seconds:.0f} s\n")
    return seconds


def build_iceberg(layout: Layout) -> float | None:
    """The PyIceberg table of the same files and statistics (seconds; None when cached)."""
    root = layout.root / "iceberg"
    done = root / "built"
    if done.exists():
        return None
    shutil.rmtree(root, ignore_errors=True)
    started = time.perf_counter()
    _, table = iceberg_peer.create_table(root, "events", SCHEMA, KEYS)
    added = 0
    for batch in stats_batches(layout, ICEBERG_BATCH):
        iceberg_peer.fast_append(table, (iceberg_peer.data_file_of(table, s, SCHEMA, ["ds", "hr"]) for s in batch))
        added += len(batch)
        progress("pyiceberg files appended", added, layout.size, started)
    seconds = time.perf_counter() - started
    done.write_text(f"{seconds:.0f} s\n")
    return seconds


# ------------------------------------------------------------------------------------------------ planning


def plan_sargable(url: str, warehouse: Path, q: Query) -> list[str]:
    with sg.Metastore.open(url, warehouse=warehouse) as ms:
        return [f.path for f in ms.table("bench.events").scan(q.sql).files]


def plan_iceberg(table: Any, q: Query) -> list[str]:
    scan = table.scan() if q.iceberg is None else table.scan(row_filter=q.iceberg)
    return [task.file.file_path for task in scan.plan_files()]


@dataclass
class Cell:
    times: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    files: int = -1

    @property
    def median(self) -> float:
        return statistics.median(self.times)


def run_size(layout: Layout, args: argparse.Namespace, code: str) -> dict[str, Any]:
    """Build (or reuse) both sides at one size and order, then the interleaved rounds."""
    prepare_files(layout, args.real_max)
    builds: dict[str, float | None] = {}
    urls = {SQLITE: sargable_url(layout, code)}
    if args.postgres:
        sep = "&" if "?" in args.postgres else "?"
        urls[PG] = f"{args.postgres}{sep}schema=fp_{layout.size}_{layout.order}_{code}"
    for system, url in urls.items():
        builds[system] = build_sargable(layout, system, url)
    warehouse = layout.root / "warehouse"
    systems: dict[str, Callable[[Query], list[str]]] = {
        system: (lambda q, u=url: plan_sargable(u, warehouse, q)) for system, url in urls.items()
    }
    if not args.no_peers:
        builds["pyiceberg"] = build_iceberg(layout)
        catalog = iceberg_peer.open_catalog(layout.root / "iceberg")
        loaded = catalog.load_table("bench.events")
        systems[LOADED] = lambda q: plan_iceberg(loaded, q)
        systems[PER_QUERY] = lambda q: plan_iceberg(catalog.load_table("bench.events"), q)
    qs = queries(layout)
    cells = {(s, q.name): Cell() for s in systems for q in qs}
    mismatches: list[str] = []
    order = list(systems)
    for round_ in range(args.rounds):
        for q in qs:
            for system in order[round_ % len(order) :] + order[: round_ % len(order)]:
                cell = cells[(system, q.name)]
                if system in PEERS and cell.times:
                    spent = sum(cell.times) / 1000
                    if spent > args.peer_budget or (len(cell.times) >= MIN_PEER_RUNS and spent > args.peer_budget / 2):
                        continue
                started, started_cpu = time.perf_counter(), time.process_time()
                paths = systems[system](q)
                cell.times.append((time.perf_counter() - started) * 1000)
                cell.cpu.append((time.process_time() - started_cpu) * 1000)
                if cell.files < 0:
                    cell.files = len(paths)
                    mismatches += check(layout, q, system, paths)
        print(f"  round {round_ + 1}/{args.rounds} done (load average {os.getloadavg()[0]:.1f})", file=sys.stderr)
    return {
        "size": layout.size,
        "order": layout.order,
        "statistics": "footers of written files" if layout.real else "generated (files not written)",
        "build_s": builds,
        "cells": [
            {
                "system": s,
                "filter": name,
                "ms": c.median,
                "runs_ms": c.times,
                "cpu_ms": statistics.median(c.cpu),
                "files": c.files,
            }
            for (s, name), c in cells.items()
        ],
        "mismatches": mismatches,
    }


def check(layout: Layout, q: Query, system: str, paths: list[str]) -> list[str]:
    """The files `system` selected against the files `q` must select; a line per mismatch, printed loudly."""
    expected = set(range(layout.size)) if q.expected is None else set(q.expected)
    want = {layout.path(i) for i in expected}
    got = set(paths)
    if got == want and len(paths) == len(want):
        return []
    line = (
        f"MISMATCH {layout.size:,} {layout.order} {q.name!r} {system}: {len(paths):,} paths ({len(got):,} distinct), "
        f"expected {len(want):,}; missing {sorted(want - got)[:3]}, extra {sorted(got - want)[:3]}"
    )
    print(f"\n!!!!!!!! {line}\n", file=sys.stderr, flush=True)
    return [line]


# ------------------------------------------------------------------------------------------------ output


def fmt(ms: float) -> str:
    return f"{ms:,.1f}" if ms < 100 else f"{ms:,.0f}"


def spread(cell: dict[str, Any]) -> str:
    runs = cell["runs_ms"]
    if len(runs) < 2:
        return f"{fmt(cell['ms'])} (1 run)"
    return f"{fmt(cell['ms'])} ({fmt(min(runs))}–{fmt(max(runs))}, n={len(runs)})"


def print_result(result: dict[str, Any]) -> None:
    cells = {(c["system"], c["filter"]): c for c in result["cells"]}
    systems = list(dict.fromkeys(c["system"] for c in result["cells"]))
    names = list(dict.fromkeys(c["filter"] for c in result["cells"]))
    ours = [s for s in systems if s.startswith("sargable")]
    print(f"\n### {result['size']:,} files, user_id {result['order']}, statistics: {result['statistics']}\n")
    print(f"build seconds (None: cached): {result['build_s']}\n")
    peers = [p for p in PEERS if p in systems]
    header = ["filter", "files", *systems, *(f"{s} / sqlite" for s in peers), "sqlite cpu ms"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name in names:
        row = [name, f"{cells[(ours[0], name)]['files']:,}"]
        row += [spread(cells[(s, name)]) for s in systems]
        base = cells[(SQLITE, name)]["ms"]
        row += [f"{cells[(p, name)]['ms'] / base:,.1f}x" for p in peers]
        row.append(fmt(cells[(SQLITE, name)].get("cpu_ms", float("nan"))))
        print("| " + " | ".join(row) + " |")
    for line in result["mismatches"]:
        print(f"- {line}")


def check_targets(results: list[dict[str, Any]]) -> None:
    """Issue 29's targets, from this run's figures."""
    print("\n## Targets (issue 29)\n")
    for result in results:
        cells = {(c["system"], c["filter"]): c["ms"] for c in result["cells"]}
        size, order = result["size"], result["order"]
        for name, target in (("user_id = v", 100), ("no filter", 30)):
            if (LOADED, name) not in cells:
                continue
            ratio = min(cells[(p, name)] for p in PEERS) / cells[(SQLITE, name)]
            if size == 100_000:
                verdict = "ok" if ratio >= target else "MISSED"
                print(f"- {size:,} ({order}) {name}: {ratio:,.1f}x PyIceberg (target >= {target}x): {verdict}")
        if size == 1_000_000:
            ms = cells[(SQLITE, "user_id = v")]
            verdict = "ok" if ms <= 300 else "MISSED"
            print(f"- 1,000,000 ({order}) user_id = v: {fmt(ms)} ms (target <= 300 ms): {verdict}")


def git_commit() -> str:
    out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "src"], capture_output=True, text=True)
    return out.stdout.strip() + ("+dirty src" if dirty.stdout.strip() else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20000,100000", help="files, comma-separated")
    parser.add_argument("--orders", default="clustered", help="clustered,scattered: how user_id ranges follow the keys")
    parser.add_argument("--rows", type=int, default=20, help="rows per file")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--peer-budget", type=float, default=120.0, help="seconds a PyIceberg cell may repeat for")
    parser.add_argument("--real-max", type=int, default=100_000, help="write real Parquet files up to this size")
    parser.add_argument("--postgres", default=os.environ.get("SARGABLE_TEST_POSTGRES_URL"), help="URL, or none")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/sargable-file-planning"))
    parser.add_argument("--json", type=Path, help="also write the results here (benchmarks/plots.py)")
    parser.add_argument("--no-peers", action="store_true", help="sargable alone (e.g. an older src on PYTHONPATH)")
    parser.add_argument(
        "--build-only", action="store_true", help="only build what survives code changes: files, PyIceberg tables"
    )
    args = parser.parse_args(argv)
    if (args.postgres or "none") == "none":
        args.postgres = None
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s]
    orders = [o for o in args.orders.split(",") if o]
    code, commit = source_hash(), git_commit()
    load = [os.getloadavg()[0]]
    print("# Planning over many files: sargable vs PyIceberg (issue 29)\n")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, commit {commit}, load average {load[0]:.1f}")
    print(f"command: {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    print(f"sargable imported from {Path(sg.__file__).parent} (sources {code})")
    results = []
    for size in sizes:
        for order in orders:
            layout = Layout(size, order, args.rows, args.cache / f"{size}-{order}-r{args.rows}", ranks(size, order))
            print(f"{size:,} files, {order}: building / reusing {layout.root}", file=sys.stderr, flush=True)
            if args.build_only:
                prepare_files(layout, args.real_max)
                build_iceberg(layout)
                continue
            results.append(run_size(layout, args, code))
            load.append(os.getloadavg()[0])
            print_result(results[-1])
            sys.stdout.flush()
            if args.json:
                write_json(args.json, results, commit, load)
    check_targets(results)
    print(f"\nload average: {', '.join(f'{x:.1f}' for x in load)} (at the start and after each size)")
    mismatches = [line for r in results for line in r["mismatches"]]
    if mismatches:
        print(f"\n{len(mismatches)} MISMATCHES: the sides did not select the same files")
        return 1
    print("\nevery side selected exactly the expected files for every query")
    return 0


def write_json(path: Path, results: list[dict[str, Any]], commit: str, load: list[float]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "benchmark": "file_planning",
        "command": " ".join(sys.argv),
        "commit": commit,
        "sargable": str(Path(sg.__file__).parent),
        "load_average": load,
    }
    path.write_text(json.dumps({**meta, "results": results}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
