"""Fuzzing every way untrusted input gets in: filter text, expression bytes, key bytes, partition names and values.

The one property everywhere: a call on bad input either works or raises a `SargableError` subclass, and it never
hangs (each call runs under a wall-clock guard, `time_limit`). Inputs are arbitrary (text, bytes, Python values)
and grammar-aware mutations of valid ones (a rendered predicate with tokens inserted, deleted or duplicated; a
`dumps` payload with bytes flipped, cut or repeated; a key encoding with a byte changed), which reach much deeper
than random text. Whatever is accepted is also checked for what it must then satisfy (a decoded key re-encodes to
the same bytes, a parsed filter renders and re-parses to itself, a stored partition reads back by its name).

The budget scales with `SARGABLE_FUZZ_SCALE` (1 in `make test`; `make fuzz` runs it at 20, and the atheris
harnesses in tests/soak/fuzz_atheris.py).
"""

from __future__ import annotations

import datetime as dt
import math
import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sargable as sg
from metastore_fixtures import BACKENDS, fresh_url
from sargable import keys
from sargable.errors import SargableError
from sargable.expr import Comparison, IsNull, Literal, and_, bind, col, columns_of, normalize, to_dnf
from sargable.metastore import Metastore, Partition
from sargable.plan import plan_key_ranges
from sargable.types import convert, format_value, parse_type
from strategies import ALL_TYPES, PARTITION_KEY_TYPES, data_types, predicates, schemas, values

HANG_SECONDS = 2.0
"""No single call on a fuzzed input may run longer than this (the inputs are at most a few hundred bytes)."""
SCALE = float(os.environ.get("SARGABLE_FUZZ_SCALE", "1"))
DIALECTS = ("sql", "hive")
KEY_TYPES = tuple(t for t in ALL_TYPES if t != "decimal(38,6)")
"""`strategies.values` can't draw decimal(38,6) values yet (its bound is computed at 28 digits)."""


def budget(examples: int) -> Any:
    """Hypothesis settings for a fuzz target: `examples` scaled by SARGABLE_FUZZ_SCALE, no example database
    bloat from the big runs, and no health check complaining about the deliberately large inputs."""
    return settings(
        max_examples=max(1, int(examples * SCALE)),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


# ------------------------------------------------------------------------------------------------ the guard


class _Overrun(BaseException):
    """Raised by the alarm inside the code under test; a BaseException, so no `except Exception` there eats it."""


@contextmanager
def time_limit(seconds: float, what: str) -> Iterator[None]:
    """Fail with AssertionError when the block runs longer than `seconds` of wall-clock time (a hang).

    SIGALRM interrupts Python code in the main thread; the timer pending before (pytest-timeout's) is restored.
    """
    armed = [True]

    def on_alarm(signum: int, frame: Any) -> None:
        if armed[0]:
            raise _Overrun

    previous_handler = signal.signal(signal.SIGALRM, on_alarm)
    previous_delay, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    started = time.monotonic()
    try:
        yield
    except _Overrun:
        raise AssertionError(f"{what} ran for more than {seconds} s: a hang") from None
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_handler)
        if previous_delay:
            signal.setitimer(signal.ITIMER_REAL, max(previous_delay - (time.monotonic() - started), 0.001))


def attempt(fn: Callable[..., Any], *args: Any, seconds: float = HANG_SECONDS, **kwargs: Any) -> tuple[bool, Any]:
    """(True, result) or (False, the SargableError), within the time limit; any other exception fails the test."""
    with time_limit(seconds, f"{getattr(fn, '__qualname__', fn)}{tuple(repr(a)[:200] for a in args)}"):
        try:
            return True, fn(*args, **kwargs)
        except SargableError as exc:
            assert str(exc), f"{type(exc).__name__} without a message"
            return False, exc


def test_the_guard_catches_a_hang_and_restores_the_outer_timer() -> None:
    outer = signal.setitimer(signal.ITIMER_REAL, 500)[0]
    with pytest.raises(AssertionError, match="a hang"), time_limit(0.05, "spin"):
        while True:
            pass
    remaining = signal.setitimer(signal.ITIMER_REAL, outer)[0]
    assert 400 < remaining <= 500


# ------------------------------------------------------------------------------------------- filter text


