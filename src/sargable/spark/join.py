"""Join-driven (dynamic) partition pruning: a star join's dimension values prune the fact table before it is read.

Seed 003 (Hive's map-join partition pruning): the small side of a star join is materialised first, so its
join-key values can prune the big table through the metastore before the big table is read.

- `read(spark, "db.fact", where=..., prune_by=[(dim_df, dim_column, fact_column), ...])` collects each
  dimension's distinct non-NULL key values (at most `max_values`; beyond that, their min/max range) and then
  - on a fact partition key, asks the metastore for the partitions `key IN (values)`: gets on the key prefix,
    intersected with the static partition predicate of `where`;
  - on a fact data column, skips the files whose statistics (min/max, value sets) hold none of the values, and
    keeps `column IN (values)` in the residual Spark applies.
  Several dimensions intersect. The result holds the rows of `where` whose keys are among the dimension's values
  (or, for a dimension with more than `max_values` keys, within their range).
- `join(fact="db.fact", dim=dim_df, on=[(fact_column, dim_column)], how="inner")` is Spark's join, the dimension
  broadcast, over the fact table read that way when the join lets the fact table be pruned: equi-join keys that
  are bare columns, the fact table on the inner side (inner, semi, or the non-preserved side of an outer join).
  Otherwise it reads the fact table unpruned; `scan_report` says why either way.

NULL keys never join, so they never select a partition or a file.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow.compute as pc

from sargable.errors import SargableError, TypeCoercionError
from sargable.expr import Between, Column, Expr, In, and_, bind, lit
from sargable.metastore import Metastore, Partition, Table, TableStats
from sargable.plan import DEFAULT_MAX_SCANS
from sargable.skipping import select_files
from sargable.spark.catalog import opened, split_table_name
from sargable.spark.reader import _REPORTS, read_planned
from sargable.spark.scan import ScanPlan, ScanPlanner, ScanReport, _text
from sargable.spark.schema import hive_type
from sargable.stats import FileStats
from sargable.types import DataType, convert

DEFAULT_MAX_VALUES = 100_000
"""Distinct dimension keys collected per join key; beyond this the keys' min/max range prunes instead."""

IN_RESIDUAL_MAX = 1_000
"""A value set up to this size is applied by Spark as `column IN (...)`; a larger one as a broadcast semi-join."""

_GET_CHUNK = DEFAULT_MAX_SCANS
"""Values per metastore query: the planner turns an IN list up to this size into gets."""

_HOW = {
    "inner": "inner",
    "left": "left",
    "leftouter": "left",
    "left_outer": "left",
    "right": "right",
    "rightouter": "right",
    "right_outer": "right",
    "full": "full",
    "outer": "full",
    "fullouter": "full",
    "full_outer": "full",
    "semi": "left_semi",
    "leftsemi": "left_semi",
    "left_semi": "left_semi",
    "anti": "left_anti",
    "leftanti": "left_anti",
    "left_anti": "left_anti",
}
_EXACT_NUMERIC = {"tinyint", "smallint", "int", "bigint", "decimal"}
_STRINGS = {"string", "varchar", "char"}
_IDENTIFIER = re.compile(r"^`?[A-Za-z_][A-Za-z0-9_]*`?$")
_HIDDEN = "__sargable_key_"


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
        return f"{pair}: {self.target} pruned by {how}, collected in {self.collect_ms:.1f} ms"


@dataclass(frozen=True)
class JoinScanReport(ScanReport):
    """A ScanReport of a fact scan pruned by join keys; `pruning` tells what each key did, `access` how the
    metastore found the partitions, `collect_ms` the wall time of collecting the dimensions' keys (Spark jobs,
    run concurrently), which `planning_ms` does not include."""

    pruning: tuple[KeyPruning, ...] = ()
    access: str | None = None
    collect_ms: float = 0.0

    def __str__(self) -> str:
        lines = [super().__str__()]
        if self.access is not None:
            lines.append(f"  partitions found by: {self.access}")
        lines.extend(f"  join key {p.describe()}" for p in self.pruning)
        return "\n".join(lines)


@dataclass(frozen=True)
class KeySet:
    """The fact-column values a dimension can join with: a set of values, or an inclusive range when over the bound."""

    column: str
    values: frozenset[Any] | None = None
    low: Any = None
    high: Any = None

    @property
    def is_empty(self) -> bool:
        if self.values is not None:
            return not self.values
        return self.low is None or self.high is None or self.low > self.high


