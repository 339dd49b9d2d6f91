"""Metadata-only ALTER TABLE (issues 26 row 2, 27 rows 1-2 and item 2): through the metastore, the server's Handler
in process, and a Thrift client of `sargable serve`. An ALTER never re-creates a table: its tombstones, files,
statistics, indexes and partitions stay; a managed table's rename moves its folder as Hive does."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sargable as sg
from hms_server import SargableServe, thrift_client
from metastore_fixtures import fresh_url
from sargable.metastore import Metastore

pytest.importorskip("pymetastore")
from pymetastore.hive_metastore import ttypes

from sargable.hms.catalog import Catalog
from sargable.hms.handler import Handler
from sargable.hms.pool import CatalogPool
from sargable.vacuum import vacuum


def _sd(location: str | None, cols) -> ttypes.StorageDescriptor:
    return ttypes.StorageDescriptor(
        cols=[ttypes.FieldSchema(n, t, None) for n, t in cols],
        location=location,
        inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
        serdeInfo=ttypes.SerDeInfo(None, "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe", {}),
        numBuckets=-1,
    )


def _table(db, name, location, keys=(), cols=(("x", "int"),), kind="MANAGED_TABLE", params=None) -> ttypes.Table:
    return ttypes.Table(
        tableName=name,
        dbName=db,
        owner="tester",
        sd=_sd(location, cols),
        partitionKeys=[ttypes.FieldSchema(k, t, None) for k, t in keys],
        parameters=dict(params or {}),
        tableType=kind,
    )


@pytest.fixture
def handler(metastore_url, tmp_path):
    pool = CatalogPool(lambda: Catalog(Metastore.open(metastore_url, warehouse=tmp_path / "warehouse")), 1)
    handler = Handler(pool)
    yield handler
    handler.end_call()
    pool.close()


def _call(handler: Handler, method: str, *args):
    try:
        return getattr(handler, method)(*args)
    finally:
        handler.end_call()


def _everything(ms: Metastore, db: str, name: str) -> dict:
    """What an ALTER of the definition must keep, by value."""
    table = ms.table(db, name)
    return {
        "id": table.table_id,
        "partitions": [(p.values, p.location, p.parameters) for p in table.partitions()]
        if table.partition_keys
        else [],
        "files": [(f.path, f.row_count, f.size_bytes, f.columns, f.partition) for f in table.files()],
        "tombstones": [(t.path, t.removed_at, t.version) for t in table.tombstones()],
        "stats": table.stats(),
        "indexes": table.indexes,
    }


def _stats(x: int) -> dict:
    return {"x": sg.ColumnStats(min=x, max=x + 9, null_count=0)}


# ---------------------------------------------------------------------------------------- issue 26 row 2


def test_an_analyze_alter_keeps_tombstones_files_statistics_and_indexes(handler, metastore_url, tmp_path):
    """Spark's ANALYZE / MSCK REPAIR send alter_table with new parameters: the table used to be re-created, and the
    files a commit had removed lost their tombstones (their retention)."""
    root = tmp_path / "d.db"
    _call(handler, "create_database", ttypes.Database(name="d", locationUri=f"file:{root}"))
    _call(handler, "create_table", _table("d", "t", f"file:{root}/t", keys=(("ds", "string"), ("hr", "int"))))
    with Metastore.open(metastore_url) as ms:
        files = [
            sg.FileStats(
                f"{root}/t/ds=a/hr={h}/f{h}.parquet", 10 + h, 100, columns=_stats(h), partition={"ds": "a", "hr": h}
            )
            for h in range(4)
        ]
        ms.commit("d", "t", add_files=files)
        ms.commit("d", "t", remove_files=[files[0].path])
        before = _everything(ms, "d", "t")
    assert before["tombstones"] and before["indexes"] == ("hr",)
    new = _decoded(_call(handler, "get_table", "d", "t"))
    new.parameters = {**new.parameters, "numRows": "46", "COLUMN_STATS_ACCURATE": "true"}
    _call(handler, "alter_table", "d", "t", new)
    with Metastore.open(metastore_url) as ms:
        after = _everything(ms, "d", "t")
        assert after == {**before, "stats": after["stats"]} and after["stats"] == before["stats"]
        assert ms.get_table("d", "t").properties["numRows"] == "46"


def test_after_an_analyze_alter_vacuum_keeps_removed_files_for_their_retention(handler, metastore_url, tmp_path):
    """The row's symptom: files a commit removed lost their retention, and `vacuum` listed them as garbage at once."""
    location = tmp_path / "t"
    with Metastore.open(metastore_url, warehouse=tmp_path / "warehouse") as ms:
        ms.create_database("d")
        ms.create_table("d", "t", [("x", "int")], [("ds", "string")], str(location))
        old = _touch(location / "ds=a" / "part-0.parquet")
        ms.commit("d", "t", add_files=[sg.FileStats(str(old), 1, 1, partition={"ds": "a"})])
        ms.commit("d", "t", remove_files=[str(old)])
    sent = _decoded(_call(handler, "get_table", "d", "t"))
    sent.parameters = {**sent.parameters, "spark.sql.statistics.numRows": "0"}
    _call(handler, "alter_table", "d", "t", sent)
    with Metastore.open(metastore_url, warehouse=tmp_path / "warehouse") as ms:
        found = vacuum(ms, "d", "t", dry_run=False, older_than=0)
    assert found.garbage == () and old.exists()
    assert [path for path, _ in found.kept] == [str(old)] and "retention" in found.kept[0][1]


