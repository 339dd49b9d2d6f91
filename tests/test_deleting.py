"""What vacuum may delete, and what the metastore stores so that it can tell (issue 15), on both backends.

Every case here once lost data: vacuum followed a directory symlink out of the table, deleted a file registered
as a `file://` URI, resolved a relative table location against the directory it ran in, and deleted the metastore
itself from a table located at the warehouse root. `sgs.vacuum` and `sargable vacuum` are driven as a user would;
the property test at the end builds random trees of files, symlinks and hidden folders with registered paths in
every spelling, and checks that vacuum deletes exactly the garbage set an independent oracle computes.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import sargable as sg
from metastore_fixtures import BACKENDS, fresh_url
from sargable import keys
from sargable import spark as sgs
from sargable.cli import main
from sargable.metastore import Metastore
from sargable.types import STRING


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def touch(path: Path, data: bytes = b"PAR1") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def register(ms: Metastore, table: str, path: str, partition: dict[str, Any]) -> None:
    db, name = table.split(".")
    ms.commit(db, name, add_files=[sg.FileStats(path, 1, 4, partition=partition)])


def written(ms: Metastore, table: str, *paths: Path) -> list[Path]:
    """Files an unfinished (failed) write of the table left: its intent begun and their paths recorded (a path in
    its staging folder is given relative to it, as `STAGED / "part-0.parquet"`)."""
    db, name = table.split(".")
    handle = ms.table(db, name)
    intent = handle.begin_write()
    staging = Path(intent.location) / "_sargable_staging" / intent.write_id
    out = [staging.joinpath(*p.parts[1:]) if p.parts[:1] == (STAGED,) else p for p in paths]
    handle.record_write(intent.write_id, [str(p) for p in out if staging not in p.parents])
    return [touch(p) for p in out]


STAGED = "<staged>"
"""The first component of a path `written` puts in the write's staging folder."""


def files_under(root: Path) -> set[str]:
    """Every regular file below `root`, found without following a symlink (the oracle's own walk)."""
    found = set()
    for folder, _, names in os.walk(root, followlinks=False):
        for name in names:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path):
                found.add(path)
    return found


def _entries(root: Path) -> list[str]:
    return [os.path.join(folder, name) for folder, dirs, names in os.walk(root) for name in dirs + names]


def set_stored_location(ms: Metastore, table: str, location: str) -> None:
    """Store a table location as an earlier version did, unchecked (the catalog row's JSON, rewritten in place)."""
    db, name = table.split(".")
    key = b"T" + keys.encode([db, name], [STRING, STRING])
    row = json.loads(ms.store.get("catalog", key))
    ms.store.put("catalog", key, json.dumps({**row, "location": location}).encode())


@pytest.fixture
def ms(metastore_url, tmp_path):
    metastore = Metastore.open(metastore_url, warehouse=tmp_path / "warehouse")
    metastore.create_database("db")
    yield metastore
    metastore.close()


def new_table(ms: Metastore, name: str = "t", **kwargs: Any) -> tuple[str, Path]:
    ms.create_table("db", name, [("x", "int")], [("ds", "string")], **kwargs)
    return f"db.{name}", Path(ms.get_table("db", name).location)


def vacuum(ms: Metastore, table: str) -> list[str]:
    return sgs.vacuum(table, metastore=ms, dry_run=False, older_than=0)


# ------------------------------------------------------------------------------------------ vacuum


def test_vacuum_never_follows_a_symlink(ms: Metastore, tmp_path: Path) -> None:
    table, location = new_table(ms)
    elsewhere = tmp_path / "elsewhere"
    precious = [touch(elsewhere / "precious.parquet"), touch(elsewhere / "ds=x" / "deep.parquet")]
    location.mkdir(parents=True)
    (location / "ds=b").symlink_to(elsewhere, target_is_directory=True)
    (location / "ds=c").mkdir()
    (location / "ds=c" / "link.parquet").symlink_to(precious[0])
    (garbage,) = written(ms, table, location / "ds=c" / "stray.parquet")
    foreign = touch(location / "ds=c" / "part-00000-0b5a-c000.snappy.parquet")
    assert vacuum(ms, table) == [str(garbage)]
    assert all(p.exists() for p in precious) and (location / "ds=c" / "link.parquet").is_symlink()
    assert not garbage.exists() and foreign.exists()


