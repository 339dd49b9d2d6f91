"""The store suite, run against both backends: SQLite files and the PostgreSQL server that `make test` starts."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import uuid
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sargable.errors import SargableError, StoreError
from sargable.store import Store, TransactionConflictError, open_store

BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


def fresh_url(backend: str, tmp_path, postgres_url: str | None) -> str:
    """An empty store: a new SQLite file, or a new schema in the test PostgreSQL database."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / f'store-{uuid.uuid4().hex[:8]}.db'}"
    assert postgres_url is not None
    return f"{postgres_url}?schema=t_{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=BACKENDS)
def store_url(request, tmp_path) -> str:
    postgres = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    return fresh_url(request.param, tmp_path, postgres)


@pytest.fixture
def store(store_url):
    with open_store(store_url) as opened:
        opened.create_keyspace("main")
        yield opened


def k(i: int) -> bytes:
    return b"key%06d" % i


# --- basics ----------------------------------------------------------------------------------------------------


def test_put_get_delete(store: Store):
    assert store.get("main", b"a") is None
    store.put("main", b"a", b"1")
    store.put("main", bytearray(b"b"), memoryview(b"2"))
    store.put("main", b"a", b"one")
    assert store.get("main", b"a") == b"one" and store.get("main", b"b") == b"2"
    assert store.delete("main", b"a") is True and store.delete("main", b"a") is False
    assert store.get("main", b"a") is None
    store.put("main", b"", b"empty key")
    assert store.get("main", b"") == b"empty key"
    assert list(store.scan("main")) == [(b"", b"empty key"), (b"b", b"2")]


def test_url_and_backend(store: Store, store_url: str):
    assert store.backend == urlsplit(store_url).scheme
    assert store.url == store_url


def test_keyspaces_are_separate_and_validated(store: Store):
    store.create_keyspace("files")
    store.create_keyspace("files")
    store.put("main", b"k", b"main")
    store.put("files", b"k", b"files")
    assert store.keyspaces() == ["files", "main"]
    assert store.get("files", b"k") == b"files" and store.get("main", b"k") == b"main"
    store.drop_keyspace("files")
    store.drop_keyspace("files")
    assert store.keyspaces() == ["main"]
    with pytest.raises(StoreError, match="does not exist"):
        store.get("files", b"k")
    for bad in ["Main", "1x", "a-b", 'x"; drop table kv_main; --', "", "a" * 49, None]:
        with pytest.raises(StoreError, match="invalid keyspace name"):
            store.create_keyspace(bad)
    assert store.get("main", b"k") == b"main"


def test_bad_arguments_raise_store_error(store: Store):
    for call in [
        lambda: store.put("main", "text key", b"v"),
        lambda: store.put("main", b"k", 5),
        lambda: store.get("main", None),
        lambda: store.multi_get("main", b"single key"),
        lambda: store.put_many("main", [(b"k",)]),
        lambda: list(store.scan("main", "a")),
        lambda: list(store.scan("main", limit=-1)),
    ]:
        with pytest.raises(StoreError):
            call()


# --- scans, counts, ranges -------------------------------------------------------------------------------------

_keys = st.binary(max_size=4) | st.lists(st.sampled_from([0, 1, 0x7F, 0xFE, 0xFF]), max_size=4).map(bytes)
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("put"), _keys, st.binary(max_size=3)),
        st.tuples(st.just("delete"), _keys),
        st.tuples(st.just("delete_range"), st.none() | _keys, st.none() | _keys),
        st.tuples(st.just("put_many"), st.lists(st.tuples(_keys, st.binary(max_size=3)), max_size=6)),
    ),
    max_size=25,
)


def _in(key: bytes, start: bytes | None, stop: bytes | None) -> bool:
    return (start is None or key >= start) and (stop is None or key < stop)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_ops, start=st.none() | _keys, stop=st.none() | _keys, reverse=st.booleans(),
       limit=st.none() | st.integers(0, 30))
