"""Unlisted files (issue 27, the `--read-only` row and item 6; issue 26 item 1): what a refused or failed engine write
leaves under a table's location, in folders no partition lists. `vacuum` reports them (dry run or not) and never
deletes them; never a file inside a listed partition's folder, under another table's location, behind a symlink, or
younger than the table's retention. Driven through the server's Handler in process, the metastore, `sargable vacuum`
and `sgs.vacuum`; the property test plants random trees and checks the report against a brute-force oracle.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import sargable as sg
from metastore_fixtures import BACKENDS, fresh_url
from sargable.cli import main
from sargable.metastore import RETENTION_PROPERTY, Metastore
from sargable.vacuum import vacuum

pytest.importorskip("pymetastore")
from hms_inprocess import InProcess
from sargable.hms.bindings import ttypes
from sargable.hms.catalog import Catalog
from sargable.hms.handler import Handler
from sargable.hms.pool import CatalogPool

PART = "part-00000-6f1c2d3e-0a1b-4c5d-8e9f-0123456789ab.c000.snappy.parquet"


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(list(argv))
    return code, out.getvalue()


def touch(path: Path, data: bytes = b"PAR1") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def files_under(root: Path) -> set[Path]:
    return {Path(d) / f for d, _, names in os.walk(root) for f in names}


def reported(result) -> set[Path]:
    return {Path(f.path) for f in result.unlisted.files}


def _hive_table(db: str, name: str, location: str | None = None) -> ttypes.Table:
    sd = ttypes.StorageDescriptor(
        cols=[ttypes.FieldSchema("x", "int", None)],
        location=location,
        inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
        serdeInfo=ttypes.SerDeInfo(None, "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe", {}),
    )
    keys = [ttypes.FieldSchema("ds", "string", None)]
    return ttypes.Table(dbName=db, tableName=name, sd=sd, partitionKeys=keys, tableType="MANAGED_TABLE")


def _retention(url: str, warehouse: Path, seconds: float) -> None:
    with Metastore.open(url, warehouse=warehouse) as ms:
        ms.table("d", "t").set_properties({RETENTION_PROPERTY: str(seconds)})


@pytest.fixture
def served(metastore_url, tmp_path):
    """A table `d.t` (partition key ds) made through the server, partition ds=1 added and filled as Spark SQL does;
    yields (url, warehouse, location)."""
    warehouse = tmp_path / "warehouse"
    with InProcess(metastore_url, warehouse) as hms:
        hms.call("create_database", ttypes.Database(name="d", locationUri=str(tmp_path / "d.db")))
        hms.call("create_table", _hive_table("d", "t"))
        location = Path(hms.call("get_table", "d", "t").sd.location.removeprefix("file:"))
        hms.call("add_partition", ttypes.Partition(values=["1"], dbName="d", tableName="t"))
    touch(location / "ds=1" / PART)
    touch(location / "_SUCCESS", b"")
    return metastore_url, warehouse, location


def test_an_insert_refused_by_a_read_only_server_is_reported_and_never_deleted(served):
    """Spark SQL writes the new partition's files, then `add_partition` is refused: the files sit in `ds=2`, a folder
    no partition lists. vacuum once refused tables made through the server; now it reports them, and `--delete`
    leaves them (and says so)."""
    url, warehouse, location = served
    left = [touch(location / "ds=2" / PART), touch(location / "ds=2" / PART.replace("00000", "00001"))]
    touch(location / "ds=2" / f".{PART}.crc")
    pool = CatalogPool(lambda: Catalog(Metastore.open(url, warehouse=warehouse)), 1)
    read_only = Handler(pool, read_only=True)
    try:
        with pytest.raises(ttypes.MetaException, match="read-only"):
            read_only.add_partition(ttypes.Partition(values=["2"], dbName="d", tableName="t"))
    finally:
        read_only.end_call()
        pool.close()
    with Metastore.open(url, warehouse=warehouse) as ms:
        assert ms.list_partition_names("d", "t") == ["ds=1"]
        assert reported(vacuum(ms, "d", "t", older_than=0)) == set()  # younger than the 7-day retention
    _retention(url, warehouse, 0)
    before = files_under(location)
    with Metastore.open(url, warehouse=warehouse) as ms:
        found = vacuum(ms, "d", "t", older_than=0)
    assert reported(found) == set(left) and found.garbage == ()
    assert found.unlisted.bytes == 8 and found.unlisted.not_made is None
    code, out = cli("--metastore", url, "vacuum", "d.t", "--delete", "--older-than", "0")
    text = " ".join(out.split())
    assert code == 0 and "2 unlisted files (8 bytes)" in text and "left on disk: vacuum never deletes them" in text
    assert "remove them by hand" in text and "(1 rows)" in text
    code, out = cli("--metastore", url, "vacuum", "d.t", "--delete", "--older-than", "0", "--json")
    data = json.loads(out)["unlisted"]
    assert code == 0 and [f["file"] for f in data["files"]] == sorted(map(str, left))
    assert (data["count"], data["bytes"], data["older_than"]) == (2, 8, 0.0)
    assert files_under(location) == before


def test_sgs_vacuum_carries_the_report(served):
    from sargable import spark as sgs

    url, warehouse, location = served
    left = touch(location / "ds=3" / PART)
    _retention(url, warehouse, 0)
    with Metastore.open(url, warehouse=warehouse) as ms:
        done = sgs.vacuum("d.t", metastore=ms, dry_run=False)
    assert done == [] and {Path(f.path) for f in done.unlisted.files} == {left} and left.exists()


def test_young_files_are_not_reported(served):
    url, warehouse, location = served
    touch(location / "ds=2" / PART)
    with Metastore.open(url, warehouse=warehouse) as ms:
        assert ms.table("d", "t").retention_seconds == 7 * 24 * 3600
        assert vacuum(ms, "d", "t").unlisted.files == ()
        ms.table("d", "t").set_properties({RETENTION_PROPERTY: "0"})
        young = vacuum(ms, "d", "t", older_than=3600).unlisted
        assert young.files == () and young.min_age == 3600
        assert len(vacuum(ms, "d", "t").unlisted.files) == 1


def test_what_is_never_reported(metastore: Metastore, tmp_path: Path) -> None:
    """Listed partitions' folders (their staging folders too), partitions located elsewhere or spelled through a
    symlink, a nested table, a registered file, symlinks and what is behind them, hidden names, sargable's own staging
    folder: none reported. What engines' staging folders outside listed partitions hold is."""
    metastore.create_database("d", if_not_exists=True)
    location = tmp_path / "t"
    metastore.create_table("d", "t", [("x", "int")], [("ds", "string")], str(location))
    alias = tmp_path / "alias"
    alias.symlink_to(location, target_is_directory=True)
    at = [None, str(location / "elsewhere"), str(alias / "ds=3")]
    metastore.add_partitions("d", "t", [{"ds": "1"}, {"ds": "2"}, {"ds": "3"}], locations=at)
    metastore.create_table("d", "n", [("x", "int")], [], str(location / "nested"), share_location=True)
    outside = touch(tmp_path / "outside" / PART)
    never = [
        touch(location / "ds=1" / PART),
        touch(location / "ds=1" / "_temporary" / "0" / PART),
        touch(location / "ds=1" / ".spark-staging-1" / PART),
        touch(location / "elsewhere" / PART),
        touch(location / "ds=3" / PART),
        touch(location / "nested" / PART),
        touch(location / "_SUCCESS"),
        touch(location / "ds=9" / f".{PART}.crc"),
        touch(location / ".cache" / PART),
        touch(location / "_sargable_staging" / uuid.uuid4().hex / PART),
    ]
    registered = touch(location / "loose" / "registered.parquet")
    metastore.commit("d", "t", add_files=[sg.FileStats(str(registered), 1, 4, partition={"ds": "1"})])
    (location / "ds=8").symlink_to(outside.parent, target_is_directory=True)
    (location / "ds=9" / "link.parquet").symlink_to(outside)
    found = [
        touch(location / "ds=9" / PART),
        touch(location / "README"),
        touch(location / "_temporary" / "0" / "_temporary" / "attempt_1" / "ds=4" / PART),
        touch(location / ".spark-staging-7f" / "ds=5" / PART),
        touch(location / ".hive-staging_hive_2024-01-01_1" / "-ext-10000" / "_tmp.000000_0"),
    ]
    metastore.table("d", "t").set_properties({RETENTION_PROPERTY: "0"})
    result = vacuum(metastore, "d", "t", dry_run=False)
    assert reported(result) == set(found)
    assert all(p.exists() for p in [*never, *found, registered, outside])
    assert result.unlisted.walked >= len(found) + len(never)


