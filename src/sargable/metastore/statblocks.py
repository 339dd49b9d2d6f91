"""Per column, the statistics of a table's files as columnar blocks: what a filter on a data column reads instead of
every file's record.

For each column and struct leaf with an Arrow type (`arrow_type`), the statistics of the table's files are kept in
blocks of up to `blockstate.BLOCK_ROWS` rows, each an Arrow IPC stream: per file its key in `files`, the table
version the row was written at, its row count and its statistics in the `FileStatsTable` layout
(`stats_struct_type`: min, max, NULL and NaN counts, exactness, value sets). Every file a commit adds gets a row in
every column's blocks (unknown statistics where it has none). Each column also has a small directory: per block its
files, rows, lowest min, highest bound and NULL / NaN counts, which read as one file holding every file of the block
(`_summary`), so that the same evaluator that skips files skips blocks.

A scan asks `candidates` for the keys of the files whose statistics may match its file filter: for each column the
filter names, the directory, then only the blocks whose summary may match, evaluated over Arrow columns (no
`FileStats` built); the columns' candidates intersect (each is a superset of the files that may match). The scan
then reads those files' records and runs its per-file step over them, so its result is the per-file path's exactly.

Blocks are written in the transaction of the commit that adds the files: a commit of few files only notes them as
pending (`blockstate.pend`; a scan takes pending files as candidates); once `blockstate.PENDING_MAX` wait, they
and the commit's files, sorted by min, are cut into new blocks (`added`), and small blocks at the end are merged
while the last is no bigger than the new one (a binary counter: every row is rewritten O(log BLOCK_ROWS) times). A
removed file's rows stay until compaction: the commit records a dead mark (its key and the version removing it), and
a row is dead when a mark of its key is of a later version than the row. When dead rows pass a quarter of the rows
(`compact`), every column's blocks are rewritten without them, sorted by min across the table, so that files
clustered on a column (`sgs.optimize`) give blocks of disjoint ranges and an equality reads one or two. Candidates
are checked against `files` by the scan's read, so a dead row is never a wrong answer, only a wasted one.

Schema changes follow `filecodec`: a column added after a row was written is all-NULL in that file, and has no rows
in its blocks for it; a column whose filter may match an all-NULL file is then not used (the per-file step decides).
A widened column's statistics are cast to the new type; those of a `float` widened to `double` are loosened by one
single-precision step each way, which holds every bound the per-file path reads (`filecodec._single_bounds`).

Tables created before blocks existed have none (no state row): they keep the per-file path until
`Table.build_stats_blocks` builds them (`build`); a table that lists no file gets them at its next commit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sargable.errors import PushdownError, StatisticsError
from sargable.expr.like import prefix_successor
from sargable.metastore import blockstate
from sargable.metastore.filecodec import decode_file
from sargable.metastore.records import TableDefinition
from sargable.metastore.schema import BLOCKS, DECODE_ERRORS, FILES, damaged, key_range
from sargable.skipping import FileStatsTable
from sargable.skipping.table import STAT_FIELDS, arrow_type, stats_struct_array, stats_struct_type
from sargable.stats import UNKNOWN, ColumnStats, FileStats
from sargable.store import Store
from sargable.types import DataType, with_struct_leaves


def block_columns(table: TableDefinition) -> list[tuple[str, DataType]]:
    """The columns and struct leaves that have blocks: those with an Arrow type."""
    out = []
    for name, dtype in with_struct_leaves(table.columns):
        try:
            arrow_type(dtype)
        except PushdownError:
            continue
        out.append((name, dtype))
    return out


# -- encoding ------------------------------------------------------------------------------------------------------


def _ipc(batch: pa.RecordBatch) -> bytes:
    """A batch as an Arrow IPC stream, zstd-compressed (file keys share long prefixes: blocks shrink about tenfold,
    and a block decompresses in about a millisecond)."""
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression="zstd" if pa.Codec.is_available("zstd") else None)
    with pa.ipc.new_stream(sink, batch.schema, options=options) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def _read_ipc(raw: bytes) -> pa.RecordBatch:
    table = pa.ipc.open_stream(pa.py_buffer(raw)).read_all()
    return table.combine_chunks().to_batches()[0] if table.num_rows else pa.RecordBatch.from_pylist([], table.schema)


def _rows(files: Sequence[tuple[bytes, FileStats]], name: str, dtype: DataType, version: int) -> pa.RecordBatch:
    """One column's block rows of these files (StatisticsError when a statistic has no Arrow form)."""
    stats = stats_struct_array([f.columns.get(name, UNKNOWN) for _, f in files], dtype, name, every_field=True)
    return pa.RecordBatch.from_arrays(
        [
            pa.array([k for k, _ in files], pa.binary()),
            pa.array([version] * len(files), pa.int64()),
            pa.array([f.row_count for _, f in files], pa.int64()),
            stats,
        ],
        names=["key", "version", "row_count", "stats"],
    )