def test_operations_match_a_sorted_dict(store: Store, ops, start, stop, reverse, limit):
    store.delete_range("main", None, None)
    model: dict[bytes, bytes] = {}
    for op in ops:
        if op[0] == "put":
            store.put("main", op[1], op[2])
            model[op[1]] = op[2]
        elif op[0] == "delete":
            assert store.delete("main", op[1]) == (op[1] in model)
            model.pop(op[1], None)
        elif op[0] == "delete_range":
            doomed = [key for key in model if _in(key, op[1], op[2])]
            assert store.delete_range("main", op[1], op[2]) == len(doomed)
            for key in doomed:
                del model[key]
        else:
            store.put_many("main", op[1])
            model.update(op[1])
    expected = sorted((kv for kv in model.items() if _in(kv[0], start, stop)), reverse=reverse)
    if limit is not None:
        expected = expected[:limit]
    assert list(store.scan("main", start, stop, reverse=reverse, limit=limit)) == expected
    assert store.count("main", start, stop) == sum(_in(key, start, stop) for key in model)
    probe = [*model, b"\x00missing", b"\xff\xffmissing"]
    assert store.multi_get("main", probe) == model


def test_long_scans_page_through_every_key(store: Store):
    n = 20_000
    assert store.put_many("main", ((k(i), b"%d" % i) for i in range(n))) == n
    assert store.count("main") == n
    forward = list(store.scan("main"))
    assert forward == [(k(i), b"%d" % i) for i in range(n)]
    assert list(store.scan("main", reverse=True)) == forward[::-1]
    assert list(store.scan("main", k(100), k(15_000), limit=9_000)) == forward[100:9_100]
    assert list(store.scan("main", k(100), k(15_000), reverse=True, limit=9_000)) == forward[14_999:5_999:-1]
    assert list(store.scan("main", k(500), k(500))) == [] and list(store.scan("main", k(9), k(3))) == []
    assert store.count("main", k(100), k(200)) == 100
    assert store.delete_range("main", k(100), k(200)) == 100
    assert store.count("main") == n - 100
    assert store.get("main", k(99)) is not None and store.get("main", k(100)) is None


def _disjoint(bounds: list[bytes], open_end: bool) -> list[tuple[bytes, bytes | None]]:
    """Sorted, disjoint ranges from sorted bounds taken in pairs (the last one unbounded when `open_end`)."""
    cuts = sorted(set(bounds))
    ranges: list[tuple[bytes, bytes | None]] = [(a, b) for a, b in zip(cuts[::2], cuts[1::2], strict=False)]
    if open_end and len(cuts) % 2:
        ranges.append((cuts[-1], None))
    return ranges


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=st.sets(_keys, max_size=40), bounds=st.lists(_keys, max_size=12), open_end=st.booleans())
def test_scan_ranges_reads_exactly_the_keys_of_its_ranges_in_order(store: Store, keys, bounds, open_end):
    store.delete_range("main", None, None)
    store.put_many("main", [(key, b"v" + key) for key in keys])
    ranges = _disjoint(bounds, open_end)
    expected = [(key, b"v" + key) for key in sorted(keys) if any(_in(key, lo, hi) for lo, hi in ranges)]
    assert list(store.scan_ranges("main", ranges)) == expected


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.data(),
    uniform=st.sampled_from([None, b"", b"\x01"]),
    start=st.none() | _keys,
    stop=st.none() | _keys,
)
def test_scan_blocks_are_the_scan_in_one_piece(store: Store, data, uniform, start, stop):
    """Blocks hold exactly the scan's rows, in key order (NUL, 0xff, bytes that are no UTF-8, empty values), with or
    without a `uniform` value (the values then never concatenate to it but when each is it, as its callers know)."""
    others = st.binary(max_size=12).filter(lambda v: not uniform or v == uniform or v.strip(uniform))
    values = st.sampled_from([b"" if uniform is None else uniform]) | others
    rows = data.draw(st.dictionaries(_keys, values, max_size=40), label="rows")
    store.delete_range("main", None, None)
    store.put_many("main", rows.items())
    blocks = list(store.scan_blocks("main", start, stop, uniform=uniform))
    assert all(len(block) for block in blocks)
    assert [row for block in blocks for row in block.rows()] == list(store.scan("main", start, stop))
    for block in blocks:
        assert block.keys == b"".join(block.key_list()) and block.values == b"".join(block.value_list())
        assert block.last_key() == block.key_list()[-1]
        assert block.head(1).rows() == block.rows()[:1]