def test_a_partition_location_holding_percent_lists_both_readings(metastore: Metastore, tmp_path: Path) -> None:
    """Spark sends `file:` URIs of escaped folder names (`ds=a%3Ab`): whether the `%` is an escape is unknown, so
    neither folder's files are reported."""
    metastore.create_database("d", if_not_exists=True)
    location = tmp_path / "t"
    metastore.create_table("d", "t", [("x", "int")], [("ds", "string")], str(location))
    metastore.add_partitions("d", "t", [{"ds": "a:b"}], locations=[f"file:{location}/ds=a%3Ab"])
    never = [touch(location / "ds=a%3Ab" / PART), touch(location / "ds=a:b" / PART)]
    left = touch(location / "ds=c" / PART)
    metastore.table("d", "t").set_properties({RETENTION_PROPERTY: "0"})
    assert reported(vacuum(metastore, "d", "t")) == {left}
    assert all(p.exists() for p in never)


def test_an_unpartitioned_tables_files_are_its_data(metastore: Metastore, tmp_path: Path) -> None:
    """Every path without a hidden name is the table's data; only what engines' staging folders hold is reported."""
    metastore.create_database("d", if_not_exists=True)
    location = tmp_path / "plain"
    metastore.create_table("d", "t", [("x", "int")], [], str(location), files_from_folders=True)
    data = [touch(location / PART), touch(location / "sub" / "000000_0")]
    left = touch(location / "_temporary" / "0" / PART)
    metastore.table("d", "t").set_properties({RETENTION_PROPERTY: "0"})
    assert reported(vacuum(metastore, "d", "t", dry_run=False)) == {left}
    assert all(p.exists() for p in [*data, left])