def _sorted_by_min(batch: pa.RecordBatch) -> pa.RecordBatch:
    if batch.num_rows < 2:
        return batch
    keys = pa.table({"min": pc.struct_field(batch.column("stats"), "min"), "key": batch.column("key")})
    order = pc.sort_indices(keys, [("min", "ascending"), ("key", "ascending")])  # NULL (unknown) minima last
    return batch.take(order)


def _summary(batch: pa.RecordBatch, dtype: DataType) -> dict[str, Any]:
    """One directory row of a block: a file's statistics that hold those of every file of the block (lowest min,
    highest bound (a truncated string max's prefix successor), summed counts), unknown where any file's is."""
    stats = batch.column("stats")
    rows = batch.column("row_count")
    nulls = pc.struct_field(stats, "null_count")
    live = pc.greater(rows, 0)
    all_null = pc.fill_null(pc.equal(nulls, rows), False)
    holding = pc.and_(live, pc.invert(all_null))
    minima = pc.struct_field(stats, "min").filter(holding)
    maxima = pc.struct_field(stats, "max").filter(holding)
    lo = hi = None
    if len(minima) and not minima.null_count:
        lo = pc.min(minima).as_py()
    if len(maxima) and not maxima.null_count:
        hi = pc.max(maxima).as_py()
        if dtype.is_string:
            exact = pc.struct_field(stats, "max_exact").filter(holding)
            if not pc.all(pc.fill_null(exact, True)).as_py():
                uppers = [
                    value if is_exact is not False else prefix_successor(value)
                    for value, is_exact in zip(maxima.to_pylist(), exact.to_pylist(), strict=True)
                ]
                hi = None if None in uppers else max(uppers)
    return {
        "entries": batch.num_rows,
        "row_count": pc.sum(rows).as_py() or 0,
        "lo": lo,
        "hi": hi,
        "null_count": _total(nulls.filter(live)),
        "nan_count": _total(pc.struct_field(stats, "nan_count").filter(live)),
    }


def _total(counts: pa.Array) -> int | None:
    return None if counts.null_count else (pc.sum(counts).as_py() or 0)


def _directory_batch(entries: list[dict[str, Any]], dtype: DataType) -> pa.RecordBatch:
    value = arrow_type(dtype)
    return pa.RecordBatch.from_arrays(
        [
            pa.array([e["id"] for e in entries], pa.int64()),
            pa.array([e["entries"] for e in entries], pa.int64()),
            pa.array([e["row_count"] for e in entries], pa.int64()),
            pa.array([e["lo"] for e in entries], value),
            pa.array([e["hi"] for e in entries], value),
            pa.array([e["null_count"] for e in entries], pa.int64()),
            pa.array([e["nan_count"] for e in entries], pa.int64()),
        ],
        names=["id", "entries", "row_count", "lo", "hi", "null_count", "nan_count"],
    )


BLOCK_COLUMNS = ("key", "version", "row_count", "stats")
DIRECTORY_COLUMNS = ("id", "entries", "row_count", "lo", "hi", "null_count", "nan_count")
_READ_ERRORS = (*DECODE_ERRORS, pa.ArrowException, OSError)
"""What a damaged IPC stream raises (pyarrow reports some as OSError)."""


def _decoded(table: TableDefinition, key: bytes, raw: bytes | None, what: str, names: Sequence[str]) -> pa.RecordBatch:
    """A stored block or directory, with the columns it must have (damage names its key)."""
    try:
        if raw is None:
            raise KeyError("missing")
        batch = _read_ipc(raw)
        missing = [n for n in names if n not in batch.schema.names]
        if missing:
            raise KeyError(f"no column {missing[0]!r}")
        counts = [batch.schema.field(n).type for n in names if n in ("version", "row_count", "id", "entries")]
        if any(t != pa.int64() for t in counts):
            raise TypeError(f"counts of type {counts}")
        if "stats" in names:
            stats = batch.schema.field("stats").type
            if batch.schema.field("key").type != pa.binary() or not pa.types.is_struct(stats):
                raise TypeError(f"keys of type {batch.schema.field('key').type}, statistics of type {stats}")
            if [stats.field(i).name for i in range(stats.num_fields)] != list(STAT_FIELDS):
                raise TypeError(f"statistics of type {stats}")
        return batch
    except _READ_ERRORS as exc:
        raise damaged(BLOCKS, key, f"{what} of {table.qualified_name}", exc) from None


