"""Multi-process safety of the metastore on both backends (a SQLite file, a PostgreSQL schema).

- Writers in separate processes commit partitions with their files while a reader process queries: every
  acknowledged commit is in the final state, no failed one is, no read ever sees half a commit (each commit adds two
  partitions at opposite ends of the key order, each with a file whose statistics name it), and optimistic writers
  that lose a race get `CommitConflictError` and retry.
- A failing change (bad value, clash detected mid-transaction, store failure, killed process) leaves every keyspace
  byte-for-byte as it was.
- Concurrent `add_partitions(if_not_exists=True)` of overlapping sets adds each partition exactly once.
- Catalog changes racing on PostgreSQL (READ COMMITTED) keep table ids unique and names exclusive, and a dropped
  table keeps no rows a racing commit wrote.
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import signal
import threading
import time
import traceback
from typing import Any

import pytest

import sargable as sg
from metastore_fixtures import BACKENDS, fresh_url
from sargable import keys
from sargable.metastore import Metastore
from sargable.metastore.schema import KEYSPACES, PARTITIONS
from sargable.stats import ColumnStats, FileStats

DB, TABLE = "c", "events"
WRITERS = 4
WRITE_SECONDS = 3.0
FILLERS = 300
"""Partitions between the two ends of every commit, so a full listing spans several store pages."""
_SPAWN = mp.get_context("spawn")


@pytest.fixture(params=BACKENDS)
def url(request, tmp_path) -> str:
    postgres = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    return fresh_url(request.param, tmp_path, postgres)


def _open(url: str) -> Metastore:
    return Metastore.open(url, warehouse="/tmp/sargable-concurrency-warehouse")


def _create(url: str, *, index_all: bool = True) -> None:
    with _open(url) as ms:
        ms.create_database(DB)
        ms.create_table(
            DB,
            TABLE,
            [("amount", "double")],
            [("side", "string"), ("w", "int"), ("i", "int")],
            index_all=index_all,
        )
        ms.add_partitions(DB, TABLE, [("m", -1, i) for i in range(FILLERS)])


def _files(w: int, i: int) -> list[FileStats]:
    """The files of commit (w, i): one in partition ('a', w, i), one in ('z', w, i), with stats naming i."""
    return [
        FileStats(
            path=f"/data/side={side}/w={w}/i={i}/part-0.parquet",
            row_count=1,
            size_bytes=100,
            columns={"amount": ColumnStats(min=float(i), max=float(i), null_count=0)},
            partition={"side": side, "w": w, "i": i},
        )
        for side in ("a", "z")
    ]


def dump(ms: Metastore) -> dict[str, list[tuple[bytes, bytes]]]:
    """Every key and value of every keyspace: what 'exactly as it was' compares."""
    return {keyspace: list(ms.store.scan(keyspace)) for keyspace in KEYSPACES}


# ------------------------------------------------------------------------------------------- processes


def _worker(queue: Any, name: str, fn: Any, args: tuple) -> None:
    try:
        queue.put((name, fn(*args)))
    except BaseException:
        queue.put((name, {"error": traceback.format_exc()}))


def _run_processes(jobs: dict[str, tuple], *, stop: Any = None, until: list[str] | None = None) -> dict[str, Any]:
    """Run `name -> (fn, args)` in spawned processes; set `stop` once the jobs in `until` reported."""
    queue = _SPAWN.Queue()
    procs = [_SPAWN.Process(target=_worker, args=(queue, name, fn, args)) for name, (fn, args) in jobs.items()]
    for proc in procs:
        proc.start()
    results: dict[str, Any] = {}
    try:
        while len(results) < len(procs):
            name, result = queue.get(timeout=240)
            results[name] = result
            if stop is not None and until is not None and all(n in results for n in until):
                stop.set()
    finally:
        for proc in procs:
            proc.join(timeout=60)
            if proc.is_alive():
                proc.kill()
    errors = {name: r["error"] for name, r in results.items() if isinstance(r, dict) and "error" in r}
    assert not errors, "\n".join(f"{name}:\n{text}" for name, text in errors.items())
    return results


def _writer(url: str, w: int, start: Any, seconds: float, optimistic: bool) -> dict[str, Any]:
    """Commit (w, 0), (w, 1), ... for `seconds`; every 7th attempt clashes mid-transaction, every 11th is invalid."""
    acked, failed, conflicts = [], [], 0
    with _open(url) as ms:
        start.wait(120)
        deadline = time.monotonic() + seconds
        i = 0
        while time.monotonic() < deadline:
            files = _files(w, i)
            if i % 7 == 6 and acked:
                files[1] = dataclasses.replace(files[1], path=_files(w, acked[-1])[0].path)
            elif i % 11 == 10:
                files[1] = dataclasses.replace(files[1], columns={"no_such_column": ColumnStats(min=1, max=2)})
            while True:
                expected = ms.get_table(DB, TABLE).version if optimistic else None
                try:
                    ms.commit(DB, TABLE, add_files=files, expected_version=expected)
                    acked.append(i)
                except sg.CommitConflictError:
                    conflicts += 1
                    continue
                except (sg.AlreadyExistsError, sg.MetastoreError):
                    failed.append(i)
                break
            i += 1
    return {"acked": acked, "failed": failed, "conflicts": conflicts}


def _state(ms: Metastore) -> tuple[dict[str, set[tuple[int, int]]], list[FileStats], int]:
    """(commits visible per side, files, version), all from one snapshot."""
    with ms.snapshot():
        parts = ms.get_partitions_by_filter(DB, TABLE, "side <> 'm'")
        files = ms.list_files(DB, TABLE)
        version = ms.get_table(DB, TABLE).version
    sides: dict[str, set[tuple[int, int]]] = {"a": set(), "z": set()}
    for p in parts:
        sides[p.values[0]].add(p.values[1:])
    return sides, files, version


def _check_state(sides: dict[str, set], files: list[FileStats]) -> list[str]:
    problems = []
    if sides["a"] != sides["z"]:
        problems.append(f"half a commit: a-z {sides['a'] - sides['z']}, z-a {sides['z'] - sides['a']}")
    by_partition = {}
    for f in files:
        key = (f.partition["side"], f.partition["w"], f.partition["i"])
        if f.path != _files(key[1], key[2])[0 if key[0] == "a" else 1].path or f.columns["amount"].min != key[2]:
            problems.append(f"file {f.path} does not match its partition {key}")
        by_partition[key] = f
    with_partitions = {(s, *wi) for s, commits in sides.items() for wi in commits}
    if set(by_partition) != with_partitions:
        problems.append(f"partitions without files or files without partitions: {set(by_partition) ^ with_partitions}")
    return problems


def _reader(url: str, start: Any, stop: Any) -> dict[str, Any]:
    """Query until `stop`: one snapshot must hold whole commits only and see the set of commits only grow."""
    reads, problems = 0, []
    seen: set[tuple[int, int]] = set()
    version = -1
    with _open(url) as ms:
        start.wait(120)
        while not stop.is_set() or reads < 3:
            sides, files, now = _state(ms)
            problems += _check_state(sides, files)
            if not seen <= sides["a"] or now < version:
                problems.append(f"commits disappeared: {seen - sides['a']} (version {version} -> {now})")
            seen, version = sides["a"], now
            names = ms.list_partition_names(DB, TABLE)
            a = {tuple(n.split("/")[1:]) for n in names if n.startswith("side=a/")}
            z = {tuple(n.split("/")[1:]) for n in names if n.startswith("side=z/")}
            if a != z:
                problems.append(f"one listing saw half a commit: {a ^ z}")
            if len(names) - len(a) - len(z) != FILLERS:
                problems.append(f"the filler partitions changed: {len(names) - len(a) - len(z)}")
            by_index = ms.get_partitions_by_filter(DB, TABLE, "w = 0")
            if {p.values[1:] for p in by_index if p.values[0] == "a"} != {
                p.values[1:] for p in by_index if p.values[0] == "z"
            }:
                problems.append("an index lookup saw half a commit")
            reads += 1
    return {"reads": reads, "problems": problems[:20]}


def test_concurrent_commits_are_atomic_and_none_is_lost(url: str) -> None:
    _create(url)
    with _open(url) as ms:
        initial = ms.get_table(DB, TABLE).version
    start, stop = _SPAWN.Event(), _SPAWN.Event()
    jobs: dict[str, tuple] = {f"w{w}": (_writer, (url, w, start, WRITE_SECONDS, w % 2 == 0)) for w in range(WRITERS)}
    jobs["reader"] = (_reader, (url, start, stop))
    threading.Timer(0.5, start.set).start()
    results = _run_processes(jobs, stop=stop, until=[f"w{w}" for w in range(WRITERS)])

    assert results["reader"]["problems"] == []
    assert results["reader"]["reads"] >= 3
    acked = {(w, i) for w in range(WRITERS) for i in results[f"w{w}"]["acked"]}
    failed = {(w, i) for w in range(WRITERS) for i in results[f"w{w}"]["failed"]}
    assert acked and failed and not acked & failed
    with _open(url) as ms:
        sides, files, version = _state(ms)
        assert _check_state(sides, files) == []
        assert sides["a"] == acked
        assert version == initial + len(acked)
        assert ms.count_partitions(DB, TABLE) == FILLERS + 2 * len(acked)
        stats = ms.table_stats(DB, TABLE)
        assert stats == (
            FILLERS + 2 * len(acked),
            len(files),
            sum(f.size_bytes for f in files),
            sum(f.row_count for f in files),
        )
        assert len(list(ms.store.scan("pindex"))) == 2 * (FILLERS + 2 * len(acked))
        for w in range(WRITERS):
            by_index = {p.values for p in ms.get_partitions_by_filter(DB, TABLE, f"w = {w}")}
            assert by_index == {(s, w, i) for s in "az" for (ww, i) in acked if ww == w}


# --------------------------------------------------------------------------------- failures change nothing


def _seed(url: str) -> Metastore:
    _create(url)
    ms = _open(url)
    ms.commit(DB, TABLE, add_files=_files(0, 0) + _files(0, 1))
    ms.alter_partition(DB, TABLE, ("a", 0, 1), location="/elsewhere/a01", parameters={"k": "v"})
    return ms


def test_a_failing_change_leaves_every_keyspace_as_it_was(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ms = _seed(url)
    before = dump(ms)
    batch = [("b", 1, i) for i in range(500)] + [("b", 1, "not-an-int")]
    with pytest.raises(sg.MetastoreError, match="not-an-int"):
        ms.add_partitions(DB, TABLE, batch)
    with pytest.raises(sg.AlreadyExistsError):
        ms.add_partitions(DB, TABLE, [("b", 2, i) for i in range(500)] + [("a", 0, 0)])
    bad_stats = dataclasses.replace(_files(5, 0)[1], columns={"nope": ColumnStats()})
    with pytest.raises(sg.MetastoreError, match="nope"):
        ms.commit(DB, TABLE, add_files=[_files(5, 0)[0], bad_stats])
    clash = dataclasses.replace(_files(5, 2)[1], path=_files(0, 0)[0].path)
    with pytest.raises(sg.AlreadyExistsError):
        ms.commit(DB, TABLE, add_files=[*_files(5, 2), clash], replace_partitions=[("a", 0, 1)])
    with pytest.raises(sg.CommitConflictError):
        ms.commit(DB, TABLE, add_files=_files(5, 3), remove_files=[_files(0, 0)[0].path, "/missing.parquet"])
    with pytest.raises(sg.CommitConflictError):
        ms.commit(DB, TABLE, add_files=_files(5, 4), expected_version=ms.get_table(DB, TABLE).version - 1)
    assert dump(ms) == before

    real_put_many, real_put, real_delete = ms.store.put_many, ms.store.put, ms.store.delete

    def failing_put_many(keyspace: str, items: Any) -> int:
        if keyspace == "pindex" or keyspace == "filepaths":
            raise sg.StoreError("disk full (simulated)")
        return real_put_many(keyspace, items)

    def failing_put(keyspace: str, key: bytes, value: bytes) -> None:
        if keyspace == "pindex":
            raise sg.StoreError("disk full (simulated)")
        real_put(keyspace, key, value)

    monkeypatch.setattr(ms.store, "put_many", failing_put_many)
    monkeypatch.setattr(ms.store, "put", failing_put)
    with pytest.raises(sg.StoreError, match="simulated"):
        ms.add_partitions(DB, TABLE, [("b", 4, i) for i in range(3000)])
    with pytest.raises(sg.StoreError, match="simulated"):
        ms.commit(DB, TABLE, add_files=_files(0, 0)[:1] + _files(6, 0), replace_partitions=[("a", 0, 0)])
    with pytest.raises(sg.StoreError, match="simulated"):
        ms.alter_partition(DB, TABLE, ("a", 0, 0), location="/y")
    monkeypatch.setattr(ms.store, "put_many", real_put_many)
    monkeypatch.setattr(ms.store, "put", real_put)
    deletes = []

    def failing_delete(keyspace: str, key: bytes) -> bool:
        deletes.append(keyspace)
        if len(deletes) > 5:
            raise sg.StoreError("connection lost (simulated)")
        return real_delete(keyspace, key)

    monkeypatch.setattr(ms.store, "delete", failing_delete)
    with pytest.raises(sg.StoreError, match="simulated"):
        ms.drop_partitions(DB, TABLE, "side <> 'q'")
    monkeypatch.setattr(ms.store, "delete", real_delete)
    assert dump(ms) == before
    ms.close()


def _killed_writer(url: str) -> None:
    """Commit 3,000 partitions with files, and die (SIGKILL) once the transaction has written some of them."""
    ms = _open(url)
    real_put_many = ms.store.put_many

    def put_many(keyspace: str, items: Any) -> int:
        written = real_put_many(keyspace, items)
        if keyspace == PARTITIONS:
            os.kill(os.getpid(), signal.SIGKILL)
        return written

    ms.store.put_many = put_many  # type: ignore[method-assign]
    ms.commit(DB, TABLE, add_files=[f for i in range(1500) for f in _files(7, i)])


def test_a_killed_writer_leaves_nothing_and_releases_its_locks(url: str) -> None:
    ms = _seed(url)
    before = dump(ms)
    proc = _SPAWN.Process(target=_killed_writer, args=(url,))
    proc.start()
    proc.join(120)
    assert proc.exitcode == -signal.SIGKILL
    assert dump(ms) == before
    assert ms.commit(DB, TABLE, add_files=_files(8, 0)).files_added == 2
    assert ms.count_partitions(DB, TABLE) == FILLERS + 6
    ms.close()


# ----------------------------------------------------------------------------- overlapping add_partitions


def _adder(url: str, start: Any, k: int) -> dict[str, Any]:
    """Add days k*10 .. k*10+19 (overlapping the next adder's) x 24 hours, one day per call, in a shuffled order:
    as side 'd' with if_not_exists=True and as side 'e' without it."""
    days = list(range(k * 10, k * 10 + 20))
    days = days[k % 2 :: 2] + days[1 - k % 2 :: 2]
    added: dict[str, dict[int, int]] = {"d": {}, "e": {}}
    refused: dict[str, list[int]] = {"d": [], "e": []}
    with _open(url) as ms:
        start.wait(120)
        for day in days:
            for side, if_not_exists in (("d", True), ("e", False)):
                try:
                    added[side][day] = ms.add_partitions(
                        DB, TABLE, [(side, day, hr) for hr in range(24)], if_not_exists=if_not_exists
                    )
                except sg.AlreadyExistsError:
                    refused[side].append(day)
    return {"added": added, "refused": refused}


def test_concurrent_overlapping_add_partitions(url: str) -> None:
    """Overlapping batches: with if_not_exists each partition is added exactly once; without it, a batch that
    overlaps an earlier one is refused whole."""
    _create(url)
    start = _SPAWN.Event()
    threading.Timer(0.5, start.set).start()
    results = _run_processes({f"a{k}": (_adder, (url, start, k)) for k in range(WRITERS)})
    all_days = set(range(WRITERS * 10 + 10))
    every = {(day, hr) for day in all_days for hr in range(24)}
    with _open(url) as ms:
        for side in "de":
            got = {p.values[1:] for p in ms.get_partitions_by_filter(DB, TABLE, f"side = '{side}'")}
            assert got == every
            added = [(day, n) for r in results.values() for day, n in r["added"][side].items()]
            assert sum(n for _, n in added) == len(every)
            by_index = [p.values for p in ms.get_partitions_by_filter(DB, TABLE, f"i = 7 and side = '{side}'")]
            assert by_index == [(side, day, 7) for day in sorted(all_days)]
        assert all(not r["refused"]["d"] for r in results.values())
        strict = [(day, n) for r in results.values() for day, n in r["added"]["e"].items()]
        assert all(n == 24 for _, n in strict)
        assert sorted(day for day, _ in strict) == sorted(all_days)
        assert len(list(ms.store.scan("pindex"))) == 2 * (FILLERS + 2 * len(every))


# ------------------------------------------------------------------------------------ reads see snapshots


def test_one_call_reads_one_snapshot(url: str) -> None:
    """A commit landing between two store pages (or two key ranges) of one call is seen whole or not at all."""
    _create(url)
    reader, writer = _open(url), _open(url)
    real_scan = reader.store.scan
    commits: list[int] = []

    def scan(keyspace: str, *args: Any, **kwargs: Any) -> Any:
        for n, row in enumerate(real_scan(keyspace, *args, **kwargs)):
            if keyspace == PARTITIONS and n == 10 and len(commits) < calls:
                writer.commit(DB, TABLE, add_files=_files(9, len(commits)))
                commits.append(len(commits))
            yield row

    real_scan_pages = reader.store.scan_pages

    def scan_pages(keyspace: str, *args: Any, **kwargs: Any) -> Any:
        seen = 0
        for page in real_scan_pages(keyspace, *args, **kwargs):
            if keyspace == PARTITIONS and seen <= 10 < seen + len(page) and len(commits) < calls:
                writer.commit(DB, TABLE, add_files=_files(9, len(commits)))
                commits.append(len(commits))
            seen += len(page)
            yield page

    real_scan_blocks = reader.store.scan_blocks

    def scan_blocks(keyspace: str, *args: Any, **kwargs: Any) -> Any:
        seen = 0
        for block in real_scan_blocks(keyspace, *args, **kwargs):
            if keyspace == PARTITIONS and seen <= 10 < seen + len(block) and len(commits) < calls:
                writer.commit(DB, TABLE, add_files=_files(9, len(commits)))
                commits.append(len(commits))
            seen += len(block)
            yield block

    reader.store.scan = scan  # type: ignore[method-assign]
    reader.store.scan_pages = scan_pages  # type: ignore[method-assign]
    reader.store.scan_blocks = scan_blocks  # type: ignore[method-assign]
    calls = 1
    names = reader.list_partition_names(DB, TABLE)
    assert commits == [0]
    assert [n for n in names if "w=9" in n] == []
    calls = 2
    parts = reader.get_partitions_by_filter(DB, TABLE, "side <> 'q'")
    assert commits == [0, 1]
    assert [p.values for p in parts if p.values[1] == 9] == [("a", 9, 0), ("z", 9, 0)]
    reader.store.scan = real_scan  # type: ignore[method-assign]
    reader.store.scan_pages = real_scan_pages  # type: ignore[method-assign]
    reader.store.scan_blocks = real_scan_blocks  # type: ignore[method-assign]
    assert len([n for n in reader.list_partition_names(DB, TABLE) if "w=9" in n]) == 4
    reader.close()
    writer.close()


# ------------------------------------------------------------------------------------- racing catalog changes


def _race(url: str, method: str, when: Any, first: Any, second: Any) -> tuple[Any, Any]:
    """Run `first(ms_a)`; right after its store call `method` matching `when(*args)`, run `second(ms_b)` in a thread
    and give it one second to finish: under proper locking it waits for `first`'s transaction instead."""
    ms_a, ms_b = _open(url), _open(url)
    outcome: dict[str, Any] = {}

    def run_second() -> None:
        try:
            outcome["second"] = second(ms_b)
        except sg.SargableError as exc:
            outcome["second"] = exc

    thread = threading.Thread(target=run_second)
    real = getattr(ms_a.store, method)

    def hooked(*args: Any) -> Any:
        result = real(*args)
        if when(*args) and not thread.is_alive() and "second" not in outcome:
            thread.start()
            thread.join(1.0)
        return result

    setattr(ms_a.store, method, hooked)
    try:
        outcome["first"] = first(ms_a)
    except sg.SargableError as exc:
        outcome["first"] = exc
    setattr(ms_a.store, method, real)
    thread.join(60)
    ms_a.close()
    ms_b.close()
    return outcome["first"], outcome["second"]


def test_racing_create_table_gets_distinct_ids(url: str) -> None:
    _create(url)
    a, b = _race(
        url,
        "get",
        lambda keyspace, key: key == b"\x00table-id",
        lambda ms: ms.create_table(DB, "one", [("x", "int")], [("p", "int")]),
        lambda ms: ms.create_table(DB, "two", [("x", "int")], [("p", "int")]),
    )
    assert a.table_id != b.table_id
    with _open(url) as ms:
        ms.add_partitions(DB, "one", [(1,)])
        assert ms.list_partition_names(DB, "two") == []
        assert {ms.get_table(DB, n).table_id for n in ("one", "two", TABLE)} == {a.table_id, b.table_id, 1}


def test_racing_create_table_of_one_name_creates_it_once(url: str) -> None:
    _create(url)
    same = b"T" + keys.encode([DB, "same"], ["string", "string"])
    a, b = _race(
        url,
        "get",
        lambda keyspace, key: key == same,
        lambda ms: ms.create_table(DB, "same", [("x", "int")], [("p", "int")]),
        lambda ms: ms.create_table(DB, "same", [("y", "string")], [("q", "string")]),
    )
    assert isinstance(a, sg.metastore.TableDefinition)
    assert isinstance(b, sg.AlreadyExistsError)
    with _open(url) as ms:
        assert ms.get_table(DB, "same").columns == a.columns


def test_a_commit_racing_drop_table_leaves_no_rows(url: str) -> None:
    _create(url)
    with _open(url) as ms:
        prefix = ms.get_table(DB, TABLE).table_id.to_bytes(8, "big")
    a, b = _race(
        url,
        "delete_range",
        lambda keyspace, *bounds: keyspace == PARTITIONS,
        lambda ms: ms.drop_table(DB, TABLE),
        lambda ms: ms.commit(DB, TABLE, add_files=_files(3, 3)),
    )
    assert a is None
    with _open(url) as ms:
        leftovers = {ks: [k for k, _ in ms.store.scan(ks) if k.startswith(prefix)] for ks in KEYSPACES[1:]}
        assert leftovers == {ks: [] for ks in KEYSPACES[1:]}
        if isinstance(b, dict):
            pytest.fail(f"the commit succeeded on a dropped table: {b}")
        assert isinstance(b, sg.NoSuchObjectError)


# ------------------------------------------------------------------------- index entries carry partition values


def test_index_lookups_see_current_locations(url: str) -> None:
    """Index entries carry the partition's stored value; back-fill, alter and legacy (valueless) entries agree."""
    _create(url, index_all=False)
    with _open(url) as ms:
        ms.commit(DB, TABLE, add_files=_files(1, 1) + _files(1, 2))
        ms.alter_partition(DB, TABLE, ("a", 1, 1), location="/moved/a11", parameters={"k": "v"})
        ms.create_index(DB, TABLE, "w")
        ms.alter_partition(DB, TABLE, ("z", 1, 2), location="/moved/z12")
        expected = {p.values: (p.location, p.parameters) for p in ms.get_partitions_by_filter(DB, TABLE, "side <> 'm'")}
        assert "index on w" in ms.explain_filter(DB, TABLE, "w = 1").access_path
        by_index = ms.get_partitions_by_filter(DB, TABLE, "w = 1")
        assert {p.values: (p.location, p.parameters) for p in by_index} == expected
        assert expected[("a", 1, 1)] == ("/moved/a11", {"k": "v"})
        assert expected[("z", 1, 2)] == ("/moved/z12", {})
        legacy = [(key, b"") for key, _ in ms.store.scan("pindex")]
        ms.store.put_many("pindex", legacy)
        assert [(p.values, p.location, p.parameters) for p in ms.get_partitions_by_filter(DB, TABLE, "w = 1")] == [
            (p.values, p.location, p.parameters) for p in by_index
        ]
        ms.drop_partitions(DB, TABLE, "side = 'a' and i = 1")
        assert [p.values for p in ms.get_partitions_by_filter(DB, TABLE, "w = 1")] == [
            ("a", 1, 2),
            ("z", 1, 1),
            ("z", 1, 2),
        ]
