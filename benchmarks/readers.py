"""Reading a table without Spark: sargable's `Scan` readers against PyIceberg and deltalake on the same files, with
DuckDB's own Hive-partitioned read and pyarrow reading the files directly beside them, in one run.

    .venv/bin/python benchmarks/readers.py [--partitions 20000] [--rows 50] [--budget 2] [--json F] [--cache DIR]

The data: partitions `ds` (date) x `hr` (int, 24 a day) from 2024-01-01 in key order, one Parquet file each of
`--rows` rows `(user_id bigint, amount double, country string)`, written once in Hive folders (`ds=.../hr=.../`)
without the partition columns, as Spark writes them; `user_id` rises from file to file, so its statistics skip.
The same files make three tables:

- sargable: a SQLite metastore, a secondary index on `hr` (`index_all`, as in the partition-filter benchmark), each
  file registered with its footer's statistics (`sg.stats_from_parquet`);
- PyIceberg: a SQLite `SqlCatalog`, identity(ds), identity(hr), each file appended as a `DataFile` with its row count
  and `user_id` bounds (a name mapping, as `add_files` sets, reads the field-id-less files);
- deltalake: a Delta log written over the folder (`create_table_with_add_actions`, `minValues`/`maxValues` stats of
  `user_id`), checkpointed.

What is timed (per cell, the systems interleaved: rounds in which each system runs in turn for `--budget / 5` seconds,
at least once, at least `--min-rounds` rounds; the median and quartiles of all runs), each table already loaded (see
`load`: sargable's `Table` handle after one whole-table scan, PyIceberg's `Table`, a `DeltaTable`):

- planning: the files to read for the filter: `table.scan(f).files`, `scan(row_filter=f).plan_files()`, and
  deltalake's `file_uris(partition filters)` (for the data-column filter, which `file_uris` can't take, the
  fragments of `to_pyarrow_dataset()` its Arrow filter keeps: deltalake puts each file's partition values and
  statistics in its fragment's expression);
- reading: the rows as one Arrow table: `scan.to_arrow()`, `scan(...).to_arrow()`,
  `to_pyarrow_dataset().to_table(filter=...)`, DuckDB's `read_parquet('.../ds=*/hr=*/*.parquet',
  hive_partitioning = true)` with the same `WHERE` (`.to_arrow_table()`), and for the full scan pyarrow's own
  dataset over the same file list (Hive partitioning), the floor a reader on Arrow can reach.

With `--cache DIR` the Parquet files, the Iceberg table and the Delta table are kept in
`DIR/readers-<partitions>x<rows>` and reused by later runs of the same size (each is marked complete only once
built); sargable's metastore is built again on every run, so that it is always in the format of the code measured.
Progress goes to stderr; `--partitions 20000 100000` runs both sizes, one after the other.

Every system's row count is checked against sargable's for each filter. The peers are bench extras (`pip install
'pyiceberg[sql-sqlite]' deltalake duckdb`), imported only here.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

import iceberg_peer
import sargable as sg

DAY0 = dt.date(2024, 1, 1)
COUNTRIES = ("BR", "DE", "FR", "IN", "JP", "US")
SCHEMA = [("user_id", "bigint"), ("amount", "double"), ("country", "string")]
KEYS = [("ds", "date"), ("hr", "int")]
ROUNDS, MAX_RUNS = 5, 200
"""Rounds of interleaved runs at most per cell; runs a system at most in one round."""
SELECTIVE = ("one partition", "one day", "hr = 3", "OR of 2 days", "user_id range")
SYSTEMS = ("files", "sargable", "pyiceberg", "deltalake")
"""What `build` makes: the Parquet files, then each system's table."""


@dataclass(frozen=True)
class Filter:
    """One filter in each system's form (None: no filter)."""

    name: str
    sql: str | None
    iceberg: str | None
    delta_partitions: list[Any] | None
    """deltalake's partition filter tuples (a list of lists: an OR), None when the filter is not on partitions."""
    arrow: pc.Expression | None


