"""The Hive metastore API (`ThriftHiveMetastore.Iface`) over sargable: what Spark SQL, Hive and Trino call.

One `Handler` serves every connection; each worker thread gets its own `Catalog` (its own store connection) from
the factory it is given. sargable's errors become the Hive exception each method declares (`NoSuchObjectException`,
`AlreadyExistsException`, `InvalidObjectException`, `MetaException`...), with Hive's messages where clients read
them. A method the bindings have but the handler does not implement is answered by the processor with
`TApplicationException(UNKNOWN_METHOD)`; `get_partitions_by_expr` is one on purpose: Hive's client then falls back
to `get_partitions_by_filter`.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

from thrift.Thrift import TApplicationException, TException, TType

from sargable.deadline import Deadline
from sargable.errors import (
    AlreadyExistsError,
    DamagedMetastoreError,
    MetastoreError,
    NoSuchObjectError,
    SargableError,
    StoreError,
)
from sargable.expr import Expr, bind_filter
from sargable.expr.evaluate import compile_predicate
from sargable.hms import locking, statistics
from sargable.hms.bindings import ThriftHiveMetastore, ttypes
from sargable.hms.cache import CachedReply, ReplyCache, Scope
from sargable.hms.catalog import Catalog, NewPartition, values_filter
from sargable.hms.convert import TableView, database, database_fields, table_definition
from sargable.hms.encode import STOP, Encoded, TableCodec, field, list_header
from sargable.hms.patterns import name_matcher
from sargable.hms.pool import CatalogPool
from sargable.hms.validate import Fields, InvalidObjectError, check_arguments
from sargable.metastore import Partition, Table, TableDefinition, colstats, locks
from sargable.metastore.names import parse_partition_name, unescape_path_name
from sargable.metastore.partitions import Page, coalesced, partition_values
from sargable.store import Store

WRITE_METHODS = frozenset(
    {
        "create_database",
        "drop_database",
        "alter_database",
        "create_table",
        "create_table_with_environment_context",
        "drop_table",
        "drop_table_with_environment_context",
        "alter_table",
        "alter_table_with_environment_context",
        "alter_table_with_cascade",
        "add_partition",
        "add_partition_with_environment_context",
        "add_partitions",
        "add_partitions_req",
        "append_partition",
        "append_partition_with_environment_context",
        "append_partition_by_name",
        "append_partition_by_name_with_environment_context",
        "drop_partition",
        "drop_partition_with_environment_context",
        "drop_partition_by_name",
        "drop_partition_by_name_with_environment_context",
        "drop_partitions_req",
        "alter_partition",
        "alter_partitions",
        "alter_partitions_with_environment_context",
        "alter_partition_with_environment_context",
    }
)

_PREFERENCE: list[tuple[type[BaseException], tuple[str, ...]]] = [
    (InvalidObjectError, ("InvalidObjectException", "InvalidOperationException", "MetaException")),
    (NoSuchObjectError, ("NoSuchObjectException", "UnknownTableException", "UnknownDBException", "MetaException")),
    (AlreadyExistsError, ("AlreadyExistsException", "InvalidObjectException", "MetaException")),
    (SargableError, ("MetaException", "InvalidObjectException", "InvalidOperationException", "NoSuchObjectException")),
]


class CallNote(threading.local):
    """What the current call touched, for the server's one log line per call."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.table: str | None = None
        self.filter: str | None = None
        self.partitions: int | None = None
        self.cached = False
        """The reply came from the cache of encoded replies."""
        self.error: str | None = None
        self.broken = False
        """The call's store failed: its catalog (store connection) is closed instead of reused."""


@functools.cache
def _declared(method: str) -> dict[str, type]:
    """The exception types a method's result struct declares, by class name."""
    result = getattr(ThriftHiveMetastore, f"{method}_result", None)
    out = {}
    for entry in getattr(result, "thrift_spec", None) or ():
        if entry and entry[2] != "success" and isinstance(entry[3], (list, tuple)):
            out[entry[3][0].__name__] = entry[3][0]
    return out


def _hive_error(method: str, exc: SargableError) -> Exception:
    """The Hive exception `method` declares that fits a sargable error best."""
    declared = _declared(method)
    for kind, names in _PREFERENCE:
        if isinstance(exc, kind):
            for name in names:
                if name in declared:
                    return declared[name](message=str(exc))
    return ttypes.MetaException(message=str(exc))


def _as_declared(method: str, exc: TException) -> TException:
    """A Hive exception `method` does not declare (a table not found in an alter) as one it does, with its message:
    the server would answer an undeclared one as an internal error."""
    declared = _declared(method)
    if isinstance(exc, TApplicationException) or type(exc).__name__ in declared or not declared:
        return exc
    for name in ("MetaException", "InvalidOperationException", "InvalidObjectException", "NoSuchObjectException"):
        if name in declared:
            return declared[name](message=getattr(exc, "message", None) or str(exc))
    return exc


