"""The Hive metastore API side by side: Hive's own metastore (2.3.10 from the pyspark jars) on embedded Derby and
on PostgreSQL (direct SQL, HikariCP), and `sargable serve` on SQLite and on PostgreSQL, answering the same Thrift
calls from the same client.

For each system and size, a table `bench.events_<size>` `(x int, y string)` partitioned by `(ds string, hr int)`
(days x 24 hours) gets its partitions through `add_partitions` in batches of `--batch`; then each read runs once to
warm up and `--repeat` times (`--large-repeat` at the sargable-only sizes), and the median is kept:

- get_table and get_database (what Spark calls most: 5-8 times per statement);
- get_partitions_by_filter: one partition, one day (24), a 7-day range (168), a non-leading key `hr = 3`;
- get_partitions_by_names of 300 names (one batch of Hive's client: `hive.metastore.batch.retrieve.max`);
- get_partition_names and get_partitions of the whole table.

sargable runs as two servers over the same store: the default one (encoded replies cached by table version: the
"warm" figures, what a client repeating a call gets) and one with `--cache-mb 0` (the "cold" figures: every call
reads the store and encodes). The client decodes every partition's values and location (pymetastore's structs cut
to those two fields, C-accelerated; the other fields are skipped in C), so the client costs little next to the
server; every answer is compared between the systems.

Folders: at the compared sizes (`--sizes`) each server makes every partition's folder on add, as Hive does
(`--premake-folders` makes them first, so neither does); at the sargable-only sizes (`--sargable-sizes`) the table
lives under `s3a://`, so no folder is made. A pyspark driver per system times a selective Spark SQL query at the
compared sizes (`--spark-repeat` runs, median). Peak resident memory (VmHWM) of every server is read after each size.
With `--ingest SECONDS`, each system's default server also runs readers under ingest (tests/hms_ingest.py: a
partition added every 100 ms while 4 clients run selective filters, every read checked). Last, for each sargable
size, where a cold `get_partitions` spends its CPU (`breakdown`: the metastore's listing,
its formatting of default locations, the server's encoding, as `Partition` objects; and the page listing the server
uses since issue 32). The spread (fastest and slowest call) of every cold and Hive call is printed after the tables.

    bash scripts/postgres.sh run -- .venv/bin/python benchmarks/hms.py --json benchmarks/results/hms.json

(without $SARGABLE_TEST_POSTGRES_URL or --postgres, the PostgreSQL systems are left out). Its siblings:
`benchmarks/hms_cold.py` (the cold calls with every system up at once, called in turn) and `benchmarks/hms_e2e.py`
(Spark SQL end to end through each metastore over the same table and folders).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from pymetastore.hive_metastore import ThriftHiveMetastore, ttypes
from thrift.protocol import fastbinary
from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated
from thrift.Thrift import TApplicationException, TMessageType, TType
from thrift.transport import TSocket, TTransport

from hive_peer import POSTGRES_JDBC_JAR, HivePeer, postgres_conf
from hms_ingest import run_ingest
from hms_server import SargableServe, peak_rss_mb
from hms_spark import run_sql

DB = "bench"
START = dt.date(2024, 1, 1)
SYSTEMS = ("hive derby", "hive postgresql", "sargable sqlite", "sargable postgresql")
BY_NAMES = 300
DIRECT_SQL = "Using direct SQL, underlying DB is POSTGRES"


# ------------------------------------------------------------------------------------------ the client


class _Location:
    thrift_spec = (None, None, (2, TType.STRING, "location", "UTF8", None))

    def __init__(self, location: str | None = None) -> None:
        self.location = location


class _Partition:
    """A `Partition` cut to its values and its storage descriptor's location."""

    thrift_spec = (
        None,
        (1, TType.LIST, "values", (TType.STRING, "UTF8", False), None),
        None,
        None,
        None,
        None,
        (6, TType.STRUCT, "sd", [_Location, _Location.thrift_spec], None),
    )

    def __init__(self, values: list[str] | None = None, sd: _Location | None = None) -> None:
        self.values = values
        self.sd = sd


class _Partitions:
    thrift_spec = ((0, TType.LIST, "success", (TType.STRUCT, [_Partition, _Partition.thrift_spec], False), None),)

    def __init__(self, success: list[_Partition] | None = None) -> None:
        self.success = success


class _Skipped:
    """A struct whose fields are all skipped (in C)."""

    thrift_spec = ()


class _Counted:
    thrift_spec = ((0, TType.LIST, "success", (TType.STRUCT, [_Skipped, _Skipped.thrift_spec], False), None),)

    def __init__(self, success: list[_Skipped] | None = None) -> None:
        self.success = success


