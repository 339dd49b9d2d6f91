"""Reads without Spark of a table on S3 (the test session's S3 server: moto behind a counting front): the rows of
the selected files only, no listing of the table's prefix, only the selected files' objects read; DuckDB reads the
same dataset."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sargable as sg
from sargable.metastore import Metastore

pytest.importorskip("s3_fixtures", reason="the S3 server fixtures come with the S3 support (issue 28)")

SCHEMA = [("user_id", "bigint"), ("country", "string")]


@pytest.fixture
def s3_events(s3_server: Any, metastore_url: str, tmp_path: Path) -> tuple[Metastore, str, Any]:
    """`db.events` at `s3a://BUCKET/events`: days 1 and 2 x hours 1 and NULL, one file each of four users."""
    from sargable import s3

    bucket = s3_server.bucket()
    fs = s3.filesystem()
    ms = Metastore.open(metastore_url, warehouse=tmp_path / "warehouse")
    ms.create_database("db")
    ms.create_table("db", "events", SCHEMA, [("ds", "date"), ("hr", "int")], location=f"s3a://{bucket}/events")
    files = []
    for day in (dt.date(2024, 1, 1), dt.date(2024, 1, 2)):
        for hr in (1, None):
            folder = f"events/ds={day}/hr={'__HIVE_DEFAULT_PARTITION__' if hr is None else hr}"
            native = f"{bucket}/{folder}/part-00000.parquet"
            rows = pa.table({"user_id": pa.array([1, 2, 3, 4], pa.int64()), "country": ["US", "DE", "US", None]})
            pq.write_table(rows, native, filesystem=fs)
            stats = sg.stats_from_parquet(native, SCHEMA, partition={"ds": day, "hr": hr}, filesystem=fs)
            files.append(replace(stats, path=f"s3a://{native}"))
    ms.commit("db", "events", add_files=files)
    yield ms, bucket, s3_server
    ms.close()


def test_a_scan_of_an_s3_table_reads_only_its_selected_objects(s3_events: tuple[Metastore, str, Any]) -> None:
    ms, bucket, server = s3_events
    scan = ms.table("db.events").scan("hr is null and ds = '2024-01-02' and country = 'US'", columns=["user_id", "hr"])
    (selected,) = scan.files
    with server.counted() as requests:
        result = scan.to_arrow()
    assert result.to_pylist() == [{"user_id": 1, "hr": None}, {"user_id": 3, "hr": None}]
    assert requests.count("LIST", under=f"{bucket}/events") == 0
    assert {unquote(e["path"]).lstrip("/") for e in requests.of("GET")} == {selected.path.removeprefix("s3a://")}


def test_duckdb_reads_an_s3_scan(s3_events: tuple[Metastore, str, Any]) -> None:
    ms, _, _ = s3_events
    con = ms.table("db.events").scan("hr = 1").to_duckdb(name="ev")
    assert con.execute("SELECT ds, count(*) FROM ev WHERE country = 'US' GROUP BY ds ORDER BY ds").fetchall() == [
        (dt.date(2024, 1, 1), 2),
        (dt.date(2024, 1, 2), 2),
    ]


def test_an_empty_s3_scan_reads_no_object_and_keeps_the_schema(s3_events: tuple[Metastore, str, Any]) -> None:
    ms, bucket, server = s3_events
    scan = ms.table("db.events").scan("ds = '2030-01-01'", columns=["country", "hr"])
    with server.counted() as requests:
        result = scan.to_arrow()
        frame = scan.to_pandas()
    assert scan.files == () and result.num_rows == 0
    assert result.schema == pa.schema([("country", pa.string()), ("hr", pa.int32())])
    assert list(frame.columns) == ["country", "hr"]
    assert requests.of("GET") == [] and requests.count("LIST", under=f"{bucket}/events") == 0


def test_batches_pandas_and_polars_of_an_s3_scan_project_and_fill_null_partitions(
    s3_events: tuple[Metastore, str, Any],
) -> None:
    ms, _, _ = s3_events
    table = ms.table("db.events")
    table.scan()  # the version listed whole: its partitions answer from memory, as they would in a notebook
    scan = table.scan("hr is null and country = 'US'", columns=["ds", "user_id", "hr"])
    batches = list(scan.to_batches(batch_rows=1))
    assert batches and all(b.num_rows == 1 and b.schema.names == ["ds", "user_id", "hr"] for b in batches)
    rows = sorted((r["ds"], r["user_id"], r["hr"]) for b in batches for r in b.to_pylist())
    days = (dt.date(2024, 1, 1), dt.date(2024, 1, 2))
    assert rows == [(d, u, None) for d in days for u in (1, 3)]
    frame = scan.to_pandas()
    assert sorted(zip(frame["ds"], frame["user_id"], strict=True)) == [(d, u) for d in days for u in (1, 3)]
    assert frame["hr"].isna().all()
    polars = pytest.importorskip("polars")
    lazy = table.scan("hr is null").to_polars()
    collected = lazy.filter(polars.col("country") == "US").select("user_id", "ds").collect()
    assert sorted(collected.rows()) == [(u, d) for u in (1, 3) for d in days]
