"""`sgs.optimize` end to end: rows before == rows after (a multiset, on both metastore backends), a clustered table
stays sound for data skipping (NULLs and NaNs in the clustered columns), a concurrent append survives, of two
optimizes of one partition one wins and the other fails cleanly with no orphan files, files that need no rewrite
are left alone, and bad `cluster_by` columns are clear errors.

Spark usage is kept small: one session for the run, tables of a few hundred rows, files of a few KiB."""

from __future__ import annotations

import datetime as dt
import importlib
import json
import math
import os
from collections import Counter
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings

from sargable import spark as sgs
from sargable.errors import CommitConflictError, OptimizeError
from sargable.expr.evaluate import evaluate
from sargable.paths import canonical_file_path
from sargable.skipping import may_match
from strategies import pools_of, predicates

pytest_plugins = ["conftest_spark"]

optimize_module = importlib.import_module("sargable.spark.optimize")
"""The module (the package exports its function under the same name)."""

SCHEMA = "user_id bigint, amount double, event_time timestamp, country string, ds date"
SKIP_SCHEMA = [("user_id", "bigint"), ("amount", "double"), ("country", "string")]
TARGET = 6 * 1024
"""Target file size: small, so a table of a few hundred rows becomes several files."""


def _rows(start: int, count: int) -> list[tuple]:
    """Deterministic rows over 2 days, with NULLs and NaNs in the clustered columns."""
    out = []
    for i in range(start, start + count):
        user = None if i % 23 == 0 else (i * 7919) % 1000
        amount = math.nan if i % 31 == 0 else None if i % 29 == 0 else float((i * 104729) % 5000) / 10
        when = dt.datetime(2024, 1, 1) + dt.timedelta(seconds=(i * 86413) % 86400)
        out.append((user, amount, when, ["BR", "DE", "US", None][i % 4], dt.date(2024, 1, 1 + i % 2)))
    return out


def _append(spark: Any, ms: Any, table: str, start: int, count: int, files: int = 4) -> None:
    df = spark.createDataFrame(_rows(start, count), SCHEMA).repartition(files)
    sgs.write(df, table, partition_by=["ds"], metastore=ms, progress=False)


def _multiset(spark: Any, ms: Any, table: str) -> Counter:
    """The table's rows as a multiset (NaN made comparable)."""
    rows = sgs.read(spark, table, metastore=ms).select("user_id", "amount", "event_time", "country", "ds").collect()
    return Counter(tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row) for row in rows)


def _on_disk(location: str) -> set[str]:
    """Every Parquet file below the table's folder (staging included)."""
    return {
        canonical_file_path(os.path.join(root, name))
        for root, _, names in os.walk(location)
        for name in names
        if name.endswith(".parquet")
    }


def _accounted(ms: Any, table: str) -> set[str]:
    """The files the table lists and those its commits removed but keeps on disk for the retention."""
    handle = ms.table(table)
    return {canonical_file_path(f.path) for f in handle.files()} | {
        canonical_file_path(t.path) for t in handle.tombstones()
    }


def test_optimize_keeps_every_row_and_clustered_files_stay_sound(spark: Any, metastore: Any) -> None:
    table = "opt.rows"
    for index in range(3):
        _append(spark, metastore, table, index * 200, 200)
    before = _multiset(spark, metastore, table)
    files_before = {f.path for f in metastore.table(table).files()}
    clustered = sgs.optimize(
        spark, table, cluster_by=["user_id", "amount"], target_file_bytes=TARGET, metastore=metastore, progress=False
    )
    assert clustered.partitions == 2 and clustered.files_removed == len(files_before)
    assert _multiset(spark, metastore, table) == before
    after = metastore.table(table).files()
    assert not files_before & {f.path for f in after}
    assert {f.layout for f in after} == {"hilbert(user_id, amount)"}
    assert clustered.files_added == len(after) and sum(f.row_count for f in after) == sum(before.values())
    assert {canonical_file_path(t.path) for t in metastore.table(table).tombstones()} == {
        canonical_file_path(p) for p in files_before
    }
    assert _on_disk(metastore.table(table).location) == _accounted(metastore, table)

    again = sgs.optimize(
        spark, table, cluster_by=["user_id", "amount"], target_file_bytes=TARGET, metastore=metastore, progress=False
    )
    assert again.partitions == 0 and again.versions == () and metastore.table(table).files() == after

    files = [(f, _file_rows(f)) for f in after]
    _check_skipping_sound(files)


