"""Compaction and clustering end to end (issue 21): files and bytes that 20 selective filters on data columns read
through `sgs.read`, and their end-to-end times, before `sgs.optimize`, after compaction, after clustering, and the
same data z-ordered by delta-rs; a full scan's time in each state; optimize's time against Spark reading and
rewriting the same data with a plain `df.write`.

    .venv/bin/python benchmarks/optimize.py                 # small: 600,000 rows, 10 days, 12 appends x 8 files
    .venv/bin/python benchmarks/optimize.py --full          # the issue's table: 20,000,000 rows, 30 days, 48 x 30
    options: --rows N --days D --appends A --files-per-append F --target-file-bytes B --repeat R --master URL
             --seed N --workdir DIR --json benchmarks/results/optimize.json --plot docs/img

The table `(ds date, user_id bigint, amount double, event_time timestamp, country string)` is partitioned by `ds`.
Rows are generated with numpy from a fixed seed: `user_id` Zipf-skewed (exponent 1.1 over `rows / 20` users whose
ids are scattered at random over `[1, 10 x users]`, so hot users are not the small ids), `amount` log-normal
(0.5% NULL), `event_time` within its day with an evening peak, `country` one of 20 with a skew (0.5% NULL). Each
append holds a random share of every day's rows and writes `F` files per day, as Spark tasks over unsorted input
do, so every small file spans nearly the whole range of every data column. The files are written with pyarrow
(zstd, timestamps adjusted to UTC as Spark writes them) into the table's folder and committed to a fresh SQLite
metastore with their footer statistics, as `sgs.write` would.

States, each measured with `sgs.read(spark, table, where=filter).count()` (files and bytes from its scan report;
the best of `--repeat` runs) and a full scan (`sum(amount)` over every row):

- `before`: the files as appended;
- `compacted`: after `sgs.optimize(spark, table, target_file_bytes=target)`;
- `clustered`: after `sgs.optimize(spark, table, cluster_by=["user_id", "event_time"], target_file_bytes=target)`;
- `delta-rs`: the appended files converted to a Delta table (`convert_to_deltalake`, hard links, no copy) and
  `DeltaTable.optimize.z_order(["user_id", "event_time"], target_size=target)`; the files a filter keeps are
  counted with its own statistics (`DeltaTable.get_add_actions()` min/max/NULL counts, evaluated by
  `sargable.select_files`); no end-to-end time.

"matching" counts the files of a layout that really hold a matching row (a pyarrow dataset scan): no layout can
read fewer. Every filter must count the same rows in every state (the benchmark checks it). The plain-write
baseline is `spark.read.parquet(location).repartition("ds").write.partitionBy("ds").parquet(...)` over the
appended files. Everything is timed warm: a read and an optimize of a small scratch table run first. The default
target file size is a 24th of a partition's appended bytes, so every partition is cut into enough files for
clustering to show (the issue's 128 MiB target leaves one file per day at these sizes). Timings on a shared machine
are indicative only.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq

import sargable as sg
from sargable.health import layout_health

SCHEMA = [
    ("ds", "date"),
    ("user_id", "bigint"),
    ("amount", "double"),
    ("event_time", "timestamp"),
    ("country", "string"),
]
UTC_MICROS = pa.timestamp("us", tz="UTC")
DATA_SCHEMA = pa.schema(
    [("user_id", pa.int64()), ("amount", pa.float64()), ("event_time", UTC_MICROS), ("country", pa.string())]
)
CLUSTER_BY = ["user_id", "event_time"]
TABLE = "bench.events"
FIRST_DAY = dt.date(2024, 1, 1)
COUNTRIES = ["US", "IN", "BR", "DE", "GB", "FR", "JP", "MX", "ID", "TR", "IT", "ES", "CA", "KR", "AU", "NL", "PL"]
COUNTRIES += ["SE", "UA", "ZA"]
SMALL = {"rows": 600_000, "days": 10, "appends": 12, "files_per_append": 8}
FULL = {"rows": 20_000_000, "days": 30, "appends": 48, "files_per_append": 30}
AMOUNT_MU, AMOUNT_SIGMA = 3.5, 1.0
HOUR_WEIGHTS = np.array([2, 1, 1, 1, 1, 2, 3, 4, 5, 5, 5, 5, 6, 5, 5, 5, 6, 7, 9, 10, 10, 8, 5, 3], dtype=float)
STATES = ("before", "compacted", "clustered")
LAYOUTS = (*STATES, "delta-rs")

Partitions = dict[str, list[sg.FileStats]]


def _day_name(day: dt.date) -> str:
    return f"ds={day.isoformat()}"


@dataclass(frozen=True)
class Population:
    """The users: ids scattered over a sparse range, drawn with Zipf weights by popularity rank."""

    ids: np.ndarray
    weights: np.ndarray

    @classmethod
    def make(cls, users: int, rng: np.random.Generator) -> Population:
        ids = rng.choice(np.arange(1, 10 * users + 1), size=users, replace=False)
        weights = 1.0 / np.arange(1, users + 1) ** 1.1
        return cls(ids.astype(np.int64), weights / weights.sum())


def generate_day(day: dt.date, rows: int, population: Population, rng: np.random.Generator) -> pa.Table:
    """One day's rows in arrival (random) order."""
    user_id = population.ids[rng.choice(len(population.ids), size=rows, p=population.weights)]
    amount = np.round(rng.lognormal(AMOUNT_MU, AMOUNT_SIGMA, rows), 2)
    hours = rng.choice(24, size=rows, p=HOUR_WEIGHTS / HOUR_WEIGHTS.sum())
    start = int((dt.datetime.combine(day, dt.time()) - dt.datetime(1970, 1, 1)) / dt.timedelta(microseconds=1))
    micros = start + hours * 3_600_000_000 + rng.integers(0, 3_600_000_000, rows)
    weights = 1.0 / np.arange(1, len(COUNTRIES) + 1)
    country = np.array(COUNTRIES, dtype=object)[rng.choice(len(COUNTRIES), size=rows, p=weights / weights.sum())]
    return pa.table(
        {
            "user_id": pa.array(user_id, pa.int64()),
            "amount": pa.array(amount, mask=rng.random(rows) < 0.005),
            "event_time": pa.array(micros, pa.int64()).cast(UTC_MICROS),
            "country": pa.array(country, pa.string(), mask=rng.random(rows) < 0.005),
        },
        schema=DATA_SCHEMA,
    )


