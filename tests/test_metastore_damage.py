"""A damaged or foreign metastore is an error the user can act on, never a crash, and is never modified (issue 15).

Every value (and key) the metastore reads back is validated: a random byte flipped anywhere in a populated metastore
makes each operation either work or raise a `MetastoreError`; one naming the damaged key where it detects the damage,
and the command line prints one `error:` line, never a traceback. A SQLite file of another application is refused
unchanged; a missing or empty one is "no metastore at ..." for commands that only read. Typed partition values parse
strictly. Both backends where a metastore is involved.
"""

from __future__ import annotations

import contextlib
import io
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sargable as sg
from metastore_fixtures import BACKENDS, fresh_url
from sargable.cli import main
from sargable.expr import bind_filter
from sargable.metastore import Metastore

KEYSPACES = ("catalog", "partitions", "pindex", "files", "filepaths", "statblocks")


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def populate(ms: Metastore) -> None:
    """A database, a table with a secondary index, partitions with locations and parameters, files with stats."""
    ms.create_database("db")
    ms.create_table("db", "t", [("x", "bigint"), ("s", "string")], [("a", "int"), ("b", "string")], index_all=True)
    ms.add_partitions("db", "t", [{"a": i, "b": f"v{i}"} for i in range(3)], locations=["/data/p0", None, "/data/p2"])
    ms.alter_partition("db", "t", {"a": 1, "b": "v1"}, parameters={"k": "v"})
    files = [
        sg.FileStats(
            f"/data/t/a={i}/b=v{i}/part-{i}.parquet",
            10,
            100,
            columns={"x": sg.ColumnStats(min=i, max=i + 5, null_count=0), "s": sg.ColumnStats("a", "z", 1)},
            partition={"a": i, "b": f"v{i}"},
        )
        for i in range(3)
    ]
    ms.commit("db", "t", add_files=files)
    ms.table("db", "t").build_stats_blocks()  # the files' statistics blocks written (not left pending)


OPERATIONS: list[tuple[str, Callable[[Metastore], Any]]] = [
    ("list_databases", lambda ms: ms.list_databases()),
    ("list_tables", lambda ms: ms.list_tables()),
    ("list_tables db", lambda ms: ms.list_tables("db")),
    ("get_table", lambda ms: ms.get_table("db", "t")),
    ("partition names", lambda ms: ms.list_partition_names("db", "t")),
    ("filter a", lambda ms: ms.get_partitions_by_filter("db", "t", "a >= 1")),
    ("filter b (index)", lambda ms: ms.get_partitions_by_filter("db", "t", "b = 'v2'")),
    ("by names", lambda ms: ms.get_partitions_by_names("db", "t", ["a=0/b=v0"])),
    ("files", lambda ms: ms.list_files("db", "t")),
    ("files without stats", lambda ms: ms.list_files("db", "t", stats=False)),
    ("statistics blocks", lambda ms: ms.table("db.t").files_matching(bind_filter("x = 3", ms.table("db.t").schema))),
    ("table stats", lambda ms: ms.table_stats("db", "t")),
    ("has_file", lambda ms: ms.has_file("db", "t", "/data/t/a=0/b=v0/part-0.parquet")),
    ("tables_listing", lambda ms: ms.tables_listing("/data/t/a=0/b=v0/part-0.parquet")),
    ("create another table", lambda ms: ms.create_table("db", "u", [("x", "int")])),
    ("add a file", lambda ms: ms.add_files("db", "t", [sg.FileStats("/data/t/new.parquet", 1, 1, partition=[5, "w"])])),
    ("remove a file", lambda ms: ms.commit("db", "t", remove_files=["/data/t/a=1/b=v1/part-1.parquet"])),
    ("overwrite a partition", lambda ms: ms.commit("db", "t", replace_partitions=[{"a": 2, "b": "v2"}])),
    ("drop partitions", lambda ms: ms.drop_partitions("db", "t", "a = 0")),
]


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request, tmp_path_factory) -> tuple[str, Path, str | None]:
    postgres = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    return request.param, tmp_path_factory.mktemp("damage"), postgres


