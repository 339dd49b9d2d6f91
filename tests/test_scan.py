"""The core scan (`Table.scan` -> `Scan`): one bind, one catalog read, one snapshot, one store read for many
partitions' files, and key sets (join pruning) checked against brute force, on both backends where a store is used."""

from __future__ import annotations

import datetime as dt
import importlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sargable as sg
from sargable.metastore import Metastore
from sargable.metastore.schema import CATALOG, FILES, PARTITIONS, table_key
from sargable.scan import KeySet, plan_scan
from sargable.stats import ColumnStats, FileStats
from sargable.types import parse_type

bind_module = importlib.import_module("sargable.expr.bind")  # the package's `bind` name is the function


class CountingSchema(bind_module.Schema):
    """`bind`'s schema, counting how often a filter is bound (every `bind` builds one)."""

    made = 0

    def __init__(self, columns: Any) -> None:
        CountingSchema.made += 1
        super().__init__(columns)


def _counting_store(ms: Metastore, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, Any]]:
    """Record the store calls of a metastore: (method, keyspace, key or None)."""
    store = ms.store
    calls: list[tuple[str, str, Any]] = []
    for method in ("get", "scan", "scan_ranges", "multi_get", "count"):
        real = getattr(store, method)

        def counted(keyspace: str, *args: Any, _real: Any = real, _method: str = method, **kwargs: Any) -> Any:
            key = args[0] if _method == "get" and args else None
            calls.append((_method, keyspace, key))
            return _real(keyspace, *args, **kwargs)

        monkeypatch.setattr(store, method, counted)
    return calls


def _events(ms: Metastore, days: int = 3, hours: int = 4) -> None:
    ms.create_database("db", if_not_exists=True)
    ms.create_table("db", "events", [("id", "bigint"), ("amount", "double")], [("ds", "date"), ("hr", "int")])
    files = [
        FileStats(
            path=f"/w/ds={day}/hr={hr}/f.parquet",
            row_count=10,
            size_bytes=100,
            columns={"id": ColumnStats(min=hr * 100, max=hr * 100 + 9, null_count=0)},
            partition={"ds": dt.date(2024, 1, 1) + dt.timedelta(days=day), "hr": hr},
        )
        for day in range(days)
        for hr in range(hours)
    ]
    ms.commit("db", "events", add_files=files)


def test_a_scan_binds_once_and_reads_the_catalog_row_once(metastore: Metastore, monkeypatch) -> None:
    _events(metastore)
    calls = _counting_store(metastore, monkeypatch)
    monkeypatch.setattr(bind_module, "Schema", CountingSchema)
    CountingSchema.made = 0
    with metastore.snapshot():
        scan = metastore.table("db.events").scan("ds >= '2024-01-02' and hr in (1, 2) and id > 150")
    assert CountingSchema.made == 1
    assert [c for c in calls if c[:2] == ("get", CATALOG) and c[2] == table_key("db", "events")] == [
        ("get", CATALOG, table_key("db", "events"))
    ]
    assert sorted(f.path for f in scan.files) == ["/w/ds=1/hr=2/f.parquet", "/w/ds=2/hr=2/f.parquet"]
    assert (scan.report.partitions_selected, scan.report.files_selected) == (4, 2)
    assert scan.partition_filter is not None and scan.partition_filter.columns == {"ds", "hr"}
    assert scan.file_filter is not None and scan.residual is not None and scan.residual.columns == {"id"}
    assert str(scan.report.access).startswith("primary")


def test_files_of_1000_partitions_come_from_one_store_read(metastore: Metastore, monkeypatch) -> None:
    metastore.create_database("db")
    metastore.create_table("db", "t", [("v", "bigint")], [("p", "int"), ("s", "string")])
    files = [
        FileStats(path=f"/w/p={i}/s=x/f{j}.parquet", row_count=1, size_bytes=1, partition={"p": i, "s": "x"})
        for i in range(1000)
        for j in range(2)
    ]
    metastore.add_partitions("db", "t", [[i, "y"] for i in range(1000)])
    metastore.commit("db", "t", add_files=files)
    parts = metastore.get_partitions_by_filter("db", "t", "s = 'x'")
    assert len(parts) == 1000
    calls = _counting_store(metastore, monkeypatch)
    listed = metastore.list_files("db", "t", parts, stats=False)
    assert sorted(f.path for f in listed) == sorted(f.path for f in files)
    assert [c[0] for c in calls if c[1] == FILES] == ["scan_ranges"]
    calls.clear()
    scan = metastore.table("db.t").scan("s = 'x' and p >= 0")
    assert len(scan.files) == 2000 and scan.report.partitions_selected == 1000
    assert [c[0] for c in calls if c[1] == FILES] == ["scan_ranges"]


