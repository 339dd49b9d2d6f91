"""Partition-filter benchmark: sargable's metastore against brute force, pyiceberg, deltalake and a Hive metastore.

Table `(x bigint)` partitioned by `(ds date, hr int, country string)`; partitions are days x 24 hours x 8 countries
(BR CA DE FR IN JP UK US) from 2015-01-01 in key order, cut at the size: 10,000 partitions span 53 days, 100,000
span 521 days, 1,000,000 span 5,209 days (~14 years). Default sizes: 10,000, 100,000 and 1,000,000 (`--sizes`).
The date filters name days among the first 52, so they select the same partitions at every size.

    bash scripts/postgres.sh run -- .venv/bin/python benchmarks/partition_filter.py [--sizes 10000,100000] [--json F]

What is timed (median of repeated runs: at least 3, at most 25, within `--budget` seconds per cell; a run slower
than the budget runs once):

- sargable: `Metastore.get_partitions_by_filter` on an open metastore (a list of Partition objects with typed
  values; `Table.partitions()` with no filter), with a secondary index on `hr`; "open+query" also opens the
  metastore and plans the filter cold.
  SQLite (file) and PostgreSQL (`--postgres URL`, default $SARGABLE_TEST_POSTGRES_URL, `none` to skip).
- brute force: `sg.evaluate` of the bound filter over every partition, as a list of dicts in memory.
- pyiceberg: `SqlCatalog.load_table` + `scan(row_filter=...).plan_files()` (catalog on SQLite; identity(ds),
  identity(hr), identity(country); one data file per partition, registered in one fast append).
- deltalake: `DeltaTable(uri)` + `file_uris(file_pruning_predicate=...)` with partition filter tuples (what
  deltalake 1.x calls `partition_filters`, now deprecated under that name); one add action per partition,
  checkpointed. Its filters have no LIKE, so `country like 'U%'` is the equivalent `country >= 'U' and
  country < 'V'`.
- Spark: `ExternalCatalog.listPartitionsByFilter` of a Hive-enabled local session (embedded Derby metastore;
  partitions added with ALTER TABLE ADD PARTITION in batches), at the `--spark-sizes` (default 10,000) only.

Listing (issue 19), after each size's table: the three listings users run daily (no filter, `country like 'U%'`,
`hr = 3` through its index) side by side in one run, sargable SQLite as Partition objects and as Arrow record batches
(`Table.partition_batches`), against the bare SQL scan of the same keys on the same SQLite file (`SELECT k, v` over the
table's key range, or the index's range for `hr = 3`: what the store itself returns rows at) and deltalake with and
without its open, with ratios, CPU times and issue 19's targets checked. Every listing reads the store (no listing is
cached; only filter plans are).

Peers include their open time. A peer is skipped at a size when its build, projected from the previous size, would
take longer than `--peer-build-limit` seconds (default 600). Memory: a subprocess builds each sargable table
(add_partitions in batches of 100,000) and another answers every filter; each reports its peak resident memory.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import gc
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

COUNTRIES = ("BR", "CA", "DE", "FR", "IN", "JP", "UK", "US")
DAY0 = dt.date(2015, 1, 1)
PER_DAY = 24 * len(COUNTRIES)
DB, TABLE = "bench", "events"
BATCH = 100_000
MIN_RUNS, MAX_RUNS = 3, 25
LISTING_FILTERS = ("no filter", "country like 'U%'", "hr = 3")
"""The listings of the side-by-side listing table."""
SELECTIVE_SHARE = 0.15
"""Filters returning at most this share of the table count as selective (the 10x target applies to them)."""


def day(k: int) -> dt.date:
    return DAY0 + dt.timedelta(days=k)


def partition_rows(n: int) -> list[tuple[dt.date, int, str]]:
    """The first n partitions in key order: days x hours x countries."""
    return [(day(i // PER_DAY), (i // len(COUNTRIES)) % 24, COUNTRIES[i % len(COUNTRIES)]) for i in range(n)]


@dataclass(frozen=True)
class Filter:
    """One benchmark filter in each system's dialect (None: no filter)."""

    name: str
    sql: str | None
    iceberg: str | None
    delta: list | None
    spark: str | None


def _days_sql(days: list[dt.date], quote: str = "") -> str:
    return ", ".join(f"{quote}'{d}'" for d in days)


