"""Data skipping stays sound through schema changes (issue 30 item 4), checked against an independent oracle.

Each example is a random schema history of one table: columns added at the end (primitive or struct), fields
added to structs, types widened (integers up, float -> double, decimal digits up), with Parquet files written by
pyarrow at every step in the schema of that moment and registered with their footer (or exact) statistics. Then
random filters over old, new, widened and nested columns: the files `table.scan` keeps must include every file that
holds a row where the filter is TRUE, which the oracle finds by reading every file back row by row and evaluating
the filter in plain Python (three-valued logic; a column a file lacks is NULL; struct fields through their struct).

Runs on both backends, each scan through every file's record or through the statistics blocks (`statblocks`); the
budget scales with `SARGABLE_FUZZ_SCALE` (`make fuzz`).
"""

from __future__ import annotations

import math
import os
from decimal import Decimal
from itertools import count
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sargable as sg
from sargable import scan as scan_module
from sargable.types import DataType, decimal_type, float32, parse_type

SCALE = float(os.environ.get("SARGABLE_FUZZ_SCALE", "1"))
INTEGERS = ("tinyint", "smallint", "int", "bigint")
RANGES = {"tinyint": 100, "smallint": 30_000, "int": 2**31 - 1, "bigint": 2**63 - 1}
FLOATS = [0.1, 0.5, -2.25, 3.3, 1e-3, 100.0, 0.2]
STRINGS = ["", "a", "ab", "b", "ba"]
_tables = count()


def _arrow(dtype: DataType) -> pa.DataType:
    if dtype.name == "struct":
        return pa.struct([(n, _arrow(t)) for n, t in zip(dtype.field_names, dtype.children, strict=True)])
    return {
        "tinyint": pa.int8(),
        "smallint": pa.int16(),
        "int": pa.int32(),
        "bigint": pa.int64(),
        "float": pa.float32(),
        "double": pa.float64(),
        "string": pa.string(),
    }.get(dtype.name) or pa.decimal128(dtype.precision, dtype.scale)


def _value(draw: Any, dtype: DataType) -> Any:
    """A value of the type, NULL one time in four."""
    if draw(st.integers(0, 3)) == 0:
        return None
    if dtype.name == "struct":
        return {n: _value(draw, t) for n, t in zip(dtype.field_names, dtype.children, strict=True)}
    if dtype.name in INTEGERS:
        bound = min(RANGES[dtype.name], 2**40)
        return draw(st.integers(-bound, bound) | st.integers(-3, 3))
    if dtype.name in ("float", "double"):
        return draw(st.sampled_from(FLOATS))
    if dtype.name == "string":
        return draw(st.sampled_from(STRINGS))
    digits = dtype.precision - dtype.scale
    unscaled = draw(st.integers(-(10 ** min(digits + dtype.scale, 12)) + 1, 10 ** min(digits + dtype.scale, 12) - 1))
    return Decimal(unscaled).scaleb(-dtype.scale)


def _literal(draw: Any, dtype: DataType) -> tuple[str, Any]:
    """(filter text, Python value) of a literal of the column's current type."""
    if dtype.name in INTEGERS:
        value = draw(st.integers(-RANGES[dtype.name], RANGES[dtype.name]) | st.integers(-3, 3))
        return str(value), value
    if dtype.name == "float":  # exact in single precision: sargable and the oracle read it alike
        value = float32(draw(st.sampled_from(FLOATS)))
        return repr(value), value
    if dtype.name == "double":
        value = draw(st.sampled_from([*FLOATS, *(float32(f) for f in FLOATS)]))
        return repr(value), value
    if dtype.name == "string":
        value = draw(st.sampled_from(STRINGS))
        return "'" + value + "'", value
    value = Decimal(draw(st.integers(-(10**6), 10**6))).scaleb(-min(dtype.scale, 3))
    return format(value, "f"), value


def _leaves(columns: list[tuple[str, DataType]]) -> list[tuple[str, DataType]]:
    out = []
    for name, dtype in columns:
        if dtype.name == "struct":
            out.extend((f"{name}.{n}", t) for n, t in zip(dtype.field_names, dtype.children, strict=True))
        else:
            out.append((name, dtype))
    return out


def _wider(draw: Any, dtype: DataType) -> DataType | None:
    if dtype.name in INTEGERS[:-1]:
        return parse_type(draw(st.sampled_from(INTEGERS[INTEGERS.index(dtype.name) + 1 :])))
    if dtype.name == "float":
        return parse_type("double")
    if dtype.name == "decimal" and dtype.precision <= 33:
        scale = dtype.scale + draw(st.integers(0, 2))
        return decimal_type(dtype.precision + (scale - dtype.scale) + draw(st.integers(0, 3)), scale)
    return None


PRIMITIVES = st.sampled_from([*INTEGERS, "float", "float", "double", "string", "decimal(6,2)", "decimal(20,4)"])


# ------------------------------------------------------------------------------------------------- the oracle


