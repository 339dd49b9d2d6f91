"""Time to first row at 20,000 partitions: sargable's planned read vs Spark's own partition discovery.

    .venv/bin/python benchmarks/spark_scan.py [--partitions 20000] [--repeat 3] [--rebuild] [--warehouse DIR]

Builds (once; reused by later runs) a table of `ds` date x `hr` int partitions with one tiny Parquet file each,
written by Spark through `sgs.write`. Then, in one warm session, times each query end to end, to the first row
(`limit(1).collect()`) and for a full scan (count and sum over every row):

- sargable: `sgs.read(spark, table, where=...)` (metastore pruning + file statistics, then Spark reads the files),
  warm (one open Metastore, its listing cache filled) and cold (the metastore named by its URL, its plan and
  listing caches emptied before each run: what a new application pays, less opening the store);
- Spark, cold: `spark.read.parquet(location).where(...)` after `refreshByPath` (what a new application pays: the
  listing of every partition folder);
- Spark, cached: the same with Spark's file-status cache already filled by an earlier read in the session.

Prints the median of `--repeat` runs per cell.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from sargable import spark as sgs
from sargable.errors import NoSuchObjectError
from sargable.metastore import Metastore, shared

TABLE = "bench.scan"
FIRST_DAY = dt.date(2020, 1, 1)
HOURS = 100


def _build(spark: Any, ms: Metastore, partitions: int, console: Console) -> None:
    from pyspark.sql import functions as F

    try:
        old = ms.get_table("bench", "scan")
        ms.drop_table("bench", "scan")
        shutil.rmtree(old.location, ignore_errors=True)
    except NoSuchObjectError:
        pass
    days = partitions // HOURS
    rows_per_partition = 4
    ids = spark.range(0, days * HOURS * rows_per_partition, numPartitions=4)
    partition = (F.col("id") / rows_per_partition).cast("int")
    df = ids.select(
        F.col("id").alias("event_id"),
        (F.pmod(F.xxhash64("id"), 1000) / 10).alias("amount"),
        F.date_add(F.lit(FIRST_DAY), (partition / HOURS).cast("int")).alias("ds"),
        F.pmod(partition, HOURS).cast("int").alias("hr"),
    )
    started = time.perf_counter()
    result = sgs.write(df, TABLE, partition_by=["ds", "hr"], metastore=ms)
    console.print(
        f"built {TABLE}: {result.partitions:,} partitions, {result.files:,} files, {result.rows:,} rows "
        f"in {time.perf_counter() - started:.1f} s (sgs.write)"
    )


def _median_seconds(run: Any, repeat: int, before: Any = None) -> float:
    times = []
    for _ in range(repeat):
        if before is not None:
            before()
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--warehouse", default="./warehouse-bench")
    args = parser.parse_args()
    console = Console(width=max(Console().width, 200))
    root = Path(args.warehouse).resolve()
    root.mkdir(parents=True, exist_ok=True)
    spark = sgs.local_session("sargable-bench")
    from pyspark.sql import functions as F

    with Metastore.open(f"sqlite:///{root / 'metastore.db'}", warehouse=root) as ms:
        try:
            have = ms.table_stats("bench", "scan").partitions
        except NoSuchObjectError:
            have = 0
        if args.rebuild or have != args.partitions:
            _build(spark, ms, args.partitions, console)
        location = ms.get_table("bench", "scan").location
        last_day = FIRST_DAY + dt.timedelta(days=args.partitions // HOURS - 1)
        queries = [
            ("one partition", f"ds = '{last_day}' and hr = 42", "first"),
            ("one day (100 partitions)", f"ds = '{last_day}'", "first"),
            ("one hour of every day", "hr = 42", "first"),
            ("a data filter, no partition key", "event_id = 4242", "first"),
            ("full scan", None, "sum"),
        ]

        def action(df: Any, kind: str) -> Any:
            return df.limit(1).collect() if kind == "first" else df.agg(F.count("*"), F.sum("event_id")).collect()

        def ours(where: str | None, kind: str) -> Any:
            return action(sgs.read(spark, TABLE, where=where, metastore=ms), kind)

        def ours_cold(where: str | None, kind: str) -> Any:
            return action(sgs.read(spark, TABLE, where=where, metastore=ms.url), kind)

        def theirs(where: str | None, kind: str) -> Any:
            df = spark.read.parquet(location)
            return action(df.where(where) if where else df, kind)

        def cold() -> None:
            spark.catalog.refreshByPath(location)

        def forget() -> None:
            shared(ms.url).clear_caches()

        with console.status("warming up the JVM"):
            for _ in range(2):
                ours(queries[0][1], "first")
                theirs(queries[0][1], "first")
        table = Table(title=f"time to result at {args.partitions:,} partitions (median of {args.repeat}, seconds)")
        headers = (
            "query",
            "files read",
            "sargable (warm)",
            "sargable (cold)",
            "Spark (cold listing)",
            "Spark (cached listing)",
            "speed-up warm",
            "speed-up cold",
        )
        for header in headers:
            table.add_column(header, justify="left" if header == "query" else "right")
        for title, where, kind in queries:
            with console.status(f"timing: {title}"):
                report = sgs.scan_report(sgs.read(spark, TABLE, where=where, metastore=ms))
                mine, spark_rows = ours(where, kind), theirs(where, kind)
                same = len(mine) == len(spark_rows) if kind == "first" else mine == spark_rows
                assert same, f"{title}: sargable {mine} vs Spark {spark_rows}"
                t_ours = _median_seconds(lambda w=where, k=kind: ours(w, k), args.repeat)
                t_ours_cold = _median_seconds(lambda w=where, k=kind: ours_cold(w, k), args.repeat, before=forget)
                t_cold = _median_seconds(lambda w=where, k=kind: theirs(w, k), args.repeat, before=cold)
                theirs(where, kind)
                t_cached = _median_seconds(lambda w=where, k=kind: theirs(w, k), args.repeat)
            table.add_row(
                f"{title}: {where or '(no filter)'}",
                f"{report.files_selected:,} / {report.files_total:,}",
                f"{t_ours:.3f}",
                f"{t_ours_cold:.3f}",
                f"{t_cold:.3f}",
                f"{t_cached:.3f}",
                f"{t_cold / t_ours:.1f}x",
                f"{t_cold / t_ours_cold:.1f}x",
            )
        console.print(table)


if __name__ == "__main__":
    main()
