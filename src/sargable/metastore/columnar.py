"""Partitions as Arrow record batches: the listing for callers that take many partitions at once.

`Table.partition_batches` yields batches of a few thousand partitions (`BATCH_ROWS`), in key order, with the
columns

    values      struct<KEY: T, ...>      the partition's values, a field per partition key in key order, each of the
                                         Arrow type of its Hive type (`arrow_type`); a NULL value is a NULL field
    name        string                   the Hive name, `ds=2024-01-01/hr=3` (escaped; NULL is
                                         `__HIVE_DEFAULT_PARTITION__`), as `Partition.name`
    location    string                   where its files live, as `Partition.location`
    parameters  map<string, string>      its parameters; NULL when it has none

so a batch holds what the `Partition` objects of its page would (but their Hive fields, `Partition.hive`), without
a Python object per partition: the keys are decoded a page at a time (`sargable.keycolumns`), and names are formatted
once per distinct value of each partition key (`value_to_name`, the function `Partition.name` uses), so both forms
always agree.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from sargable.domain import storable_string
from sargable.errors import MetastoreError
from sargable.keycolumns import decode_joined_arrow
from sargable.metastore.names import DEFAULT_PARTITION_NAME, ESCAPE_PATTERN, escape_path_name, value_to_name
from sargable.metastore.partitions import Page
from sargable.metastore.records import TableDefinition
from sargable.skipping.table import arrow_type
from sargable.types import DataType

PARAMETERS_TYPE = pa.map_(pa.string(), pa.string())
FEW_VALUES = 64
"""A key with at most this many distinct values in a batch has their names formatted in Python (Arrow's calls cost
tens of microseconds each, more than formatting a few values)."""
BATCH_ROWS = 4096
"""Partitions per record batch, at least (but the last): Arrow costs some hundreds of microseconds a batch, so the
store's first short pages are joined."""


def batch_schema(table: TableDefinition) -> pa.Schema:
    """The schema of a table's partition batches (a partition key name with no UTF-8 form, which tables made before
    such names were refused may have, is a MetastoreError: Arrow names are UTF-8)."""
    for name, _ in table.partition_keys:
        if not storable_string(name):
            raise MetastoreError(
                f"{table.qualified_name}: partition key {name!r} holds a lone surrogate, which has no UTF-8 form, so "
                "no Arrow listing can name it; list the partitions as objects (Table.partitions) or rename the key"
            )
    values = pa.struct([(name, arrow_type(dtype)) for name, dtype in table.partition_keys])
    return pa.schema(
        [
            pa.field("values", values, nullable=False),
            pa.field("name", pa.string(), nullable=False),
            pa.field("location", pa.string(), nullable=False),
            ("parameters", PARAMETERS_TYPE),
        ]
    )


def arrow_table(table: TableDefinition, batches: Iterable[pa.RecordBatch]) -> pa.Table:
    """One Arrow table of a table's partition batches."""
    return pa.Table.from_batches(list(batches), batch_schema(table))


def record_batch(page: Page) -> pa.RecordBatch:
    """The partitions of one page as a record batch (`batch_schema`)."""
    table = page.table
    schema = batch_schema(table)
    columns = value_columns(page)
    names = _names(table, columns)
    location = pc.binary_join_element_wise(table.location.rstrip("/") + "/", names, "")
    explicit = page.explicit() or ()
    if any(location is not None for location, _, _ in explicit):
        location = pc.coalesce(pa.array([e[0] for e in explicit], pa.string()), location)
    if any(parameters for _, parameters, _ in explicit):
        params = pa.array([list(e[1].items()) if e[1] else None for e in explicit], PARAMETERS_TYPE)
    else:
        params = pa.nulls(len(page), PARAMETERS_TYPE)
    values = pa.StructArray.from_arrays(columns, fields=list(schema.field("values").type))
    return pa.RecordBatch.from_arrays([values, names, location, params], schema=schema)


def partition_names(page: Page) -> pa.StringArray:
    """The Hive names of a page's partitions (`Partition.name`); the partition key names must have a UTF-8 form."""
    return _names(page.table, value_columns(page))


def _names(table: TableDefinition, columns: list[pa.Array]) -> pa.StringArray:
    """Each partition's Hive name from its value columns: the keys' pieces `/KEY=value` joined."""
    pieces = [
        _value_names(column, dtype, ("/" if i else "") + escape_path_name(name) + "=")
        for i, (column, (name, dtype)) in enumerate(zip(columns, table.partition_keys, strict=True))
    ]
    return pieces[0] if len(pieces) == 1 else pc.binary_join_element_wise(*pieces, "")


def value_columns(page: Page) -> list[pa.Array]:
    """The page's values as one Arrow array per partition key, in key order."""
    keys = page.table.partition_keys
    decoded = page.decoded_values
    if decoded is not None:
        return [pa.array([row[i] for row in decoded], arrow_type(t)) for i, (_, t) in enumerate(keys)]
    columns = decode_joined_arrow(*page.joined(), page.codec, page.offset)
    return columns if page.order is None else [columns[i] for i in page.order]


def _value_names(column: pa.Array, dtype: DataType, label: str) -> pa.Array:
    """Each value's path form (`value_to_name`) after `label` (`/KEY=`), formatted once per distinct value: in Python
    when they are few, else in Arrow where that gives the same text (integers, dates (ISO, as `date.isoformat`) and
    strings with nothing to escape)."""
    encoded = pc.dictionary_encode(column, null_encoding="encode")
    distinct = encoded.dictionary
    if len(distinct) <= FEW_VALUES:
        texts = pa.array([label + value_to_name(v, dtype) for v in distinct.to_pylist()], pa.string())
        return texts.take(encoded.indices)
    if dtype.is_integral or dtype.name == "date":
        texts = pc.cast(distinct, pa.string())
    elif dtype.is_string and not pc.any(pc.match_substring_regex(distinct, ESCAPE_PATTERN)).as_py():
        texts = distinct
    else:
        texts = pa.array([value_to_name(v, dtype) for v in distinct.to_pylist()], pa.string())
    if texts.null_count:
        texts = pc.fill_null(texts, DEFAULT_PARTITION_NAME)
    return pc.binary_join_element_wise(label, texts, "").take(encoded.indices)