def _rows(path: str, columns: list[tuple[str, DataType]]) -> list[dict[str, Any]]:
    """The file's rows read back, by the table's current columns and struct fields (absent: NULL)."""
    out = []
    for raw in pq.read_table(path).to_pylist():
        row: dict[str, Any] = {}
        for name, dtype in columns:
            value = raw.get(name)
            if dtype.name == "struct":
                for field in dtype.field_names:
                    row[f"{name}.{field}"] = None if value is None else value.get(field)
            else:
                row[name] = value
        out.append(row)
    return out


def _truth(node: tuple, row: dict[str, Any]) -> bool | None:
    kind = node[0]
    if kind == "and":
        a, b = _truth(node[1], row), _truth(node[2], row)
        return False if a is False or b is False else None if a is None or b is None else True
    if kind == "or":
        a, b = _truth(node[1], row), _truth(node[2], row)
        return True if a is True or b is True else None if a is None or b is None else False
    if kind == "not":
        a = _truth(node[1], row)
        return None if a is None else not a
    value = row.get(node[1])
    if kind == "null":
        return value is None
    if value is None:
        return None
    op, literal = node[2], node[3]
    return {
        "=": value == literal,
        "!=": value != literal,
        "<": value < literal,
        "<=": value <= literal,
        ">": value > literal,
        ">=": value >= literal,
    }[op]


def _filter(draw: Any, leaves: list[tuple[str, DataType]], depth: int = 0) -> tuple[str, tuple]:
    """(filter text, the oracle's tree) over the given columns and struct fields."""
    shape = draw(st.integers(0, 5 if depth < 2 else 1))
    if shape >= 3:
        text_a, a = _filter(draw, leaves, depth + 1)
        if shape == 5:
            return f"NOT ({text_a})", ("not", a)
        text_b, b = _filter(draw, leaves, depth + 1)
        kind = "and" if shape == 3 else "or"
        return f"({text_a}) {kind.upper()} ({text_b})", (kind, a, b)
    name, dtype = draw(st.sampled_from(leaves))
    if shape == 2:
        negated = draw(st.booleans())
        text = f"{name} IS {'NOT ' if negated else ''}NULL"
        return text, ("not", ("null", name)) if negated else ("null", name)
    op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
    text, value = _literal(draw, dtype)
    return f"{name} {op} {text}", ("cmp", name, op, value)


# ------------------------------------------------------------------------------------------------- the property


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def backend(request, tmp_path_factory):
    from metastore_fixtures import fresh_url
    from sargable.metastore import Metastore

    root = tmp_path_factory.mktemp("soundness")
    postgres = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    ms = Metastore.open(fresh_url(request.param, root, postgres), warehouse=root / "warehouse")
    ms.create_database("d")
    yield ms, root
    ms.close()


@settings(
    max_examples=max(1, int(12 * SCALE)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_scan_keeps_every_file_with_a_matching_row(backend, data):
    ms, root = backend
    draw = data.draw
    name = f"t{next(_tables)}"
    location = root / name
    ms.create_table("d", name, [("c0", draw(PRIMITIVES))], [("p", "string")], str(location))
    table = ms.table("d", name)
    files: list[str] = []
    for step in range(draw(st.integers(2, 8))):
        columns = list(table.columns)
        action = draw(st.sampled_from(["write", "write", "add", "nested", "widen", "widen"]))
        if action == "add":
            kind = draw(st.sampled_from(["primitive", "primitive", "struct"]))
            dtype = draw(PRIMITIVES) if kind == "primitive" else f"struct<a:{draw(PRIMITIVES)}>"
            table = table.add_columns([(f"c{len(columns)}", dtype)])
        elif action == "nested" and any(t.name == "struct" for _, t in columns):
            struct, dtype = draw(st.sampled_from([(n, t) for n, t in columns if t.name == "struct"]))
            table = table.add_columns([(f"{struct}.f{len(dtype.field_names)}", draw(PRIMITIVES))])
        elif action == "widen":
            path, dtype = draw(st.sampled_from(_leaves(columns)))
            wider = _wider(draw, dtype)
            if wider is not None:
                table = table.widen(path, wider)
        else:
            columns = list(table.columns)
            schema = pa.schema([(n, _arrow(t)) for n, t in columns])
            rows = draw(st.integers(1, 4))
            values = {n: [_value(draw, t) for _ in range(rows)] for n, t in columns}
            path = str(location / f"p=a/f{step}.parquet")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            pq.write_table(pa.table(values, schema=schema), path)
            exact = draw(st.booleans())
            stats = sg.stats_from_parquet(path, table.schema, read_data=exact, partition={"p": "a"})
            table = table.refresh()
            table.add_files([stats])
            table = table.refresh()
            files.append(path)
    table = table.refresh()
    columns = list(table.columns)
    oracle = {path: _rows(path, columns) for path in files}
    for _ in range(10):
        text, tree = _filter(draw, _leaves(columns))
        with pytest.MonkeyPatch.context() as patch:  # through every file's record, or the statistics blocks
            patch.setattr(scan_module, "BLOCKS_MIN_FILES", draw(st.sampled_from([0, math.inf])))
            kept = {f.path for f in table.scan(text).files}
        matching = {path for path, rows in oracle.items() if any(_truth(tree, row) is True for row in rows)}
        assert matching <= kept, f"{text!r} over {columns}: dropped {sorted(matching - kept)}"
