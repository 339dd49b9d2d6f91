"""Differential tests: the metastore returns exactly the partitions `sg.evaluate` selects, in key order.

Random partition sets over every partition-key type (NULLs included) and random filters, on both backends,
through `get_partitions_by_filter` (rendered text) and `get_partitions_by_expr` (serialized tree), with and
without secondary indexes. The oracle is brute-force evaluation of the filter over every partition.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sargable as sg
from metastore_fixtures import module_metastore
from sargable import keys
from sargable.metastore import Metastore
from sargable.types import parse_type
from strategies import PARTITION_KEY_TYPES, pools_of, predicates, tables

_counter = itertools.count()


def _hive_row(schema, row):
    """What the metastore stores for a row: Hive (and Spark) write an empty string partition value as NULL; NUL,
    which no folder name can hold, is left out of string values (the metastore refuses it)."""
    out = {}
    for name, t in schema:
        value = row[name].replace("\x00", "") if isinstance(row[name], str) else row[name]
        out[name] = None if value == "" and parse_type(t).is_string else value
    return out


def _check(ms: Metastore, data) -> None:
    schema = data.draw(st.lists(st.sampled_from(PARTITION_KEY_TYPES), min_size=1, max_size=3), label="types")
    schema = [(f"p{i}", t) for i, t in enumerate(schema)]
    rows = [_hive_row(schema, r) for r in data.draw(tables(schema, max_size=25), label="rows")]
    types = [parse_type(t) for _, t in schema]
    unique = {keys.encode([r[n] for n, _ in schema], types): r for r in rows}
    rows = [unique[k] for k in sorted(unique)]
    table = f"t{next(_counter)}"
    ms.create_table("db", table, [("x", "int")], schema, index_all=data.draw(st.booleans(), label="index_all"))
    ms.add_partitions("db", table, [[r[n] for n, _ in schema] for r in rows])
    predicate = data.draw(predicates(schema, max_leaves=5, pools=pools_of(schema, rows)), label="predicate")
    expected = [tuple(r[n] for n, _ in schema) for r in rows if sg.evaluate(predicate, r) is True]
    by_filter = [p.values for p in ms.get_partitions_by_filter("db", table, sg.render(predicate))]
    by_expr = [p.values for p in ms.get_partitions_by_expr("db", table, sg.dumps(predicate))]
    assert by_filter == expected
    assert by_expr == expected


@pytest.fixture(scope="module")
def sqlite_ms(tmp_path_factory):
    with module_metastore(tmp_path_factory, "sqlite") as ms:
        yield ms


@pytest.fixture(scope="module")
def postgres_ms(tmp_path_factory, postgres_url):
    with module_metastore(tmp_path_factory, "postgresql", postgres_url) as ms:
        yield ms


@settings(max_examples=150)
@given(data=st.data())
def test_sqlite_matches_brute_force(sqlite_ms: Metastore, data) -> None:
    _check(sqlite_ms, data)


@settings(max_examples=40)
@given(data=st.data())
def test_postgresql_matches_brute_force(postgres_ms: Metastore, data) -> None:
    _check(postgres_ms, data)