def _read_directory(table: TableDefinition, key: bytes, raw: bytes) -> pa.RecordBatch:
    return _decoded(table, key, raw, "a statistics block directory", DIRECTORY_COLUMNS)


def _directory_entries(table: TableDefinition, key: bytes, raw: bytes) -> list[dict[str, Any]]:
    return _read_directory(table, key, raw).to_pylist()


def _read_block(table: TableDefinition, key: bytes, raw: bytes | None) -> pa.RecordBatch:
    return _decoded(table, key, raw, "a statistics block", BLOCK_COLUMNS)


# -- writing -------------------------------------------------------------------------------------------------------

DECODE_CHUNK = 65_536
"""Files whose entries are decoded at a time when blocks are written: their rows are kept as Arrow arrays, so a
commit of a million files never holds a million decoded records."""



def added(store: Store, table: TableDefinition, files: Sequence[tuple[bytes, bytes]]) -> None:
    """Write the files a commit adds (key and stored entry in `files`) and the pending ones (`blockstate`) as rows of
    every column's blocks, read from their entries as the per-file path reads them (inside the commit's
    transaction; the table keeps blocks)."""
    state = blockstate.read_state(store, table)
    if state is None:
        return
    entries = [*blockstate.take_pending(store, table, state), *files]
    if not entries:
        blockstate.put_state(store, table, state)
        return
    columns = block_columns(table)
    rows: dict[str, list[pa.RecordBatch] | None] = {name: [] for name, _ in columns}
    for start in range(0, len(entries), DECODE_CHUNK):
        decoded = []
        for key, value in entries[start : start + DECODE_CHUNK]:
            try:
                decoded.append((key, decode_file(value, table)))
            except DECODE_ERRORS as exc:
                raise damaged(FILES, key, f"a file of {table.qualified_name}", exc) from None
        for name, dtype in columns:
            built = rows[name]
            if built is None:
                continue
            try:
                built.append(_rows(decoded, name, dtype, table.version))
            except StatisticsError:
                rows[name] = None
    for name, dtype in columns:
        key = blockstate.directory_key(table, name)
        raw = store.get(BLOCKS, key)
        if raw == blockstate.UNUSABLE:
            continue
        built = rows[name]
        if built is None:
            _give_up(store, table, key, raw)
            continue
        directory = [] if raw is None else _directory_entries(table, key, raw)
        _append(store, table, state, directory, _sorted_by_min(_concat(built, dtype)), dtype)
        store.put(BLOCKS, key, _ipc(_directory_batch(directory, dtype)))
    blockstate.put_state(store, table, state)


def _give_up(store: Store, table: TableDefinition, key: bytes, raw: bytes | None) -> None:
    """Stop keeping a column's blocks (its statistics have no Arrow form): they are dropped and never read."""
    if raw is not None:
        for entry in _directory_entries(table, key, raw):
            store.delete(BLOCKS, blockstate.block_key(table, entry["id"]))
    store.put(BLOCKS, key, blockstate.UNUSABLE)


def _append(
    store: Store,
    table: TableDefinition,
    state: blockstate.State,
    directory: list[dict[str, Any]],
    rows: pa.RecordBatch,
    dtype: DataType,
) -> None:
    """Write sorted rows as new blocks at the end of a column's directory, merging the small blocks before them."""
    for offset in range(0, rows.num_rows, blockstate.BLOCK_ROWS):
        chunk = rows.slice(offset, blockstate.BLOCK_ROWS)
        while directory and chunk.num_rows >= directory[-1]["entries"] and (
            directory[-1]["entries"] + chunk.num_rows <= blockstate.BLOCK_ROWS
        ):
            last = directory.pop()
            block_key = blockstate.block_key(table, last["id"])
            merged = _read_block(table, block_key, store.get(BLOCKS, block_key))
            store.delete(BLOCKS, block_key)
            chunk = _sorted_by_min(_concat([merged, chunk], dtype))
        _write_block(store, table, state, directory, chunk, dtype)


def _write_block(
    store: Store,
    table: TableDefinition,
    state: blockstate.State,
    directory: list[dict[str, Any]],
    rows: pa.RecordBatch,
    dtype: DataType,
) -> None:
    block_id = state.next_id
    state.next_id += 1
    store.put(BLOCKS, blockstate.block_key(table, block_id), _ipc(rows))
    directory.append({"id": block_id, **_summary(rows, dtype)})