def test_a_partition_location_that_names_no_folder_makes_no_report(metastore: Metastore, tmp_path: Path) -> None:
    metastore.create_database("d", if_not_exists=True)
    location = tmp_path / "t"
    metastore.create_table("d", "t", [("x", "int")], [("ds", "string")], str(location))
    metastore.add_partitions("d", "t", [{"ds": "1"}], locations=["relative/ds=1"])
    touch(location / "ds=2" / PART)
    metastore.table("d", "t").set_properties({RETENTION_PROPERTY: "0"})
    report = vacuum(metastore, "d", "t").unlisted
    assert report.files == () and "partition ds=1" in report.not_made and "relative" in report.not_made
    code, out = cli("--metastore", metastore.url, "vacuum", "d.t", "--older-than", "0")
    assert code == 0 and "unlisted files not looked for" in out


def test_the_walk_reports_its_progress(metastore: Metastore, tmp_path: Path) -> None:
    metastore.create_database("d", if_not_exists=True)
    location = tmp_path / "t"
    metastore.create_table("d", "t", [("x", "int")], [("ds", "string")], str(location))
    for i in range(30):
        touch(location / f"ds={i}" / PART)
    seen: list[int] = []
    metastore.table("d", "t").set_properties({RETENTION_PROPERTY: "0"})
    report = vacuum(metastore, "d", "t", progress=seen.append).unlisted
    assert len(report.files) == 30 and report.walked == 60
    assert seen == sorted(seen) and len(seen) >= 30 and seen[-1] == 60


# ------------------------------------------------------------------------------------------ the property

