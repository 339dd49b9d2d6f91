"""Tables whose files no one registered (`files_from_folders`, made through the Hive metastore API): a scan lists
the folders of the selected partitions that have no registered file, as Spark would read them (hidden names, empty
files and symlinks left out), with footer statistics; checked against brute force over the rows written."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sargable.errors import SargableError
from sargable.folders import folder_files
from sargable.metastore import Metastore, TableDefinition
from sargable.parquet_stats import stats_from_parquet
from sargable.types import parse_type
from sargable.vacuum import vacuum

DAYS = ["2024-01-01", "2024-01-02", "2024-01-03"]
HOURS = [1, 2]


def _write(path: Path, xs: list[int]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"x": pa.array(xs, pa.int64())}), path)
    return str(path)


def test_a_folder_is_listed_as_spark_reads_it(tmp_path: Path) -> None:
    folder = tmp_path / "ds=a"
    kept = [_write(folder / "part-0.parquet", [1, 2, 3]), _write(folder / "sub" / "000000_0", [7])]
    _write(folder / "_temporary" / "part-9.parquet", [9])
    _write(folder / ".hidden.parquet", [9])
    (folder / "_SUCCESS").write_bytes(b"")
    (folder / "empty.parquet").write_bytes(b"")
    outside = _write(tmp_path / "elsewhere" / "part-5.parquet", [5])
    os.symlink(outside, folder / "link.parquet")
    os.symlink(tmp_path / "elsewhere", folder / "linked")
    found = folder_files(str(folder), {"ds": "a"}, [("x", parse_type("bigint"))])
    assert [f.path for f in found] == sorted(kept)
    assert [f.row_count for f in found] == [3, 1]
    assert all(f.partition == {"ds": "a"} for f in found)
    assert (found[0].columns["x"].min, found[0].columns["x"].max) == (1, 3)
    assert folder_files(str(tmp_path / "missing"), {}, []) == []


def test_a_file_that_is_not_parquet_is_an_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "000000_0").write_text("1\x01a\n")
    with pytest.raises(SargableError, match="000000_0 in a partition folder is not a readable Parquet file"):
        folder_files(str(tmp_path / "t"), {}, [], owner="table db.t")


def test_the_flag_is_stored_only_when_set_and_old_definitions_read(tmp_path: Path) -> None:
    table = TableDefinition("db", "t", 1, (("x", parse_type("int")),), (), "/w/t")
    raw = json.loads(table.to_json())
    assert "files_from_folders" not in raw
    assert TableDefinition.from_json(table.to_json()).files_from_folders is False
    raw["files_from_folders"] = True
    assert TableDefinition.from_json(json.dumps(raw).encode()).files_from_folders is True
    raw["files_from_folders"] = "yes"
    with pytest.raises(ValueError, match="files_from_folders"):
        TableDefinition.from_json(json.dumps(raw).encode())


def _filled(metastore: Metastore, tmp_path: Path, *, flag: bool) -> tuple[dict, Path]:
    """A table of partitions (ds, hr) whose folders hold Parquet files no one registered, except (DAYS[0], 1),
    whose one registered file stands for the partition (a stray file beside it must not be read)."""
    metastore.create_database("db", if_not_exists=True)
    location = tmp_path / "events"
    metastore.create_table(
        "db",
        "events",
        [("x", "bigint")],
        [("ds", "date"), ("hr", "int")],
        str(location),
        files_from_folders=flag,
    )
    table = metastore.table("db.events")
    rows: dict[tuple[dt.date, int], list[int]] = {}
    for i, ds in enumerate(DAYS):
        for hr in HOURS:
            rows[(dt.date.fromisoformat(ds), hr)] = [i * 10 + hr, i * 10 + hr + 5]
    table.add_partitions([{"ds": ds, "hr": hr} for ds in DAYS for hr in HOURS])
    for (ds, hr), xs in rows.items():
        _write(location / f"ds={ds}" / f"hr={hr}" / "part-0.parquet", xs)
    first = location / f"ds={DAYS[0]}" / "hr=1"
    registered = _write(first / "registered.parquet", [999])
    rows[(dt.date.fromisoformat(DAYS[0]), 1)] = [999]
    spec = {"ds": DAYS[0], "hr": 1}
    table.add_files([stats_from_parquet(registered, [("x", parse_type("bigint"))], partition=spec)])
    return rows, location


@pytest.mark.parametrize(
    "where",
    [
        None,
        "ds = '2024-01-02'",
        "hr = 1",
        "ds >= '2024-01-02' and hr = 2",
        "ds = '2024-01-01'",
        "x > 25",
        "x = 21 or ds = '2024-01-01'",
        "x > 1000",
    ],
)
def test_a_scan_lists_the_selected_partitions_without_files(metastore: Metastore, tmp_path: Path, where) -> None:
    rows, location = _filled(metastore, tmp_path, flag=True)
    first = location / f"ds={DAYS[0]}" / "hr=1"
    scan = metastore.table("db.events").scan(where)
    read = {}
    for f in scan.files:
        key = (f.partition["ds"], f.partition["hr"])
        read.setdefault(key, []).extend(pq.read_table(f.path).column("x").to_pylist())
    assert set(read) <= set(rows)
    for (ds, hr), xs in rows.items():
        matching = [x for x in xs if _matches(where, ds, hr, x)]
        if matching:
            assert (ds, hr) in read, (ds, hr)
        if (ds, hr) in read:
            assert read[(ds, hr)] == xs  # a partition with a registered file: only that one
        if where is None or "x" not in where:  # partition filters are exact
            assert ((ds, hr) in read) == bool(matching)
    selected = rows if scan.partitions is None else [tuple(p.values) for p in scan.partitions]
    listed = sum(1 for key in selected if key != (dt.date.fromisoformat(DAYS[0]), 1))
    assert any(note.startswith(f"{listed} partition folder(s) listed") for note in scan.report.notes) == bool(listed)
    if scan.partitions is None or len(scan.partitions) == len(rows):  # every folder seen: the totals are known
        on_disk = [p for p in location.rglob("*.parquet") if p.name != "part-0.parquet" or p.parent != first]
        assert (scan.report.files_total, scan.report.bytes_total) == (
            len(on_disk),
            sum(p.stat().st_size for p in on_disk),
        )
    else:  # only the selected folders were listed: the totals are unknown, never the registered file alone
        assert (scan.report.files_total, scan.report.bytes_total) == (None, None)
        assert "unknown" in str(scan.report) and any("in total unknown" in n for n in scan.report.notes)


def _matches(where: str | None, ds: dt.date, hr: int, x: int) -> bool:
    """Brute force of the test's filters over one row."""
    day = ds.isoformat()
    return {
        None: True,
        "ds = '2024-01-02'": day == "2024-01-02",
        "hr = 1": hr == 1,
        "ds >= '2024-01-02' and hr = 2": day >= "2024-01-02" and hr == 2,
        "ds = '2024-01-01'": day == "2024-01-01",
        "x > 25": x > 25,
        "x = 21 or ds = '2024-01-01'": x == 21 or day == "2024-01-01",
        "x > 1000": x > 1000,
    }[where]