@settings(max_examples=60)
@given(
    keyspace=st.sampled_from(KEYSPACES),
    row=st.integers(0, 100),
    position=st.integers(0, 10_000),
    mask=st.integers(1, 255),
    in_key=st.booleans(),
)
def test_one_damaged_byte_is_a_metastore_error(backend, keyspace, row, position, mask, in_key) -> None:
    name, tmp, postgres = backend
    url = fresh_url(name, tmp, postgres)
    with Metastore.open(url, warehouse=tmp / "w") as ms:
        populate(ms)
        rows = [(k, v) for k, v in ms.store.scan(keyspace, b"", None) if (k if in_key else v)]
        key, value = rows[row % len(rows)]
        target = bytearray(key if in_key else value)
        target[position % len(target)] ^= mask
        if in_key:
            ms.store.delete(keyspace, key)
            ms.store.put(keyspace, bytes(target), value)
        else:
            ms.store.put(keyspace, key, bytes(target))
    for label, operation in OPERATIONS:
        try:
            with Metastore.open(url, warehouse=tmp / "w") as ms:  # opening reads the schema row, which may be damaged
                operation(ms)
        except sg.SargableError:
            pass
        except Exception as exc:
            raise AssertionError(f"{label} on a damaged {keyspace} {'key' if in_key else 'value'}: {exc!r}") from exc
    for argv in (["tables", "--json"], ["partitions", "db.t", "--json"], ["partitions", "db.t", "--filter", "a = 1"]):
        code, _, err = cli("--metastore", url, *argv)
        assert code == 0 or (code == 1 and err.startswith("error: ") and len(err.splitlines()) == 1), err


def test_a_damaged_table_row_names_its_key(metastore_url, tmp_path) -> None:
    with Metastore.open(metastore_url, warehouse=tmp_path / "w") as ms:
        populate(ms)
        (key, value), *_ = ms.store.scan("catalog", b"T", b"U")
        for damaged in (
            value[:-1],
            b"\xff" + value[1:],
            re.sub(rb'"version": (\d+)', rb'"version": "\1"', value),
            b"[]",
        ):
            ms.store.put("catalog", key, damaged)
            for call in (lambda: ms.get_table("db", "t"), lambda: ms.list_partition_names("db", "t")):
                with pytest.raises(sg.MetastoreError, match=f"damaged: catalog key {key.hex()} \\(table db.t\\)"):
                    call()
        code, out, err = cli("--metastore", metastore_url, "tables")
        assert (
            code == 1 and out == "" and err.startswith("error: the metastore is damaged") and len(err.splitlines()) == 1
        )


# ---------------------------------------------------------------------------------- files that are not ours


def test_another_applications_sqlite_file_is_refused_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO users (name) VALUES ('ada')")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(sg.StoreError, match="another application"):
        Metastore.open(f"sqlite:///{path}")
    for argv in (["tables"], ["create-table", "db.t", "--columns", "x int"], ["vacuum", "db.t"]):
        code, out, err = cli("--metastore", f"sqlite:///{path}", *argv)
        assert code == 1 and out == "" and "another application" in err and len(err.splitlines()) == 1
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"], "no -wal or -shm file: never switched to WAL"


def test_an_empty_or_missing_file_is_no_metastore_for_reading_commands(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    for path in (empty, tmp_path / "missing.db"):
        for argv in (["tables"], ["partitions", "db.t"], ["vacuum", "db.t"]):
            code, out, err = cli("--metastore", f"sqlite:///{path}", *argv)
            assert code == 1 and out == "" and err.startswith(f"error: no metastore at {path}"), err
        with pytest.raises(sg.NoSuchObjectError, match="no metastore at"):
            Metastore.open(f"sqlite:///{path}", create=False)
    assert empty.stat().st_size == 0 and not (tmp_path / "missing.db").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]


def test_open_under_a_regular_file_is_a_metastore_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(sg.MetastoreError, match="can't create the folder"):
        Metastore.open(f"sqlite:///{blocker / 'sub' / 'meta.db'}")


# ---------------------------------------------------------------------------------- partition values


@pytest.mark.parametrize("backend", BACKENDS)
def test_typed_partition_values_parse_strictly(backend, tmp_path, request) -> None:
    postgres = request.getfixturevalue("postgres_url") if backend == "postgresql" else None
    with Metastore.open(fresh_url(backend, tmp_path, postgres), warehouse=tmp_path / "w") as ms:
        ms.create_database("db")
        ms.create_table("db", "t", [("x", "int")], [("hr", "int"), ("s", "string")])
        for bad in ("٣", " 7 ", "7 ", "\t7", "1_0", "٣.0", "+٣"):
            with pytest.raises(sg.MetastoreError, match=r"\(int\)"):
                ms.add_partitions("db", "t", [{"hr": bad, "s": "a"}])
            with pytest.raises(sg.MetastoreError, match=r"\(int\)"):
                ms.add_partitions("db", "t", [f"hr={bad}/s=a"])
        for bad in ("\x00", "a\x00b"):
            with pytest.raises(sg.MetastoreError, match="NUL"):
                ms.add_partitions("db", "t", [{"hr": 1, "s": bad}])
            with pytest.raises(sg.MetastoreError, match="NUL"):
                ms.add_partitions("db", "t", [f"hr=1/s={bad.replace(chr(0), '%00')}"])
        ms.add_partitions("db", "t", [{"hr": "7", "s": "a"}, {"hr": "-3", "s": "b"}, {"hr": 8, "s": " c "}])
        assert ms.list_partition_names("db", "t") == ["hr=-3/s=b", "hr=7/s=a", "hr=8/s= c "]