def test_vacuum_keeps_foreign_files_and_empties_only_the_staging_folder(ms: Metastore) -> None:
    table, location = new_table(ms)
    foreign = [
        touch(location / "_SUCCESS"),
        touch(location / "ds=a" / ".part-0.parquet.crc"),
        touch(location / ".sargable" / "notes.parquet"),
        touch(location / "_tmp" / "part-1.parquet"),
        touch(location / "_sargable_staging" / "0123abcd" / "ds=a" / "part-9.parquet"),
    ]
    staged = written(
        ms,
        table,
        Path(STAGED, "ds=a", "part-2.parquet"),
        Path(STAGED, "ds=a", ".part-2.parquet.crc"),
        Path(STAGED, "_SUCCESS"),
        Path(STAGED, "_temporary", "0", "x"),
    )
    assert sgs.vacuum(table, metastore=ms, dry_run=False, older_than=3600) == []
    assert all(p.exists() for p in foreign + staged)
    assert sorted(vacuum(ms, table)) == sorted(str(p) for p in staged)
    assert all(p.exists() for p in foreign)
    assert list((location / "_sargable_staging").iterdir()) == [location / "_sargable_staging" / "0123abcd"]
    assert ms.table(table).write_intents() == ([], {}), "the failed write is forgotten once its files are gone"


def test_the_deleter_never_reaches_a_file_through_a_symlink(ms: Metastore, tmp_path: Path) -> None:
    from sargable.deletion import Deleter

    table, location = new_table(ms)
    outside = touch(tmp_path / "outside" / "f.parquet")
    touch(location / "ds=a" / "listed.parquet")
    register(ms, table, str(location / "ds=a" / "listed.parquet"), {"ds": "a"})
    (location / "ds=b").symlink_to(outside.parent, target_is_directory=True)
    (location / "ds=a" / "link.parquet").symlink_to(outside)
    deleter = Deleter(ms, ms.get_table("db", "t"))
    refused = {
        f"{location}/ds=b/f.parquet": "symlink",
        f"{location}/ds=a/link.parquet": "symlink",
        str(outside): "not under the table location",
        f"{location}/ds=a/../../../outside/f.parquet": r"'\.\.'",
        f"{location}/ds=a/listed.parquet": "lists it",
        f"file://{location}/ds=a/listed.parquet": "lists it",
    }
    for path, reason in refused.items():
        assert re.search(reason, deleter.delete(path) or ""), (path, deleter.delete(path))
    assert outside.exists() and (location / "ds=a" / "listed.parquet").exists()
    assert deleter.delete(str(location / "ds=a" / "missing.parquet")) is None
    foreign = touch(location / "ds=a" / "foreign.parquet")
    assert "did not write" in (deleter.delete(str(foreign)) or "") and foreign.exists()
    (extra,) = written(ms, table, location / "ds=a" / "extra.parquet")
    assert deleter.refusal(str(extra)) is None and extra.exists()
    assert deleter.delete(str(extra)) is None and not extra.exists()


def test_purging_a_table_deletes_only_what_sargable_wrote(ms: Metastore, tmp_path: Path) -> None:
    """What `sargable demo --rebuild` does to its tables: its committed files and a failed write's leftovers go,
    through `sargable.deletion`; foreign files, a nested table's files and what a symlink leads to stay."""
    from sargable.vacuum import purge

    table, location = new_table(ms)
    _, other_location = new_table(ms, "inner", location=str(location / "inner"), share_location=True)
    outside = touch(tmp_path / "outside" / "f.parquet")
    files = [touch(location / "ds=a" / "part-0.parquet"), *written(ms, table, Path(STAGED, "_SUCCESS"))]
    register(ms, table, str(files[0]), {"ds": "a"})
    theirs = touch(other_location / "part-1.parquet")
    foreign = touch(location / "ds=c" / "part-0.parquet")
    (location / "ds=b").symlink_to(outside.parent, target_is_directory=True)
    purge(ms, "db", "t")
    assert ms.list_tables("db") == ["inner"]
    assert not any(p.exists() for p in files) and outside.exists() and theirs.exists() and foreign.exists()
    assert not (location / "ds=a").exists() and not (location / "_sargable_staging").exists()


