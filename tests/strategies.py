"""Shared hypothesis strategies: Hive-typed schemas, values (NULL and edge values included), rows, and predicates.

Reused across the suite: the expression tests (evaluation against DuckDB, normalization properties), the planner
(partition filters over partition-key schemas: `schemas(types=PARTITION_KEY_TYPES)`), the metastore differential
tests and the data-skipping soundness tests. A typical property:

    @given(st.data())
    def test_something(data):
        schema = data.draw(schemas(types=PARTITION_KEY_TYPES))
        table = data.draw(tables(schema, max_size=20))
        predicate = data.draw(predicates(schema, pools=pools_of(schema, table)))   # bound, ready to evaluate
        expected = [row for row in table if evaluate(predicate, row) is True]

Import it as `from strategies import ...` (pytest puts tests/ on sys.path).

Values are the Python values of sargable.types (str, int, float, Decimal, date, naive datetime, bool; None is
NULL) and are already exact values of their column type (floats of a `float` column are single-precision values,
decimals are quantized to the column's scale), so they can be stored and read back unchanged.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from functools import lru_cache
from typing import Any

from hypothesis import strategies as st

from sargable.expr.bind import bind
from sargable.expr.like import prefix_successor
from sargable.expr.nodes import (
    COMPARISON_OPS,
    FALSE,
    NULL_LITERAL,
    TRUE,
    And,
    Between,
    Column,
    Comparison,
    Expr,
    Func,
    In,
    IsNull,
    Like,
    Literal,
    Not,
    Or,
    Regex,
    lit,
)
from sargable.stats import ColumnStats
from sargable.types import INTEGER_RANGES, DataType, convert, float32, parse_type

Schema = list[tuple[str, str]]

ALL_TYPES: tuple[str, ...] = (
    "string",
    "varchar(8)",
    "char(4)",
    "tinyint",
    "smallint",
    "int",
    "bigint",
    "float",
    "double",
    "decimal(10,2)",
    "decimal(38,6)",
    "date",
    "timestamp",
    "boolean",
)
"""One column type of each kind in DESIGN.md (varchar/char treated as strings with a length limit)."""

PARTITION_KEY_TYPES: tuple[str, ...] = (
    "string",
    "varchar(8)",
    "tinyint",
    "smallint",
    "int",
    "bigint",
    "decimal(10,2)",
    "date",
    "timestamp",
    "boolean",
)
"""Types that make sense as partition keys (no floating point)."""

LEAF_KINDS: frozenset[str] = frozenset(
    {"compare", "columns", "in", "between", "is_null", "like", "rlike", "bool_column", "constant", "func"}
)
"""Every kind of predicate leaf `predicates` can draw; pass a subset as `kinds=` to restrict it."""

STRING_ALPHABET = "ab%_!\\é\n\x00😀"
"""A small alphabet (LIKE wildcards, escapes, non-ASCII, newline, NUL, astral) so that values collide and match."""

SAMPLE_STRINGS = ("", "a", "ab", "abc", "b", "ba", "A", "%", "_", "a%", "a_b", "é", "\x00", "\n", "😀", "a\\")
_DATE_MIN, _DATE_MAX = dt.date(1, 1, 1), dt.date(9999, 12, 31)
_NEAR_DATE = (dt.date(2023, 12, 28), dt.date(2024, 1, 5))


def data_types(types: Sequence[str] | None = None) -> st.SearchStrategy[DataType]:
    """Column types: drawn from `types` (names such as "decimal(10,2)"), or any Hive type with random
    parameters (varchar(1..20), char(1..10), decimal(p,s) with 1 <= p <= 38, 0 <= s <= p)."""
    if types is not None:
        return st.sampled_from([parse_type(t) for t in types])
    simple = st.sampled_from(
        [parse_type(t) for t in ("string", "tinyint", "smallint", "int", "bigint", "float", "double", "date",
                                 "timestamp", "boolean")]
    )
    sized = st.one_of(
        st.integers(1, 20).map(lambda n: DataType("varchar", length=n)),
        st.integers(1, 10).map(lambda n: DataType("char", length=n)),
        st.integers(1, 38).flatmap(lambda p: st.integers(0, p).map(lambda s: parse_type(f"decimal({p},{s})"))),
    )
    return st.one_of(simple, sized)


def schemas(
    types: Sequence[str] = ALL_TYPES, min_size: int = 1, max_size: int = 6
) -> st.SearchStrategy[Schema]:
    """Schemas as `[(name, type text), ...]` with unique names `c0`, `c1`, ... and types drawn from `types`."""
    return st.lists(st.sampled_from(list(types)), min_size=min_size, max_size=max_size).map(
        lambda chosen: [(f"c{i}", t) for i, t in enumerate(chosen)]
    )


_DECIMAL_DIGITS = 38
"""Generated decimals span the whole decimal(38,s) range."""


def _decimal_bound(dtype: DataType) -> Decimal:
    """The largest value of a decimal type (within `_DECIMAL_DIGITS` digits)."""
    assert dtype.precision is not None and dtype.scale is not None
    scale = min(dtype.scale, _DECIMAL_DIGITS)
    digits = "9" * (min(dtype.precision, _DECIMAL_DIGITS) - scale) or "0"
    return Decimal(digits + "." + "9" * scale if scale else digits)


def values(dtype: DataType | str, *, nulls: bool = True) -> st.SearchStrategy[Any]:
    """Values of one column type, edge values included (type extremes, NaN, ±inf, -0.0, empty string, NUL,
    unicode, year 1 and 9999), with many small values so that rows and literals collide; None (NULL) about one time
    in five unless `nulls=False`."""
    return _values(parse_type(dtype), nulls)


@lru_cache(maxsize=256)
def _values(dtype: DataType, nulls: bool) -> st.SearchStrategy[Any]:
    name = dtype.name
    strategy: st.SearchStrategy[Any]
    if dtype.is_integral:
        lo, hi = INTEGER_RANGES[name]
        strategy = st.one_of(st.integers(-3, 3), st.sampled_from([lo, hi, lo + 1, hi - 1]), st.integers(lo, hi))
    elif name == "float":
        edges = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.0, 0.5, float32(0.1), float32(3.4e38)]
        strategy = st.one_of(st.sampled_from(edges), st.integers(-3, 3).map(float), st.floats(width=32))
    elif name == "double":
        edges = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.0, 0.1, 5e-324, 1.7976931348623157e308, 2.0**53 + 2]
        strategy = st.one_of(st.sampled_from(edges), st.integers(-3, 3).map(float), st.floats())
    elif name == "decimal":
        bound = _decimal_bound(dtype)
        places = dtype.scale or 0
        strategy = st.one_of(
            st.sampled_from([Decimal(i) for i in range(-3, 4) if Decimal(abs(i)) <= bound]),
            st.sampled_from([bound, bound.copy_negate(), Decimal(0)]),
            st.decimals(
                min_value=bound.copy_negate(), max_value=bound, places=places, allow_nan=False, allow_infinity=False
            ),
        ).map(lambda d: convert(d, dtype))
    elif dtype.is_string:
        limit = dtype.length if dtype.length is not None else 12
        strategy = st.one_of(
            st.sampled_from([s for s in SAMPLE_STRINGS if len(s) <= limit]),
            st.text(alphabet=STRING_ALPHABET, max_size=limit),
            st.text(st.characters(exclude_categories=("Cs",)), max_size=limit),
        )
    elif name == "date":
        strategy = st.one_of(
            st.dates(*_NEAR_DATE),
            st.sampled_from([_DATE_MIN, _DATE_MAX, dt.date(1970, 1, 1)]),
            st.dates(_DATE_MIN, _DATE_MAX),
        )
    elif name == "timestamp":
        near = (dt.datetime.combine(_NEAR_DATE[0], dt.time()), dt.datetime.combine(_NEAR_DATE[1], dt.time()))
        strategy = st.one_of(
            st.dates(*_NEAR_DATE).map(lambda d: dt.datetime(d.year, d.month, d.day)),
            st.datetimes(*near),
            st.sampled_from([dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999)]),
            st.datetimes(dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999)),
        )
    elif name == "boolean":
        strategy = st.booleans()
    else:
        raise ValueError(f"no value strategy for type {dtype}")
    if nulls:
        return st.one_of(strategy, strategy, strategy, strategy, st.none())
    return strategy


def rows(schema: Sequence[tuple[str, str | DataType]], *, nulls: bool = True) -> st.SearchStrategy[dict[str, Any]]:
    """One row of a schema: a dict column name -> value (None for NULL unless `nulls=False`)."""
    return st.fixed_dictionaries({name: values(dtype, nulls=nulls) for name, dtype in schema})


def tables(
    schema: Sequence[tuple[str, str | DataType]], *, min_size: int = 0, max_size: int = 12, nulls: bool = True
) -> st.SearchStrategy[list[dict[str, Any]]]:
    """A list of rows of a schema."""
    return st.lists(rows(schema, nulls=nulls), min_size=min_size, max_size=max_size)


def pools_of(schema: Sequence[tuple[str, Any]], table: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """Per column, the non-NULL values present in `table`: pass as `pools=` so predicates hit real values."""
    return {name: [row[name] for row in table if row.get(name) is not None] for name, _ in schema}


@lru_cache(maxsize=256)
def _out_of_type_literals(dtype: DataType) -> st.SearchStrategy[Any] | None:
    """Literal values outside the column type that binding must keep exact or coerce."""
    name = dtype.name
    if dtype.is_integral:
        lo, hi = INTEGER_RANGES[name]
        return st.one_of(
            st.sampled_from([lo - 1, hi + 1, 2**63, -(2**63) - 1, 10**20, 8589934592]),
            st.sampled_from(["3", "-1", "0"]),
            st.decimals(min_value=-5, max_value=5, places=1, allow_nan=False, allow_infinity=False),
        )
    if name == "decimal":
        bound = _decimal_bound(dtype)
        scale = (dtype.scale or 0) + 1
        return st.one_of(
            st.sampled_from([int(bound) + 1, -int(bound) - 1, 10**30]),
            st.decimals(min_value=-3, max_value=3, places=scale, allow_nan=False, allow_infinity=False),
        )
    if dtype.is_floating:
        return st.one_of(
            st.decimals(min_value=-5, max_value=5, places=2, allow_nan=False, allow_infinity=False),
            st.integers(-5, 5),
        )
    if name == "date":
        return st.dates(*_NEAR_DATE).flatmap(
            lambda d: st.sampled_from([d.isoformat(), dt.datetime(d.year, d.month, d.day)])
        )
    if name == "timestamp":
        return st.dates(*_NEAR_DATE).flatmap(lambda d: st.sampled_from([d, d.isoformat(), f"{d} 12:30:00"]))
    if name == "boolean":
        return st.sampled_from(["true", "false", "TRUE"])
    if dtype.is_string:
        return st.one_of(st.integers(-3, 3), st.sampled_from([dt.date(2024, 1, 1), True]))
    return None


def literals(
    dtype: DataType | str, *, pool: Sequence[Any] | None = None, exotic: bool = True, nulls: bool = True
) -> st.SearchStrategy[Literal]:
    """Unbound literals to compare with a column of `dtype`: values of the type, values from `pool` (e.g. the
    table's), and with `exotic` forms binding coerces (ISO strings for dates, out-of-range integers, non-integral
    decimals against integers, decimals against doubles); the NULL literal now and then unless `nulls=False`."""
    return _literals(parse_type(dtype), tuple(pool or ()), exotic, nulls)


@lru_cache(maxsize=1024)
def _literals(dtype: DataType, pool: tuple[Any, ...], exotic: bool, nulls: bool) -> st.SearchStrategy[Literal]:
    choices: list[st.SearchStrategy[Any]] = [values(dtype, nulls=False)]
    if pool:
        choices.extend([st.sampled_from(pool)] * 2)
    if exotic:
        other = _out_of_type_literals(dtype)
        if other is not None:
            choices.append(other)
    strategy = st.one_of(*choices).map(lit)
    if nulls:
        strategy = st.one_of(strategy, strategy, strategy, strategy, strategy, st.just(NULL_LITERAL))
    return strategy


def _escaped(char: str, escape: str | None) -> str:
    if escape is not None and char in ("%", "_", escape):
        return escape + char
    return char


def like_patterns(escape: str | None, pool: Sequence[str] | None = None) -> st.SearchStrategy[str]:
    """Valid LIKE patterns for `escape`: `%`, `_`, literal characters, escaped wildcards and escaped escapes; with
    a `pool` of strings, also patterns made from a pool value by turning some characters into `_` or `%`, so that
    they match (or barely miss) real values."""
    return _like_patterns(escape, tuple(v for v in pool or () if isinstance(v, str)))


@lru_cache(maxsize=1024)
def _like_patterns(escape: str | None, strings: tuple[str, ...]) -> st.SearchStrategy[str]:
    tokens: list[st.SearchStrategy[str]] = [
        st.sampled_from(["%", "_"]),
        st.sampled_from([c for c in "ab\\!é\n\x00😀" if c != escape]),
        st.sampled_from(["a", "b", "ab"]),
    ]
    if escape is not None:
        tokens.append(st.sampled_from([escape + "%", escape + "_", escape + escape]))
    random = st.lists(st.one_of(*tokens), max_size=5).map("".join)
    if not strings:
        return random

    def from_value(value: str) -> st.SearchStrategy[str]:
        size = len(value)
        edits = st.lists(st.sampled_from(["keep", "keep", "one", "any", "drop"]), min_size=size, max_size=size)
        return st.tuples(edits, st.sampled_from(["", "", "%", "_"])).map(
            lambda t: "".join(
                _escaped(c, escape) if e == "keep" else "_" if e == "one" else "%" if e == "any" else ""
                for c, e in zip(value, t[0], strict=True)
            )
            + t[1]
        )

    return st.one_of(random, st.sampled_from(strings).flatmap(from_value))


@lru_cache(maxsize=1)
def regex_patterns() -> st.SearchStrategy[str]:
    """Simple RLIKE patterns that Python's `re` and RE2 (DuckDB, Spark's Java) read the same way."""
    token = st.sampled_from(["a", "b", "ab", ".", ".*", "[ab]", "a?", "b+", "é", "\\n"])
    return st.tuples(st.booleans(), st.lists(token, min_size=1, max_size=4)).map(
        lambda t: ("^" if t[0] else "") + "".join(t[1])
    )


def _comparable(a: DataType, b: DataType) -> bool:
    def family(t: DataType) -> str:
        if t.is_numeric:
            return "number"
        if t.is_string:
            return "string"
        return "time" if t.name in ("date", "timestamp") else t.name

    return family(a) == family(b)


def leaves(
    schema: Sequence[tuple[str, str | DataType]],
    *,
    kinds: frozenset[str] = LEAF_KINDS,
    pools: Mapping[str, Sequence[Any]] | None = None,
    exotic: bool = True,
) -> st.SearchStrategy[Expr]:
    """One unbound predicate leaf over `schema` of the given `kinds` (see LEAF_KINDS): comparisons with the literal
    on either side (all seven operators), column-vs-column on comparable types, [NOT] IN with NULLs in the list,
    [NOT] BETWEEN, IS [NOT] NULL, [NOT] LIKE with or without ESCAPE (string columns), [NOT] RLIKE, a bare boolean
    column, TRUE/FALSE/NULL and literal-vs-literal comparisons, and function calls (lower, upper, length, trim, abs,
    substr, coalesce) compared with a literal."""
    typed = [(name, parse_type(t)) for name, t in schema]
    pools = pools or {}

    def column_and_type() -> st.SearchStrategy[tuple[Column, DataType]]:
        return st.sampled_from(typed).map(lambda c: (Column(c[0]), c[1]))

    def lits(dtype: DataType, name: str) -> st.SearchStrategy[Literal]:
        return literals(dtype, pool=pools.get(name), exotic=exotic)

    def compare(ct: tuple[Column, DataType]) -> st.SearchStrategy[Expr]:
        column, dtype = ct
        return st.tuples(st.sampled_from(COMPARISON_OPS), lits(dtype, column.name), st.booleans()).map(
            lambda t: Comparison(t[0], t[1], column) if t[2] else Comparison(t[0], column, t[1])
        )

    def in_list(ct: tuple[Column, DataType]) -> st.SearchStrategy[Expr]:
        column, dtype = ct
        return st.tuples(st.lists(lits(dtype, column.name), min_size=1, max_size=5), st.booleans()).map(
            lambda t: In(column, tuple(t[0]), t[1])
        )

    def between(ct: tuple[Column, DataType]) -> st.SearchStrategy[Expr]:
        column, dtype = ct
        bound = lits(dtype, column.name)
        return st.tuples(bound, bound, st.booleans()).map(lambda t: Between(column, t[0], t[1], t[2]))

    def columns(ct: tuple[Column, DataType]) -> st.SearchStrategy[Expr]:
        column, dtype = ct
        partners = [Column(n) for n, t in typed if _comparable(t, dtype)]
        return st.tuples(st.sampled_from(COMPARISON_OPS), st.sampled_from(partners)).map(
            lambda t: Comparison(t[0], column, t[1])
        )

    def like(column: Column) -> st.SearchStrategy[Expr]:
        return st.sampled_from([None, "!", "\\"]).flatmap(
            lambda escape: st.tuples(like_patterns(escape, pools.get(column.name)), st.booleans()).map(
                lambda t: Like(column, t[0], escape, t[1])
            )
        )

    def rlike(column: Column) -> st.SearchStrategy[Expr]:
        return st.tuples(regex_patterns(), st.booleans()).map(lambda t: Regex(column, t[0], t[1]))

    def func(ct: tuple[Column, DataType]) -> st.SearchStrategy[Expr]:
        column, dtype = ct
        if dtype.is_string:
            calls = st.one_of(
                st.sampled_from(["lower", "upper", "trim"]).map(lambda f: (Func(f, (column,)), dtype)),
                st.just((Func("length", (column,)), parse_type("int"))),
                st.tuples(st.integers(-4, 4), st.integers(-1, 4)).map(
                    lambda t: (Func("substr", (column, lit(t[0]), lit(t[1]))), dtype)
                ),
            )
        elif dtype.is_numeric:
            calls = st.just((Func("abs", (column,)), dtype))
        else:
            calls = st.just((Func("coalesce", (column, lit(None))), dtype))
        return calls.flatmap(
            lambda ft: st.tuples(st.sampled_from(COMPARISON_OPS), literals(ft[1], exotic=False)).map(
                lambda t: Comparison(t[0], ft[0], t[1])
            )
        )

    def constant() -> st.SearchStrategy[Expr]:
        same_type = column_and_type().flatmap(
            lambda ct: st.tuples(st.sampled_from(COMPARISON_OPS), literals(ct[1], exotic=False),
                                 literals(ct[1], exotic=False))
        ).map(lambda t: Comparison(t[0], t[1], t[2]))
        return st.one_of(st.sampled_from([TRUE, FALSE, NULL_LITERAL]), same_type)

    strings = [Column(n) for n, t in typed if t.is_string]
    booleans = [Column(n) for n, t in typed if t.name == "boolean"]
    options: list[st.SearchStrategy[Expr]] = []
    builders = {"compare": compare, "in": in_list, "between": between, "columns": columns, "func": func}
    for kind, build in builders.items():
        if kind in kinds:
            options.append(column_and_type().flatmap(build))
    if "is_null" in kinds:
        options.append(st.tuples(column_and_type(), st.booleans()).map(lambda t: IsNull(t[0][0], t[1])))
    if "like" in kinds and strings:
        options.append(st.sampled_from(strings).flatmap(like))
    if "rlike" in kinds and strings:
        options.append(st.sampled_from(strings).flatmap(rlike))
    if "bool_column" in kinds and booleans:
        options.append(st.sampled_from(booleans))
    if "constant" in kinds:
        options.append(constant())
    if not options:
        raise ValueError(f"no leaf of kinds {sorted(kinds)} fits the schema {schema}")
    return st.one_of(*options)


def predicates(
    schema: Sequence[tuple[str, str | DataType]],
    *,
    max_leaves: int = 8,
    kinds: frozenset[str] = LEAF_KINDS,
    pools: Mapping[str, Sequence[Any]] | None = None,
    exotic: bool = True,
    bound: bool = True,
) -> st.SearchStrategy[Expr]:
    """Predicates over `schema`: `leaves` combined with NOT and n-ary AND/OR, nested, up to `max_leaves` leaves;
    bound to the schema unless `bound=False` (binding never fails on what this draws)."""
    tree = st.recursive(
        leaves(schema, kinds=kinds, pools=pools, exotic=exotic),
        lambda children: st.one_of(
            st.lists(children, min_size=2, max_size=4).map(lambda cs: And(tuple(cs))),
            st.lists(children, min_size=2, max_size=4).map(lambda cs: Or(tuple(cs))),
            children.map(Not),
        ),
        max_leaves=max_leaves,
    )
    if bound:
        return tree.map(lambda e: bind(e, schema))
    return tree


STAT_MODES = (
    "exact",
    "exact",
    "no_distinct",
    "no_distinct",
    "unknown_bounds",
    "unknown_counts",
    "truncated",
    "missing",
)
"""How `degraded_stats` may leave a file's statistics (exact ones weighted up)."""


def degraded_stats(stats: ColumnStats, mode: str, string: bool, cut: int) -> ColumnStats | None:
    """Statistics as a writer might leave them: without value set, partly unknown, truncated or missing."""
    if mode == "exact":
        return stats
    if mode == "missing":
        return None
    if mode == "no_distinct":
        return ColumnStats(stats.min, stats.max, stats.null_count, stats.nan_count)
    if mode == "unknown_bounds":
        return ColumnStats(null_count=stats.null_count, nan_count=stats.nan_count)
    if mode == "unknown_counts":
        return ColumnStats(stats.min, stats.max)
    if not string or stats.min is None:
        return ColumnStats(stats.min, stats.max, stats.null_count, stats.nan_count, min_exact=False)
    high = stats.max[:cut]
    if cut % 2 and prefix_successor(high) is not None:
        high = prefix_successor(high)
    low = stats.min[:cut]
    return ColumnStats(low, max(high, low), stats.null_count, stats.nan_count, min_exact=False, max_exact=False)
