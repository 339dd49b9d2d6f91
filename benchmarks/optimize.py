"""Compaction and clustering (issue 21, phase A): files kept by 20 selective filters on data columns, counted with
each layout's own file statistics, before and after rewriting the same data.

    .venv/bin/python benchmarks/optimize.py                 # small: 600,000 rows, 10 days, 12 appends x 8 files
    .venv/bin/python benchmarks/optimize.py --full          # the issue's table: 20,000,000 rows, 30 days, 48 x 30
    options: --rows N --days D --appends A --files-per-append F --target-file-bytes B --buckets K
             --sample-rows S --slack X --seed N --workdir DIR --json benchmarks/results/optimize.json

The table `(ds date, user_id bigint, amount double, event_time timestamp, country string)` is partitioned by `ds`.
Rows are generated with numpy from a fixed seed: `user_id` Zipf-skewed (exponent 1.1 over `rows / 20` users whose
ids are scattered at random over `[1, 10 x users]`, so hot users are not the small ids), `amount` log-normal
(0.5% NULL), `event_time` within its day with an evening peak, `country` one of 20 with a skew (0.5% NULL). Each
append holds a random share of every day's rows and writes `F` files per day, as Spark tasks over unsorted input
do, so every small file spans nearly the whole range of every data column.

Layouts, all zstd Parquet written with pyarrow (delta-rs writes zstd too), their statistics read back from the
footers with `sargable.stats_from_parquet` and filters evaluated with `sargable.select_files`:

- `appended`: the files as written;
- `compacted`: `sargable.rewrite.plan_rewrite` (Iceberg's size rules) over the appended files, the rows of each
  rewritten partition concatenated in order and cut into the planned number of files;
- `z-order` / `hilbert`: the same plan with `cluster_by=["user_id", "event_time"]`, the rows ordered by
  `sargable.curves.Clustering` (quantile codes from a sample of `--sample-rows` rows of the partition) and cut;
- `z@delta` / `hilbert@delta`: the same orders cut into as many files per partition as delta-rs wrote (the curve's
  quality at equal file counts);
- `delta-rs`: the appended files converted to a Delta table (`convert_to_deltalake`, hard links, no copy) and
  `DeltaTable.optimize.z_order(["user_id", "event_time"], target_size=...)`; its files' min/max/NULL counts from
  `DeltaTable.get_add_actions()`, evaluated by the same `select_files`.

"matching" counts the files of a layout that really hold a matching row (a pyarrow dataset scan): no layout can
read fewer. The default target file size is a 24th of a partition's appended bytes, so every partition is cut into
enough files for clustering to show (the issue's 128 MiB target leaves one file per day at these sizes).
Phase B replaces the pyarrow rewrites by `sgs.optimize` and adds end-to-end `sgs.read` times.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq

import sargable as sg
from sargable.curves import DEFAULT_BUCKETS, Clustering, cut_boundaries
from sargable.health import layout_health
from sargable.rewrite import RewritePlan, plan_rewrite

SCHEMA = [
    ("ds", "date"),
    ("user_id", "bigint"),
    ("amount", "double"),
    ("event_time", "timestamp"),
    ("country", "string"),
]
DATA_SCHEMA = pa.schema(
    [("user_id", pa.int64()), ("amount", pa.float64()), ("event_time", pa.timestamp("us")), ("country", pa.string())]
)
CLUSTER_BY = ["user_id", "event_time"]
FIRST_DAY = dt.date(2024, 1, 1)
COUNTRIES = ["US", "IN", "BR", "DE", "GB", "FR", "JP", "MX", "ID", "TR", "IT", "ES", "CA", "KR", "AU", "NL", "PL"]
COUNTRIES += ["SE", "UA", "ZA"]
SMALL = {"rows": 600_000, "days": 10, "appends": 12, "files_per_append": 8}
FULL = {"rows": 20_000_000, "days": 30, "appends": 48, "files_per_append": 30}
AMOUNT_MU, AMOUNT_SIGMA = 3.5, 1.0
HOUR_WEIGHTS = np.array([2, 1, 1, 1, 1, 2, 3, 4, 5, 5, 5, 5, 6, 5, 5, 5, 6, 7, 9, 10, 10, 8, 5, 3], dtype=float)

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
            "event_time": pa.array(micros, pa.int64()).cast(pa.timestamp("us")),
            "country": pa.array(country, pa.string(), mask=rng.random(rows) < 0.005),
        },
        schema=DATA_SCHEMA,
    )


def _write(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd")


def _stats(path: Path, day: dt.date) -> sg.FileStats:
    return sg.stats_from_parquet(path, SCHEMA, partition={"ds": day})


def write_appended(root: Path, args: argparse.Namespace, population: Population) -> Partitions:
    """The as-appended layout: per day, each row goes to a random append and a random task (file) of it."""
    partitions: Partitions = {}
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
        files = []
        for f in range(files_per_day):
            if bounds[f + 1] == bounds[f]:
                continue
            append, task = divmod(f, args.files_per_append)
            path = root / _day_name(day) / f"part-{append:03d}-{task:03d}.parquet"
            _write(table.slice(bounds[f], bounds[f + 1] - bounds[f]), path)
            files.append(_stats(path, day))
        partitions[_day_name(day)] = files
    return partitions


def _read(files: list[sg.FileStats]) -> pa.Table:
    return pa.concat_tables([pq.read_table(f.path, schema=DATA_SCHEMA) for f in files])


def _write_files(parts: list[pa.Table], directory: Path, day: dt.date) -> list[sg.FileStats]:
    out = []
    for i, part in enumerate(p for p in parts if len(p)):
        path = directory / _day_name(day) / f"part-{i:05d}.parquet"
        _write(part, path)
        out.append(_stats(path, day))
    return out


def even_cut(table: pa.Table, count: int) -> list[pa.Table]:
    """The rows as they come, cut into `count` files of equal rows (compaction)."""
    size = -(-len(table) // count)
    return [table.slice(start, size) for start in range(0, len(table), size)]


def curve_cut(curve: str, args: argparse.Namespace) -> Callable[[pa.Table, int], list[pa.Table]]:
    """The rows along the curve, cut at `cut_boundaries`: ranks and cut keys from a sample of the partition, as a
    Spark job would take them on the driver."""

    def cut(table: pa.Table, count: int) -> list[pa.Table]:
        sample = table
        if len(table) > args.sample_rows:
            picks = np.random.default_rng(args.seed).choice(len(table), args.sample_rows, replace=False)
            sample = table.take(pa.array(np.sort(picks)))
        clustering = Clustering.fit(sample, CLUSTER_BY, curve=curve, buckets=args.buckets)
        boundaries = cut_boundaries(np.sort(clustering.keys(sample).to_numpy()), count, args.slack)
        ordered = table.take(clustering.sort_indices(table))
        file_of = np.searchsorted(boundaries, clustering.keys(ordered).to_numpy(), side="right")
        starts = np.searchsorted(file_of, np.arange(len(boundaries) + 2))
        return [ordered.slice(a, b - a) for a, b in itertools.pairwise(starts)]

    return cut


def rewrite(
    source: Partitions,
    plan: RewritePlan,
    directory: Path,
    arrange: Callable[[pa.Table, int], list[pa.Table]],
    counts: dict[str, int] | None = None,
) -> Partitions:
    """A layout after `plan`: each rewritten partition's rows arranged into the planned number of files (or
    `counts[partition]`); the files the plan leaves alone carried over."""
    planned = {p.partition: p for p in plan.partitions}
    out: Partitions = {}
    for name, files in source.items():
        entry = planned.get(name)
        if entry is None:
            out[name] = list(files)
            continue
        count = counts.get(name, entry.output_files) if counts else entry.output_files
        parts = arrange(_read(list(entry.rewrite)), count)
        out[name] = list(entry.keep) + _write_files(parts, directory, files[0].partition["ds"])
    return out


def _delta_column(row: dict[str, Any], name: str) -> sg.ColumnStats:
    """A column's statistics from a Delta add action; Delta keeps timestamps to the millisecond, so a timestamp max
    is widened by 1 ms (as Delta's own readers do) to stay an upper bound."""
    high = row.get(f"max.{name}")
    if isinstance(high, dt.datetime):
        high += dt.timedelta(milliseconds=1)
    return sg.ColumnStats(min=row.get(f"min.{name}"), max=high, null_count=row.get(f"null_count.{name}"))


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
    return pa.scalar(value, pa.timestamp("us"))


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


def _all(partitions: Partitions) -> list[sg.FileStats]:
    return [f for files in partitions.values() for f in files]


def matching_files(files: list[sg.FileStats], flt: Filter) -> int:
    """How many of the files hold at least one row matching the filter (a scan of the data)."""
    dataset = pads.dataset([f.path for f in files], format="parquet", schema=DATA_SCHEMA)
    batches = dataset.scanner(columns=["user_id"], filter=flt.arrow).scan_batches()
    return len({batch.fragment.path for batch in batches if batch.record_batch.num_rows})


def evaluate(layouts: dict[str, Partitions], filters: list[Filter]) -> list[dict[str, Any]]:
    rows = []
    for flt in filters:
        row: dict[str, Any] = {"filter": flt.text}
        for name, partitions in layouts.items():
            files = _all(partitions)
            kept = sg.select_files(flt.text, files, SCHEMA)
            row[name] = {
                "files": len(kept),
                "bytes": sum(f.size_bytes for f in kept),
                "matching": matching_files(files, flt),
            }
        rows.append(row)
    return rows


def _median(rows: list[dict[str, Any]], layout: str, key: str = "files") -> float:
    return float(statistics.median(r[layout][key] for r in rows))


def report(rows: list[dict[str, Any]], layouts: dict[str, Partitions]) -> str:
    names = list(layouts)
    width = max(len(r["filter"]) for r in rows)
    cell = max(10, *(len(n) + 1 for n in names))
    lines = [f"{'files kept (matching)':<{width}}" + "".join(f"{n:>{cell + 8}}" for n in names)]
    for r in rows:
        cells = "".join(f"{r[n]['files']:>{cell}} ({r[n]['matching']:>5})" for n in names)
        lines.append(f"{r['filter']:<{width}}{cells}")
    lines.append(f"{'median files kept':<{width}}" + "".join(f"{_median(rows, n):>{cell + 8},.1f}" for n in names))
    base = _median(rows, names[0])
    lines.append(
        f"{'median / ' + names[0]:<{width}}" + "".join(f"{_median(rows, n) / base:>{cell + 8}.4f}" for n in names)
    )
    totals = "".join(f"{len(_all(layouts[n])):>{cell + 8},}" for n in names)
    lines.append(f"{'files in the layout':<{width}}{totals}")
    mib = "".join(f"{sum(f.size_bytes for f in _all(layouts[n])) / 2**20:>{cell + 8},.1f}" for n in names)
    lines.append(f"{'MiB in the layout':<{width}}{mib}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> None:
    """Build the layouts in `args.workdir`, count the files each filter keeps, print and write the results."""
    population = Population.make(max(1000, args.rows // 20), np.random.default_rng([args.seed, 0]))
    timings: dict[str, float] = {}

    started = time.perf_counter()
    appended = write_appended(args.workdir / "appended", args, population)
    timings["generate and write appended"] = time.perf_counter() - started
    day_bytes = statistics.median(sum(f.size_bytes for f in files) for files in appended.values())
    target = args.target_file_bytes or max(1024, int(day_bytes // 24))

    compaction = plan_rewrite(appended, target_file_bytes=target)
    clustering = plan_rewrite(appended, target_file_bytes=target, cluster_by=CLUSTER_BY)
    print(clustering.format(max_partitions=3), file=sys.stderr)

    layouts: dict[str, Partitions] = {"appended": appended}
    started = time.perf_counter()
    layouts["compacted"] = rewrite(appended, compaction, args.workdir / "compacted", even_cut)
    timings["compact (pyarrow)"] = time.perf_counter() - started
    cuts = {curve: curve_cut(curve, args) for curve in ("zorder", "hilbert")}
    for curve, label in (("zorder", "z-order"), ("hilbert", "hilbert")):
        started = time.perf_counter()
        layouts[label] = rewrite(appended, clustering, args.workdir / curve, cuts[curve])
        timings[f"cluster {label} (pyarrow)"] = time.perf_counter() - started
    delta, timings["delta-rs z_order"] = delta_layout(args.workdir / "appended", args.workdir / "delta", target)
    counts = {name: len(files) for name, files in delta.items()}
    for curve, label in (("zorder", "z@delta"), ("hilbert", "hilbert@delta")):
        layouts[label] = rewrite(appended, clustering, args.workdir / f"{curve}-delta", cuts[curve], counts)
    layouts["delta-rs"] = delta

    filters = make_filters(population, args.days, args.seed)
    rows = evaluate(layouts, filters)
    print(report(rows, layouts))
    health = {
        name: layout_health(partitions, SCHEMA, CLUSTER_BY, target_file_bytes=target).to_dict()
        for name, partitions in layouts.items()
    }
    print("\nmean share of the column's range one file covers (sargable.health):")
    for name, entry in health.items():
        spread = ", ".join(f"{c['column']} {100 * c['coverage']:.1f}%" for c in entry["columns"])
        print(
            f"  {name:<14} {entry['files']:>7,} files, {entry['files_per_partition_median']:>7,g}/partition: {spread}"
        )
    print("\ntimings (s, one run, shared machine): " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))

    result = {
        "benchmark": "optimize",
        "phase": "A (layouts written with pyarrow; sgs.optimize and sgs.read times in phase B)",
        "config": {
            "rows": args.rows,
            "days": args.days,
            "appends": args.appends,
            "files_per_append": args.files_per_append,
            "target_file_bytes": target,
            "buckets": args.buckets,
            "sample_rows": args.sample_rows,
            "slack": args.slack,
            "seed": args.seed,
            "cluster_by": CLUSTER_BY,
        },
        "plans": {"compaction": compaction.to_dict(), "clustering": clustering.to_dict()},
        "filters": rows,
        "median_files": {name: _median(rows, name) for name in layouts},
        "health": health,
        "timings_s": timings,
    }
    for plan in result["plans"].values():
        plan.pop("partitions")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.json}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="the issue's size: 20M rows, 30 days, 48 appends x 30")
    parser.add_argument("--rows", type=int)
    parser.add_argument("--days", type=int)
    parser.add_argument("--appends", type=int)
    parser.add_argument("--files-per-append", type=int)
    parser.add_argument("--target-file-bytes", type=int, help="default: a 24th of a partition's appended bytes")
    parser.add_argument("--buckets", type=int, default=DEFAULT_BUCKETS, help="quantile points per column")
    parser.add_argument("--sample-rows", type=int, default=100_000, help="rows of a partition the ranks come from")
    parser.add_argument("--slack", type=float, default=0.25, help="share of a file a cut may move to align to a cell")
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--workdir", type=Path, help="scratch folder (default: a new temporary one, removed after)")
    parser.add_argument("--json", type=Path, default=Path("benchmarks/results/optimize.json"))
    args = parser.parse_args(argv)
    for key, value in (FULL if args.full else SMALL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)

    if args.workdir is None:
        args.workdir = Path(tempfile.mkdtemp(prefix="sargable-optimize-"))
    elif args.workdir.exists():
        shutil.rmtree(args.workdir)
    try:
        run(args)
    finally:
        shutil.rmtree(args.workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