DAYS, HOURS = ["a", "b", "c"], ["1", "2"]
COMPONENTS = [
    "ds=a", "ds=b", "ds=c", "hr=1", "hr=2", "c-a1", "c-b2", "nested", "_temporary", ".spark-staging-7",
    ".hive-staging_hive_1", "_sargable_staging", ".cache", "other", "_x=1",
]  # fmt: skip
PREFIXES = [
    (), ("ds=a",), ("ds=a", "hr=1"), ("ds=a", "hr=2"), ("ds=b", "hr=1"), ("ds=c", "hr=2"), ("c-a1",), ("c-b2",),
    ("nested",), ("_temporary", "0"), (".spark-staging-7", "ds=a"), ("ds=b", "hr=2", "_temporary"),
]  # fmt: skip
LEAVES = ["part-0.parquet", ".part-0.parquet.crc", "_SUCCESS", "000000_0"]
STAGING = ("_temporary", ".spark-staging-", ".hive-staging")


def _hidden(name: str) -> bool:
    return name.startswith(".") or (name.startswith("_") and "=" not in name)


def _oracle_unlisted(location: Path, listed: set[str], registered: set[Path], nested: Path | None, cutoff: float):
    """Brute force: every regular file below the location (no symlink followed), judged on its own path."""
    out = set()
    for folder, _, names in os.walk(location):
        for name in names:
            path = Path(folder) / name
            if path.is_symlink() or path in registered:
                continue
            real = os.path.realpath(path)
            if any(real == f or real.startswith(f + "/") for f in listed):
                continue
            if nested is not None and nested in path.parents:
                continue
            hidden = [part for part in path.relative_to(location).parts if _hidden(part)]
            if hidden and not hidden[0].startswith(STAGING):
                continue
            st = os.lstat(path)
            if max(st.st_mtime, st.st_ctime) <= cutoff:
                out.add(path)
    return out


@pytest.fixture(scope="module", params=BACKENDS)
def scratch(request, tmp_path_factory):
    root = tmp_path_factory.mktemp("unlisted-property")
    postgres = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    ms = Metastore.open(fresh_url(request.param, root, postgres), warehouse=root / "warehouse")
    ms.create_database("db")
    yield ms, root
    ms.close()


@settings(max_examples=60, deadline=None)
@given(
    partitions=st.dictionaries(
        st.tuples(st.sampled_from(DAYS), st.sampled_from(HOURS)),
        st.sampled_from(["default", "custom", "through a symlink"]),
        min_size=2,
        max_size=8,
    ),
    tree=st.lists(
        st.tuples(
            st.tuples(st.sampled_from(PREFIXES), st.lists(st.sampled_from(COMPONENTS), max_size=2)).map(
                lambda t: [*t[0], *t[1]]
            ),
            st.sampled_from(LEAVES),
            st.booleans(),
        ),
        min_size=1,
        max_size=16,
    ),
    registered=st.lists(st.integers(0, 15), max_size=3),
    nested=st.booleans(),
    link=st.booleans(),
    from_folders=st.booleans(),
)
def test_the_report_is_exactly_the_oracles(scratch, partitions, tree, registered, nested, link, from_folders):
    ms, root = scratch
    case = root / uuid.uuid4().hex[:10]
    location, alias = case / "t", case / "alias"
    name = f"t{case.name}"
    ms.create_table(
        "db", name, [("x", "int")], [("ds", "string"), ("hr", "string")], str(location), files_from_folders=from_folders
    )
    location.mkdir(parents=True)
    alias.symlink_to(location, target_is_directory=True)
    specs, locations, listed = [], [], set()
    for (ds, hr), how in sorted(partitions.items()):
        default = location / f"ds={ds}" / f"hr={hr}"
        at = {"default": None, "custom": str(location / f"c-{ds}{hr}"), "through a symlink": str(alias / f"ds={ds}")}
        specs.append({"ds": ds, "hr": hr})
        locations.append(at[how])
        listed.add(os.path.realpath(at[how] or default))
    if specs:
        ms.add_partitions("db", name, specs, locations=locations)
    inner = location / "nested" if nested else None
    if inner is not None:
        ms.create_table("db", f"{name}n", [("x", "int")], [("ds", "string")], str(inner), share_location=True)
    if link:
        (location / "ds=c").mkdir(exist_ok=True)
        with contextlib.suppress(FileExistsError):
            (location / "ds=c" / "hr=2").symlink_to(touch(case / "outside" / "part-0.parquet").parent)
    planted: dict[Path, bool] = {}
    for parts, leaf, old in tree:
        path = location.joinpath(*parts, leaf)
        if any(p.is_symlink() for p in path.parents if location in p.parents) or path.exists() or path in planted:
            continue
        planted[path] = old
    for path, old in planted.items():
        if old:
            touch(path)
    middle = time.time()
    probe = case / "probe"
    while touch(probe).stat().st_ctime <= middle:  # the file system's clock (coarser than time.time) passes `middle`
        continue
    for path, old in planted.items():
        if not old:
            touch(path)
    files = list(planted)
    mine = {files[i % len(files)] for i in registered if files}
    for path in sorted(mine):
        ms.commit("db", name, add_files=[sg.FileStats(str(path), 1, 4, partition={"ds": "zz", "hr": "zz"})])
    ms.table("db", name).set_properties({RETENTION_PROPERTY: "1000"})
    expected = _oracle_unlisted(location, listed, mine, inner, middle)
    assert expected <= {p for p, old in planted.items() if old}  # the oracle's ages are the planted ones
    before = files_under(case)
    with mock.patch("sargable.unlisted.time", SimpleNamespace(time=lambda: middle + 1000)):
        result = vacuum(ms, "db", name, dry_run=False)
    inside = {p for p in planted if any(os.path.realpath(p).startswith(f + "/") for f in listed)}
    event(f"reported: {'some' if expected else 'none'}; planted in listed folders: {'some' if inside else 'none'}")
    assert reported(result) == expected
    assert files_under(case) == before
    assert result.unlisted.bytes == sum(p.stat().st_size for p in expected)