def filters(partitions: int, rows: int) -> list[Filter]:
    days = partitions // 24
    d1, d2 = DAY0 + dt.timedelta(days=days // 3), DAY0 + dt.timedelta(days=2 * days // 3)
    low = (partitions // 2) * rows + rows // 3
    high = low + rows // 2
    ds_ = pc.field("ds")

    def day(d: dt.date) -> pc.Expression:
        return ds_ == pa.scalar(d, pa.date32())

    return [
        Filter(
            "one partition",
            f"ds = '{d1}' and hr = 3",
            f"ds = '{d1}' AND hr = 3",
            [("ds", "=", str(d1)), ("hr", "=", "3")],
            day(d1) & (pc.field("hr") == 3),
        ),
        Filter("one day", f"ds = '{d1}'", f"ds = '{d1}'", [("ds", "=", str(d1))], day(d1)),
        Filter("hr = 3", "hr = 3", "hr = 3", [("hr", "=", "3")], pc.field("hr") == 3),
        Filter(
            "OR of 2 days",
            f"ds = '{d1}' or ds = '{d2}'",
            f"ds = '{d1}' OR ds = '{d2}'",
            [[("ds", "=", str(d1))], [("ds", "=", str(d2))]],
            day(d1) | day(d2),
        ),
        Filter(
            "user_id range",
            f"user_id between {low} and {high}",
            f"user_id >= {low} AND user_id <= {high}",
            None,
            (pc.field("user_id") >= low) & (pc.field("user_id") <= high),
        ),
        Filter("no filter", None, None, None, None),
    ]


def measure(fns: dict[str, Callable[[], int]], budget: float, min_rounds: int) -> dict[str, Timing]:
    """Each system's median milliseconds, spread and the count it returns, the systems interleaved: rounds in which
    each runs in turn for at least `budget / ROUNDS` seconds (at least once), until every system has run
    `min_rounds` rounds and the rounds took `budget` seconds a system, or `ROUNDS` rounds ran."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    counts: dict[str, int] = {}
    began = time.perf_counter()
    for done in range(1, ROUNDS + 1):
        for name, fn in fns.items():
            slice_began = time.perf_counter()
            while True:
                started = time.perf_counter()
                counts[name] = fn()
                ended = time.perf_counter()
                times[name].append((ended - started) * 1000)
                if ended - slice_began >= budget / ROUNDS or len(times[name]) >= MAX_RUNS * ROUNDS:
                    break
        if done >= min_rounds and time.perf_counter() - began >= budget * len(fns):
            break
    return {name: Timing.of(times[name], counts[name]) for name in fns}


@dataclass(frozen=True)
class Timing:
    """A cell: median ms, the first and third quartiles, how many runs, and the count the system returned."""

    median: float
    q1: float
    q3: float
    runs: int
    count: int

    @classmethod
    def of(cls, times: list[float], count: int) -> Timing:
        q1, _, q3 = statistics.quantiles(times, n=4) if len(times) > 1 else (times[0],) * 3
        return cls(statistics.median(times), q1, q3, len(times), count)


# ------------------------------------------------------------------------------------------------ building


def partition_of(i: int) -> tuple[dt.date, int]:
    return DAY0 + dt.timedelta(days=i // 24), i % 24


def file_list(data: Path, partitions: int, rows: int) -> list[tuple[str, dt.date, int, int, int]]:
    """The Parquet files, one a partition: (path, ds, hr, lowest user_id, highest user_id)."""
    out = []
    for i in range(partitions):
        d, h = partition_of(i)
        first = i * rows
        out.append((str(data / f"ds={d}" / f"hr={h}" / "part-00000.parquet"), d, h, first, first + rows - 1))
    return out


def write_files(files: list[tuple[str, dt.date, int, int, int]], rows: int) -> None:
    """Write the files of `file_list`."""
    countries = pa.array([COUNTRIES[j % len(COUNTRIES)] for j in range(rows)])
    for done, (path, _, _, first, _) in enumerate(files):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        table = pa.table(
            {
                "user_id": pa.array(range(first, first + rows), pa.int64()),
                "amount": pc.multiply(pc.random(rows), 1000.0),
                "country": countries,
            }
        )
        pq.write_table(table, path)
        if (done + 1) % 10_000 == 0:
            print(f"  wrote {done + 1:,} of {len(files):,} files", file=sys.stderr)


def build_sargable(root: Path, data: Path, files: list[tuple[str, dt.date, int, int, int]]) -> Any:
    ms = sg.Metastore.open(f"sqlite:///{root}/metastore.db", warehouse=root / "warehouse")
    ms.create_database("bench")
    ms.create_table("bench", "events", SCHEMA, KEYS, location=str(data), index_all=True)
    stats = [sg.stats_from_parquet(path, SCHEMA, partition={"ds": d, "hr": h}) for path, d, h, _, _ in files]
    for start in range(0, len(stats), 10_000):
        ms.add_files("bench", "events", stats[start : start + 10_000])
    return ms


def build_iceberg(root: Path, files: list[tuple[str, dt.date, int, int, int]]) -> Any:
    from pyiceberg.conversions import to_bytes
    from pyiceberg.types import LongType

    shutil.rmtree(root / "iceberg", ignore_errors=True)  # a build cut short before
    catalog, table = iceberg_peer.create_table(root / "iceberg", "events", SCHEMA, KEYS)
    rows = sg.stats_from_parquet(files[0][0]).row_count
    iceberg_peer.fast_append(
        table,
        (
            iceberg_peer.data_file(
                table,
                path,
                (d, h),
                rows,
                os.path.getsize(path),
                lower={1: to_bytes(LongType(), low)},
                upper={1: to_bytes(LongType(), high)},
            )
            for path, d, h, low, high in files
        ),
    )
    return catalog.load_table("bench.events")


def build_delta(root: Path, data: Path, files: list[tuple[str, dt.date, int, int, int]]) -> Any:
    from deltalake import DeltaTable, Schema
    from deltalake.transaction import AddAction, create_table_with_add_actions

    shutil.rmtree(data / "_delta_log", ignore_errors=True)  # a build cut short before
    schema = Schema.from_arrow(
        pa.schema([("user_id", pa.int64()), ("amount", pa.float64()), ("country", pa.string()),
                   ("ds", pa.date32()), ("hr", pa.int32())])
    )
    rows = sg.stats_from_parquet(files[0][0]).row_count
    now = int(time.time() * 1000)
    actions = [
        AddAction(
            path=os.path.relpath(path, data),
            size=os.path.getsize(path),
            partition_values={"ds": str(d), "hr": str(h)},
            modification_time=now,
            data_change=True,
            stats=json.dumps(
                {"numRecords": rows, "minValues": {"user_id": low}, "maxValues": {"user_id": high},
                 "nullCount": {"user_id": 0}}
            ),
        )
        for path, d, h, low, high in files
    ]
    create_table_with_add_actions(str(data), schema, actions, partition_by=["ds", "hr"])
    DeltaTable(str(data)).create_checkpoint()
    return DeltaTable(str(data))


# ------------------------------------------------------------------------------------------------ systems


def plan_sargable(table: Any, f: Filter) -> int:
    return len(table.scan(f.sql).files)


def read_sargable(table: Any, f: Filter) -> int:
    return table.scan(f.sql).to_arrow().num_rows


def plan_iceberg(table: Any, f: Filter) -> int:
    scan = table.scan() if f.iceberg is None else table.scan(row_filter=f.iceberg)
    return sum(1 for _ in scan.plan_files())


def read_iceberg(table: Any, f: Filter) -> int:
    scan = table.scan() if f.iceberg is None else table.scan(row_filter=f.iceberg)
    return scan.to_arrow().num_rows


def plan_delta(table: Any, f: Filter) -> int:
    if f.arrow is not None and f.delta_partitions is None:
        return sum(1 for _ in table.to_pyarrow_dataset().get_fragments(filter=f.arrow))
    return len(table.file_uris(file_pruning_predicate=f.delta_partitions))


def read_delta(table: Any, f: Filter) -> int:
    return table.to_pyarrow_dataset().to_table(filter=f.arrow).num_rows


def read_duckdb(data: Path, f: Filter) -> int:
    import duckdb

    types = "{'ds': DATE, 'hr': INT}"
    source = f"read_parquet('{data}/ds=*/hr=*/*.parquet', hive_partitioning = true, hive_types = {types})"
    where = "" if f.sql is None else " WHERE " + f.sql.replace("between", "BETWEEN")
    with duckdb.connect() as con:
        return con.sql(f"SELECT * FROM {source}{where}").to_arrow_table().num_rows


def read_pyarrow(data: Path, paths: list[str]) -> int:
    partitioning = ds.partitioning(pa.schema([("ds", pa.date32()), ("hr", pa.int32())]), flavor="hive")
    dataset = ds.dataset(paths, format="parquet", partitioning=partitioning, partition_base_dir=str(data))
    return dataset.to_table().num_rows


def fmt(ms: float | None) -> str:
    if ms is None:
        return "-"
    if ms < 1:
        return f"{ms:.3f}"
    return f"{ms:,.1f}" if ms < 100 else f"{ms:,.0f}"


def build(
    root: Path, partitions: int, rows: int, cache: Path | None, systems: tuple[str, ...] = SYSTEMS
) -> tuple[Path, list, dict[str, Any]]:
    """(the data folder, the files, each of `systems`' loaded table and build seconds: None when it came from the
    cache)."""
    home = root if cache is None else cache / f"readers-{partitions}x{rows}"
    home.mkdir(parents=True, exist_ok=True)
    data = home / "data"
    files = file_list(data, partitions, rows)
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("files", lambda: write_files(files, rows)),
        ("sargable", lambda: build_sargable(root, data, files)),
        ("pyiceberg", lambda: build_iceberg(home, files)),
        ("deltalake", lambda: build_delta(home, data, files)),
    ]
    built: dict[str, Any] = {}
    for name, step in steps:
        if name not in systems:
            continue
        marker = home / f".built-{name}"
        started = time.perf_counter()
        if name != "sargable" and marker.exists():
            built[name] = (None, None)
            print(f"{name}: kept in {home}", file=sys.stderr)
            continue
        print(f"building {name} ({partitions:,} partitions)", file=sys.stderr)
        built[name] = (step(), round(time.perf_counter() - started, 1))
        if name != "sargable":
            marker.touch()
        print(f"built {name} in {built[name][1]} s", file=sys.stderr)
    if "pyiceberg" in systems and built["pyiceberg"][0] is None:
        catalog = iceberg_peer.open_catalog(home / "iceberg")
        built["pyiceberg"] = (catalog.load_table("bench.events"), None)
    if "deltalake" in systems and built["deltalake"][0] is None:
        from deltalake import DeltaTable

        built["deltalake"] = (DeltaTable(str(data)), None)
    return data, files, built


def load(ms: Any, iceberg: Any, data: Path) -> tuple[Any, Any, Any, dict[str, float]]:
    """Each table loaded as the timed calls find it, and what loading took (ms, once, caches cleared first):
    sargable's handle after its first whole-table scan (which keeps the version's file listing in memory) and a
    partition filter after it (which loads the version's partitions), PyIceberg's `load_table` (the metadata file;
    manifests are read by each scan), a `DeltaTable` (the log replayed from its checkpoint: every file's add action
    in memory)."""
    from deltalake import DeltaTable

    ms.clear_caches()
    started = time.perf_counter()
    table = ms.table("bench.events")
    table.scan()  # lists the whole table: the version's listing is kept
    table.partitions("hr = 0")  # the first partition filter after it loads the version's partitions
    loads = {"sargable": (time.perf_counter() - started) * 1000}
    started = time.perf_counter()
    iceberg = iceberg.catalog.load_table("bench.events")
    loads["pyiceberg"] = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    delta = DeltaTable(str(data))
    loads["deltalake"] = (time.perf_counter() - started) * 1000
    print("loaded (ms): " + ", ".join(f"{name} {ms:,.0f}" for name, ms in loads.items()), file=sys.stderr)
    return table, iceberg, delta, {name: round(ms, 1) for name, ms in loads.items()}


def run(
    partitions: int,
    rows: int,
    budget: float,
    workdir: Path,
    cache: Path | None,
    min_rounds: int,
    only: list[str] | None = None,
) -> dict:
    """Build (or take from the cache) the three tables and time every filter, the systems interleaved."""
    data, files, built = build(workdir, partitions, rows, cache)
    ms = built["sargable"][0]
    table, iceberg, delta, loads = load(ms, built["pyiceberg"][0], data)
    paths = [f[0] for f in files]
    results = []
    for f in filters(partitions, rows):
        if only is not None and f.name not in only:
            continue
        plans = measure(
            {
                "sargable": lambda f=f: plan_sargable(table, f),
                "pyiceberg": lambda f=f: plan_iceberg(iceberg, f),
                "deltalake": lambda f=f: plan_delta(delta, f),
            },
            budget,
            min_rounds,
        )
        readers: dict[str, Callable[[], int]] = {
            "sargable": lambda f=f: read_sargable(table, f),
            "pyiceberg": lambda f=f: read_iceberg(iceberg, f),
            "deltalake": lambda f=f: read_delta(delta, f),
            "duckdb": lambda f=f: read_duckdb(data, f),
        }
        if f.sql is None:
            readers["pyarrow"] = lambda: read_pyarrow(data, paths)
        reads = measure(readers, budget, min_rounds)
        row: dict[str, Any] = {"filter": f.name, "sargable_filter": f.sql, "files": plans["sargable"].count}
        row["rows"] = reads["sargable"].count
        wrong = {name: t.count for name, t in reads.items() if t.count != row["rows"]}
        if wrong:
            raise SystemExit(f"{f.name}: sargable read {row['rows']} rows, but {wrong}")
        for name, timing in plans.items():
            row[f"plan_{name}_ms"] = round(timing.median, 3)
            row[f"plan_{name}_iqr"] = [round(timing.q1, 3), round(timing.q3, 3)]
            row[f"plan_{name}_runs"] = timing.runs
        for name, timing in reads.items():
            row[f"read_{name}_ms"] = round(timing.median, 3)
            row[f"read_{name}_iqr"] = [round(timing.q1, 3), round(timing.q3, 3)]
            row[f"read_{name}_runs"] = timing.runs
        row.setdefault("read_pyarrow_ms", None)
        row["files_pyiceberg"], row["files_deltalake"] = plans["pyiceberg"].count, plans["deltalake"].count
        results.append(row)
        print(f"{partitions:,} partitions, {f.name}: done, load average {os.getloadavg()[0]:.1f}", file=sys.stderr)
    ms.close()
    build_seconds = {name: seconds for name, (_, seconds) in built.items()}
    return {
        "partitions": partitions,
        "rows_per_file": rows,
        "build_s": build_seconds,
        "load_ms": loads,
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "filters": results,
    }


def sargable_planning(partitions: int, rows: int, workdir: Path, cache: Path | None, calls: int = 200) -> None:
    """sargable's planning alone, per selective filter, median ms of `calls` calls on a handle that has planned the
    filter before but never listed the whole table ("open"), then after one whole-table scan ("loaded"): to compare
    versions of sargable (run with another tree's `src` first on PYTHONPATH)."""
    ms = build(workdir, partitions, rows, cache, systems=("files", "sargable"))[2]["sargable"][0]
    print(f"sargable {sg.__file__}, {partitions:,} partitions")
    for state in ("open", "loaded"):
        ms.clear_caches()
        table = ms.table("bench.events")
        if state == "loaded":
            table.scan()
        for f in filters(partitions, rows):
            if f.name not in SELECTIVE[:4]:
                continue
            plan_sargable(table, f)
            times = []
            for _ in range(calls):
                started = time.perf_counter()
                plan_sargable(table, f)
                times.append((time.perf_counter() - started) * 1000)
            print(f"  {state:<7}{f.name:<16}{statistics.median(times):>9.3f} ms")
    print(f"load average {os.getloadavg()[0]:.1f}")
    ms.close()


def print_results(result: dict[str, Any]) -> None:
    print(f"{result['partitions']:,} partitions, one file each of {result['rows_per_file']} rows "
          f"(build s: {result['build_s']}; load ms: {result['load_ms']}; load average {result['loadavg']})")
    print("planning (ms, tables loaded)")
    print(f"  {'filter':<16}{'files':>7}{'sargable':>10}{'pyiceberg':>11}{'deltalake':>11}{'x iceberg':>11}"
          f"{'x delta':>9}")
    for row in result["filters"]:
        ours = row["plan_sargable_ms"]
        print(f"  {row['filter']:<16}{row['files']:>7,}{fmt(ours):>10}{fmt(row['plan_pyiceberg_ms']):>11}"
              f"{fmt(row['plan_deltalake_ms']):>11}{row['plan_pyiceberg_ms'] / ours:>10.1f}x"
              f"{row['plan_deltalake_ms'] / ours:>8.1f}x")
    print("reading to one Arrow table (ms)")
    print(f"  {'filter':<16}{'rows':>9}{'sargable':>10}{'pyiceberg':>11}{'deltalake':>11}{'duckdb':>9}"
          f"{'pyarrow':>9}{'x iceberg':>11}{'x delta':>9}")
    for row in result["filters"]:
        ours = row["read_sargable_ms"]
        print(f"  {row['filter']:<16}{row['rows']:>9,}{fmt(ours):>10}{fmt(row['read_pyiceberg_ms']):>11}"
              f"{fmt(row['read_deltalake_ms']):>11}{fmt(row['read_duckdb_ms']):>9}{fmt(row['read_pyarrow_ms']):>9}"
              f"{row['read_pyiceberg_ms'] / ours:>10.1f}x{row['read_deltalake_ms'] / ours:>8.1f}x")
    for full in (r for r in result["filters"] if r["filter"] == "no filter"):
        ratio = full["read_sargable_ms"] / full["read_pyarrow_ms"]
        print(f"full scan: sargable / pyarrow = {ratio:.2f} (target <= 1.2)")
    selective = [r for r in result["filters"] if r["filter"] in SELECTIVE]
    if not selective:
        return
    plan_x = min(min(r["plan_pyiceberg_ms"], r["plan_deltalake_ms"]) / r["plan_sargable_ms"] for r in selective)
    read_x = min(min(r["read_pyiceberg_ms"], r["read_deltalake_ms"]) / r["read_sargable_ms"] for r in selective)
    print(f"selective filters: planning at least {plan_x:.1f}x faster (target 10x), reading at least {read_x:.1f}x "
          "(target 5x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, nargs="+", default=[20_000], help="table sizes (default 20000)")
    parser.add_argument("--rows", type=int, default=50, help="rows per file (default 50)")
    parser.add_argument("--budget", type=float, default=2.0, help="seconds of runs per system and cell (default 2)")
    parser.add_argument("--min-rounds", type=int, default=3, help="interleaved rounds per cell at least (default 3)")
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    parser.add_argument("--workdir", type=Path, help="where to write the tables (default: a temporary directory)")
    parser.add_argument("--cache", type=Path, help="keep the files, Iceberg and Delta tables here for later runs")
    parser.add_argument("--build-only", action="store_true", help="build (into --cache) and time nothing")
    parser.add_argument("--filters", nargs="+", help="time only these filters (by name, e.g. 'hr = 3')")
    parser.add_argument("--planning-only", action="store_true", help="time sargable's planning alone (no peers)")
    parser.add_argument("--show", type=Path, help="print the results of an earlier run's --json file and stop")
    args = parser.parse_args()
    if args.show:
        for result in json.loads(args.show.read_text())["sizes"]:
            print_results(result)
        return
    sizes = []
    for partitions in args.partitions:
        with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
            if args.planning_only:
                sargable_planning(partitions, args.rows, Path(tmp), args.cache)
                continue
            if args.build_only:
                build(Path(tmp), partitions, args.rows, args.cache)[2]["sargable"][0].close()
                continue
            result = run(partitions, args.rows, args.budget, Path(tmp), args.cache, args.min_rounds, args.filters)
        print_results(result)
        sizes.append(result)
        if args.json:
            command = ".venv/bin/python benchmarks/readers.py " + " ".join(sys.argv[1:])
            args.json.write_text(json.dumps({"command": command, "sizes": sizes}, indent=2, default=str))


if __name__ == "__main__":
    main()
