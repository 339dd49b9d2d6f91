"""`Metastore.table_stats` and the statistics-free file listing, against brute-force counts on both backends."""

from __future__ import annotations

import dataclasses
import itertools
import json
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sargable.errors import AlreadyExistsError, CommitConflictError, NoSuchObjectError
from sargable.metastore import Metastore, TableStats
from sargable.metastore.filecodec import decode_header, encode_file
from sargable.metastore.schema import CATALOG, stats_key
from sargable.stats import ColumnStats, FileStats

DB = "db"
COLUMNS = [("id", "bigint"), ("name", "string")]
KEYS = [("ds", "int"), ("region", "string")]
DS = st.integers(0, 5)
REGION = st.sampled_from(["eu", "us", None])


def brute_force(ms: Metastore, table: str) -> TableStats:
    """The totals counted from the listings, independently of the stored counts."""
    with ms.snapshot():
        files = ms.list_files(DB, table)
        partitions = len(ms.list_partition_names(DB, table))
    return TableStats(partitions, len(files), sum(f.size_bytes for f in files), sum(f.row_count for f in files))


def new_table(ms: Metastore) -> str:
    ms.create_database(DB, if_not_exists=True)
    name = f"t_{uuid.uuid4().hex[:10]}"
    ms.create_table(DB, name, COLUMNS, KEYS)
    return name


_counter = itertools.count()


def new_file(ds: int, region: str | None, rows: int, size: int) -> FileStats:
    """A file with statistics on both data columns (so the stats-free listing has something to leave out)."""
    ids = ColumnStats(min=0, max=rows, null_count=0)
    names = ColumnStats(min="a", max="z", null_count=0, distinct=frozenset({"a", "z"}) if rows >= 2 else None)
    return FileStats(
        f"/w/ds={ds}/region={region}/part-{next(_counter)}.parquet",
        row_count=rows,
        size_bytes=size,
        columns={"id": ids, "name": names},
        partition={"ds": ds, "region": region},
    )


FILES = st.lists(st.builds(new_file, DS, REGION, st.integers(0, 1000), st.integers(0, 10**9)), min_size=0, max_size=4)
OPERATIONS = st.one_of(
    st.tuples(st.just("add"), FILES),
    st.tuples(st.just("add_clash"), FILES),
    st.tuples(st.just("overwrite"), st.lists(st.tuples(DS, REGION), max_size=2), FILES),
    st.tuples(st.just("remove"), st.lists(st.integers(0, 50), max_size=3), st.booleans()),
    st.tuples(st.just("add_partitions"), st.lists(st.tuples(DS, REGION), max_size=3), st.booleans()),
    st.tuples(st.just("drop"), DS, DS),
    st.tuples(st.just("stale"), FILES),
    st.tuples(st.just("alter"), st.integers(0, 50)),
)


def apply(ms: Metastore, table: str, op: tuple) -> None:
    """Run one operation; the ones expected to fail must raise and leave the totals unchanged."""
    kind = op[0]
    before = ms.table_stats(DB, table)
    failed = False
    try:
        if kind == "add":
            ms.commit(DB, table, add_files=op[1])
        elif kind == "add_clash":
            existing = ms.list_files(DB, table, stats=False)
            if not existing:
                return
            # Other partitions overwritten and valid files added, then a path already registered: the commit fails
            # after its deletes and inserts, and must leave nothing of them.
            clash = dataclasses.replace(new_file(0, "eu", 1, 1), path=existing[0].path)
            others = {tuple(f.partition.values()) for f in existing} - {tuple(existing[0].partition.values())}
            failed = True
            with pytest.raises(AlreadyExistsError):
                ms.commit(DB, table, replace_partitions=[list(v) for v in others], add_files=[*op[1], clash])
        elif kind == "overwrite":
            ms.commit(DB, table, replace_partitions=[list(v) for v in op[1]], add_files=op[2])
        elif kind == "remove":
            paths = [f.path for f in ms.list_files(DB, table, stats=False)]
            chosen = sorted({paths[i % len(paths)] for i in op[1]}) if paths else []
            if op[2]:
                failed = True
                with pytest.raises(CommitConflictError):
                    ms.commit(DB, table, remove_files=[*chosen, "/w/missing.parquet"])
            else:
                ms.commit(DB, table, remove_files=chosen)
        elif kind == "add_partitions":
            values = [list(v) for v in op[1]]
            existing = set(ms.list_partition_names(DB, table))
            names = [f"ds={d}/region={r if r is not None else '__HIVE_DEFAULT_PARTITION__'}" for d, r in op[1]]
            if op[2] or (not existing & set(names) and len(set(names)) == len(names)):
                ms.add_partitions(DB, table, values, if_not_exists=True)
            else:
                failed = True
                with pytest.raises(AlreadyExistsError):
                    ms.add_partitions(DB, table, values)
        elif kind == "drop":
            low, high = sorted(op[1:])
            ms.drop_partitions(DB, table, f"ds between {low} and {high} and region <> 'us'")
        elif kind == "stale":
            version = ms.get_table(DB, table).version
            ms.add_partitions(DB, table, [[99, "stale"]], if_not_exists=True)
            before = ms.table_stats(DB, table)
            failed = True
            with pytest.raises(CommitConflictError):
                ms.commit(DB, table, add_files=op[1], expected_version=version)
        elif kind == "alter":
            names = ms.list_partition_names(DB, table)
            if names:
                ms.alter_partition(DB, table, names[op[1] % len(names)], parameters={"k": "v"})
    finally:
        if failed:
            assert ms.table_stats(DB, table) == before


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations=st.lists(OPERATIONS, max_size=8))
def test_table_stats_match_brute_force(backend, request, tmp_path_factory, operations) -> None:
    ms = _metastore(backend, request, tmp_path_factory)
    table = new_table(ms)
    assert ms.table_stats(DB, table) == TableStats(0, 0, 0, 0)
    for op in operations:
        apply(ms, table, op)
        assert ms.table_stats(DB, table) == brute_force(ms, table), op
    with_stats = ms.list_files(DB, table)
    assert ms.list_files(DB, table, stats=False) == [dataclasses.replace(f, columns={}) for f in with_stats]
    only_ids = [dataclasses.replace(f, columns={k: v for k, v in f.columns.items() if k == "id"}) for f in with_stats]
    assert ms.list_files(DB, table, stats=["id"]) == only_ids
    partitions = ms.get_partitions_by_filter(DB, table, "ds >= 3")
    assert ms.list_files(DB, table, partitions, stats=False) == [
        dataclasses.replace(f, columns={}) for f in ms.list_files(DB, table, partitions)
    ]


