"""A small dimension's join keys read on the driver, with no Spark job: the keys of a star join in milliseconds.

A Spark job costs tens of milliseconds even for a few hundred rows, about as much as the star query's own broadcast
of the same dimension. When the dimension DataFrame is, as Spark analyzed it, filters (and projections of columns)
over one Parquet relation of local files, at most `MAX_BYTES` in all, its keys are read here: the filter is
translated (`translate.from_catalyst`), the rows' columns read with pyarrow, and the filter evaluated over every row
by the one skipping evaluator, each row taken as a file whose statistics are exactly its values (a row is kept when
the evaluator proves "all": the filter is TRUE on it). Anything else gives None and the caller runs the Spark job:
another source, data Spark has cached, a cast or function sargable doesn't translate exactly, columns of types whose
comparison it doesn't reproduce (floating point, timestamps), files whose types differ from the relation's or that
were written with Spark's legacy calendar, or a row the evaluator can't decide. Only Spark's own Parquet format over
its own file index qualifies: formats built on it (a table format's files with deletion vectors, say) do not.

The keys of a read are kept (at most `MAX_KEPT_BYTES` of them, least recently used first out) under the filter, the
column and each file's identity on disk (path, size, modification and change times, inode): the same dimension read
again over unchanged files costs no Parquet read, and a file rewritten in any way is read again.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sargable.errors import SargableError
from sargable.expr import Expr, and_, columns_of
from sargable.skipping.table import FileStatsTable, arrow_type
from sargable.spark.translate import CatalystNode, catalyst_tree, from_catalyst
from sargable.types import DataType, parse_type

MAX_BYTES = 64 * 2**20
"""The most Parquet bytes a dimension may have to be read on the driver."""
MAX_FILES = 64
"""The most files a dimension may have to be read on the driver."""
MAX_PROJECTED = 16
"""The most columns a projection in the dimension's plan may have (each is read from Spark separately)."""
MAX_KEPT_BYTES = 16 * 2**20
"""The most bytes of key arrays kept from earlier reads."""

_PASS_THROUGH = frozenset({"SubqueryAlias", "View", "Distinct"})
_RELATION_OPTIONS = frozenset({"path", "paths", "basepath", "recursivefilelookup"})
"""Options of a relation whose files are its file index's input files (`recursiveFileLookup`: how `sgs.read` reads
a table without partition keys, no partition discovery, every file given read as data)."""
_TYPES = {
    "byte": "tinyint", "short": "smallint", "integer": "int", "long": "bigint", "string": "string", "date": "date",
    "boolean": "boolean",
}  # fmt: skip
"""Spark's JSON names of the types whose comparisons sargable reproduces, and their Hive names."""
_FILE_RELATION = "org.apache.spark.sql.execution.datasources.HadoopFsRelation"
_PARQUET_FORMAT = "org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat"
_FILE_INDEX = "org.apache.spark.sql.execution.datasources.InMemoryFileIndex"
_LEGACY_PREFIX = b"org.apache.spark.legacy"


@dataclass(frozen=True)
class _Shape:
    """A dimension plan sargable can evaluate: the key's column in the relation, the filter, the relation's files
    and the types of its columns."""

    column: str
    condition: Expr | None
    files: tuple[tuple[str, os.stat_result], ...]
    types: dict[str, DataType]

    def identity(self) -> tuple[Any, ...]:
        """What the keys depend on: the column, the filter, the types, each file's identity on disk."""
        stamps = tuple((p, s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino, s.st_dev) for p, s in self.files)
        return self.column, self.condition, tuple(sorted(self.types.items())), stamps


_kept: OrderedDict[tuple[Any, ...], pa.Array] = OrderedDict()
_kept_bytes = 0
_lock = threading.Lock()


def driver_keys(dim: Any, name: str) -> pa.Array | None:
    """The distinct non-NULL values of column `name` of the DataFrame `dim`, read on the driver; None when this
    dimension is not one that can be (see the module docstring)."""
    from py4j.protocol import Py4JError

    try:
        shape = _shape(dim, name)
        if shape is None:
            return None
        identity = shape.identity()
        with _lock:
            found = _kept.get(identity)
            if found is not None:
                _kept.move_to_end(identity)
                return found
        keys = _keys(shape)
    except (SargableError, Py4JError, pa.ArrowException, OSError, KeyError):
        return None
    if keys is not None:
        _keep(identity, keys)
    return keys


def kept_bytes() -> int:
    """Bytes of the key arrays kept now (at most `MAX_KEPT_BYTES`)."""
    with _lock:
        return _kept_bytes


def _keep(identity: tuple[Any, ...], keys: pa.Array) -> None:
    """Keep a read's keys, dropping the least recently used beyond `MAX_KEPT_BYTES`."""
    global _kept_bytes
    if keys.nbytes > MAX_KEPT_BYTES:
        return
    with _lock:
        if identity in _kept:
            return
        _kept[identity] = keys
        _kept_bytes += keys.nbytes
        while _kept_bytes > MAX_KEPT_BYTES:
            _, dropped = _kept.popitem(last=False)
            _kept_bytes -= dropped.nbytes


def _expression(jexpression: Any) -> CatalystNode:
    """A Catalyst expression as a tree read from its JSON (one py4j call)."""
    return catalyst_tree(json.loads(str(jexpression.toJSON())))


def _projection(node: Any) -> list[CatalystNode] | None:
    """A projection's items, when there are at most `MAX_PROJECTED` of them."""
    items = node.projectList()
    count = items.size()
    if count > MAX_PROJECTED:
        return None
    return [_expression(items.apply(i)) for i in range(count)]