def filters() -> list[Filter]:
    one_day, week_end = day(19), day(25)
    in5 = [day(k) for k in (2, 11, 20, 29, 38)]
    r1, r2 = (day(4), day(5)), (day(40), day(41))
    return [
        Filter(
            "one partition",
            f"ds = '{one_day}' and hr = 3 and country = 'US'",
            f"ds = '{one_day}' AND hr = 3 AND country = 'US'",
            [("ds", "=", one_day), ("hr", "=", 3), ("country", "=", "US")],
            f"ds = DATE'{one_day}' AND hr = 3 AND country = 'US'",
        ),
        Filter("one day", f"ds = '{one_day}'", f"ds = '{one_day}'", [("ds", "=", one_day)], f"ds = DATE'{one_day}'"),
        Filter(
            "7-day range",
            f"ds between '{one_day}' and '{week_end}'",
            f"ds >= '{one_day}' AND ds <= '{week_end}'",
            [("ds", ">=", one_day), ("ds", "<=", week_end)],
            f"ds >= DATE'{one_day}' AND ds <= DATE'{week_end}'",
        ),
        Filter("hr = 3", "hr = 3", "hr = 3", [("hr", "=", 3)], "hr = 3"),
        Filter(
            "ds in (5 days)",
            f"ds in ({_days_sql(in5)})",
            f"ds IN ({_days_sql(in5)})",
            [("ds", "in", in5)],
            f"ds IN ({_days_sql(in5, 'DATE')})",
        ),
        Filter(
            "country like 'U%'",
            "country like 'U%'",
            "country LIKE 'U%'",
            [("country", ">=", "U"), ("country", "<", "V")],
            "country LIKE 'U%'",
        ),
        Filter(
            "OR of 2 day ranges",
            f"ds between '{r1[0]}' and '{r1[1]}' or ds between '{r2[0]}' and '{r2[1]}'",
            f"(ds >= '{r1[0]}' AND ds <= '{r1[1]}') OR (ds >= '{r2[0]}' AND ds <= '{r2[1]}')",
            [[("ds", ">=", r1[0]), ("ds", "<=", r1[1])], [("ds", ">=", r2[0]), ("ds", "<=", r2[1])]],
            f"(ds >= DATE'{r1[0]}' AND ds <= DATE'{r1[1]}') OR (ds >= DATE'{r2[0]}' AND ds <= DATE'{r2[1]}')",
        ),
        Filter("no filter", None, None, None, None),
    ]


# ------------------------------------------------------------------------------------------------ timing


def measure(fn: Callable[[], int], budget: float) -> tuple[float, int, float]:
    """(median milliseconds, partitions returned, median CPU milliseconds of this process) of repeated calls of
    `fn`, which returns its result count."""
    times: list[float] = []
    cpu: list[float] = []
    began = time.perf_counter()
    count = -1
    while True:
        started, started_cpu = time.perf_counter(), time.process_time()
        count = fn()
        times.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
        spent = time.perf_counter() - began
        if len(times) >= MAX_RUNS or (spent > budget and (len(times) >= MIN_RUNS or times[0] > budget * 1000)):
            break
    return statistics.median(times), count, statistics.median(cpu)


