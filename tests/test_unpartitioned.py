"""Tables without partition keys are first-class: their files and statistics are committed (added, removed with
tombstones, replaced), counted in the table totals and skipped by scans, on both backends; their partition listings
are empty, as Hive's are.

The oracles are independent of sargable: a model of the table's files (a dict) for commits, and DuckDB evaluating a
filter row by row over every Parquet file for skipping.
"""

from __future__ import annotations

import itertools
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sargable as sg
from sargable.cli import main
from sargable.errors import AlreadyExistsError, CommitConflictError, MetastoreError, OptimizeError
from sargable.expr import render_sql
from sargable.maintenance import UNPARTITIONED, plan_optimize
from sargable.metastore import Metastore
from sargable.scan import KeySet
from sargable.skipping.table import arrow_type
from sargable.stats import ColumnStats, FileStats
from sargable.types import parse_type
from strategies import LEAF_KINDS, pools_of, predicates, schemas, tables

FIXTURES = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
SKIPPED_TYPES = ("int", "bigint", "double", "string", "date", "boolean", "decimal(10,2)", "timestamp")
"""Column types of the skipping property (whose Parquet statistics sargable reads and DuckDB compares as sargable
does: no float32, whose literals DuckDB would compare at another precision)."""
SKIPPED_KINDS = LEAF_KINDS - {"func"}
"""Predicate leaves but functions, which engines define differently (DuckDB's `abs` overflows where Spark's wraps)."""
_names = itertools.count()


def _table(ms: Metastore, columns: list[tuple[str, str]], **kwargs: Any) -> sg.Table:
    """A new table without partition keys in `db`, named uniquely (hypothesis runs many examples on one metastore)."""
    ms.create_database("db", if_not_exists=True)
    name = f"t{next(_names)}"
    ms.create_table("db", name, columns, [], **kwargs)
    return ms.table("db", name)


def _file(path: str, rows: int, low: int, high: int) -> FileStats:
    return FileStats(path=path, row_count=rows, size_bytes=100 + rows, columns={"x": ColumnStats(low, high, 0)})


# -- commits against a model ---------------------------------------------------------------------------------------

