"""The Hive metastore API, side by side: Hive's own metastore (2.3.10 from the pyspark jars, embedded Derby) and
`sargable serve` (SQLite, or PostgreSQL with --postgres URL), answering the same Thrift calls from one client
(pymetastore's generated client, buffered transport, C-accelerated binary protocol).

A table `(x int, y string)` partitioned by `(ds string, hr int)` gets `--partitions` partitions (days x 24 hours)
through `add_partitions` in batches of `--batch`; then each read call runs `--repeat` times after one warm-up and
the median is printed with the ratio Hive / sargable. Both servers create each partition's folder on add, as Hive
does (`--premake-folders` makes them first, so neither does). Every answer is compared between the two servers.

    .venv/bin/python benchmarks/hms.py --partitions 2400 --repeat 15
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from pymetastore.hive_metastore import ttypes

from hive_peer import HivePeer
from hms_server import SargableServe, thrift_client

DB, TABLE = "bench", "events"
START = dt.date(2024, 1, 1)


def _sd(location: str | None) -> Any:
    return ttypes.StorageDescriptor(
        cols=[ttypes.FieldSchema("x", "int", None), ttypes.FieldSchema("y", "string", None)],
        location=location,
        inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
        serdeInfo=ttypes.SerDeInfo(None, "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe", {}),
        numBuckets=-1,
        bucketCols=[],
        sortCols=[],
        parameters={},
        skewedInfo=ttypes.SkewedInfo([], [], {}),
        compressed=False,
        storedAsSubDirectories=False,
    )


def _values(count: int) -> list[tuple[str, int]]:
    return [((START + dt.timedelta(days=i // 24)).isoformat(), i % 24) for i in range(count)]


def _median_ms(call: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    result = call()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), result


def _reads(count: int) -> list[tuple[str, Callable[[Any], Any]]]:
    day = (START + dt.timedelta(days=min(4, count // 24 - 1))).isoformat()
    week_end = (dt.date.fromisoformat(day) + dt.timedelta(days=6)).isoformat()

    def by_filter(text: str) -> Callable[[Any], Any]:
        return lambda client: client.get_partitions_by_filter(DB, TABLE, text, -1)

    return [
        (f'ds = "{day}" and hr = 3', by_filter(f'ds = "{day}" and hr = 3')),
        (f'ds = "{day}"', by_filter(f'ds = "{day}"')),
        (f'ds >= "{day}" and ds <= "{week_end}"', by_filter(f'ds >= "{day}" and ds <= "{week_end}"')),
        ("hr = 3", by_filter("hr = 3")),
        ("get_partition_names", lambda client: client.get_partition_names(DB, TABLE, -1)),
        ("get_partitions", lambda client: client.get_partitions(DB, TABLE, -1)),
    ]


def _answer(result: Any) -> Any:
    """What must agree between the servers: partition values (sorted), or names."""
    if result and isinstance(result[0], str):
        return sorted(result)
    return sorted(tuple(p.values) for p in result)


def run_server(name: str, port: int, root: Path, count: int, batch: int, repeat: int) -> dict[str, Any]:
    """Create the table, add the partitions in batches, time the reads; returns timings and answers."""
    location = f"file:{root / name / 'warehouse' / 'bench.db' / TABLE}"
    out: dict[str, Any] = {"add_s": [], "reads": {}}
    with thrift_client(port, timeout_ms=600_000) as client:
        client.create_database(ttypes.Database(name=DB, locationUri=location.rsplit("/", 1)[0], parameters={}))
        client.create_table(
            ttypes.Table(
                tableName=TABLE,
                dbName=DB,
                owner="bench",
                sd=_sd(location),
                partitionKeys=[ttypes.FieldSchema("ds", "string", None), ttypes.FieldSchema("hr", "int", None)],
                parameters={},
                tableType="EXTERNAL_TABLE",
            )
        )
        values = _values(count)
        for start in range(0, count, batch):
            parts = [
                ttypes.Partition(
                    values=[ds, str(hr)],
                    dbName=DB,
                    tableName=TABLE,
                    sd=_sd(f"{location}/ds={ds}/hr={hr}"),
                    parameters={},
                )
                for ds, hr in values[start : start + batch]
            ]
            started = time.perf_counter()
            client.add_partitions(parts)
            out["add_s"].append(time.perf_counter() - started)
            print(f"  {name}: added {min(start + batch, count):,} partitions", file=sys.stderr, flush=True)
        for label, call in _reads(count):
            ms, result = _median_ms(lambda call=call: call(client), repeat)
            out["reads"][label] = {"ms": ms, "count": len(result), "answer": _answer(result)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=2400)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--postgres", default=None, help="serve sargable from this PostgreSQL URL (default SQLite)")
    parser.add_argument("--premake-folders", action="store_true", help="make the partition folders before adding")
    parser.add_argument("--no-hive", action="store_true", help="run sargable serve alone")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()
    if args.partitions < 24 * 11:
        parser.error("--partitions must be at least 264 (11 days of 24 hours) for the 7-day range")

    with tempfile.TemporaryDirectory(prefix="hms-bench-") as tmp:
        root = Path(tmp)
        if args.premake_folders:
            for name in ("hive", "sargable"):
                for ds, hr in _values(args.partitions):
                    (root / name / "warehouse" / "bench.db" / TABLE / f"ds={ds}" / f"hr={hr}").mkdir(parents=True)
        results: dict[str, Any] = {}
        url = args.postgres or f"sqlite:///{root / 'sargable-meta.db'}"
        with SargableServe(root / "sargable-serve", url) as serve:
            results["sargable"] = run_server("sargable", serve.port, root, args.partitions, args.batch, args.repeat)
        if not args.no_hive:
            with HivePeer(root / "hive-peer") as hive:
                results["hive"] = run_server("hive", hive.port, root, args.partitions, args.batch, args.repeat)

    backend = "PostgreSQL" if args.postgres else "SQLite"
    folders = "made first" if args.premake_folders else "made by each server"
    print(f"\nHive metastore API, {args.partitions:,} partitions (ds string, hr int), median of {args.repeat} calls")
    print(f"sargable serve on {backend}; Hive 2.3.10 on Derby; partition folders {folders}\n")
    header = f"{'call':<44} {'parts':>6} {'hive ms':>10} {'sargable ms':>12} {'hive/sargable':>14}"
    print(header)
    print("-" * len(header))
    sg_add, hive_add = sum(results["sargable"]["add_s"]), sum(results.get("hive", {}).get("add_s", [0.0]))
    for label, sg in results["sargable"]["reads"].items():
        hive = results.get("hive", {}).get("reads", {}).get(label)
        if hive is not None and hive["answer"] != sg["answer"]:
            raise SystemExit(f"the servers disagree on {label}: hive {hive['count']}, sargable {sg['count']}")
        hive_ms = f"{hive['ms']:.2f}" if hive else "-"
        ratio = f"{hive['ms'] / sg['ms']:.1f}x" if hive else "-"
        print(f"{label:<44} {sg['count']:>6} {hive_ms:>10} {sg['ms']:>12.2f} {ratio:>14}")
    add_label = f"add_partitions ({args.batch:,} per call), total s"
    hive_text = f"{hive_add:.2f}" if "hive" in results else "-"
    ratio = f"{hive_add / sg_add:.1f}x" if "hive" in results else "-"
    print(f"{add_label:<44} {args.partitions:>6} {hive_text:>10} {sg_add:>12.2f} {ratio:>14}")
    if args.json:
        for result in results.values():
            for read in result["reads"].values():
                read.pop("answer")
        args.json.write_text(json.dumps({"partitions": args.partitions, "backend": backend, **results}, indent=1))


if __name__ == "__main__":
    main()
