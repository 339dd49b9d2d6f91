"""`Metastore`: the public API over the ordered store (see the package docstring for the key layout)."""

from __future__ import annotations

import dataclasses
import heapq
import json
import os
import re
import struct
import time
from collections import OrderedDict
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import Any

from sargable import keys
from sargable.errors import (
    AlreadyExistsError,
    CommitConflictError,
    DamagedMetastoreError,
    MetastoreError,
    NoSuchObjectError,
    PathError,
    SargableError,
    TypeCoercionError,
)
from sargable.expr import Expr, bind, columns_of, loads, parse
from sargable.metastore.access import AccessPath, FilterExplain, FilterPlans, choose_access_path, plan_candidates
from sargable.metastore.filecodec import decode_file, decode_header, encode_file
from sargable.metastore.layout import IndexLayout, TableLayout, layout_of, table_prefix
from sargable.metastore.names import DEFAULT_PARTITION_NAME, parse_partition_name
from sargable.metastore.records import (
    Partition,
    Table,
    TableStats,
    decode_partition_value,
    encode_partition_value,
)
from sargable.paths import canonical_file_path, canonical_location, is_local, is_within, join, parts_of, spellings
from sargable.plan import FilterPlan, execute
from sargable.stats import FileStats
from sargable.store import Store, open_store
from sargable.types import STRING, DataType, convert, parse_type

CATALOG = "catalog"
PARTITIONS = "partitions"
INDEXES = "pindex"
FILES = "files"
FILE_PATHS = "filepaths"
KEYSPACES = (CATALOG, PARTITIONS, INDEXES, FILES, FILE_PATHS)

_SEQUENCE_KEY = b"\x00table-id"
_STATS_PREFIX = b"S"
"""Catalog key prefix of a table's totals (`Metastore.table_stats`): `S` + the table prefix -> four 8-byte counts."""
_STATS_FORMAT = struct.Struct(">4Q")
_DDL_LOCK_KEY = b"\x00ddl-lock"
"""A catalog row that always exists (its value never changes): DDL transactions lock it to run one at a time."""
_COVERED = b"\x01"
"""An index entry's value is this marker followed by the partition row's value (location, parameters), so an index
lookup needs no second read; an entry without it (written before entries carried the value) is looked up."""
_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_\-]{0,127}\Z")
_BATCH = 2000
_PLAN_CACHE_SIZE = 256
_PLAN_CACHE_MAX_TEXT = 10_000


_DECODE_ERRORS = (
    ValueError,
    KeyError,
    TypeError,
    IndexError,
    AttributeError,
    OverflowError,
    struct.error,
    SargableError,
)
"""What decoding a damaged stored value or key raises (JSON and UTF-8 errors are ValueErrors)."""


def _damaged(keyspace: str, key: bytes, what: str, exc: BaseException) -> DamagedMetastoreError:
    """The error for a stored value (or key) that doesn't decode: names the keyspace, the key and what it holds."""
    return DamagedMetastoreError(
        f"the metastore is damaged: {keyspace} key {key.hex()} ({what}) does not decode ({type(exc).__name__}: "
        f"{exc}); restore the metastore from a backup"
    )


def default_url() -> str:
    """`$SARGABLE_METASTORE`, or a SQLite file under `./warehouse/`."""
    return os.environ.get("SARGABLE_METASTORE") or f"sqlite:///{Path('warehouse').resolve() / 'metastore.db'}"


def _check_name(kind: str, name: Any) -> str:
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise MetastoreError(
            f"invalid {kind} name {name!r}: use 1-128 letters, digits, '_' or '-', starting with a letter, digit or '_'"
        )
    return name.lower()


def _location(owner: str, location: Any) -> str:
    """The canonical absolute form of a location given for `owner` (see `sargable.paths`)."""
    try:
        return canonical_location(location)
    except PathError as exc:
        raise MetastoreError(f"{owner}: {exc}") from None


def _decoded_name(key: bytes, fields: int) -> str:
    """`db` or `db.table` from a catalog key (`D` or `T` + encoded names)."""
    try:
        return ".".join(keys.decode(key[1:], [STRING] * fields))
    except _DECODE_ERRORS as exc:
        raise _damaged(CATALOG, key, "a database or table name", exc) from None


def _file_base(table: Table) -> str | None:
    """What a relative file path of the table is taken below: its location (None for a relative one, stored by an
    earlier version, which names no folder for certain)."""
    try:
        return canonical_location(table.location, relative=False)
    except PathError:
        return None


def _file_path(path: Any, table: Table, base: str | None) -> str:
    """The canonical form of a data file's path (see `Metastore.commit`); `base` is `_file_base(table)`."""
    if not isinstance(path, str) or not path:
        raise MetastoreError(f"a file needs a non-empty path, got {path!r}")
    try:
        return canonical_file_path(path, base)
    except PathError as exc:
        raise MetastoreError(f"{table.qualified_name}: {exc}") from None


def _check_columns(kind: str, columns: Any) -> tuple[tuple[str, DataType], ...]:
    if isinstance(columns, (str, bytes)) or not isinstance(columns, Iterable):
        raise MetastoreError(f"{kind} must be a list of (name, type) pairs, got {columns!r}")
    out = []
    for item in columns:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise MetastoreError(f"{kind}: each entry must be a (name, type) pair, got {item!r}")
        name, dtype = item
        if not isinstance(name, str) or not name or len(name) > 767 or any(ord(c) < 32 for c in name):
            raise MetastoreError(f"{kind}: invalid column name {name!r} (non-empty, no control characters)")
        try:
            out.append((name, parse_type(dtype)))
        except TypeCoercionError as exc:
            raise MetastoreError(f"{kind}: column {name!r}: {exc}") from None
    return tuple(out)


def _range_of(prefix: bytes) -> tuple[bytes, bytes | None]:
    return prefix, keys.prefix_end(prefix)


def _stats_key(table_id: int) -> bytes:
    return _STATS_PREFIX + table_prefix(table_id)


_NO_CHANGE = TableStats(0, 0, 0, 0)


def _plus(a: TableStats, b: TableStats) -> TableStats:
    return TableStats(*(x + y for x, y in zip(a, b)))


def _minus(a: TableStats, b: TableStats) -> TableStats:
    return TableStats(*(x - y for x, y in zip(a, b)))