def test_a_scan_reads_one_snapshot_even_from_an_old_handle(metastore: Metastore) -> None:
    _events(metastore, days=1, hours=2)
    old = metastore.table("db", "events")
    metastore.commit(
        "db", "events", add_files=[FileStats("/w/late.parquet", 1, 7, partition={"ds": "2024-01-05", "hr": 0})]
    )
    scan = old.scan("hr = 0")
    assert scan.table.version == old.version + 1
    assert "/w/late.parquet" in {f.path for f in scan.files}
    assert scan.report.files_total == 3 and scan.report.partitions_total == 3
    with metastore.snapshot():
        current = metastore.table("db.events")
        assert current.scan().table is current, "a handle read in the scan's transaction is used as it is"
    metastore.drop_table("db", "events")
    _events(metastore, days=1, hours=1)
    with pytest.raises(sg.MetastoreError, match="created again"):
        old.scan()


def test_key_set_values_plan_as_gets_not_a_scan(metastore: Metastore, monkeypatch) -> None:
    """1,200 key values over a 1,500-partition table: gets on the key (in chunks the planner keeps as gets)."""
    metastore.create_database("db")
    metastore.create_table("db", "fact", [("v", "bigint")], [("day", "int")])
    metastore.add_partitions("db", "fact", [{"day": d} for d in range(1500)])
    fact = metastore.table("db.fact")
    calls = _counting_store(metastore, monkeypatch)
    values = frozenset(range(-100, 2300, 2))  # 1,200 values, 750 of them partitions
    scan = fact.scan(key_sets=[KeySet("day", values=values)])
    assert scan.report.partitions_selected == len([d for d in range(1500) if d in values])
    assert ("scan", PARTITIONS) not in {c[:2] for c in calls}
    assert ("multi_get", PARTITIONS) in {c[:2] for c in calls}
    assert scan.report.access is not None and "2 metastore queries" in scan.report.access

    calls.clear()
    static = fact.scan("day < 100 and day >= 0", key_sets=[KeySet("day", values=values)])
    assert static.report.partitions_selected == 50
    assert ("scan", PARTITIONS) not in {c[:2] for c in calls}
    ranged = fact.scan(key_sets=[KeySet("day", low=10, high=19), KeySet("DAY", values=values)])
    assert ranged.report.partitions_selected == 5
    assert ranged.key_sets == (KeySet("day", values=frozenset(range(10, 20, 2))),)

    # A value set on a key that is neither leading nor indexed: one query, then membership in memory.
    metastore.create_table("db", "two", [("v", "bigint")], [("day", "int"), ("store", "string")])
    metastore.add_partitions("db", "two", [{"day": d, "store": s} for d in range(40) for s in ("a", "b", "c", None)])
    two = metastore.table("db.two")
    keys = [KeySet("store", values=frozenset({"a", "c", "z"})), KeySet("day", low=5, high=14)]
    scan = two.scan("day != 7", key_sets=keys)
    assert scan.report.partitions_selected == 9 * 2
    assert scan.report.access is not None and "in memory" in scan.report.access
    by_day = two.scan(key_sets=[KeySet("day", values=frozenset({3, 4, 99})), keys[0]])
    assert by_day.report.partitions_selected == 2 * 2
    assert by_day.report.access is not None and "day IN (3 values)" in by_day.report.access
    assert two.scan(key_sets=[KeySet("day", values=frozenset({"x", None}))]).report.partitions_selected == 0
    with pytest.raises(sg.SargableError, match="not a column"):
        two.scan(key_sets=[KeySet("nope", values=frozenset({1}))])


def test_statistics_the_caller_distrusts_are_not_used(metastore: Metastore) -> None:
    """Timestamp statistics that don't compare with an engine's literals (non-UTC zone) skip no file."""
    metastore.create_database("db")
    metastore.create_table("db", "t", [("ts", "timestamp"), ("v", "bigint")], [("day", "int")])
    early = ColumnStats(min=dt.datetime(2024, 1, 1, 12), max=dt.datetime(2024, 1, 1, 13), null_count=0)
    files = [
        FileStats(
            path=f"/w/t/day={d}/f.parquet", row_count=5, size_bytes=10, columns={"ts": early}, partition={"day": d}
        )
        for d in range(4)
    ]
    metastore.commit("db", "t", add_files=files)
    table = metastore.table("db.t")
    where = "ts < '2024-01-01 08:00:00'"
    keys = [KeySet("day", values=frozenset({1, 2, 9}))]
    assert table.scan(where, key_sets=keys).report.files_selected == 0
    kept = table.scan(where, key_sets=keys, ignore_stats=["TS"])
    assert (kept.report.partitions_selected, kept.report.files_selected) == (2, 2)
    assert kept.report.residual is not None and "ts" in kept.report.residual


