"""Spark SQL end to end through Hive's metastore and through `sargable serve` (issue 32, item 3): unmodified pyspark
with Hive support runs the same statements against the same table and the same partition folders, registered in
Hive's metastore 2.3.10 on PostgreSQL (direct SQL on; its partitions loaded by SQL, as `benchmarks/hms.py
--hive-sql-sizes` does, then checked through its Thrift API) and in `sargable serve` (on SQLite, `--cache-mb 0`:
every call reads the store, so no figure is a cached reply).

The table `bench.events_<size>` `(x int, y string)` partitioned by `(ds string, hr int)` (24 hours a day) has one
small Parquet file in every partition folder (one file written, hard-linked into each folder), and `bench.dates`, a
date dimension (`d_date` is `ds`), one file. Each round starts one driver per system (the systems interleaved) and
runs, timed one by one after a warm-up statement (the session and its metastore client):

- one partition (`ds = D AND hr = 3`), a day (`ds = D`), a non-leading key (`hr = 3`), `SHOW PARTITIONS`;
- two star queries in the TPC-DS style (the fact table joined to the date dimension filtered on its own columns,
  so Spark prunes the fact's partitions with its dynamic partition pruning);
- an `INSERT` of one new partition (its own per system and round: both tables share the folders).

The answers are compared between the systems. The server's per-call log (`ms=`) gives how much of each statement
is sargable's metastore; Hive's side of the same calls is the standalone figure of `benchmarks/hms.py`.

    bash scripts/postgres.sh run -- .venv/bin/python benchmarks/hms_e2e.py --sizes 100000 \\
        --jdbc-jar PATH/postgresql-42.7.13.jar --json benchmarks/results/hms-e2e.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pyarrow as pa
import pyarrow.parquet as pq
from pymetastore.hive_metastore import ttypes

from hive_peer import POSTGRES_JDBC_JAR, HivePeer, postgres_conf
from hms import DB, START, Client, check_sql_load, create_table, hive_postgres_database, hive_sql_load, storage
from hms import partition_values as values_of
from hms_server import SargableServe, peak_rss_mb
from hms_spark import run_sql

SYSTEMS = ("hive postgresql", "sargable sqlite")
DATES = (("d_date", "string"), ("d_year", "int"), ("d_moy", "int"), ("d_dom", "int"), ("d_holiday", "string"))
PHASES = ("sql_ms", "collect_ms", "gc_ms")
"""Where a statement's time went in the driver (tests/hms_spark.py): `spark.sql` (analysis; a command's whole run),
`collect` (a query's planning and job, rows to Python), the driver JVM's garbage collection in either."""
LINKS = 50_000
"""Hard links made of one file at most (ext4 allows 65,000)."""
HOLIDAYS = ("01-01", "02-14", "03-17")
"""Month-day of the dimension's holidays (the second star query's days)."""
CONF = {
    "spark.sql.hive.caseSensitiveInferenceMode": "NEVER_INFER",
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "8",
}
"""The same for both systems: the tables' column names are lower case, so Spark need not read every file to infer
their case; Spark lists many partition folders in a job of at most 8 tasks (its default, 10,000 tasks of a few
folders each, spends minutes on task overhead on 2 cores when a star query lists every partition)."""


def make_files(location: Path, size: int) -> None:
    """Every partition folder of `events_<size>` with one small Parquet file: hard links of one file (a new one
    every LINKS partitions, under the file system's limit of links per file)."""
    location.mkdir(parents=True, exist_ok=True)
    data = pa.table({"x": pa.array([1, 2, 3], pa.int32()), "y": ["a", "b", "c"]})
    day = None
    for n, (ds, hr) in enumerate(values_of(size)):
        if n % LINKS == 0:
            source = location / f"part-{n}.parquet"
            pq.write_table(data, source)
        if ds != day:
            day = ds
            (location / f"ds={ds}").mkdir(exist_ok=True)
        folder = location / f"ds={ds}" / f"hr={hr}"
        folder.mkdir(exist_ok=True)
        os.link(source, folder / "part-00000.parquet")
    for source in location.glob("part-*.parquet"):
        source.unlink()


def make_dates(location: Path, size: int) -> None:
    """The date dimension: a row per day of the fact table."""
    location.mkdir(parents=True, exist_ok=True)
    days = [START + dt.timedelta(days=i) for i in range((size + 23) // 24)]
    table = pa.table(
        {
            "d_date": [d.isoformat() for d in days],
            "d_year": pa.array([d.year for d in days], pa.int32()),
            "d_moy": pa.array([d.month for d in days], pa.int32()),
            "d_dom": pa.array([d.day for d in days], pa.int32()),
            "d_holiday": ["Y" if d.strftime("%m-%d") in HOLIDAYS else "N" for d in days],
        }
    )
    pq.write_table(table, location / "part-00000.parquet")


def create_dates(client: Client, location: str) -> None:
    client.thrift.create_table(
        ttypes.Table(
            tableName="dates",
            dbName=DB,
            owner="bench",
            sd=storage(location, DATES),
            partitionKeys=[],
            parameters={},
            tableType="EXTERNAL_TABLE",
        )
    )


def queries(size: int) -> dict[str, str]:
    """The timed statements (but the INSERT), by label."""
    table = f"{DB}.events_{size}"
    day = (START + dt.timedelta(days=4)).isoformat()
    star = f"FROM {table} e JOIN {DB}.dates d ON e.ds = d.d_date WHERE"
    return {
        "one partition": f"SELECT count(*) FROM {table} WHERE ds = '{day}' AND hr = 3",
        "a day (24)": f"SELECT count(*) FROM {table} WHERE ds = '{day}'",
        f"hr = 3 ({(size + 20) // 24:,})": f"SELECT count(*) FROM {table} WHERE hr = 3",
        "SHOW PARTITIONS": f"SHOW PARTITIONS {table}",
        "star, one day (DPP)": f"SELECT d.d_dom, count(*) {star} d.d_year = 2024 AND d.d_moy = 1 AND d.d_dom = 5 "
        "GROUP BY d.d_dom",
        "star, holidays (DPP)": f"SELECT d.d_date, count(*) {star} d.d_holiday = 'Y' GROUP BY d.d_date "
        "ORDER BY d.d_date",
    }


def load(system: str, client: Client, root: Path, size: int, database_url: str | None) -> str:
    """Register `events_<size>` (its folders made already) and `dates` on one system; a note of what was done."""
    base = root / "warehouse" / "bench.db"
    location = f"file:{base / f'events_{size}'}"
    started = time.perf_counter()
    if database_url is not None:
        seconds = hive_sql_load(database_url, client, f"events_{size}", location, size)
        check_sql_load(client, f"events_{size}", size)
        note = f"{system}: {size:,} partitions loaded by SQL in {seconds:.1f} s, checked through its Thrift API"
    else:
        create_table(client, f"events_{size}", location)
        values = values_of(size)
        for start in range(0, size, 10_000):
            parts = [
                ttypes.Partition(
                    values=[ds, str(hr)],
                    dbName=DB,
                    tableName=f"events_{size}",
                    sd=storage(f"{location}/ds={ds}/hr={hr}"),
                    parameters={},
                )
                for ds, hr in values[start : start + 10_000]
            ]
            client.thrift.add_partitions(parts)
        note = f"{system}: {size:,} partitions added through add_partitions in {time.perf_counter() - started:.1f} s"
    return note


def server_calls(log: Path, since: float, until: float) -> list[tuple[str, float]]:
    """(method, ms) of the server's per-call log lines logged between the epoch times `since` and `until`."""
    calls = []
    for line in log.read_text(errors="replace").splitlines():
        if " sargable.hms INFO " not in line:
            continue
        stamp, rest = line.split(" sargable.hms INFO ", 1)
        at = dt.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()
        ms = next((float(f[3:]) for f in rest.split() if f.startswith("ms=")), None)
        if ms is not None and since <= at <= until + 0.05:
            calls.append((rest.split()[0], ms))
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--rounds", type=int, default=2, help="driver runs per system (interleaved)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each query in a driver, one after another")
    parser.add_argument("--postgres", default=os.environ.get("SARGABLE_TEST_POSTGRES_URL"))
    parser.add_argument("--jdbc-jar", type=Path, default=POSTGRES_JDBC_JAR)
    parser.add_argument("--hive-heap", default="1g", help="Hive metastore's -Xmx")
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument(
        "--leave-out", default="", help="queries left out, by the start of their label: e.g. 'star,hr' (big sizes)"
    )
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--logs", type=Path, default=None, help="copy both servers' logs here at the end")
    args = parser.parse_args()
    if not args.postgres or not args.jdbc_jar.is_file():
        parser.error("needs PostgreSQL (scripts/postgres.sh) and --jdbc-jar")
    loads = [os.getloadavg()[0]]
    results: list[dict[str, Any]] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="hms-e2e-") as tmp, ExitStack() as stack:
        root = Path(tmp)
        database = stack.enter_context(hive_postgres_database(args.postgres))
        hive = stack.enter_context(
            HivePeer(
                root / "hive",
                extra_conf=postgres_conf(database),
                classpath=[args.jdbc_jar],
                heap=args.hive_heap,
            )
        )
        sargable = stack.enter_context(
            SargableServe(root / "sargable", f"sqlite:///{root / 'meta.db'}", args=["--cache-mb", "0"])
        )
        uris = {"hive postgresql": hive.uri, "sargable sqlite": sargable.uri}
        clients = {system: Client(int(uri.rsplit(":", 1)[1])) for system, uri in uris.items()}
        base = root / "warehouse" / "bench.db"
        for client in clients.values():
            stack.callback(client.close)
            client.thrift.create_database(ttypes.Database(name=DB, locationUri=f"file:{base}", parameters={}))
            create_dates(client, f"file:{base / 'dates'}")
        sizes = [int(s) for s in args.sizes.split(",") if s]
        make_dates(base / "dates", max(sizes))
        for size in sizes:
            started = time.perf_counter()
            make_files(base / f"events_{size}", size)
            notes.append(f"{size:,} partition folders and files made in {time.perf_counter() - started:.1f} s")
            print(notes[-1], file=sys.stderr, flush=True)
            for system, client in clients.items():
                notes.append(load(system, client, root, size, database if system.startswith("hive") else None))
                print(notes[-1], file=sys.stderr, flush=True)
            timed = queries(size)
            left_out = tuple(p for p in args.leave_out.split(",") if p)
            timed = {k: v for k, v in timed.items() if not left_out or not k.startswith(left_out)}
            conf = {**CONF, "spark.driver.memory": args.driver_memory}
            for round_ in range(args.rounds):
                for n, system in enumerate(SYSTEMS):
                    insert = (
                        f"INSERT INTO {DB}.events_{size} PARTITION (ds = '2099-01-{round_ + 1:02d}', hr = {n}) "
                        "VALUES (1, 'a')"
                    )
                    labels = ["warm-up", *(q for q in timed for _ in range(args.repeat)), "INSERT one partition"]
                    statements = [f"SELECT count(*) FROM {DB}.dates", *(timed[q] for q in labels[1:-1]), insert]
                    print(f"  {size:,}: round {round_ + 1}, {system}", file=sys.stderr, flush=True)
                    answers = run_sql(uris[system], root / "spark-warehouse", statements, conf=conf, timeout=3600)
                    for label, statement, answer in zip(labels, statements, answers, strict=True):
                        again = results and results[-1]["query"] == label and results[-1]["system"] == system
                        if "error" in answer:
                            raise SystemExit(f"{system}: {label} failed: {answer['error']}")
                        calls = []
                        if system.startswith("sargable"):
                            calls = server_calls(sargable.log, answer["at"], answer["at"] + answer["ms"] / 1000)
                        rows = answer["rows"]
                        if label == "SHOW PARTITIONS":
                            rows = sorted(r for r in rows if "2099-" not in r[0])
                        results.append(
                            {
                                "size": size,
                                "round": round_,
                                "system": system,
                                "query": label,
                                "again": bool(again),
                                "sql": statement,
                                "ms": answer["ms"],
                                **{phase: answer[phase] for phase in PHASES},
                                "metastore_ms": sum(ms for _, ms in calls),
                                "calls": [f"{m} {ms:.1f}" for m, ms in calls],
                                "answer": rows if len(rows) < 50 else [len(rows), rows[0], rows[-1]],
                            }
                        )
        for system, peer in (("hive postgresql", hive), ("sargable sqlite", sargable)):
            assert peer.process is not None
            notes.append(f"peak resident memory (VmHWM) of {system}: {peak_rss_mb(peer.process.pid):,.0f} MiB")
        loads.append(os.getloadavg()[0])
        if args.logs:
            args.logs.mkdir(parents=True, exist_ok=True)
            for log in [*hive.workdir.glob("*.log"), sargable.log]:
                shutil.copy(log, args.logs / log.name)
        finish(results, notes, loads, args)  # (before a million folders are removed, which takes minutes)


def finish(results: list[dict[str, Any]], notes: list[str], loads: list[float], args: argparse.Namespace) -> None:
    """Check that the systems agree, write the JSON results and print the report."""
    for (size, query), answers in _by(results, ("size", "query"), "answer").items():
        if query not in ("warm-up", "INSERT one partition") and any(a != answers[0] for a in answers):
            raise SystemExit(f"the systems disagree on {query} at {size:,}: {answers}")
    if args.json:
        command = "python benchmarks/hms_e2e.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps({"command": command, "loads": loads, "results": results, "notes": notes}, indent=1)
        )
    print(report(results, notes, loads, args), flush=True)


def _by(results: list[dict[str, Any]], keys: tuple[str, ...], value: str) -> dict[tuple, list]:
    """`value` of the results, grouped by their `keys`."""
    out: dict[tuple, list] = {}
    for r in results:
        out.setdefault(tuple(r[k] for k in keys), []).append(r[value])
    return out


def report(results: list[dict[str, Any]], notes: list[str], loads: list[float], args: argparse.Namespace) -> str:
    """A line per size and query: the first run in a driver and the runs after it (a warm driver), median over the
    rounds, Hive over sargable, and the share of sargable's time its metastore calls took (its log)."""
    lines = [
        f"Spark SQL {__import__('pyspark').__version__} end to end, ms: first run in a fresh driver | the next "
        f"{args.repeat - 1} runs in it; median over {args.rounds} driver runs per system, interleaved; load average "
        f"{loads[0]:.1f} at the start, {loads[1]:.1f} at the end",
        f"{'size':>9} {'query':<24} {'hive pg':>17} {'sargable':>17} {'x':>13}  sargable's metastore (first | next)",
    ]
    for size, query in dict.fromkeys((r["size"], r["query"]) for r in results):
        row = {}
        for system in SYSTEMS:
            mine = [r for r in results if (r["size"], r["query"], r["system"]) == (size, query, system)]
            first = [r for r in mine if not r["again"]]
            later = [r for r in mine if r["again"]]
            row[system] = [
                (statistics.median(r["ms"] for r in runs), statistics.median(r["metastore_ms"] for r in runs))
                if runs
                else None
                for runs in (first, later)
            ]
        hive, own = row[SYSTEMS[0]], row[SYSTEMS[1]]

        def pair(cells: list, index: int, form: str) -> str:
            return " | ".join("-" if c is None else format(c[index], form) for c in cells)

        ratios = " | ".join("-" if h is None or o is None else f"{h[0] / o[0]:.1f}x" for h, o in zip(hive, own))
        lines.append(
            f"{size:>9,} {query:<24} {pair(hive, 0, ',.0f'):>17} {pair(own, 0, ',.0f'):>17} {ratios:>13}  "
            f"{pair(own, 1, ',.1f')} ms"
        )
    lines += [
        "",
        "where the time went, ms (median; first run | next runs): spark.sql (analysis; a command's whole run) / "
        "collect (a query's planning and job) / the driver's GC, and sargable's metastore calls (its log)",
    ]
    for size, query in dict.fromkeys((r["size"], r["query"]) for r in results):
        for system in SYSTEMS:
            mine = [r for r in results if (r["size"], r["query"], r["system"]) == (size, query, system)]
            cells = []
            for runs in ([r for r in mine if not r["again"]], [r for r in mine if r["again"]]):
                if runs and all(p in r for r in runs for p in PHASES):
                    parts = [statistics.median(r[p] for r in runs) for p in (*PHASES, "metastore_ms")]
                    metastore = f" ({parts[3]:,.1f})" if system.startswith("sargable") else ""
                    cells.append(" / ".join(f"{v:,.0f}" for v in parts[:3]) + metastore)
                else:
                    cells.append("-")
            lines.append(f"{size:>9,} {query:<24} {system:<16} {' | '.join(cells)}")
    return "\n".join([*lines, *notes])


if __name__ == "__main__":
    main()