def test_vacuum_keeps_files_registered_under_any_spelling(ms: Metastore) -> None:
    table, location = new_table(ms)
    spellings = {
        "uri": lambda p: f"file://{p}",
        "hadoop": lambda p: f"file:{p}",
        "localhost": lambda p: f"file://localhost{p}",
        "slashes": lambda p: str(p).replace("/ds=", "//ds=").replace("/part", "/./part"),
        "relative": lambda p: str(p.relative_to(location)),
    }
    kept = []
    for index, (kind, spell) in enumerate(spellings.items()):
        path = touch(location / f"ds={kind}" / f"part-{index}.parquet")
        register(ms, table, spell(path), {"ds": kind})
        kept.append(path)
        assert ms.has_file("db", "t", str(path)) and ms.has_file("db", "t", spell(path))
    assert sorted(f.path for f in ms.list_files("db", "t")) == sorted(str(p) for p in kept)
    (stray,) = written(ms, table, location / "ds=uri" / "stray.parquet")
    assert vacuum(ms, table) == [str(stray)]
    assert all(p.exists() for p in kept)


def test_file_paths_are_canonical_and_never_climb(ms: Metastore, tmp_path: Path) -> None:
    table, location = new_table(ms)
    victim = f"{location}/ds=q/../../../x/victim.parquet"
    for bad in (victim, "file://otherhost/data/x.parquet", f"{location}/ds=q/f\x00.parquet"):
        with pytest.raises(sg.MetastoreError, match=r"'\.\.'|another host|NUL"):
            register(ms, table, bad, {"ds": "q"})
    with pytest.raises(sg.MetastoreError, match="is not part of"):
        ms.commit("db", "t", remove_files=[victim])
    assert ms.list_files("db", "t") == []


def test_relative_location_is_resolved_when_the_table_is_created(metastore_url, tmp_path, monkeypatch) -> None:
    created_in, vacuumed_in = tmp_path / "a", tmp_path / "b"
    created_in.mkdir()
    monkeypatch.chdir(created_in)
    base = ["--metastore", metastore_url]
    code, _, err = cli(*base, "create-table", "db.rel", "--columns", "x int", "--partition-keys", "ds string")
    assert code == 0, err
    code, _, err = cli(*base, "create-table", "db.rel2", "--columns", "x int", "--location", "data")
    assert code == 0, err
    with Metastore.open(metastore_url) as ms:
        assert ms.get_table("db", "rel2").location == str(created_in / "data")
    precious = touch(vacuumed_in / "data" / "ds=a" / "precious.parquet")
    monkeypatch.chdir(vacuumed_in)
    code, out, err = cli(*base, "vacuum", "db.rel2", "--delete", "--older-than", "0", "--json")
    assert code == 0, err
    assert json.loads(out)["files"] == [] and precious.exists()


def test_unsafe_table_locations_are_refused(ms: Metastore, tmp_path: Path) -> None:
    _, location = new_table(ms, "first")
    unsafe = {
        "/": "is a root",
        "file:///": "is a root",
        ms.warehouse: "warehouse root",
        str(Path(ms.warehouse).parent): "warehouse root",
        str(location): "overlaps",
        str(location / "ds=1"): "overlaps",
        str(location.parent): "overlaps",
        f"{location}/../first": "overlaps",
    }
    if ms.store.backend == "sqlite":
        unsafe[str(Path(ms.url.split("///", 1)[1]).parent)] = "warehouse root|metastore"
    for index, (location_text, reason) in enumerate(unsafe.items()):
        with pytest.raises(sg.MetastoreError, match=reason):
            ms.create_table("db", f"bad{index}", [("x", "int")], location=location_text)
    assert ms.list_tables("db") == ["first"]


