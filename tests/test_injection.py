"""Hostile names and values on both backends: each works as a plain value or is refused with a clear error.

A corpus of strings an attacker or a careless pipeline might hand the metastore (quotes, `; DROP TABLE`, SQL
comments, NUL, path traversal, very long text, lone surrogates, newlines, `%`, Hive's NULL folder name,
right-to-left marks) is used as database, table, column and partition-key names, partition values, partition
parameters and file paths. Every use either round-trips exactly (add, then read back by filter tree, filter text,
serialized filter, Hive name and listing) or raises a `SargableError` that says what is wrong.

Proof that no SQL other than sargable's own runs: on SQLite every statement the connection executes is captured
(`set_trace_callback`, which shows the statement with its parameters expanded) and must be one of the store's fixed
statement templates with only blob/integer literals in the parameter slots; on PostgreSQL the server logs every
statement of the store's session (`log_statement = all`), and each must be a template with `$n` placeholders
(the values travel separately, as bound parameters). A canary table beside the keyspaces must survive, the set of
tables must not change, and no file may appear anywhere (the metastore writes no data files; a partition's default
location is derived under its table's location, which is checked for every hostile value).
"""

from __future__ import annotations

import os
import random
import re
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import sargable as sg
from metastore_fixtures import fresh_url
from sargable.expr import Comparison, IsNull, Literal, col
from sargable.metastore import Metastore, Partition
from sargable.stats import FileStats
from sargable.types import STRING

ONE_MB = 1_000_000
HOSTILE = [
    "'", '"', "`", "a'b", "a''b", "\\'", "it\\'s", "'; DROP TABLE kv_catalog; --", "x'); DELETE FROM kv_partitions; --",
    "\" OR 1=1 --", "1 OR 1=1", "1; SELECT pg_sleep(10)", "/* comment */", "*/", "-- comment", "%", "_", "%' OR '1'='1",
    "\x00", "a\x00b", "\n", "a\nb", "\r\n", "\t", "../", "../../etc/passwd", "..", ".", "/", "//", "\\..\\..\\windows",
    "%2e%2e%2f", "%2F", "%", "%%", "__HIVE_DEFAULT_PARTITION__", "", " ", "\u202e", "abc\u202edcba", "\u200f", "\ufeff",
    "é", "😀", "\ud800", "a\udfffb", "$1", "%s", "?", ":name", "{}", "${jndi:ldap://x}", "\x1b[31m", "NULL", "null",
    "DEFAULT", "kv_catalog", "a=b", "a/b=c", "x" * 2000,
]
"""The values tried everywhere. A 1 MB value (`HUGE`) is tried as names here and as a partition value on both
backends in test_an_overlong_key_is_refused_alike_on_every_backend (SQLite's statement trace would spend seconds
printing it in the lookups that precede the refused write)."""
HUGE = "x" * ONE_MB
SURROGATES = re.compile("[\ud800-\udfff]")


def short(text: str) -> str:
    return repr(text if len(text) <= 40 else f"{text[:40]}... ({len(text)} chars)")


# ---------------------------------------------------------------------------------- statement capture