def _intersect(a: KeySet, b: KeySet) -> KeySet:
    """The values both key sets allow."""
    if a.values is not None and b.values is not None:
        return KeySet(a.column, values=a.values & b.values)
    if a.values is not None or b.values is not None:
        values, ranged = (a, b) if a.values is not None else (b, a)
        assert values.values is not None
        if ranged.is_empty:
            return KeySet(a.column, values=frozenset())
        kept = frozenset(v for v in values.values if ranged.low <= v <= ranged.high)
        return KeySet(a.column, values=kept)
    if a.is_empty or b.is_empty:
        return KeySet(a.column, values=frozenset())
    return KeySet(a.column, low=max(a.low, b.low), high=min(a.high, b.high))


# ------------------------------------------------------------------------------------------------ planning (no Spark)


def _file_may_join(file: FileStats, column: str, ordered: list[Any], members: frozenset[Any]) -> bool:
    """False only when the file's statistics prove no non-NULL value of `column` is one of the values."""
    if file.row_count == 0:
        return False
    stats = file.columns.get(column)
    if stats is None:
        return True
    if stats.null_count is not None and stats.null_count == file.row_count and not stats.nan_count:
        return False
    try:
        if stats.distinct is not None:
            return not stats.distinct.isdisjoint(members)
        low = 0 if stats.min is None else bisect.bisect_left(ordered, stats.min)
        if stats.max is None or (not stats.max_exact and isinstance(stats.max, str)):
            return low < len(ordered)
        return low < bisect.bisect_right(ordered, stats.max)
    except TypeError:
        return True


def _skip_files(files: list[FileStats], key: KeySet) -> list[FileStats]:
    """The files that may hold one of the key set's values (a value set; ranges go through `select_files`)."""
    assert key.values is not None
    ordered = sorted(key.values)
    return [f for f in files if _file_may_join(f, key.column, ordered, key.values)]


def _key_predicate(key: KeySet) -> Expr:
    """`column IN (values)` or `column BETWEEN low AND high` for a key set."""
    column = Column(key.column)
    if key.values is not None:
        return In(column, tuple(lit(v) for v in sorted(key.values)))
    return Between(column, lit(key.low), lit(key.high))