def _file_rows(file: Any) -> list[dict]:
    """A data file's rows as dicts of Python values (partition values from its entry)."""
    rows = pq.read_table(file.path, columns=[name for name, _ in SKIP_SCHEMA]).to_pylist()
    return [{**row, **(file.partition or {})} for row in rows]


def _check_skipping_sound(files: list[tuple[Any, list[dict]]]) -> None:
    """No file holding a row that matches a generated predicate on the clustered columns is skipped."""
    pools = pools_of(SKIP_SCHEMA, [row for _, rows in files for row in rows])
    checked = Counter()

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(predicates(SKIP_SCHEMA, pools=pools, max_leaves=3))
    def sound(predicate: Any) -> None:
        for file, rows in files:
            matches = any(evaluate(predicate, row) is True for row in rows)
            kept = may_match(predicate, file, SKIP_SCHEMA)
            assert kept or not matches, f"{file.path} was skipped but holds a row matching {predicate}"
            checked["skipped" if not kept else "kept"] += 1

    sound()
    assert checked["skipped"] > 0, "clustered files should let some generated filters skip files"


def test_files_that_need_no_rewrite_are_left_alone(spark: Any, spark_metastore: Any) -> None:
    table = "opt.alone"
    _append(spark, spark_metastore, table, 0, 400, files=1)
    one = {f.path for f in spark_metastore.table(table).files()}
    df = spark.createDataFrame([r for r in _rows(1000, 300) if r[-1] == dt.date(2024, 1, 1)], SCHEMA).repartition(5)
    sgs.write(df, table, metastore=spark_metastore, progress=False)
    before = _multiset(spark, spark_metastore, table)
    result = sgs.optimize(spark, table, target_file_bytes=TARGET, metastore=spark_metastore, progress=False)
    assert [p.partition for p in result.plan.rewrite.partitions] == ["ds=2024-01-01"]
    listed = {f.path for f in spark_metastore.table(table).files()}
    (entry,) = result.plan.rewrite.partitions
    assert {f.path for f in entry.keep} <= listed and not {f.path for f in entry.rewrite} & listed
    assert one - {f.path for f in entry.rewrite} <= listed, "the other day's file is untouched"
    assert _multiset(spark, spark_metastore, table) == before
    dry = sgs.optimize(spark, table, target_file_bytes=TARGET, metastore=spark_metastore, dry_run=True)
    assert dry.plan.rewrite.partitions == ()

    selected = sgs.optimize(
        spark, table, where="ds = '2024-01-02'", cluster_by="user_id", metastore=spark_metastore, progress=False
    )
    assert selected.partitions == 0, "a partition of one file in range is not clustered"


def test_a_task_writes_several_files_cut_as_planned(spark: Any, spark_metastore: Any) -> None:
    """The staging write puts several output files in a task (more files than the session has cores): each planned
    file is written, of similar size, straight into its partition folder, with every row; a table column named like
    the file-number column doesn't get in the way."""
    from pyspark.sql import functions as F

    table = "opt.several"
    for index in range(4):
        df = spark.createDataFrame(_rows(index * 500, 500), SCHEMA).withColumn("sargable_file", F.col("user_id") % 7)
        sgs.write(df.repartition(6), table, partition_by=["ds"], metastore=spark_metastore, progress=False)
    columns = ["user_id", "amount", "event_time", "country", "sargable_file", "ds"]
    rows = sgs.read(spark, table, metastore=spark_metastore).select(*columns).collect()
    before = Counter(tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row) for row in rows)
    planned = sgs.optimize(spark, table, target_file_bytes=TARGET, metastore=spark_metastore, dry_run=True).plan
    assert planned.rewrite.files_out > 2 * spark.sparkContext.defaultParallelism

    result = sgs.optimize(spark, table, target_file_bytes=TARGET, metastore=spark_metastore, progress=False)
    after = spark_metastore.table(table).files()
    assert result.files_added == len(after) == planned.rewrite.files_out
    rows = sgs.read(spark, table, metastore=spark_metastore).select(*columns).collect()
    assert Counter(tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row) for row in rows) == before
    location = spark_metastore.table(table).location
    for file in after:
        folder = os.path.relpath(os.path.dirname(file.path), location)
        assert folder == f"ds={file.partition['ds']}", file.path
    assert len({os.path.basename(f.path) for f in after}) == len(after)
    for day in {f.partition["ds"] for f in after}:
        sizes = [f.row_count for f in after if f.partition["ds"] == day]
        assert max(sizes) <= 2 * min(sizes), f"files of {day} are cut unevenly: {sizes}"
    assert _on_disk(location) == _accounted(spark_metastore, table)