def write_appended(root: Path, args: argparse.Namespace, population: Population) -> list[sg.FileStats]:
    """The as-appended layout: per day, each row goes to a random append and a random task (file) of it."""
    out = []
    per_day = np.full(args.days, args.rows // args.days)
    per_day[: args.rows % args.days] += 1
    files_per_day = args.appends * args.files_per_append
    for index in range(args.days):
        day = FIRST_DAY + dt.timedelta(days=index)
        rng = np.random.default_rng([args.seed, index])
        table = generate_day(day, int(per_day[index]), population, rng)
        label = rng.integers(0, files_per_day, len(table))
        order = np.argsort(label, kind="stable")
        table = table.take(pa.array(order))
        bounds = np.searchsorted(label[order], np.arange(files_per_day + 1))
        for f in range(files_per_day):
            if bounds[f + 1] == bounds[f]:
                continue
            append, task = divmod(f, args.files_per_append)
            path = root / _day_name(day) / f"part-{append:03d}-{task:03d}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table.slice(bounds[f], bounds[f + 1] - bounds[f]), path, compression="zstd")
            out.append(sg.stats_from_parquet(path, SCHEMA, partition={"ds": day}))
    return out


def _naive_utc(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    return value


def _delta_column(row: dict[str, Any], name: str) -> sg.ColumnStats:
    """A column's statistics from a Delta add action; Delta keeps timestamps to the millisecond, so a timestamp max
    is widened by 1 ms (as Delta's own readers do) to stay an upper bound."""
    high = _naive_utc(row.get(f"max.{name}"))
    if isinstance(high, dt.datetime):
        high += dt.timedelta(milliseconds=1)
    low = _naive_utc(row.get(f"min.{name}"))
    return sg.ColumnStats(min=low, max=high, null_count=row.get(f"null_count.{name}"))


def delta_layout(appended: Path, directory: Path, target: int) -> tuple[Partitions, float]:
    """The appended files z-ordered by delta-rs; its files with the statistics of its own log."""
    import deltalake

    for source in appended.rglob("*.parquet"):
        link = directory / source.relative_to(appended)
        link.parent.mkdir(parents=True, exist_ok=True)
        os.link(source, link)
    partition_schema = deltalake.Schema.from_arrow(pa.schema([("ds", pa.date32())]))
    deltalake.convert_to_deltalake(str(directory), partition_by=partition_schema, partition_strategy="hive")
    table = deltalake.DeltaTable(str(directory))
    started = time.perf_counter()
    table.optimize.z_order(CLUSTER_BY, target_size=target)
    elapsed = time.perf_counter() - started
    actions = pa.table(deltalake.DeltaTable(str(directory)).get_add_actions(flatten=True)).to_pylist()
    partitions: Partitions = {}
    for row in sorted(actions, key=lambda r: (r["partition.ds"], r["path"])):
        columns = {name: _delta_column(row, name) for name in DATA_SCHEMA.names}
        stats = sg.FileStats(
            str(directory / row["path"]),
            row_count=row["num_records"],
            size_bytes=row["size_bytes"],
            columns=columns,
            partition={"ds": row["partition.ds"]},
        )
        partitions.setdefault(_day_name(row["partition.ds"]), []).append(stats)
    return partitions, elapsed


@dataclass(frozen=True)
class Filter:
    text: str
    arrow: pc.Expression


def _timestamp(value: dt.datetime) -> pa.Scalar:
    return pa.scalar(value.replace(tzinfo=dt.UTC), UTC_MICROS)


def make_filters(population: Population, days: int, seed: int) -> list[Filter]:
    """20 selective filters on data columns: user_id points (hot to cold), user_id ranges, amount x time windows."""
    rng = np.random.default_rng([seed, 999])
    field = pc.field
    out = []
    users = len(population.ids)
    for rank in (0, 1, 9, 99, 999 % users, users // 3, users // 2, users - 1):
        k = int(population.ids[rank])
        out.append(Filter(f"user_id = {k}", field("user_id") == k))
    span = 10 * users
    for share in (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02):
        low = int(rng.integers(1, span))
        high = low + max(1, int(span * share))
        out.append(Filter(f"user_id between {low} and {high}", (field("user_id") >= low) & (field("user_id") <= high)))
    for q, hours in ((0.9, 1), (0.95, 2), (0.99, 3), (0.9, 3), (0.95, 1), (0.99, 2)):
        z = statistics.NormalDist().inv_cdf(q)
        amount = round(float(np.exp(AMOUNT_MU + AMOUNT_SIGMA * z)), 2)
        day = FIRST_DAY + dt.timedelta(days=int(rng.integers(0, days)))
        start = dt.datetime.combine(day, dt.time(int(rng.integers(0, 24 - hours))))
        end = start + dt.timedelta(hours=hours)
        out.append(
            Filter(
                f"amount > {amount} and event_time between '{start}' and '{end}'",
                (field("amount") > amount)
                & (field("event_time") >= _timestamp(start))
                & (field("event_time") <= _timestamp(end)),
            )
        )
    return out


def matching_files(files: list[sg.FileStats], flt: Filter) -> int:
    """How many of the files hold at least one row matching the filter (a scan of the data)."""
    dataset = pads.dataset([f.path for f in files], format="parquet", schema=DATA_SCHEMA)
    batches = dataset.scanner(columns=["user_id"], filter=flt.arrow).scan_batches()
    return len({batch.fragment.path for batch in batches if batch.record_batch.num_rows})


def _best(repeat: int, run: Any) -> tuple[float, Any]:
    """The shortest of `repeat` timed runs, and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - started)
    return best, result


def measure(spark: Any, ms: sg.Metastore, filters: list[Filter], repeat: int) -> dict[str, Any]:
    """One state of the table: per filter the files and bytes `sgs.read` selects, rows, time; a full scan's time."""
    from pyspark.sql import functions as F

    from sargable import spark as sgs

    files = ms.table(TABLE).files()
    out: dict[str, Any] = {"files": files, "filters": []}
    for flt in filters:
        df = sgs.read(spark, TABLE, where=flt.text, metastore=ms)
        report = sgs.scan_report(df)
        seconds, rows = _best(repeat, lambda t=flt.text: sgs.read(spark, TABLE, where=t, metastore=ms).count())
        out["filters"].append(
            {
                "files": report.files_selected,
                "bytes": report.bytes_selected,
                "matching": matching_files(files, flt),
                "rows": rows,
                "seconds": seconds,
            }
        )
    full = sgs.read(spark, TABLE, metastore=ms).agg(F.sum("amount"), F.count(F.lit(1)))
    out["full_scan_s"], _ = _best(repeat, lambda: full.collect())
    return out


def warm_up_optimize(spark: Any, ms: sg.Metastore, location: Path, population: Population) -> None:
    """Optimize a small scratch table once, so that the timed optimizes don't pay for starting Spark's Python
    workers and the first Arrow UDF (a cost of the first optimize of a session, 25 s of a 38 s compaction under
    load)."""
    from sargable import spark as sgs

    small = argparse.Namespace(rows=2000, days=1, appends=2, files_per_append=2, seed=0)
    ms.create_table("bench", "warmup", SCHEMA[1:], SCHEMA[:1], location=str(location))
    ms.commit("bench", "warmup", add_files=write_appended(location, small, population))
    sgs.optimize(spark, "bench.warmup", cluster_by=CLUSTER_BY, target_file_bytes=1024, metastore=ms, progress=False)


def plain_rewrite_seconds(spark: Any, location: Path, out: Path) -> float:
    """Spark reading the appended files and writing them again, one task per day: the baseline of optimize."""
    started = time.perf_counter()
    spark.read.parquet(str(location)).repartition("ds").write.partitionBy("ds").parquet(str(out))
    return time.perf_counter() - started


def _median(values: list[float]) -> float:
    return float(statistics.median(values))


def report(result: dict[str, Any]) -> str:
    """The results as text: files (matching) and seconds per filter and state, medians, full scans, optimize."""
    rows = result["filters"]
    width = max(len(r["filter"]) for r in rows)
    lines = [f"{'files kept (matching), seconds':<{width}}" + "".join(f"{n:>22}" for n in LAYOUTS)]
    for r in rows:
        cells = []
        for name in LAYOUTS:
            entry = r[name]
            time_text = f" {entry['seconds']:5.2f}s" if "seconds" in entry else "       "
            cells.append(f"{entry['files']:>8,} ({entry['matching']:>4,}){time_text}")
        lines.append(f"{r['filter']:<{width}}" + "".join(f"{c:>22}" for c in cells))
    medians = result["median_files"]
    lines.append(f"{'median files kept':<{width}}" + "".join(f"{medians[n]:>22,.1f}" for n in LAYOUTS))
    base = medians["before"] or 1.0
    lines.append(f"{'median / before':<{width}}" + "".join(f"{medians[n] / base:>22.4f}" for n in LAYOUTS))
    lines.append(f"{'files in the layout':<{width}}" + "".join(f"{result['files'][n]:>22,}" for n in LAYOUTS))
    mib = "".join(f"{result['bytes'][n] / 2**20:>22,.1f}" for n in LAYOUTS)
    lines.append(f"{'MiB in the layout':<{width}}{mib}")
    seconds = result["seconds"]
    lines.append("")
    lines.append(
        "median filter time (s): "
        + ", ".join(f"{n} {seconds['median_filter'][n]:.2f}" for n in STATES)
        + "; full scan (s): "
        + ", ".join(f"{n} {seconds['full_scan'][n]:.2f}" for n in STATES)
    )
    lines.append(
        f"optimize (s): compaction {seconds['optimize_compaction']:.1f}, "
        f"clustering {seconds['optimize_clustering']:.1f}; plain df.write rewrite {seconds['plain_write']:.1f}; "
        f"delta-rs z_order {seconds['delta_z_order']:.1f}"
    )
    targets = result["targets"]
    lines.append(
        "targets: clustered median <= before / 10: {clustered_tenth}; clustered median <= delta-rs: "
        "{clustered_vs_delta}; full scan after compaction 3x faster: {full_scan_3x}; compaction within 1.5x of a "
        "plain write: {optimize_1_5x}".format(**targets)
    )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Build the table in `args.workdir`, optimize it twice, measure every state; returns the results."""
    from sargable import spark as sgs

    population = Population.make(max(1000, args.rows // 20), np.random.default_rng([args.seed, 0]))
    location = args.workdir / "warehouse" / "events"
    started = time.perf_counter()
    appended = write_appended(location, args, population)
    generate_s = time.perf_counter() - started
    day_bytes = statistics.median(
        sum(f.size_bytes for f in appended if f.partition["ds"] == day) for day in {f.partition["ds"] for f in appended}
    )
    target = args.target_file_bytes or max(1024, int(day_bytes // 24))
    delta, delta_s = delta_layout(location, args.workdir / "delta", target)

    ms = sg.Metastore.open(f"sqlite:///{args.workdir / 'metastore.db'}", warehouse=args.workdir / "warehouse")
    ms.create_database("bench")
    ms.create_table("bench", "events", SCHEMA[1:], SCHEMA[:1], location=str(location))
    ms.commit("bench", "events", add_files=appended)
    spark = sgs.local_session("sargable optimize benchmark", master=args.master)
    filters = make_filters(population, args.days, args.seed)

    sgs.read(spark, TABLE, metastore=ms).count()  # warms the JVM up before anything is timed
    warm_up_optimize(spark, ms, args.workdir / "warehouse" / "warmup", population)
    states = {"before": measure(spark, ms, filters, args.repeat)}
    plain_s = plain_rewrite_seconds(spark, location, args.workdir / "plain")
    compaction = sgs.optimize(spark, TABLE, target_file_bytes=target, metastore=ms, progress=False)
    states["compacted"] = measure(spark, ms, filters, args.repeat)
    clustering = sgs.optimize(
        spark, TABLE, cluster_by=CLUSTER_BY, target_file_bytes=target, metastore=ms, progress=False
    )
    states["clustered"] = measure(spark, ms, filters, args.repeat)
    delta_files = [f for files in delta.values() for f in files]

    rows = []
    for index, flt in enumerate(filters):
        row: dict[str, Any] = {"filter": flt.text}
        for name in STATES:
            row[name] = states[name]["filters"][index]
        kept = sg.select_files(flt.text, delta_files, SCHEMA)
        row["delta-rs"] = {
            "files": len(kept),
            "bytes": sum(f.size_bytes for f in kept),
            "matching": matching_files(delta_files, flt),
        }
        counts = {row[name]["rows"] for name in STATES}
        if len(counts) != 1:
            raise SystemExit(f"{flt.text}: the states count different rows {counts}: optimize lost or added rows")
        rows.append(row)
    files = {name: states[name]["files"] for name in STATES} | {"delta-rs": delta_files}
    median_files = {name: _median([r[name]["files"] for r in rows]) for name in LAYOUTS}
    seconds = {
        "generate": generate_s,
        "median_filter": {name: _median([r[name]["seconds"] for r in rows]) for name in STATES},
        "full_scan": {name: states[name]["full_scan_s"] for name in STATES},
        "optimize_compaction": compaction.seconds,
        "optimize_clustering": clustering.seconds,
        "plain_write": plain_s,
        "delta_z_order": delta_s,
    }
    by_partition = {
        name: {
            _day_name(day): [f for f in layout if f.partition["ds"] == day]
            for day in sorted({f.partition["ds"] for f in layout})
        }
        for name, layout in files.items()
    }
    health = {
        name: layout_health(partitions, SCHEMA, CLUSTER_BY, target_file_bytes=target).to_dict()
        for name, partitions in by_partition.items()
    }
    result = {
        "benchmark": "optimize",
        "config": {
            "rows": args.rows,
            "days": args.days,
            "appends": args.appends,
            "files_per_append": args.files_per_append,
            "target_file_bytes": target,
            "repeat": args.repeat,
            "master": args.master,
            "seed": args.seed,
            "cluster_by": CLUSTER_BY,
        },
        "filters": rows,
        "median_files": median_files,
        "files": {name: len(layout) for name, layout in files.items()},
        "bytes": {name: sum(f.size_bytes for f in layout) for name, layout in files.items()},
        "seconds": seconds,
        "optimize": {"compaction": compaction.to_dict(), "clustering": clustering.to_dict()},
        "health": health,
        "targets": {
            "clustered_tenth": median_files["clustered"] <= median_files["before"] / 10,
            "clustered_vs_delta": median_files["clustered"] <= median_files["delta-rs"],
            "full_scan_3x": seconds["full_scan"]["compacted"] * 3 <= seconds["full_scan"]["before"],
            "optimize_1_5x": compaction.seconds <= 1.5 * plain_s,
        },
    }
    for entry in result["optimize"].values():
        entry["plan"].pop("partitions")
    ms.close()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="the issue's size: 20M rows, 30 days, 48 appends x 30")
    parser.add_argument("--rows", type=int)
    parser.add_argument("--days", type=int)
    parser.add_argument("--appends", type=int)
    parser.add_argument("--files-per-append", type=int)
    parser.add_argument("--target-file-bytes", type=int, help="default: a 24th of a partition's appended bytes")
    parser.add_argument("--repeat", type=int, default=1, help="timed runs per measurement; the best is kept (1)")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--workdir", type=Path, help="scratch folder (default: a new temporary one, removed after)")
    parser.add_argument("--json", type=Path, default=Path("benchmarks/results/optimize.json"))
    parser.add_argument("--plot", type=Path, help="also draw the plot into this folder (as benchmarks/plots.py does)")
    args = parser.parse_args(argv)
    for key, value in (FULL if args.full else SMALL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)

    if args.workdir is None:
        args.workdir = Path(tempfile.mkdtemp(prefix="sargable-optimize-"))
    elif args.workdir.exists():
        shutil.rmtree(args.workdir)
    try:
        result = run(args)
    finally:
        shutil.rmtree(args.workdir, ignore_errors=True)
    print(report(result))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(f"wrote {args.json}", file=sys.stderr)
    if args.plot is not None:
        from plots import plot_optimize

        args.plot.mkdir(parents=True, exist_ok=True)
        print(f"wrote {plot_optimize(result, args.plot)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
