"""Dimension keys for join pruning: resolve join keys, collect each dimension's key values.

Seed 003 (Hive's map-join partition pruning): the small side of a star join is materialised first, so its join-key
values can prune the big table before the big table is read. For each `(dimension, dimension key, fact key)` this
module collects the dimension's distinct non-NULL key values (at most `max_values`; beyond that, their min/max
range) as a `sargable.scan.KeySet` of the fact column, and records what the key did in a `KeyPruning`: read on the
driver when the dimension is a small Parquet relation whose filter sargable evaluates (`sargable.spark.driver_keys`),
else by Spark jobs. Both run before the fact table's scan is planned (`Table.scan(..., key_sets=...)`), never while
the metastore is read.
Keys that can't prune (an expression, or types Spark compares through a cast sargable does not reproduce) say why.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow.compute as pc

from sargable.errors import SargableError, TypeCoercionError
from sargable.metastore import TableDefinition
from sargable.scan import KeySet, ScanReport
from sargable.spark.driver_keys import driver_keys
from sargable.spark.schema import hive_type
from sargable.types import DataType, convert

DEFAULT_MAX_VALUES = 100_000
"""Distinct dimension keys collected per join key; beyond this the keys' min/max range prunes instead."""
FIRST_ROWS = 10_000
"""Keys the first (cheapest) collection job takes; a dimension with more rows is collected as Arrow."""
COLLECTORS = 4
"""Dimensions whose keys are collected at once."""

_EXACT_NUMERIC = {"tinyint", "smallint", "int", "bigint", "decimal"}
_STRINGS = {"string", "varchar", "char"}
_IDENTIFIER = re.compile(r"^`?[A-Za-z_][A-Za-z0-9_]*`?$")
HIDDEN_PREFIX = "__sargable_key_"
"""Prefix of the temporary columns a join adds (and drops) for keys given as expressions."""


@dataclass(frozen=True)
class KeyPruning:
    """What one join key did to the fact scan.

    `target` is "partitions" (a partition key: the metastore selects partitions) or "files" (a data column: file
    statistics skip files, Spark applies the residual), None when the key did not prune; `mode` is "values" (the
    dimension's distinct keys) or "range" (their min/max, over `max_values`); `values` counts the distinct non-NULL
    keys collected (None over the bound); `reason` says why a key did not prune.
    """

    fact_column: str
    dim_column: str
    target: str | None = None
    mode: str | None = None
    values: int | None = None
    low: Any = None
    high: Any = None
    reason: str | None = None
    collect_ms: float = 0.0
    on_driver: bool = False
    """The keys were read on the driver (`sargable.spark.driver_keys`), not by a Spark job."""

    @property
    def applied(self) -> bool:
        return self.target is not None

    def describe(self) -> str:
        pair = f"{self.fact_column} = {self.dim_column}"
        if not self.applied:
            return f"{pair}: not pruned ({self.reason})"
        if self.mode == "values":
            how = f"{self.values} distinct dimension keys"
        else:
            how = f"range [{self.low!r}, {self.high!r}] (more than max_values distinct keys)"
        where = "read on the driver" if self.on_driver else "collected by Spark"
        return f"{pair}: {self.target} pruned by {how}, {where} in {self.collect_ms:.1f} ms"


@dataclass(frozen=True)
class JoinScanReport(ScanReport):
    """A ScanReport of a fact scan pruned by join keys; `pruning` tells what each key did, `collect_ms` the wall
    time of collecting the dimensions' keys (concurrently, on the driver or by Spark jobs), which `planning_ms` does
    not include."""

    pruning: tuple[KeyPruning, ...] = ()
    collect_ms: float = 0.0

    def __str__(self) -> str:
        lines = [super().__str__()]
        lines.extend(f"  join key {p.describe()}" for p in self.pruning)
        return "\n".join(lines)


@dataclass(frozen=True)
class JoinKey:
    """One side of a join key: a bare column name, or an expression (text or Column) that prevents pruning."""

    name: str | None
    expression: Any = None
    text: str = ""