def test_footer_statistics_skip_listed_files(metastore: Metastore, tmp_path: Path) -> None:
    _filled(metastore, tmp_path, flag=True)
    scan = metastore.table("db.events").scan("x > 1000")
    assert scan.files == ()
    assert len(metastore.table("db.events").scan("x = 21").files) == 1


def test_without_the_flag_no_folder_is_listed(metastore: Metastore, tmp_path: Path) -> None:
    _filled(metastore, tmp_path, flag=False)
    scan = metastore.table("db.events").scan(None)
    assert [Path(f.path).name for f in scan.files] == ["registered.parquet"]


def test_an_unpartitioned_table_is_its_locations_files(metastore: Metastore, tmp_path: Path) -> None:
    metastore.create_database("db", if_not_exists=True)
    location = tmp_path / "plain"
    metastore.create_table("db", "plain", [("x", "bigint")], [], str(location), files_from_folders=True)
    written = [_write(location / "part-0.parquet", [1, 2]), _write(location / "part-1.parquet", [3])]
    scan = metastore.table("db.plain").scan("x > 2")
    assert [f.path for f in scan.files] == written[1:]


def test_vacuum_deletes_and_reports_nothing_of_a_table_whose_files_no_one_registers(
    metastore: Metastore, tmp_path: Path
) -> None:
    """Its files are in listed partitions' folders: no garbage (sargable wrote none), no unlisted file, none deleted
    (vacuum once refused such tables; it now reports their unlisted files, `tests/test_unlisted.py`)."""
    _filled(metastore, tmp_path, flag=True)
    metastore.table("db.events").set_properties({"sargable.deleted_file_retention_seconds": "0"})
    done = vacuum(metastore, "db", "events", dry_run=False)
    assert (done.garbage, done.deleted, done.unlisted.files, done.unlisted.not_made) == ((), (), (), None)
    assert len(metastore.table("db.events").scan().files) == len(DAYS) * len(HOURS)
