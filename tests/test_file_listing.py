"""Whole-block file listings (issue 29 item 3): entry heads matched in place, partition values decoded by column,
files built unchecked; each against an independent oracle (`json.loads` of the entry, the files as committed)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metastore_fixtures import fresh_url
from sargable.errors import DamagedMetastoreError
from sargable.metastore import Metastore, filecodec, files
from sargable.metastore.filecodec import decode_headers, encode_file
from sargable.metastore.layout import layout_of
from sargable.metastore.records import TableDefinition
from sargable.metastore.schema import FILES, key_range
from sargable.stats import ColumnStats, FileStats, listed_files
from sargable.types import parse_type

DB = "db"
COUNTS = st.integers(0, 2**70)
"""Row counts and sizes, past 64 bits too (Arrow's integers are not: those blocks are matched one by one)."""
PATH_TEXT = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters="/\x00"), min_size=1, max_size=12
).filter(lambda name: name not in (".", ".."))
"""A file name: any code point (quotes, backslashes, control characters, non-ASCII) but a separator, NUL or a lone
surrogate (which a key can't hold)."""


def _table() -> TableDefinition:
    return TableDefinition(DB, "t", 1, (("id", parse_type("bigint")),), (), "/w")


@st.composite
def entries(draw: st.DrawFn) -> bytes:
    """A stored file entry: as `encode_file` writes it, or another field order, or its path as raw UTF-8."""
    path, rows, size = "/w/" + draw(PATH_TEXT), draw(COUNTS), draw(COUNTS)
    how = draw(st.sampled_from(["encoded", "reordered", "raw"]))
    if how == "encoded":
        return encode_file(FileStats(path, rows, size, columns={"id": ColumnStats(min=1, max=2)}), _table())
    if how == "reordered":
        return json.dumps({"columns": {}, "bytes": size, "rows": rows, "path": path}).encode()
    record = {"path": path, "rows": rows, "bytes": size, "columns": {}}
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()


@settings(max_examples=300)
@given(records=st.lists(entries(), max_size=20), at_once=st.booleans(), as_array=st.booleans())
def test_decode_headers_is_json_of_each_entry(records: list[bytes], at_once: bool, as_array: bool) -> None:
    """Both paths (Arrow's at once, the regular expression one by one) read what `json.loads` reads."""
    expected = [json.loads(record) for record in records]
    lengths = np.array([len(r) for r in records], np.int64) if as_array else [len(r) for r in records]
    with mock.patch.object(filecodec, "HEADERS_AT_ONCE", 0 if at_once else 10**9):
        paths, rows, sizes = decode_headers(b"".join(records), lengths)
    assert paths == [e["path"] for e in expected]
    assert rows == [e["rows"] for e in expected]
    assert sizes == [e["bytes"] for e in expected]
    assert all(type(n) is int for n in rows + sizes)


def test_decode_headers_refuses_what_json_refuses() -> None:
    """An entry neither form takes is an error, as one entry alone (`decode_header`) is."""
    good = encode_file(FileStats("/w/a", 1, 2), _table())
    for bad in (b'{"path":"/w/b","rows":-1,"bytes":2,"columns":{}}', b"not json", b'{"path":3,"rows":1,"bytes":2}'):
        for at_once in (0, 10**9):
            with mock.patch.object(filecodec, "HEADERS_AT_ONCE", at_once), pytest.raises(ValueError):
                decode_headers(good + bad + good, [len(good), len(bad), len(good)])


@given(
    st.lists(st.tuples(st.text(max_size=5), st.integers(0, 10**20), st.integers(0, 10**20)), max_size=10),
    st.one_of(st.none(), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)),
)
def test_listed_files_equal_checked_files(fields: list[tuple[str, int, int]], partition) -> None:
    paths, rows, sizes = (list(column) for column in zip(*fields, strict=True)) if fields else ([], [], [])
    built = listed_files(paths, rows, sizes, [partition] * len(fields))
    assert built == [FileStats(p, r, s, partition=partition) for p, r, s in fields]
    assert all(type(f) is FileStats and f.columns == {} and f.layout is None for f in built)


KEY_SETS = {
    "fixed": [("ds", "date"), ("hr", "int")],
    "strings": [("region", "string"), ("ds", "date"), ("kind", "varchar(5)")],
    "none": [],
}
REGIONS = st.one_of(
    st.none(), st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), min_size=1, max_size=4)
)
"""Partition values of a string key (an empty string is NULL, as in Hive; no folder name holds a NUL)."""