class Capture:
    """Every SQL statement the store's own connection sends, and the templates it is allowed to send."""

    def __init__(self, ms: Metastore) -> None:
        self.ms = ms
        self.store = ms.store
        self.statements: list[str] = []
        self._stop: Callable[[], None] = lambda: None
        self._log: Path | None = None
        self._offset = 0
        self._pid = 0

    def start(self) -> None:
        if self.store.backend == "sqlite":
            conn = self.store._conn
            conn.set_trace_callback(self.statements.append)
            self._stop = lambda: conn.set_trace_callback(None)
            return
        conn = self.store._conn
        datadir = conn.execute("SHOW data_directory").fetchone()[0]
        self._log = Path(datadir).parent / "server.log"
        assert self._log.is_file(), f"no server log at {self._log} (scripts/postgres.sh writes it there)"
        self._pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        conn.execute("SET log_statement = 'all'")
        self._offset = self._log.stat().st_size

    def stop(self) -> None:
        self._stop()
        if self._log is None:
            return
        self.store._conn.execute("RESET log_statement")
        time.sleep(0.2)
        with open(self._log, "rb") as f:
            f.seek(self._offset)
            text = f.read().decode("utf-8", "replace")
        self.statements = _logged_statements(text, self._pid)[:-1]

    def templates(self) -> list[re.Pattern[str]]:
        """The statements sargable's store may send, as patterns matching them with any parameter values."""
        sqlite = self.store.backend == "sqlite"
        texts = {sql for statements in self.store._statements.values() for sql in vars(statements).values()}
        patterns = []
        for sql in texts:
            if sqlite:
                pattern = re.escape(sql).replace(r"\?", r"(?:x'[0-9a-f]*'|-?[0-9]+)")
            else:
                pieces = sql.split("%s")
                pattern = re.escape(pieces[0]) + "".join(
                    rf"\${n}" + re.escape(piece) for n, piece in enumerate(pieces[1:], start=1)
                )
            patterns.append(re.compile(pattern + r"\Z"))
        fixed = [  # transactions, and psycopg dropping its prepared statements after a failed one
            r"BEGIN (IMMEDIATE|DEFERRED)",
            r"BEGIN ISOLATION LEVEL (READ COMMITTED|REPEATABLE READ READ ONLY)",
            r"COMMIT",
            r"ROLLBACK",
            r"(SAVEPOINT|RELEASE SAVEPOINT|ROLLBACK TO SAVEPOINT) sargable_[0-9]+",
            r"DEALLOCATE (ALL|_pg3_[0-9]+)",
        ]
        return patterns + [re.compile(p + r"\Z") for p in fixed]

    def foreign(self) -> list[str]:
        """Captured statements that are none of the templates."""
        templates = self.templates()
        return [s for s in self.statements if not any(t.match(s) for t in templates)]


_LOG_ENTRY = re.compile(r"^\S+ \S+ \S+ \[(\d+)\] (\w+):  (.*)$")


def _logged_statements(text: str, pid: int) -> list[str]:
    """The statements one backend process logged (`statement: ...` / `execute <name>: ...`), continuation lines
    joined."""
    entries: list[list[str]] = []
    for line in text.splitlines():
        match = _LOG_ENTRY.match(line)
        if match:
            entries.append([match.group(1), match.group(2), match.group(3)])
        elif entries:
            entries[-1][2] += "\n" + line.removeprefix("\t")
    out = []
    for entry_pid, level, message in entries:
        if int(entry_pid) != pid or level != "LOG":
            continue
        match = re.match(r"(?:statement|execute [^:]*): (.*)\Z", message, re.DOTALL)
        if match:
            out.append(match.group(1))
    return out


# ------------------------------------------------------------------------------------------ canary and files


def _tables(ms: Metastore) -> set[str]:
    if ms.store.backend == "sqlite":
        with sqlite3.connect(ms.store.path) as conn:
            return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    import psycopg

    with psycopg.connect(os.environ["SARGABLE_TEST_POSTGRES_URL"]) as conn:
        rows = conn.execute("SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = %s", (ms.store.schema,))
        return {r[0] for r in rows}


def _canary(ms: Metastore, action: str) -> Any:
    """Create (`plant`) or read back (`read`) a table beside the keyspaces that no sargable statement touches."""
    if ms.store.backend == "sqlite":
        with sqlite3.connect(ms.store.path) as conn:
            if action == "plant":
                conn.execute("CREATE TABLE victim (x TEXT)")
                conn.execute("INSERT INTO victim VALUES ('alive')")
            return conn.execute("SELECT x FROM victim").fetchall()
    import psycopg

    table = f'"{ms.store.schema}".victim'
    with psycopg.connect(os.environ["SARGABLE_TEST_POSTGRES_URL"], autocommit=True) as conn:
        if action == "plant":
            conn.execute(f"CREATE TABLE {table} (x text)")
            conn.execute(f"INSERT INTO {table} VALUES ('alive')")
        return conn.execute(f"SELECT x FROM {table}").fetchall()