def test_scan_blocks_page_through_every_key(store: Store):
    n = 40_000
    store.put_many("main", ((k(i), b"" if i % 3 or i < 30_000 else b"%d" % i) for i in range(n)))
    for uniform in (None, b""):
        blocks = list(store.scan_blocks("main", k(7), None, uniform=uniform))
        assert len(blocks) > 1
        assert [row for block in blocks for row in block.rows()] == list(store.scan("main", k(7), None))


def test_scan_ranges_pages_through_many_ranges(store: Store):
    """Ranges past one statement's batch and pages past the first size: every key once, in key order."""
    store.put_many("main", [(k(i), b"%d" % i) for i in range(30_000)])
    ranges = [(k(i), k(i + 150)) for i in range(0, 30_000, 200)] + [(k(29_990), None)]
    expected = [(k(i), b"%d" % i) for i in range(30_000) if i % 200 < 150 or i >= 29_990]
    assert list(store.scan_ranges("main", ranges)) == expected
    assert list(store.scan_ranges("main", [(k(0), None)]))[-1] == (k(29_999), b"29999")
    with pytest.raises(StoreError, match="sorted"):
        store.scan_ranges("main", [(k(5), k(9)), (k(7), k(20))])
    with pytest.raises(StoreError, match="sorted"):
        store.scan_ranges("main", [(k(5), None), (k(7), k(20))])


def test_transaction_ids_tell_snapshots_apart(store: Store):
    assert store.transaction_id is None
    with store.transaction(readonly=True):
        first = store.transaction_id
        with store.transaction(readonly=True):
            assert store.transaction_id == first
    with store.transaction(readonly=True):
        assert store.transaction_id not in (None, first)


def test_scan_stops_early_without_reading_everything(store: Store):
    store.put_many("main", [(k(i), b"v") for i in range(50_000)])
    scan = store.scan("main")
    assert [next(scan)[0] for _ in range(3)] == [k(0), k(1), k(2)]
    scan.close()


def test_multi_get_in_batches_returns_found_keys(store: Store):
    store.put_many("main", [(k(i), b"%d" % i) for i in range(0, 2_000, 2)])
    wanted = [k(i) for i in range(1_500)] + [k(0), k(2)]
    found = store.multi_get("main", wanted)
    assert found == {k(i): b"%d" % i for i in range(0, 1_500, 2)}
    assert store.multi_get("main", []) == {}


def test_multi_get_of_every_chunk_shape_returns_exactly_the_found_keys(store: Store):
    store.put_many("main", [(k(i), b"%d" % i) for i in range(0, 600, 3)])
    for count in (1, 2, 3, 4, 5, 31, 32, 33, 255, 256, 257, 513):
        wanted = [k(i) for i in range(count)]
        assert store.multi_get("main", wanted) == {k(i): b"%d" % i for i in range(0, count, 3)}
        assert store.multi_get("main", [*wanted[::-1], *wanted]) == {k(i): b"%d" % i for i in range(0, count, 3)}


def test_put_many_last_value_wins(store: Store):
    assert store.put_many("main", [(b"a", b"1"), (b"b", b"2"), (b"a", b"3")]) == 2
    assert store.multi_get("main", [b"a", b"b"]) == {b"a": b"3", b"b": b"2"}


# --- transactions ----------------------------------------------------------------------------------------------