def _concat(batches: list[pa.RecordBatch], dtype: DataType) -> pa.RecordBatch:
    """Rows of several blocks in one batch of the column's current statistics type."""
    target = pa.schema(
        [("key", pa.binary()), ("version", pa.int64()), ("row_count", pa.int64()), ("stats", stats_struct_type(dtype))]
    )
    rows = pa.Table.from_batches([b.cast(target) if b.schema != target else b for b in batches], target)
    if not rows.num_rows:
        return pa.RecordBatch.from_pylist([], schema=target)
    return rows.combine_chunks().to_batches()[0]


def compact(store: Store, table: TableDefinition) -> None:
    """Rewrite every column's blocks without dead rows (and rows of a column older than the column), sorted by min
    across the table, and forget the dead marks."""
    state = blockstate.read_state(store, table)
    if state is None:
        return
    dead_start, dead_stop = key_range(blockstate.prefix(table, blockstate.DEAD))
    skip = len(dead_start)
    marks = []
    for key, value in store.scan(BLOCKS, dead_start, dead_stop):
        try:
            marks.append((key[skip:], blockstate.VERSION.unpack(value)[0]))
        except DECODE_ERRORS as exc:
            raise damaged(BLOCKS, key, f"a dead mark of {table.qualified_name}", exc) from None
    dead = pa.table(
        {"key": pa.array([k for k, _ in marks], pa.binary()), "removed": pa.array([v for _, v in marks], pa.int64())}
    )
    added_at = {path: when for path, when in table.added}
    live = 0
    for name, dtype in block_columns(table):
        key = blockstate.directory_key(table, name)
        raw = store.get(BLOCKS, key)
        if raw is None or raw == blockstate.UNUSABLE:
            continue
        directory = _directory_entries(table, key, raw)
        block_keys = [blockstate.block_key(table, e["id"]) for e in directory]
        found = store.multi_get(BLOCKS, block_keys)
        batches = [_read_block(table, k, found.get(k)) for k in block_keys]
        for k in block_keys:
            store.delete(BLOCKS, k)
        rows = _concat(batches, dtype) if batches else None
        new_directory: list[dict[str, Any]] = []
        if rows is not None and rows.num_rows:
            rows = _without_dead(rows, dead, added_at.get(name.lower()))
            rows = _sorted_by_min(rows)
            for offset in range(0, rows.num_rows, blockstate.BLOCK_ROWS):
                _write_block(store, table, state, new_directory, rows.slice(offset, blockstate.BLOCK_ROWS), dtype)
            live = max(live, rows.num_rows)
        store.put(BLOCKS, key, _ipc(_directory_batch(new_directory, dtype)))
    store.delete_range(BLOCKS, dead_start, dead_stop)
    state.live, state.dead = live + state.pending, 0
    blockstate.put_state(store, table, state)


def _without_dead(rows: pa.RecordBatch, dead: pa.Table, added_at: int | None) -> pa.RecordBatch:
    """The rows no dead mark of a later version names (and, for a column added later, none older than it)."""
    versions = rows.column("version")
    removed_at = pc.take(dead.column("removed"), pc.index_in(rows.column("key"), value_set=dead.column("key")))
    keep = pc.fill_null(pc.greater_equal(versions, removed_at), True)
    if added_at is not None:
        keep = pc.and_(keep, pc.greater_equal(versions, added_at))
    return rows.filter(keep)


def build(store: Store, table: TableDefinition, files: Iterable[tuple[bytes, bytes]]) -> None:
    """(Re)build a table's blocks from its files (key and stored entry in `files`), sorted by min: for tables made
    before blocks existed, and after keys change (a folder move)."""
    listed = list(files)
    state = blockstate.start(store, table)
    state.live = len(listed)
    blockstate.put_state(store, table, state)
    added(store, table, listed)


# -- reading -------------------------------------------------------------------------------------------------------


def candidates(store: Store, table: TableDefinition, where: Any) -> list[bytes] | None:
    """The keys in `files` (sorted) of the files whose blocks' statistics may match the bound filter `where`, a
    superset of those the per-file path keeps (and maybe of files removed since); None when no column `where` names
    has usable blocks (the per-file path decides)."""
    state = blockstate.read_state(store, table)
    if state is None:
        return None
    schema = list(table.schema)
    names = {c.lower() for c in where.columns}
    columns = [(n, t) for n, t in block_columns(table) if n.lower() in names]
    if not columns:
        return None
    directory_keys = [blockstate.directory_key(table, n) for n, _ in columns]
    directories = store.multi_get(BLOCKS, directory_keys)
    added_at = {path: when for path, when in table.added}
    singles = {path for path, old in table.widened if old.name == "float"}
    kept: pa.Array | None = None
    for (name, dtype), key in zip(columns, directory_keys, strict=True):
        raw = directories.get(key)
        if raw is None or raw == blockstate.UNUSABLE:
            continue
        since = added_at.get(name.lower())
        if since is not None and _matches_all_null(where, name, dtype, schema):
            continue
        loosen = name.lower() in singles and dtype.name == "double"
        found = _column_candidates(store, table, where, schema, name, dtype, key, raw, since, loosen)
        if found is None:
            continue
        kept = found if kept is None else kept.filter(pc.is_in(kept, value_set=found))
    if kept is None:
        return None
    found = set(kept.to_pylist())
    if state.pending:
        found.update(blockstate.pending_keys(store, table))
    return sorted(found)