FILTER_ALPHABET = st.sampled_from([*"pqs01-9.eE ()'\"`=<>!,%_\\\n\t\x00é😀", "\ud800"])
TOKENS = (
    "(", ")", "'", '"', "`", " and ", " or ", " not ", " in (", ", ", " between ", " like ", " rlike ", " regexp ",
    " is null", " is not null", " escape '!'", "=", "==", "<", ">=", "<>", "<=>", "!=", "cast(", " as ", "date ",
    "timestamp ", "-", "1e999", "9" * 40, ".5", "NULL", "true", "%", "\\", "\x00", "\ud800", "\n", "decimal(38,38)",
    "varchar(0)", "lower(", "`in`", "'2024-02-30'", "'[a-'", "'(?<'", "'%!'",
)


@st.composite
def mutated_filters(draw: st.DrawFn, schema_types: tuple[str, ...] = PARTITION_KEY_TYPES) -> tuple[list, str]:
    """(schema, text): a predicate over a random schema, rendered, then edited 1-4 times at random positions."""
    schema = draw(schemas(types=schema_types, max_size=3))
    text = sg.render(draw(predicates(schema, bound=False, max_leaves=6)))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        edit = draw(st.sampled_from(("delete", "insert", "duplicate", "truncate")))
        if edit == "delete":
            text = text[:at] + text[draw(st.integers(at, min(len(text), at + 6))) :]
        elif edit == "insert":
            text = text[:at] + draw(st.one_of(st.sampled_from(TOKENS), st.text(max_size=3))) + text[at:]
        elif edit == "duplicate":
            end = draw(st.integers(at, min(len(text), at + 24)))
            text = text[:end] + text[at:end] + text[end:]
        else:
            text = text[:at]
    return schema, text


def _check_parsed(expr: sg.Expr, schema: list) -> None:
    """What a filter that parsed must then survive: its text and bytes round trip; binding, normalizing,
    bounded DNF and planning either work or refuse with a SargableError."""
    assert attempt(sg.parse, sg.render(expr)) == (True, expr)
    assert attempt(sg.loads, sg.dumps(expr)) == (True, expr)
    ok, bound = attempt(bind, expr, schema)
    if not ok:
        return
    attempt(normalize, bound)
    attempt(to_dnf, bound, 64)
    attempt(plan_key_ranges, bound, schema, max_scans=64)


@budget(400)
@given(st.one_of(st.text(), st.text(FILTER_ALPHABET)), st.sampled_from(DIALECTS))
def test_parse_arbitrary_text(text: str, dialect: str) -> None:
    ok, expr = attempt(sg.parse, text, dialect)
    if ok:
        _check_parsed(expr, [(name, "string") for name in columns_of(expr)])


@budget(250)
@given(mutated_filters(), st.sampled_from(DIALECTS))
def test_parse_mutated_filters(case: tuple[list, str], dialect: str) -> None:
    schema, text = case
    ok, expr = attempt(sg.parse, text, dialect)
    if ok:
        _check_parsed(expr, schema)


def test_parse_rejects_non_text_and_unknown_dialects() -> None:
    for bad in (None, b"p = 1", 3, ["p = 1"]):
        assert attempt(sg.parse, bad)[0] is False
    assert attempt(sg.parse, "p = 1", "mysql")[0] is False


# --------------------------------------------------------------------------------------- expression bytes


@budget(400)
@given(st.one_of(st.binary(max_size=64), st.binary(max_size=64).map(lambda b: b"SG\x01" + b)))
def test_loads_arbitrary_bytes(data: bytes) -> None:
    ok, expr = attempt(sg.loads, data)
    if ok:
        assert attempt(sg.loads, sg.dumps(expr)) == (True, expr)


@st.composite
def mutated_payloads(draw: st.DrawFn) -> tuple[list, bytes]:
    """(schema, bytes): the `dumps` of a predicate (bound or not), with 1-4 byte-level edits."""
    schema = draw(schemas(types=KEY_TYPES, max_size=3))
    data = bytearray(sg.dumps(draw(predicates(schema, bound=draw(st.booleans()), max_leaves=6))))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, max(0, len(data) - 1)))
        edit = draw(st.sampled_from(("flip", "delete", "insert", "truncate", "repeat")))
        if edit == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif edit == "delete":
            del data[at : at + draw(st.integers(1, 4))]
        elif edit == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=4))
        elif edit == "truncate":
            del data[at:]
        else:
            data[at:at] = data[at : at + draw(st.integers(1, 12))]
    return schema, bytes(data)