def test_transaction_commits_on_success(store: Store, store_url: str):
    with store.transaction() as tx:
        assert tx is store and store.in_transaction
        store.put("main", b"a", b"1")
        store.put_many("main", [(b"b", b"2")])
        assert store.get("main", b"a") == b"1"
    assert not store.in_transaction
    with open_store(store_url) as other:
        assert other.multi_get("main", [b"a", b"b"]) == {b"a": b"1", b"b": b"2"}


def test_transaction_that_raises_leaves_nothing_behind(store: Store, store_url: str):
    store.put_many("main", [(k(i), b"old") for i in range(10)])
    with pytest.raises(ZeroDivisionError), store.transaction():
        store.put("main", b"new", b"1")
        store.put_many("main", [(k(i), b"changed") for i in range(5)])
        store.delete("main", k(7))
        store.delete_range("main", k(8), None)
        store.create_keyspace("scratch")
        store.put("scratch", b"x", b"y")
        1 / 0  # noqa: B018
    expected = [(k(i), b"old") for i in range(10)]
    assert list(store.scan("main")) == expected
    assert store.keyspaces() == ["main"]
    with open_store(store_url) as other:
        assert list(other.scan("main")) == expected


def test_nested_transaction_is_a_savepoint(store: Store):
    with store.transaction():
        store.put("main", b"outer", b"1")
        with pytest.raises(KeyError), store.transaction():
            store.put("main", b"inner", b"2")
            store.delete("main", b"outer")
            raise KeyError("inner fails")
        assert store.get("main", b"inner") is None and store.get("main", b"outer") == b"1"
        with store.transaction():
            store.put("main", b"inner2", b"3")
    assert list(store.scan("main")) == [(b"inner2", b"3"), (b"outer", b"1")]


def test_database_error_in_a_nested_transaction_undoes_only_the_savepoint(store: Store):
    with store.transaction():
        store.put("main", b"outer", b"1")
        with pytest.raises(StoreError, match="does not exist"), store.transaction():
            store.put("main", b"inner", b"2")
            store.get("missing", b"a")
        store.put("main", b"after", b"3")
        assert store.get_for_update("main", b"outer") == b"1"
    assert list(store.scan("main")) == [(b"after", b"3"), (b"outer", b"1")]


def test_database_error_inside_a_transaction_rolls_back(store: Store):
    with pytest.raises(StoreError, match="does not exist"), store.transaction():
        store.put("main", b"a", b"1")
        store.get("missing", b"a")
    assert store.get("main", b"a") is None
    store.put("main", b"b", b"2")
    assert store.get("main", b"b") == b"2"


def test_readonly_transaction_sees_one_snapshot_and_refuses_writes(store: Store, store_url: str):
    store.put("main", b"a", b"before")
    with open_store(store_url) as writer, store.transaction(readonly=True):
        assert store.get("main", b"a") == b"before"
        writer.put("main", b"a", b"after")
        writer.put("main", b"b", b"new")
        assert store.get("main", b"a") == b"before"
        assert list(store.scan("main")) == [(b"a", b"before")]
        with pytest.raises(StoreError, match="read-only"):
            store.put("main", b"c", b"x")
        with pytest.raises(StoreError, match="read-only"):
            store.get_for_update("main", b"a")
        with pytest.raises(StoreError, match="read-only"), store.transaction():
            pass
    assert store.get("main", b"a") == b"after"


def test_run_in_transaction_retries_conflicts(store: Store):
    calls = []

    def body():
        calls.append(1)
        store.put("main", b"k%d" % len(calls), b"v")
        if len(calls) < 3:
            raise TransactionConflictError("simulated conflict")
        return "done"

    assert store.run_in_transaction(body) == "done"
    assert list(store.scan("main")) == [(b"k3", b"v")]


def test_closed_store_refuses_work(store_url: str):
    store = open_store(store_url)
    store.create_keyspace("main")
    store.close()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.get("main", b"a")


# --- URLs and errors -------------------------------------------------------------------------------------------


