"""Nothing that isn't garbage is ever deleted, whoever moved what (issue 26 row 1 and item 1).

A client of `sargable serve` moved a table's location onto a folder sargable never wrote, and `sargable vacuum
--delete` then deleted every file in it. The rule now (docs/reliability.md, "What vacuum may delete"): vacuum deletes
only what sargable's own writes to the table left at its current location (their write intents) and files commits
removed once their retention has passed; every other file is foreign, whatever its name or age. The property test
moves, re-points and renames a table at random while failed writes leave garbage and a hostile hand plants files
with sargable's names, before and after each move; an independent model says which files are garbage.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from metastore_fixtures import BACKENDS, fresh_url
from sargable.cli import main
from sargable.metastore import Metastore
from sargable.vacuum import vacuum

pytest.importorskip("pymetastore")
from pymetastore.hive_metastore import ttypes
from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.transport.TTransport import TMemoryBuffer

from sargable.hms.catalog import Catalog
from sargable.hms.handler import Handler
from sargable.hms.pool import CatalogPool


def touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"PAR1")
    return path


def files_under(root: Path) -> set[str]:
    return {os.path.join(d, n) for d, _, names in os.walk(root) for n in names}


def _old(paths) -> None:
    """Age files past vacuum's default hour (mtime and atime; the ctime can't be set, so vacuum runs with 0)."""
    for path in paths:
        os.utime(path, (1_000_000_000, 1_000_000_000))


# ------------------------------------------------------------------------------------- issue 26 row 1


def test_alter_table_onto_a_foreign_folder_then_vacuum_delete_deletes_nothing(metastore_url, tmp_path, capsys):
    """The row as a hostile client sent it: `alter_table` (raw Thrift, through the server's Handler) moving a table's
    location onto a folder sargable never wrote, then `sargable vacuum --delete --older-than 0`."""
    precious = tmp_path / "home" / "ann"
    theirs = [
        touch(precious / "thesis.pdf"),
        touch(precious / "ds=2024-01-01" / "part-00000-4f1b2c3d-c000.snappy.parquet"),
        touch(precious / "_sargable_staging" / uuid.uuid4().hex / "part-00001.parquet"),
    ]
    _old(theirs)
    with Metastore.open(metastore_url, warehouse=tmp_path / "warehouse") as ms:  # a table sargable writes
        ms.create_database("d", location=str(tmp_path / "d.db"))
        ms.create_table("d", "t", [("x", "int")], [("ds", "string")])
    pool = CatalogPool(lambda: Catalog(Metastore.open(metastore_url, warehouse=tmp_path / "warehouse")), 1)
    handler = Handler(pool)
    try:
        table = ttypes.Table()
        table.read(TBinaryProtocol(TMemoryBuffer(handler.get_table("d", "t").head)))
        handler.end_call()
        table.sd.location = f"file:{precious}"
        handler.alter_table("d", "t", table)
        handler.end_call()
    finally:
        pool.close()
    code = main(["--metastore", metastore_url, "vacuum", "d.t", "--delete", "--older-than", "0", "--json"])
    assert code == 0
    assert '"files": []' in capsys.readouterr().out
    assert all(p.exists() for p in theirs)


# ------------------------------------------------------------------------------------------ the property


@dataclass
class Model:
    """What the test knows: the table's name and location, the files planted (foreign, by path), and the files failed
    writes left (path -> whether its write still counts: begun at the current location's lineage)."""

    name: str
    location: Path
    planted: set[Path] = field(default_factory=set)
    ours: dict[Path, bool] = field(default_factory=dict)

    def rebase(self, new: Path) -> None:
        """The folder moved: every file in it moved along."""
        move = lambda p: new / p.relative_to(self.location) if self.location in p.parents else p  # noqa: E731
        self.planted = {move(p) for p in self.planted}
        self.ours = {move(p): valid for p, valid in self.ours.items()}
        self.location = new


PLANTED_NAMES = [
    "ds=1/part-00000-0f8e2a34-1b7c-4c1e-9a3d-5e7f8a9b0c1d-c000.snappy.parquet",
    "ds=2/part-0.parquet",
    "part-00003-c000.parquet",
    "_sargable_staging/{hex}/ds=1/part-00000.parquet",
    "_sargable_staging/{hex}/_SUCCESS",
    "ds=1/.part-0.parquet.crc",
]

steps = st.lists(
    st.one_of(
        st.tuples(st.just("plant here"), st.sampled_from(PLANTED_NAMES)),
        st.tuples(st.just("plant there"), st.integers(0, 3), st.sampled_from(PLANTED_NAMES)),
        st.tuples(st.just("failed write"), st.integers(0, 2), st.booleans()),
        st.tuples(st.just("set location"), st.integers(0, 3)),
        st.tuples(st.just("move folder"), st.integers(0, 99)),
        st.tuples(st.just("rename"), st.sampled_from(["t", "u", "v"])),
    ),
    min_size=1,
    max_size=10,
)


@pytest.fixture(scope="module", params=BACKENDS)
def scratch(request, tmp_path_factory):
    root = tmp_path_factory.mktemp("foreign-files")
    postgres = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    ms = Metastore.open(fresh_url(request.param, root, postgres), warehouse=root / "warehouse")
    yield ms, root
    ms.close()


def _plant(model: Model, path: Path) -> None:
    if not path.exists() and not any(p.is_file() for p in path.parents):
        model.planted.add(touch(path))


@settings(max_examples=60)
@given(steps)
def test_vacuum_never_lists_a_planted_file_and_still_finds_failed_writes(scratch, steps):
    ms, root = scratch
    case = root / uuid.uuid4().hex[:10]
    database = f"d{case.name}"
    folders = [case / f"f{i}" for i in range(4)]
    ms.create_database(database, location=str(case / "db"))
    model = Model("t", case / "db" / "t")
    ms.create_table(database, "t", [("x", "int")], [("ds", "string")], str(model.location))
    for index, folder in enumerate(folders):  # files there before any location points at them
        _plant(model, folder / PLANTED_NAMES[index].format(hex=uuid.uuid4().hex))
    for step in steps:
        kind = step[0]
        if kind == "plant here":
            _plant(model, model.location / step[1].format(hex=uuid.uuid4().hex))
        elif kind == "plant there":
            _plant(model, folders[step[1]] / step[2].format(hex=uuid.uuid4().hex))
        elif kind == "failed write":
            handle = ms.table(database, model.name)
            intent = handle.begin_write()
            recorded = [model.location / f"ds={step[1]}" / f"part-{intent.write_id}.parquet"]
            handle.record_write(intent.write_id, [str(p) for p in recorded])
            staged = [model.location / "_sargable_staging" / intent.write_id / "ds=0" / "part-0.parquet"]
            for path in recorded + (staged if step[2] else []):
                if path in model.planted or path in model.ours:
                    continue
                model.ours[touch(path)] = True
        elif kind == "set location":
            target = folders[step[1]]
            if target == model.location:
                continue
            ms.alter_table(database, model.name, location=str(target))
            model.ours = dict.fromkeys(model.ours, False)
            model.location = target
        elif kind == "move folder":
            target = case / f"m{step[1]}"
            if target.exists() or target == model.location:
                continue
            ms.alter_table(database, model.name, location=str(target), move_folder=True)
            model.rebase(target)
        else:
            if step[1] != model.name:
                ms.alter_table(database, model.name, new_name=step[1])
                model.name = step[1]
    expected = {str(p) for p, valid in model.ours.items() if valid and model.location in p.parents}
    event(f"garbage expected: {bool(expected)}; planted: {bool(model.planted)}")
    found = vacuum(ms, database, model.name, dry_run=True)
    assert not {Path(p) for p in found.garbage} & model.planted, "vacuum listed a planted file"
    assert all(Path(p).is_relative_to(model.location) for p in found.garbage)
    assert set(found.garbage) == expected, "garbage of the table's failed writes is found"
    before = files_under(case)
    done = vacuum(ms, database, model.name, dry_run=False)
    assert set(done.deleted) == expected and before - files_under(case) == expected
    assert all(p.exists() for p in model.planted)


def test_a_write_never_claims_a_file_already_at_its_target(metastore, tmp_path):
    """A write records its files' final paths before moving them in: a path where a file already is refuses the
    write (rather than replace the file or let a failed write's intent claim it for vacuum)."""
    pytest.importorskip("pyspark")
    from sargable.deletion import Deleter
    from sargable.errors import SargableError
    from sargable.spark import writer

    metastore.create_database("d")
    metastore.create_table("d", "t", [("x", "int")], [("ds", "string")], str(tmp_path / "t"))
    deleter = Deleter(metastore, metastore.get_table("d", "t"))
    staging = writer.new_staging(deleter)
    foreign = touch(tmp_path / "t" / "ds=a" / "part-00000-c000.snappy.parquet")
    with pytest.raises(SargableError, match="already exists"):
        writer.record_targets(deleter, staging, [str(tmp_path / "t/ds=a/new.parquet"), str(foreign)])
    writes, recorded = metastore.table("d", "t").write_intents()
    assert [w.write_id for w in writes] == [os.path.basename(staging)] and recorded == {}
    assert writer.discard(deleter, [str(foreign)], staging) != [] and foreign.exists()
    assert metastore.table("d", "t").write_intents()[0] != [], "a write that left something keeps its intent"
