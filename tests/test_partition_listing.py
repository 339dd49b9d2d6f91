"""The fast listings (pages decoded in batches, `Table.partition_rows`, Arrow `Table.partition_batches`) against
brute force and against `Partition` objects, on both backends.

Random partition sets over every partition-key type (NULLs included), some partitions with an explicit location or
parameters, with and without secondary indexes, random filters (or none): every listing returns exactly the
partitions `sg.evaluate` selects, in key order, with the same values, names, locations and parameters. Batch decoding
is forced on every page (`BATCH_MIN` 0) or left to its threshold, and the stores' blocks give their lengths as numpy
arrays (`SHORT_BLOCK` 0) or as lists.
"""

from __future__ import annotations

import datetime as dt
import itertools
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sargable as sg
from metastore_fixtures import module_metastore
from sargable import keys
from sargable.metastore import Metastore
from sargable.metastore import partitions as partition_rows
from sargable.store import blocks as store_blocks
from sargable.types import parse_type
from strategies import PARTITION_KEY_TYPES, pools_of, predicates, tables

_counter = itertools.count()


def _hive_row(schema, row):
    """What the metastore stores for a row: an empty string partition value is NULL; NUL is left out of strings."""
    out = {}
    for name, t in schema:
        value = row[name].replace("\x00", "") if isinstance(row[name], str) else row[name]
        out[name] = None if value == "" and parse_type(t).is_string else value
    return out


def _check(ms: Metastore, data) -> None:
    schema = data.draw(st.lists(st.sampled_from(PARTITION_KEY_TYPES), min_size=1, max_size=3), label="types")
    schema = [(f"p{i}", t) for i, t in enumerate(schema)]
    rows = [_hive_row(schema, r) for r in data.draw(tables(schema, max_size=30), label="rows")]
    types = [parse_type(t) for _, t in schema]
    unique = {keys.encode([r[n] for n, _ in schema], types): r for r in rows}
    rows = [unique[k] for k in sorted(unique)]
    name = f"t{next(_counter)}"
    ms.create_table("db", name, [("x", "int")], schema, index_all=data.draw(st.booleans(), label="index_all"))
    table = ms.table("db", name)
    values = [tuple(r[n] for n, _ in schema) for r in rows]
    located = data.draw(st.lists(st.booleans(), min_size=len(values), max_size=len(values)), label="located")
    table.add_partitions(values, locations=[f"/elsewhere/{i}" if x else None for i, x in enumerate(located)])
    for i in data.draw(st.sets(st.integers(0, max(len(values) - 1, 0))), label="with parameters"):
        if values:
            table.alter_partition(list(values[i]), parameters={"k": str(i), "é": "v"})
    table = table.refresh()
    if data.draw(st.booleans(), label="filtered"):
        predicate = data.draw(predicates(schema, max_leaves=4, pools=pools_of(schema, rows)), label="predicate")
        filter = sg.render(predicate)
        expected = [v for v, r in zip(values, rows, strict=True) if sg.evaluate(predicate, r) is True]
    else:
        filter, expected = None, values
    batch_min = data.draw(st.sampled_from([0, partition_rows.BATCH_MIN]), label="batch_min")
    short_block = data.draw(st.sampled_from([0, store_blocks.SHORT_BLOCK]), label="short_block")
    limit = data.draw(st.none() | st.integers(0, len(expected) + 1), label="limit")
    with (
        mock.patch.object(partition_rows, "BATCH_MIN", batch_min),
        mock.patch.object(store_blocks, "SHORT_BLOCK", short_block),
    ):
        listed = table.partitions(filter)
        rows_out = [row for page in table.partition_rows(filter, limit=limit) for row in page]
        batches = list(table.partition_batches(filter, limit=limit))
    key = [keys.encode(v, types) for v in expected]
    assert [keys.encode(p.values, types) for p in listed] == key
    wanted = listed[:limit] if limit is not None else listed
    assert [keys.encode(v, types) for v, _, _ in rows_out] == key[: len(wanted)]
    for partition, (_, location, parameters) in zip(wanted, rows_out, strict=True):
        assert (location or f"{table.location.rstrip('/')}/{partition.name}") == partition.location
        assert (parameters or {}) == partition.parameters
    assert all(batch.num_rows for batch in batches)
    arrow = [row for batch in batches for row in batch.to_pylist()]
    assert len(arrow) == len(wanted)
    for partition, row in zip(wanted, arrow, strict=True):
        assert keys.encode([row["values"][n] for n, _ in schema], types) == keys.encode(partition.values, types)
        assert row["name"] == partition.name
        assert row["location"] == partition.location
        assert dict(row["parameters"] or []) == partition.parameters


@pytest.fixture(scope="module")
def sqlite_ms(tmp_path_factory):
    with module_metastore(tmp_path_factory, "sqlite") as ms:
        yield ms


@pytest.fixture(scope="module")
def postgres_ms(tmp_path_factory, postgres_url):
    with module_metastore(tmp_path_factory, "postgresql", postgres_url) as ms:
        yield ms