@budget(250)
@given(mutated_payloads())
def test_loads_mutated_payloads(case: tuple[list, bytes]) -> None:
    schema, data = case
    ok, expr = attempt(sg.loads, data)
    if not ok:
        return
    assert attempt(sg.loads, sg.dumps(expr)) == (True, expr)
    attempt(sg.render, expr)
    ok, bound = attempt(bind, expr, schema)
    if ok:
        attempt(normalize, bound)
        attempt(plan_key_ranges, bound, schema, max_scans=64)


# ------------------------------------------------------------------------------------------------ key bytes


def _decodes_canonically(data: bytes, types: list) -> None:
    """`keys.decode` refuses the bytes, or they are exactly the encoding of what it decoded."""
    ok, decoded = attempt(keys.decode, data, types)
    if ok:
        assert keys.encode(list(decoded), types) == data, f"{data!r} decodes to {decoded!r}, which encodes otherwise"
    for i in range(len(types)):
        attempt(keys.field_slice, data, types, i)


@budget(600)
@given(st.lists(data_types(), min_size=1, max_size=4), st.binary(max_size=48))
def test_key_decode_arbitrary_bytes(types: list, data: bytes) -> None:
    _decodes_canonically(data, types)


@budget(500)
@given(st.data())
def test_key_decode_mutated_encodings(data: st.DataObject) -> None:
    types = data.draw(st.lists(st.sampled_from([parse_type(t) for t in KEY_TYPES]), min_size=1, max_size=4))
    row = data.draw(st.tuples(*(values(t) for t in types)))
    ok, encoded = attempt(keys.encode, list(row), types)
    if not ok:
        return
    assert keys.decode(encoded, types) == row or any(v != v for v in row if isinstance(v, float))
    mutated = bytearray(encoded)
    at = data.draw(st.integers(0, len(mutated)))
    edit = data.draw(st.sampled_from(("flip", "delete", "insert")))
    if edit == "flip" and at < len(mutated):
        mutated[at] = data.draw(st.integers(0, 255))
    elif edit == "delete":
        del mutated[at : at + 1]
    else:
        mutated[at:at] = data.draw(st.sampled_from([b"\x00", b"\x01", b"\x02", b"\xff", b"\x01\x00"]))
    _decodes_canonically(bytes(mutated), types)


def test_string_key_with_a_dangling_escape_byte_is_refused() -> None:
    """0x01 escapes the next byte (0x01 -> NUL, 0x02 -> 0x01); a 0x01 before the terminator escapes nothing.
    It used to decode to a string whose encoding differs, so two keys decoded to one value."""
    for data in (b"\x01a\x01\x00", b"\x01\\\xc3\xa9\x02\x01\x00"):
        with pytest.raises(sg.KeyEncodingError, match="not a canonical"):
            keys.decode(data, ["string"])
    assert keys.decode(b"\x01a\x01\x02\x00", ["string"]) == ("a\x01",)


# -------------------------------------------------------------------------- partition names and values

PARTITION_KEYS = [("s", "string"), ("i", "int"), ("d", "date"), ("m", "decimal(10,2)"), ("b", "boolean")]
_TYPES = {name: parse_type(t) for name, t in PARTITION_KEYS}


@pytest.fixture(scope="module", params=BACKENDS)
def fuzz_table(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Metastore]:
    """One metastore per backend with table f.t partitioned by PARTITION_KEYS (partitions pile up across examples)."""
    postgres = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    tmp = tmp_path_factory.mktemp("fuzz")
    ms = Metastore.open(fresh_url(request.param, tmp, postgres), warehouse=tmp / "warehouse")
    ms.create_database("f")
    ms.create_table("f", "t", [("x", "int")], PARTITION_KEYS)
    yield ms
    ms.close()


