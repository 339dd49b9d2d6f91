"""Executing plans over the real stores (SQLite, and the PostgreSQL server `make test` starts): random partition sets
and random predicates give exactly the keys `evaluate` selects, in key order, without reading more than needed."""

from __future__ import annotations

import datetime as dt
import itertools
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sargable as sg
from sargable import keys
from sargable.errors import SargableError
from sargable.expr.evaluate import evaluate
from sargable.expr.nodes import And, col
from sargable.expr.parser import parse
from sargable.plan import GET_BATCH, ExecutionStats, Explain, FilterPlan, execute, explain, plan_key_ranges
from sargable.store import open_store
from sargable.types import parse_type
from strategies import PARTITION_KEY_TYPES, pools_of, predicates, schemas, tables

KEY_TYPES = (*PARTITION_KEY_TYPES, "char(4)", "float", "double")
EXACT_LEAVES = frozenset({"compare", "in", "between", "is_null", "bool_column", "constant"})
"""Leaf kinds whose plans need no key filter when they are on the leading column."""

_prefixes = itertools.count(1)


def next_prefix(edge: bool) -> bytes:
    """A fresh table prefix; with `edge`, one ending in 0xFF bytes (whose successor must drop them)."""
    number = next(_prefixes)
    return number.to_bytes(3, "big") + (b"\xff\xff" if edge else b"")


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory):
    with open_store(f"sqlite:///{tmp_path_factory.mktemp('plan') / 'plan.db'}") as store:
        store.create_keyspace("main")
        yield store


@pytest.fixture(scope="module")
def postgres_store(postgres_url):
    with open_store(f"{postgres_url}?schema=plan_{uuid.uuid4().hex[:12]}") as store:
        store.create_keyspace("main")
        yield store


def load(store, schema, table, prefix: bytes) -> dict[bytes, tuple]:
    """Store the table's rows as keys under `prefix` (value: the key reversed); {key: values}."""
    names = [n for n, _ in schema]
    types = [parse_type(t) for _, t in schema]
    stored = {prefix + keys.encode([r[n] for n in names], types): tuple(r[n] for n in names) for r in table}
    store.put_many("main", [(k, k[::-1]) for k in stored])
    return stored


def truth(predicate, schema, stored: dict[bytes, tuple]) -> list[bytes]:
    """The stored keys, in key order, on which `predicate` is TRUE."""
    names = [n for n, _ in schema]
    return [k for k in sorted(stored) if evaluate(predicate, dict(zip(names, stored[k], strict=True))) is True]


def check_execution(store, data) -> None:
    schema = data.draw(schemas(types=KEY_TYPES, max_size=3))
    table = data.draw(tables(schema, max_size=40))
    pools = pools_of(schema, table)
    lead = schema[:1]
    if data.draw(st.booleans()):
        leading = data.draw(predicates(lead, kinds=EXACT_LEAVES, pools=pools, max_leaves=3))
        predicate = And((leading, data.draw(predicates(schema, pools=pools, max_leaves=4))))
    else:
        leading = None
        predicate = data.draw(predicates(schema, pools=pools, max_leaves=6))
    prefix = next_prefix(data.draw(st.booleans()))
    stored = load(store, schema, table, prefix)
    max_scans = data.draw(st.sampled_from([3, 1000]))
    built = plan_key_ranges(predicate, schema, max_scans=max_scans)
    stats = ExecutionStats()
    got = list(execute(built, store, "main", schema, prefix=prefix, stats=stats))
    assert [k for k, _ in got] == truth(predicate, schema, stored), str(built)
    assert all(v == k[::-1] for k, v in got)
    assert stats.keys_returned == len(got)
    assert stats.keys_examined <= len(stored)
    if not built.has_key_filter:
        assert stats.keys_examined == stats.keys_returned
    if leading is not None and max_scans == 1000:
        # a leading-column constraint bounds the ranges: no key outside it is read (a small cap may coarsen ranges)
        assert stats.keys_examined <= len(truth(leading, schema, stored)), str(built)


@settings(max_examples=120)
@given(data=st.data())
def test_execute_on_sqlite_returns_exactly_the_matching_keys(sqlite_store, data):
    check_execution(sqlite_store, data)


@pytest.mark.postgres
@settings(max_examples=30)
@given(data=st.data())
def test_execute_on_postgres_returns_exactly_the_matching_keys(postgres_store, data):
    check_execution(postgres_store, data)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request):
    return request.getfixturevalue("sqlite_store" if request.param == "sqlite" else "postgres_store")


HIVE = [("ds", "date"), ("hr", "int"), ("country", "string")]


def hive_table() -> list[dict]:
    days = [dt.date(2024, 1, d) for d in (1, 2, 3)]
    return [
        {"ds": d, "hr": h, "country": c}
        for d in [*days, None]
        for h in (None, 0, 3, 12, 23)
        for c in (None, "US", "UK", "FR", "U")
    ]