_OPENED: dict[str, Metastore] = {}


def _metastore(backend: str, request, tmp_path_factory) -> Metastore:
    """One metastore per backend for all examples (each example uses a table of its own)."""
    if backend not in _OPENED:
        if backend == "sqlite":
            url = f"sqlite:///{tmp_path_factory.mktemp('stats') / 'meta.db'}"
        else:
            url = f"{request.getfixturevalue('postgres_url')}?schema=t_{uuid.uuid4().hex[:12]}"
        _OPENED[backend] = Metastore.open(url, warehouse=tmp_path_factory.mktemp("warehouse"))
    return _OPENED[backend]


def test_drop_and_recreate_table(metastore) -> None:
    table = new_table(metastore)
    metastore.commit(DB, table, add_files=[new_file(1, "eu", 10, 100)])
    key = stats_key(metastore.get_table(DB, table).table_id)
    assert metastore.store.get(CATALOG, key) is not None
    metastore.drop_table(DB, table)
    assert metastore.store.get(CATALOG, key) is None
    metastore.create_table(DB, table, COLUMNS, KEYS)
    assert metastore.table_stats(DB, table) == TableStats(0, 0, 0, 0)
    metastore.drop_database(DB, cascade=True)
    with pytest.raises(NoSuchObjectError):
        metastore.table_stats(DB, table)


def test_table_without_stored_totals(metastore) -> None:
    """A table from a metastore written before totals were kept is counted once, then kept up to date."""
    table = new_table(metastore)
    metastore.commit(DB, table, add_files=[new_file(d, "eu", 10 + d, 100 * d) for d in range(4)])
    key = stats_key(metastore.get_table(DB, table).table_id)
    metastore.store.delete(CATALOG, key)
    metastore.commit(DB, table, add_files=[new_file(7, None, 5, 50)], add_partitions=[[8, "us"]])
    assert metastore.store.get(CATALOG, key) is None
    with metastore.snapshot():
        assert metastore.table_stats(DB, table) == brute_force(metastore, table)
    assert metastore.store.get(CATALOG, key) is None
    assert metastore.table_stats(DB, table) == brute_force(metastore, table) == TableStats(6, 5, 650, 51)
    assert metastore.store.get(CATALOG, key) is not None
    metastore.drop_partitions(DB, table, "ds < 2")
    assert metastore.table_stats(DB, table) == brute_force(metastore, table) == TableStats(4, 3, 550, 30)


@settings(max_examples=200)
@given(path=st.text(min_size=1), rows=st.integers(0, 2**62), size=st.integers(0, 2**62))
def test_decode_header_reads_what_encode_file_wrote(path: str, rows: int, size: int) -> None:
    from sargable.metastore.records import TableDefinition
    from sargable.types import parse_type

    table = TableDefinition(DB, "t", 1, (("id", parse_type("bigint")),), (), "/w")
    file = FileStats(path, rows, size, columns={"id": ColumnStats(min=1, max=2)})
    assert decode_header(encode_file(file, table)) == (path, rows, size)
    # Another field order (not written by encode_file) still decodes, through the full parse.
    reordered = json.dumps({"columns": {}, "bytes": size, "rows": rows, "path": path}).encode()
    assert decode_header(reordered) == (path, rows, size)


def test_list_files_rejects_a_non_boolean_stats(metastore) -> None:
    from sargable.errors import MetastoreError

    table = new_table(metastore)
    for wrong in ("id", 1, None):
        with pytest.raises(MetastoreError, match="stats must be True, False or a collection of column names"):
            metastore.list_files(DB, table, stats=wrong)


@settings(max_examples=150)
@given(data=st.data())
def test_file_statistics_round_trip_for_every_type(data) -> None:
    """What `encode_file` writes, `decode_file` reads back equal, for every column type (NaN aside)."""
    from sargable.metastore.filecodec import decode_file
    from sargable.metastore.records import TableDefinition
    from strategies import data_types, values

    dtype = data.draw(data_types())
    drawn = data.draw(st.lists(values(dtype), min_size=1, max_size=5))
    stats = ColumnStats.from_values(drawn)
    table = TableDefinition(DB, "t", 1, (("c", dtype), ("d", dtype)), (), "/w")
    file = FileStats("/w/f.parquet", len(drawn), 10, columns={"c": stats, "d": stats})
    stored = encode_file(file, table)
    assert decode_file(stored, table) == file
    assert decode_file(stored, table, columns={"d"}) == dataclasses.replace(file, columns={"d": stats})