def _hive_value(value: Any, dtype: str) -> str:
    if value is None:
        return "__HIVE_DEFAULT_PARTITION__"
    text = format_value(value, parse_type(dtype))
    return "".join(f"%{ord(c):02X}" if c in "\"#%'*/:=?\\\x7f{[]^" or ord(c) < 0x20 else c for c in text)


@st.composite
def partition_names(draw: st.DrawFn) -> str:
    """Hive names: valid ones (escaped as Hive does), valid ones edited, and arbitrary text."""
    row = [draw(values(t)) for _, t in PARTITION_KEYS]
    name = "/".join(f"{k}={_hive_value(v, t)}" for (k, t), v in zip(PARTITION_KEYS, row, strict=True))
    kind = draw(st.sampled_from(("valid", "edited", "edited", "arbitrary")))
    if kind == "arbitrary":
        return draw(st.one_of(st.text(max_size=60), st.text(st.sampled_from("si=/%2F0-_.aé\x00\ud800"), max_size=40)))
    if kind == "edited":
        at = draw(st.integers(0, len(name)))
        name = name[:at] + draw(st.sampled_from(["/", "=", "%", "%zz", "%00", "%2F", "..", "\x00", "\ud800", ""])) + (
            name[at + draw(st.integers(0, 3)) :]
        )
    return name


def _filter_for(values_: tuple) -> sg.Expr:
    """The exact-match filter of one partition, built as a tree (no text escaping involved)."""
    parts = [
        IsNull(col(k)) if v is None else Comparison("=", col(k), Literal(v, _TYPES[k]))
        for (k, _), v in zip(PARTITION_KEYS, values_, strict=True)
    ]
    return and_(*parts)


def _reads_back(ms: Metastore, partition: Partition) -> None:
    """A stored partition is found again by its Hive name and by an exact filter, with the same values."""
    ok, again = attempt(ms.get_partitions_by_names, "f", "t", [partition.name])
    assert ok and [p.values for p in again] == [partition.values]
    ok, found = attempt(ms.get_partitions_by_filter, "f", "t", _filter_for(partition.values))
    assert ok and [p.values for p in found] == [partition.values]


@budget(150)
@given(names=st.lists(partition_names(), min_size=1, max_size=3))
def test_partition_names(fuzz_table: Metastore, names: list[str]) -> None:
    ms = fuzz_table
    ok, found = attempt(ms.get_partitions_by_names, "f", "t", names)
    added, _ = attempt(ms.add_partitions, "f", "t", names, if_not_exists=True)
    if not added:
        assert not ok or found == [], "a name that reads must also be one that can be added"
        return
    ok, stored = attempt(ms.get_partitions_by_names, "f", "t", names)
    assert ok and 1 <= len(stored) <= len(names)
    for partition in stored:
        _reads_back(ms, partition)


def _value_for(dtype: str) -> st.SearchStrategy[Any]:
    """Anything a caller might pass as a partition value: values of the type, other types' values, Hive strings,
    text, huge and non-finite numbers, containers."""
    return st.one_of(
        values(dtype),
        values(dtype).map(lambda v: "__HIVE_DEFAULT_PARTITION__" if v is None else _hive_value(v, dtype)),
        st.text(max_size=20),
        st.integers(),
        st.floats(),
        st.decimals(),
        st.dates(),
        st.datetimes(),
        st.booleans(),
        st.binary(max_size=4),
        st.lists(st.integers(), max_size=2),
        st.sampled_from(["", " ", "\ud800", "nan", "1e400", "0x10", "2024-02-30", "TRUE", math.inf, Decimal("NaN")]),
    )


@budget(150)
@given(spec=st.fixed_dictionaries({k: _value_for(t) for k, t in PARTITION_KEYS}))
def test_partition_values(fuzz_table: Metastore, spec: dict[str, Any]) -> None:
    ms = fuzz_table
    added, _ = attempt(ms.add_partitions, "f", "t", [spec], if_not_exists=True)
    if not added:
        return
    expected = []
    for name, _ in PARTITION_KEYS:
        value, dtype = spec[name], _TYPES[name]
        if value == "__HIVE_DEFAULT_PARTITION__" or (value == "" and dtype.is_string):
            expected.append(None)
        else:
            expected.append(convert(value, dtype))
    ok, found = attempt(ms.get_partitions_by_filter, "f", "t", _filter_for(tuple(expected)))
    assert ok and [p.values for p in found] == [tuple(expected)]
    _reads_back(ms, found[0])


