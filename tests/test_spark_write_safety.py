"""`sgs.write` never loses a write and deletes only through `sargable.deletion` (issue 15), on both backends.

An overwrite checks everything that can fail before its commit; after it, deletes (of replaced files whose retention
has passed) are best effort and reported in `WriteResult.cleanup_failures`, never raised; its staging folder is
always removed. A write sees every file Spark wrote: partition columns whose folders would be hidden are refused
before writing, and files that don't add up to the rows Spark counted fail the write before the commit.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import sargable as sg
from metastore_fixtures import BACKENDS, fresh_url
from sargable import spark as sgs
from sargable.metastore import Metastore
from sargable.metastore.tombstones import RETENTION_PROPERTY

pytest_plugins = ["conftest_spark"]


@pytest.fixture(scope="module", params=BACKENDS)
def ms(request, tmp_path_factory):
    root = tmp_path_factory.mktemp("write-safety")
    postgres = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    metastore = Metastore.open(fresh_url(request.param, root, postgres), warehouse=root / "warehouse")
    yield metastore
    metastore.close()


def write(ms: Metastore, df: Any, table: str, **kwargs: Any) -> sgs.WriteResult:
    return sgs.write(df, table, metastore=ms, progress=False, **kwargs)


def staging_left(location: str) -> list[str]:
    staging = Path(location) / "_sargable_staging"
    return [str(p) for p in staging.rglob("*")] if staging.exists() else []


def rows(spark: Any, n: int, p: int) -> Any:
    return spark.createDataFrame([(i, p) for i in range(n)], "v bigint, p int")


def test_overwrite_reports_a_replaced_file_it_may_not_delete(spark: Any, ms: Metastore, tmp_path: Path) -> None:
    write(ms, rows(spark, 5, 1), "shop.outside", partition_by=["p"])
    table = ms.get_table("shop", "outside")
    foreign = tmp_path / "foreign" / "part-0.parquet"
    foreign.parent.mkdir()
    foreign.write_bytes(b"PAR1")
    ms.add_files("shop", "outside", [sg.FileStats(str(foreign), 1, 4, partition={"p": 1})])
    replaced = [Path(f.path) for f in ms.list_files("shop", "outside")]
    ms.table("shop.outside").set_properties({RETENTION_PROPERTY: "0"})
    result = write(ms, rows(spark, 3, 1), "shop.outside", mode="overwrite")
    assert result.version == ms.get_table("shop", "outside").version > table.version
    assert result.rows == 3 and result.replaced_files == len(replaced)
    assert [p for p in replaced if p.exists()] == [foreign]
    assert foreign.exists(), "a file outside the table is never deleted"
    assert [f for f in result.cleanup_failures if str(foreign) in f and "not under the table location" in f]
    assert len(result.cleanup_failures) == 1
    assert staging_left(table.location) == []
    assert sgs.read(spark, "shop.outside", metastore=ms).count() == 3


def test_overwrite_never_deletes_through_a_climbing_path(spark: Any, ms: Metastore, monkeypatch) -> None:
    """A path an earlier version stored unchecked (`<table>/p=1/../../../x/victim.parquet`): replaced, not deleted."""
    write(ms, rows(spark, 5, 1), "shop.climb", partition_by=["p"])
    location = ms.get_table("shop", "climb").location
    victim = Path(location).parents[1] / "x" / "victim.parquet"
    victim.parent.mkdir(parents=True, exist_ok=True)
    victim.write_bytes(b"precious")
    climbing = f"{location}/p=1/../../../x/victim.parquet"
    monkeypatch.setattr("sargable.metastore.files.canonical_file_path", lambda path, base=None: path, raising=False)
    ms.add_files("shop", "climb", [sg.FileStats(climbing, 1, 4, partition={"p": 1})])
    monkeypatch.undo()
    ms.table("shop.climb").set_properties({RETENTION_PROPERTY: "0"})
    result = write(ms, rows(spark, 2, 1), "shop.climb", mode="overwrite")
    assert victim.read_bytes() == b"precious"
    assert any(os.path.normpath(climbing) in f for f in result.cleanup_failures), "reported where it leads"
    assert staging_left(location) == []


def test_a_hidden_partition_column_is_refused_before_writing(spark: Any, ms: Metastore) -> None:
    df = spark.createDataFrame([(i, i % 2) for i in range(10)], "v bigint, `.p` int")
    with pytest.raises(sg.SargableError, match="hidden"):
        write(ms, df, "shop.hidden", partition_by=[".p"])
    assert "shop.hidden" not in ms.list_tables()
    assert not any(".p=" in str(p) for p in Path(ms.warehouse).rglob("*"))


def test_a_write_whose_files_do_not_add_up_is_an_error(spark: Any, ms: Metastore, monkeypatch) -> None:
    from sargable.spark import writer

    write(ms, rows(spark, 4, 1), "shop.tally", partition_by=["p"])
    table = ms.get_table("shop", "tally")
    before = (table.version, sorted(f.path for f in ms.list_files("shop", "tally")))
    on_disk = sorted(str(p) for p in Path(table.location).rglob("*.parquet"))
    real = writer._footer_stats
    monkeypatch.setattr(writer, "_footer_stats", lambda *args: real(*args)[:-1])
    with pytest.raises(sg.SargableError, match="add up"):
        write(ms, rows(spark, 30, 2).repartition(3), "shop.tally")
    monkeypatch.undo()
    assert (ms.get_table("shop", "tally").version, sorted(f.path for f in ms.list_files("shop", "tally"))) == before
    assert sorted(str(p) for p in Path(table.location).rglob("*.parquet")) == on_disk
    assert staging_left(table.location) == []


def test_a_file_spark_wrote_where_the_writer_would_not_look_is_an_error(spark: Any, ms: Metastore, monkeypatch) -> None:
    from pyspark.sql.readwriter import DataFrameWriter

    write(ms, rows(spark, 4, 1), "shop.stray", partition_by=["p"])
    table = ms.get_table("shop", "stray")
    real = DataFrameWriter.parquet

    def parquet_and_a_hidden_file(self: Any, path: str, *args: Any, **kwargs: Any) -> None:
        real(self, path, *args, **kwargs)
        os.makedirs(os.path.join(path, ".p=9"))
        with open(os.path.join(path, ".p=9", "part-00000-x.parquet"), "wb") as handle:
            handle.write(b"PAR1")

    monkeypatch.setattr(DataFrameWriter, "parquet", parquet_and_a_hidden_file)
    with pytest.raises(sg.SargableError, match="not a data file in a partition folder"):
        write(ms, rows(spark, 3, 2), "shop.stray")
    monkeypatch.undo()
    assert ms.get_table("shop", "stray").version == table.version
    assert staging_left(table.location) == []


def test_new_partition_folders_move_whole_and_a_failed_commit_removes_them(
    spark: Any, ms: Metastore, monkeypatch
) -> None:
    """A partition folder the table doesn't have yet moves in one rename, the files of one it has move one by one;
    a commit that fails afterwards removes every file moved either way. No `.crc` file reaches the table."""
    from sargable.fs import FileSystem
    from sargable.spark import writer

    write(ms, rows(spark, 4, 1), "shop.moves", partition_by=["p"])
    table = ms.get_table("shop", "moves")
    on_disk = sorted(str(p) for p in Path(table.location).rglob("*.parquet"))
    whole: list[tuple[str, bool]] = []
    real = FileSystem.move_folder

    def spy(self: Any, source: str, target: str) -> bool:
        whole.append((os.path.basename(target), real(self, source, target)))
        return whole[-1][1]

    def fail(*args: Any) -> Any:
        raise RuntimeError("the commit failed")

    df = rows(spark, 20, 1).union(rows(spark, 30, 2)).union(rows(spark, 10, 3)).repartition(2)
    monkeypatch.setattr(FileSystem, "move_folder", spy)
    monkeypatch.setattr(writer, "_commit", fail)
    with pytest.raises(RuntimeError, match="the commit failed"):
        write(ms, df, "shop.moves")
    monkeypatch.undo()
    assert sorted(whole) == [("p=1", False), ("p=2", True), ("p=3", True)]
    assert ms.get_table("shop", "moves").version == table.version
    assert sorted(str(p) for p in Path(table.location).rglob("*.parquet")) == on_disk
    assert staging_left(table.location) == []

    result = write(ms, df, "shop.moves")
    assert result.rows == 60 and result.partitions == 3
    assert sgs.read(spark, "shop.moves", metastore=ms).count() == 64
    assert list(Path(table.location).rglob("*.crc")) == []
