"""Data skipping over 1,000,000 files' statistics: vectorized `select_files`, the row-at-a-time `may_match` loop,
and pyiceberg's inclusive metrics evaluator on the same statistics, in one run.

    .venv/bin/python benchmarks/skipping.py [--files 1000000] [--sample 100000] [--tightness-files 2000] [--json F]

Statistics are random but shaped like a real table: a date column sorted by file (1000 days; a file covers one
day, sometimes two), a bigint with random ranges and some NULLs, sorted strings, doubles, and a low-cardinality
`country` column whose value sets are kept; 1% of the files lack each statistic. The predicate has five leaves:

    ds BETWEEN '2026-06-01' AND '2026-06-30' AND x > 500000000
    AND (s LIKE 'user_0009%' OR d < 0.25) AND country IN ('US', 'FR')

The loops (ours and pyiceberg's) run on `--sample` files spread evenly over the table and are extrapolated to all
files; memory is the
Arrow memory pool (the statistics live in Arrow buffers, which tracemalloc does not see), with the RSS growth too.
pyiceberg is a bench extra (`.venv/bin/pip install 'pyiceberg>=0.8'`), imported only here.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import sargable as sg
from sargable.parquet_stats import stats_from_arrow
from sargable.skipping.table import stats_struct_type

SCHEMA = [("ds", "date"), ("x", "bigint"), ("s", "string"), ("d", "double"), ("country", "string")]
PREDICATE = (
    "ds BETWEEN '2026-06-01' AND '2026-06-30' AND x > 500000000 "
    "AND (s LIKE 'user_0009%' OR d < 0.25) AND country IN ('US', 'FR')"
)
TIGHTNESS_PREFIX = "user0003"
TIGHTNESS_PREDICATE = PREDICATE.replace("user_0009", TIGHTNESS_PREFIX)
"""The predicate of the tightness run: its LIKE prefix has no `_` (a LIKE wildcard that pyiceberg's StartsWith
would take literally), so pyiceberg's translation is the same predicate."""
COUNTRIES = [
    "US",
    "FR",
    "DE",
    "GB",
    "JP",
    "CN",
    "IN",
    "BR",
    "CA",
    "AU",
    "ES",
    "IT",
    "NL",
    "SE",
    "NO",
    "PL",
    "MX",
    "KR",
    "ZA",
    "AR",
]
DAYS = 1000
FIRST_DAY = dt.date(2024, 1, 1)


def _rss() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * 4096


def _unknown(array: pa.Array, share: float) -> pa.Array:
    """`array` with about `share` of its entries NULL (a statistic the writer did not keep)."""
    return pc.if_else(pc.less(pc.random(len(array)), share), pa.nulls(len(array), array.type), array)


def _int(array: pa.Array) -> pa.Array:
    return pc.cast(pc.floor(array), pa.int64())


def _column(fields: dict[str, pa.Array], dtype: str) -> pa.StructArray:
    """One column's statistics struct; the statistics a writer did not keep are left out (unknown)."""
    struct_type = stats_struct_type(sg.parse_type(dtype))
    kept = [f for f in struct_type if f.name in fields]
    return pa.StructArray.from_arrays([fields[f.name] for f in kept], fields=kept)


