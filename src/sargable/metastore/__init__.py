"""The metastore: databases, tables, partitions and data files with statistics, in an ordered key-value store.

`Metastore` is the catalog; `Metastore.table("db.t")` gives a `Table` handle that reads and writes one table.
Modules, by concern: `metastore` (the `Metastore` class), `table` (the handle), `catalog` (databases and table
definitions), `partitions`, `files`, `statblocks` (per-column statistics blocks), `indexes`, `commit`, `totals` (a
table's counts), `access` (choosing between the primary key order and secondary indexes), `records` (what comes
back), `hive` (the Hive metastore's fields of databases, tables and partitions, and their codec), `schema`
(keyspaces and catalog keys),
`layout` / `filecodec` / `names` (key and value encodings), `caches`, `pool` (metastores shared by URL).

Layout (one keyspace each; every table's keys start with its 8-byte table id, so a table is one key range):

- `catalog`: database and table definitions, the table totals, the table-id sequence, the schema row;
- `partitions`: table id + order-preserving encoding of the partition values (seed 000) -> location, parameters,
  Hive fields;
- `pindex`: secondary indexes: table id + key position + the values reordered with the indexed key first -> a marker
  byte and the partition row's value, so an index lookup needs no second read;
- `files`: table id + partition values + file path -> the file's size, row count and column statistics;
- `filepaths`: table id + file path -> the file's key in `files` (to remove files by path and find orphans);
- `statblocks`: per table and column, the files' statistics as Arrow blocks with a directory (`statblocks`), so that
  a filter on a data column reads only the blocks that may match, not every file's entry.

The catalog keyspace also holds each table's tombstones (`tombstones`): the files its commits removed, kept on disk
until the table's retention has passed; its write intents (`intents`): sargable's writes to it that began and did
not end, which name the only files vacuum may take for garbage; and the Hive metastore's locks (`locks`: `L` + lock
id), which every server over one store shares. `alter` changes a table's definition in place.

Every write runs in one store transaction, so a failing batch leaves nothing behind. Writers of a table lock its
catalog row (so concurrent commits serialize and none loses another's files); catalog changes (databases, tables)
lock one catalog row they all share. Every read that returns a list reads one snapshot (`Metastore.snapshot` wraps
several reads, or a long `iter_partitions`, in one).
"""

from __future__ import annotations

from sargable.metastore.access import FilterExplain
from sargable.metastore.commit import CommitResult
from sargable.metastore.metastore import Metastore, default_url
from sargable.metastore.names import DEFAULT_PARTITION_NAME, partition_name
from sargable.metastore.pool import shared
from sargable.metastore.records import Database, Partition, TableDefinition, TableStats
from sargable.metastore.table import Table
from sargable.metastore.tombstones import RETENTION_PROPERTY, Tombstone

__all__ = [
    "DEFAULT_PARTITION_NAME",
    "RETENTION_PROPERTY",
    "CommitResult",
    "Database",
    "FilterExplain",
    "Metastore",
    "Partition",
    "Table",
    "TableDefinition",
    "TableStats",
    "Tombstone",
    "default_url",
    "partition_name",
    "shared",
]
