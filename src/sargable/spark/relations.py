"""Base relations: one Spark relation per session over every file of a table version, pruned per read by Spark.

Handing Spark a fresh list of files costs a new file index on every read (file status, partition parsing, split
planning over a relation Spark has not seen). A table with one partition key of a type whose folder names Spark
parses back to the metastore's values exactly (integers, strings, dates) is instead read as its base relation
(all files of the version, through a manifest, made once per session and version) filtered by the selected
partition values (runs of neighbouring values as ranges, so the filter stays short): Spark's own static partition
pruning picks the files, its DPP still applies, and the relation is one Spark already knows. Correctness never
rests on the cache: each read compares the files that filter selects in the base with the scan's files (path and
size) and uses the base only when they are equal; otherwise (statistics skipped files inside a partition, another
version) the caller hands Spark the files. Not from Spark Connect: its server resolves a kept DataFrame's
relation again for every query (after the manifest is gone). Since the relation holds the table's files,
`df.inputFiles()` lists them all; the scan report and Spark's `numFiles` metric tell what is read.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from sargable.domain import integer_runs
from sargable.expr import Column, Literal, render_sql
from sargable.metastore.names import partition_name
from sargable.spark.manifest import manifest
from sargable.spark.schema import table_struct
from sargable.spark.session import is_connect
from sargable.types import DataType

MAX_BASES = 8
"""Base relations kept (least recently used first out), over all sessions and tables."""
MAX_SELECTIONS = 32
"""Analyzed plans of selections kept per base relation."""

_Files = frozenset[tuple[str, int]]


@dataclass(frozen=True)
class Base:
    """A table version's base relation (None when its folders don't name its files' partition values) and its
    files by partition value."""

    version: int
    frame: Any
    files: Mapping[Any, _Files]
    order: tuple[Any, ...] = ()
    """The base's non-NULL partition values, in order."""
    positions: Mapping[Any, int] = field(default_factory=dict)
    """Each value's position in `order`."""
    selections: OrderedDict[str, Any] = field(default_factory=OrderedDict)
    """Spark's analyzed plans of the base filtered by a selection's SQL, most recently used last (at most
    `MAX_SELECTIONS`): the same selection again is a new Dataset over the plan, with no analysis by Spark."""
    datasets: Any = None
    """The JVM class that makes a Dataset of a plan (looked up once: each step of a JVM name is a py4j call)."""


_bases: OrderedDict[tuple[Any, ...], Base] = OrderedDict()
_lock = threading.Lock()


def _prunable(dtype: DataType) -> bool:
    """Whether Spark reads a folder value of this type back as exactly the metastore's value."""
    return dtype.is_integral or dtype.name in ("string", "varchar", "date")


def pruned_frame(spark: Any, table: Any, partitions: Collection[Any] | None, files: Collection[Any]) -> Any:
    """The table's base relation filtered to exactly `files` (of `partitions`, None: all) by partition value, or
    None when that filter would not select exactly those files."""
    names = table.partition_key_names
    if len(names) != 1 or not files or table.files_from_folders or is_connect(spark):
        return None
    dtype = dict(table.schema)[names[0]]
    if not _prunable(dtype):
        return None
    base = _base(spark, table)
    if base.frame is None:
        return None
    values = set(base.files) if partitions is None else {p.values[0] for p in partitions}
    selected = set().union(*(base.files.get(v, ()) for v in values))
    if selected != {(f.path, f.size_bytes) for f in files}:
        return None
    selection = "true" if partitions is None else _selection(names[0], dtype, base, values)
    return _selected(base, selection)


def _selected(base: Base, selection: str) -> Any:
    """A new DataFrame of the base filtered by `selection`: a new Dataset over the plan Spark analyzed for that
    selection before, when there is one (no analysis again; its own query execution, so its own scan metrics)."""
    from pyspark.sql import DataFrame

    frame = base.frame
    spark = frame.sparkSession
    with _lock:
        plan = base.selections.get(selection)
        if plan is not None:
            base.selections.move_to_end(selection)
    if plan is not None:
        return DataFrame(base.datasets.ofRows(spark._jsparkSession, plan), spark)
    filtered = frame.where(selection)
    with _lock:
        base.selections[selection] = filtered._jdf.queryExecution().analyzed()
        while len(base.selections) > MAX_SELECTIONS:
            base.selections.popitem(last=False)
    return filtered


def _selection(name: str, dtype: DataType, base: Base, values: Collection[Any]) -> str:
    """Spark SQL selecting the base's partitions of these values: each run of neighbours in the base's value order
    is one `BETWEEN` (a year of dates is one range), single values one `IN` list, NULL the default partition.

    Spark orders these types as Python does (numbers, dates, strings by code point: UTF-8's byte order), so a run
    selects exactly the base's partitions between its ends.
    """
    column = render_sql(Column(name, dtype), "spark")
    order = base.order
    runs = integer_runs(sorted(base.positions[v] for v in values if v in base.positions))
    singles = [_literal(order[a], dtype) for a, b in runs if a == b]
    parts = [f"{column} BETWEEN {_literal(order[a], dtype)} AND {_literal(order[b], dtype)}" for a, b in runs if a != b]
    if singles:
        parts.append(f"{column} IN ({', '.join(singles)})")
    if None in values and None in base.files:
        parts.append(f"{column} IS NULL")
    return " OR ".join(parts)


def _literal(value: Any, dtype: DataType) -> str:
    return render_sql(Literal(value, dtype), "spark")


def _base(spark: Any, table: Any) -> Base:
    """The session's base relation of the table's version, made when missing or of another version."""
    key = (id(spark), table.qualified_name, table.table_id, table.location)
    with _lock:
        found = _bases.get(key)
        if found is not None and found.version == table.version and _session_of(found) in (None, spark):
            _bases.move_to_end(key)
            return found
    base = _build(spark, table)
    with _lock:
        _bases[key] = base
        _bases.move_to_end(key)
        while len(_bases) > MAX_BASES:
            _bases.popitem(last=False)
    return base


def _session_of(base: Base) -> Any:
    return None if base.frame is None else base.frame.sparkSession


def _build(spark: Any, table: Any) -> Base:
    """List the table's files and make the relation; no relation when a file's folder does not name its value."""
    keys = list(table.partition_keys)
    name = keys[0][0]
    listing = table.files(stats=False)
    by_value: dict[Any, set[tuple[str, int]]] = {}
    for f in listing:
        if f.partition is None or name not in f.partition:
            return Base(table.version, None, {})
        value = f.partition[name]
        folder = f.path.rsplit("/", 2)[-2] if f.path.count("/") >= 2 else ""
        if folder != partition_name(keys, [value]):
            return Base(table.version, None, {})
        by_value.setdefault(value, set()).add((f.path, f.size_bytes))
    if not listing:
        return Base(table.version, None, {})
    with manifest(listing) as uri:
        frame = spark.read.schema(table_struct(table)).parquet(uri)
    order = tuple(sorted(v for v in by_value if v is not None))
    files = {v: frozenset(s) for v, s in by_value.items()}
    datasets = spark._jvm.org.apache.spark.sql.classic.Dataset
    return Base(table.version, frame, files, order, {v: i for i, v in enumerate(order)}, datasets=datasets)


def kept() -> int:
    """How many base relations are kept now (at most `MAX_BASES`)."""
    with _lock:
        return len(_bases)