def test_a_shared_location_is_never_vacuumed_across(ms: Metastore) -> None:
    outer, location = new_table(ms, "outer")
    inner, inner_location = new_table(ms, "inner", location=str(location / "ds=inner"), share_location=True)
    assert inner_location == location / "ds=inner"
    theirs = [touch(inner_location / "part-0.parquet"), *written(ms, inner, inner_location / "stray.parquet")]
    register(ms, inner, str(theirs[0]), {"ds": "a"})
    (ours,) = written(ms, outer, location / "ds=a" / "stray.parquet")
    listed_by_inner = touch(location / "ds=b" / "part-1.parquet")
    register(ms, inner, str(listed_by_inner), {"ds": "b"})
    assert vacuum(ms, outer) == [str(ours)]
    assert all(p.exists() for p in theirs) and listed_by_inner.exists()
    assert vacuum(ms, inner) == [str(theirs[1])]
    assert theirs[0].exists() and listed_by_inner.exists()


def test_vacuum_refuses_a_table_holding_the_warehouse_or_the_metastore(ms: Metastore, tmp_path: Path) -> None:
    """A table stored by an earlier version with an unsafe location: vacuum deletes nothing at all."""
    _, location = new_table(ms, "victim")
    precious = touch(location / "ds=a" / "part-0.parquet")
    unsafe = [str(tmp_path), ms.warehouse, "data"]
    if ms.store.backend == "sqlite":
        unsafe.append(str(Path(ms.url.split("///", 1)[1]).parent))
    new_table(ms, "wide")
    for location_text in unsafe:
        set_stored_location(ms, "db.wide", location_text)
        before = files_under(tmp_path)
        with pytest.raises(sg.SargableError, match="won't delete"):
            vacuum(ms, "db.wide")
        assert files_under(tmp_path) == before and precious.exists()


def test_metastore_files_are_never_deleted(tmp_path: Path) -> None:
    """Even a table located beside the SQLite metastore (stored by an earlier version) leaves its files alone."""
    path = tmp_path / "w" / "db.db" / "t" / "meta.db"
    with Metastore.open(f"sqlite:///{tmp_path / 'seed.db'}", warehouse=tmp_path / "w") as seed:
        seed.create_database("db")
    path.parent.mkdir(parents=True)
    os.rename(tmp_path / "seed.db", path)
    with Metastore.open(f"sqlite:///{path}", warehouse=tmp_path / "elsewhere") as ms:
        with pytest.raises(sg.MetastoreError, match="metastore"):
            ms.create_table("db", "u", [("x", "int")], location=str(path.parent))
        ms.create_table("db", "u", [("x", "int")], location=str(tmp_path / "u"))
        set_stored_location(ms, "db.u", str(path.parent))
        os.link(path, path.parent / "hardlink.db")
        with pytest.raises(sg.SargableError, match="won't delete"):
            vacuum(ms, "db.u")
        assert path.exists() and (path.parent / "hardlink.db").exists()


def test_entries_of_earlier_versions_are_kept_under_every_reading(ms: Metastore, monkeypatch) -> None:
    """Paths an earlier version stored as given (a raw `file:` URI with a literal `%`, `.` and `..` components):
    listed, so vacuum keeps them."""
    table, location = new_table(ms)
    kept = [touch(location / "ds=a%2Fb" / "part-0.parquet"), touch(location / "ds=a" / "part-1.parquet")]
    spellings = [f"file://{kept[0]}", f"{location}/ds=a/./part-1.parquet", f"{location}/ds=x/../ds=a/part-1.parquet"]
    monkeypatch.setattr("sargable.metastore.files.canonical_file_path", lambda path, base=None: path, raising=False)
    for index, spelling in enumerate(spellings):
        register(ms, table, spelling, {"ds": str(index)})
    monkeypatch.undo()
    assert sorted(f.path for f in ms.list_files("db", "t")) == sorted(spellings)
    (stray,) = written(ms, table, location / "ds=a" / "stray.parquet")
    assert vacuum(ms, table) == [str(stray)]
    assert all(p.exists() for p in kept)