class Client:
    """pymetastore's generated client, with the partition-returning calls read into `_Partition`s."""

    def __init__(self, port: int, timeout_ms: int = 1_800_000) -> None:
        sock = TSocket.TSocket("127.0.0.1", port)
        sock.setTimeout(timeout_ms)
        self.transport = TTransport.TBufferedTransport(sock, rbuf_size=1 << 20)
        self.transport.open()
        self.protocol = TBinaryProtocolAccelerated(self.transport)
        self.thrift = ThriftHiveMetastore.Client(self.protocol)

    def close(self) -> None:
        self.transport.close()

    def partitions(self, method: str, *args: Any, read: bool = True) -> list:
        """(values, location) of each partition a `get_partitions*` call returns; with `read=False`, the reply's
        partitions are skipped in C (about 2 us each), which is how the timed calls run."""
        getattr(self.thrift, f"send_{method}")(*args)
        protocol = self.protocol
        _, kind, _ = protocol.readMessageBegin()
        if kind == TMessageType.EXCEPTION:
            error = TApplicationException()
            error.read(protocol)
            protocol.readMessageEnd()
            raise error
        kind_of = _Partitions if read else _Counted
        result = kind_of()
        fastbinary.decode_binary(result, protocol, [kind_of, kind_of.thrift_spec])
        protocol.readMessageEnd()
        if result.success is None:
            raise RuntimeError(f"{method}{args}: the server answered with an exception")
        return [(tuple(p.values), p.sd.location) for p in result.success] if read else result.success


# ------------------------------------------------------------------------------------------ the workload


