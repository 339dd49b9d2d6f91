"""A table version's loaded partitions (`sargable.metastore.loaded`): loaded by the first partition filter after a scan
lists the whole table (the whole scan alone loads nothing), they answer partition filters and scans with no store
read of partitions, indexes or files, exactly as the store does (random partition sets over every partition-key type,
NULLs included, with and without secondary indexes, random filters checked against the store path and against brute
force), and only for their version."""

from __future__ import annotations

import datetime as dt
import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sargable as sg
from metastore_fixtures import module_metastore
from sargable import keys
from sargable.metastore import Metastore
from sargable.metastore import caches as cache_module
from sargable.metastore.schema import FILES, INDEXES, PARTITIONS
from sargable.stats import ColumnStats, FileStats
from sargable.types import parse_type
from strategies import PARTITION_KEY_TYPES, pools_of, predicates, tables

_counter = itertools.count()
READS = ("get", "scan", "scan_pages", "scan_blocks", "scan_ranges", "multi_get", "count")


def _counting_store(ms: Metastore, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Record the store reads of a metastore: (method, keyspace)."""
    store = ms.store
    calls: list[tuple[str, str]] = []
    for method in READS:
        real = getattr(store, method)

        def counted(keyspace: str, *args: Any, _real: Any = real, _method: str = method, **kwargs: Any) -> Any:
            calls.append((_method, keyspace))
            return _real(keyspace, *args, **kwargs)

        monkeypatch.setattr(store, method, counted)
    return calls


def _hive_row(schema, row):
    """What the metastore stores for a row: an empty string partition value is NULL; NUL is left out of strings."""
    out = {}
    for name, t in schema:
        value = row[name].replace("\x00", "") if isinstance(row[name], str) else row[name]
        out[name] = None if value == "" and parse_type(t).is_string else value
    return out


def _encoded(partitions, types) -> list[bytes]:
    return [keys.encode(p.values, types) for p in partitions]


def _check(ms: Metastore, data, monkeypatch: pytest.MonkeyPatch) -> None:
    schema = data.draw(st.lists(st.sampled_from(PARTITION_KEY_TYPES), min_size=1, max_size=3), label="types")
    schema = [(f"p{i}", t) for i, t in enumerate(schema)]
    rows = [_hive_row(schema, r) for r in data.draw(tables(schema, max_size=30), label="rows")]
    types = [parse_type(t) for _, t in schema]
    unique = {keys.encode([r[n] for n, _ in schema], types): r for r in rows}
    rows = [unique[k] for k in sorted(unique)]
    name = f"t{next(_counter)}"
    ms.create_table("db", name, [("x", "bigint")], schema, index_all=data.draw(st.booleans(), label="index_all"))
    table = ms.table("db", name)
    values = [tuple(r[n] for n, _ in schema) for r in rows]
    located = data.draw(st.lists(st.booleans(), min_size=len(values), max_size=len(values)), label="located")
    table.add_partitions(values, locations=[f"/elsewhere/{i}" if x else None for i, x in enumerate(located)])
    files = [
        FileStats(f"/w/{name}/{i}-{j}.parquet", 5, 10 + i, {"x": ColumnStats(i, i + j, 0)}, dict(zip(dict(schema), v)))
        for i, v in enumerate(values)
        for j in range(data.draw(st.integers(0, 2), label=f"files of {i}"))
    ]
    if files:
        table.commit(add_files=files)
    table = table.refresh()
    predicate = data.draw(predicates(schema, max_leaves=4, pools=pools_of(schema, rows)), label="predicate")
    filter = sg.render(predicate)
    where = filter + (" and x >= 1" if data.draw(st.booleans(), label="data column") else "")
    expected = [v for v, r in zip(values, rows, strict=True) if sg.evaluate(predicate, r) is True]

    ms.clear_caches()
    stored_partitions = table.partitions(filter)
    stored_scan = table.scan(where)
    stored_files = table.files(stored_partitions)
    table.scan()  # the whole listing: the version's next partition filter loads its partitions
    table.partitions(filter)
    with monkeypatch.context() as patch:
        calls = _counting_store(ms, patch)
        loaded_partitions = table.partitions(filter)
        found, explain = table.partitions_explained(filter)
        loaded_scan = table.scan(where)
        every = table.partitions()
    assert not [c for c in calls if c[1] in (PARTITIONS, INDEXES)], "the loaded partitions answered"
    assert _encoded(loaded_partitions, types) == [keys.encode(v, types) for v in expected]
    assert _encoded(loaded_partitions, types) == _encoded(stored_partitions, types)
    assert _encoded(found, types) == _encoded(stored_partitions, types)
    assert _encoded(every, types) == [keys.encode(v, types) for v in values]
    assert [(p.name, p.location, p.parameters) for p in loaded_partitions] == [
        (p.name, p.location, p.parameters) for p in stored_partitions
    ]
    assert explain.access_path.endswith("over the loaded partitions") or explain.access_path.startswith("none")
    assert [f.path for f in loaded_scan.files] == [f.path for f in stored_scan.files]
    assert loaded_scan.report.partitions_selected == stored_scan.report.partitions_selected
    assert loaded_scan.report.bytes_selected == stored_scan.report.bytes_selected
    assert [f.path for f in table.files(loaded_partitions)] == [f.path for f in stored_files]


@pytest.fixture(scope="module")
def sqlite_ms(tmp_path_factory):
    with module_metastore(tmp_path_factory, "sqlite") as ms:
        yield ms


@pytest.fixture(scope="module")
def postgres_ms(tmp_path_factory, postgres_url):
    with module_metastore(tmp_path_factory, "postgresql", postgres_url) as ms:
        yield ms


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_sqlite_loaded_partitions_answer_as_the_store(sqlite_ms: Metastore, data, monkeypatch) -> None:
    _check(sqlite_ms, data, monkeypatch)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_postgresql_loaded_partitions_answer_as_the_store(postgres_ms: Metastore, data, monkeypatch) -> None:
    _check(postgres_ms, data, monkeypatch)


def _events(ms: Metastore) -> None:
    ms.create_database("db", if_not_exists=True)
    ms.create_table("db", "events", [("id", "bigint")], [("ds", "date"), ("hr", "int")], index_all=True)
    ms.add_files(
        "db",
        "events",
        [
            FileStats(f"/w/ds={d}/hr={h}/f.parquet", 1, 1, partition={"ds": dt.date(2024, 1, d), "hr": h})
            for d in range(1, 4)
            for h in range(4)
        ],
    )


def test_loaded_partitions_answer_only_for_their_version(metastore: Metastore, monkeypatch) -> None:
    """After a commit, an old handle reads the store (what it holds now, as it always did); a new handle reads the
    store until its own version is listed whole, then its loaded partitions, which hold the new partition."""
    _events(metastore)
    old = metastore.table("db.events")
    old.scan()
    assert [p.values for p in old.partitions("hr = 3")][:1] == [(dt.date(2024, 1, 1), 3)]
    late = FileStats("/w/late.parquet", 1, 1, partition={"ds": dt.date(2024, 1, 9), "hr": 3})
    metastore.add_files("db", "events", [late])
    new = metastore.table("db.events")
    for handle in (old, new):
        with monkeypatch.context() as patch:
            calls = _counting_store(metastore, patch)
            assert (dt.date(2024, 1, 9), 3) in [p.values for p in handle.partitions("hr = 3")]
            assert "/w/late.parquet" in [f.path for f in handle.scan("hr = 3").files]
        assert [c for c in calls if c[1] in (PARTITIONS, INDEXES)], "read from the store"
    new.files()
    with monkeypatch.context() as patch:
        calls = _counting_store(metastore, patch)
        new.scan("hr = 3")
    assert [c for c in calls if c[1] in (PARTITIONS, INDEXES)], "Table.files() loads no partitions"
    assert len(new.scan().files) == 13  # a scan lists the whole table (no statistics): kept, and wants a load
    with monkeypatch.context() as patch:
        calls = _counting_store(metastore, patch)
        new.scan("hr = 3")
    assert [c for c in calls if c[1] == PARTITIONS], "the first partition filter after it loads the partitions"
    with monkeypatch.context() as patch:
        calls = _counting_store(metastore, patch)
        scan = new.scan("hr = 3")
    assert not [c for c in calls if c[1] in (PARTITIONS, INDEXES, FILES)], "loaded partitions and kept listing"
    assert [f.path for f in scan.files][-1] == "/w/late.parquet"
    assert scan.partition_search is not None and "loaded partitions" in scan.partition_search.access_path


def test_dropped_partitions_are_gone_from_a_new_handle(metastore: Metastore) -> None:
    _events(metastore)
    table = metastore.table("db.events")
    table.scan()
    assert len(table.partitions("ds = '2024-01-02'")) == 4
    table.drop_partitions("ds = '2024-01-02'")
    fresh = metastore.table("db.events")
    fresh.scan()
    assert fresh.partitions("ds = '2024-01-02'") == []
    assert len(fresh.partitions()) == 8
    assert fresh.scan("ds = '2024-01-02'").files == ()


def test_too_many_partitions_are_not_loaded(tmp_path, monkeypatch) -> None:
    """A version with more partitions than the budget is not kept: its scans read the store, and agree."""
    monkeypatch.setattr(cache_module, "LOADED_PARTITIONS_MAX", 5)
    ms = Metastore.open(f"sqlite:///{tmp_path / 'm.db'}", warehouse=tmp_path / "w")
    _events(ms)
    table = ms.table("db.events")
    table.scan()
    calls = _counting_store(ms, monkeypatch)
    assert [p.name for p in table.partitions("hr = 1")] == [f"ds=2024-01-0{d}/hr=1" for d in range(1, 4)]
    assert [c for c in calls if c[1] in (PARTITIONS, INDEXES)], "read from the store"
    ms.close()


def test_a_filter_binds_once_per_table_version_columns(metastore: Metastore) -> None:
    """The bound filter a scan keeps is of the columns it was bound to: a text naming no column is an error each
    time, and binds once the column is added."""
    _events(metastore)
    table = metastore.table("db.events")
    assert table.scan("id > 1").residual is not None
    with pytest.raises(sg.SargableError, match="amount"):
        table.scan("amount > 1")
    wider = table.add_columns([("amount", "double")])
    assert wider.scan("amount > 1").residual is not None


def test_a_whole_scan_alone_loads_no_partitions(metastore: Metastore, monkeypatch) -> None:
    """A one-off scan of the whole table (open, scan, close) pays nothing for later partition filters."""
    _events(metastore)
    table = metastore.table("db.events")
    with monkeypatch.context() as patch:
        calls = _counting_store(metastore, patch)
        assert len(table.scan().files) == 12
    assert not [c for c in calls if c[1] in (PARTITIONS, INDEXES)], "no partition read by a whole scan"