def _decoded(encoded) -> ttypes.Table:
    """The table of a `get_table` reply's bytes, as a client decodes them."""
    from thrift.protocol.TBinaryProtocol import TBinaryProtocol
    from thrift.transport.TTransport import TMemoryBuffer

    table = ttypes.Table()
    table.read(TBinaryProtocol(TMemoryBuffer(bytes(encoded.head))))
    return table


# ---------------------------------------------------------------------------------------- issue 27 rows 1-2


def test_add_columns_and_rename_of_a_table_without_partition_keys(handler, metastore_url, tmp_path):
    """`ALTER TABLE t ADD COLUMNS` / `RENAME TO` (and PyIceberg's rename_table of an Iceberg table, external with no
    partition keys) failed with an AssertionError in the partition listing of a table that has none."""
    root = tmp_path / "d.db"
    _call(handler, "create_database", ttypes.Database(name="d", locationUri=f"file:{root}"))
    iceberg = {"table_type": "ICEBERG", "metadata_location": f"{root}/ice/metadata/00000.json"}
    _call(handler, "create_table", _table("d", "ice", f"file:{root}/ice", kind="EXTERNAL_TABLE", params=iceberg))
    _call(handler, "create_table", _table("d", "dim", f"file:{root}/dim"))
    with Metastore.open(metastore_url) as ms:
        before = _everything(ms, "d", "dim")

    dim = _decoded(_call(handler, "get_table", "d", "dim"))
    dim.sd.cols = [*dim.sd.cols, ttypes.FieldSchema("y", "string", "added")]
    _call(handler, "alter_table", "d", "dim", dim)
    ice = _decoded(_call(handler, "get_table", "d", "ice"))
    ice.tableName = "ice2"
    _call(handler, "alter_table", "d", "ice", ice)

    with Metastore.open(metastore_url) as ms:
        assert [n for n, _ in ms.get_table("d", "dim").columns] == ["x", "y"]
        assert _everything(ms, "d", "dim") == before
        assert ms.list_tables("d") == ["dim", "ice2"]
        renamed = ms.get_table("d", "ice2")
        assert renamed.location == f"{root}/ice" and renamed.properties["table_type"] == "ICEBERG"


# ------------------------------------------------------------------------------------ issue 27 item 2: rename