def test_bad_cluster_by_is_a_clear_error(spark: Any, spark_metastore: Any) -> None:
    table = "opt.bad"
    _append(spark, spark_metastore, table, 0, 40, files=2)
    version = spark_metastore.table(table).version
    for columns, message in [
        (["nope"], "no such column; its data columns are user_id, amount, event_time, country"),
        (["ds"], "it is a partition key"),
        (["user_id", "USER_ID"], "named twice"),
    ]:
        with pytest.raises(OptimizeError, match=message):
            sgs.optimize(spark, table, cluster_by=columns, metastore=spark_metastore, progress=False)
    with pytest.raises(OptimizeError, match="unknown curve"):
        sgs.optimize(spark, table, cluster_by=["user_id"], curve="peano", metastore=spark_metastore)
    assert spark_metastore.table(table).version == version


def _during_stage(monkeypatch: Any, action: Any) -> None:
    """Run `action` once, right after optimize has staged its new files and before it commits."""
    original = optimize_module.stage
    done = []

    def stage(*args: Any, **kwargs: Any) -> Any:
        files = original(*args, **kwargs)
        if not done:
            done.append(True)
            action()
        return files

    monkeypatch.setattr(optimize_module, "stage", stage)


def test_a_concurrent_append_survives(spark: Any, spark_metastore: Any, monkeypatch: Any) -> None:
    table = "opt.append"
    for index in range(2):
        _append(spark, spark_metastore, table, index * 100, 100)
    before = _multiset(spark, spark_metastore, table)
    listed = len(spark_metastore.table(table).files())
    _during_stage(monkeypatch, lambda: _append(spark, spark_metastore, table, 5000, 50, files=1))
    result = sgs.optimize(spark, table, cluster_by=["user_id"], metastore=spark_metastore, progress=False)
    assert result.files_removed == listed
    expected = before + Counter(
        tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row) for row in _rows(5000, 50)
    )
    assert _multiset(spark, spark_metastore, table) == expected
    files = spark_metastore.table(table).files()
    assert sorted(f.layout or "" for f in files).count("") == 2, "the appended files are listed as written"


def test_two_optimizes_of_one_partition_one_wins(spark: Any, spark_metastore: Any, monkeypatch: Any) -> None:
    table = "opt.race"
    for index in range(2):
        _append(spark, spark_metastore, table, index * 100, 100)
    before = _multiset(spark, spark_metastore, table)
    won = []

    def rival() -> None:
        monkeypatch.undo()
        won.append(sgs.optimize(spark, table, where="ds = '2024-01-01'", metastore=spark_metastore, progress=False))

    _during_stage(monkeypatch, rival)
    with pytest.raises(CommitConflictError, match=r"lost a race in batch 1 .*another commit removed it.*run optimize"):
        sgs.optimize(spark, table, cluster_by=["user_id"], metastore=spark_metastore, progress=False)
    assert won and won[0].partitions == 1
    assert _multiset(spark, spark_metastore, table) == before
    location = spark_metastore.table(table).location
    assert _on_disk(location) == _accounted(spark_metastore, table), "the loser's files are deleted"
    staging = os.path.join(location, "_sargable_staging")
    assert not os.path.isdir(staging) or not os.listdir(staging)


def test_the_command_optimizes_and_describes(spark: Any, spark_metastore: Any, capsys: Any) -> None:
    from sargable.cli import main

    table = "opt.cli"
    _append(spark, spark_metastore, table, 0, 120)
    before = _multiset(spark, spark_metastore, table)
    listed = len(spark_metastore.table(table).files())
    assert main(["--metastore", spark_metastore.url, "optimize", table, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["files_removed"] == listed and result["files_added"] == 2 and len(result["versions"]) == 1
    assert result["retained"] == listed and result["deleted"] == 0
    assert _multiset(spark, spark_metastore, table) == before
    assert main(["--metastore", spark_metastore.url, "describe", table, "--json"]) == 0
    health = json.loads(capsys.readouterr().out)
    assert health["layouts"] == {"compacted": 2} and health["removed_files_retained"] == listed