def resolve_key(key: Any, names: Sequence[str], side: str) -> JoinKey:
    """A join key given as a column name, a pyspark Column or SQL expression text, against a side's columns."""
    by_lower = {n.lower(): n for n in names}
    if isinstance(key, str):
        if not key.strip():
            raise SargableError(f"a {side} join key must be a column name or an expression, got {key!r}")
        if key.strip().strip("`").lower() in by_lower or _IDENTIFIER.match(key.strip()):
            bare = key.strip().strip("`")
            if bare.lower() not in by_lower:
                raise SargableError(f"{bare!r} is not a column of the {side}; its columns: {list(names)}")
            return JoinKey(by_lower[bare.lower()], text=by_lower[bare.lower()])
        return JoinKey(None, expression=key, text=key)
    if type(key).__name__ == "Column" and hasattr(key, "_jc"):
        name = _bare_column(key)
        if name is not None and name.lower() in by_lower:
            return JoinKey(by_lower[name.lower()], text=by_lower[name.lower()])
        if name is not None:
            raise SargableError(f"{name!r} is not a column of the {side}; its columns: {list(names)}")
        return JoinKey(None, expression=key, text=str(key._jc.node().sql()))
    raise SargableError(f"a {side} join key must be a column name, a pyspark Column or SQL text, got {key!r}")


def _bare_column(column: Any) -> str | None:
    """The name of a Column that is just a column reference (`F.col("x")`, `df["x"]`), else None."""
    node = column._jc.node()
    kind = node.getClass().getSimpleName()
    if kind == "UnresolvedAttribute":
        parts = node.nameParts()
        return str(parts.apply(0)) if parts.size() == 1 else None
    if kind == "ExpressionColumnNode":
        expression = node.expression()
        if expression.getClass().getSimpleName() == "AttributeReference":
            return str(expression.name())
    return None


def check_dataframe(value: Any, what: str) -> None:
    if not (hasattr(value, "sparkSession") and hasattr(value, "schema") and hasattr(value, "toArrow")):
        raise SargableError(f"{what} must be a pyspark DataFrame, got {type(value).__name__}")


def check_max_values(max_values: Any) -> int:
    if isinstance(max_values, bool) or not isinstance(max_values, int) or max_values < 1:
        raise SargableError(f"max_values must be a positive integer, got {max_values!r}")
    return max_values


def _key_types_reason(fact_type: DataType, dim_type: DataType) -> str | None:
    """Why keys of these types can't prune (Spark compares them through a cast sargable doesn't reproduce), or None."""
    f, d = fact_type.name, dim_type.name
    if f in _EXACT_NUMERIC and d in _EXACT_NUMERIC:
        return None
    if f in _STRINGS and d in _STRINGS:
        return None
    if f == d and f in ("date", "boolean"):
        return None
    if f == d == "timestamp":
        return "timestamp keys are not pruned (their values depend on the session time zone)"
    if f in ("float", "double") or d in ("float", "double"):
        return "floating-point keys are not pruned (Spark's join treats NaN and -0.0 its own way)"
    return f"keys of types {fact_type} and {dim_type}: Spark compares them through a cast sargable does not reproduce"


def _collect_keys(dim: Any, name: str, max_values: int) -> tuple[list[Any] | None, Any, Any, bool]:
    """(distinct non-NULL values, or None when more than `max_values`; min; max; read on the driver) of a dimension
    column.

    A small Parquet dimension filtered by a predicate sargable evaluates exactly is read on the driver, no Spark job
    (`sargable.spark.driver_keys`). Otherwise a filtered dimension is still small: the first job takes up to
    `FIRST_ROWS` keys as Spark takes rows for a LIMIT (from the first partitions, no shuffle), which is all of them
    for such a dimension. Past that, a job reads up to `max_values + 1` keys as Arrow; only when there are more does
    another count distinct values, and a last one take the range.
    """
    read = driver_keys(dim, name)
    if read is not None:
        if len(read) <= max_values:
            return read.to_pylist(), None, None, True
        bounds = pc.min_max(read).as_py()
        return None, bounds["min"], bounds["max"], True
    from pyspark.sql import functions as F

    column = F.col(f"`{name}`")
    first = min(max_values, FIRST_ROWS)
    taken = dim.select(column).limit(first + 1).collect()
    if len(taken) <= first:
        return list({row[0] for row in taken if row[0] is not None}), None, None, False
    present = dim.select(column.alias("k")).where(F.col("k").isNotNull())
    rows = present.limit(max_values + 1).toArrow().column(0)
    if len(rows) <= max_values:
        return pc.unique(rows).to_pylist(), None, None, False
    values = present.distinct().limit(max_values + 1).toArrow().column(0).to_pylist()
    if len(values) <= max_values:
        return values, None, None, False
    bounds = dim.agg(F.min(column).alias("lo"), F.max(column).alias("hi")).toArrow().to_pylist()[0]
    return None, bounds["lo"], bounds["hi"], False


