"""Success means committed, failure means not (issue 26, row 7): the folders of new databases, tables and partitions
are made before the commit that records them. A folder that can't be made (a file in the way, a name too long)
fails the call with a MetaException naming the location and the OS error, and nothing is committed: a retry that can
succeed does. A commit that fails after its folders were made removes them; only folders the call made, only empty
ones. In process over both backends."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hms_inprocess import InProcess
from sargable.errors import PathError
from sargable.hms.bindings import ttypes
from sargable.hms.convert import hive_location
from sargable.hms.folders import local_dir
from sargable.paths import hadoop_location

pytest.importorskip("pymetastore")


@pytest.fixture
def hms(metastore_url, tmp_path):
    with InProcess(metastore_url, tmp_path / "warehouse") as hms:
        yield hms


def _table(db: str, name: str, location: str | None, keys=("ds",)) -> ttypes.Table:
    sd = ttypes.StorageDescriptor(cols=[ttypes.FieldSchema("x", "int", None)], location=location)
    return ttypes.Table(
        dbName=db, tableName=name, sd=sd, partitionKeys=[ttypes.FieldSchema(k, "string", None) for k in keys]
    )


def _partition(db: str, table: str, value: str) -> ttypes.Partition:
    return ttypes.Partition(values=[value], dbName=db, tableName=table)


def test_a_database_at_a_file_is_refused_and_not_created(hms, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(ttypes.MetaException, match=r"can't make the folder of database d at .*a-file.*File exists"):
        hms.call("create_database", ttypes.Database(name="d", locationUri=str(blocker)))
    with pytest.raises(ttypes.NoSuchObjectException):
        hms.call("get_database", "d")
    assert hms.call("get_all_databases") == []
    assert blocker.read_text() == "not a folder"
    hms.call("create_database", ttypes.Database(name="d", locationUri=str(tmp_path / "d.db")))  # no AlreadyExists
    assert (tmp_path / "d.db").is_dir()


def test_a_table_at_a_file_is_refused_and_not_created(hms, tmp_path):
    hms.call("create_database", ttypes.Database(name="d", locationUri=str(tmp_path / "d.db")))
    blocker = tmp_path / "d.db" / "t"
    blocker.write_text("x")
    with pytest.raises(ttypes.MetaException, match=r"can't make the folder of table d.t at .*File exists"):
        hms.call("create_table", _table("d", "t", None))
    with pytest.raises(ttypes.NoSuchObjectException):
        hms.call("get_table", "d", "t")
    assert hms.call("get_all_tables", "d") == []
    below = tmp_path / "d.db" / "t" / "deeper"  # a parent that is a file
    with pytest.raises(ttypes.MetaException, match=r"at .*deeper. \(making .*d.db/t.\): File exists"):
        hms.call("create_table", _table("d", "t", str(below)))
    assert hms.call("get_all_tables", "d") == []
    hms.call("create_table", _table("d", "t", str(tmp_path / "elsewhere" / "t")))
    assert (tmp_path / "elsewhere" / "t").is_dir()


@pytest.mark.parametrize("obstacle", ["name too long", "file in the way"])
def test_an_add_whose_one_folder_cant_be_made_adds_nothing(hms, tmp_path, obstacle):
    hms.call("create_database", ttypes.Database(name="d", locationUri=str(tmp_path / "d.db")))
    hms.call("create_table", _table("d", "t", None))
    table_dir = tmp_path / "d.db" / "t"
    theirs = table_dir / "ds=theirs"  # a folder that was there before: never removed
    theirs.mkdir()
    if obstacle == "name too long":
        bad, reason = "v" * 300, "File name too long"
    else:
        (table_dir / "ds=blocked").write_text("x")
        bad, reason = "blocked", "File exists"
    parts = [_partition("d", "t", "a"), _partition("d", "t", "theirs"), _partition("d", "t", bad)]
    with pytest.raises(ttypes.MetaException, match=f"can't make the folder of partition ds={bad[:20]}.*{reason}"):
        hms.call("add_partitions", parts)
    assert hms.call("get_partition_names", "d", "t", -1) == []
    assert not (table_dir / "ds=a").exists()  # made for the failed add, then removed
    assert theirs.is_dir()
    assert hms.call("add_partitions", parts[:2]) == 2  # the retry without the bad one: no AlreadyExists
    assert hms.call("get_partition_names", "d", "t", -1) == ["ds=a", "ds=theirs"]


def test_folders_of_a_commit_that_fails_are_removed_only_while_empty(hms, tmp_path, monkeypatch):
    hms.call("create_database", ttypes.Database(name="d", locationUri=str(tmp_path / "d.db")))
    hms.call("create_table", _table("d", "t", None))
    table_dir = tmp_path / "d.db" / "t"
    made = []
    catalog = hms.pool.lease()
    hms.pool.give_back(catalog)
    store = catalog.metastore.store
    real = store.transaction

    def failing_commit(*args, **kwargs):
        inner = real(*args, **kwargs)

        class Failing:
            def __enter__(self):
                return inner.__enter__()

            def __exit__(self, kind, exc, tb):
                inner.__exit__(kind, exc, tb)
                if kind is None and not store.in_transaction:
                    made.extend(sorted(p.name for p in table_dir.iterdir()))
                    (table_dir / "ds=b" / "written-meanwhile").write_text("x")
                    raise OSError("the commit failed")
                return False

        return Failing()

    monkeypatch.setattr(store, "transaction", failing_commit)
    with pytest.raises(OSError, match="the commit failed"):
        hms.call("add_partitions", [_partition("d", "t", "a"), _partition("d", "t", "b")])
    monkeypatch.undo()
    assert made == ["ds=a", "ds=b"]  # made before the commit
    assert sorted(os.listdir(table_dir)) == ["ds=b"]  # the empty one removed, the one written into kept


SPARK_FOLDERS = {
    "a:b": "ds=a%3Ab",
    "a%b": "ds=a%25b",
    "a%3Ab": "ds=a%253Ab",
    "x/y": "ds=x%2Fy",
    "k=v": "ds=k%3Dv",
    "#'\"\\{[*?^]}": "ds=%23%27%22%5C%7B%5B%2A%3F%5E%5D}",
    "tab\tnl\n\x01\x7f": "ds=tab%09nl%0A%01%7F",
    "é 日本": "ds=é 日本",
}
"""Partition values and the folder names Spark (`ExternalCatalogUtils.escapePathName`) and Hive give them."""


def test_escaped_partition_folders_are_the_ones_spark_names(hms, tmp_path):
    """Spark sends locations as Hadoop `Path` strings, not percent-encoded: `file:/w/t/ds=a%3Ab` names the folder
    `ds=a%3Ab`. Given so (or left to the server's default), each partition has that one folder, no decoded twin, and
    is returned with the location Spark sent (issue 27: a decoded `ds=a:b` tree was made beside Spark's)."""
    db_dir = tmp_path / "dbs" / "d%41.db"
    hms.call("create_database", ttypes.Database(name="d", locationUri=f"file:{db_dir}"))
    hms.call("create_table", _table("d", "t", None))
    table_dir = db_dir / "t"
    values = list(SPARK_FOLDERS)
    sent = []
    for i, value in enumerate(values):
        part = _partition("d", "t", value)
        if i % 2:  # as Spark sends it; the others at the server's default location
            part.sd = ttypes.StorageDescriptor(location=f"file:{table_dir}/{SPARK_FOLDERS[value]}")
        sent.append(part)
    assert hms.call("add_partitions", sent) == len(values)
    assert os.listdir(tmp_path / "dbs") == ["d%41.db"]
    assert sorted(os.listdir(table_dir)) == sorted(SPARK_FOLDERS.values())
    assert hms.call("get_database", "d").locationUri == f"file:{db_dir}"
    located = {tuple(p.values): p.sd.location for p in hms.call("get_partitions", "d", "t", -1)}
    assert located == {(v,): f"file:{table_dir}/{name}" for v, name in SPARK_FOLDERS.items()}
    assert sorted(hms.call("get_partition_names", "d", "t", -1)) == sorted(SPARK_FOLDERS.values())


folder_names = st.text(
    st.one_of(st.sampled_from("%:=#'\"\\{[*?^ 0123456789ABCDEFabcdef"), st.characters(blacklist_categories=("Cs",))),
    min_size=1,
    max_size=10,
).filter(lambda name: "\x00" not in name and "/" not in name and name not in (".", ".."))


@given(st.lists(folder_names, min_size=1, max_size=4))
def test_a_hadoop_location_names_the_folder_it_spells_both_ways(names):
    """A `file:` location as Spark sends it (`Path.toString()`) names the folder spelled so, `%` included; the
    server returns it spelled the same, which Spark reads back as that folder (`new Path(text)`)."""
    path = "/" + "/".join(names)
    sent = f"file:{path}"
    assert hadoop_location(sent) == hadoop_location(f"file://{path}") == hadoop_location(path) == path
    assert hive_location(hadoop_location(sent)) == sent
    assert local_dir(sent) == Path(path)


def test_a_hadoop_location_of_another_host_or_relative_is_refused():
    assert hadoop_location("s3a://bucket/t/k=a%3Ab") == "s3a://bucket/t/k=a%3Ab"
    with pytest.raises(PathError, match="another host"):
        hadoop_location("file://elsewhere/w/t")
    with pytest.raises(PathError, match="relative"):
        hadoop_location("w/t")