def peak_rss_mb() -> float:
    """Peak resident memory of this process (VmHWM), in MiB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---------------------------------------------------------------------------------- sargable (subprocess)


def probe_build(url: str, size: int) -> dict[str, Any]:
    """Build the sargable table at `url` (index on hr, add_partitions in batches); peak memory and throughput."""
    from sargable.metastore import Metastore

    rows = partition_rows(size)
    with Metastore.open(url, warehouse=Path(tempfile.gettempdir()) / "pf-bench-warehouse") as ms:
        ms.create_database(DB, if_not_exists=True)
        ms.create_table(DB, TABLE, [("x", "bigint")], [("ds", "date"), ("hr", "int"), ("country", "string")])
        ms.create_index(DB, TABLE, "hr")
        started = time.perf_counter()
        for offset in range(0, size, BATCH):
            ms.add_partitions(DB, TABLE, rows[offset : offset + BATCH])
        elapsed = time.perf_counter() - started
        assert ms.count_partitions(DB, TABLE) == size
    return {"build_s": elapsed, "peak_rss_mb": peak_rss_mb()}


def probe_query(url: str, size: int) -> dict[str, Any]:
    """Answer every filter once (results as lists), and stream the whole table; peak memory."""
    from sargable.metastore import Metastore

    counts = {}
    with Metastore.open(url, warehouse=Path(tempfile.gettempdir()) / "pf-bench-warehouse") as ms:
        for f in filters():
            got = ms.get_partitions_by_filter(DB, TABLE, f.sql) if f.sql else list(ms.iter_partitions(DB, TABLE))
            counts[f.name] = len(got)
            del got
            gc.collect()
        streamed = sum(1 for _ in ms.iter_partitions(DB, TABLE))
    return {"counts": counts, "streamed": streamed, "peak_rss_mb": peak_rss_mb()}


def run_probe(kind: str, url: str, size: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--probe", kind, "--url", url, "--sizes", str(size)],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"probe {kind} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


class Sargable:
    """The sargable metastore on one backend: built in a subprocess, timed here."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.ms: Any = None

    def build(self, size: int) -> dict[str, Any]:
        built = run_probe("build", self.url, size)
        built["query_peak_rss_mb"] = run_probe("query", self.url, size)["peak_rss_mb"]
        from sargable.metastore import Metastore

        self.ms = Metastore.open(self.url, warehouse=Path(tempfile.gettempdir()) / "pf-bench-warehouse")
        return built

    def query(self, f: Filter) -> int:
        if f.sql is None:
            return len(self.ms.table(DB, TABLE).partitions())
        return len(self.ms.get_partitions_by_filter(DB, TABLE, f.sql))

    def query_arrow(self, f: Filter) -> int:
        """The listing as Arrow record batches (values, name, location, parameters)."""
        return sum(batch.num_rows for batch in self.ms.table(DB, TABLE).partition_batches(f.sql))

    def bare_sql(self, f: Filter) -> Callable[[], int]:
        """The bare SQL scan of the keys the listing reads, on a SQLite connection of its own (SQLite only)."""
        import sqlite3

        from sargable import keys
        from sargable.metastore.layout import layout_of
        from sargable.metastore.schema import INDEXES, PARTITIONS
        from sargable.store.base import TABLE_PREFIX

        layout = layout_of(self.ms.table(DB, TABLE).definition)
        if f.name == "hr = 3":
            keyspace, prefix = INDEXES, layout.indexes["hr"].prefix + layout.indexes["hr"].codec.encode([3])
        else:
            keyspace, prefix = PARTITIONS, layout.prefix
        connection = sqlite3.connect(self.url.removeprefix("sqlite:///"))
        sql = f'SELECT k, v FROM "{TABLE_PREFIX}{keyspace}" WHERE k >= ? AND k < ? ORDER BY k'
        bounds = (prefix, keys.prefix_end(prefix))
        return lambda: len(connection.execute(sql, bounds).fetchall())

    def open_and_query(self, f: Filter) -> int:
        from sargable.metastore import Metastore

        with Metastore.open(self.url, warehouse=Path(tempfile.gettempdir()) / "pf-bench-warehouse") as ms:
            if f.sql is None:
                return len(list(ms.iter_partitions(DB, TABLE)))
            return len(ms.get_partitions_by_filter(DB, TABLE, f.sql))

    def close(self, *, drop: bool) -> None:
        if self.ms is None:
            return
        if drop:
            from sargable.metastore.schema import KEYSPACES

            for keyspace in KEYSPACES:
                self.ms.store.drop_keyspace(keyspace)
        self.ms.close()
        self.ms = None


# ------------------------------------------------------------------------------------------------ peers


class Peer:
    """A system compared with sargable: `build` a table of the first n partitions, `query` returns a count."""

    name = "peer"
    status = ""
    """Why the peer did not run (empty when it did)."""

    def build(self, rows: list[tuple[dt.date, int, str]], workdir: Path) -> float:
        raise NotImplementedError

    def query(self, f: Filter) -> int:
        raise NotImplementedError

    def open_ms(self) -> float | None:
        """Milliseconds to open the table alone (None when not separable)."""
        return None

    def close(self) -> None:
        """Release what the peer holds."""


class BruteForce(Peer):
    name = "brute force"

    def build(self, rows: list[tuple[dt.date, int, str]], workdir: Path) -> float:
        started = time.perf_counter()
        self.rows = [{"ds": d, "hr": h, "country": c} for d, h, c in rows]
        return time.perf_counter() - started

    def query(self, f: Filter) -> int:
        import sargable as sg

        if f.sql is None:
            return len(self.rows)
        bound = sg.bind(sg.parse(f.sql), [("ds", "date"), ("hr", "int"), ("country", "string")])
        return sum(1 for row in self.rows if sg.evaluate(bound, row) is True)

    def close(self) -> None:
        self.rows = []