# ------------------------------------------------------------------------------------- without a metastore


@dataclass
class ListedTable:
    """A table whose files are given (the `ScannedTable` protocol without a store): unpartitioned."""

    listed: list[FileStats]
    columns: tuple[tuple[str, Any], ...] = (("item", parse_type("int")),)
    qualified_name: str = "db.listed"
    partition_key_names: list[str] = field(default_factory=list)
    indexes: tuple[str, ...] = ()
    location: str = "/nowhere/listed"
    files_from_folders: bool = False

    @property
    def schema(self) -> list[tuple[str, Any]]:
        return list(self.columns)

    def stats(self) -> sg.TableStats:
        return sg.TableStats(0, len(self.listed), sum(f.size_bytes for f in self.listed), 0)

    def partitions(self, filter: Any = None) -> list[Any]:
        return []

    def partitions_explained(self, filter: Any) -> tuple[list[Any], Any]:
        raise AssertionError("an unpartitioned table has no partition filter")

    def files(self, partitions: Iterable[Any] | None = None, *, stats: Any = True) -> list[FileStats]:
        assert partitions is None
        return list(self.listed)

    def files_matching(self, where: Any, partitions: Any = None, *, stats: Any = True) -> None:
        return None  # no statistics blocks: the per-file path


def _stats(values: list[int | None]) -> ColumnStats:
    present = [v for v in values if v is not None]
    distinct = frozenset(present) if len(set(present)) <= 3 else None
    return ColumnStats(
        min=min(present) if present else None,
        max=max(present) if present else None,
        null_count=len(values) - len(present),
        distinct=distinct,
    )


@settings(max_examples=200)
@given(
    files=st.lists(st.lists(st.one_of(st.none(), st.integers(-20, 20)), max_size=8), max_size=12),
    keys=st.frozensets(st.integers(-25, 25), max_size=10),
)
def test_file_skipping_by_key_values_is_sound_and_tight(files: list[list[int | None]], keys: frozenset[int]) -> None:
    stats = [
        FileStats(path=f"/f{i}", row_count=len(v), size_bytes=1, columns={"item": _stats(v)})
        for i, v in enumerate(files)
    ]
    kept = {f.path for f in plan_scan(ListedTable(stats), key_sets=[KeySet("item", values=keys)]).files}
    for i, values in enumerate(files):
        present = {v for v in values if v is not None}
        if present & keys:
            assert f"/f{i}" in kept, "a file holding a key value is never skipped"
        elif not keys or not present:
            assert f"/f{i}" not in kept, "a file of only NULLs (or no rows), or no key at all, never joins"
        elif len(present) <= 3:
            assert f"/f{i}" not in kept, "a value set is exact"
        elif not any(min(present) <= k <= max(present) for k in keys):
            assert f"/f{i}" not in kept, "no key value within [min, max]"


_key_sets = st.one_of(
    st.frozensets(st.integers(-6, 6), max_size=6).map(lambda values: KeySet("k", values=values)),
    st.tuples(st.integers(-6, 6), st.integers(-6, 6)).map(lambda b: KeySet("k", low=b[0], high=b[1])),
)


def _allowed(key: KeySet) -> set[int]:
    if key.values is not None:
        return set(key.values)
    return set(range(key.low, key.high + 1))


@given(a=_key_sets, b=_key_sets)
def test_key_sets_intersect_as_sets_of_values(a: KeySet, b: KeySet) -> None:
    both = a.intersect(b)
    assert _allowed(both) == _allowed(a) & _allowed(b)
    assert both.is_empty == (not _allowed(both))


def test_shared_metastores_are_reused_per_url_until_their_store_changes(tmp_path) -> None:
    """The per-thread pool: one open metastore per URL, opened again when the store at the URL is another one."""
    import os
    import threading

    from sargable.metastore import shared

    url = f"sqlite:///{tmp_path / 'pooled.db'}"
    first = shared(url)
    assert shared(url) is first
    first.create_database("db")
    others: list[Metastore] = []
    thread = threading.Thread(target=lambda: others.append(shared(url)))
    thread.start()
    thread.join()
    assert others[0] is not first, "a Store is for one thread: each thread has its own"
    os.remove(tmp_path / "pooled.db")
    again = shared(url)
    assert again is not first and again.list_databases() == [], "a new database file at the URL is opened anew"
    again.close()
    assert shared(url) is not again, "a closed metastore is opened again"


@pytest.fixture(scope="module")
def sixty(tmp_path_factory: pytest.TempPathFactory) -> Iterable[Any]:
    """A table of 60 int partitions and the NULL one."""
    root = tmp_path_factory.mktemp("sixty")
    with Metastore.open(f"sqlite:///{root / 'm.db'}", warehouse=root) as metastore:
        metastore.create_database("db")
        metastore.create_table("db", "fact", [("v", "bigint")], [("day", "int")])
        metastore.add_partitions("db", "fact", [{"day": d} for d in range(60)] + [{"day": None}])
        yield metastore.table("db.fact")


