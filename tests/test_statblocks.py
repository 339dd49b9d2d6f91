"""Statistics blocks (`sargable.metastore.statblocks`, `blockstate`): a scan that reads them selects exactly the
files the per-file path selects (differential), never drops a file holding a matching row (soundness, against the
rows themselves), through files added and removed across commits, replaced partitions, added and widened columns
and compaction, on both backends; a clustered table's equality reads one block; a small commit loads no pyarrow.

The blocks are made tiny (`BLOCK_ROWS = 3`) so that a few files make many blocks, merges and compactions, and files
go to the blocks at once (`PENDING_MAX = 1`) unless a test draws otherwise, decoded two at a time.
"""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from itertools import count
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sargable as sg
from sargable import scan as scan_module
from sargable.expr import bind_filter
from sargable.expr.evaluate import evaluate
from sargable.metastore import blockstate, statblocks
from sargable.metastore.layout import table_prefix
from sargable.metastore.schema import BLOCKS, CATALOG, SCHEMA_KEY, blocks_state_key, key_range
from sargable.stats import ColumnStats, FileStats
from sargable.types import float32, parse_type
from strategies import STAT_MODES, degraded_stats, pools_of, predicates, tables

SCALE = float(os.environ.get("SARGABLE_FUZZ_SCALE", "1"))
TYPES = ("int", "bigint", "double", "float", "string", "decimal(10,2)", "date")
FLOAT_MAX = float(np.finfo(np.float32).max)
_tables = count()


@pytest.fixture(scope="module", autouse=True)
def _tiny_blocks() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(blockstate, "BLOCK_ROWS", 3)
        patch.setattr(blockstate, "PENDING_MAX", 1)
        patch.setattr(statblocks, "DECODE_CHUNK", 2)
        yield


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[sg.Metastore]:
    from metastore_fixtures import fresh_url

    root = tmp_path_factory.mktemp("statblocks")
    postgres = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    ms = sg.Metastore.open(fresh_url(request.param, root, postgres), warehouse=root / "warehouse")
    ms.create_database("d")
    yield ms
    ms.close()


def _plan(table: sg.Table, where: Any, *, blocks: bool) -> sg.Scan:
    """The scan through the blocks (whenever they can answer) or through every file's record."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scan_module, "BLOCKS_MIN_FILES", 0 if blocks else math.inf)
        return table.scan(where)


# -- generated histories -------------------------------------------------------------------------------------------


def _single(value: Any) -> Any:
    """A float column's value as it stores it (single precision)."""
    return value if value is None or math.isnan(value) or math.isinf(value) else float32(value)


