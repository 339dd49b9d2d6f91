"""The metastore: databases, tables, partitions and data files with statistics, in an ordered key-value store.

Layout (one keyspace each; every table's keys start with its 8-byte table id, so a table is one key range):

- `catalog`: database and table definitions, and the table-id sequence;
- `partitions`: table id + order-preserving encoding of the partition values (seed 000) -> location/parameters;
- `pindex`: secondary indexes: table id + key position + the values reordered with the indexed key first -> a marker
  byte and the partition row's value, so an index lookup needs no second read;
- `files`: table id + partition values + file path -> the file's size, row count and column statistics;
- `filepaths`: table id + file path -> the file's key in `files` (to remove files by path and find orphans).

Every write runs in one store transaction, so a failing batch leaves nothing behind. Writers of a table lock its
catalog row (so concurrent commits serialize and none loses another's files); catalog changes (databases, tables)
lock one catalog row they all share. Every read that returns a list reads one snapshot (`Metastore.snapshot` wraps
several reads, or a long `iter_partitions`, in one).
"""

from __future__ import annotations

from sargable.metastore.core import Metastore
from sargable.metastore.names import DEFAULT_PARTITION_NAME, partition_name
from sargable.metastore.records import Partition, Table, TableStats

__all__ = ["DEFAULT_PARTITION_NAME", "Metastore", "Partition", "Table", "TableStats", "partition_name"]