def _pick_partitions(
    ms: Metastore, table: Table, static: Expr | None, keys: list[KeySet], partitions_total: int
) -> tuple[list[Partition], str]:
    """The partitions satisfying the static predicate and every key set on a partition key, and how they were found.

    The smallest value set on the leading partition key or an indexed one, when it has no more values than the
    table has partitions, becomes `key IN (values)` queries (at most `_GET_CHUNK` values each, so the metastore
    plans gets or narrow ranges on the key prefix), conjoined with the static predicate and the key ranges;
    otherwise one query of the static predicate and ranges lists the candidates. The other value sets filter the
    result by membership.
    """
    db, name = table.database, table.name
    ranges = [_key_predicate(k) for k in keys if k.values is None]
    value_sets = sorted((k for k in keys if k.values is not None), key=lambda k: len(k.values or ()))
    base = [p for p in (static, *ranges) if p is not None]
    prefixes = {table.partition_key_names[0].lower(), *(c.lower() for c in table.indexes)}
    leads = [k for k in value_sets if k.column.lower() in prefixes and len(k.values or ()) <= partitions_total]
    lead = leads[0] if leads else None
    if lead is not None:
        assert lead.values is not None
        ordered = sorted(lead.values)
        found: list[Partition] = []
        for start in range(0, len(ordered), _GET_CHUNK):
            chunk = KeySet(lead.column, values=frozenset(ordered[start : start + _GET_CHUNK]))
            found.extend(ms.get_partitions_by_filter(db, name, and_(*base, _key_predicate(chunk))))
        queries = -(-len(ordered) // _GET_CHUNK)
        access = f"{lead.column} IN ({len(ordered)} values): {queries} metastore quer{'y' if queries == 1 else 'ies'}"
        rest = [k for k in value_sets if k is not lead]
    else:
        found = ms.get_partitions_by_filter(db, name, and_(*base)) if base else list(ms.iter_partitions(db, name))
        rest = value_sets
        access = "one partition query" + (", then the key values filter the partitions in memory" if rest else "")
    if rest:
        positions = {k.lower(): i for i, k in enumerate(table.partition_key_names)}
        tests = [(positions[k.column.lower()], k.values) for k in rest]
        found = [p for p in found if all(p.values[i] in members for i, members in tests)]  # type: ignore[operator]
    return found, access


def merge_key_sets(table: Table, keys: Sequence[KeySet]) -> dict[str, KeySet]:
    """One key set per fact column (the table's spelling): several dimensions on one column intersect."""
    merged: dict[str, KeySet] = {}
    for key in keys:
        canonical = _schema_name(table, key.column)
        key = dataclasses.replace(key, column=canonical)
        merged[canonical] = _intersect(merged[canonical], key) if canonical in merged else key
    return merged


class _JoinScanPlanner(ScanPlanner):
    """`ScanPlanner` that also prunes by join key sets: partitions by those on partition keys, files by the rest."""

    report_type = JoinScanReport

    def __init__(
        self,
        ms: Metastore,
        table: Table,
        expr: Expr | None,
        keys: Sequence[KeySet],
        *,
        pruning: Sequence[KeyPruning],
        collect_ms: float,
        **options: Any,
    ) -> None:
        super().__init__(ms, table, expr, **options)
        merged = merge_key_sets(table, keys)
        self.partition_key_sets = [k for k in merged.values() if k.column.lower() in self.partition_keys]
        self.data_key_sets = [k for k in merged.values() if k.column.lower() not in self.partition_keys]
        self.empty = any(k.is_empty for k in merged.values())
        self.pruning, self.collect_ms = tuple(pruning), collect_ms
        self.access: str | None = None

    def partitions(self, partition_part: Expr | None, totals: TableStats) -> list[Partition] | None:
        if self.empty:
            self.access = "none: a join key has no value that can join"
            return []
        if partition_part is None and not self.partition_key_sets:
            return None
        found, self.access = _pick_partitions(
            self.ms, self.table, partition_part, self.partition_key_sets, totals.partitions
        )
        return found

    def stats_columns(self, files_part: Expr | None) -> set[str]:
        return super().stats_columns(files_part) | {k.column.lower() for k in self.data_key_sets}

    def skip_files(self, files: list[FileStats], residual: Expr | None) -> tuple[list[FileStats], Expr | None]:
        schema = list(self.table.schema)
        extra_residual: list[Expr] = []
        for key in self.data_key_sets:
            if key.is_empty:
                continue
            if key.values is None:
                predicate = bind(_key_predicate(key), schema)
                files = select_files(predicate, files, schema) if files else files
                extra_residual.append(predicate)
                continue
            files = _skip_files(files, key)
            ordered = sorted(key.values)
            if len(ordered) <= IN_RESIDUAL_MAX:
                extra_residual.append(bind(_key_predicate(key), schema))
            else:
                bounds = KeySet(key.column, low=ordered[0], high=ordered[-1])
                extra_residual.append(bind(_key_predicate(bounds), schema))
        if extra_residual:
            residual = and_(*([residual] if residual is not None else []), *extra_residual)
        return files, residual

    def report_fields(self, residual: Expr | None) -> dict[str, Any]:
        return {
            "residual": _summary(residual),
            "pruning": self.pruning,
            "access": self.access,
            "collect_ms": self.collect_ms,
        }


def plan_pruned_scan(
    ms: Metastore,
    table: Table,
    expr: Expr | None,
    keys: Sequence[KeySet],
    *,
    notes: Sequence[str] = (),
    pruning: Sequence[KeyPruning] = (),
    collect_ms: float = 0.0,
    unusable_stats: Sequence[str] = (),
) -> ScanPlan:
    """Plan a scan of `table` for the rows where `expr` is TRUE and each key column holds one of its key set's values.

    The static filter decomposes as in `plan_scan` (not using the statistics of `unusable_stats` columns); key
    sets on partition keys select partitions exactly (not re-applied); key sets on data columns skip files and stay
    in the residual (a value set over `IN_RESIDUAL_MAX` values stays as its range; `read` adds the exact semi-join).
    """
    planner = _JoinScanPlanner(
        ms, table, expr, keys, pruning=pruning, collect_ms=collect_ms, notes=notes, unusable_stats=unusable_stats
    )
    return planner.plan()


def _summary(expr: Expr | None, limit: int = 2_000) -> str | None:
    """Filter text for a report, cut short when a long value list would flood it."""
    text = _text(expr)
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f" ... ({len(text)} characters)"


def _schema_name(table: Table, column: str) -> str:
    """The table's spelling of a column name (case-insensitive); unknown names are an error."""
    for name, _ in table.schema:
        if name.lower() == column.lower():
            return name
    raise SargableError(
        f"{column!r} is not a column of {table.qualified_name}; columns: {[n for n, _ in table.schema]}"
    )


# ------------------------------------------------------------------------------------------------ key references


@dataclass(frozen=True)
class _KeyRef:
    """One side of a join key: a bare column name, or an expression (text or Column) that prevents pruning."""

    name: str | None
    expression: Any = None
    text: str = ""


def _column_names(table: str, metastore: Metastore | str | None) -> list[str]:
    """The names of a table's columns (data columns, then partition keys), to check join keys against."""
    db, name = split_table_name(table)
    with opened(metastore) as ms:
        return [n for n, _ in ms.get_table(db, name).schema]


def _key_ref(key: Any, names: Sequence[str], side: str) -> _KeyRef:
    """Resolve a join key: a column name, a pyspark Column, or SQL expression text."""
    by_lower = {n.lower(): n for n in names}
    if isinstance(key, str):
        if not key.strip():
            raise SargableError(f"a {side} join key must be a column name or an expression, got {key!r}")
        if key.strip().strip("`").lower() in by_lower or _IDENTIFIER.match(key.strip()):
            bare = key.strip().strip("`")
            if bare.lower() not in by_lower:
                raise SargableError(f"{bare!r} is not a column of the {side}; its columns: {list(names)}")
            return _KeyRef(by_lower[bare.lower()], text=by_lower[bare.lower()])
        return _KeyRef(None, expression=key, text=key)
    if type(key).__name__ == "Column" and hasattr(key, "_jc"):
        name = _bare_column(key)
        if name is not None and name.lower() in by_lower:
            return _KeyRef(by_lower[name.lower()], text=by_lower[name.lower()])
        if name is not None:
            raise SargableError(f"{name!r} is not a column of the {side}; its columns: {list(names)}")
        return _KeyRef(None, expression=key, text=str(key._jc.node().sql()))
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


def _coerced(values: Sequence[Any], dtype: DataType) -> list[Any]:
    """The values as the fact column's type; a value the column can't hold can't equal any of its values."""
    out = []
    for value in values:
        try:
            out.append(convert(value, dtype))
        except TypeCoercionError:
            continue
    return out


def _collect_keys(dim: Any, name: str, max_values: int) -> tuple[list[Any] | None, Any, Any]:
    """(distinct non-NULL values, or None when more than `max_values`; min; max) of a dimension column.

    The first job reads the keys without a shuffle (a dimension's keys are mostly unique); only when there are more
    rows than `max_values` does a second job count distinct values, and a third take the range.
    """
    from pyspark.sql import functions as F

    column = F.col(f"`{name}`")
    present = dim.select(column.alias("k")).where(F.col("k").isNotNull())
    rows = present.limit(max_values + 1).toArrow().column(0)
    if len(rows) <= max_values:
        return pc.unique(rows).to_pylist(), None, None
    values = present.distinct().limit(max_values + 1).toArrow().column(0).to_pylist()
    if len(values) <= max_values:
        return values, None, None
    bounds = dim.agg(F.min(column).alias("lo"), F.max(column).alias("hi")).toArrow().to_pylist()[0]
    return None, bounds["lo"], bounds["hi"]


def _check_dataframe(value: Any, what: str) -> None:
    if not (hasattr(value, "sparkSession") and hasattr(value, "schema") and hasattr(value, "toArrow")):
        raise SargableError(f"{what} must be a pyspark DataFrame, got {type(value).__name__}")


def _check_max_values(max_values: Any) -> int:
    if isinstance(max_values, bool) or not isinstance(max_values, int) or max_values < 1:
        raise SargableError(f"max_values must be a positive integer, got {max_values!r}")
    return max_values


def _key_set(
    table: Table, dim: Any, fact_key: _KeyRef, dim_key: _KeyRef, max_values: int
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
    values, low, high = _collect_keys(dim, dim_key.name, max_values)
    collect_ms = (time.perf_counter() - started) * 1000.0
    if values is not None:
        members = frozenset(_coerced(values, fact_type))
        key = KeySet(fact_key.name, values=members)
        return key, dataclasses.replace(label, target=target, mode="values", values=len(values), collect_ms=collect_ms)
    bounds = _coerced([low, high], fact_type)
    if len(bounds) != 2:
        reason = f"the keys' range [{low!r}, {high!r}] does not convert to {fact_type}"
        return None, dataclasses.replace(label, reason=reason, collect_ms=collect_ms)
    key = KeySet(fact_key.name, low=bounds[0], high=bounds[1])
    pruning = dataclasses.replace(label, target=target, mode="range", low=bounds[0], high=bounds[1])
    return key, dataclasses.replace(pruning, collect_ms=collect_ms)


# ------------------------------------------------------------------------------------------------ Spark entry points


def _semi_joined(df: Any, dim: Any, fact_column: str, dim_column: str) -> Any:
    """The fact rows whose key is one of the dimension's (a broadcast left-semi join on its distinct keys)."""
    from pyspark.sql import functions as F

    hidden = f"{_HIDDEN}semi"
    keys = dim.select(F.col(f"`{dim_column}`").alias(hidden)).distinct()
    return df.join(F.broadcast(keys), df[f"`{fact_column}`"] == F.col(hidden), "left_semi")


def _pruned(
    spark: Any,
    table: str,
    where: Any,
    columns: Sequence[str] | None,
    entries: list[tuple[Any, Any, Any]],
    *,
    max_values: int,
    metastore: Metastore | str | None,
    exact: bool,
    extra_pruning: Sequence[KeyPruning] = (),
    extra_notes: Sequence[str] = (),
) -> Any:
    """The fact DataFrame pruned by the entries `(dim_df, dim key, fact key)`; exact key filters when `exact`."""
    keys: list[KeySet] = []
    semi: list[tuple[Any, str, str]] = []

    def plan(ms: Metastore, tbl: Table, expr: Expr | None, notes: list[str], unusable: list[str]) -> ScanPlan:
        pruning: list[KeyPruning] = list(extra_pruning)
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=max(1, min(4, len(entries)))) as pool:
            outcomes = list(pool.map(lambda e: _key_set(tbl, e[0], e[2], e[1], max_values), entries))
        for (dim, dim_key, fact_key), (key, outcome) in zip(entries, outcomes, strict=True):
            pruning.append(outcome)
            if key is None:
                continue
            keys.append(key)
            if outcome.target == "files" and key.values is not None:
                semi.append((dim, dim_key.name, fact_key.name))
        collect_ms = (time.perf_counter() - started) * 1000.0
        return plan_pruned_scan(
            ms, tbl, expr, keys, notes=notes, pruning=pruning, collect_ms=collect_ms, unusable_stats=unusable
        )

    def semi_joins(df: Any, scan: ScanPlan) -> Any:
        """The exact key filter of a value set too large for an IN residual: a broadcast semi-join."""
        if not exact or not scan.files:
            return df
        merged = merge_key_sets(scan.table, keys)
        for dim, dim_column, fact_column in semi:
            values = merged[fact_column].values
            if values is not None and len(values) > IN_RESIDUAL_MAX:
                df = _semi_joined(df, dim, fact_column, dim_column)
        return df

    return read_planned(spark, table, where, columns, metastore, plan, notes=extra_notes, finish=semi_joins)


def read_pruned(
    spark: Any,
    table: str,
    where: Any = None,
    columns: Sequence[str] | None = None,
    prune_by: Sequence[Any] = (),
    *,
    max_values: int = DEFAULT_MAX_VALUES,
    metastore: Metastore | str | None = None,
) -> Any:
    """`read` with `prune_by=[(dim_df, dim_column, fact_column), ...]`: see the module docstring."""
    max_values = _check_max_values(max_values)
    if isinstance(prune_by, (str, bytes)) or not isinstance(prune_by, Sequence):
        raise SargableError(f"prune_by must be a list of (dim_df, dim_column, fact_column), got {prune_by!r}")
    fact_names = _column_names(table, metastore)
    entries = []
    for entry in prune_by:
        if not isinstance(entry, (tuple, list)) or len(entry) != 3:
            raise SargableError(f"each prune_by entry is (dim_df, dim_column, fact_column), got {entry!r}")
        dim, dim_key, fact_key = entry
        _check_dataframe(dim, "the first item of a prune_by entry")
        entries.append((dim, _key_ref(dim_key, dim.columns, "dimension"), _key_ref(fact_key, fact_names, "fact")))
    return _pruned(spark, table, where, columns, entries, max_values=max_values, metastore=metastore, exact=True)


def fact_side_reason(how: str, fact_side: str) -> str | None:
    """Why a join of this kind can't prune the fact table (it is on a preserved side), or None when it can."""
    if fact_side == "left":
        reasons = {
            "left": "the fact table is the preserved side of a left outer join (its rows without a match are kept)",
            "full": "a full outer join preserves the fact table's rows without a match",
            "left_anti": "an anti join keeps the fact rows without a match, which pruning would remove",
        }
    else:
        reasons = {
            "right": "the fact table is the preserved side of a right outer join (its rows without a match are kept)",
            "full": "a full outer join preserves the fact table's rows without a match",
        }
    return reasons.get(how)


def join(
    fact: str,
    dim: Any,
    on: Sequence[tuple[Any, Any]],
    how: str = "inner",
    where: Any = None,
    spark: Any = None,
    *,
    fact_side: str = "left",
    max_values: int = DEFAULT_MAX_VALUES,
    metastore: Metastore | str | None = None,
) -> Any:
    """Spark's join of the fact table (pruned by the dimension's key values when the join allows) with `dim`.

    `on` pairs `(fact key, dim key)`: column names, pyspark Columns or SQL expressions (an expression joins but
    can't prune). `how` is Spark's join type for `fact JOIN dim` (`fact_side="left"`) or `dim JOIN fact`
    (`fact_side="right"`). `where` filters the fact table before the join. `sgs.scan_report(result)` describes
    the fact scan and what each key pruned, or why it couldn't.
    """
    from pyspark.sql import functions as F

    _check_dataframe(dim, "dim")
    spark = spark if spark is not None else dim.sparkSession
    max_values = _check_max_values(max_values)
    canonical = _HOW.get(how.lower().replace(" ", "")) if isinstance(how, str) else None
    if canonical is None:
        raise SargableError(f"how must be one of {sorted(set(_HOW))} (an equi-join), got {how!r}")
    if fact_side not in ("left", "right"):
        raise SargableError(f"fact_side must be 'left' or 'right', got {fact_side!r}")
    if isinstance(on, (str, bytes)) or not isinstance(on, Sequence) or not on:
        raise SargableError(f"on must be a non-empty list of (fact_column, dim_column) pairs, got {on!r}")
    fact_names = _column_names(fact, metastore)
    pairs = []
    for pair in on:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise SargableError(f"each item of on is a (fact_column, dim_column) pair, got {pair!r}")
        pairs.append((_key_ref(pair[0], fact_names, "fact"), _key_ref(pair[1], dim.columns, "dimension")))
    reason = fact_side_reason(canonical, fact_side)
    if reason is None:
        entries = [(dim, dim_key, fact_key) for fact_key, dim_key in pairs]
        fact_df = _pruned(spark, fact, where, None, entries, max_values=max_values, metastore=metastore, exact=False)
    else:
        skipped = [KeyPruning(f.text, d.text, reason=reason) for f, d in pairs]
        fact_df = _pruned(
            spark,
            fact,
            where,
            None,
            [],
            max_values=max_values,
            metastore=metastore,
            exact=False,
            extra_pruning=skipped,
            extra_notes=[f"join not pruned: {reason}"],
        )
    report = _REPORTS[fact_df]
    left, right = fact_df, dim
    conditions = []
    hidden: list[str] = []
    for index, (fact_key, dim_key) in enumerate(pairs):
        fact_column = _side_column(fact_key)
        dim_column = _side_column(dim_key)
        if fact_key.name is None:
            hidden.append(f"{_HIDDEN}f{index}")
            left = left.withColumn(hidden[-1], fact_column)
            fact_column = F.col(hidden[-1])
        if dim_key.name is None:
            hidden.append(f"{_HIDDEN}d{index}")
            right = right.withColumn(hidden[-1], dim_column)
            dim_column = F.col(hidden[-1])
        left_column = left[f"`{fact_key.name}`"] if fact_key.name is not None else fact_column
        right_column = right[f"`{dim_key.name}`"] if dim_key.name is not None else dim_column
        conditions.append(left_column == right_column)
    condition = conditions[0]
    for extra in conditions[1:]:
        condition = condition & extra
    if fact_side == "left":
        joined = left.join(F.broadcast(right), condition, canonical)
    else:
        joined = F.broadcast(right).join(left, condition, canonical)
    if hidden:
        joined = joined.drop(*hidden)
    _REPORTS[joined] = report
    return joined


def _side_column(key: _KeyRef) -> Any:
    """The Column of a join key's expression (text through `F.expr`)."""
    from pyspark.sql import functions as F

    if key.name is not None:
        return F.col(f"`{key.name}`")
    return F.expr(key.expression) if isinstance(key.expression, str) else key.expression


__all__ = [
    "DEFAULT_MAX_VALUES",
    "JoinScanReport",
    "KeyPruning",
    "KeySet",
    "join",
    "merge_key_sets",
    "plan_pruned_scan",
    "read_pruned",
]
