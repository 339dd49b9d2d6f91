"""A selective read of a table on S3, the way a user would measure it before moving: sargable vs Spark's discovery.

A table `bench.events (x int, y string)` partitioned by `(ds date, hr int)` (days x 24 hours, one small Parquet
file per partition) lives under `s3a://<bucket>/events` on the S3 server of `scripts/s3_server.py` (moto, an
emulator, behind a front that counts requests and sleeps `--delay` seconds before serving each one: a real object
store's per-request latency). The same selective reads (one partition; one day) run three ways in one Spark
session (local[2], the s3a connector from `scripts/s3a-jars.sh`):

- sargable: `sgs.read(spark, "bench.events", where=...)`, planned through the metastore (SQLite), no listing;
- Spark's discovery: `spark.read.parquet("s3a://.../events").where(...)`, which lists the table's objects;
- Spark SQL with `sargable serve` as its Hive metastore: `SELECT ... WHERE ...` (Spark lists the selected
  partitions' folders).

For each: the seconds to the first row (`take(1)`) and the S3 requests by kind, cold (the first run of the shape in
the session: Spark caches listings per session) and warm (median of `--repeat` runs after it). Each way first
reads another day once, so that no way pays for the JVM's first run of its code. The time of one LIST
page (1,000 keys) and of one HEAD are measured with the delay on, to say what 1,000,000 objects would cost.

    .venv/bin/python benchmarks/s3.py --partitions 10000 --delay 0.02 --json benchmarks/results/s3.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from hms_server import SargableServe  # noqa: E402
from s3_fixtures import ACCESS_KEY, SECRET_KEY, S3Server, S3ServerError, client_settings, start_s3_server  # noqa: E402

START = dt.date(2024, 1, 1)
KINDS = ("LIST", "HEAD", "GET", "PUT", "DELETE", "COPY")


def start_server() -> S3Server:
    try:
        server = start_s3_server()
    except S3ServerError as exc:
        raise SystemExit(str(exc)) from None
    os.environ.update(client_settings(server), SPARK_LOCAL_IP="127.0.0.1")
    return server


def build(server: S3Server, bucket: str, partitions: int, rows: int, url: str) -> Any:
    """Upload one Parquet file per partition and register them all in one commit; returns the metastore."""
    import sargable as sg
    from sargable.metastore import Metastore
    from sargable.parquet_stats import stats_from_arrow
    from sargable.types import parse_type

    schema = [("x", parse_type("int")), ("y", parse_type("string"))]
    specs = [(START + dt.timedelta(days=i // 24), i % 24) for i in range(partitions)]
    client = server.client()

    def upload(index: int) -> sg.FileStats:
        ds, hr = specs[index]
        xs = pa.array(range(index, index + rows), pa.int32())
        data = pa.table({"x": xs, "y": [f"v{i % 7}" for i in range(rows)]})
        buffer = io.BytesIO()
        pq.write_table(data, buffer)
        key = f"events/ds={ds.isoformat()}/hr={hr}/part-00000.parquet"
        client.put_object(Bucket=bucket, Key=key, Body=buffer.getvalue())
        path = f"s3a://{bucket}/{key}"
        stats = stats_from_arrow(data, path, schema=schema, size_bytes=buffer.tell(), partition={"ds": ds, "hr": hr})
        return stats

    with ThreadPoolExecutor(16) as pool:
        files = list(pool.map(upload, range(partitions)))
    ms = Metastore.open(url)
    ms.create_database("bench", if_not_exists=True)
    ms.create_table(
        "bench", "events", [("x", "int"), ("y", "string")], [("ds", "date"), ("hr", "int")],
        location=f"s3a://{bucket}/events",
    )
    ms.commit("bench", "events", add_files=files)
    return ms


def session(serve_uri: str, warehouse: Path) -> Any:
    from sargable.spark import local_session
    from sargable.spark.s3a import s3a_settings

    jars = subprocess.run(
        ["bash", str(ROOT / "scripts" / "s3a-jars.sh")], check=True, capture_output=True, text=True
    ).stdout.strip().split(",")
    conf = {
        **s3a_settings(jars, endpoint_url=os.environ["AWS_ENDPOINT_URL"], access_key=ACCESS_KEY, secret_key=SECRET_KEY),
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.hive.metastore.uris": serve_uri,
        "spark.sql.warehouse.dir": str(warehouse),
    }
    return local_session("sargable-s3-bench", log=warehouse.parent / "spark.log", **conf)


def timed(server: S3Server, action: Any) -> tuple[float, Counter[str], Any]:
    with server.counted() as requests:
        started = time.perf_counter()
        out = action()
        seconds = time.perf_counter() - started
    return seconds, requests.kinds, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--rows", type=int, default=20, help="rows per file")
    parser.add_argument("--delay", type=float, default=0.02, help="seconds per S3 request")
    parser.add_argument("--repeat", type=int, default=3, help="warm runs per shape and way (median kept)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    from sargable import spark as sgs

    server = start_server()
    with tempfile.TemporaryDirectory(prefix="s3-bench-") as tmp:
        bucket = server.bucket("bench")
        url = f"sqlite:///{Path(tmp) / 'meta.db'}"
        started = time.perf_counter()
        ms = build(server, bucket, args.partitions, args.rows, url)
        built = time.perf_counter() - started
        day = START + dt.timedelta(days=(args.partitions // 24) // 2)
        shapes = {
            "one partition": f"ds = '{day.isoformat()}' and hr = 5",
            "one day": f"ds = '{day.isoformat()}'",
        }
        sql_shapes = {name: where.replace("ds = '", "ds = DATE '") for name, where in shapes.items()}
        with SargableServe(Path(tmp) / "serve", url) as serve:
            spark = session(serve.uri, Path(tmp) / "warehouse")
            spark.range(10).collect()
            warm_up = f"ds = '{START.isoformat()}' and hr = 0"
            sgs.read(spark, "bench.events", where=warm_up, metastore=ms).take(1)
            spark.read.parquet(f"s3a://{bucket}/events/ds={START.isoformat()}").where("hr = 0").take(1)
            spark.sql(f"SELECT * FROM bench.events WHERE ds = DATE '{START.isoformat()}' AND hr = 0").take(1)
            server.set_delay(args.delay)
            client, key = server.client(), _first_key(ms)
            client.head_object(Bucket=bucket, Key=key)
            page = statistics.median(
                timed(server, lambda: client.list_objects_v2(Bucket=bucket, Prefix="events/", MaxKeys=1000))[0]
                for _ in range(5)
            )
            heads = [timed(server, lambda: client.head_object(Bucket=bucket, Key=key))[0] for _ in range(5)]
            head = statistics.median(heads)
            ways = {
                "sargable": lambda where: sgs.read(spark, "bench.events", where=where, metastore=ms),
                "Spark discovery": lambda where: spark.read.parquet(f"s3a://{bucket}/events").where(where),
                "Spark SQL + sargable serve": None,
            }
            results = []
            for shape, where in shapes.items():
                for way, frame in ways.items():
                    if frame is None:
                        query = f"SELECT * FROM bench.events WHERE {sql_shapes[shape]}"

                        def run(query: str = query) -> Any:
                            return spark.sql(query).take(1)
                    else:

                        def run(frame: Any = frame, where: str = where) -> Any:
                            return frame(where).take(1)

                    cold = timed(server, run)
                    warm = [timed(server, run) for _ in range(args.repeat)]
                    assert cold[2], f"{way} found no row for {shape}"
                    results.append(
                        {
                            "shape": shape,
                            "way": way,
                            "cold_s": cold[0],
                            "cold_requests": dict(cold[1]),
                            "warm_s": statistics.median(w[0] for w in warm),
                            "warm_requests": dict(warm[len(warm) // 2][1]),
                        }
                    )
            spark.stop()
        server.set_delay(0)
    text = report(results, args, built, page, head)
    print(text)
    if args.json:
        command = "python benchmarks/s3.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
        data = {
            "command": command,
            "partitions": args.partitions,
            "delay_s": args.delay,
            "list_page_s": page,
            "head_s": head,
            "load_average": os.getloadavg()[0],
            "results": results,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(data, indent=1))


def _first_key(ms: Any) -> str:
    from sargable import s3

    first = next(iter(ms.table("bench.events").files()))
    return s3.native(first.path).partition("/")[2]


def report(results: list[dict[str, Any]], args: Any, built: float, page: float, head: float) -> str:
    def kinds(counts: dict[str, int]) -> str:
        return " ".join(f"{k}={counts[k]}" for k in KINDS if counts.get(k))

    lines = [
        f"S3 (moto emulator, {args.delay * 1000:.0f} ms per request) table of {args.partitions:,} partitions, "
        f"one file each (built in {built:.0f} s); one LIST page {page * 1000:.0f} ms, one HEAD {head * 1000:.0f} ms",
        "",
        f"{'shape':<14} {'way':<28} {'cold s':>7} {'warm s':>7}  cold requests / warm requests",
    ]
    for r in results:
        lines.append(
            f"{r['shape']:<14} {r['way']:<28} {r['cold_s']:>7.2f} {r['warm_s']:>7.2f}  "
            f"{kinds(r['cold_requests'])} / {kinds(r['warm_requests'])}"
        )
    lines.append("")
    for shape in dict.fromkeys(r["shape"] for r in results):
        by_way = {r["way"]: r for r in results if r["shape"] == shape}
        ours, theirs = by_way["sargable"], by_way["Spark discovery"]
        lines.append(
            f"{shape}: sargable {theirs['cold_s'] / ours['cold_s']:.1f}x faster than Spark's discovery cold, "
            f"{theirs['warm_s'] / ours['warm_s']:.1f}x warm; LIST requests {ours['cold_requests'].get('LIST', 0)} "
            f"vs {theirs['cold_requests'].get('LIST', 0)}"
        )
    pages = 1_000_000 / 1000
    lines.append(
        f"Spark's discovery lists every object under the table: s3a asks for pages of 5,000 keys, which moto serves "
        f"and a real bucket cuts to 1,000, so {args.partitions:,} objects are {-(-args.partitions // 1000)} pages "
        f"there. At 1,000,000 objects it needs at least {pages:,.0f} LIST pages, one after another: "
        f"{pages * page:,.0f} s at the page time measured here ({page * 1000:.0f} ms for 1,000 keys, mostly the "
        f"emulator's own XML), {pages * args.delay:,.0f} s at {args.delay * 1000:.0f} ms a page; sargable lists none."
    )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