def _source_name(items: list[CatalystNode], name: str) -> str | None:
    """The input column whose value a projection outputs as column `name` (as it is or under an alias), or None."""
    found = [item for item in items if item.fields.get("name") == name]
    if len(found) != 1:
        return None
    item = found[0]
    if item.kind == "Alias" and len(item.children) == 1:
        item = item.children[0]
    return str(item.fields["name"]) if item.kind == "AttributeReference" else None


def _shape(dim: Any, name: str) -> _Shape | None:
    """Read the dimension's plan (with Spark's cached data substituted, so a cached dimension is left to Spark):
    projections of columns, then filters, over one relation; views and aliases in between."""
    jdf = getattr(dim, "_jdf", None)
    if jdf is None:
        return None
    node = jdf.queryExecution().withCachedData()
    column: str | None = name
    conditions: list[Expr] = []
    while column is not None:
        kind = str(node.nodeName())
        if kind in ("LogicalRelation", "Relation"):
            return _relation_shape(node, column, conditions)
        if kind == "Project":
            items = _projection(node)
            if items is None:
                return None
            if any(item.kind != "AttributeReference" for item in items) and conditions:
                return None
            column = _source_name(items, column)
        elif kind == "Filter":
            conditions.append(from_catalyst(_expression(node.condition())))
        elif kind not in _PASS_THROUGH:
            return None
        node = node.child()
    return None


def _relation_shape(node: Any, column: str, conditions: list[Expr]) -> _Shape | None:
    """The shape over a plain Parquet relation of small local files, when it has the columns the shape reads."""
    relation = node.relation()
    files = _parquet_files(relation)
    if files is None:
        return None
    types = _column_types(relation)
    condition = and_(*conditions) if conditions else None
    wanted = {column, *([] if condition is None else columns_of(condition))}
    if not wanted <= types.keys():
        return None
    return _Shape(column, condition, files, {c: types[c] for c in wanted})


def _class_name(obj: Any) -> str:
    return str(obj.getClass().getName())


def _parquet_files(relation: Any) -> tuple[tuple[str, os.stat_result], ...] | None:
    """The local files (path, status) of a plain Parquet relation (Spark's own format and file index; no partition
    columns, buckets or reader options), when few and small enough; else None."""
    if _class_name(relation) != _FILE_RELATION or _class_name(relation.fileFormat()) != _PARQUET_FORMAT:
        return None
    location = relation.location()
    if _class_name(location) != _FILE_INDEX:
        return None
    if relation.partitionSchema().nonEmpty() or relation.bucketSpec().isDefined():
        return None
    options = {key.lower() for key in str(relation.options().keys().mkString("\n")).split("\n") if key}
    if not options <= _RELATION_OPTIONS:
        return None
    uris = list(location.inputFiles())
    if len(uris) > MAX_FILES:
        return None
    files = []
    for uri in uris:
        parts = urlsplit(str(uri))
        if parts.scheme != "file" or parts.query or parts.fragment:
            return None
        path = unquote(parts.path)
        files.append((path, os.stat(path)))
    if sum(status.st_size for _, status in files) > MAX_BYTES:
        return None
    return tuple(files)


def _column_types(relation: Any) -> dict[str, DataType]:
    """The relation's columns whose values sargable compares as Spark does, by name, with their types."""
    fields = json.loads(str(relation.schema().json()))["fields"]
    known = [(f["name"], f["type"]) for f in fields if isinstance(f["type"], str) and f["type"] in _TYPES]
    return {name: parse_type(_TYPES[kind]) for name, kind in known}


def _keys(shape: _Shape) -> pa.Array | None:
    """Read the columns, keep the rows the filter is TRUE on (None when a row can't be decided), distinct keys."""
    names = sorted(shape.types)
    if not shape.files:
        return pa.array([], arrow_type(shape.types[shape.column]))
    parts = []
    for path, _ in shape.files:
        parquet = pq.ParquetFile(path)
        metadata = parquet.metadata.metadata or {}
        if any(key.startswith(_LEGACY_PREFIX) for key in metadata):
            return None
        part = parquet.read(columns=names)
        for column in names:
            if part.schema.field(column).type not in (arrow_type(shape.types[column]), pa.large_string()):
                return None
        parts.append(part.cast(pa.schema([(c, arrow_type(shape.types[c])) for c in names])))
    rows = pa.concat_tables(parts)
    keys = rows.column(shape.column)
    if shape.condition is not None:
        kept = _truth(rows, shape.condition, shape.types)
        if kept is None:
            return None
        keys = keys.filter(kept)
    return pc.unique(keys.drop_null())


def _truth(rows: pa.Table, condition: Expr, types: dict[str, DataType]) -> pa.BooleanArray | None:
    """Per row, whether `condition` is TRUE on it (each row a file whose statistics are its values); None when the
    evaluator leaves a row undecided."""
    used = sorted(columns_of(condition))
    count = rows.num_rows
    structs = []
    for name in used:
        values = rows.column(name).combine_chunks()
        nulls = pc.is_null(values).cast(pa.int64())
        structs.append(pa.StructArray.from_arrays([values, values, nulls], names=["min", "max", "null_count"]))
    statistics = pa.table(
        {
            "path": pa.nulls(count, pa.string()),
            "row_count": pa.repeat(pa.scalar(1, pa.int64()), count),
            "columns": pa.StructArray.from_arrays(structs, names=used),
        }
    )
    table = FileStatsTable.from_arrow(statistics, [(name, types[name]) for name in used])
    truth = table.truth(condition).indices
    if pc.any(pc.equal(truth, 2)).as_py():
        return None
    return pc.equal(truth, 0)