class History:
    """A table's files with the rows each holds, as the commits left them."""

    def __init__(self, ms: sg.Metastore, schema: list[tuple[str, str]]) -> None:
        self.name = f"t{next(_tables)}"
        ms.create_table("d", self.name, schema, [("p", "int")])
        self.ms = ms
        self.schema = dict(schema)
        self.rows: dict[str, list[dict[str, Any]]] = {}
        self.partition: dict[str, int] = {}
        self.serial = count()

    @property
    def table(self) -> sg.Table:
        return self.ms.table("d", self.name)

    def new_files(self, draw: Any, reuse: list[tuple[str, int]] = ()) -> list[FileStats]:
        """New files of random rows and statistics; `reuse` gives (path, partition) of some (a removed file's key
        listed again)."""
        names = [(f"f{next(self.serial)}.parquet", draw(st.integers(0, 2))) for _ in range(draw(st.integers(0, 4)))]
        out = []
        for path, partition in [*reuse, *names]:
            columns = list(self.schema.items())
            rows = draw(tables(columns, max_size=5))
            for row in rows:
                for name, text in columns:
                    if text == "float":
                        row[name] = _single(row[name])
            stats = {}
            for name, text in columns:
                exact = ColumnStats.from_values([row[name] for row in rows])
                mode = draw(st.sampled_from(STAT_MODES))
                degraded = degraded_stats(exact, mode, parse_type(text).is_string, draw(st.integers(0, 3)))
                if degraded is not None:
                    stats[name] = degraded
            out.append(FileStats(path, len(rows), 10, stats, {"p": partition}))
            self.rows[path] = [{**row, "p": partition} for row in rows]
            self.partition[path] = partition
        return out

    def step(self, draw: Any) -> None:
        kind = draw(st.sampled_from(["add", "add", "remove", "remove", "replace", "add_column", "widen"]))
        table = self.table
        stored = {f.path.rsplit("/", 1)[-1]: f.path for f in table.files(stats=False)}
        if kind == "add":
            table.commit(add_files=self.new_files(draw))
        elif kind == "remove" and stored:
            gone = draw(st.lists(st.sampled_from(sorted(stored)), unique=True, max_size=len(stored)))
            again = [(p, self.partition[p]) for p in gone if draw(st.booleans())]  # the same key, new statistics
            for path in gone:
                del self.rows[path]
            table.commit(remove_files=[stored[p] for p in gone], add_files=self.new_files(draw, again))
        elif kind == "replace":
            partition = draw(st.integers(0, 2))
            drawn = self.new_files(draw)
            added = [f for f in drawn if f.partition == {"p": partition}]
            table.commit(replace_partitions=[{"p": partition}], add_files=added)
            kept = {f.path for f in added}
            for path in [f.path for f in drawn if f.path not in kept]:
                del self.rows[path]
            for path in [p for p in self.rows if self.partition[p] == partition and p not in kept]:
                del self.rows[path]
        elif kind == "add_column":
            name = f"n{len(self.schema)}"
            dtype = draw(st.sampled_from(["int", "string", "double"]))
            table.add_columns([(name, dtype)])
            self.schema[name] = dtype
            for rows in self.rows.values():
                for row in rows:
                    row[name] = None
        else:
            narrow = [n for n, t in self.schema.items() if t in ("int", "float")]
            if narrow:
                name = draw(st.sampled_from(narrow))
                wider = "bigint" if self.schema[name] == "int" else "double"
                table.widen(name, wider)
                self.schema[name] = wider

    def pools(self) -> dict[str, list[Any]]:
        """Per column the values the files hold (and, for floats, each value's shortest single-precision text read
        as a double: what a file written before `float -> double` reads its bounds as)."""
        schema = [*self.schema.items(), ("p", "int")]
        pools = pools_of(schema, [row for rows in self.rows.values() for row in rows])
        for name, text in self.schema.items():
            if text in ("float", "double"):
                finite = [v for v in pools[name] if math.isfinite(v) and abs(v) <= FLOAT_MAX]
                pools[name] += [float(str(np.float32(v))) for v in finite]
        return pools


LEAVES = frozenset({"compare", "in", "between", "is_null", "like"})


def _check(table: sg.Table, history: History, predicate: Any) -> None:
    """The block path selects what the per-file path does, and keeps every file holding a matching row."""
    by_file = _plan(table, predicate, blocks=False)
    by_blocks = _plan(table, predicate, blocks=True)
    assert [f.path for f in by_blocks.files] == [f.path for f in by_file.files]
    assert by_blocks.report.files_selected == by_file.report.files_selected
    assert by_blocks.report.bytes_selected == by_file.report.bytes_selected
    kept = {f.path.rsplit("/", 1)[-1] for f in by_blocks.files}
    for path, rows in history.rows.items():
        if any(evaluate(predicate, row) is True for row in rows):
            assert path in kept, f"{path} holds a row where {predicate} is TRUE, but the scan dropped it"