def test_unsupported_urls():
    for url in ["mysql://host/db", "nothing", "sqlite://host/file.db", "sqlite:///x.db?mode=ro", 42]:
        with pytest.raises(StoreError):
            open_store(url)


def test_sqlite_error_mentions_the_url(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    url = f"sqlite:///{blocker / 'sub' / 'x.db'}"
    with pytest.raises(StoreError, match=str(blocker)):
        open_store(url)


def test_sqlite_layout_is_wal_and_without_rowid(tmp_path):
    path = tmp_path / "layout.db"
    with open_store(f"sqlite:///{path}") as store:
        store.create_keyspace("main")
        store.put("main", b"k", b"v")
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'kv_main'").fetchone()[0]
        assert "WITHOUT ROWID" in sql and "BLOB PRIMARY KEY" in sql
        assert conn.execute("SELECT typeof(k), typeof(v) FROM kv_main").fetchall() == [("blob", "blob")]
    finally:
        conn.close()


def test_sqlite_memory_store():
    with open_store("sqlite://") as store:
        store.create_keyspace("main")
        store.put("main", b"a", b"1")
        assert store.get("main", b"a") == b"1"


@pytest.mark.postgres
def test_postgres_errors_hide_the_password(postgres_url: str):
    parts = urlsplit(postgres_url)
    host = parts.netloc.split("@")[-1]
    url = f"postgresql://sargable:s3cret@{host}/no_such_database_{uuid.uuid4().hex[:6]}?password=s3cret"
    with pytest.raises(StoreError) as info:
        open_store(url)
    assert "s3cret" not in str(info.value) and host in str(info.value)
    with pytest.raises(StoreError, match="invalid schema"):
        open_store(f"{postgres_url}?schema=Bad-Name")


def test_missing_psycopg_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(SargableError, match=r"pip install 'sargable\[postgres\]'"):
        open_store("postgresql://user@127.0.0.1:1/db")


# --- concurrency -----------------------------------------------------------------------------------------------

_WORKER = textwrap.dedent(
    """
    import sys
    from sargable.store import open_store

    url, wid, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    store = open_store(url)
    print("ready", flush=True)
    sys.stdin.readline()

    def step(i):
        store.put("main", b"tx-%d-%05d" % (wid, i), b"x")
        store.put("main", b"shared-%03d" % (i % 10), b"%d-%d" % (wid, i))
        count = int(store.get_for_update("main", b"counter") or b"0")
        store.put("main", b"counter", b"%d" % (count + 1))

    for i in range(n):
        store.run_in_transaction(step, i)
        store.put("main", b"auto-%d-%05d" % (wid, i), b"y")
        store.put("main", b"auto-shared-%03d" % (i % 10), b"%d" % wid)
        try:
            with store.transaction():
                store.put("main", b"junk-%d-%05d" % (wid, i), b"z")
                raise RuntimeError
        except RuntimeError:
            pass
    store.close()
    print("done", flush=True)
    """
)


def test_two_processes_lose_no_committed_write(store: Store, store_url: str):
    n = 300
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, store_url, str(wid), str(n)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for wid in (0, 1)
    ]
    for worker in workers:
        assert worker.stdout.readline().strip() == "ready", worker.stderr.read()
    for worker in workers:
        worker.stdin.write("go\n")
        worker.stdin.flush()
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0 and out.strip() == "done", err
    data = dict(store.scan("main"))
    assert data[b"counter"] == b"%d" % (2 * n)
    for wid in (0, 1):
        assert all(data.get(b"tx-%d-%05d" % (wid, i)) == b"x" for i in range(n))
        assert all(data.get(b"auto-%d-%05d" % (wid, i)) == b"y" for i in range(n))
    assert {data[b"shared-%03d" % j].split(b"-")[0] for j in range(10)} <= {b"0", b"1"}
    assert all(data[b"auto-shared-%03d" % j] in (b"0", b"1") for j in range(10))
    assert not any(key.startswith(b"junk") for key in data)
    assert len(data) == 1 + 4 * n + 20