def _files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def guarded(metastore: Metastore, tmp_path: Path) -> Iterator[Capture]:
    """The metastore with its statements captured; afterwards: only sargable's statements ran, the canary table
    and the table set are intact, and no file appeared under the test's directory."""
    _canary(metastore, "plant")
    tables = _tables(metastore)
    files = _files_under(tmp_path)
    capture = Capture(metastore)
    capture.start()
    yield capture
    capture.stop()
    assert len(capture.statements) > 50
    assert capture.foreign() == []
    assert _canary(metastore, "read") == [("alive",)]
    assert _tables(metastore) == tables
    assert _files_under(tmp_path) == files


# ------------------------------------------------------------------------------------------------ the tests


def _refused(call: Callable[[], Any], pattern: str) -> bool:
    """Run `call`: False when it works, True when it raises a SargableError whose message matches `pattern`."""
    try:
        call()
    except sg.SargableError as exc:
        assert re.search(pattern, str(exc)), f"unclear error {exc!r}"
        return True
    return False


def test_database_and_table_names(guarded: Capture) -> None:
    """Names are 1-128 of [A-Za-z0-9_-], not starting with '-' (Hive's rule, minus dots), compared lowercased:
    every hostile one is refused as an invalid name, a case variant of an existing one as existing."""
    ms = guarded.ms
    ms.create_database("tables")
    valid = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,127}\Z")
    created: list[str] = []
    for name in [*HOSTILE, HUGE, "ok_name", "A-b", "_", "9", "x" * 128, "x" * 129, "db\n", "db\r", " db", "-db"]:
        for kind, create in (
            ("database", lambda n=name: ms.create_database(n)),
            ("table", lambda n=name: ms.create_table("tables", n, [("x", "int")])),
        ):
            if not valid.match(name):
                expected = rf"invalid {kind} name"
            elif name.lower() in created:
                expected = r"already exists"
            else:
                expected = ""
            assert _refused(create, expected or "^$") == bool(expected), (kind, short(name))
        if valid.match(name) and name.lower() not in created:
            created.append(name.lower())
    assert created == [
        "_", "__hive_default_partition__", "null", "default", "kv_catalog", "ok_name", "a-b", "9", "x" * 128
    ]
    assert ms.list_databases() == sorted([*created, "tables"])
    assert ms.list_tables("tables") == sorted(created)
    assert _refused(lambda: ms.get_table("tables", "x'; DROP TABLE kv_catalog; --"), r"invalid table name")


def _under(location: str, root: str) -> bool:
    """Whether `location` names a path strictly inside `root` once `.` and `..` are resolved textually."""
    path, base = os.path.normpath(location), os.path.normpath(root)
    return path != base and os.path.commonpath([path, base]) == base


def _round_trips(ms: Metastore, table: str, key: str, value: Any, partition: Partition) -> None:
    """A stored partition is found by every read path, with exactly its value, located under its table."""
    expected = (None if value in ("", "__HIVE_DEFAULT_PARTITION__") else value,)
    assert partition.values == expected
    predicate = IsNull(col(key)) if expected[0] is None else Comparison("=", col(key), Literal(value, STRING))
    by_tree = ms.get_partitions_by_filter("db", table, predicate)
    by_text = ms.get_partitions_by_filter("db", table, sg.render(predicate))
    by_bytes = ms.get_partitions_by_expr("db", table, sg.dumps(predicate))
    by_name = ms.get_partitions_by_names("db", table, [partition.name])
    for found in (by_tree, by_text, by_bytes, by_name):
        assert [p.values for p in found] == [expected], short(value)
    assert partition.name in ms.list_partition_names("db", table)
    assert _under(partition.location, ms.get_table("db", table).location), (short(value), partition.location)