def build_statistics(files: int) -> pa.Table:
    """The statistics of `files` files in the FileStatsTable layout, generated with pyarrow."""
    index = pa.array(range(files), pa.int64())
    rows = pc.add(100_000, _int(pc.multiply(pc.random(files), 100_000)))
    day = pc.add((FIRST_DAY - dt.date(1970, 1, 1)).days, pc.divide(index, max(1, files // DAYS)))
    ds_min = pc.cast(pc.cast(day, pa.int32()), pa.date32())
    ds_max = pc.cast(
        pc.cast(pc.add(day, pc.cast(pc.less(pc.random(files), 0.05), pa.int64())), pa.int32()), pa.date32()
    )
    x_min = _int(pc.multiply(pc.random(files), 1e9))
    x_max = pc.add(x_min, _int(pc.multiply(pc.random(files), 1e7)))
    x_nulls = _int(pc.multiply(pc.random(files), 3))
    s_min = pa.array([f"user_{10 * i:08d}" for i in range(files)])
    s_max = pa.array([f"user_{10 * i + 9:08d}" for i in range(files)])
    d_min = pc.random(files)
    d_max = pc.add(d_min, pc.multiply(pc.random(files), 0.1))
    lengths = pc.add(1, _int(pc.multiply(pc.random(files), 3)))
    offsets = pa.concat_arrays([pa.array([0], pa.int64()), pc.cumulative_sum(lengths)]).cast(pa.int32())
    total = pc.sum(lengths).as_py()
    codes = pc.take(pa.array(COUNTRIES), _int(pc.multiply(pc.random(total), len(COUNTRIES))))
    country_sets = _unknown(pa.ListArray.from_arrays(offsets, codes), 0.01)
    zeros = pa.repeat(pa.scalar(0, pa.int64()), files)
    columns = pa.StructArray.from_arrays(
        [
            _column({"min": ds_min, "max": ds_max, "null_count": zeros}, "date"),
            _column({"min": _unknown(x_min, 0.01), "max": _unknown(x_max, 0.01), "null_count": x_nulls}, "bigint"),
            _column({"min": s_min, "max": s_max, "null_count": _unknown(zeros, 0.01)}, "string"),
            _column({"min": d_min, "max": d_max, "null_count": zeros, "nan_count": _unknown(zeros, 0.01)}, "double"),
            _column({"null_count": zeros, "distinct": country_sets}, "string"),
        ],
        names=[name for name, _ in SCHEMA],
    )
    days = pc.strftime(ds_min, format="%Y-%m-%d").to_pylist()
    paths = pa.array(
        [f"s3://warehouse/sales/events/ds={d}/part-{i:07d}-c000.snappy.parquet" for i, d in enumerate(days)]
    )
    return pa.table({"path": paths, "row_count": rows, "size_bytes": pc.multiply(rows, 48), "columns": columns})


def best_of(repeat: int, run: Callable[[], Any]) -> tuple[float, Any]:
    """Best wall time in seconds over `repeat` runs, and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def pyiceberg_loop(sampled: pa.Table) -> tuple[float, int] | None:
    """pyiceberg's `_InclusiveMetricsEvaluator` over the sampled files (seconds, files kept)."""
    prepared = _pyiceberg_prepared(sampled)
    if prepared is None:
        return None
    evaluator, data_files = prepared
    return best_of(1, lambda: sum(1 for f in data_files if evaluator.eval(f)))


def pyiceberg_kept(sampled: pa.Table, prefix: str) -> list[bool] | None:
    """Which of the files pyiceberg's evaluator keeps (None when pyiceberg is not installed)."""
    prepared = _pyiceberg_prepared(sampled, prefix)
    if prepared is None:
        return None
    evaluator, data_files = prepared
    return [bool(evaluator.eval(f)) for f in data_files]


def _pyiceberg_prepared(sampled: pa.Table, prefix: str = "user_0009") -> tuple[Any, list[Any]] | None:
    """pyiceberg's evaluator of the predicate (`StartsWith(s, prefix)` for the LIKE) and a DataFile per statistics
    row (None without pyiceberg)."""
    try:
        from pyiceberg.conversions import to_bytes
        from pyiceberg.expressions import (
            And,
            GreaterThan,
            GreaterThanOrEqual,
            In,
            LessThan,
            LessThanOrEqual,
            Or,
            StartsWith,
        )
        from pyiceberg.expressions.visitors import _InclusiveMetricsEvaluator
        from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
        from pyiceberg.schema import Schema
        from pyiceberg.typedef import Record
        from pyiceberg.types import DateType, DoubleType, LongType, NestedField, StringType
    except ImportError:
        return None
    types = [DateType(), LongType(), StringType(), DoubleType(), StringType()]
    schema = Schema(
        *(
            NestedField(i + 1, name, t, required=False)
            for i, ((name, _), t) in enumerate(zip(SCHEMA, types, strict=True))
        )
    )
    rows = sampled.to_pylist()
    data_files = []
    for row in rows:
        lower, upper, nulls, nans = {}, {}, {}, {}
        for field_id, ((name, _), iceberg_type) in enumerate(zip(SCHEMA, types, strict=True), start=1):
            stats = row["columns"][name]
            if stats.get("min") is not None:
                lower[field_id] = to_bytes(iceberg_type, _iceberg_value(stats["min"]))
            if stats.get("max") is not None:
                upper[field_id] = to_bytes(iceberg_type, _iceberg_value(stats["max"]))
            if stats.get("null_count") is not None:
                nulls[field_id] = stats["null_count"]
            if stats.get("nan_count") is not None:
                nans[field_id] = stats["nan_count"]
        data_files.append(
            DataFile.from_args(
                content=DataFileContent.DATA,
                file_path=row["path"],
                file_format=FileFormat.PARQUET,
                partition=Record(),
                record_count=row["row_count"],
                file_size_in_bytes=row["size_bytes"],
                value_counts={i: row["row_count"] for i in range(1, len(SCHEMA) + 1)},
                null_value_counts=nulls,
                nan_value_counts=nans,
                lower_bounds=lower,
                upper_bounds=upper,
            )
        )
    expr = And(
        And(GreaterThanOrEqual("ds", "2026-06-01"), LessThanOrEqual("ds", "2026-06-30")),
        GreaterThan("x", 500_000_000),
        Or(StartsWith("s", prefix), LessThan("d", 0.25)),
        In("country", {"US", "FR"}),
    )
    return _InclusiveMetricsEvaluator(schema, expr), data_files


def _iceberg_value(value: Any) -> Any:
    if isinstance(value, dt.date):
        return (value - dt.date(1970, 1, 1)).days
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--sample", type=int, default=100_000)
    parser.add_argument("--tightness-files", type=int, default=2_000, help="files of real rows for tightness")
    parser.add_argument("--rows-per-file", type=int, default=100)
    parser.add_argument("--json", default=None, help="also write the results to this JSON file (plots.py)")
    args = parser.parse_args()
    pool = pa.default_memory_pool()

    arrow_before, rss_before = pa.total_allocated_bytes(), _rss()
    start = time.perf_counter()
    arrow_table = build_statistics(args.files)
    table = sg.FileStatsTable.from_arrow(arrow_table, SCHEMA)
    build_seconds = time.perf_counter() - start
    held = pa.total_allocated_bytes() - arrow_before
    rss_growth = _rss() - rss_before

    first_seconds, _ = best_of(1, lambda: table.may_match(PREDICATE))
    baseline_peak = pool.max_memory()
    mask_seconds, mask = best_of(5, lambda: table.may_match(PREDICATE))
    select_seconds, selected = best_of(5, lambda: sg.select_files(PREDICATE, table, SCHEMA))
    kept = pc.sum(mask).as_py()
    assert len(selected) == kept

    sample = min(args.sample, args.files)
    positions = pa.array(range(0, args.files, args.files // sample)[:sample], pa.int64())
    sampled = arrow_table.take(positions)
    files = _files_of(sampled)
    loop_seconds, loop_kept = best_of(1, lambda: sum(1 for f in files if sg.may_match(PREDICATE, f, SCHEMA)))
    assert loop_kept == pc.sum(mask.take(positions)).as_py(), "may_match and select_files disagree"
    convert_seconds, _ = best_of(1, lambda: sg.FileStatsTable.from_files(files, SCHEMA))
    iceberg = pyiceberg_loop(sampled)
    scale = args.files / sample

    print(f"files: {args.files:,}   predicate: {PREDICATE}")
    print(
        f"statistics built in {build_seconds:.1f} s; held in Arrow buffers: {held / 2**20:.0f} MiB "
        f"(table.nbytes {table.nbytes / 2**20:.0f} MiB, RSS growth {rss_growth / 2**20:.0f} MiB); "
        f"Arrow pool peak {max(pool.max_memory(), baseline_peak) / 2**20:.0f} MiB"
    )
    print(f"files kept: {kept:,} of {args.files:,} ({100 * kept / args.files:.2f}%)")
    print()
    rows = [
        ("sargable select_files (vectorized, Arrow)", select_seconds, "measured, best of 5"),
        (
            "sargable FileStatsTable.may_match (mask only)",
            mask_seconds,
            f"measured, best of 5; first call {first_seconds * 1e3:.0f} ms",
        ),
        ("sargable may_match loop (row at a time)", loop_seconds * scale, f"{sample:,} files x {scale:g}"),
    ]
    if iceberg is not None:
        seconds, iceberg_kept = iceberg
        rows.append(
            (
                "pyiceberg _InclusiveMetricsEvaluator loop",
                seconds * scale,
                f"{sample:,} files x {scale:g}; kept {iceberg_kept:,} of {sample:,} (sargable {loop_kept:,})",
            )
        )
    else:
        rows.append(("pyiceberg _InclusiveMetricsEvaluator loop", float("nan"), "pyiceberg not installed"))
    print(f"{'method':<48} {'time':>12} {'vs select_files':>16}  note")
    for name, seconds, note in rows:
        ratio = seconds / select_seconds
        print(f"{name:<48} {seconds * 1e3:>9.1f} ms {ratio:>15.1f}x  {note}")
    print()
    print(
        f"FileStatsTable.from_files for {sample:,} FileStats objects: {convert_seconds * 1e3:.0f} ms "
        f"(the list-in/list-out select_files pays this per call)"
    )
    print(
        f"targets: select_files <= 200 ms -> {'met' if select_seconds <= 0.2 else 'MISSED'}; "
        f"statistics <= 500 MiB -> {'met' if held <= 500 * 2**20 else 'MISSED'}"
    )
    tight = tightness(args.tightness_files, args.rows_per_file)
    print(
        f"\ntightness ({TIGHTNESS_PREDICATE}): {tight['files']:,} files of {tight['rows_per_file']} real rows; "
        f"{tight['files_with_match']:,} hold a matching row, {tight['files_without_match']:,} do not"
    )
    for label, method in tight["methods"].items():
        share = method["skipped_without_match"] / max(1, tight["files_without_match"])
        print(f"  {label:<34} keeps {method['kept']:>6,}   skips {share:6.1%} of the files without a match")
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        timing = [{"method": name, "seconds": seconds, "note": note} for name, seconds, note in rows]
        out.write_text(
            json.dumps(
                {
                    "benchmark": "skipping",
                    "command": " ".join(sys.argv),
                    "files": args.files,
                    "sample": sample,
                    "predicate": PREDICATE,
                    "kept": kept,
                    "sample_kept": {"sargable": loop_kept, "pyiceberg": iceberg[1] if iceberg else None},
                    "timing": timing,
                    "tightness": tight,
                },
                indent=1,
            )
        )


def tightness_rows(files: int, rows_per_file: int, seed: int = 7) -> pa.Table:
    """Real rows for `files` files shaped like the statistics above, over the 60 days around June 2026 (so the
    date leaf alone does not decide most files): a file holds one day, a 1e7-wide band of x, 50 consecutive
    user ids (`user00012345`: no `_`, which LIKE reads as a wildcard), a 0.1-wide band of d and one to three
    countries."""
    rng = random.Random(seed)
    columns: dict[str, list[Any]] = {"file": [], "ds": [], "x": [], "s": [], "d": [], "country": []}
    first = dt.date(2026, 5, 17)
    for i in range(files):
        x_lo, d_lo = rng.randrange(10**9), rng.random()
        countries = rng.sample(COUNTRIES[:6], rng.randint(1, 3))
        for _ in range(rows_per_file):
            columns["file"].append(i)
            columns["ds"].append(first + dt.timedelta(days=60 * i // files))
            columns["x"].append(None if rng.random() < 0.01 else x_lo + rng.randrange(10**7))
            columns["s"].append(f"user{50 * i + rng.randrange(50):08d}")
            columns["d"].append(d_lo + 0.1 * rng.random())
            columns["country"].append(rng.choice(countries))
    types = {"file": pa.int64(), "ds": pa.date32(), "x": pa.int64(), "s": pa.string(), "d": pa.float64()}
    return pa.table({name: pa.array(values, types.get(name, pa.string())) for name, values in columns.items()})


def tightness(files: int, rows_per_file: int) -> dict[str, Any]:
    """Skipping tightness on real rows: of the files holding no matching row (DuckDB decides, row by row), how many
    each method skips, from the same files' statistics. Never skipping a file that holds a match is checked."""
    import duckdb

    rows = tightness_rows(files, rows_per_file)
    matching = {r[0] for r in duckdb.sql(f"SELECT DISTINCT file FROM rows WHERE {TIGHTNESS_PREDICATE}").fetchall()}
    stats: dict[str, list[sg.FileStats]] = {"min/max": [], "min/max + value sets": []}
    for i in range(files):
        part = rows.slice(i * rows_per_file, rows_per_file).drop_columns(["file"])
        stats["min/max"].append(stats_from_arrow(part, f"f{i}", schema=SCHEMA, max_distinct=0))
        stats["min/max + value sets"].append(stats_from_arrow(part, f"f{i}", schema=SCHEMA))
    kept: dict[str, list[bool]] = {}
    for label, per_file in stats.items():
        mask = sg.FileStatsTable.from_files(per_file, SCHEMA).may_match(TIGHTNESS_PREDICATE)
        kept[f"sargable, {label}"] = [bool(v) for v in mask.to_pylist()]
    iceberg = pyiceberg_kept(sg.FileStatsTable.from_files(stats["min/max"], SCHEMA).table, TIGHTNESS_PREFIX)
    if iceberg is not None:
        kept["pyiceberg, min/max"] = iceberg
    methods = {}
    for label, flags in kept.items():
        unsound = [i for i in matching if not flags[i]]
        assert not unsound, f"{label} skipped files holding a matching row: {unsound[:5]}"
        methods[label] = {"kept": sum(flags), "skipped_without_match": sum(1 for f in flags if not f)}
    return {
        "predicate": TIGHTNESS_PREDICATE,
        "files": files,
        "rows_per_file": rows_per_file,
        "files_with_match": len(matching),
        "files_without_match": files - len(matching),
        "methods": methods,
    }


def _files_of(arrow_table: pa.Table) -> list[sg.FileStats]:
    """FileStats records for the rows of a statistics table (row-at-a-time input)."""
    out = []
    for row in arrow_table.to_pylist():
        columns = {}
        for name, stats in row["columns"].items():
            distinct = stats.get("distinct")
            columns[name] = sg.ColumnStats(
                min=stats.get("min"),
                max=stats.get("max"),
                null_count=stats.get("null_count"),
                nan_count=stats.get("nan_count"),
                distinct=frozenset(distinct) if distinct is not None else None,
            )
        out.append(sg.FileStats(row["path"], row["row_count"], row["size_bytes"], columns))
    return out


if __name__ == "__main__":
    main()