@settings(max_examples=120)
@given(data=st.data())
def test_sqlite_listings_match_brute_force(sqlite_ms: Metastore, data) -> None:
    _check(sqlite_ms, data)


@settings(max_examples=40)
@given(data=st.data())
def test_postgresql_listings_match_brute_force(postgres_ms: Metastore, data) -> None:
    _check(postgres_ms, data)


def test_a_long_listing_decodes_in_pages_in_key_order(sqlite_ms: Metastore) -> None:
    """Thousands of partitions (several store pages, NULLs and escaped strings among them) come back whole."""
    sqlite_ms.create_table("db", "long", [("x", "int")], [("s", "string"), ("h", "int")], index_all=True)
    texts = [None, "a", "a/b", "b=c", "ü", "z"]
    values = [(s, h) for s in texts for h in [None, *range(2000)]]
    table = sqlite_ms.table("db", "long")
    table.add_partitions([list(v) for v in values])
    types = [parse_type("string"), parse_type("int")]
    expected = sorted(values, key=lambda v: keys.encode(v, types))
    assert [p.values for p in table.partitions()] == expected
    assert [p.values for p in table.partitions("h = 7")] == [v for v in expected if v[1] == 7]
    for filter in (None, "h = 7", "h >= 1990 or s like 'a%'"):
        arrow = table.partitions_arrow(filter)
        listed = table.partitions(filter)
        assert arrow.column("name").to_pylist() == [p.name for p in listed]
        assert arrow.column("location").to_pylist() == [p.location for p in listed]
        assert [(v["s"], v["h"]) for v in arrow.column("values").to_pylist()] == [p.values for p in listed]


def test_index_entries_without_the_partition_value_are_looked_up(sqlite_ms: Metastore) -> None:
    """Index entries written before they carried the partition row's value (no COVERED marker) still list, with
    their locations, from the partitions; one whose partition row is gone is skipped."""
    from sargable.metastore.layout import layout_of
    from sargable.metastore.schema import INDEXES, PARTITIONS

    sqlite_ms.create_table("db", "legacy", [("x", "int")], [("d", "int"), ("h", "int")], index_all=True)
    table = sqlite_ms.table("db", "legacy")
    values = [(d, h) for d in range(400) for h in (2, 3)]
    table.add_partitions([list(v) for v in values], locations=[f"/l/{d}" if d % 3 else None for d, _ in values])
    layout, store = layout_of(table.definition), sqlite_ms.store
    index = layout.indexes["h"]
    with store.transaction():
        for d, h in values:
            if d % 2:
                store.put(INDEXES, index.key((d, h)), b"")
        store.delete(PARTITIONS, layout.key((5, 3)))
    assert table.explain_filter("h = 3").access_path.startswith("index")
    expected = [(d, 3) for d in range(400) if d != 5]
    with mock.patch.object(partition_rows, "BATCH_MIN", 0):
        found = table.partitions("h = 3")
    assert [p.values for p in found] == expected
    assert [p.location for p in found] == [f"/l/{d}" if d % 3 else f"{table.location}/d={d}/h=3" for d, _ in expected]


def test_a_partition_key_name_without_utf8_form(sqlite_ms: Metastore) -> None:
    """A lone surrogate in a column name is refused when the table is made; a table that has one already (made
    before) lists as objects, and its Arrow listing is a MetastoreError naming the key, not a UnicodeEncodeError."""
    import dataclasses

    from sargable.errors import MetastoreError
    from sargable.types import STRING

    with pytest.raises(MetastoreError, match="lone surrogate"):
        sqlite_ms.create_table("db", "surrogate", [("x", "int")], [("a\ud800", "string")])
    sqlite_ms.create_table("db", "surrogate", [("x", "int")], [("a", "string")])
    table = sqlite_ms.table("db", "surrogate")
    table.add_partitions([["v"]])
    table.definition = dataclasses.replace(table.definition, partition_keys=(("a\ud800", STRING),))
    assert [p.name for p in table.partitions()] == ["a\ud800=v"]
    with pytest.raises(MetastoreError, match=r"partition key 'a\\ud800' holds a lone surrogate"):
        table.partitions_arrow()


def test_partition_names_are_the_partitions_names(sqlite_ms: Metastore) -> None:
    """`partition_names` (Arrow-formatted for long pages) gives each partition's `name`, escapes and NULLs included."""
    sqlite_ms.create_table(
        "db", "named", [("x", "int")], [("d", "date"), ("s", "string"), ("b", "boolean"), ("f", "double")]
    )
    table = sqlite_ms.table("db", "named")
    texts = [None, "a/b", "x=y", "%", "ü", "plain"]
    values = [
        (None if i % 97 == 0 else dt.date(1000 + i, 1 + i % 12, 1), texts[i % 6], [None, True, False][i % 3], f)
        for i, f in enumerate([None, 0.5, -1.0, 1e300, float("inf")] * 120)
    ]
    table.add_partitions([list(v) for v in values], if_not_exists=True)
    names = table.partition_names()
    assert names == [p.name for p in table.partitions()]
    assert len(names) == len(set(names)) == table.count_partitions() > partition_rows.BATCH_MIN