class PyIceberg(Peer):
    name = "pyiceberg"

    def build(self, rows: list[tuple[dt.date, int, str]], workdir: Path) -> float:
        from pyiceberg.catalog.sql import SqlCatalog
        from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
        from pyiceberg.partitioning import PartitionField, PartitionSpec
        from pyiceberg.schema import Schema
        from pyiceberg.transforms import IdentityTransform
        from pyiceberg.typedef import Record
        from pyiceberg.types import DateType, IntegerType, LongType, NestedField, StringType

        root = workdir / f"iceberg-{len(rows)}"
        root.mkdir(parents=True)
        self.catalog = SqlCatalog("bench", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/warehouse")
        self.catalog.create_namespace(DB)
        schema = Schema(
            NestedField(1, "x", LongType(), required=False),
            NestedField(2, "ds", DateType(), required=False),
            NestedField(3, "hr", IntegerType(), required=False),
            NestedField(4, "country", StringType(), required=False),
        )
        spec = PartitionSpec(
            PartitionField(2, 1000, IdentityTransform(), "ds"),
            PartitionField(3, 1001, IdentityTransform(), "hr"),
            PartitionField(4, 1002, IdentityTransform(), "country"),
        )
        started = time.perf_counter()
        table = self.catalog.create_table(f"{DB}.{TABLE}", schema=schema, partition_spec=spec)
        epoch = dt.date(1970, 1, 1)
        data = f"{root}/warehouse/{DB}.db/{TABLE}/data"
        with table.transaction() as tx, tx.update_snapshot().fast_append() as append:
            for d, h, c in rows:
                append.append_data_file(
                    DataFile.from_args(
                        content=DataFileContent.DATA,
                        file_path=f"{data}/ds={d}/hr={h}/country={c}/part-00000.parquet",
                        file_format=FileFormat.PARQUET,
                        partition=Record((d - epoch).days, h, c),
                        record_count=1,
                        file_size_in_bytes=600,
                        sort_order_id=None,
                        spec_id=table.metadata.default_spec_id,
                        equality_ids=None,
                        key_metadata=None,
                    )
                )
        return time.perf_counter() - started

    def query(self, f: Filter) -> int:
        table = self.catalog.load_table(f"{DB}.{TABLE}")
        scan = table.scan() if f.iceberg is None else table.scan(row_filter=f.iceberg)
        return sum(1 for _ in scan.plan_files())

    def open_ms(self) -> float:
        return measure(lambda: bool(self.catalog.load_table(f"{DB}.{TABLE}")), 2.0)[0]


class DeltaLake(Peer):
    name = "deltalake"

    def build(self, rows: list[tuple[dt.date, int, str]], workdir: Path) -> float:
        import pyarrow as pa
        from deltalake import DeltaTable, Schema
        from deltalake.transaction import AddAction, create_table_with_add_actions

        self.uri = str(workdir / f"delta-{len(rows)}")
        schema = Schema.from_arrow(
            pa.schema([("x", pa.int64()), ("ds", pa.date32()), ("hr", pa.int32()), ("country", pa.string())])
        )
        started = time.perf_counter()
        now = int(time.time() * 1000)
        actions = [
            AddAction(
                path=f"ds={d}/hr={h}/country={c}/part-00000.parquet",
                size=600,
                partition_values={"ds": str(d), "hr": str(h), "country": c},
                modification_time=now,
                data_change=True,
                stats='{"numRecords":1}',
            )
            for d, h, c in rows
        ]
        create_table_with_add_actions(self.uri, schema, actions, partition_by=["ds", "hr", "country"])
        DeltaTable(self.uri).create_checkpoint()
        return time.perf_counter() - started

    def query(self, f: Filter) -> int:
        from deltalake import DeltaTable

        return len(DeltaTable(self.uri).file_uris(file_pruning_predicate=f.delta))

    def open_ms(self) -> float:
        from deltalake import DeltaTable

        return measure(lambda: bool(DeltaTable(self.uri)), 2.0)[0]

    def query_open(self, f: Filter) -> int:
        """`query` on a table opened once (deltalake's already-open figure)."""
        from deltalake import DeltaTable

        if getattr(self, "table", None) is None:
            self.table = DeltaTable(self.uri)
        return len(self.table.file_uris(file_pruning_predicate=f.delta))


class SparkHive(Peer):
    name = "spark hms"

    def build(self, rows: list[tuple[dt.date, int, str]], workdir: Path) -> float:
        from pyspark.sql import SparkSession

        root = workdir / f"spark-{len(rows)}"
        root.mkdir(parents=True)
        self.spark = (
            SparkSession.builder.master("local[1]")
            .appName("partition-filter-bench")
            .config("spark.sql.catalogImplementation", "hive")
            .config("spark.sql.warehouse.dir", str(root / "warehouse"))
            .config("spark.hadoop.javax.jdo.option.ConnectionURL", f"jdbc:derby:;databaseName={root}/db;create=true")
            .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={root} -Dderby.system.durability=test")
            .config("spark.hadoop.hive.stats.autogather", "false")
            .config("spark.sql.gatherFastStats", "false")
            .config("spark.sql.addPartitionInBatch.size", "1000")
            .config("spark.ui.enabled", "false")
            .config("spark.driver.memory", "2g")
            .enableHiveSupport()
            .getOrCreate()
        )
        self.spark.sparkContext.setLogLevel("ERROR")
        self.spark.sql(f"CREATE DATABASE {DB}")
        self.spark.sql(
            f"CREATE TABLE {DB}.{TABLE} (x BIGINT, ds DATE, hr INT, country STRING) USING parquet "
            "PARTITIONED BY (ds, hr, country)"
        )
        specs = [f"PARTITION (ds = DATE'{d}', hr = {h}, country = '{c}')" for d, h, c in rows]
        started = time.perf_counter()
        for offset in range(0, len(specs), 1000):
            self.spark.sql(f"ALTER TABLE {DB}.{TABLE} ADD " + " ".join(specs[offset : offset + 1000]))
        elapsed = time.perf_counter() - started
        jvm = self.spark._jvm
        self.catalog = self.spark._jsparkSession.sharedState().externalCatalog()
        self.predicates = {}
        for f in filters():
            if f.spark is None:
                continue
            plan = self.spark.sql(f"SELECT * FROM {DB}.{TABLE} WHERE {f.spark}")._jdf.queryExecution().analyzed()
            while plan.getClass().getSimpleName() != "Filter":
                plan = plan.child()
            conditions = jvm.java.util.Collections.singletonList(plan.condition())
            self.predicates[f.name] = jvm.scala.jdk.javaapi.CollectionConverters.asScala(conditions).toSeq()
        self.none = jvm.scala.Option.empty()
        return elapsed

    def query(self, f: Filter) -> int:
        if f.spark is None:
            return self.catalog.listPartitions(DB, TABLE, self.none).size()
        return self.catalog.listPartitionsByFilter(DB, TABLE, self.predicates[f.name], "UTC").size()

    def close(self) -> None:
        self.spark.stop()


PEERS: dict[str, type[Peer]] = {"brute": BruteForce, "pyiceberg": PyIceberg, "deltalake": DeltaLake, "spark": SparkHive}


# ------------------------------------------------------------------------------------------------ report


@dataclass
class SizeResult:
    size: int
    expected: dict[str, int] = field(default_factory=dict)
    cells: dict[tuple[str, str], tuple[float, int, float]] = field(default_factory=dict)
    """(system, filter) -> (median ms, partitions returned, median CPU ms)."""
    notes: list[str] = field(default_factory=list)
    status: dict[str, str] = field(default_factory=dict)
    listing: dict[tuple[str, str], tuple[float, int, float]] = field(default_factory=dict)
    """The listing table's cells: (system, filter) -> as `cells`."""


def fmt_ms(value: float) -> str:
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    if value >= 10:
        return f"{value:.1f} ms"
    return f"{value:.3f} ms"


def print_table(result: SizeResult, systems: list[str], peers: list[str]) -> None:
    days = -(-result.size // PER_DAY)
    print(f"\n## {result.size:,} partitions ({days:,} days x 24 hours x {len(COUNTRIES)} countries)\n")
    header = ["filter", "returned", *systems, "sqlite cpu", "fastest peer", "x peer", "x peer (open+query)"]
    lines = [header]
    for f in filters():
        expected = result.expected[f.name]
        row = [f.name + ("" if expected <= SELECTIVE_SHARE * result.size else " *"), f"{expected:,}"]
        for system in systems:
            cell = result.cells.get((system, f.name))
            if cell is None:
                row.append(result.status.get(system, "-")[:18] or "-")
            else:
                row.append(fmt_ms(cell[0]) + ("" if cell[1] == expected else f" (got {cell[1]}!)"))
        peer_times = [(result.cells[(p, f.name)][0], p) for p in peers if (p, f.name) in result.cells]
        own = result.cells.get(("sargable sqlite", f.name))
        cold = result.cells.get(("sqlite open+query", f.name))
        row.append(fmt_ms(own[2]) if own else "-")
        if peer_times and own:
            best, who = min(peer_times)
            row += [f"{who} {fmt_ms(best)}", f"{best / own[0]:.0f}x", f"{best / cold[0]:.0f}x" if cold else "-"]
        else:
            row += ["-", "-", "-"]
        lines.append(row)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for n, line in enumerate(lines):
        print("| " + " | ".join(text.ljust(width) for text, width in zip(line, widths)) + " |")
        if n == 0:
            print("|" + "|".join("-" * (width + 2) for width in widths) + "|")
    print(
        f"\n`*`: not selective (more than {SELECTIVE_SHARE:.0%} of the table). Latencies are wall-clock medians; "
        "'sqlite cpu' is the CPU time of sargable sqlite's calls (what the code costs without other load)."
    )
    for note in result.notes:
        print(f"- {note}")


LISTING_SYSTEMS = ("bare SQL scan", "sargable sqlite", "sargable arrow", "deltalake", "deltalake (open)")


def print_listing(result: SizeResult) -> None:
    """The listing table: sargable (Partition objects, Arrow batches) against the bare SQL scan and deltalake."""
    cells = result.listing
    if not cells:
        return
    print(f"\n### Listing, {result.size:,} partitions (sargable on SQLite)\n")
    header = [
        "listing",
        "returned",
        *LISTING_SYSTEMS,
        "cpu (objects/arrow)",
        "x bare (objects/arrow)",
        "x deltalake",
        "x deltalake (open)",
    ]
    lines = [header]
    for name in LISTING_FILTERS:
        expected = result.expected[name]
        row = [name, f"{expected:,}"]
        for system in LISTING_SYSTEMS:
            cell = cells.get((system, name))
            if cell is None:
                row.append("-")
            elif system == "bare SQL scan":
                row.append(fmt_ms(cell[0]) + ("" if cell[1] == expected else f" ({cell[1]:,} keys)"))
            else:
                row.append(fmt_ms(cell[0]) + ("" if cell[1] == expected else f" (got {cell[1]}!)"))
        times = {system: cells[(system, name)][0] for system in LISTING_SYSTEMS if (system, name) in cells}
        ours = min((times[s] for s in ("sargable sqlite", "sargable arrow") if s in times), default=None)
        bare = times.get("bare SQL scan")
        cpu = [fmt_ms(cells[(s, name)][2]) for s in ("sargable sqlite", "sargable arrow") if (s, name) in cells]
        row.append(" / ".join(cpu) or "-")
        if bare and "sargable sqlite" in times and "sargable arrow" in times:
            row.append(f"{times['sargable sqlite'] / bare:.1f} / {times['sargable arrow'] / bare:.1f}")
        else:
            row.append("-")
        for peer in ("deltalake", "deltalake (open)"):
            row.append(f"{times[peer] / ours:.1f}x" if ours and peer in times else "-")
        lines.append(row)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for n, line in enumerate(lines):
        print("| " + " | ".join(text.ljust(width) for text, width in zip(line, widths)) + " |")
        if n == 0:
            print("|" + "|".join("-" * (width + 2) for width in widths) + "|")
    print(
        "\n'bare SQL scan' reads the keys sargable examines (all of them for the LIKE on the last key). "
        "'x bare': sargable's time over the bare SQL scan (target <= 2); 'x deltalake': deltalake's "
        "time over sargable's faster form (target >= 2 including its open; >= 10 for `hr = 3` already open). "
        "'cpu': the CPU time of sargable's calls (what the code costs without other load)."
    )


def check_targets(results: list[SizeResult], peers: list[str]) -> None:
    print("\n## Targets\n")
    for result in results:
        for f in filters():
            own = result.cells.get(("sargable sqlite", f.name))
            times = [result.cells[(p, f.name)][0] for p in peers if (p, f.name) in result.cells]
            if own and times and result.expected[f.name] <= SELECTIVE_SHARE * result.size:
                ratio = min(times) / own[0]
                verdict = "ok" if ratio >= 10 else "MISSED"
                print(f"- {result.size:,} {f.name}: {ratio:.0f}x the fastest peer (target 10x): {verdict}")
    for result in results:
        check_listing(result)
    big = next((r for r in results if r.size == 1_000_000), None)
    if big is None:
        print("- the absolute targets are for 1,000,000 partitions, which this run did not build")
        return
    checks = [("one partition", 1.0, None), ("one day", 5.0, None), ("hr = 3", None, 0.005)]
    for name, limit_ms, per_partition_ms in checks:
        cell = big.cells.get(("sargable sqlite", name))
        if cell is None:
            continue
        if limit_ms is not None:
            verdict = "ok" if cell[0] <= limit_ms else "MISSED"
            print(f"- 1,000,000 {name}: {fmt_ms(cell[0])} (target <= {limit_ms} ms): {verdict}")
        else:
            each = cell[0] * 1000 / max(1, cell[1])
            verdict = "ok" if each <= per_partition_ms * 1000 else "MISSED"
            print(f"- 1,000,000 {name}: {each:.2f} us per partition returned (target <= 5 us): {verdict}")


def check_listing(result: SizeResult) -> None:
    """Issue 19's listing targets at one size, each from figures of this run (sargable's faster form)."""
    cells = result.listing
    size = f"{result.size:,}"
    for name in LISTING_FILTERS:
        forms = [cells[(s, name)][0] for s in ("sargable sqlite", "sargable arrow") if (s, name) in cells]
        if not forms:
            continue
        ours = min(forms)
        bare = cells.get(("bare SQL scan", name))
        if bare and name != "hr = 3":
            ratio = ours / bare[0]
            print(f"- {size} {name}: {ratio:.1f}x the bare SQL scan (target <= 2): {'ok' if ratio <= 2 else 'MISSED'}")
        peer, target = ("deltalake (open)", 10) if name == "hr = 3" else ("deltalake", 2)
        if (peer, name) in cells:
            ratio = cells[(peer, name)][0] / ours
            verdict = "ok" if ratio >= target else "MISSED"
            print(f"- {size} {name}: {ratio:.1f}x faster than {peer} (target {target}x): {verdict}")
        if name == "no filter" and result.size >= 1_000_000:
            verdict = "ok" if ours <= 1000 else "MISSED"
            print(f"- {size} partitions listed in {fmt_ms(ours)} (target <= 1 s): {verdict}")


# -------------------------------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="table sizes (partitions), comma-separated")
    parser.add_argument("--peers", default="brute,pyiceberg,deltalake,spark", help="peers to run, comma-separated")
    parser.add_argument("--spark-sizes", default="10000", help="sizes at which Spark's Hive metastore runs")
    parser.add_argument("--peer-build-limit", type=float, default=600.0, help="skip a peer whose build would exceed")
    parser.add_argument("--postgres", default=os.environ.get("SARGABLE_TEST_POSTGRES_URL"), help="PostgreSQL URL")
    parser.add_argument("--budget", type=float, default=3.0, help="seconds of repeated runs per cell")
    parser.add_argument("--workdir", default=None, help="where tables are built (default: a temporary directory)")
    parser.add_argument("--json", default=None, help="also write the results to this JSON file (plots.py)")
    parser.add_argument("--probe", choices=["build", "query"], help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s]
    if args.probe:
        print(json.dumps((probe_build if args.probe == "build" else probe_query)(args.url, sizes[0])))
        return
    peer_names = [p for p in args.peers.split(",") if p]
    spark_sizes = {int(s) for s in args.spark_sizes.split(",") if s}
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="partition-filter-"))
    workdir.mkdir(parents=True, exist_ok=True)
    postgres = None if (args.postgres or "none") == "none" else args.postgres
    print("# Partition-filter benchmark")
    print(f"\npython {sys.version.split()[0]}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.1f}")
    print(f"command: {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    rates: dict[str, float] = {}
    results = []
    try:
        for size in sizes:
            results.append(run_size(size, args, peer_names, spark_sizes, workdir, postgres, rates))
            print_table(results[-1], systems_of(results[-1]), [p for p in peer_label_list(peer_names)])
            print_listing(results[-1])
            sys.stdout.flush()
            if args.json:
                write_json(Path(args.json), results)
        check_targets(results, peer_label_list(peer_names))
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


def write_json(path: Path, results: list[SizeResult]) -> None:
    """The results as JSON: per size, each (system, filter) cell's median and CPU milliseconds and its count."""
    sizes = [
        {
            "size": r.size,
            "expected": r.expected,
            "cells": [
                {"system": system, "filter": name, "ms": ms, "returned": returned, "cpu_ms": cpu_ms}
                for (system, name), (ms, returned, cpu_ms) in r.cells.items()
            ],
            "status": r.status,
            "notes": r.notes,
            "listing": [
                {"system": system, "filter": name, "ms": ms, "returned": returned, "cpu_ms": cpu_ms}
                for (system, name), (ms, returned, cpu_ms) in r.listing.items()
            ],
        }
        for r in results
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"benchmark": "partition_filter", "command": " ".join(sys.argv), "load_average": os.getloadavg()[0]}
    path.write_text(json.dumps({**meta, "sizes": sizes}, indent=1))


def peer_label_list(names: list[str]) -> list[str]:
    return [PEERS[n].name for n in names if n in PEERS and n != "brute"]


def systems_of(result: SizeResult) -> list[str]:
    seen: list[str] = []
    for system, _ in result.cells:
        if system not in seen:
            seen.append(system)
    return seen + [s for s in result.status if s not in seen]


def run_size(
    size: int,
    args: argparse.Namespace,
    peer_names: list[str],
    spark_sizes: set[int],
    workdir: Path,
    postgres: str | None,
    rates: dict[str, float],
) -> SizeResult:
    result = SizeResult(size)
    rows = partition_rows(size)
    brute = BruteForce()
    brute.build(rows, workdir)
    for f in filters():
        result.expected[f.name] = brute.query(f)
    brute.close()
    gc.collect()
    gc.freeze()

    backends = [("sqlite", f"sqlite:///{workdir / f'sargable-{size}.db'}")]
    if postgres:
        backends.append(("pg", f"{postgres}{'&' if '?' in postgres else '?'}schema=pf_{size}_{uuid.uuid4().hex[:8]}"))
    for label, url in backends:
        system = f"sargable {label}"
        engine = Sargable(url)
        try:
            built = engine.build(size)
            result.notes.append(
                f"{system}: built in {built['build_s']:.1f} s ({size / built['build_s']:,.0f} partitions/s, "
                f"add_partitions in batches of {BATCH:,}); peak RSS {built['peak_rss_mb']:.0f} MiB building, "
                f"{built['query_peak_rss_mb']:.0f} MiB answering every filter"
            )
            for f in filters():
                result.cells[(system, f.name)] = measure(lambda f=f, e=engine: e.query(f), args.budget)
            if label == "sqlite":
                for f in filters():
                    result.cells[("sqlite open+query", f.name)] = measure(
                        lambda f=f, e=engine: e.open_and_query(f), args.budget
                    )
                for f in filters():
                    if f.name in LISTING_FILTERS:
                        result.listing[("sargable sqlite", f.name)] = result.cells[(system, f.name)]
                        result.listing[("sargable arrow", f.name)] = measure(
                            lambda f=f, e=engine: e.query_arrow(f), args.budget
                        )
                        result.listing[("bare SQL scan", f.name)] = measure(engine.bare_sql(f), args.budget)
        except Exception:
            result.status[system] = "failed"
            result.notes.append(f"{system} failed: {traceback.format_exc(limit=3)}")
        finally:
            engine.close(drop=label == "pg")

    for name in peer_names:
        if name == "brute":
            system = brute.name
            brute.build(rows, workdir)
            gc.freeze()
            for f in filters():
                result.cells[(system, f.name)] = measure(lambda f=f: brute.query(f), args.budget)
            continue
        cls = PEERS.get(name)
        if cls is None:
            result.notes.append(f"unknown peer {name!r} (known: {', '.join(PEERS)})")
            continue
        if name == "spark" and size not in spark_sizes:
            result.status[cls.name] = "not run"
            result.notes.append(f"{cls.name}: not run at this size (--spark-sizes {sorted(spark_sizes)})")
            continue
        if cls.name in rates and size / rates[cls.name] > args.peer_build_limit:
            projected = size / rates[cls.name]
            result.status[cls.name] = "skipped (build)"
            result.notes.append(
                f"{cls.name}: skipped: building {size:,} partitions would take about {projected / 60:.0f} min "
                f"(> {args.peer_build_limit / 60:.0f} min, projected from the previous size)"
            )
            continue
        peer = cls()
        try:
            built_s = peer.build(rows, workdir)
            rates[cls.name] = size / built_s
            opened = peer.open_ms()
            result.notes.append(
                f"{cls.name}: built in {built_s:.1f} s"
                + (f"; opening the table alone takes {fmt_ms(opened)} (included in every figure)" if opened else "")
            )
            for f in filters():
                result.cells[(cls.name, f.name)] = measure(lambda f=f, p=peer: p.query(f), args.budget)
                if f.name in LISTING_FILTERS and isinstance(peer, DeltaLake):
                    result.listing[(cls.name, f.name)] = result.cells[(cls.name, f.name)]
                    result.listing[(f"{cls.name} (open)", f.name)] = measure(
                        lambda f=f, p=peer: p.query_open(f), args.budget
                    )
        except ImportError as exc:
            result.status[cls.name] = "not installed"
            result.notes.append(f"{cls.name}: not installed ({exc}); pip install 'sargable[bench]'")
        except Exception as exc:
            result.status[cls.name] = "failed"
            result.notes.append(f"{cls.name}: failed: {type(exc).__name__}: {str(exc)[:300]}")
        finally:
            with contextlib.suppress(Exception):
                peer.close()
            gc.collect()
    brute.close()
    return result


if __name__ == "__main__":
    main()
