"""Reading a table without Spark: sargable's `Scan` readers against PyIceberg and deltalake on the same files, with
DuckDB's own Hive-partitioned read and pyarrow reading the files directly beside them, in one run.

    .venv/bin/python benchmarks/readers.py [--partitions 20000] [--rows 50] [--budget 2] [--json F]

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

What is timed (median of repeated runs within `--budget` seconds a cell, at least 3 unless a run takes longer than
the budget), each table already loaded (sargable's `Table` handle, PyIceberg's `Table`, a `DeltaTable`):

- planning: the files to read for the filter: `table.scan(f).files`, `scan(row_filter=f).plan_files()`, and
  deltalake's `file_uris(partition filters)` (for the data-column filter, which `file_uris` can't take, the
  fragments of `to_pyarrow_dataset()` its Arrow filter keeps: deltalake puts each file's partition values and
  statistics in its fragment's expression);
- reading: the rows as one Arrow table: `scan.to_arrow()`, `scan(...).to_arrow()`,
  `to_pyarrow_dataset().to_table(filter=...)`, DuckDB's `read_parquet('.../ds=*/hr=*/*.parquet',
  hive_partitioning = true)` with the same `WHERE` (`.to_arrow_table()`), and for the full scan pyarrow's own
  dataset over the same file list (Hive partitioning), the floor a reader on Arrow can reach.

Every system's row count is checked against sargable's for each filter. The peers are bench extras (`pip install
'pyiceberg[sql-sqlite]' deltalake duckdb`), imported only here.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
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
MIN_RUNS, MAX_RUNS = 3, 25
SELECTIVE = ("one partition", "one day", "hr = 3", "OR of 2 days", "user_id range")


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


def measure(fn: Callable[[], int], budget: float) -> tuple[float, int]:
    """(median milliseconds, the count `fn` returns) of repeated calls."""
    times: list[float] = []
    began = time.perf_counter()
    count = -1
    while True:
        started = time.perf_counter()
        count = fn()
        times.append((time.perf_counter() - started) * 1000)
        spent = time.perf_counter() - began
        if len(times) >= MAX_RUNS or (spent > budget and (len(times) >= MIN_RUNS or times[0] > budget * 1000)):
            return statistics.median(times), count


# ------------------------------------------------------------------------------------------------ building


def partition_of(i: int) -> tuple[dt.date, int]:
    return DAY0 + dt.timedelta(days=i // 24), i % 24


def write_files(data: Path, partitions: int, rows: int) -> list[tuple[str, dt.date, int, int, int]]:
    """The Parquet files, one a partition: (path, ds, hr, lowest user_id, highest user_id)."""
    out = []
    countries = pa.array([COUNTRIES[j % len(COUNTRIES)] for j in range(rows)])
    for i in range(partitions):
        d, h = partition_of(i)
        folder = data / f"ds={d}" / f"hr={h}"
        folder.mkdir(parents=True)
        path = str(folder / "part-00000.parquet")
        first = i * rows
        table = pa.table(
            {
                "user_id": pa.array(range(first, first + rows), pa.int64()),
                "amount": pc.multiply(pc.random(rows), 1000.0),
                "country": countries,
            }
        )
        pq.write_table(table, path)
        out.append((path, d, h, first, first + rows - 1))
    return out


def build_sargable(root: Path, files: list[tuple[str, dt.date, int, int, int]]) -> Any:
    ms = sg.Metastore.open(f"sqlite:///{root}/metastore.db", warehouse=root / "warehouse")
    ms.create_database("bench")
    ms.create_table("bench", "events", SCHEMA, KEYS, location=str(root / "data"), index_all=True)
    stats = [sg.stats_from_parquet(path, SCHEMA, partition={"ds": d, "hr": h}) for path, d, h, _, _ in files]
    for start in range(0, len(stats), 10_000):
        ms.add_files("bench", "events", stats[start : start + 10_000])
    return ms


def build_iceberg(root: Path, files: list[tuple[str, dt.date, int, int, int]]) -> Any:
    from pyiceberg.conversions import to_bytes
    from pyiceberg.types import LongType

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


def build_delta(root: Path, files: list[tuple[str, dt.date, int, int, int]]) -> Any:
    from deltalake import DeltaTable, Schema
    from deltalake.transaction import AddAction, create_table_with_add_actions

    data = root / "data"
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
    return f"{ms:,.1f}" if ms < 100 else f"{ms:,.0f}"


def run(partitions: int, rows: int, budget: float, workdir: Path) -> dict[str, Any]:
    data = workdir / "data"
    started = time.perf_counter()
    files = write_files(data, partitions, rows)
    print(f"wrote {len(files):,} files in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    builds = {}
    for name, build in (("sargable", build_sargable), ("pyiceberg", build_iceberg), ("deltalake", build_delta)):
        started = time.perf_counter()
        built = build(workdir, files)
        builds[name] = (built, time.perf_counter() - started)
        print(f"built {name} in {builds[name][1]:.1f} s", file=sys.stderr)
    ms = builds["sargable"][0]
    table = ms.table("bench.events")
    iceberg, delta = builds["pyiceberg"][0], builds["deltalake"][0]
    paths = [f[0] for f in files]
    results = []
    for f in filters(partitions, rows):
        row: dict[str, Any] = {"filter": f.name, "sargable_filter": f.sql}
        row["plan_sargable_ms"], row["files"] = measure(lambda f=f: plan_sargable(table, f), budget)
        row["plan_pyiceberg_ms"], iceberg_files = measure(lambda f=f: plan_iceberg(iceberg, f), budget)
        row["plan_deltalake_ms"], delta_files = measure(lambda f=f: plan_delta(delta, f), budget)
        row["read_sargable_ms"], row["rows"] = measure(lambda f=f: read_sargable(table, f), budget)
        row["read_pyiceberg_ms"], iceberg_rows = measure(lambda f=f: read_iceberg(iceberg, f), budget)
        row["read_deltalake_ms"], delta_rows = measure(lambda f=f: read_delta(delta, f), budget)
        row["read_duckdb_ms"], duck_rows = measure(lambda f=f: read_duckdb(data, f), budget)
        pyarrow_rows = row["rows"]
        row["read_pyarrow_ms"] = None
        if f.sql is None:
            row["read_pyarrow_ms"], pyarrow_rows = measure(lambda: read_pyarrow(data, paths), budget)
        counts = {"pyiceberg": iceberg_rows, "deltalake": delta_rows, "duckdb": duck_rows, "pyarrow": pyarrow_rows}
        wrong = {name: count for name, count in counts.items() if count != row["rows"]}
        if wrong:
            raise SystemExit(f"{f.name}: sargable read {row['rows']} rows, but {wrong}")
        row["files_pyiceberg"], row["files_deltalake"] = iceberg_files, delta_files
        results.append(row)
        print(f"{f.name}: done", file=sys.stderr)
    ms.close()
    build_seconds = {name: round(seconds, 1) for name, (_, seconds) in builds.items()}
    return {"partitions": partitions, "rows_per_file": rows, "build_s": build_seconds, "filters": results}


def print_results(result: dict[str, Any]) -> None:
    print(f"{result['partitions']:,} partitions, one file each of {result['rows_per_file']} rows "
          f"(build s: {result['build_s']})")
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
    full = next(r for r in result["filters"] if r["filter"] == "no filter")
    print(f"full scan: sargable / pyarrow = {full['read_sargable_ms'] / full['read_pyarrow_ms']:.2f} (target <= 1.2)")
    selective = [r for r in result["filters"] if r["filter"] in SELECTIVE]
    plan_x = min(min(r["plan_pyiceberg_ms"], r["plan_deltalake_ms"]) / r["plan_sargable_ms"] for r in selective)
    read_x = min(min(r["read_pyiceberg_ms"], r["read_deltalake_ms"]) / r["read_sargable_ms"] for r in selective)
    print(f"selective filters: planning at least {plan_x:.1f}x faster (target 10x), reading at least {read_x:.1f}x "
          "(target 5x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=20_000)
    parser.add_argument("--rows", type=int, default=50, help="rows per file (default 50)")
    parser.add_argument("--budget", type=float, default=2.0, help="seconds of repeated runs per cell (default 2)")
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    parser.add_argument("--workdir", type=Path, help="where to write the tables (default: a temporary directory)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        result = run(args.partitions, args.rows, args.budget, Path(tmp))
    print_results(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