def test_relative_file_paths_are_taken_below_the_table(ms: Metastore) -> None:
    table, location = new_table(ms)
    register(ms, table, "ds=a/part-0.parquet", {"ds": "a"})
    assert [f.path for f in ms.list_files("db", "t")] == [f"{location}/ds=a/part-0.parquet"]


# ------------------------------------------------------------------------------------------ the property


NAMES = ["ds=1", "ds=2", "ds=3", "x", ".hidden", "_tmp", "_sargable_staging", "a b", "%2F", STAGED]
KINDS = ["file", "file", "file", "dir-link", "file-link", "dangling-link"]
SPELLINGS = ["plain", "uri", "hadoop", "double-slash", "dot", "relative"]


def spelled(path: str, location: str, spelling: str) -> str:
    if spelling == "uri":
        return f"file://{path}"
    if spelling == "hadoop":
        return f"file:{path}"
    if spelling == "double-slash":
        return path.replace(location, location + "/", 1)
    if spelling == "dot":
        return path.replace(location, location + "/.", 1)
    if spelling == "relative":
        return os.path.relpath(path, location)
    return path


entries = st.lists(
    st.tuples(
        st.lists(st.sampled_from(NAMES), min_size=0, max_size=3),
        st.sampled_from(KINDS),
        st.sampled_from(["f.parquet", "g.parquet", "h", "i.parquet", ".f.crc", "_SUCCESS"]),
    ),
    min_size=1,
    max_size=14,
)


@pytest.fixture(scope="module", params=BACKENDS)
def scratch(request, tmp_path_factory):
    root = tmp_path_factory.mktemp("vacuum-property")
    postgres = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    ms = Metastore.open(fresh_url(request.param, root, postgres), warehouse=root / "warehouse")
    ms.create_database("db")
    yield ms, root
    ms.close()


@settings(max_examples=100)
@given(
    tree=entries,
    registered=st.lists(st.tuples(st.integers(0, 13), st.sampled_from(SPELLINGS)), max_size=8),
    recorded=st.lists(st.integers(0, 13), max_size=6),
    outside_registered=st.booleans(),
    nested=st.booleans(),
)
def test_vacuum_deletes_exactly_the_garbage_set(
    scratch, tree, registered, recorded, outside_registered, nested
) -> None:
    """Garbage: the files a failed write staged or recorded that no table lists and no nested table holds."""
    ms, root = scratch
    case = root / uuid.uuid4().hex[:10]
    location, outside = case / "t", case / "outside"
    name = f"t{case.name}"
    ms.create_table("db", name, [("x", "int")], [("ds", "string")], location=str(location))
    intent = ms.table("db", name).begin_write()
    staging = location / "_sargable_staging" / intent.write_id
    targets = [touch(outside / "kept.parquet"), touch(outside / "sub" / "deep.parquet")]
    (outside / "inner").mkdir()
    files = []
    for parts, kind, leaf in tree:
        folder = location.joinpath(*(str(staging) if part == STAGED else part for part in parts))
        if folder.is_symlink() or any(p.is_symlink() or p.is_file() for p in folder.parents if case in p.parents):
            continue
        path = folder / leaf
        if path.exists() or path.is_symlink():
            continue
        if folder.exists() and not folder.is_dir():
            continue
        folder.mkdir(parents=True, exist_ok=True)
        if kind == "file":
            files.append(touch(path))
        elif kind == "dir-link":
            path.symlink_to(outside / "sub", target_is_directory=True)
        elif kind == "file-link":
            path.symlink_to(files[-1] if files else targets[0])
        else:
            path.symlink_to(case / "missing")
    inner_location = location / "ds=2"
    if nested:
        ms.create_table(
            "db", f"{name}n", [("x", "int")], [("ds", "string")], location=str(inner_location), share_location=True
        )
    listed = set()
    for index, spelling in registered:
        if not files:
            break
        path = files[index % len(files)]
        owner = f"{name}n" if nested and inner_location in path.parents and index % 2 else name
        owner_location = inner_location if owner != name else location
        if "%" in str(path) and spelling in ("uri", "hadoop"):
            spelling = "plain"
        text = spelled(str(path), str(owner_location), spelling)
        if spelling == "relative" and owner_location not in path.parents:
            continue
        db_file = sg.FileStats(text, 1, 4, partition={"ds": "p"})
        if ms.has_file("db", owner, str(path)):
            continue
        ms.commit("db", owner, add_files=[db_file])
        listed.add(str(path))
    if outside_registered:
        ms.commit("db", name, add_files=[sg.FileStats(str(targets[0]), 1, 4, partition={"ds": "o"})])
    ours = {str(files[index % len(files)]) for index in recorded if files}
    ms.table("db", name).record_write(intent.write_id, sorted(ours))
    garbage = {
        path
        for path in files_under(location)
        if path not in listed
        and (path in ours or staging in Path(path).parents)
        and not (nested and Path(inner_location) in Path(path).parents)
    }
    event(f"garbage: {'some' if garbage else 'none'}; kept as listed: {'some' if listed else 'none'}")
    event(f"symlinks: {any(os.path.islink(p) for p in _entries(location))}; nested table: {nested}")
    before = files_under(case)
    deleted = sgs.vacuum(f"db.{name}", metastore=ms, dry_run=False, older_than=0)
    after = files_under(case)
    assert before - after == garbage
    assert sorted(deleted) == sorted(garbage)
    assert all(t.exists() for t in targets)