@st.composite
def committed(draw: st.DrawFn, keys: str) -> list[dict]:
    """Files to commit: distinct names, partitions drawn from a few values (several files share one), counts, and
    statistics of `id` on some."""
    names = draw(st.lists(PATH_TEXT, min_size=1, max_size=30, unique=True))
    out = []
    for name in names:
        spec = {
            "ds": draw(st.one_of(st.none(), st.dates(dt.date(2020, 1, 1), dt.date(2020, 1, 3)))),
            "hr": draw(st.one_of(st.none(), st.integers(-2, 2))),
            "region": draw(REGIONS),
            "kind": draw(st.sampled_from(["a", "b\x01", None])),
        }
        rows = draw(st.integers(0, 2**62))
        stats = draw(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)))
        out.append(
            {
                "name": name,
                "partition": {k: spec[k] for k, _ in KEY_SETS[keys]},
                "rows": rows,
                "size": draw(st.integers(0, 2**62)),
                "columns": {} if stats is None else {"id": ColumnStats(min=stats, max=stats, null_count=0)},
            }
        )
    return out


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.parametrize("keys", sorted(KEY_SETS))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_listings_are_the_files_committed(backend, keys, request, tmp_path, data) -> None:
    """`files` with and without statistics, whole and by partitions, decoded at once or key by key, is exactly the
    files committed (their canonical paths, partitions, counts, statistics), in key order."""
    drawn = data.draw(committed(keys), label="files")
    postgres = request.getfixturevalue("postgres_url") if backend == "postgresql" else None
    with Metastore.open(fresh_url(backend, tmp_path, postgres), warehouse=tmp_path / "w") as ms:
        ms.create_database(DB, if_not_exists=True)
        ms.create_table(DB, "t", [("id", "bigint")], KEY_SETS[keys])
        location = ms.get_table(DB, "t").location
        expected = {
            f"{location}/{f['name']}": FileStats(
                f"{location}/{f['name']}", f["rows"], f["size"], columns=f["columns"], partition=f["partition"]
            )
            for f in drawn
        }
        ms.commit(DB, "t", add_files=expected.values())
        table = ms.table(DB, "t")
        at_once = data.draw(st.booleans(), label="at once")
        threshold = 0 if at_once else 10**9
        with (
            mock.patch.object(files, "DECODE_AT_ONCE", threshold),
            mock.patch.object(filecodec, "HEADERS_AT_ONCE", threshold),
        ):
            ms.clear_caches()
            listed = table.files()
            ms.clear_caches()
            bare = table.files(stats=False)
            partitions = table.partitions()
            pick = st.lists(st.sampled_from(partitions), unique_by=lambda p: p.name) if partitions else st.just([])
            some = data.draw(pick, label="some")
            ms.clear_caches()
            chosen = table.files(some, stats=False)
        assert sorted(f.path for f in listed) == sorted(expected)
        assert listed == [expected[f.path] for f in listed]
        assert bare == [dataclasses.replace(f, columns={}) for f in listed]
        names = {p.name for p in some}
        by_name = {p.name: p for p in partitions}
        wanted = [f for f in bare if any(by_name[n].spec == f.partition for n in names)]
        assert chosen == wanted
        layout = layout_of(table.definition)
        with ms.store.transaction(readonly=True):
            stored = list(ms.store.scan(FILES, *key_range(layout.prefix)))
        assert [f.path for f in listed] == [layout.file_codec.decode(key[layout.size :])[-1] for key, _ in stored]


@pytest.mark.parametrize("at_once", [True, False])
def test_a_damaged_entry_in_a_block_is_named(metastore, at_once) -> None:
    """One entry of a block that doesn't decode fails the listing with an error naming its key."""
    metastore.create_database(DB)
    metastore.create_table(DB, "t", [("id", "bigint")], [("hr", "int")])
    location = metastore.get_table(DB, "t").location
    metastore.commit(DB, "t", add_files=[FileStats(f"{location}/f{i}", 1, 1, partition={"hr": i}) for i in range(40)])
    table = metastore.table(DB, "t")
    with metastore.store.transaction(readonly=True):
        rows = list(metastore.store.scan(FILES, *key_range(layout_of(table.definition).prefix)))
    damaged_key = rows[17][0]
    with metastore.store.transaction():
        metastore.store.put(FILES, damaged_key, b'{"path":"/w/x","rows":-1,"bytes":1,"columns":{}}')
    threshold = 0 if at_once else 10**9
    with (
        mock.patch.object(files, "DECODE_AT_ONCE", threshold),
        mock.patch.object(filecodec, "HEADERS_AT_ONCE", threshold),
    ):
        for stats in (False, True):
            metastore.clear_caches()
            with pytest.raises(DamagedMetastoreError, match=damaged_key.hex()):
                table.files(stats=stats)