def _matches_all_null(where: Any, name: str, dtype: DataType, schema: list[tuple[str, DataType]]) -> bool:
    """Whether the filter may match a file where the column is all NULL (one written before the column was added)."""
    nulls = FileStats("", 1, 0, {name: ColumnStats(null_count=1, nan_count=0 if dtype.is_floating else None)})
    return bool(FileStatsTable.from_files([nulls], schema).may_match(where)[0].as_py())


def _column_candidates(
    store: Store,
    table: TableDefinition,
    where: Any,
    schema: list[tuple[str, DataType]],
    name: str,
    dtype: DataType,
    key: bytes,
    raw: bytes,
    since: int | None,
    loosen: bool,
) -> pa.Array | None:
    """The keys of one column's rows that may match (other columns unknown); None when its blocks don't read in
    the column's type."""
    batch = _read_directory(table, key, raw)
    if batch.num_rows == 0:
        return pa.array([], pa.binary())
    summary = {
        "min": batch.column("lo"),
        "max": batch.column("hi"),
        "null_count": batch.column("null_count"),
        "nan_count": batch.column("nan_count"),
        "min_exact": pa.nulls(batch.num_rows, pa.bool_()).fill_null(False),
        "max_exact": pa.nulls(batch.num_rows, pa.bool_()).fill_null(False),
    }
    if loosen:
        summary["min"], summary["max"] = _loosened(summary["min"], down=True), _loosened(summary["max"], down=False)
    try:
        blocks = _evaluate(where, schema, name, batch.column("row_count"), summary)
    except StatisticsError:
        return None
    ids = batch.column("id").filter(blocks).to_pylist()
    block_keys = [blockstate.block_key(table, i) for i in ids]
    found = store.multi_get(BLOCKS, block_keys) if block_keys else {}
    keys = []
    for block_key in block_keys:
        rows = _read_block(table, block_key, found.get(block_key))
        if since is not None:
            rows = rows.filter(pc.greater_equal(rows.column("version"), since))
        stats = rows.column("stats")
        fields = {f.name: pc.struct_field(stats, f.name) for f in stats.type}
        if loosen:
            fields["min"] = _loosened(fields["min"], down=True)
            fields["max"] = _loosened(fields["max"], down=False)
            fields["min_exact"] = fields["max_exact"] = pa.nulls(rows.num_rows, pa.bool_()).fill_null(False)
            del fields["distinct"]
        try:
            mask = _evaluate(where, schema, name, rows.column("row_count"), fields)
        except StatisticsError:
            return None
        keys.append(rows.column("key").filter(mask))
    return pa.concat_arrays(keys) if keys else pa.array([], pa.binary())


def _evaluate(
    where: Any, schema: list[tuple[str, DataType]], name: str, row_count: pa.Array, fields: dict[str, pa.Array]
) -> pa.BooleanArray:
    """The vectorized evaluator over rows holding one column's statistics (every other column unknown)."""
    stats = pa.StructArray.from_arrays(list(fields.values()), names=list(fields))
    columns = pa.StructArray.from_arrays([stats], names=[name])
    table = pa.table({"path": pa.nulls(len(row_count), pa.string()), "row_count": row_count, "columns": columns})
    return FileStatsTable.from_arrow(table, schema).may_match(where)


def _loosened(values: pa.Array, *, down: bool) -> pa.Array:
    """Bounds of a column widened from float to double, each moved one single-precision step outwards (below its
    single's predecessor / above its successor), so they hold what `filecodec` reads for them."""
    doubles = values.cast(pa.float64())
    array = doubles.to_numpy(zero_copy_only=False)
    with np.errstate(over="ignore", invalid="ignore"):
        single = array.astype(np.float32)
        step = np.nextafter(single, np.float32(-np.inf if down else np.inf)).astype(np.float64)
    out = np.fmin(array, step) if down else np.fmax(array, step)
    return pa.array(out, pa.float64(), mask=doubles.is_null().to_numpy(zero_copy_only=False))