def partition_values(count: int) -> list[tuple[str, int]]:
    """The first `count` partitions' (ds, hr): 24 hours a day from START."""
    return [((START + dt.timedelta(days=i // 24)).isoformat(), i % 24) for i in range(count)]


def storage(location: str | None, columns: tuple[tuple[str, str], ...] = (("x", "int"), ("y", "string"))) -> Any:
    """A Parquet storage descriptor of these columns at `location`."""
    return ttypes.StorageDescriptor(
        cols=[ttypes.FieldSchema(name, kind, None) for name, kind in columns],
        location=location,
        inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
        serdeInfo=ttypes.SerDeInfo(
            None, "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe", {"serialization.format": "1"}
        ),
        numBuckets=-1,
        bucketCols=[],
        sortCols=[],
        parameters={},
        skewedInfo=ttypes.SkewedInfo([], [], {}),
        compressed=False,
        storedAsSubDirectories=False,
    )


@dataclass(frozen=True)
class Read:
    label: str
    call: Callable[[Client, str, bool], Any]
    """Runs the read on a table; returns partitions' (values, location) or names (with `read` False, the
    partitions are skipped, not read)."""


def reads(size: int) -> list[Read]:
    days = size // 24
    day = (START + dt.timedelta(days=min(4, days - 8))).isoformat()
    week_end = (dt.date.fromisoformat(day) + dt.timedelta(days=6)).isoformat()
    step = max(1, size // BY_NAMES)
    names = [f"ds={ds}/hr={hr}" for ds, hr in partition_values(size)[::step][:BY_NAMES]]

    def by_filter(text: str) -> Read:
        return Read(text, lambda c, t, r: c.partitions("get_partitions_by_filter", DB, t, text, -1, read=r))

    return [
        Read("get_table", lambda c, t, r: [c.thrift.get_table(DB, t).tableName]),
        Read("get_database", lambda c, t, r: [c.thrift.get_database(DB).name]),
        by_filter(f'ds = "{day}" and hr = 3'),
        by_filter(f'ds = "{day}"'),
        by_filter(f'ds >= "{day}" and ds <= "{week_end}"'),
        by_filter("hr = 3"),
        Read(
            f"get_partitions_by_names ({len(names)})",
            lambda c, t, r: c.partitions("get_partitions_by_names", DB, t, names, read=r),
        ),
        Read("get_partition_names", lambda c, t, r: c.thrift.get_partition_names(DB, t, -1)),
        Read("get_partitions", lambda c, t, r: c.partitions("get_partitions", DB, t, -1, read=r)),
    ]


def answer_of(result: list) -> list:
    """What must agree between systems: sorted partition values, or names."""
    return sorted(result if result and isinstance(result[0], str) else (values for values, _ in result))


def _times_ms(call: Callable[[], Any], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return times


@dataclass
class Cell:
    system: str
    cache: str
    """"warm" (the default server), "cold" (`--cache-mb 0`), or "-" for Hive."""
    size: int
    call: str
    count: int
    ms: float
    """The median."""
    low: float = 0.0
    high: float = 0.0
    """The fastest and slowest call (the spread, on a shared machine)."""


@dataclass
class Run:
    """What one benchmark run measured."""

    cells: list[Cell]
    adds: list[dict[str, Any]]
    spark: list[dict[str, Any]]
    rss: list[dict[str, Any]]
    answers: dict[tuple[int, str], list]
    notes: list[str]
    breakdown: list[dict[str, Any]]
    ingest: list[dict[str, Any]]


def create_table(client: Client, table: str, location: str) -> None:
    """`bench.<table>` `(x int, y string)` partitioned by `(ds string, hr int)`, external, at `location`."""
    client.thrift.create_table(
        ttypes.Table(
            tableName=table,
            dbName=DB,
            owner="bench",
            sd=storage(location),
            partitionKeys=[ttypes.FieldSchema("ds", "string", None), ttypes.FieldSchema("hr", "int", None)],
            parameters={},
            tableType="EXTERNAL_TABLE",
        )
    )


def load_table(client: Client, table: str, location: str, size: int, batch: int) -> list[float]:
    """Create `bench.<table>` and add its partitions in batches; seconds per batch."""
    create_table(client, table, location)
    seconds = []
    values = partition_values(size)
    for start in range(0, size, batch):
        parts = [
            ttypes.Partition(
                values=[ds, str(hr)],
                dbName=DB,
                tableName=table,
                sd=storage(f"{location}/ds={ds}/hr={hr}"),
                parameters={},
            )
            for ds, hr in values[start : start + batch]
        ]
        started = time.perf_counter()
        added = client.thrift.add_partitions(parts)
        seconds.append(time.perf_counter() - started)
        if added != len(parts):
            raise RuntimeError(f"{table}: add_partitions added {added} of {len(parts)}")
        if len(seconds) % 50 == 0:
            print(f"    {table}: {start + len(parts):,} partitions added", file=sys.stderr, flush=True)
    return seconds


MODEL = "org.apache.hadoop.hive.metastore.model."
"""The prefix of DataNucleus's sequence names (its SEQUENCE_TABLE) for Hive's model classes."""


def _columns(cur: Any, table: str) -> list[str]:
    cur.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = %s AND table_schema = current_schema() "
        "ORDER BY ordinal_position",
        (table,),
    )
    return [row[0] for row in cur.fetchall()]


def _copy_rows(cur: Any, table: str, source: str, where: str, computed: dict[str, str], params: tuple = ()) -> None:
    """INSERT into `table` one row per row of `source` (a FROM clause holding the alias `t` of the template row of
    `table`, and `i`), each column `computed`'s SQL or else the template's."""
    columns = _columns(cur, table)
    select = ", ".join(computed.get(c, f't."{c}"') for c in columns)
    quoted = ", ".join(f'"{c}"' for c in columns)
    cur.execute(f'INSERT INTO "{table}" ({quoted}) SELECT {select} FROM {source} WHERE {where}', params)


def hive_sql_load(database_url: str, client: Client, table: str, location: str, size: int) -> float:
    """Load `bench.<table>`'s partitions straight into Hive's PostgreSQL schema (issue 32, item 1): the table and its
    first partition through Hive's API (the template), the other `size - 1` by SQL in bulk: rows of PARTITIONS, SDS,
    SERDES (and their parameters) copied from the template's with their own ids, names, locations and
    PARTITION_KEY_VALS; then DataNucleus's id sequences moved past them. Seconds taken (the SQL part)."""
    import psycopg

    create_table(client, table, location)
    ds, hr = partition_values(1)[0]
    first = ttypes.Partition(
        values=[ds, str(hr)], dbName=DB, tableName=table, sd=storage(f"{location}/ds={ds}/hr={hr}"), parameters={}
    )
    client.thrift.add_partitions([first])
    started = time.perf_counter()
    with psycopg.connect(database_url) as conn, conn.cursor() as cur:
        cur.execute(
            'SELECT p."PART_ID", p."SD_ID", s."SERDE_ID" FROM "PARTITIONS" p JOIN "SDS" s USING ("SD_ID") '
            'JOIN "TBLS" t USING ("TBL_ID") WHERE t."TBL_NAME" = %s',
            (table,),
        )
        part_id, sd_id, serde_id = cur.fetchone()
        bases = {}
        for model, id_table, id_column in (
            ("MPartition", "PARTITIONS", "PART_ID"),
            ("MStorageDescriptor", "SDS", "SD_ID"),
            ("MSerDeInfo", "SERDES", "SERDE_ID"),
        ):
            cur.execute('SELECT "NEXT_VAL" FROM "SEQUENCE_TABLE" WHERE "SEQUENCE_NAME" = %s', (MODEL + model,))
            next_val = (cur.fetchone() or (0,))[0]
            cur.execute(f'SELECT max("{id_column}") FROM "{id_table}"')
            bases[model] = max(next_val, cur.fetchone()[0]) + 1000
            cur.execute(
                'UPDATE "SEQUENCE_TABLE" SET "NEXT_VAL" = %s WHERE "SEQUENCE_NAME" = %s',
                (bases[model] + size + 1000, MODEL + model),
            )
        n = size - 1
        series = "generate_series(1, %s) AS i"
        day = "to_char(date '2024-01-01' + (i / 24), 'YYYY-MM-DD')"
        hour = "(i %% 24)::text"
        name = f"'ds=' || {day} || '/hr=' || {hour}"
        serde, sd, part = (f"{bases[m]} + i" for m in ("MSerDeInfo", "MStorageDescriptor", "MPartition"))
        _copy_rows(cur, "SERDES", f'"SERDES" t, {series}', f't."SERDE_ID" = {serde_id}', {"SERDE_ID": serde}, (n,))
        _copy_rows(
            cur, "SERDE_PARAMS", f'"SERDE_PARAMS" t, {series}', f't."SERDE_ID" = {serde_id}', {"SERDE_ID": serde}, (n,)
        )
        _copy_rows(
            cur,
            "SDS",
            f'"SDS" t, {series}',
            f't."SD_ID" = {sd_id}',
            {"SD_ID": sd, "SERDE_ID": serde, "LOCATION": f"%s || '/' || {name}"},
            (location, n),
        )
        _copy_rows(cur, "SD_PARAMS", f'"SD_PARAMS" t, {series}', f't."SD_ID" = {sd_id}', {"SD_ID": sd}, (n,))
        _copy_rows(
            cur,
            "PARTITIONS",
            f'"PARTITIONS" t, {series}',
            f't."PART_ID" = {part_id}',
            {"PART_ID": part, "SD_ID": sd, "PART_NAME": name},
            (n,),
        )
        params = f'"PARTITION_PARAMS" t, {series}'
        _copy_rows(cur, "PARTITION_PARAMS", params, f't."PART_ID" = {part_id}', {"PART_ID": part}, (n,))
        for index, value in ((0, day), (1, hour)):
            _copy_rows(
                cur,
                "PARTITION_KEY_VALS",
                f'"PARTITION_KEY_VALS" t, {series}',
                f't."PART_ID" = {part_id} AND t."INTEGER_IDX" = {index}',
                {"PART_ID": part, "PART_KEY_VAL": value},
                (n,),
            )
    return time.perf_counter() - started


def check_sql_load(client: Client, table: str, size: int) -> None:
    """Hive returns the SQL-loaded partitions through its API: the count, and a sample of them field by field
    against the template partition added through the API (all but values, name-derived location, create time)."""
    names = client.thrift.get_partition_names(DB, table, -1)
    if len(names) != size:
        raise SystemExit(f"Hive lists {len(names):,} partitions of {table}, not the {size:,} loaded")
    step = max(1, size // 7)
    sample = [f"ds={ds}/hr={hr}" for ds, hr in partition_values(size)[::step]]
    template, *loaded = client.thrift.get_partitions_by_names(DB, table, sample)
    for part in loaded:
        ds, hr = part.values
        expected = ttypes.Partition(**vars(template))
        expected.sd = ttypes.StorageDescriptor(**vars(template.sd))
        expected.values = [ds, hr]
        expected.sd.location = template.sd.location.rsplit("/ds=", 1)[0] + f"/ds={ds}/hr={hr}"
        expected.createTime = part.createTime
        if part != expected:
            raise SystemExit(f"Hive's SQL-loaded partition {part.values} differs from the API's: {part} != {expected}")


def measure(
    system: str,
    clients: dict[str, Client],
    pids: dict[str, int],
    sizes: list[int],
    root: Path,
    args: argparse.Namespace,
    run: Run,
    *,
    compared: bool,
    sql_load: str | None = None,
) -> None:
    """Load and time every size on one system (`clients`: cache mode -> client of the server in that mode); with
    `sql_load` (the URL of Hive's PostgreSQL database), Hive's tables are loaded by SQL (`hive_sql_load`)."""
    loader = next(iter(clients.values()))
    local = compared or sql_load is not None  # (Hive's metastore can't make an s3a:// table without hadoop-aws)
    base = f"file:{root / system.replace(' ', '-') / 'warehouse' / 'bench.db'}" if local else "s3a://bench/bench.db"
    with suppress(ttypes.AlreadyExistsException):
        loader.thrift.create_database(ttypes.Database(name=DB, locationUri=base, parameters={}))
    for size in sizes:
        table = f"events_{size}"
        location = f"{base}/{table}"
        if args.premake_folders and compared:
            for ds, hr in partition_values(size):
                (Path(location[len("file:") :]) / f"ds={ds}" / f"hr={hr}").mkdir(parents=True, exist_ok=True)
        print(f"  {system}: {size:,} partitions", file=sys.stderr, flush=True)
        if sql_load is not None:
            seconds = hive_sql_load(sql_load, loader, table, location, size)
            check_sql_load(loader, table, size)
            run.notes.append(f"Hive on PostgreSQL, {size:,} partitions loaded by SQL in {seconds:.1f} s, checked")
        else:
            batches = load_table(loader, table, location, size, args.batch)
            run.adds.append({"system": system, "size": size, "seconds": sum(batches), "batches": len(batches)})
        repeat = args.repeat if compared else args.large_repeat
        for read in reads(size):
            for cache, client in clients.items():
                result = read.call(client, table, True)
                answer = answer_of(result)
                expected = run.answers.setdefault((size, read.label), answer)
                if answer != expected:
                    raise SystemExit(f"{system} ({cache}) disagrees on {read.label} at {size:,}: {len(answer)} answers")
                times = _times_ms(lambda read=read, client=client, table=table: read.call(client, table, False), repeat)
                run.cells.append(
                    Cell(system, cache, size, read.label, len(result), statistics.median(times), min(times), max(times))
                )
        for cache, pid in pids.items():
            run.rss.append({"system": system, "cache": cache, "size": size, "peak_mb": peak_rss_mb(pid)})


def ingest(
    system: str, clients: dict[str, Client], servers: dict[str, tuple[int, int]], root: Path, seconds: float, run: Run
) -> None:
    """Readers under ingest (tests/hms_ingest.py) on a new table of the system's default server (sargable's with its
    reply cache): a partition added every 100 ms, 4 clients running selective filters, every read checked."""
    cache, client = next(iter(clients.items()))
    location = f"file:{root / system.replace(' ', '-') / 'warehouse' / 'bench.db' / 'ingest'}"
    create_table(client, "ingest", location)

    def partition(values: tuple[str, str]) -> Any:
        ds, hr = values
        return ttypes.Partition(
            values=[ds, hr], dbName=DB, tableName="ingest", sd=storage(f"{location}/ds={ds}/hr={hr}"), parameters={}
        )

    print(f"  {system}: readers under ingest, {seconds:.0f} s", file=sys.stderr, flush=True)
    figures = run_ingest(servers[cache][0], DB, "ingest", partition, seconds)
    if figures["problems"]:
        raise SystemExit(f"{system}: readers under ingest saw {figures['problems'][:3]}")
    run.ingest.append({"system": system, **figures})


def spark_times(system: str, uri: str, sizes: list[int], root: Path, repeat: int, run: Run) -> None:
    """A selective Spark SQL query through the system, `repeat` times per size after one warm-up run."""
    queries = {
        size: f"SELECT count(*) FROM {DB}.events_{size} WHERE ds = '{(START + dt.timedelta(days=4)).isoformat()}' "
        "AND hr = 3"
        for size in sizes
    }
    statements = [q for q in queries.values() for _ in range(repeat + 1)]
    conf = {"spark.sql.hive.caseSensitiveInferenceMode": "NEVER_INFER"}
    results = run_sql(uri, root / "spark-warehouse", statements, conf=conf, timeout=1800)
    for n, size in enumerate(sizes):
        mine = results[n * (repeat + 1) : (n + 1) * (repeat + 1)]
        errors = [r["error"] for r in mine if "error" in r]
        if errors:
            raise SystemExit(f"Spark through {system} failed: {errors[0]}")
        ms = statistics.median(r["ms"] for r in mine[1:])
        run.spark.append({"system": system, "size": size, "query": queries[size], "ms": ms, "rows": mine[0]["rows"]})


# ------------------------------------------------------------------------------------------ the systems


@contextmanager
def hive_postgres_database(url: str) -> Iterator[str]:
    """A fresh database on the PostgreSQL server of `url` for Hive's metastore schema (dropped afterwards)."""
    import psycopg

    name = f"hive_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    parts = urlsplit(url)
    try:
        yield urlunsplit((parts.scheme, parts.netloc, f"/{name}", "", ""))
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def run_system(system: str, sizes: list[int], large: list[int], root: Path, args: argparse.Namespace, run: Run) -> None:
    work = root / system.replace(" ", "-")
    with ExitStack() as stack:
        if system.startswith("hive"):
            if system == "hive postgresql":
                database = stack.enter_context(hive_postgres_database(args.postgres))
                peer = HivePeer(work, extra_conf=postgres_conf(database), classpath=[args.jdbc_jar])
            else:
                peer = HivePeer(work)
            stack.enter_context(peer)
            assert peer.process is not None
            servers = {"-": (peer.port, peer.process.pid)}
            uri = peer.uri
        else:
            if system == "sargable postgresql":
                url = f"{args.postgres}{'&' if '?' in args.postgres else '?'}schema=bench_{uuid.uuid4().hex[:8]}"
            else:
                url = f"sqlite:///{work / 'meta.db'}"
            warm = stack.enter_context(SargableServe(work / "warm", url))
            cold = stack.enter_context(SargableServe(work / "cold", url, args=["--cache-mb", "0"]))
            assert warm.process is not None and cold.process is not None
            servers = {"warm": (warm.port, warm.process.pid), "cold": (cold.port, cold.process.pid)}
            uri = warm.uri
        clients = {cache: Client(port) for cache, (port, _) in servers.items()}
        for client in clients.values():
            stack.callback(client.close)
        pids = {cache: pid for cache, (_, pid) in servers.items()}
        measure(system, clients, pids, sizes, root, args, run, compared=True)
        if system == "hive postgresql":
            log = (work / "hive.log").read_text(errors="replace")
            run.notes.append(
                "Hive on PostgreSQL: direct SQL "
                + (
                    "on (its log: 'Using direct SQL, underlying DB is POSTGRES')"
                    if DIRECT_SQL in log
                    else "NOT seen in its log"
                )
            )
        if args.ingest:
            ingest(system, clients, servers, root, args.ingest, run)
        if args.spark_repeat and sizes:
            spark_times(system, uri, sizes, work, args.spark_repeat, run)
        if system == "hive postgresql" and args.hive_sql_sizes:
            hive_sizes = [int(s) for s in args.hive_sql_sizes.split(",") if s]
            measure(system, clients, pids, hive_sizes, root, args, run, compared=False, sql_load=database)
        if large and system.startswith("sargable"):
            measure(system, clients, pids, large, root, args, run, compared=False)
        if system.startswith("sargable"):
            for size in [*sizes, *large]:
                run.breakdown.append({"system": system, "size": size, **breakdown(url, f"events_{size}")})


def breakdown(url: str, table: str) -> dict[str, float]:
    """Where a cold `get_partitions` spends its CPU, in this process over the server's store (the cyclic garbage
    collector off, as it nearly is in the server), in microseconds per partition: the metastore's listing
    (`iter_partitions`: keys decoded, `Partition` objects), `Partition.location` (the metastore formats each default
    location from the partition's name), and the server's encoding (`TableCodec.partitions`); and `names`, a
    `get_partition_names`' listing plus encoding. Median of 3, one snapshot each."""
    import gc

    from sargable import Metastore
    from sargable.hms.cache import ReplyCache
    from sargable.metastore.columnar import value_columns

    with Metastore.open(url) as ms:
        codec = ReplyCache(0).codec(ms.get_table(DB, table))

        def cpu_us(work: Callable[[], int]) -> float:
            times = []
            for _ in range(3):
                with ms.snapshot():
                    started = time.process_time()
                    count = work()
                    times.append((time.process_time() - started) / count * 1e6)
            return statistics.median(times)

        def listing() -> int:
            return sum(1 for _ in ms.iter_partitions(DB, table))

        def located() -> int:
            return sum(1 for p in ms.iter_partitions(DB, table) if p.location)

        def encoded() -> int:
            return len(codec.partitions(ms.iter_partitions(DB, table)))

        def names() -> int:
            return len(codec.names(ms.iter_partitions(DB, table)))

        handle = ms.table(DB, table)
        pages = getattr(handle, "partition_pages", None)  # (the server's page listing, since issue 32)

        def paged(encode: Callable[[Any], bytes]) -> int:
            count = 0
            for page in pages():
                encode(page)
                count += len(page)
            return count

        gc.disable()
        try:
            base, with_location, total, named = cpu_us(listing), cpu_us(located), cpu_us(encoded), cpu_us(names)
            by_page = {}
            if pages is not None:
                by_page["pages_us"] = cpu_us(lambda: paged(codec.page_partitions))
                by_page["page_names_us"] = cpu_us(lambda: paged(codec.page_names))
                by_page["scan_us"] = cpu_us(lambda: paged(len))
                by_page["decode_us"] = cpu_us(lambda: paged(value_columns))
        finally:
            gc.enable()
    return {
        **by_page,
        "listing_us": base,
        "location_us": with_location - base,
        "encoding_us": total - with_location,
        "total_us": total,
        "names_us": named,
        "metastore_share": with_location / total,
    }


# ------------------------------------------------------------------------------------------ report


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def _ratio(peer: float | None, own: float | None) -> str:
    if peer is None or own is None:
        return "-"
    ratio = peer / own
    return f"{ratio:,.0f}x" if ratio >= 10 else f"{ratio:.1f}x"


def report(run: Run, sizes: list[int], large: list[int], args: argparse.Namespace, loads: list[float]) -> str:
    cells = {(c.system, c.cache, c.size, c.call): c for c in run.cells}
    lines = [
        f"Hive metastore API, partitions (ds string, hr int), median of {args.repeat} calls "
        f"({args.large_repeat} at {', '.join(f'{s:,}' for s in large) or '-'}); load average {loads[0]:.1f} at the "
        f"start, {loads[1]:.1f} at the end",
        f"partition folders: {'made first' if args.premake_folders else 'made by each server on add'} at "
        f"{', '.join(f'{s:,}' for s in sizes)}; none (s3a:// location) at {', '.join(f'{s:,}' for s in large) or '-'}",
        "warm: sargable serve with its reply cache (a repeated call); cold: --cache-mb 0 (store read + encoding)",
        "x derby / x hive pg: Hive's time over sargable's slower backend (warm | cold)",
    ]
    columns = [
        ("hive derby", "-"),
        ("hive postgresql", "-"),
        ("sargable sqlite", "warm"),
        ("sargable postgresql", "warm"),
        ("sargable sqlite", "cold"),
        ("sargable postgresql", "cold"),
    ]
    header = (
        f"{'call':<42} {'parts':>9} {'derby':>9} {'hive pg':>9} {'sg sqlite':>10} {'sg pg':>9} "
        f"{'cold sqlite':>11} {'cold pg':>9} {'x derby':>15} {'x hive pg':>15}"
    )
    for size in [*sizes, *large]:
        lines += ["", f"{size:,} partitions (ms)", header, "-" * len(header)]
        for read in reads(size):
            row = [cells.get((system, cache, size, read.label)) for system, cache in columns]
            count = next((c.count for c in row if c is not None), 0)
            ms = [c.ms if c is not None else None for c in row]
            warm = max((m for m in ms[2:4] if m is not None), default=None)
            cold = max((m for m in ms[4:6] if m is not None), default=None)
            lines.append(
                f"{read.label[:42]:<42} {count:>9,} {_ms(ms[0]):>9} {_ms(ms[1]):>9} {_ms(ms[2]):>10} {_ms(ms[3]):>9} "
                f"{_ms(ms[4]):>11} {_ms(ms[5]):>9} {_ratio(ms[0], warm) + ' | ' + _ratio(ms[0], cold):>15} "
                f"{_ratio(ms[1], warm) + ' | ' + _ratio(ms[1], cold):>15}"
            )
        adds = {a["system"]: a["seconds"] for a in run.adds if a["size"] == size}
        spark = {s["system"]: s["ms"] for s in run.spark if s["size"] == size}
        worst_add = max((adds[s] for s in SYSTEMS[2:] if s in adds), default=None)
        lines.append(
            f"{f'add_partitions ({args.batch:,} per call), total s':<42} {size:>9,} "
            + " ".join(f"{_ms(adds.get(s)):>9}" for s in SYSTEMS[:2])
            + f" {_ms(adds.get(SYSTEMS[2])):>10} {_ms(adds.get(SYSTEMS[3])):>9}"
            + f"{'':>22} {_ratio(adds.get(SYSTEMS[0]), worst_add):>15} {_ratio(adds.get(SYSTEMS[1]), worst_add):>15}"
        )
        if spark:
            worst = max((spark[s] for s in SYSTEMS[2:] if s in spark), default=None)
            lines.append(
                f"{'Spark SQL selective query, ms':<42} {1:>9,} "
                + " ".join(f"{_ms(spark.get(s)):>9}" for s in SYSTEMS[:2])
                + f" {_ms(spark.get(SYSTEMS[2])):>10} {_ms(spark.get(SYSTEMS[3])):>9}"
                + f"{'':>22} {_ratio(spark.get(SYSTEMS[0]), worst):>15} {_ratio(spark.get(SYSTEMS[1]), worst):>15}"
            )
    if run.ingest:
        lines += [
            "",
            "readers under ingest: a partition added every 100 ms, 4 clients running selective filters (one partition "
            "or one day) and, one call in ten, listing every name, each read checked to hold every partition "
            "acknowledged before it began",
        ]
        for entry in run.ingest:
            lines.append(
                f"  {entry['system']:<20} {entry['seconds']:.0f} s: {entry['adds']:,} adds (p50 "
                f"{entry['add_p50_ms']:.2f} ms, p99 {entry['add_p99_ms']:.2f} ms), {entry['reads']:,} reads (p50 "
                f"{entry['read_p50_ms']:.2f} ms, p99 {entry['read_p99_ms']:.2f} ms), {entry['names_reads']:,} listings "
                f"(p50 {entry['names_p50_ms']:.2f} ms, p99 {entry['names_p99_ms']:.2f} ms); no read missed an "
                "acknowledged partition, none lost"
            )
    peak: dict[str, float] = {}
    for entry in run.rss:
        key = entry["system"] + ("" if entry["cache"] == "-" else f" ({entry['cache']})")
        peak[key] = max(peak.get(key, 0.0), entry["peak_mb"])
    lines += ["", "peak resident memory (VmHWM), MiB: " + ", ".join(f"{k} {v:,.0f}" for k, v in peak.items())]
    if run.breakdown:
        lines += ["", "a cold get_partitions' CPU in process, us per partition (benchmarks/hms.py breakdown):"]
        for entry in run.breakdown:
            lines.append(
                f"  {entry['system']}, {entry['size']:,}: metastore listing {entry['listing_us']:.2f} + "
                f"Partition.location {entry['location_us']:.2f} + encoding {entry['encoding_us']:.2f} = "
                f"{entry['total_us']:.2f} ({1e6 / entry['total_us']:,.0f} partitions/s; the metastore's share "
                f"{entry['metastore_share']:.0%}); get_partition_names {entry['names_us']:.2f}"
            )
            if "pages_us" in entry:
                lines.append(
                    f"    the server's page listing: get_partitions {entry['pages_us']:.2f} "
                    f"({1e6 / entry['pages_us']:,.0f} partitions/s), get_partition_names {entry['page_names_us']:.2f} "
                    f"(the store's scan {entry['scan_us']:.2f}, its keys' decoding "
                    f"{entry['decode_us'] - entry['scan_us']:.2f}, names and encoding "
                    f"{entry['page_names_us'] - entry['decode_us']:.2f})"
                )
    spread = [c for c in run.cells if c.cache != "warm"]
    if spread:
        lines += ["", "spread of the cold and Hive calls, ms: median [fastest, slowest]"]
        for size in [*sizes, *large]:
            for c in spread:
                if c.size == size:
                    lines.append(
                        f"  {size:>9,} {c.system + ' ' + c.cache:<24} {c.call[:42]:<42} {c.ms:>10,.2f} "
                        f"[{c.low:,.2f}, {c.high:,.2f}]"
                    )
    return "\n".join([*lines, *run.notes])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="2400,10000", help="sizes measured on every system")
    parser.add_argument("--sargable-sizes", default="100000,1000000", help="sizes measured on sargable alone")
    parser.add_argument(
        "--hive-sql-sizes",
        default="",
        help="sizes at which Hive on PostgreSQL is measured too, its partitions loaded by SQL (issue 32); sargable "
        "measures them as its --sargable-sizes",
    )
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"any of: {', '.join(SYSTEMS)}")
    parser.add_argument("--postgres", default=os.environ.get("SARGABLE_TEST_POSTGRES_URL"), help="PostgreSQL URL")
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--large-repeat", type=int, default=3)
    parser.add_argument("--spark-repeat", type=int, default=5, help="0: no Spark queries")
    parser.add_argument(
        "--ingest", type=float, default=0, help="seconds of readers under ingest per system (0: none; issue 32: 60)"
    )
    parser.add_argument("--premake-folders", action="store_true", help="make the partition folders before adding")
    parser.add_argument(
        "--jdbc-jar",
        type=Path,
        default=POSTGRES_JDBC_JAR,
        help=f"PostgreSQL's JDBC driver for Hive's metastore (default {POSTGRES_JDBC_JAR}, Debian's "
        "libpostgresql-jdbc-java; any postgresql-42.*.jar, such as one in a Maven repository, works)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results here (for benchmarks/plots.py)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    large = [int(s) for s in args.sargable_sizes.split(",") if s]
    if any(s < 24 * 12 for s in [*sizes, *large]):
        parser.error("every size must be at least 288 (12 days of 24 hours) for the 7-day range")
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if "hive postgresql" in systems and not args.jdbc_jar.is_file():
        parser.error(f"no JDBC driver at {args.jdbc_jar} for Hive's metastore on PostgreSQL: give --jdbc-jar")
    unknown = set(systems) - set(SYSTEMS)
    if unknown:
        parser.error(f"unknown systems {sorted(unknown)}; choose from {', '.join(SYSTEMS)}")
    if not args.postgres:
        left_out = [s for s in systems if s.endswith("postgresql")]
        if left_out:
            print(f"no PostgreSQL URL: leaving out {', '.join(left_out)}", file=sys.stderr)
        systems = [s for s in systems if not s.endswith("postgresql")]

    large += [int(s) for s in args.hive_sql_sizes.split(",") if s and int(s) not in large]
    run = Run([], [], [], [], {}, [], [], [])
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="hms-bench-") as tmp:
        for system in systems:
            run_system(system, sizes, large, Path(tmp), args, run)
    loads.append(os.getloadavg()[0])
    print(report(run, sizes, large, args, loads))
    if args.json:
        command = "python benchmarks/hms.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
        data = {
            "command": command,
            "load_average": max(loads),
            "loads": loads,
            "sizes": sizes,
            "sargable_sizes": large,
            "repeat": args.repeat,
            "large_repeat": args.large_repeat,
            "batch": args.batch,
            "folders": "made first" if args.premake_folders else "made by each server",
            "cells": [asdict(c) for c in run.cells],
            "adds": run.adds,
            "spark": run.spark,
            "rss": run.rss,
            "notes": run.notes,
            "breakdown": run.breakdown,
            "ingest": run.ingest,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(data, indent=1))


if __name__ == "__main__":
    main()