def test_partition_values(guarded: Capture) -> None:
    """A string partition key takes any text but lone surrogates (no UTF-8 form), NUL (no folder name holds it) and
    keys over the store limit; '' and Hive's NULL folder name are NULL, as in Hive."""
    ms = guarded.ms
    ms.create_database("db")
    ms.create_table("db", "t", [("x", "int")], [("p", "string")])
    ms.create_table("db", "typed", [("x", "int")], [("n", "int"), ("d", "date")])
    refused = []
    for value in dict.fromkeys(HOSTILE):
        add = lambda v=value: ms.add_partitions("db", "t", [{"p": v}], if_not_exists=True)  # noqa: E731
        if _refused(add, r"surrogate|longer|NUL"):
            refused.append(value)
            continue
        (partition,) = ms.get_partitions_by_names("db", "t", [{"p": value}])
        _round_trips(ms, "t", "p", value, partition)
        if value != "__HIVE_DEFAULT_PARTITION__":
            assert _refused(lambda v=value: ms.add_partitions("db", "typed", [{"n": v, "d": "2024-01-01"}]), r"\(int\)")
            assert _refused(lambda v=value: ms.add_partitions("db", "typed", [{"n": 1, "d": v}]), r"\(date\)")
    assert refused == ["\x00", "a\x00b", "\ud800", "a\udfffb"]
    assert ms.count_partitions("db", "t") == len(set(HOSTILE)) - 5
    assert ms.list_partition_names("db", "typed") == []


def test_column_names(guarded: Capture) -> None:
    """Column and partition-key names take any text without control characters or lone surrogates (no UTF-8 form),
    up to 767 characters, and work in filters (quoted with backquotes in text), in partition names (escaped) and in
    Arrow listings."""
    ms = guarded.ms
    ms.create_database("db")
    accepted = 0
    for index, name in enumerate(dict.fromkeys([*HOSTILE, HUGE])):
        table = f"c{index}"
        columns, keys = [("x", "int"), (name, "string")], [(name + "_k", "string")]
        if _refused(lambda t=table, c=columns, k=keys: ms.create_table("db", t, c, k), "column name"):
            assert name == "" or len(name) > 767 or any(ord(c) < 32 for c in name) or SURROGATES.search(name)
            continue
        accepted += 1
        assert ms.get_table("db", table).columns[1][0] == name
        key = name + "_k"
        ms.add_partitions("db", table, [{key: "v"}, {key: name}])
        (partition,) = ms.get_partitions_by_names("db", table, [{key: "v"}])
        _round_trips(ms, table, key, "v", partition)
        assert partition.spec == {key: "v"}
        listed = ms.table("db", table)
        assert listed.partitions_arrow().column("name").to_pylist() == [p.name for p in listed.partitions()]
    assert accepted == len(set(HOSTILE)) - 11


def test_parameters_locations_and_file_paths(guarded: Capture) -> None:
    """Hostile partition parameters, table properties and file paths are stored and read back exactly; a file path
    is stored in its canonical form (`//` collapsed); one holding NUL (no file system can hold it) or a `..`
    component (which could name a file outside the table) is refused."""
    ms = guarded.ms
    ms.create_database("db")
    props = {v: v for v in HOSTILE[:20]}
    ms.create_table("db", "t", [("x", "int")], [("p", "string")], properties=props)
    assert ms.get_table("db", "t").properties == props
    location = ms.get_table("db", "t").location
    paths = []
    for index, value in enumerate(v for v in dict.fromkeys(HOSTILE) if len(v) < 1000 and not SURROGATES.search(v)):
        path = f"{location}/p=v/{index}-{value}.parquet"
        file = FileStats(path=path, row_count=1, size_bytes=1, partition={"p": "v"})
        if "\x00" in value or ".." in path.split("/"):
            assert _refused(lambda f=file: ms.commit("db", "t", add_files=[f]), r"NUL|'\.\.'")
            continue
        ms.commit("db", "t", add_files=[file])
        paths.append(re.sub("/+", "/", path))
        assert ms.has_file("db", "t", path) and ms.has_file("db", "t", paths[-1])
        ms.alter_partition("db", "t", {"p": "v"}, parameters={value: value})
        (partition,) = ms.get_partitions_by_names("db", "t", ["p=v"])
        assert partition.parameters == {value: value}
    assert sorted(f.path for f in ms.list_files("db", "t")) == sorted(paths)
    ms.commit("db", "t", remove_files=paths[::2])
    assert sorted(f.path for f in ms.list_files("db", "t")) == sorted(paths[1::2])
    bad_path = FileStats(path=f"{location}/\ud800", row_count=1, size_bytes=1, partition={"p": "v"})
    assert _refused(lambda: ms.commit("db", "t", add_files=[bad_path]), r"lone surrogate")