def _touch(path: Path, text: str = "x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_renaming_a_managed_table_moves_its_folder_as_hive_does(handler, metastore_url, tmp_path):
    root = tmp_path / "d.db"
    outside = tmp_path / "elsewhere"
    _call(handler, "create_database", ttypes.Database(name="d", locationUri=f"file:{root}"))
    _call(handler, "create_table", _table("d", "t", f"file:{root}/t", keys=(("ds", "string"),)))
    parts = [
        ttypes.Partition(values=["a"], dbName="d", tableName="t", sd=_sd(None, [("x", "int")]), parameters={}),
        ttypes.Partition(
            values=["b"], dbName="d", tableName="t", sd=_sd(f"file:{root}/t/custom/b", [("x", "int")]), parameters={}
        ),
        ttypes.Partition(
            values=["c"], dbName="d", tableName="t", sd=_sd(f"file:{outside}/c", [("x", "int")]), parameters={}
        ),
    ]
    _call(handler, "add_partitions", parts)
    data = [_touch(root / "t" / "ds=a" / "part-0.parquet"), _touch(root / "t" / "custom" / "b" / "part-0.parquet")]
    kept = _touch(outside / "c" / "part-0.parquet")
    with Metastore.open(metastore_url) as ms:
        ms.commit("d", "t", add_files=[sg.FileStats(str(data[0]), 1, 1, partition={"ds": "a"})])
        ms.commit("d", "t", add_files=[sg.FileStats(str(root / "t/ds=a/gone.parquet"), 1, 1, partition={"ds": "a"})])
        ms.commit("d", "t", remove_files=[str(root / "t/ds=a/gone.parquet")])

    sent = _decoded(_call(handler, "get_table", "d", "t"))
    sent.tableName = "u"  # Spark sends the old location: the metastore picks the new one for a managed table
    _call(handler, "alter_table", "d", "t", sent)

    assert not (root / "t").exists() and kept.exists()
    assert (root / "u" / "ds=a" / "part-0.parquet").exists() and (root / "u" / "custom/b/part-0.parquet").exists()
    with Metastore.open(metastore_url) as ms:
        table = ms.table("d", "u")
        assert table.location == str(root / "u")
        located = {p.values: p.location for p in table.partitions()}
        assert located == {("a",): f"{root}/u/ds=a", ("b",): f"{root}/u/custom/b", ("c",): f"{outside}/c"}
        assert [f.path for f in table.files()] == [f"{root}/u/ds=a/part-0.parquet"]
        assert table.has_file(f"{root}/u/ds=a/part-0.parquet") and not table.has_file(str(data[0]))
        assert [t.path for t in table.tombstones()] == [f"{root}/u/ds=a/gone.parquet"]
    # The old name is free again, folder and all (it failed LOCATION_ALREADY_EXISTS in Spark).
    _call(handler, "create_table", _table("d", "t", f"file:{root}/t", keys=(("ds", "string"),)))
    assert (root / "t").is_dir()


def test_renaming_an_external_table_leaves_its_location(handler, metastore_url, tmp_path):
    root = tmp_path / "d.db"
    _call(handler, "create_database", ttypes.Database(name="d", locationUri=f"file:{root}"))
    _call(handler, "create_table", _table("d", "t", f"file:{root}/t", kind="EXTERNAL_TABLE"))
    data = _touch(root / "t" / "part-0.parquet")
    sent = _decoded(_call(handler, "get_table", "d", "t"))
    sent.tableName = "u"
    _call(handler, "alter_table", "d", "t", sent)
    assert data.exists() and not (root / "u").exists()
    with Metastore.open(metastore_url) as ms:
        assert ms.get_table("d", "u").location == str(root / "t")


@pytest.mark.parametrize("failure", ["something at the new location", "the rename fails"])
def test_a_failed_move_leaves_the_old_name_working(handler, metastore_url, tmp_path, monkeypatch, failure):
    root = tmp_path / "d.db"
    _call(handler, "create_database", ttypes.Database(name="d", locationUri=f"file:{root}"))
    _call(handler, "create_table", _table("d", "t", f"file:{root}/t"))
    data = _touch(root / "t" / "part-0.parquet")
    if failure == "something at the new location":
        theirs = _touch(root / "u" / "theirs.txt")
    else:

        def refuse(source, target):
            raise OSError(18, "Invalid cross-device link")

        from sargable.metastore import alter

        monkeypatch.setattr(alter.os, "rename", refuse)
    sent = _decoded(_call(handler, "get_table", "d", "t"))
    sent.tableName = "u"
    with pytest.raises(ttypes.InvalidOperationException) as raised:
        _call(handler, "alter_table", "d", "t", sent)
    assert "u" in raised.value.message
    assert data.exists()
    if failure == "something at the new location":
        assert theirs.exists() and not (root / "u" / "part-0.parquet").exists()
    with Metastore.open(metastore_url) as ms:
        assert ms.list_tables("d") == ["t"] and ms.get_table("d", "t").location == str(root / "t")


def test_a_folder_holding_another_tables_location_does_not_move(metastore, tmp_path):
    metastore.create_database("d", location=str(tmp_path / "d.db"))
    metastore.create_table("d", "t", [("x", "int")])
    metastore.create_table("d", "inner", [("x", "int")], location=str(tmp_path / "d.db/t/inner"), share_location=True)
    data = _touch(tmp_path / "d.db" / "t" / "inner" / "part-0.parquet")
    with pytest.raises(sg.MetastoreError, match=r"holds the location of table d\.inner"):
        metastore.alter_table("d", "t", new_name="u", location=str(tmp_path / "d.db" / "u"), move_folder=True)
    assert data.exists() and metastore.list_tables("d") == ["inner", "t"]


def test_a_failed_commit_moves_the_folder_back(metastore, tmp_path, monkeypatch):
    metastore.create_database("d", location=str(tmp_path / "d.db"))
    metastore.create_table("d", "t", [("x", "int")])
    data = _touch(tmp_path / "d.db" / "t" / "part-0.parquet")

    rollback = metastore.store._rollback

    def fail() -> None:  # the database refuses the commit and rolls the transaction back
        rollback()
        raise sg.SargableError("the commit failed")

    monkeypatch.setattr(metastore.store, "_commit", fail)
    with pytest.raises(sg.SargableError, match="the commit failed"):
        metastore.alter_table("d", "t", new_name="u", location=str(tmp_path / "d.db" / "u"), move_folder=True)
    monkeypatch.undo()
    assert data.exists() and not (tmp_path / "d.db" / "u").exists()
    assert metastore.list_tables("d") == ["t"]


# ------------------------------------------------------------------------------------------- the metastore


def test_columns_change_only_at_the_end_once_files_are_listed(metastore, tmp_path):
    metastore.create_database("d")
    metastore.create_table("d", "t", [("x", "int"), ("s", "string")], [("ds", "string")], str(tmp_path / "t"))
    metastore.alter_table("d", "t", columns=[("x", "bigint"), ("s", "string")])  # no files yet: any change
    file = sg.FileStats(str(tmp_path / "t/ds=a/a.parquet"), 2, 20, columns=_stats(1), partition={"ds": "a"})
    metastore.commit("d", "t", add_files=[file])
    with pytest.raises(sg.MetastoreError, match="added at the end"):
        metastore.alter_table("d", "t", columns=[("s", "string"), ("x", "bigint")])
    with pytest.raises(sg.MetastoreError, match="appears twice"):
        metastore.alter_table("d", "t", columns=[("x", "bigint"), ("s", "string"), ("ds", "int")])
    table = metastore.alter_table("d", "t", columns=[("x", "bigint"), ("s", "string"), ("n", "double")])
    assert [n for n, _ in table.columns] == ["x", "s", "n"]
    scan = metastore.table("d", "t").scan("n is null")
    assert [f.path for f in scan.files] == [file.path], "a file written before reads n as NULL"
    metastore.create_table("d", "u", [("x", "int")], location=str(tmp_path / "u"))
    with pytest.raises(sg.AlreadyExistsError):
        metastore.alter_table("d", "t", new_name="u")
    with pytest.raises(sg.MetastoreError, match="overlaps"):
        metastore.alter_table("d", "t", location=str(tmp_path / "u" / "inside"))


_alters = st.lists(
    st.one_of(
        st.tuples(st.just("rename"), st.sampled_from(["t", "u", "v"])),
        st.tuples(st.just("location"), st.sampled_from(["l1", "l2", "l3"])),
        st.tuples(st.just("properties"), st.dictionaries(st.sampled_from("abc"), st.text("xyz", max_size=2))),
        st.tuples(st.just("add column"), st.sampled_from(["p", "q", "r"])),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=25)
@given(_alters)
def test_any_sequence_of_alters_keeps_the_table(tmp_path_factory, alters):
    """Oracle: what the table held before (files, tombstones, stats, indexes; partitions at their locations)."""
    tmp = tmp_path_factory.mktemp("alters")
    with Metastore.open(f"sqlite:///{tmp}/m.db", warehouse=tmp / "w") as ms:
        ms.create_database("d")
        ms.create_table("d", "t", [("x", "int")], [("ds", "string"), ("hr", "int")], str(tmp / "l0"), index_all=True)
        ms.add_partitions("d", "t", [("a", 1)], locations=[str(tmp / "pinned")])
        files = [
            sg.FileStats(f"{tmp}/l0/ds=a/hr={h}/f.parquet", h + 1, 9, columns=_stats(h), partition={"ds": "a", "hr": h})
            for h in range(3)
        ]
        ms.commit("d", "t", add_files=files)
        ms.commit("d", "t", remove_files=[files[2].path])
        name, before = "t", _everything(ms, "d", "t")
        locations = {p[0]: p[1] for p in before["partitions"]}
        columns = ["x"]
        for kind, arg in alters:
            if kind == "rename":
                ms.alter_table("d", name, new_name=arg)
                name = arg
            elif kind == "location":
                ms.alter_table("d", name, location=str(tmp / arg))
            elif kind == "properties":
                ms.alter_table("d", name, properties=arg)
                assert ms.get_table("d", name).properties == arg
            elif arg not in columns:
                columns.append(arg)
                ms.alter_table("d", name, columns=[(c, "int") for c in columns])
        after = _everything(ms, "d", name)
        null = [sg.ColumnStats(null_count=rows, nan_count=0, distinct=frozenset()) for _, rows, *_ in after["files"]]
        for (_, _, _, stats, _), all_null in zip(after["files"], null, strict=True):
            added = {c: stats.pop(c) for c in columns[1:]}
            assert added == dict.fromkeys(columns[1:], all_null), "a file registered before a column was added"
        assert ms.list_tables("d") == [name]
        assert {p[0]: p[1] for p in after["partitions"]} == locations, "a partition stays where it is"
        assert {k: v for k, v in after.items() if k != "partitions"} == {
            k: v for k, v in before.items() if k != "partitions"
        }
        assert [n for n, _ in ms.get_table("d", name).columns] == columns


# ------------------------------------------------------------------------------------------- through Thrift


def test_alter_and_rename_through_a_thrift_client(tmp_path):
    """The rows of issue 27 as a client sees them: ADD COLUMNS and RENAME of an unpartitioned table, and a managed
    partitioned table's rename moving its data."""
    serve = SargableServe(tmp_path / "serve", fresh_url("sqlite", tmp_path, None)).start()
    try:
        root = tmp_path / "d.db"
        with thrift_client(serve.port) as client:
            client.create_database(ttypes.Database(name="d", locationUri=f"file:{root}"))
            client.create_table(_table("d", "dim", f"file:{root}/dim"))
            dim = client.get_table("d", "dim")
            dim.sd.cols = [*dim.sd.cols, ttypes.FieldSchema("y", "string", None)]
            client.alter_table("d", "dim", dim)
            dim.tableName = "dim2"
            client.alter_table("d", "dim", dim)
            assert [c.name for c in client.get_table("d", "dim2").sd.cols] == ["x", "y"]

            client.create_table(_table("d", "fact", f"file:{root}/fact", keys=(("ds", "string"),)))
            client.add_partitions(
                [ttypes.Partition(values=["a"], dbName="d", tableName="fact", sd=_sd(None, [("x", "int")]))]
            )
            _touch(root / "fact" / "ds=a" / "part-0.parquet")
            fact = client.get_table("d", "fact")
            fact.tableName = "fact2"
            client.alter_table("d", "fact", fact)
            moved = client.get_partition("d", "fact2", ["a"])
            assert moved.sd.location.endswith("/d.db/fact2/ds=a")
            assert (root / "fact2" / "ds=a" / "part-0.parquet").exists() and not (root / "fact").exists()
            assert sorted(client.get_all_tables("d")) == ["dim2", "fact2"]
    finally:
        assert serve.stop() == 0


def test_alters_racing_commits_lose_nothing(metastore_url, tmp_path):
    """A committer and an alterer on two connections: every acknowledged commit's files and tombstones are there at
    the end, with the alterer's last change (a commit prepared before a column change retries on the conflict)."""
    import threading

    with Metastore.open(metastore_url, warehouse=tmp_path / "w") as ms:
        ms.create_database("d")
        ms.create_table("d", "t", [("x", "int")], [("ds", "string")], str(tmp_path / "l0"), index_all=True)
    committed: list[str] = []
    errors: list[BaseException] = []

    def retried(ms: Metastore, **change) -> None:
        """One commit, tried again while it loses to the alterer (a conflict commits nothing)."""
        for _ in range(200):
            try:
                ms.commit("d", "t", **change)
                return
            except sg.CommitConflictError:
                continue
        raise AssertionError(f"a commit lost 200 races in a row: {change}")

    def commit() -> None:
        with Metastore.open(metastore_url, warehouse=tmp_path / "w") as ms:
            for i in range(30):
                path = f"{tmp_path}/data/f{i}.parquet"
                retried(ms, add_files=[sg.FileStats(path, 1, 1, partition={"ds": str(i % 3)})])
                committed.append(path)
                if i % 5 == 4:
                    retried(ms, remove_files=[committed[-2]])

    def alter() -> None:
        with Metastore.open(metastore_url, warehouse=tmp_path / "w") as ms:
            for i in range(30):
                columns = [("x", "int"), *((f"c{k}", "int") for k in range(i // 10))]
                ms.alter_table(
                    "d", "t", properties={"n": str(i)}, location=str(tmp_path / f"l{i % 4}"), columns=columns
                )

    def run(fn) -> None:
        try:
            fn()
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(fn,)) for fn in (commit, alter)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with Metastore.open(metastore_url, warehouse=tmp_path / "w") as ms:
        table = ms.table("d", "t")
        removed = {committed[i - 1] for i in range(4, 30, 5)}
        assert {f.path for f in table.files()} == set(committed) - removed
        assert {t.path for t in table.tombstones()} == removed
        assert table.properties == {"n": "29"} and [n for n, _ in table.columns] == ["x", "c0", "c1"]
        assert table.stats().files == len(committed) - len(removed)