# ------------------------------------------------------------------------------------------ removed files (tombstones)


def test_removed_files_stay_until_the_retention_has_passed(ms: Metastore) -> None:
    from sargable.vacuum import expire_removed

    table, location = new_table(ms, "r")
    old = [touch(location / "ds=a" / f"part-{i}.parquet") for i in range(3)]
    for path in old:
        register(ms, table, str(path), {"ds": "a"})
    handle = ms.table(table)
    result = handle.commit(remove_files=[str(old[0]), str(old[1])], add_files=[])
    assert [(t.path, t.version) for t in ms.table(table).tombstones()] == [
        (str(old[0]), result.version),
        (str(old[1]), result.version),
    ]
    assert vacuum(ms, table) == [] and all(p.exists() for p in old)
    kept = sgs.vacuum(table, metastore=ms, dry_run=True, older_than=0)
    assert kept == [], "removed files within the retention are not garbage"
    assert expire_removed(ms, "db", "r").deleted == () and all(p.exists() for p in old)
    with pytest.raises(sg.MetastoreError, match="not a non-negative number of seconds"):
        ms.table(table).set_properties({sg.metastore.RETENTION_PROPERTY: "soon"})
    ms.table(table).set_properties({sg.metastore.RETENTION_PROPERTY: "0"})
    assert ms.table(table).retention_seconds == 0
    expired = expire_removed(ms, "db", "r")
    assert set(expired.deleted) == {str(old[0]), str(old[1])} and old[2].exists()
    assert not old[0].exists() and not old[1].exists() and ms.table(table).tombstones() == []
    with pytest.raises(sg.CommitConflictError, match="another commit removed it"):
        ms.table(table).commit(remove_files=[str(old[0]), str(old[2])], add_files=[])
    assert ms.table(table).has_file(str(old[2])), "a conflicting commit removes nothing"


def test_vacuum_forgets_tombstones_of_files_gone_and_drop_table_clears_them(ms: Metastore) -> None:
    table, location = new_table(ms, "g")
    paths = [touch(location / "ds=a" / f"part-{i}.parquet") for i in range(2)]
    for path in paths:
        register(ms, table, str(path), {"ds": "a"})
    ms.table(table).commit(remove_files=[str(p) for p in paths], add_files=[])
    paths[0].unlink()
    vacuum(ms, table)
    assert [t.path for t in ms.table(table).tombstones()] == [str(paths[1])] and paths[1].exists()
    definition = ms.get_table("db", "g")
    ms.drop_table("db", "g")
    assert ms.tombstones(definition, [str(paths[1])]) == []