def test_hostile_filters_are_values_not_code(guarded: Capture) -> None:
    """Filter text with hostile literals and quoted names parses into plain values; malformed text is refused
    with a parse error; nothing is dropped or leaks into SQL."""
    ms = guarded.ms
    ms.create_database("db")
    ms.create_table("db", "t", [("x", "int")], [("p", "string")])
    ms.add_partitions("db", "t", [{"p": "keep"}])
    for value in HOSTILE:
        if SURROGATES.search(value):
            continue
        text = "p = '" + value.replace("'", "''") + "' or p = 'keep'"
        found = ms.get_partitions_by_filter("db", "t", text)
        assert [p.values for p in found] == [("keep",)], short(value)
    assert _refused(lambda: ms.get_partitions_by_filter("db", "t", "p = 'a'; DROP TABLE kv_catalog"), "position")
    assert ms.list_partition_names("db", "t") == ["p=keep"]


# ------------------------------------------------------------------------------------------ portability


def test_name_with_a_trailing_newline_is_refused(metastore: Metastore) -> None:
    """`$` in the name pattern used to match before a final newline, letting 'db\\n' in as a database name."""
    for name in ("db\n", "t\n"):
        assert _refused(lambda n=name: metastore.create_database(n), "invalid database name")
    assert metastore.list_databases() == []


def test_an_overlong_key_is_refused_alike_on_every_backend(tmp_path: Path, postgres_url: str) -> None:
    """PostgreSQL's btree refuses index entries over ~2.7 kB (after compression, so it depended on the text);
    SQLite has no such limit. Both refuse keys over the store's documented limit, with the same message, and
    accept everything under it."""
    rng = random.Random(9)
    incompressible = "".join(chr(rng.randrange(0x4E00, 0x9FFF)) for _ in range(3000))
    cases = {"short": "x" * 1500, "random-9KB": incompressible, "1MB": "x" * ONE_MB, "at-limit": "y" * 2030}
    outcomes: dict[str, dict[str, str]] = {}
    for backend in ("sqlite", "postgresql"):
        ms = Metastore.open(fresh_url(backend, tmp_path, postgres_url), warehouse=tmp_path / "warehouse")
        ms.create_database("db")
        ms.create_table("db", "t", [("x", "int")], [("p", "string")])
        for label, value in cases.items():
            try:
                ms.add_partitions("db", "t", [{"p": value}])
                outcomes.setdefault(label, {})[backend] = "added"
            except sg.SargableError as exc:
                outcomes.setdefault(label, {})[backend] = re.sub(r"\d[\d,]* bytes", "N bytes", str(exc))
        ms.close()
    for label, per_backend in outcomes.items():
        assert per_backend["sqlite"] == per_backend["postgresql"], (label, per_backend)
    assert outcomes["short"]["sqlite"] == outcomes["at-limit"]["sqlite"] == "added"
    assert "longer than" in outcomes["1MB"]["sqlite"] and "longer than" in outcomes["random-9KB"]["sqlite"]