class Metastore:
    """Databases, tables, partitions and files kept in an ordered key-value store (SQLite or PostgreSQL)."""

    def __init__(self, store: Store, warehouse: str | os.PathLike | None = None, *, create: bool = True) -> None:
        self._store = store
        root = str(warehouse or os.environ.get("SARGABLE_WAREHOUSE") or "warehouse")
        try:
            root = canonical_location(root)
        except PathError as exc:
            raise MetastoreError(f"warehouse: {exc}") from None
        self.warehouse = os.path.realpath(root) if is_local(root) else root
        self._plans: OrderedDict[tuple, FilterPlans] = OrderedDict()
        if not create and CATALOG not in store.keyspaces():
            raise NoSuchObjectError(f"no metastore at {store.url}: the database holds no sargable catalog")
        for keyspace in KEYSPACES:
            store.create_keyspace(keyspace)
        if store.get(CATALOG, _DDL_LOCK_KEY) is None:
            store.put(CATALOG, _DDL_LOCK_KEY, b"")

    @classmethod
    def open(
        cls, url: str | None = None, *, warehouse: str | os.PathLike | None = None, create: bool = True
    ) -> Metastore:
        """Open the metastore at `url`: `sqlite:///path` or `postgresql://...`, creating it if needed.

        With `create=False` it must exist already: a missing or empty SQLite file, or a database without a
        metastore, is "no metastore at ..." and nothing is created. A SQLite file of another application is refused
        either way, unchanged.
        """
        url = url or default_url()
        if url.startswith("sqlite:///"):
            path = Path(url[len("sqlite:///") :].split("?", 1)[0]).expanduser()
            if not create and (not path.is_file() or path.stat().st_size == 0):
                reason = "the file is empty" if path.is_file() else "no such file"
                raise NoSuchObjectError(f"no metastore at {path} ({reason})")
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise MetastoreError(f"can't create the folder of the metastore {path}: {exc}") from None
        store = open_store(url, create=create)
        try:
            return cls(store, warehouse, create=create)
        except BaseException:
            store.close()
            raise

    @property
    def url(self) -> str:
        return self._store.url

    @property
    def store(self) -> Store:
        return self._store

    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> Metastore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def snapshot(self) -> Iterator[Metastore]:
        """Run the block's reads against one consistent snapshot (a read-only transaction; inside an open
        transaction, that one). Every method returning a list already reads one snapshot; wrap several calls, or a
        long `iter_partitions` / `iter_files`, whose pages otherwise each see the latest commit."""
        if self._store.in_transaction:
            yield self
            return
        with self._store.transaction(readonly=True):
            yield self

    def _lock_catalog(self) -> None:
        """Serialize this write transaction with every other DDL transaction (see `_DDL_LOCK_KEY`)."""
        self._store.get_for_update(CATALOG, _DDL_LOCK_KEY)

    # ----------------------------------------------------------------------------------------- databases

    def create_database(self, name: str, *, location: str | None = None, if_not_exists: bool = False) -> None:
        """Create a database; its tables live under `location` (default `<warehouse>/<name>.db`; a relative one is
        resolved against the current directory now and stored absolute)."""
        name = _check_name("database", name)
        key = b"D" + keys.encode([name], [STRING])
        location = join(self.warehouse, f"{name}.db") if location is None else _location(f"database {name}", location)
        with self._store.transaction():
            self._lock_catalog()
            if self._store.get(CATALOG, key) is not None:
                if if_not_exists:
                    return
                raise AlreadyExistsError(f"database {name!r} already exists")
            self._store.put(CATALOG, key, json.dumps({"name": name, "location": location}).encode())

    def list_databases(self) -> list[str]:
        start, stop = _range_of(b"D")
        return [_decoded_name(k, 1) for k, _ in self._store.scan(CATALOG, start, stop)]

    def _database(self, name: str) -> dict[str, Any]:
        name = _check_name("database", name)
        key = b"D" + keys.encode([name], [STRING])
        raw = self._store.get(CATALOG, key)
        if raw is None:
            raise NoSuchObjectError(f"database {name!r} does not exist")
        try:
            db = json.loads(raw)
            if not isinstance(db, dict) or db.get("name") != name or not isinstance(db.get("location"), str):
                raise ValueError(f"expected the name {name!r} and a location, got {db!r}")
        except ValueError as exc:
            raise _damaged(CATALOG, key, f"database {name}", exc) from None
        return db

    def drop_database(self, name: str, *, cascade: bool = False) -> None:
        """Drop an empty database, or with `cascade` every table in it."""
        db = self._database(name)["name"]
        with self._store.transaction():
            self._lock_catalog()
            self._database(db)
            tables = self.list_tables(db)
            if tables and not cascade:
                raise MetastoreError(f"database {db!r} is not empty ({len(tables)} tables); use cascade=True")
            for table in tables:
                self.drop_table(db, table)
            self._store.delete(CATALOG, b"D" + keys.encode([db], [STRING]))

    # -------------------------------------------------------------------------------------------- tables

    def create_table(
        self,
        database: str,
        name: str,
        columns: Sequence[tuple[str, str | DataType]],
        partition_keys: Sequence[tuple[str, str | DataType]] = (),
        location: str | None = None,
        properties: Mapping[str, str] | None = None,
        *,
        if_not_exists: bool = False,
        index_all: bool = False,
        share_location: bool = False,
    ) -> Table:
        """Create a table; `index_all` adds a secondary index on every partition key but the first.

        The location (default `<database location>/<name>`) is stored absolute and canonical: a relative one is
        resolved against the current directory now, as Spark does, so every later command sees the same folder. A
        location that is a root, holds the warehouse or the metastore's files, or overlaps another table's is
        refused; `share_location=True` allows the overlap (each table's vacuum still deletes nothing of the other's).
        """
        db = self._database(database)
        name = _check_name("table", name)
        data_columns = _check_columns("columns", columns)
        pkeys = _check_columns("partition_keys", partition_keys)
        seen: set[str] = set()
        for column, _ in (*data_columns, *pkeys):
            if column.lower() in seen:
                raise MetastoreError(f"table {db['name']}.{name}: column {column!r} appears twice")
            seen.add(column.lower())
        props = {str(k): str(v) for k, v in (properties or {}).items()}
        key = self._table_key(db["name"], name)
        with self._store.transaction():
            self._lock_catalog()
            db = self._database(db["name"])
            if self._store.get(CATALOG, key) is not None:
                if if_not_exists:
                    return self.get_table(db["name"], name)
                raise AlreadyExistsError(f"table {db['name']}.{name} already exists")
            raw = self._store.get(CATALOG, _SEQUENCE_KEY)
            if raw is not None and len(raw) != 8:
                raise _damaged(CATALOG, _SEQUENCE_KEY, "the table-id sequence", ValueError(f"{len(raw)} bytes, not 8"))
            tables = list(self._all_tables())
            table_id = max([int.from_bytes(raw or b"", "big"), *(t.table_id for t in tables)]) + 1
            qualified = f"{db['name']}.{name}"
            table_location = _location(f"table {qualified}", location or join(db["location"], name))
            self._check_location(qualified, table_location, share_location, tables)
            self._store.put(CATALOG, _SEQUENCE_KEY, table_id.to_bytes(8, "big"))
            table = Table(
                database=db["name"],
                name=name,
                table_id=table_id,
                columns=data_columns,
                partition_keys=pkeys,
                location=table_location,
                properties=props,
                indexes=tuple(n for n, _ in pkeys[1:]) if index_all else (),
            )
            self._store.put(CATALOG, key, table.to_json())
            self._store.put(CATALOG, _stats_key(table_id), _STATS_FORMAT.pack(*_NO_CHANGE))
        return table

    def _check_location(self, qualified: str, location: str, share: bool, tables: list[Table]) -> None:
        """Refuse a table location whose files vacuum or overwrite could delete with others' (see create_table).

        Compared by path components, both as written and (for local paths) with symlinks resolved.
        """

        def forms(path: str) -> set[str]:
            return {path, os.path.realpath(path)} if is_local(path) else {path}

        mine = forms(location)
        if not parts_of(location)[1]:
            raise MetastoreError(f"table {qualified}: location {location!r} is a root; give a folder of its own")
        for protected, what in [
            (self.warehouse, "the warehouse root"),
            *((path, "the metastore's database file") for path in self._store.files),
        ]:
            if any(is_within(p, m) for p in forms(protected) for m in mine):
                raise MetastoreError(
                    f"table {qualified}: location {location!r} holds {what} {protected!r}; "
                    "give a folder that holds only this table's files"
                )
        if share:
            return
        for other in tables:
            try:
                theirs = forms(canonical_location(other.location, relative=False))
            except PathError:
                continue
            if any(is_within(a, b) or is_within(b, a) for a in mine for b in theirs):
                raise MetastoreError(
                    f"table {qualified}: location {location!r} overlaps the location {other.location!r} of table "
                    f"{other.qualified_name}; give another folder, or share_location=True to share it (vacuum "
                    "then leaves the other table's files alone)"
                )

    def _all_tables(self) -> Iterator[Table]:
        """Every table definition in the catalog (validated)."""
        for key, raw in self._store.scan(CATALOG, *_range_of(b"T")):
            yield self._table_from(key, raw, None)

    @staticmethod
    def _table_from(key: bytes, raw: bytes, expected: str | None) -> Table:
        """A table from its catalog row; a row that doesn't decode, or names another table, is damage."""
        try:
            table = Table.from_json(raw)
            if expected is not None and table.qualified_name != expected:
                raise ValueError(f"the row under {expected} holds table {table.qualified_name}")
        except _DECODE_ERRORS as exc:
            raise _damaged(CATALOG, key, f"table {expected or 'definition'}", exc) from None
        return table

    @staticmethod
    def _table_key(database: str, name: str) -> bytes:
        return b"T" + keys.encode([database, name], [STRING, STRING])

    def get_table(self, database: str, name: str) -> Table:
        """The table's current definition (raises NoSuchObjectError when missing)."""
        database, name = _check_name("database", database), _check_name("table", name)
        key = self._table_key(database, name)
        raw = self._store.get(CATALOG, key)
        if raw is None:
            self._database(database)
            raise NoSuchObjectError(f"table {database}.{name} does not exist")
        return self._table_from(key, raw, f"{database}.{name}")

    def list_tables(self, database: str | None = None) -> list[str]:
        """Table names of one database, or `db.table` names of all databases."""
        if database is None:
            start, stop = _range_of(b"T")
            return [_decoded_name(k, 2) for k, _ in self._store.scan(CATALOG, start, stop)]
        db = self._database(database)["name"]
        start, stop = keys.prefixed_range(b"T", *keys.prefix_range([db], [STRING, STRING]))
        return [_decoded_name(k, 2).split(".", 1)[1] for k, _ in self._store.scan(CATALOG, start, stop)]

    def table_locations(self) -> dict[str, str]:
        """Every table's location, by `db.table` name, from one scan of the catalog."""
        return {table.qualified_name: table.location for table in self._all_tables()}

    def tables_listing(self, path: str) -> list[str]:
        """The tables (`db.table`) whose files include the canonical `path` under any spelling (`paths.spellings`),
        read from one snapshot: what `sargable.deletion` asks right before it deletes a file."""
        with self.snapshot():
            out = []
            for table in self._all_tables():
                wanted = [self._path_key(table, spelling) for spelling in spellings(path)]
                if self._store.multi_get(FILE_PATHS, wanted):
                    out.append(table.qualified_name)
            return out

    def drop_table(self, database: str, name: str) -> None:
        """Drop a table with its partitions, indexes and file entries (the files themselves stay on disk)."""
        self.get_table(database, name)
        with self._store.transaction():
            table = self._locked_table(database, name)
            prefix = table_prefix(table.table_id)
            for keyspace in (PARTITIONS, INDEXES, FILES, FILE_PATHS):
                self._store.delete_range(keyspace, *_range_of(prefix))
            self._store.delete(CATALOG, _stats_key(table.table_id))
            self._store.delete(CATALOG, self._table_key(table.database, table.name))

    def _locked_table(
        self, database: str, name: str, expected_version: int | None = None, *, validated: Table | None = None
    ) -> Table:
        """Re-read a table inside a write transaction, locking its row against concurrent committers.

        `validated` is the definition the change was validated against before the transaction: if the table was
        re-created with other columns meanwhile, the change is refused instead of written with the wrong types.
        """
        database, name = _check_name("database", database), _check_name("table", name)
        key = self._table_key(database, name)
        raw = self._store.get_for_update(CATALOG, key)
        if raw is None:
            raise NoSuchObjectError(f"table {database}.{name} does not exist")
        table = self._table_from(key, raw, f"{database}.{name}")
        if validated is not None and (
            table.partition_keys != validated.partition_keys or table.columns != validated.columns
        ):
            raise CommitConflictError(
                f"table {table.qualified_name} was re-created with other columns while this change was prepared; "
                "re-read the table and retry"
            )
        if expected_version is not None and table.version != expected_version:
            raise CommitConflictError(
                f"table {table.qualified_name} is at version {table.version}, not {expected_version}: "
                "another writer committed first; re-read the table and retry"
            )
        return table

    def _bump(self, table: Table, **changes: Any) -> Table:
        fields = {f: getattr(table, f) for f in Table.__dataclass_fields__}
        fields.update(changes, version=table.version + 1)
        new = Table(**fields)
        self._store.put(CATALOG, self._table_key(table.database, table.name), new.to_json())
        return new

    # ------------------------------------------------------------------------------------ partition keys

    def _partition_values(self, table: Table, spec: Any) -> tuple[Any, ...]:
        """Typed values from a dict, a sequence in key order, or a Hive name; Hive strings are accepted."""
        pkeys = table.partition_keys
        if not pkeys:
            raise MetastoreError(f"table {table.qualified_name} is not partitioned")
        if isinstance(spec, Partition):
            spec = spec.values
        if spec.__class__ is tuple or spec.__class__ is list:
            raw = spec
        elif isinstance(spec, str):
            return parse_partition_name(spec, pkeys)
        elif isinstance(spec, Mapping):
            lowered = {str(k).lower(): v for k, v in spec.items()}
            unknown = set(lowered) - {n.lower() for n, _ in pkeys}
            missing = [n for n, _ in pkeys if n.lower() not in lowered]
            if unknown or missing:
                raise MetastoreError(
                    f"partition {dict(spec)!r} of {table.qualified_name}: expected exactly the keys "
                    f"{table.partition_key_names}"
                    + (f"; unknown {sorted(unknown)}" if unknown else "")
                    + (f"; missing {missing}" if missing else "")
                )
            raw = [lowered[n.lower()] for n, _ in pkeys]
        elif isinstance(spec, Sequence) and not isinstance(spec, (bytes, bytearray)):
            raw = list(spec)
        else:
            raise MetastoreError(f"a partition is a dict, a list of values or a Hive name, got {spec!r}")
        if len(raw) != len(pkeys):
            raise MetastoreError(
                f"partition {spec!r} of {table.qualified_name} has {len(raw)} values; "
                f"the partition keys are {table.partition_key_names}"
            )
        values = []
        for value, (column, dtype) in zip(raw, pkeys):
            if value == DEFAULT_PARTITION_NAME or (value == "" and dtype.is_string):
                values.append(None)
                continue
            try:
                values.append(convert(value, dtype))
            except TypeCoercionError as exc:
                raise MetastoreError(
                    f"partition value {value!r} for column {column} ({dtype}) of {table.qualified_name}: {exc}"
                ) from None
            if isinstance(values[-1], str) and "\x00" in values[-1]:
                raise MetastoreError(
                    f"partition value {value!r} for column {column} of {table.qualified_name} holds a NUL character, "
                    "which no folder name can hold"
                )
        return tuple(values)

    def _encode_key(self, table: Table, values: tuple[Any, ...], layout: TableLayout | None = None) -> bytes:
        try:
            return (layout or layout_of(table)).key(values)
        except SargableError as exc:
            raise MetastoreError(f"partition {values!r} of {table.qualified_name}: {exc}") from None

    @staticmethod
    def _index_keys(table: Table, values: tuple[Any, ...]) -> list[bytes]:
        return [index.key(values) for index in layout_of(table).indexes.values()]

    # ---------------------------------------------------------------------------------------- partitions

    def add_partitions(
        self,
        database: str,
        table: str,
        partitions: Iterable[Mapping[str, Any] | Sequence[Any] | str],
        *,
        if_not_exists: bool = False,
        locations: Sequence[str | None] | None = None,
    ) -> int:
        """Add partitions in one transaction; returns how many were added. All are validated before any write."""
        tbl = self.get_table(database, table)
        values = [self._partition_values(tbl, spec) for spec in partitions]
        if locations is not None and len(locations) != len(values):
            raise MetastoreError(f"{len(locations)} locations given for {len(values)} partitions")
        with self._store.transaction():
            tbl = self._locked_table(database, table, validated=tbl)
            added = self._insert_partitions(tbl, values, locations, if_not_exists=if_not_exists)
            self._change_stats(tbl, TableStats(added, 0, 0, 0))
            self._bump(tbl)
        return added

    def _insert_partitions(
        self,
        table: Table,
        values: Sequence[tuple[Any, ...]],
        locations: Sequence[str | None] | None,
        *,
        if_not_exists: bool,
    ) -> int:
        layout = layout_of(table)
        rows: dict[bytes, tuple[tuple[Any, ...], str | None]] = {}
        for i, vals in enumerate(values):
            key = self._encode_key(table, vals, layout)
            if key in rows and not if_not_exists:
                raise AlreadyExistsError(f"partition {self._name(table, vals)} is given twice")
            rows[key] = (vals, locations[i] if locations is not None else None)
        key_list = list(rows)
        existing: list[bytes] = []
        for start in range(0, len(key_list), _BATCH):
            batch = key_list[start : start + _BATCH]
            found = self._store.multi_get(PARTITIONS, batch)
            existing.extend(k for k in batch if found.get(k) is not None)
        if existing and not if_not_exists:
            vals = rows[existing[0]][0]
            raise AlreadyExistsError(
                f"partition {self._name(table, vals)} of {table.qualified_name} already exists"
                + (f" (and {len(existing) - 1} more)" if len(existing) > 1 else "")
            )
        for key in existing:
            del rows[key]
        stored = {key: encode_partition_value(location, None) for key, (_, location) in rows.items()}
        self._store.put_many(PARTITIONS, stored.items())
        for index in layout.indexes.values():
            self._store.put_many(
                INDEXES, [(index.key(vals), _COVERED + stored[key]) for key, (vals, _) in rows.items()]
            )
        return len(rows)

    @staticmethod
    def _name(table: Table, values: tuple[Any, ...]) -> str:
        return Partition(table, values).name

    def _bind_partition_filter(self, table: Table, filter: str | Expr | bytes, dialect: str) -> Expr:
        if isinstance(filter, (bytes, bytearray, memoryview)):
            expr = loads(bytes(filter))
        elif isinstance(filter, Expr):
            expr = filter
        elif isinstance(filter, str):
            expr = parse(filter, dialect=dialect)
        else:
            raise MetastoreError(f"a filter is text, an Expr or serialized bytes, got {type(filter).__name__}")
        known = {n.lower() for n in table.partition_key_names}
        for column in sorted(columns_of(expr)):
            if column.lower() not in known:
                raise MetastoreError(
                    f"column {column!r} in the filter is not a partition key of {table.qualified_name}; "
                    f"partition keys: {', '.join(table.partition_key_names) or '(none)'}"
                )
        return bind(expr, list(table.partition_keys))

    def _filter_plans(self, table: Table, filter: str | Expr | bytes, dialect: str) -> FilterPlans:
        """The bound filter and its candidate plans; cached per table definition for filter texts and bytes."""
        cache_key = None
        if isinstance(filter, (str, bytes)) and len(filter) <= _PLAN_CACHE_MAX_TEXT:
            cache_key = (table.table_id, table.indexes, dialect, filter)
            plans = self._plans.get(cache_key)
            if plans is not None:
                self._plans.move_to_end(cache_key)
                return plans
        plans = plan_candidates(table, self._bind_partition_filter(table, filter, dialect))
        if cache_key is not None:
            self._plans[cache_key] = plans
            if len(self._plans) > _PLAN_CACHE_SIZE:
                self._plans.popitem(last=False)
        return plans

    def plan_filter(self, database: str, table: str, filter: str | Expr, *, dialect: str = "sql") -> FilterPlan:
        """The primary-key FilterPlan of a partition filter (`str(plan)` is readable)."""
        tbl = self.get_table(database, table)
        return self._filter_plans(tbl, filter, dialect).primary

    def _access(self, table: Table, plans: FilterPlans) -> AccessPath:
        return choose_access_path(self._store, table, plans, PARTITIONS, INDEXES)

    def iter_partitions(
        self, database: str, table: str, filter: str | Expr | bytes | None = None, *, dialect: str = "sql"
    ) -> Iterator[Partition]:
        """Partitions satisfying `filter` (all when None), streamed from the store in key order.

        Each page of the stream reads the latest committed data; iterate inside `snapshot()` to see one snapshot.
        """
        tbl = self.get_table(database, table)
        if filter is None:
            yield from self._scan_all(tbl)
            return
        yield from self._partitions_for(tbl, self._access(tbl, self._filter_plans(tbl, filter, dialect)))

    def _scan_all(self, table: Table) -> Iterator[Partition]:
        rows = self._store.scan(PARTITIONS, *_range_of(table_prefix(table.table_id)))
        return self._from_rows(table, layout_of(table), rows)

    @staticmethod
    def _from_rows(table: Table, layout: TableLayout, rows: Iterable[tuple[bytes, bytes]]) -> Iterator[Partition]:
        """Partitions from their rows (key, stored value) in the partitions keyspace."""
        decode, size = layout.codec.decode, layout.size  # type: ignore[union-attr]
        for key, value in rows:
            try:
                if value:
                    location, params = decode_partition_value(value)
                    partition = Partition(table, decode(key[size:]), location, params)
                else:
                    partition = Partition(table, decode(key[size:]))
            except _DECODE_ERRORS as exc:
                raise _damaged(PARTITIONS, key, f"a partition of {table.qualified_name}", exc) from None
            yield partition

    def _partitions_for(self, table: Table, path: AccessPath) -> Iterator[Partition]:
        layout = layout_of(table)
        scans = path.plan.scans
        if path.index is None and len(scans) == 1 and scans[0].is_get and scans[0].key_filter is None:
            yield from self._get_one(table, layout, scans[0].start.values, path)  # type: ignore[union-attr]
            return
        if path.index is None:
            rows = execute(
                path.plan, self._store, PARTITIONS, list(table.partition_keys), prefix=path.prefix, stats=path.stats
            )
            yield from self._from_rows(table, layout, rows)
            return
        index = layout.indexes[path.index]
        if path.groups is not None and len(path.groups) == 1:
            yield from self._from_index(table, layout, index, path.plan, path)
            return
        codec = layout.codec
        assert codec is not None
        if path.groups is None:
            found = list(self._from_index(table, layout, index, path.plan, path))
            found.sort(key=lambda p: codec.encode(p.values))
            yield from found
            return
        streams = [self._from_index(table, layout, index, group, path) for group in path.groups]
        yield from heapq.merge(*streams, key=lambda p: codec.encode(p.values))

    def _get_one(
        self, table: Table, layout: TableLayout, values: tuple[Any, ...], path: AccessPath
    ) -> Iterator[Partition]:
        """The partition with these values, if it exists: one point read (a one-Get plan)."""
        stats = path.stats
        stats.gets += 1
        key = layout.key(values)
        value = self._store.get(PARTITIONS, key)
        if value is not None:
            stats.keys_examined += 1
            stats.keys_returned += 1
            yield from self._from_rows(table, layout, [(key, value)])

    def _from_index(
        self, table: Table, layout: TableLayout, index: IndexLayout, plan: FilterPlan, path: AccessPath
    ) -> Iterator[Partition]:
        """Partitions from the index entries a plan selects, in index key order."""
        values_of = index.values
        rows = execute(plan, self._store, INDEXES, index.columns, prefix=index.prefix, stats=path.stats)
        for key, value in rows:
            try:
                values = values_of(key)
                if value == _COVERED:
                    partition = Partition(table, values)
                elif value[:1] == _COVERED:
                    partition = Partition(table, values, *decode_partition_value(value[1:]))
                else:
                    partition = None
            except _DECODE_ERRORS as exc:
                raise _damaged(INDEXES, key, f"an index entry of {table.qualified_name}", exc) from None
            if partition is None:
                row_key = layout.key(values)
                raw = self._store.get(PARTITIONS, row_key)
                if raw is None:
                    continue
                partition = next(self._from_rows(table, layout, [(row_key, raw)]))
            yield partition

    def get_partitions_by_filter(
        self,
        database: str,
        table: str,
        filter: str | Expr,
        max_parts: int | None = None,
        *,
        dialect: str = "sql",
    ) -> list[Partition]:
        """Partitions whose values satisfy the filter (SQL three-valued logic), in key order, from one snapshot."""
        if max_parts is not None and (not isinstance(max_parts, int) or max_parts < 0):
            raise MetastoreError(f"max_parts must be a non-negative integer or None, got {max_parts!r}")
        with self.snapshot():
            return list(islice(self.iter_partitions(database, table, filter, dialect=dialect), max_parts))

    def get_partitions_by_expr(
        self, database: str, table: str, expr: bytes, max_parts: int | None = None
    ) -> list[Partition]:
        """As `get_partitions_by_filter`, for an expression serialized by `sargable.dumps`."""
        if not isinstance(expr, (bytes, bytearray, memoryview)):
            raise MetastoreError(
                f"get_partitions_by_expr takes the bytes of sargable.dumps(expr), got {type(expr).__name__}"
            )
        return self.get_partitions_by_filter(database, table, bytes(expr), max_parts)  # type: ignore[arg-type]

    def get_partitions_by_names(self, database: str, table: str, names: Iterable[str]) -> list[Partition]:
        """The partitions with these Hive names that exist, in key order."""
        with self.snapshot():
            tbl = self.get_table(database, table)
            layout = layout_of(tbl)
            wanted = sorted({self._encode_key(tbl, self._partition_values(tbl, n), layout) for n in names})
            out: list[Partition] = []
            for start in range(0, len(wanted), _BATCH):
                batch = wanted[start : start + _BATCH]
                found = self._store.multi_get(PARTITIONS, batch)
                out.extend(self._from_rows(tbl, layout, ((k, found[k]) for k in batch if k in found)))
            return out

    def list_partition_names(self, database: str, table: str) -> list[str]:
        """Every partition's Hive name, in key order."""
        with self.snapshot():
            return [p.name for p in self.iter_partitions(database, table)]

    def count_partitions(self, database: str, table: str) -> int:
        tbl = self.get_table(database, table)
        return self._store.count(PARTITIONS, *_range_of(table_prefix(tbl.table_id)))

    def alter_partition(
        self,
        database: str,
        table: str,
        partition: Mapping[str, Any] | Sequence[Any] | str,
        *,
        location: str | None = None,
        parameters: Mapping[str, str] | None = None,
    ) -> Partition:
        """Set a partition's location and/or parameters."""
        tbl = self.get_table(database, table)
        values = self._partition_values(tbl, partition)
        self._encode_key(tbl, values)
        with self._store.transaction():
            tbl = self._locked_table(database, table, validated=tbl)
            key = self._encode_key(tbl, values)
            raw = self._store.get(PARTITIONS, key)
            if raw is None:
                raise NoSuchObjectError(f"partition {self._name(tbl, values)} of {tbl.qualified_name} does not exist")
            try:
                old_location, old_params = decode_partition_value(raw)
            except _DECODE_ERRORS as exc:
                raise _damaged(PARTITIONS, key, f"partition {self._name(tbl, values)}", exc) from None
            new_location = location if location is not None else old_location
            new_params = {str(k): str(v) for k, v in parameters.items()} if parameters is not None else old_params
            stored = encode_partition_value(new_location, new_params)
            self._store.put(PARTITIONS, key, stored)
            for index_key in self._index_keys(tbl, values):
                self._store.put(INDEXES, index_key, _COVERED + stored)
            self._bump(tbl)
        return Partition(tbl, values, new_location, new_params)

    def drop_partitions(
        self, database: str, table: str, filter: str | Expr, *, dialect: str = "sql"
    ) -> list[Partition]:
        """Drop every partition matching the filter, with its index entries and file entries, atomically."""
        with self._store.transaction():
            tbl = self._locked_table(database, table)
            dropped = list(self._partitions_for(tbl, self._access(tbl, self._filter_plans(tbl, filter, dialect))))
            files = self._delete_partitions(tbl, [p.values for p in dropped])
            self._change_stats(tbl, _minus(_NO_CHANGE, files._replace(partitions=len(dropped))))
            self._bump(tbl)
        return dropped

    def _delete_partitions(self, table: Table, values: Sequence[tuple[Any, ...]]) -> TableStats:
        """Delete partitions with their index and file entries; returns the totals of the files deleted."""
        deleted = _NO_CHANGE
        for vals in values:
            self._store.delete(PARTITIONS, self._encode_key(table, vals))
            for index_key in self._index_keys(table, vals):
                self._store.delete(INDEXES, index_key)
            deleted = _plus(deleted, self._delete_files_in(table, vals))
        return deleted

    def _delete_files_in(self, table: Table, values: tuple[Any, ...]) -> TableStats:
        """Delete the file entries of one partition (both keyspaces); returns their count, bytes and rows."""
        start, stop = self._file_range(table, values)
        files = size = rows = 0
        for key, value in list(self._store.scan(FILES, start, stop)):
            path, row_count, size_bytes = self._header(table, key, value)
            self._store.delete(FILE_PATHS, self._path_key(table, path))
            files, size, rows = files + 1, size + size_bytes, rows + row_count
        self._store.delete_range(FILES, start, stop)
        return TableStats(0, files, size, rows)

    # ------------------------------------------------------------------------------------------ table totals

    def table_stats(self, database: str, table: str) -> TableStats:
        """Partitions, files, bytes and rows of the whole table, read in O(1).

        The totals live under their own catalog key (`S` + table prefix), written in the same transaction as every
        change that alters them (create_table, add_partitions, commit, drop_partitions, drop_table), under the
        table's row lock, so they always match the partitions and files a snapshot holds. A table created before
        the totals were kept has no such key: the first call outside a transaction counts the table once (a scan)
        and stores the result; inside a transaction the count is returned without being stored.
        """
        nested = self._store.in_transaction
        with self.snapshot():
            tbl = self.get_table(database, table)
            raw = self._store.get(CATALOG, _stats_key(tbl.table_id))
            if raw is not None:
                return self._stats_from(tbl, raw)
            if nested:
                return self._count_stats(tbl)
        with self._store.transaction():
            tbl = self._locked_table(database, table)
            raw = self._store.get(CATALOG, _stats_key(tbl.table_id))
            if raw is not None:
                return self._stats_from(tbl, raw)
            counted = self._count_stats(tbl)
            self._store.put(CATALOG, _stats_key(tbl.table_id), _STATS_FORMAT.pack(*counted))
            return counted

    @staticmethod
    def _stats_from(table: Table, raw: bytes) -> TableStats:
        try:
            return TableStats(*_STATS_FORMAT.unpack(raw))
        except struct.error as exc:
            raise _damaged(CATALOG, _stats_key(table.table_id), f"totals of {table.qualified_name}", exc) from None

    @staticmethod
    def _header(table: Table, key: bytes, value: bytes) -> tuple[str, int, int]:
        """(path, rows, bytes) of a stored file entry (see `decode_header`); damage names the entry's key."""
        try:
            return decode_header(value)
        except _DECODE_ERRORS as exc:
            raise _damaged(FILES, key, f"a file of {table.qualified_name}", exc) from None

    def _count_stats(self, table: Table) -> TableStats:
        """The table's totals counted from its partition and file entries (a scan of both)."""
        prefix_range = _range_of(table_prefix(table.table_id))
        files = size = rows = 0
        for key, value in self._store.scan(FILES, *prefix_range):
            _, row_count, size_bytes = self._header(table, key, value)
            files, size, rows = files + 1, size + size_bytes, rows + row_count
        return TableStats(self._store.count(PARTITIONS, *prefix_range), files, size, rows)

    def _change_stats(self, table: Table, delta: TableStats) -> None:
        """Add `delta` to the stored totals (inside the change's transaction, with the table's row locked).

        A table without stored totals (created before they were kept) is left so: `table_stats` counts it. Totals
        that the change would make negative were damaged: they are dropped, to be counted again on the next read.
        """
        if delta == _NO_CHANGE:
            return
        key = _stats_key(table.table_id)
        raw = self._store.get(CATALOG, key)
        if raw is None:
            return
        total = _plus(self._stats_from(table, raw), delta)
        if min(total) < 0:
            self._store.delete(CATALOG, key)
            return
        self._store.put(CATALOG, key, _STATS_FORMAT.pack(*total))

    # ---------------------------------------------------------------------------------- secondary indexes

    def create_index(self, database: str, table: str, column: str) -> Table:
        """Index a partition key other than the first; back-filled now, maintained with every partition write."""
        with self._store.transaction():
            tbl = self._locked_table(database, table)
            names = {n.lower(): n for n in tbl.partition_key_names}
            if not isinstance(column, str) or column.lower() not in names:
                raise MetastoreError(
                    f"can't index {column!r}: not a partition key of {tbl.qualified_name} ({tbl.partition_key_names})"
                )
            column = names[column.lower()]
            if column == tbl.partition_key_names[0]:
                raise MetastoreError(f"{column!r} is the first partition key: the primary key order already serves it")
            if column in tbl.indexes:
                raise AlreadyExistsError(f"{tbl.qualified_name} already has an index on {column!r}")
            new = self._bump(tbl, indexes=(*tbl.indexes, column))
            layout = layout_of(tbl)
            index = IndexLayout(layout.prefix, tbl.partition_keys, column)
            batch: list[tuple[bytes, bytes]] = []
            for key, value in self._store.scan(PARTITIONS, *_range_of(layout.prefix)):
                try:
                    values = layout.values(key)
                except _DECODE_ERRORS as exc:
                    raise _damaged(PARTITIONS, key, f"a partition of {tbl.qualified_name}", exc) from None
                batch.append((index.key(values), _COVERED + value))
                if len(batch) >= _BATCH:
                    self._store.put_many(INDEXES, batch)
                    batch = []
            self._store.put_many(INDEXES, batch)
        return new

    def explain_filter(self, database: str, table: str, filter: str | Expr, *, dialect: str = "sql") -> FilterExplain:
        """Run a partition filter and report the plan, access path, keys examined, partitions returned, time."""
        started = time.perf_counter()
        with self.snapshot():
            tbl = self.get_table(database, table)
            plans = self._filter_plans(tbl, filter, dialect)
            path = self._access(tbl, plans)
            returned = sum(1 for _ in self._partitions_for(tbl, path))
        return FilterExplain(
            table=tbl.qualified_name,
            filter=str(plans.bound),
            access_path=path.describe(),
            plan=str(path.plan),
            candidates=path.candidates,
            keys_examined=path.stats.keys_examined,
            partitions_returned=returned,
            elapsed_ms=(time.perf_counter() - started) * 1000,
        )

    # --------------------------------------------------------------------------------------------- files

    @staticmethod
    def _file_types(table: Table) -> list[DataType]:
        return [*(t for _, t in table.partition_keys), STRING]

    @staticmethod
    def _file_key(table: Table, values: tuple[Any, ...], path: str) -> bytes:
        layout = layout_of(table)
        return layout.prefix + layout.file_codec.encode([*values, path])

    def _file_range(self, table: Table, values: tuple[Any, ...]) -> tuple[bytes, bytes | None]:
        start, stop = keys.prefix_range(list(values), self._file_types(table))
        return keys.prefixed_range(table_prefix(table.table_id), start, stop)

    def _path_key(self, table: Table, path: str) -> bytes:
        return table_prefix(table.table_id) + keys.encode([path], [STRING])

    def add_files(self, database: str, table: str, files: Iterable[FileStats]) -> int:
        """Register data files (with their partition and statistics); their partitions are added if missing."""
        return self.commit(database, table, add_files=files)["files_added"]

    def commit(
        self,
        database: str,
        table: str,
        *,
        add_partitions: Iterable[Any] = (),
        add_files: Iterable[FileStats] = (),
        remove_files: Iterable[str] = (),
        replace_partitions: Iterable[Any] = (),
        expected_version: int | None = None,
    ) -> dict[str, int]:
        """One atomic change of a table: add partitions and files, remove files, replace partitions' files.

        `replace_partitions` drops every file of those partitions first (an overwrite). With `expected_version`
        the commit fails with CommitConflictError when another writer has committed since that version;
        without it, concurrent commits serialize and none loses the other's files.

        File paths are stored in one canonical absolute form (`sargable.paths.canonical_file_path`: a relative path
        is taken below the table location, a `file:` URI becomes its path, `//` and `.` are dropped, `..` is
        refused), so that no file is listed under two spellings.
        """
        tbl = self.get_table(database, table)
        new_partitions = [self._partition_values(tbl, spec) for spec in add_partitions]
        replaced = [self._partition_values(tbl, spec) for spec in replace_partitions]
        files = []
        base = _file_base(tbl)
        for file in add_files:
            if not isinstance(file, FileStats):
                raise MetastoreError(f"add_files takes FileStats records, got {type(file).__name__}")
            path = _file_path(file.path, tbl, base)
            if path != file.path:
                file = dataclasses.replace(file, path=path)
            values = self._partition_values(tbl, file.partition if file.partition is not None else {})
            files.append((values, file, encode_file(file, tbl)))
        removed = []
        for path in remove_files:
            if not isinstance(path, str) or not path:
                raise MetastoreError(f"remove_files takes file paths, got {path!r}")
            removed.append(path)
        with self._store.transaction():
            tbl = self._locked_table(database, table, expected_version, validated=tbl)
            dropped = _NO_CHANGE
            for values in replaced:
                dropped = _plus(dropped, self._delete_files_in(tbl, values))
            for path in removed:
                path_key, file_key = self._find_path(tbl, path)
                value = None if file_key is None else self._store.get(FILES, file_key)
                if file_key is None or value is None:
                    raise NoSuchObjectError(f"file {path!r} is not part of {tbl.qualified_name}")
                _, rows, size = self._header(tbl, file_key, value)
                dropped = _plus(dropped, TableStats(0, 1, size, rows))
                self._store.delete(FILES, file_key)
                self._store.delete(FILE_PATHS, path_key)
            partitions_added = self._insert_partitions(
                tbl, [*new_partitions, *replaced, *(v for v, _, _ in files)], None, if_not_exists=True
            )
            path_keys = [self._path_key(tbl, f.path) for _, f, _ in files]
            if len(set(path_keys)) != len(path_keys):
                raise AlreadyExistsError("the same file path is given twice in one commit")
            found = self._store.multi_get(FILE_PATHS, path_keys) if path_keys else {}
            clash = [f.path for (_, f, _), k in zip(files, path_keys) if found.get(k) is not None]
            if clash:
                raise AlreadyExistsError(f"file {clash[0]!r} is already part of {tbl.qualified_name}")
            file_rows = [(self._file_key(tbl, values, f.path), blob) for values, f, blob in files]
            self._store.put_many(FILES, file_rows)
            self._store.put_many(FILE_PATHS, [(pk, fk) for pk, (fk, _) in zip(path_keys, file_rows)])
            added = TableStats(
                partitions_added,
                len(files),
                sum(f.size_bytes for _, f, _ in files),
                sum(f.row_count for _, f, _ in files),
            )
            self._change_stats(tbl, _minus(added, dropped))
            new = self._bump(tbl)
        return {
            "version": new.version,
            "partitions_added": partitions_added,
            "files_added": len(files),
            "files_removed": dropped.files,
        }

    def list_files(
        self,
        database: str,
        table: str,
        partitions: Iterable[Partition] | None = None,
        *,
        stats: bool | Collection[str] = True,
    ) -> list[FileStats]:
        """Files of the given partitions (all files when None), in partition key order, from one snapshot.

        `stats`: True decodes every column's statistics; False none (`columns == {}`: path, size, row count and
        partition only, several times cheaper per file); a collection of column names, only those columns'.
        """
        with self.snapshot():
            return list(self.iter_files(database, table, partitions, stats=stats))

    def iter_files(
        self,
        database: str,
        table: str,
        partitions: Iterable[Partition] | None = None,
        *,
        stats: bool | Collection[str] = True,
    ) -> Iterator[FileStats]:
        """As `list_files`, streamed (each page reads the latest commit unless run inside `snapshot()`)."""
        only = None
        if not isinstance(stats, bool):
            if isinstance(stats, (str, bytes)) or not isinstance(stats, Collection):
                raise MetastoreError(f"stats must be True, False or a collection of column names, got {stats!r}")
            only, stats = frozenset(stats), True
        tbl = self.get_table(database, table)
        ranges = (
            [_range_of(table_prefix(tbl.table_id))]
            if partitions is None
            else (self._file_range(tbl, tuple(p.values)) for p in partitions)
        )
        layout = layout_of(tbl)
        decode, size = layout.file_codec.decode, layout.size
        names = tbl.partition_key_names
        for start, stop in ranges:
            for key, value in self._store.scan(FILES, start, stop):
                try:
                    partition = dict(zip(names, decode(key[size:])[:-1]))
                    if stats:
                        file = decode_file(value, tbl, partition, only)
                    else:
                        path, rows, size_bytes = decode_header(value)
                        file = FileStats(path=path, row_count=rows, size_bytes=size_bytes, partition=partition)
                except _DECODE_ERRORS as exc:
                    raise _damaged(FILES, key, f"a file of {tbl.qualified_name}", exc) from None
                yield file

    def has_file(self, database: str, table: str, path: str) -> bool:
        """Whether the table lists this file, given as stored or in any form that canonicalizes to it."""
        tbl = self.get_table(database, table)
        return self._find_path(tbl, path)[1] is not None

    def _find_path(self, table: Table, path: str) -> tuple[bytes, bytes | None]:
        """(path key, file key or None) of a file given as stored (an entry an earlier version wrote without
        canonicalizing it) or in a form that canonicalizes to the stored one."""
        path_key = self._path_key(table, path)
        file_key = self._store.get(FILE_PATHS, path_key)
        if file_key is None:
            try:
                canonical = _file_path(path, table, _file_base(table))
            except MetastoreError:
                return path_key, None
            if canonical != path:
                path_key = self._path_key(table, canonical)
                file_key = self._store.get(FILE_PATHS, path_key)
        return path_key, file_key