_operations = st.lists(
    st.tuples(
        st.sampled_from(["add", "remove", "replace", "overwrite", "stale", "clash"]),
        st.lists(st.integers(0, 30), max_size=4, unique=True),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=25, deadline=None, suppress_health_check=FIXTURES)
@given(operations=_operations)
def test_commits_keep_the_files_totals_and_tombstones_of_a_model(metastore: Metastore, operations: list) -> None:
    """Each commit (add, remove by path, replace the one implicit partition, overwrite by paths at a version) leaves
    exactly the model's files with their statistics, the model's totals, and a tombstone per file removed by path;
    a commit that fails (a stale version, a path added twice) changes nothing."""
    table = _table(metastore, [("x", "bigint")])
    model: dict[str, FileStats] = {}
    tombstoned: set[str] = set()
    serial = itertools.count()
    for kind, numbers in operations:
        new = [_file(f"{table.location}/f{next(serial)}.parquet", n + 1, n, n + 5) for n in numbers]
        current = table.refresh()
        if kind == "add":
            current.commit(add_files=new)
            model.update({f.path: f for f in new})
        elif kind == "remove":
            gone = sorted(model)[: len(numbers)]
            current.commit(remove_files=gone)
            tombstoned.update(gone)
            for path in gone:
                del model[path]
        elif kind == "replace":
            current.commit(replace_partitions=[{}], add_files=new)
            model = {f.path: f for f in new}
        elif kind == "overwrite":
            current.commit(remove_files=list(model), add_files=new, expected_version=current.version)
            tombstoned.update(model)
            model = {f.path: f for f in new}
        elif kind == "stale":
            current.commit(add_files=new[:1])
            model.update({f.path: f for f in new[:1]})
            with pytest.raises(CommitConflictError):
                current.commit(remove_files=list(model), expected_version=current.version)
        else:  # a path the table lists already, else one given twice: nothing is committed
            duplicate = _file(next(iter(model), f"{table.location}/twice.parquet"), 1, 0, 0)
            with pytest.raises(AlreadyExistsError):
                current.commit(add_files=[*new, duplicate, *([] if duplicate.path in model else [duplicate])])
        after = table.refresh()
        files = after.files()
        assert {f.path: (f.row_count, f.size_bytes, f.columns["x"]) for f in files} == {
            p: (f.row_count, f.size_bytes, f.columns["x"]) for p, f in model.items()
        }
        assert all(f.partition == {} for f in files)
        stats = after.stats()
        assert stats == sg.TableStats(
            0, len(model), sum(f.size_bytes for f in model.values()), sum(f.row_count for f in model.values())
        )
        assert {t.path for t in after.tombstones()} == tombstoned
        assert all(after.has_file(p) for p in model) and not any(after.has_file(p) for p in tombstoned - set(model))


def test_a_file_with_partition_values_is_refused_and_nothing_is_written(metastore: Metastore) -> None:
    table = _table(metastore, [("x", "bigint")])
    table.commit(add_files=[_file("a.parquet", 1, 0, 0)])
    wrong = FileStats(path="b.parquet", row_count=1, size_bytes=1, partition={"x": 1})
    with pytest.raises(MetastoreError, match="no partition keys"):
        table.commit(add_files=[_file("c.parquet", 1, 0, 0), wrong])
    with pytest.raises(MetastoreError, match="not partitioned"):
        table.commit(add_partitions=[{}])
    with pytest.raises(MetastoreError, match="no partition keys"):
        table.commit(replace_partitions=[{"x": 1}])
    after = table.refresh()
    assert [Path(f.path).name for f in after.files()] == ["a.parquet"] and after.version == table.version + 1


def test_partition_listings_are_empty_and_a_partition_filter_is_a_clear_error(metastore: Metastore) -> None:
    """Before, every listing of such a table failed an `assert layout.codec is not None` (the server's ALTER TABLE
    of such a table, issue 27)."""
    table = _table(metastore, [("x", "bigint")])
    table.commit(add_files=[_file("a.parquet", 3, 1, 9)])
    assert table.partitions() == [] and list(table.iter_partitions()) == [] and table.partition_names() == []
    assert table.count_partitions() == 0 and list(table.partition_rows()) == []
    assert table.partitions_arrow().num_rows == 0
    assert metastore.list_partition_names(table.database, table.name) == []
    for text in ("true", "x = 1"):
        with pytest.raises(MetastoreError, match=r"no partition keys|not a partition key"):
            table.partitions(text)
    assert [Path(f.path).name for f in table.files(table.partitions())] == [], "no partition: no file"


# -- scans: skipping against DuckDB over the files ---------------------------------------------------------------


def _write(path: str, schema: list[tuple[str, str]], rows: list[dict[str, Any]]) -> None:
    arrays = {name: pa.array([r[name] for r in rows], arrow_type(parse_type(t))) for name, t in schema}
    pq.write_table(pa.table(arrays), path)


def _matching(con: duckdb.DuckDBPyConnection, path: str, where: str) -> int:
    return con.execute(f"SELECT count(*) FROM read_parquet('{path}') WHERE {where}").fetchone()[0]  # type: ignore[index]


@settings(max_examples=40, deadline=None, suppress_health_check=FIXTURES)
@given(data=st.data())
def test_a_scan_keeps_every_file_holding_a_matching_row(metastore: Metastore, data: st.DataObject) -> None:
    """Files of an unpartitioned table, written as Parquet and registered with their footer statistics: a scan
    keeps every file in which DuckDB finds a row where the filter is TRUE, and reports the table's totals."""
    schema = data.draw(schemas(SKIPPED_TYPES, max_size=3))
    parts = data.draw(st.lists(tables(schema, min_size=1, max_size=6), min_size=1, max_size=5))
    pools = pools_of(schema, [row for part in parts for row in part])
    where = data.draw(predicates(schema, pools=pools, max_leaves=4, kinds=SKIPPED_KINDS))
    table = _table(metastore, schema)
    con = duckdb.connect()
    with tempfile.TemporaryDirectory() as folder:
        files = []
        for i, rows in enumerate(parts):
            path = os.path.join(folder, f"part-{i}.parquet")
            _write(path, schema, rows)
            files.append(sg.stats_from_parquet(path, schema))
        table.commit(add_files=files)
        scan = table.refresh().scan(where)
        sql = render_sql(where, "duckdb")
        matching = {f.path for f in files if _matching(con, f.path, sql) > 0}
    kept = {f.path for f in scan.files}
    assert matching <= kept, f"skipped a file with a matching row: {sql}"
    assert kept <= {f.path for f in files}
    report = scan.report
    assert (report.files_total, report.partitions_total, report.partitions_selected) == (len(files), 0, 0)
    assert report.bytes_total == sum(f.size_bytes for f in files) and report.partition_filter is None


def test_a_scan_skips_files_by_their_statistics(metastore: Metastore) -> None:
    table = _table(metastore, [("x", "bigint"), ("s", "string")])
    table.commit(add_files=[_file(f"f{i}.parquet", 10, 10 * i, 10 * i + 9) for i in range(5)])
    scan = table.refresh().scan("x > 25")
    assert [Path(f.path).name for f in scan.files] == ["f2.parquet", "f3.parquet", "f4.parquet"]
    assert scan.residual is not None and scan.residual.text == "x > 25", "skipping is inclusive: the filter stays"
    keyed = table.refresh().scan(key_sets=[KeySet("x", values=frozenset({3, 41}))])
    assert [Path(f.path).name for f in keyed.files] == ["f0.parquet", "f4.parquet"]
    assert table.refresh().scan(key_sets=[KeySet("x", values=frozenset())]).files == ()


# -- tables filled from folders (`sargable serve`) -----------------------------------------------------------------


def _parquet(path: Path, values: list[int]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"x": pa.array(values, pa.int64())}), path)
    return str(path)