def test_explain_reports_plan_and_costs(store):
    prefix = next_prefix(False)
    stored = load(store, HIVE, hive_table(), prefix)
    predicate = parse("ds = '2024-01-01' and hr >= 3 and country like 'U%'")
    built = plan_key_ranges(predicate, HIVE)
    report = explain(built, store, "main", prefix=prefix)
    assert isinstance(report, Explain) and report.plan is built
    assert report.keys_returned == len(truth(sg.bind(predicate, HIVE), HIVE, stored)) == 9
    assert report.keys_examined == 15  # hr in (3, 12, 23) x every country, NULL included
    assert report.ranges_scanned == 1 and report.gets == 0 and report.elapsed_ms >= 0
    text = str(report)
    assert text.startswith("Scan [ds=2024-01-01/hr=3 .. ds=2024-01-01/hr=+inf) filter: country LIKE 'U%'")
    assert "keys examined: 15, keys returned: 9" in text


def test_gets_are_batched_and_in_key_order(store):
    prefix = next_prefix(True)
    schema = [("n", "int")]
    stored = load(store, schema, [{"n": i} for i in range(-5, 2000, 3)] + [{"n": None}], prefix)
    wanted = list(range(2 * GET_BATCH + 7, -10, -1))
    built = plan_key_ranges(col("n").isin(wanted), schema, max_scans=5000)
    assert all(s.is_get for s in built.scans) and len(built.scans) == len(set(wanted))
    stats = ExecutionStats()
    got = [k for k, _ in execute(built, store, "main", prefix=prefix, stats=stats)]
    assert got == truth(sg.bind(col("n").isin(wanted), schema), schema, stored)
    assert stats.gets == len(wanted) and stats.ranges_scanned == 0
    assert stats.keys_examined == stats.keys_returned == len(got) == len([i for i in range(-5, 2000, 3) if i in wanted])


def test_ranges_and_gets_interleave_in_key_order(store):
    prefix = next_prefix(False)
    schema = [("n", "int")]
    stored = load(store, schema, [{"n": i} for i in [None, *range(0, 40)]], prefix)
    predicate = parse("n = 3 or n between 10 and 12 or n = 20 or n > 37 or n is null or n = 99")
    built = plan_key_ranges(predicate, schema)
    # NULL, 3 and 20 are gets; 99 lies inside n > 37, which absorbs it
    assert [s.is_get for s in built.scans] == [True, True, False, True, False]
    got = [k for k, _ in execute(built, store, "main", prefix=prefix)]
    assert got == truth(sg.bind(predicate, schema), schema, stored)
    assert [stored[k][0] for k in got] == [None, 3, 10, 11, 12, 20, 38, 39]


def test_full_scan_stays_inside_its_table_prefix(store):
    schema = [("s", "string")]
    first, second = next_prefix(True), next_prefix(True)
    load(store, schema, [{"s": "a"}, {"s": None}], first)
    load(store, schema, [{"s": "b"}], second)
    full = plan_key_ranges(parse("s rlike 'a|b' or s is null"), schema)
    assert full.is_full_scan
    assert [k for k, _ in execute(full, store, "main", prefix=first)] == [
        first + keys.encode([None], ["string"]),
        first + keys.encode(["a"], ["string"]),
    ]
    assert [k for k, _ in execute(full, store, "main", prefix=second)] == [second + keys.encode(["b"], ["string"])]


def test_empty_plan_reads_nothing(store):
    empty = plan_key_ranges(parse("n > 5 and n < 3"), [("n", "int")])
    report = explain(empty, store, "main", prefix=next_prefix(False))
    assert (report.keys_examined, report.keys_returned, report.ranges_scanned, report.gets) == (0, 0, 0, 0)
    assert str(report).startswith("Empty")


def test_execute_validates_its_arguments(sqlite_store):
    built = plan_key_ranges(parse("n = 1"), [("n", "int")])
    with pytest.raises(SargableError, match="FilterPlan"):
        execute("n = 1", sqlite_store, "main")  # type: ignore[arg-type]
    with pytest.raises(SargableError, match="key columns"):
        execute(built, sqlite_store, "main", [("m", "int")])
    with pytest.raises(SargableError, match="prefix"):
        execute(built, sqlite_store, "main", prefix="t")  # type: ignore[arg-type]
    with pytest.raises(SargableError, match="key_columns"):
        execute(FilterPlan([]), sqlite_store, "main")
    with pytest.raises(SargableError):
        list(execute(built, sqlite_store, "no_such_keyspace"))
    assert list(execute(FilterPlan([]), sqlite_store, "main", [("n", "int")])) == []