def _range_bounds(low: Any, high: Any, dtype: DataType) -> tuple[Any, Any] | None:
    """The range's bounds as the fact column's type, or None when one of them can't be."""
    try:
        return convert(low, dtype), convert(high, dtype)
    except TypeCoercionError:
        return None


def _key_set(
    table: TableDefinition, dim: Any, fact_key: JoinKey, dim_key: JoinKey, max_values: int
) -> tuple[KeySet | None, KeyPruning]:
    """Collect a dimension's keys for one fact column (None and the reason when this key can't prune)."""
    label = KeyPruning(fact_key.text, dim_key.text)
    if fact_key.name is None or dim_key.name is None:
        return None, dataclasses.replace(label, reason="a join key wrapped in a function or expression")
    fact_type = dict(table.schema)[fact_key.name]
    try:
        dim_type = hive_type(dim.schema[dim_key.name].dataType, dim_key.name)
    except SargableError as exc:
        return None, dataclasses.replace(label, reason=str(exc))
    reason = _key_types_reason(fact_type, dim_type)
    if reason is not None:
        return None, dataclasses.replace(label, reason=reason)
    target = "partitions" if fact_key.name.lower() in {k.lower() for k in table.partition_key_names} else "files"
    started = time.perf_counter()
    values, low, high, on_driver = _collect_keys(dim, dim_key.name, max_values)
    collect_ms = (time.perf_counter() - started) * 1000.0
    label = dataclasses.replace(label, on_driver=on_driver)
    if values is not None:
        key = KeySet(fact_key.name, values=frozenset(values))
        return key, dataclasses.replace(label, target=target, mode="values", values=len(values), collect_ms=collect_ms)
    bounds = _range_bounds(low, high, fact_type)
    if bounds is None:
        reason = f"the keys' range [{low!r}, {high!r}] does not convert to {fact_type}"
        return None, dataclasses.replace(label, reason=reason, collect_ms=collect_ms)
    key = KeySet(fact_key.name, low=bounds[0], high=bounds[1])
    pruning = dataclasses.replace(label, target=target, mode="range", low=bounds[0], high=bounds[1])
    return key, dataclasses.replace(pruning, collect_ms=collect_ms)


@functools.cache
def _collectors(pid: int) -> ThreadPoolExecutor:
    """The threads that collect keys, kept for process `pid` (a forked child makes its own: the parent's threads
    don't run there): with pinned-thread py4j (pyspark's default) each new Python thread opens its own connection to
    the JVM, a few milliseconds that a kept thread pays once."""
    return ThreadPoolExecutor(max_workers=COLLECTORS, thread_name_prefix="sargable-keys")


@dataclass(frozen=True)
class Collected:
    """The key sets the dimensions gave, what each join key did, and the wall time of collecting them."""

    key_sets: tuple[KeySet, ...]
    pruning: tuple[KeyPruning, ...]
    collect_ms: float


def collect_key_sets(
    table: TableDefinition, entries: Sequence[tuple[Any, JoinKey, JoinKey]], max_values: int
) -> Collected:
    """The key sets of `(dimension DataFrame, dimension key, fact key)` entries, collected concurrently."""
    started = time.perf_counter()
    outcomes = list(_collectors(os.getpid()).map(lambda e: _key_set(table, e[0], e[2], e[1], max_values), entries))
    return Collected(
        key_sets=tuple(key for key, _ in outcomes if key is not None),
        pruning=tuple(outcome for _, outcome in outcomes),
        collect_ms=(time.perf_counter() - started) * 1000.0,
    )


def semi_joined(df: Any, dim: Any, fact_column: str, dim_column: str) -> Any:
    """The fact rows whose key is one of the dimension's (a broadcast left-semi join on its distinct keys)."""
    from pyspark.sql import functions as F

    hidden = f"{HIDDEN_PREFIX}semi"
    keys = dim.select(F.col(f"`{dim_column}`").alias(hidden)).distinct()
    return df.join(F.broadcast(keys), df[f"`{fact_column}`"] == F.col(hidden), "left_semi")