@budget(150)
@given(case=mutated_filters(schema_types=("string",)), dialect=st.sampled_from(DIALECTS))
def test_partition_filters(fuzz_table: Metastore, case: tuple[list, str], dialect: str) -> None:
    """Mutated filter text over the table's partition keys goes through parse, bind, plan and the store scans."""
    _, text = case
    renamed = text
    for index, (name, _) in enumerate(PARTITION_KEYS[:3]):
        renamed = renamed.replace(f"c{index}", name)
    ok, found = attempt(fuzz_table.get_partitions_by_filter, "f", "t", renamed, dialect=dialect)
    if ok:
        assert all(isinstance(p.values, tuple) and len(p.values) == len(PARTITION_KEYS) for p in found)


def test_partition_name_corpus(fuzz_table: Metastore) -> None:
    """Names Hive writes or a careless caller passes: each is refused or stored and read back exactly."""
    ms = fuzz_table
    corpus = [
        "s=a/i=1/d=2024-01-01/m=1.5/b=true",
        "s=__HIVE_DEFAULT_PARTITION__/i=__HIVE_DEFAULT_PARTITION__/d=2024-01-01/m=0/b=false",
        "s=%2F..%2F..%2Fetc/i=2/d=2024-01-01/m=0/b=false",
        "/s=x/i=3/d=2024-01-01/m=0/b=false/",
        "S=x/I=4/D=2024-01-01/M=0/B=FALSE",
        "s=a%3Db/i=5/d=2024-01-01/m=0/b=true",
        "s=%zz/i=6/d=2024-01-01/m=0/b=true",
        "s=x/i=99999999999/d=2024-01-01/m=0/b=true",
        "s=x/i=1/d=2024-02-30/m=0/b=true",
        "s=x/i=1/d=2024-01-01/m=123456789.99/b=true",
        "s=x/i=1/d=2024-01-01/m=0.001/b=true",
        "s=x/i=1/d=2024-01-01/m=0/b=yes",
        "s=x/i=1/d=2024-01-01/m=0",
        "s=x/i=1/d=2024-01-01/m=0/b=true/extra=1",
        "i=1/s=x/d=2024-01-01/m=0/b=true",
        "s=x//i=1/d=2024-01-01/m=0/b=true",
        "s=\ud800/i=1/d=2024-01-01/m=0/b=true",
        "",
        "/",
    ]
    outcomes = {}
    for name in corpus:
        added, _ = attempt(ms.add_partitions, "f", "t", [name], if_not_exists=True)
        outcomes[name] = added
        if added:
            (stored,) = ms.get_partitions_by_names("f", "t", [name])
            _reads_back(ms, stored)
    assert outcomes == {name: index < 7 for index, name in enumerate(corpus)}
    (traversal,) = ms.get_partitions_by_names("f", "t", [corpus[2]])
    assert traversal.values[0] == "/../../etc"
    assert traversal.name.startswith("s=%2F..%2F..%2Fetc/")
    (odd,) = ms.get_partitions_by_names("f", "t", [corpus[6]])
    assert odd.values[0] == "%zz"


def test_partition_values_of_the_wrong_kind() -> None:
    """Values that can't be a partition value are refused naming the column, never stored half-way."""
    ms = Metastore.open("sqlite://", warehouse="/nonexistent-warehouse")
    ms.create_database("f")
    ms.create_table("f", "t", [("x", "int")], PARTITION_KEYS)
    good = {"s": "a", "i": 1, "d": dt.date(2024, 1, 1), "m": Decimal("1.50"), "b": True}
    for column, bad in [("i", 2**40), ("i", 1.5), ("i", "x"), ("d", "yesterday"), ("m", Decimal("1.234")),
                        ("m", math.nan), ("b", 2), ("s", "\ud800"), ("s", b"bytes"), ("i", [1])]:
        ok, error = attempt(ms.add_partitions, "f", "t", [good, {**good, column: bad}])
        assert not ok and isinstance(error, sg.MetastoreError), (column, bad)
        assert ms.list_partition_names("f", "t") == []
    ms.close()