def test_the_walk_holds_what_it_reports_not_what_it_sees(metastore: Metastore, tmp_path: Path) -> None:
    """Memory grows with the files reported, not with those walked: 20 times more folders of young files (never
    reported) raise the peak by far less than holding their entries would take."""
    import tracemalloc

    from sargable.unlisted import find_unlisted

    metastore.create_database("d", if_not_exists=True)
    peaks = []
    for name, folders in (("small", 10), ("big", 200)):
        location = tmp_path / name
        metastore.create_table("d", name, [("x", "int")], [("ds", "string")], str(location))
        for i in range(folders):
            for j in range(20):
                touch(location / f"ds={i}" / f"part-{j:05d}-{'0' * 36}.c000.snappy.parquet")
        table = metastore.get_table("d", name)
        find_unlisted(metastore, table, min_age=3600)  # warm the caches
        tracemalloc.start()
        report = find_unlisted(metastore, table, min_age=3600)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert report.files == () and report.walked == folders * 21
    held = 190 * 20 * 300  # the extra entries, at ~300 bytes each, had the walk kept them
    assert peaks[1] - peaks[0] < held / 2, peaks


@settings(max_examples=30, deadline=None)
@given(
    registered=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 11)), max_size=12),
    asked=st.lists(st.integers(0, 11), max_size=12),
    uri=st.booleans(),
)
def test_listed_paths_is_tables_listing_of_each_path(scratch, registered, asked, uri):
    ms, root = scratch
    case = root / uuid.uuid4().hex[:10]
    names = [f"l{case.name}{i}" for i in range(3)]
    for name in names:
        ms.create_table("db", name, [("x", "int")], [], str(case / name))
    paths = [str(case / "data" / f"f{i}.parquet") for i in range(12)]
    for table, i in dict.fromkeys(registered):
        stored = f"file://{paths[i]}" if uri else paths[i]
        if not ms.table("db", names[table]).has_file(stored):
            ms.commit("db", names[table], add_files=[sg.FileStats(stored, 1, 4)])
    wanted = [paths[i] for i in asked]
    assert ms.listed_paths(wanted) == {p for p in wanted if ms.tables_listing(p)}
    assert ms.listed_paths(wanted) == {paths[i] for _, i in registered if i in asked}