def _hive_api(method: Callable[..., Any]) -> Callable[..., Any]:
    """Refuse writes on a read-only server and turn sargable errors into the method's declared Hive exceptions."""
    name = method.__name__

    @functools.wraps(method)
    def call(self: Handler, *args: Any, **kwargs: Any) -> Any:
        if self.read_only and name in WRITE_METHODS:
            self.note.error = "MetaException"
            raise ttypes.MetaException(message=f"{name}: this metastore is served read-only (sargable serve)")
        try:
            if name in WRITE_METHODS:
                check_arguments(name, args, kwargs)
            with Deadline(self.call_timeout):
                return method(self, *args, **kwargs)
        except SargableError as exc:
            if isinstance(exc, StoreError):
                self.note.broken = True
            error = _hive_error(name, exc)
            self.note.error = type(error).__name__
            raise error from None
        except TException as exc:
            error = _as_declared(name, exc)
            self.note.error = type(error).__name__
            if error is exc:
                raise
            raise error from None
        except Exception:
            self.note.error = "internal error"
            raise

    return call


def _limit(max_parts: int | None) -> int | None:
    return None if max_parts is None or max_parts < 0 else max_parts


DEFAULT_CALL_TIMEOUT = 60.0
"""Seconds a call may run by default (`sargable serve --call-timeout`)."""

def _guarded(scope: Scope) -> Scope:
    """`scope`, True where it fails (a value it can't compare): unsure is in scope."""

    def within(values: tuple[Any, ...]) -> bool:
        try:
            return scope(values)
        except Exception:  # any failure only costs a cached reply
            return True

    return within


def _filter_scope(table: TableDefinition, text: str | Expr) -> Scope:
    """Whether a partition satisfies a partition filter (Hive's syntax, or an expression over the keys)."""
    test = compile_predicate(bind_filter(text, list(table.partition_keys), dialect="hive").expr)
    names = table.partition_key_names
    return lambda values: test(dict(zip(names, values, strict=True))) is True


PAGE = 2048
"""Partitions per chunk of a streamed listing, at least (about 1 MB): the store's first short pages are joined."""


def _table_name(db: str, table: str) -> str:
    return f"{db}.{table}".lower()