@settings(
    max_examples=max(1, int(30 * SCALE)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_blocks_select_what_the_per_file_path_selects_and_drop_no_matching_file(
    backend: sg.Metastore, data: st.DataObject
) -> None:
    columns = data.draw(st.lists(st.sampled_from(TYPES), min_size=1, max_size=3))
    history = History(backend, [(f"c{i}", t) for i, t in enumerate(columns)])
    with pytest.MonkeyPatch.context() as patch:  # compacting at once, or after dead marks of several commits
        patch.setattr(blockstate, "COMPACT_FRACTION", data.draw(st.sampled_from([1, 4])))
        patch.setattr(blockstate, "PENDING_MAX", data.draw(st.sampled_from([1, 3, 100])))
        for _ in range(data.draw(st.integers(1, 6))):
            history.step(data.draw)
    table = history.table
    schema = [*history.schema.items(), ("p", "int")]
    pools = history.pools()
    for _ in range(6):
        leaves = data.draw(st.sampled_from([1, 1, 4]))
        _check(table, history, data.draw(predicates(schema, pools=pools, max_leaves=leaves, kinds=LEAVES)))


@pytest.fixture(scope="module")
def memory() -> Iterator[sg.Metastore]:
    with sg.Metastore.open("sqlite://", warehouse="/nonexistent/warehouse") as ms:
        ms.create_database("d")
        yield ms


@settings(
    max_examples=max(1, int(80 * SCALE)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_block_summaries_hold_their_files(memory: sg.Metastore, data: st.DataObject) -> None:
    """One column, one or two commits of a few files (blocks of three, merged): what a block's directory row says
    must hold every file of the block, truncated string bounds, NULL-only and empty files included."""
    dtype = data.draw(st.sampled_from(["string", "string", "double", "float", "int", "date"]))
    history = History(memory, [("c", dtype)])
    for _ in range(data.draw(st.integers(1, 2))):
        history.table.commit(add_files=history.new_files(data.draw))
    if dtype == "float" and data.draw(st.booleans()):
        history.table.widen("c", "double")
        history.schema["c"] = "double"
    schema = [*history.schema.items(), ("p", "int")]
    pools = history.pools()
    for _ in range(4):
        _check(history.table, history, data.draw(predicates(schema, pools=pools, max_leaves=1, kinds=LEAVES)))


# -- named cases ---------------------------------------------------------------------------------------------------


def _blocks_read(ms: sg.Metastore, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts, per multi-get of statistics blocks, of the blocks it read (directories excluded)."""
    reads: list[int] = []
    original = ms.store.multi_get

    def counting(keyspace: str, keys: Any) -> dict[bytes, bytes]:
        keys = list(keys)
        if keyspace == BLOCKS:
            blocks = [k for k in keys if k[8:9] == b"b"]
            if blocks:
                reads.append(len(blocks))
        return original(keyspace, keys)

    monkeypatch.setattr(ms.store, "multi_get", counting)
    return reads


def _clustered(metastore: sg.Metastore, files: int) -> sg.Table:
    metastore.create_database("d", if_not_exists=True)
    metastore.create_table("d", "c", [("user_id", "bigint")], [("p", "int")])
    order = list(range(files))
    random.Random(7).shuffle(order)
    table = metastore.table("d.c")
    for start in range(0, files, 5):  # commits of a few files each, in no order of user_id
        table.commit(
            add_files=[
                FileStats(f"f{i}.parquet", 10, 10, {"user_id": ColumnStats(i * 10, i * 10 + 9, 0)}, {"p": i % 3})
                for i in order[start : start + 5]
            ]
        )
    return table


def test_a_rebuilt_clustered_table_reads_one_block_for_an_equality(
    metastore: sg.Metastore, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _clustered(metastore, 60)
    table.build_stats_blocks()
    reads = _blocks_read(metastore, monkeypatch)
    found = _plan(table.refresh(), "user_id = 255", blocks=True)
    assert [f.path.rsplit("/", 1)[-1] for f in found.files] == ["f25.parquet"]
    assert reads == [1]


def test_removing_files_compacts_the_blocks_sorted_by_min(
    metastore: sg.Metastore, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _clustered(metastore, 60)
    paths = sorted(f.path for f in table.files(stats=False))
    table.commit(remove_files=paths[:20])  # a third of the rows dead: compacted in this commit
    definition = table.refresh().definition
    state = blockstate.read_state(metastore.store, definition)
    assert state is not None and (state.live, state.dead) == (40, 0)
    reads = _blocks_read(metastore, monkeypatch)
    remaining = {int(p.rsplit("/f", 1)[1].split(".")[0]) for p in paths[20:]}
    wanted = min(remaining)
    found = _plan(table.refresh(), f"user_id = {wanted * 10 + 3}", blocks=True)
    assert [f.path.rsplit("/", 1)[-1] for f in found.files] == [f"f{wanted}.parquet"]
    assert reads == [1]


def test_a_table_without_blocks_takes_the_per_file_path_until_they_are_built(metastore: sg.Metastore) -> None:
    table = _clustered(metastore, 12)
    metastore.store.delete_range(BLOCKS, *key_range(table_prefix(table.table_id)))  # as before blocks existed
    bound = bind_filter("user_id = 35", table.schema)
    assert table.files_matching(bound) is None
    table.commit(add_files=[FileStats("g.parquet", 1, 1, {"user_id": ColumnStats(35, 35, 0)}, {"p": 0})])
    assert table.refresh().files_matching(bound) is None  # commits don't start blocks of a table with files
    expected = [f.path for f in _plan(table.refresh(), "user_id = 35", blocks=False).files]
    table.build_stats_blocks()
    matching = table.refresh().files_matching(bound)
    assert matching is not None and [f.path for f in matching] == expected
    assert [f.path for f in _plan(table.refresh(), "user_id = 35", blocks=True).files] == expected


def test_an_older_store_gains_the_blocks_keyspace_on_open(metastore_url: str, tmp_path: Any) -> None:
    with sg.Metastore.open(metastore_url, warehouse=tmp_path) as ms:
        ms.store.drop_keyspace(BLOCKS)
        with ms.store.transaction():
            ms.store.put(CATALOG, SCHEMA_KEY, (1).to_bytes(2, "big") + ms.store.get(CATALOG, SCHEMA_KEY)[2:])
        store_id = ms.store_id
    with sg.Metastore.open(metastore_url, warehouse=tmp_path) as ms:
        assert BLOCKS in ms.store.keyspaces()
        assert ms.store_id == store_id
        assert int.from_bytes(ms.store.get(CATALOG, SCHEMA_KEY)[:2], "big") == 2
        ms.create_database("d")
        ms.create_table("d", "t", [("x", "int")], [])
        ms.table("d.t").commit(add_files=[FileStats("a.parquet", 1, 1, {"x": ColumnStats(1, 1, 0)})])
        assert ms.store.get(BLOCKS, blocks_state_key(ms.table("d.t").table_id)) is not None


def _one_file(table: sg.Table, path: str, stats: ColumnStats, partition: int = 0) -> FileStats:
    return FileStats(path, 5, 10, {"c": stats}, {"p": partition})


def _same(table: sg.Table, where: str) -> list[str]:
    """The files both paths select (asserted equal), by name."""
    by_file = [f.path.rsplit("/", 1)[-1] for f in _plan(table.refresh(), where, blocks=False).files]
    by_blocks = [f.path.rsplit("/", 1)[-1] for f in _plan(table.refresh(), where, blocks=True).files]
    assert by_blocks == by_file
    return by_blocks


def test_a_truncated_string_max_widens_its_block_to_the_prefix_successor(metastore: sg.Metastore) -> None:
    metastore.create_database("d")
    metastore.create_table("d", "s", [("c", "string")], [("p", "int")])
    table = metastore.table("d.s")
    table.commit(
        add_files=[
            _one_file(table, "cut.parquet", ColumnStats("a", "a", 0, max_exact=False)),  # values up to "a\uffff..."
            _one_file(table, "ab.parquet", ColumnStats("ab", "ab", 0)),
        ]
    )
    assert _same(table, "c = 'az'") == ["cut.parquet"]
    table.commit(add_files=[_one_file(table, "b.parquet", ColumnStats("b", "b", 0))])
    assert _same(table, "c > 'ac'") == ["b.parquet", "cut.parquet"]


def test_bounds_of_a_float_widened_to_double_read_as_the_per_file_path_reads_them(metastore: sg.Metastore) -> None:
    metastore.create_database("d")
    metastore.create_table("d", "f", [("c", "float")], [("p", "int")])
    table = metastore.table("d.f")
    single = float32(0.1)  # 0.10000000149011612, written as "0.1": read back as 0.1 once the column is a double
    table.commit(add_files=[_one_file(table, "x.parquet", ColumnStats(single, single, 0, 0, frozenset({single})))])
    table.widen("c", "double")
    assert _same(table, "c = 0.1") == ["x.parquet"]
    assert _same(table, f"c = {single!r}") == ["x.parquet"]


def test_a_file_removed_and_listed_again_in_one_commit_survives_compaction(metastore: sg.Metastore) -> None:
    metastore.create_database("d")
    metastore.create_table("d", "r", [("c", "int")], [("p", "int")])
    table = metastore.table("d.r")
    table.commit(add_files=[_one_file(table, f"f{i}.parquet", ColumnStats(i, i, 0)) for i in range(8)])
    table.commit(
        remove_files=[table.files(stats=False)[0].path],
        add_files=[_one_file(table, "f0.parquet", ColumnStats(100, 100, 0))],  # the same key, other statistics
    )
    assert _same(table, "c = 100") == ["f0.parquet"]
    table.refresh().commit(remove_files=[f.path for f in table.refresh().files(stats=False)][4:])  # compacts
    state = blockstate.read_state(metastore.store, table.refresh().definition)
    assert state is not None and state.dead == 0
    assert _same(table, "c = 100") == ["f0.parquet"]
    assert _same(table, "c = 0") == []


def test_a_small_commit_loads_no_pyarrow(tmp_path: Any) -> None:
    code = (
        "import sys, sargable as sg\n"
        "with sg.Metastore.open(sys.argv[1], warehouse=sys.argv[2]) as ms:\n"
        "    ms.create_database('d')\n"
        "    ms.create_table('d', 't', [('x', 'int')], [('p', 'int')])\n"
        "    for i in range(3):\n"
        "        ms.table('d.t').commit(add_files=[sg.FileStats(f'{i}.parquet', 1, 1, {'x': sg.ColumnStats(i, i, 0)},"
        " {'p': i})])\n"
        "    ms.table('d.t').commit(remove_files=[ms.table('d.t').files(stats=False)[0].path])\n"
        "print('pyarrow' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, f"sqlite:///{tmp_path / 'm.db'}", str(tmp_path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_partitions_of_nan_and_signed_zero_select_their_files_through_the_blocks(metastore: sg.Metastore) -> None:
    metastore.create_database("d")
    metastore.create_table("d", "z", [("c", "int")], [("p", "double")])
    table = metastore.table("d.z")
    values = [math.nan, -0.0, 0.0, 1.5]
    table.commit(
        add_files=[
            FileStats(f"f{i}.parquet", 5, 10, {"c": ColumnStats(i, i + 10, 0)}, {"p": v}) for i, v in enumerate(values)
        ]
    )
    assert _same(table, "p = 'NaN' and c = 3") == ["f0.parquet"]
    assert sorted(_same(table, "p = 0 and c >= 0")) == ["f1.parquet", "f2.parquet"]
    assert _same(table, "p > 1 and c = 12") == ["f3.parquet"]


def test_statistics_without_an_arrow_form_leave_their_column_to_the_per_file_path(metastore: sg.Metastore) -> None:
    metastore.create_database("d")
    metastore.create_table("d", "u", [("c", "string"), ("n", "int")], [("p", "int")])
    table = metastore.table("d.u")
    lone = "\ud800"  # a lone surrogate: a Python string with no UTF-8 form, so no Arrow string
    table.commit(
        add_files=[
            FileStats("odd.parquet", 5, 10, {"c": ColumnStats(lone, lone, 0), "n": ColumnStats(1, 1, 0)}, {"p": 0}),
            FileStats("ok.parquet", 5, 10, {"c": ColumnStats("a", "b", 0), "n": ColumnStats(2, 2, 0)}, {"p": 0}),
        ]
    )
    schema = table.refresh().schema
    assert table.refresh().files_matching(bind_filter("c = 'a'", schema)) is None
    for blocks in (False, True):  # the per-file step can't lay them out either: the same clear error both ways
        with pytest.raises(sg.SargableError, match="surrogates"):
            _plan(table.refresh(), "c = 'a'", blocks=blocks)
    assert table.refresh().files_matching(bind_filter("n = 1", schema)) is not None  # the other column keeps them
    assert _same(table, "n = 1") == ["odd.parquet"]
    table.refresh().commit(add_files=[FileStats("more.parquet", 1, 1, {"c": ColumnStats("a", "a", 0)}, {"p": 1})])
    assert table.refresh().files_matching(bind_filter("c = 'a'", schema)) is None  # given up for good