def test_a_table_filled_from_folders_lists_its_location_until_files_are_registered(
    metastore: Metastore, tmp_path: Path
) -> None:
    location = tmp_path / "plain"
    table = _table(metastore, [("x", "bigint")], location=str(location), files_from_folders=True)
    listed = [_parquet(location / "part-0.parquet", [1, 2]), _parquet(location / "part-1.parquet", [3])]
    assert [f.path for f in table.scan("x > 2").files] == listed[1:]
    assert table.scan(key_sets=[KeySet("x", values=frozenset())]).files == (), "an empty key set reads nothing"
    registered = sg.stats_from_parquet(_parquet(location / "sub" / "r.parquet", [7]), [("x", "bigint")])
    table.commit(add_files=[registered])
    scan = table.refresh().scan(None)
    assert [f.path for f in scan.files] == [registered.path], "registered files replace the folder's listing"
    assert scan.report.notes == ()


# -- optimize's plan and the command line ------------------------------------------------------------------------


def test_optimize_plans_the_whole_table_and_refuses_a_where(metastore: Metastore) -> None:
    table = _table(metastore, [("x", "bigint")])
    table.commit(add_files=[_file(f"f{i}.parquet", 10, i, i) for i in range(4)])
    plan = plan_optimize(metastore, table.qualified_name, cluster_by=["x"])
    (entry,) = plan.rewrite.partitions
    assert entry.partition == UNPARTITIONED and len(entry.rewrite) == 4
    with pytest.raises(OptimizeError, match="no partition keys"):
        plan_optimize(metastore, table.qualified_name, "x > 1")


def test_tables_explain_and_describe_show_the_files(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    with Metastore.open(url, warehouse=tmp_path) as ms:
        table = _table(ms, [("x", "bigint")])
        table.commit(add_files=[_file(f"f{i}.parquet", 10, 10 * i, 10 * i + 9) for i in range(3)])
    assert main(["--metastore", url, "tables", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["partition_keys"], row["partitions"], row["files"], row["rows"]) == ("", 0, 3, 30)
    assert main(["--metastore", url, "explain", table.qualified_name, "x >= 15", "--json"]) == 0
    explained = json.loads(capsys.readouterr().out)
    assert (explained["files_selected"], explained["files_total"]) == (2, 3)
    assert main(["--metastore", url, "describe", table.qualified_name, "--json"]) == 0
    described = json.loads(capsys.readouterr().out)
    assert (described["files"], described["partitions"]) == (3, 1)