@settings(max_examples=60, deadline=None)
@given(values=st.frozensets(st.integers(-20, 80), min_size=1, max_size=60), run_min=st.sampled_from([2, 8]))
def test_key_set_runs_plan_as_ranges_with_the_same_partitions(sixty: Any, values: frozenset, run_min: int) -> None:
    """Consecutive key values plan as ranges, the others as gets: the partitions (in key order) are the oracle's."""
    import sargable.scan as scan_module

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scan_module, "RUN_MIN", run_min)
        scan = sixty.scan(key_sets=[KeySet("day", values=values)])
    assert [p.values[0] for p in scan.partitions or ()] == sorted(d for d in range(60) if d in values)


def test_consecutive_key_values_are_one_range_scan(metastore: Metastore, monkeypatch) -> None:
    metastore.create_database("db")
    metastore.create_table("db", "fact", [("v", "bigint")], [("day", "int")])
    metastore.add_partitions("db", "fact", [{"day": d} for d in range(1500)])
    calls = _counting_store(metastore, monkeypatch)
    values = frozenset(range(100, 466)) | {5, 7, 1000}
    scan = metastore.table("db.fact").scan(key_sets=[KeySet("day", values=values)])
    assert [p.values[0] for p in scan.partitions or ()] == sorted(values)
    assert scan.report.access is not None and "IN (369 values): 3 metastore queries" in scan.report.access
    assert ("scan", PARTITIONS) not in {c[:2] for c in calls}, "one narrow range, no table scan"


def _stores_files(metastore: Metastore) -> list[FileStats]:
    """A table `db.kept` (ds date, s string: NULLs on both) whose partitions hold 0 to 3 files, written out of order."""
    metastore.create_database("db", if_not_exists=True)
    metastore.create_table("db", "kept", [("v", "bigint")], [("ds", "date"), ("s", "string")])
    days = [None, dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2023, 12, 31)]
    texts = [None, "a", "a/b", "é", "z"]
    files = []
    for i, (day, text) in enumerate((d, t) for d in days for t in texts):
        for j in range(i % 4):
            name = f"ds={day}/s={text}/f{j}-{i}.parquet"
            files.append(FileStats(path=f"/w/{name}", row_count=j, size_bytes=i, partition={"ds": day, "s": text}))
    metastore.add_partitions("db", "kept", [{"ds": d, "s": t} for d in days for t in texts])
    metastore.commit("db", "kept", add_files=files[::-1])
    return files


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_files_of_partitions_from_a_kept_listing_equal_the_stores(metastore: Metastore, monkeypatch, data) -> None:
    """Once a version's whole listing is kept, the files of any partitions come from it (no store read of files),
    equal to what the store returns for them (`iter_files`, one read of their ranges), in the same order."""
    try:
        table = metastore.table("db.kept")
    except sg.NoSuchObjectError:
        _stores_files(metastore)
        table = metastore.table("db.kept")
    everything = table.files(stats=False)
    partitions = table.partitions()
    chosen = data.draw(st.lists(st.sampled_from(partitions), max_size=len(partitions)))
    expected = [(f.path, f.partition) for f in table.iter_files(chosen, stats=False)]
    with monkeypatch.context() as patch:
        calls = _counting_store(metastore, patch)
        got = [(f.path, f.partition) for f in table.files(chosen, stats=False)]
    assert got == expected
    assert not [c for c in calls if c[1] == FILES], "the kept listing answered"
    assert {f.path for f in everything} >= {path for path, _ in got}


def test_a_kept_listing_answers_only_for_its_version(metastore: Metastore, monkeypatch) -> None:
    """After a commit, an old handle lists what the store holds now (as it always did), a new one its new files."""
    _stores_files(metastore)
    old = metastore.table("db.kept")
    old.files(stats=False)
    parts = [p for p in old.partitions() if p.values[1] == "a"]
    late = FileStats("/w/late.parquet", 1, 1, partition=dict(zip(["ds", "s"], parts[0].values, strict=True)))
    metastore.commit("db", "kept", add_files=[late])
    for handle in (old, metastore.table("db.kept")):
        calls = _counting_store(metastore, monkeypatch)
        listed = [f.path for f in handle.files(parts, stats=False)]
        assert "/w/late.parquet" in listed
        assert listed == [f.path for f in handle.iter_files(parts, stats=False)]
        assert [c[0] for c in calls if c[1] == FILES][:1] == ["scan_ranges"], "read from the store"
        monkeypatch.undo()