class Handler(ThriftHiveMetastore.Iface):
    """The HMS calls clients need, over one `Catalog` per call (leased from the pool on the call's first use).

    The calls that return partitions, partition names or a table answer with `Encoded` bytes (see `encode`); the
    reads among them are cached by table version (see `cache`), and a whole-table listing is streamed."""

    def __init__(
        self,
        pool: CatalogPool,
        *,
        read_only: bool = False,
        cache: ReplyCache | None = None,
        call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
    ) -> None:
        self.pool = pool
        self.read_only = read_only
        self.call_timeout = call_timeout
        """Seconds each call may run before it is refused with DeadlineExceededError (None: no deadline)."""
        self.cache = cache or ReplyCache(0)
        self.note = CallNote()
        self._local = threading.local()

    @property
    def catalog(self) -> Catalog:
        """The catalog of the current call: leased from the pool on first use, given back by `end_call`."""
        catalog = getattr(self._local, "catalog", None)
        if catalog is None:
            catalog = self._local.catalog = self.pool.lease()
        return catalog

    def end_call(self) -> None:
        """Give the call's catalog back to the pool (closed instead when its store failed); reset the note."""
        catalog = getattr(self._local, "catalog", None)
        if catalog is not None:
            self._local.catalog = None
            self.pool.give_back(catalog, broken=self.note.broken)
        self.note.reset()

    def _handle(self, db: str, table: str) -> Table:
        self.note.table = _table_name(db, table)
        try:
            return self.catalog.table(db, table)
        except NoSuchObjectError:
            raise ttypes.NoSuchObjectException(message=f"{db}.{table} table not found") from None

    def _table(self, db: str, table: str) -> TableDefinition:
        return self._handle(db, table).definition

    def _codec(self, db: str, table: str) -> TableCodec:
        return self.cache.codec(self._table(db, table))

    def _view(self, db: str, table: str) -> TableView:
        return self._codec(db, table).view

    def _changed(self) -> None:
        """Tell the reply cache which partitions the call's write changed (after its commit)."""
        for change in self.catalog.last_changes:
            self.cache.changed(change)

    def _one(self, codec: TableCodec, part: Partition) -> Encoded:
        self.note.partitions = 1
        return Encoded(TType.STRUCT, codec.partition(part))

    def _cached(self, db: str, table: str, call: Hashable) -> Encoded | None:
        """The cached reply to `call` on the table's current version, if any."""
        hit = self.cache.get(self._table(db, table), call)
        if hit is None:
            return None
        self.note.partitions, self.note.cached = hit.count, True
        return Encoded(TType.LIST, hit.payload)

    def _selected(
        self,
        db: str,
        table: str,
        call: Hashable,
        select: Callable[[Table], Sequence[Page]],
        *,
        names: bool = False,
        scope: Callable[[TableDefinition], Scope] | None = None,
    ) -> Encoded:
        """The partitions (or their names) `select(table)` reads as pages, from one snapshot, cached by table
        version; with `scope`, which partitions the reply can hold (so writes of others leave it valid)."""
        hit = self._cached(db, table, call)
        if hit is not None:
            return hit
        with self.catalog.snapshot():  # (Thrift exceptions are frozen: none may pass through a `with` block)
            handle = self.catalog.table(db, table)
            tbl = handle.definition
            codec = self.cache.codec(tbl)
            pages = select(handle)
        encode = codec.page_names if names else codec.page_partitions
        body = b"".join(map(encode, pages))
        count = sum(map(len, pages))
        payload = list_header(TType.STRING if names else TType.STRUCT, count) + body
        self.note.partitions = count
        if len(payload) <= self.cache.largest:  # (a reply the cache can't keep needs no scope: not computed)
            self.cache.put(tbl, call, CachedReply(count, payload), None if scope is None else _guarded(scope(tbl)))
        return Encoded(TType.LIST, payload)

    def _listing(self, db: str, table: str, limit: int | None, *, names: bool) -> Encoded:
        """Every partition (or name), at most `limit`: cached, or streamed from one snapshot page by page."""
        call = ("names" if names else "partitions", limit)
        hit = self._cached(db, table, call)
        if hit is not None:
            return hit
        stream = self._stream(db, table, limit, call, names=names)
        return Encoded(TType.LIST, next(stream), stream)

    def _stream(self, db: str, table: str, limit: int | None, call: Hashable, *, names: bool) -> Iterator[bytes]:
        """The list header (its count read in the listing's snapshot), then the encoded partitions a store page at a
        time (pages of at least `PAGE`); kept for the cache while the whole reply fits in it."""
        catalog = self.catalog
        with catalog.snapshot():
            handle = catalog.table(db, table)
            tbl = handle.definition
            codec = self.cache.codec(tbl)
            count = catalog.count_partitions(handle)
            count = count if limit is None else min(count, limit)
            self.note.partitions = count
            head = list_header(TType.STRING if names else TType.STRUCT, count)
            yield head
            encode = codec.page_names if names else codec.page_partitions
            kept: list[bytes] | None = [head]
            size = len(head)
            listed = 0
            tail = b""
            for page in coalesced(catalog.iter_pages(handle, count), PAGE):
                listed += len(page)
                tail = page.last_key()
                chunk = encode(page)
                size += len(chunk)
                if kept is not None and size <= self.cache.largest:
                    kept.append(chunk)
                else:
                    kept = None
                yield chunk
        if listed != count:
            raise MetastoreError(f"{tbl.qualified_name}: listed {listed} partitions of the {count} counted")
        if kept is not None:
            whole = limit is None  # (a listing that can grow by the partitions added after its last)
            self.cache.put(tbl, call, CachedReply(count, b"".join(kept)), tail=tail if whole else None)

    # ------------------------------------------------------------------------------------- session, fb303

    @_hive_api
    def set_ugi(self, user_name: str, group_names: list[str]) -> list[str]:
        return [*(group_names or []), user_name]

    @_hive_api
    def get_metastore_db_uuid(self) -> str:
        return self.catalog.store_id

    @_hive_api
    def get_config_value(self, name: str, defaultValue: str) -> str:
        return defaultValue

    @_hive_api
    def get_all_functions(self) -> Any:
        return ttypes.GetAllFunctionsResponse(functions=[])

    @_hive_api
    def get_functions(self, dbName: str, pattern: str) -> list[str]:
        return []

    # ------------------------------------------------------------------------------------------ databases

    @_hive_api
    def create_database(self, database: Any) -> None:
        location, fields = database_fields(database)
        name = database.name
        try:
            self.catalog.create_database(name, location, fields, make_folder=True)
        except AlreadyExistsError:
            raise ttypes.AlreadyExistsException(message=f"Database {name} already exists") from None

    @_hive_api
    def get_database(self, name: str) -> Any:
        try:
            return database(self.catalog.get_database(name))
        except NoSuchObjectError:
            raise ttypes.NoSuchObjectException(message=f"There is no database named {name}") from None

    @_hive_api
    def get_databases(self, pattern: str) -> list[str]:
        match = name_matcher(pattern)
        return [d for d in self.catalog.list_databases() if match(d)]

    @_hive_api
    def get_all_databases(self) -> list[str]:
        return self.catalog.list_databases()

    @_hive_api
    def drop_database(self, name: str, deleteData: bool, cascade: bool) -> None:
        try:
            self.catalog.drop_database(name, cascade=cascade)
        except NoSuchObjectError:
            raise ttypes.NoSuchObjectException(message=f"There is no database named {name}") from None
        except MetastoreError as exc:
            raise ttypes.InvalidOperationException(message=f"Database {name} is not empty: {exc}") from None

    # --------------------------------------------------------------------------------------------- tables

    @_hive_api
    def get_table(self, dbname: str, tbl_name: str) -> Encoded:
        return Encoded(TType.STRUCT, self._table_bytes(self._handle(dbname, tbl_name)))

    @_hive_api
    def get_table_req(self, req: Any) -> Any:
        return ttypes.GetTableResult(table=self._table_object(self._handle(req.dbName, req.tblName)))

    @_hive_api
    def get_table_objects_by_name(self, dbname: str, tbl_names: list[str]) -> list[Any]:
        out = []
        for name in tbl_names or []:
            try:
                out.append(self._table_object(self.catalog.table(dbname, name)))
            except NoSuchObjectError:
                continue
        return out

    @_hive_api
    def get_table_objects_by_name_req(self, req: Any) -> Any:
        return ttypes.GetTablesResult(tables=self.get_table_objects_by_name(req.dbName, req.tblNames))

    @_hive_api
    def get_tables(self, db_name: str, pattern: str) -> list[str]:
        match = name_matcher(pattern)
        return [t for t in self.catalog.list_tables(db_name) if match(t)]

    @_hive_api
    def get_tables_by_type(self, db_name: str, pattern: str, tableType: str) -> list[str]:
        names = self.get_tables(db_name, pattern)
        return [n for n in names if self._view(db_name, n).extras.table_type == tableType]

    @_hive_api
    def get_all_tables(self, db_name: str) -> list[str]:
        return self.catalog.list_tables(db_name)

    @_hive_api
    def get_fields(self, db_name: str, table_name: str) -> list[Any]:
        return list(self._view(db_name, table_name).cols)

    @_hive_api
    def get_fields_with_environment_context(self, db_name: str, table_name: str, environment_context: Any) -> list:
        return self.get_fields(db_name, table_name)

    @_hive_api
    def get_schema(self, db_name: str, table_name: str) -> list[Any]:
        view = self._view(db_name, table_name)
        return [*view.cols, *view.partition_cols]

    @_hive_api
    def get_schema_with_environment_context(self, db_name: str, table_name: str, environment_context: Any) -> list:
        return self.get_schema(db_name, table_name)

    @_hive_api
    def create_table(self, tbl: Any) -> None:
        self.create_table_with_environment_context(tbl, None)

    @_hive_api
    def create_table_with_environment_context(self, tbl: Any, environment_context: Any) -> None:
        definition = table_definition(tbl)
        self.note.table = _table_name(definition.database, definition.name)
        try:
            self.catalog.create_table(
                definition.database,
                definition.name,
                definition.columns,
                definition.partition_keys,
                definition.location,
                definition.properties,
                definition.hive,
                make_folder=definition.hive.has_location,
            )
        except AlreadyExistsError:
            raise ttypes.AlreadyExistsException(message=f"Table {definition.name} already exists") from None
        except NoSuchObjectError:
            raise ttypes.InvalidObjectException(message=f"database {definition.database} does not exist") from None

    @_hive_api
    def drop_table(self, dbname: str, name: str, deleteData: bool) -> None:
        self.note.table = _table_name(dbname, name)
        try:
            self.catalog.drop_table(dbname, name)
        except NoSuchObjectError:
            raise ttypes.NoSuchObjectException(message=f"{dbname}.{name} table not found") from None

    @_hive_api
    def drop_table_with_environment_context(
        self, dbname: str, name: str, deleteData: bool, environment_context: Any
    ) -> None:
        self.drop_table(dbname, name, deleteData)

    @_hive_api
    def alter_table(self, dbname: str, tbl_name: str, new_tbl: Any) -> None:
        self.note.table = _table_name(dbname, tbl_name)
        old = self._view(dbname, tbl_name)
        if new_tbl.dbName and new_tbl.dbName.lower() != old.table.database:
            raise ttypes.InvalidOperationException(message="moving a table to another database is not supported")
        definition = table_definition(new_tbl)
        try:
            self.catalog.alter_table(
                old.table.database,
                old.table.name,
                definition.name,
                definition.columns,
                definition.partition_keys,
                definition.location,
                definition.properties,
                definition.hive,
            )
        except MetastoreError as exc:  # Hive's answer to an alter it can't make (a name taken, a folder in the way)
            if isinstance(exc, (DamagedMetastoreError, NoSuchObjectError)):
                raise
            raise ttypes.InvalidOperationException(message=str(exc)) from None

    @_hive_api
    def alter_table_with_environment_context(
        self, dbname: str, tbl_name: str, new_tbl: Any, environment_context: Any
    ) -> None:
        self.alter_table(dbname, tbl_name, new_tbl)

    @_hive_api
    def alter_table_with_cascade(self, dbname: str, tbl_name: str, new_tbl: Any, cascade: bool) -> None:
        self.alter_table(dbname, tbl_name, new_tbl)

    # ------------------------------------------------------------------------------------ adding partitions

    def _add(self, db: str, table: str, parts: list[Any], *, if_not_exists: bool) -> tuple[TableCodec, list[Partition]]:
        codec = self._codec(db, table)
        view = codec.view
        now = int(time.time())
        new: list[NewPartition] = []
        check = Fields(f"the partitions to add to {view.table.qualified_name}")
        for i, part in enumerate(check.items(parts, "parts")):
            check.struct(part, f"parts[{i}]", ttypes.Partition)
            if (part.dbName or db).lower() != view.table.database or (part.tableName or table).lower() != (
                view.table.name
            ):
                raise ttypes.MetaException(message="Partition does not belong to target table")
            new.append(view.new_partition(part, now=now))
        try:
            added = self.catalog.add_partitions(db, table, new, if_not_exists=if_not_exists, make_folders=True)
        except AlreadyExistsError as exc:
            raise ttypes.AlreadyExistsException(message=str(exc)) from None
        self._changed()
        self.note.partitions = len(added)
        return codec, added

    @_hive_api
    def add_partition(self, new_part: Any) -> Encoded:
        return self.add_partition_with_environment_context(new_part, None)

    @_hive_api
    def add_partition_with_environment_context(self, new_part: Any, environment_context: Any) -> Encoded:
        codec, added = self._add(new_part.dbName, new_part.tableName, [new_part], if_not_exists=False)
        return self._one(codec, added[0])

    @_hive_api
    def add_partitions(self, new_parts: list[Any]) -> int:
        if not new_parts:
            return 0
        _, added = self._add(new_parts[0].dbName, new_parts[0].tableName, new_parts, if_not_exists=False)
        return len(added)

    @_hive_api
    def add_partitions_req(self, request: Any) -> Encoded:
        codec, added = self._add(
            request.dbName, request.tblName, request.parts or [], if_not_exists=request.ifNotExists
        )
        if not request.needResult:
            return Encoded(TType.STRUCT, STOP)
        body = codec.partitions(added)
        partitions = field(TType.LIST, 1) + list_header(TType.STRUCT, len(body)) + b"".join(body)
        return Encoded(TType.STRUCT, partitions + STOP)

    @_hive_api
    def append_partition(self, db_name: str, tbl_name: str, part_vals: list[str]) -> Encoded:
        part = ttypes.Partition(values=part_vals, dbName=db_name, tableName=tbl_name)
        codec, added = self._add(db_name, tbl_name, [part], if_not_exists=False)
        return self._one(codec, added[0])

    @_hive_api
    def append_partition_with_environment_context(
        self, db_name: str, tbl_name: str, part_vals: list[str], environment_context: Any
    ) -> Encoded:
        return self.append_partition(db_name, tbl_name, part_vals)

    @_hive_api
    def append_partition_by_name(self, db_name: str, tbl_name: str, part_name: str) -> Encoded:
        return self.append_partition(db_name, tbl_name, self._name_values(db_name, tbl_name, part_name))

    @_hive_api
    def append_partition_by_name_with_environment_context(
        self, db_name: str, tbl_name: str, part_name: str, environment_context: Any
    ) -> Encoded:
        return self.append_partition_by_name(db_name, tbl_name, part_name)

    def _name_values(self, db: str, table: str, part_name: str) -> list[str]:
        """Hive string values of a partition name, checked against the table's partition keys."""
        view = self._view(db, table)
        parse_partition_name(part_name, view.table.partition_keys)
        return [unescape_path_name(segment.partition("=")[2]) for segment in part_name.strip("/").split("/")]

    # ------------------------------------------------------------------------------------ reading partitions

    @_hive_api
    def get_partition(self, db_name: str, tbl_name: str, part_vals: list[str]) -> Encoded:
        self._table(db_name, tbl_name)
        try:
            with self.catalog.snapshot():
                handle = self.catalog.table(db_name, tbl_name)
                codec = self.cache.codec(handle.definition)
                found = self.catalog.get_partition(handle, part_vals)
        except NoSuchObjectError:
            raise ttypes.NoSuchObjectException(message=f"partition values={part_vals}") from None
        return self._one(codec, found)

    @_hive_api
    def get_partition_with_auth(
        self, db_name: str, tbl_name: str, part_vals: list[str], user_name: str, group_names: list[str]
    ) -> Encoded:
        return self.get_partition(db_name, tbl_name, part_vals)

    @_hive_api
    def get_partition_by_name(self, db_name: str, tbl_name: str, part_name: str) -> Encoded:
        return self.get_partition(db_name, tbl_name, self._name_values(db_name, tbl_name, part_name))

    @_hive_api
    def get_partitions(self, db_name: str, tbl_name: str, max_parts: int) -> Encoded:
        return self._listing(db_name, tbl_name, _limit(max_parts), names=False)

    @_hive_api
    def get_partitions_with_auth(
        self, db_name: str, tbl_name: str, max_parts: int, user_name: str, group_names: list[str]
    ) -> Encoded:
        return self.get_partitions(db_name, tbl_name, max_parts)

    @_hive_api
    def get_partition_names(self, db_name: str, tbl_name: str, max_parts: int) -> Encoded:
        return self._listing(db_name, tbl_name, _limit(max_parts), names=True)

    def _by_values(self, db_name: str, tbl_name: str, part_vals: list[str], max_parts: int, *, names: bool) -> Encoded:
        values, limit = list(part_vals or []), _limit(max_parts)
        self.note.filter = f"values {values}"
        call = ("names_ps" if names else "ps", tuple(values), limit)
        return self._selected(
            db_name,
            tbl_name,
            call,
            lambda handle: self.catalog.pages_by_values(handle, values, limit),
            names=names,
            scope=lambda tbl: _filter_scope(tbl, values_filter(tbl, values, partial=True)),
        )

    @_hive_api
    def get_partitions_ps(self, db_name: str, tbl_name: str, part_vals: list[str], max_parts: int) -> Encoded:
        return self._by_values(db_name, tbl_name, part_vals, max_parts, names=False)

    @_hive_api
    def get_partitions_ps_with_auth(
        self,
        db_name: str,
        tbl_name: str,
        part_vals: list[str],
        max_parts: int,
        user_name: str,
        group_names: list[str],
    ) -> Encoded:
        return self.get_partitions_ps(db_name, tbl_name, part_vals, max_parts)

    @_hive_api
    def get_partition_names_ps(self, db_name: str, tbl_name: str, part_vals: list[str], max_parts: int) -> Encoded:
        return self._by_values(db_name, tbl_name, part_vals, max_parts, names=True)

    @_hive_api
    def get_partitions_by_filter(self, db_name: str, tbl_name: str, filter: str, max_parts: int) -> Encoded:
        self.note.filter = filter
        limit = _limit(max_parts)
        return self._selected(
            db_name,
            tbl_name,
            ("filter", filter, limit),
            lambda handle: self.catalog.pages_by_filter(handle, filter, limit),
            scope=lambda tbl: _filter_scope(tbl, filter),
        )

    @_hive_api
    def get_num_partitions_by_filter(self, db_name: str, tbl_name: str, filter: str) -> int:
        handle = self._handle(db_name, tbl_name)
        self.note.filter = filter
        with self.catalog.snapshot():
            count = sum(map(len, self.catalog.pages_by_filter(handle, filter, None)))
        self.note.partitions = count
        return count

    @_hive_api
    def get_partitions_by_names(self, db_name: str, tbl_name: str, names: list[str]) -> Encoded:
        wanted = list(names or [])
        return self._selected(
            db_name,
            tbl_name,
            ("by_names", tuple(wanted)),
            lambda handle: self.catalog.pages_by_names(handle, wanted),
            scope=lambda tbl: {partition_values(tbl, name) for name in wanted}.__contains__,
        )

    @_hive_api
    def partition_name_to_vals(self, part_name: str) -> list[str]:
        return [unescape_path_name(s.partition("=")[2]) for s in part_name.strip("/").split("/")]

    @_hive_api
    def partition_name_to_spec(self, part_name: str) -> dict[str, str]:
        pairs = (s.partition("=") for s in part_name.strip("/").split("/"))
        return {unescape_path_name(k): unescape_path_name(v) for k, _, v in pairs}

    # ------------------------------------------------------------------------- dropping, altering partitions

    @_hive_api
    def drop_partition(self, db_name: str, tbl_name: str, part_vals: list[str], deleteData: bool) -> bool:
        self._view(db_name, tbl_name)
        try:
            self.catalog.drop_partition(db_name, tbl_name, part_vals)
        except NoSuchObjectError:
            raise ttypes.NoSuchObjectException(message=f"partition values={part_vals}") from None
        self._changed()
        self.note.partitions = 1
        return True

    @_hive_api
    def drop_partition_with_environment_context(
        self, db_name: str, tbl_name: str, part_vals: list[str], deleteData: bool, environment_context: Any
    ) -> bool:
        return self.drop_partition(db_name, tbl_name, part_vals, deleteData)

    @_hive_api
    def drop_partition_by_name(self, db_name: str, tbl_name: str, part_name: str, deleteData: bool) -> bool:
        return self.drop_partition(db_name, tbl_name, self._name_values(db_name, tbl_name, part_name), deleteData)

    @_hive_api
    def drop_partition_by_name_with_environment_context(
        self, db_name: str, tbl_name: str, part_name: str, deleteData: bool, environment_context: Any
    ) -> bool:
        return self.drop_partition_by_name(db_name, tbl_name, part_name, deleteData)

    @_hive_api
    def alter_partition(self, db_name: str, tbl_name: str, new_part: Any) -> None:
        self.alter_partitions(db_name, tbl_name, [new_part])

    @_hive_api
    def alter_partitions(self, db_name: str, tbl_name: str, new_parts: list[Any]) -> None:
        view = self._view(db_name, tbl_name)
        now = int(time.time())
        changes = [view.new_partition(part, now=now) for part in new_parts or []]
        try:
            self.catalog.alter_partitions(db_name, tbl_name, changes)
        except NoSuchObjectError as exc:
            raise ttypes.InvalidOperationException(message=f"alter is not possible: {exc}") from None
        self._changed()
        self.note.partitions = len(changes)

    @_hive_api
    def alter_partitions_with_environment_context(
        self, db_name: str, tbl_name: str, new_parts: list[Any], environment_context: Any
    ) -> None:
        self.alter_partitions(db_name, tbl_name, new_parts)

    @_hive_api
    def alter_partition_with_environment_context(
        self, db_name: str, tbl_name: str, new_part: Any, environment_context: Any
    ) -> None:
        self.alter_partitions(db_name, tbl_name, [new_part])

    # ------------------------------------------------------------------------------------ table statistics

    def _totals(self, handle: Table) -> dict[str, str]:
        """Hive's `numFiles`, `numRows` and `totalSize` of a table whose files sargable registers, from its totals
        (none for a table whose files come from folders: its writers set them)."""
        if handle.files_from_folders:
            return {}
        stats = handle.stats()
        return {"numFiles": str(stats.files), "numRows": str(stats.rows), "totalSize": str(stats.bytes)}

    def _table_bytes(self, handle: Table) -> bytes:
        """The encoded `Table` of `get_table`, its parameters holding the table's totals (cached by version: every
        commit bumps it)."""
        totals = self._totals(handle)
        if not totals:
            return self.cache.codec(handle.definition).table_bytes
        hit = self.cache.get(handle.definition, ("table", "totals"))
        if hit is not None:
            return hit.payload
        shown = dataclasses.replace(handle.definition, properties={**handle.definition.properties, **totals})
        payload = TableCodec(TableView(shown)).table_bytes
        self.cache.put(handle.definition, ("table", "totals"), CachedReply(0, payload))
        return payload

    def _table_object(self, handle: Table) -> Any:
        """The Thrift `Table` of a table, its parameters holding the table's totals (see `_totals`)."""
        table = self.cache.codec(handle.definition).view.thrift()
        table.parameters = {**(table.parameters or {}), **self._totals(handle)}
        return table

    # ------------------------------------------------------------------------------------------------ locks

    lock_timeout: float | None = None
    """Seconds a lock lives without a heartbeat (None: `$SARGABLE_LOCK_TIMEOUT`, else Hive's 300)."""

    def _store(self) -> Store:
        return self.catalog.metastore.store

    @_hive_api
    def lock(self, rqst: Any) -> Any:
        if rqst.txnid:
            raise locking.no_transactions("lock", rqst.txnid)
        wanted = locking.components(rqst)
        if wanted:
            first = wanted[0]
            self.note.table = first.database if first.table is None else _table_name(first.database, first.table)
        try:
            timeout = self.lock_timeout or locking.lock_timeout()
        except SargableError as exc:
            raise locking.refused("lock", str(exc)) from None
        try:
            taken = locks.acquire(
                self._store(),
                wanted,
                now=time.time(),
                timeout=timeout,
                user=rqst.user or "",
                host=rqst.hostname or "",
                agent=rqst.agentInfo or "",
            )
        except MetastoreError as exc:
            raise locking.refused("lock", str(exc)) from None
        return locking.response(taken)

    @_hive_api
    def check_lock(self, rqst: Any) -> Any:
        if rqst.txnid:
            raise locking.no_transactions("check_lock", rqst.txnid)
        with locking.UnknownLocks():
            return locking.response(locks.check(self._store(), rqst.lockid, now=time.time()))

    @_hive_api
    def unlock(self, rqst: Any) -> None:
        with locking.UnknownLocks():
            locks.release(self._store(), rqst.lockid, now=time.time())

    @_hive_api
    def heartbeat(self, ids: Any) -> None:
        if ids.txnid:
            raise locking.no_transactions("heartbeat", ids.txnid)
        if not ids.lockid:
            return
        with locking.UnknownLocks():
            locks.heartbeat(self._store(), ids.lockid, now=time.time())

    @_hive_api
    def show_locks(self, rqst: Any) -> Any:
        found = locks.live_locks(self._store(), now=time.time())
        return locking.show(found, rqst or ttypes.ShowLocksRequest())


    # ------------------------------------------------------------------------------------- column statistics

    def _stats_partition(self, handle: Table, name: str | None) -> Partition:
        """A table's partition by its name (NoSuchObjectError when it has none)."""
        found = self.catalog.partitions_by_names(handle, [name]) if name else []
        if not found:
            raise NoSuchObjectError(f"{handle.qualified_name} has no partition {name!r}")
        return found[0]

    def _keep_stats(self, stats: Any, *, merge: bool = False) -> None:
        """Keep one `ColumnStatistics` (a table's or a partition's, as its description says); with `merge`, each
        column's merged with what was kept (Hive's `needMerge`)."""
        desc = stats.statsDesc
        self.note.table = _table_name(desc.dbName, desc.tableName)
        handle = self.catalog.table(desc.dbName, desc.tableName)
        partition = None if desc.isTblLevel else self._stats_partition(handle, desc.partName).values
        objs = {}
        for obj in stats.statsObj or []:
            if not obj.colName or statistics.kind(obj) is None:
                raise MetastoreError(f"the statistics of column {obj.colName!r} hold no one kind of column data")
            objs[obj.colName.lower()] = obj
        if merge:
            kept = colstats.get(self._store(), handle.definition, partition, objs)
            for column, raw in kept.items():
                objs[column] = statistics.aggregate([statistics.decode(raw)[0], objs[column]]) or objs[column]
        encoded = {column: statistics.encode(obj, desc.lastAnalyzed) for column, obj in objs.items()}
        colstats.put(self._store(), handle.definition, partition, encoded)

    def _kept_stats(self, handle: Table, partition: Partition | None, columns: list[str]) -> tuple[list[Any], int]:
        """The statistics of the given columns of the table or a partition (in their order, ones without left out),
        and when the latest was analyzed: the kept ones, else the files' where the table registers its files."""
        wanted = list(dict.fromkeys(c.lower() for c in columns))
        values = None if partition is None else partition.values
        found, analyzed = {}, 0
        for column, raw in colstats.get(self._store(), handle.definition, values, wanted).items():
            found[column], when = statistics.decode(raw)
            analyzed = max(analyzed, when)
        missing = {c for c in wanted if c not in found}
        if missing and not handle.files_from_folders and handle.stats().files:
            typed = [(name, dtype) for name, dtype in handle.columns if name.lower() in missing]
            files = handle.files(None if partition is None else [partition], stats=[name for name, _ in typed])
            if files:
                found.update((obj.colName, obj) for obj in statistics.from_files(files, typed))
        return [found[c] for c in wanted if c in found], analyzed

    def _column_stats(self, db_name: str, tbl_name: str, part_name: str | None, col_name: str) -> Any:
        handle = self._handle(db_name, tbl_name)
        partition = None if part_name is None else self._stats_partition(handle, part_name)
        objs, analyzed = self._kept_stats(handle, partition, [col_name])
        if not objs:
            where = handle.qualified_name + ("" if partition is None else f" partition {partition.name}")
            raise ttypes.NoSuchObjectException(message=f"no statistics of column {col_name!r} of {where}")
        desc = ttypes.ColumnStatisticsDesc(
            isTblLevel=partition is None,
            dbName=handle.database,
            tableName=handle.name,
            partName=None if partition is None else partition.name,
            lastAnalyzed=analyzed,
        )
        return ttypes.ColumnStatistics(statsDesc=desc, statsObj=objs)

    def _partition_stats(self, request: Any) -> tuple[Table, dict[str, list[Any]]]:
        """The kept statistics of the request's columns in each of its partitions that has some, by partition name."""
        handle = self._handle(request.dbName, request.tblName)
        columns = list(request.colNames or [])
        out = {}
        for part in self.catalog.partitions_by_names(handle, list(request.partNames or [])):
            objs, _ = self._kept_stats(handle, part, columns)
            if objs:
                out[part.name] = objs
        self.note.partitions = len(out)
        return handle, out

    @_hive_api
    def update_table_column_statistics(self, stats_obj: Any) -> bool:
        with self.catalog.transaction():
            self._keep_stats(stats_obj)
        return True

    @_hive_api
    def update_partition_column_statistics(self, stats_obj: Any) -> bool:
        return self.update_table_column_statistics(stats_obj)

    @_hive_api
    def set_aggr_stats_for(self, request: Any) -> bool:
        with self.catalog.transaction():
            for stats in request.colStats or []:
                self._keep_stats(stats, merge=bool(request.needMerge))
        return True

    @_hive_api
    def get_table_column_statistics(self, db_name: str, tbl_name: str, col_name: str) -> Any:
        return self._column_stats(db_name, tbl_name, None, col_name)

    @_hive_api
    def get_partition_column_statistics(self, db_name: str, tbl_name: str, part_name: str, col_name: str) -> Any:
        return self._column_stats(db_name, tbl_name, part_name, col_name)

    @_hive_api
    def get_table_statistics_req(self, request: Any) -> Any:
        handle = self._handle(request.dbName, request.tblName)
        return ttypes.TableStatsResult(tableStats=self._kept_stats(handle, None, list(request.colNames or []))[0])

    @_hive_api
    def get_partitions_statistics_req(self, request: Any) -> Any:
        return ttypes.PartitionsStatsResult(partStats=self._partition_stats(request)[1])

    @_hive_api
    def get_aggr_stats_for(self, request: Any) -> Any:
        _, found = self._partition_stats(request)
        merged = []
        for column in dict.fromkeys(c.lower() for c in request.colNames or []):
            objs = [obj for objs in found.values() for obj in objs if obj.colName.lower() == column]
            aggregated = statistics.aggregate(objs) if objs else None
            if aggregated is not None:
                merged.append(aggregated)
        wanted = {c.lower() for c in request.colNames or []}
        complete = sum(1 for objs in found.values() if {obj.colName.lower() for obj in objs} >= wanted)
        return ttypes.AggrStats(colStats=merged, partsFound=complete)

    @_hive_api
    def delete_table_column_statistics(self, db_name: str, tbl_name: str, col_name: str | None) -> bool:
        handle = self._handle(db_name, tbl_name)
        return colstats.delete(self._store(), handle.definition, None, col_name) > 0

    @_hive_api
    def delete_partition_column_statistics(
        self, db_name: str, tbl_name: str, part_name: str, col_name: str | None
    ) -> bool:
        handle = self._handle(db_name, tbl_name)
        partition = self._stats_partition(handle, part_name).values
        return colstats.delete(self._store(), handle.definition, partition, col_name) > 0


IMPLEMENTED = frozenset(
    name for name, value in vars(Handler).items() if callable(value) and not name.startswith("_") and name != "end_call"
)
"""The API methods the handler answers; the server answers every other one with UNKNOWN_METHOD."""
ENCODED = frozenset(name for name in IMPLEMENTED if getattr(Handler, name).__annotations__.get("return") == "Encoded")
"""The methods whose answer is `Encoded` bytes (annotated so): the server writes their replies itself."""
