"""Reads without Spark (`Scan.to_batches` / `to_arrow` / `to_pandas` / `to_dataset` / `to_duckdb` / `to_polars`).

The oracle: DuckDB reading every file of the table with `hive_partitioning` and the same predicate as SQL (the
DuckDB printer of the evaluation tests, written apart from sargable's), compared as a multiset of rows, on random
tables (partitioned by a date, int or string key, NULL partitions, NULL and NaN values, several files a partition)
and random filters over partition keys and data columns (comparisons, IN with NULLs, BETWEEN, LIKE with ESCAPE,
RLIKE, OR, NOT), tables whose files are registered and tables whose files are listed from their folders, on both
metastore backends. Function calls, on which engines differ, are checked against sargable's evaluator row by row.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import io
import itertools
import json
import math
import os
import re
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import sargable as sg
from sargable import cli, readers
from sargable.arrow_filter import split_for_arrow, to_arrow_expression
from sargable.errors import SargableError
from sargable.expr.bind import bind
from sargable.expr.evaluate import evaluate
from sargable.expr.nodes import And, Between, Comparison, In, IsNull, Like, Not, Or, walk
from sargable.metastore import Metastore
from sargable.parquet_stats import stats_from_parquet
from sargable.skipping.table import arrow_type
from sargable.types import parse_type
from strategies import LEAF_KINDS, predicates, values
from test_evaluate import duck_type, to_duckdb

pytest_plugins = ["metastore_fixtures"]

KEY_TYPES = ("date", "int", "string")
DATA_TYPES = ("bigint", "int", "double", "float", "string", "decimal(10,2)", "date", "timestamp", "boolean")
KEY_POOLS: dict[str, list[Any]] = {
    "date": [dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2023, 12, 31), dt.date(1, 1, 1)],
    "int": [0, 1, 3, -7, 2**31 - 1],
    "string": ["a", "b", "ab", "US", "a b"],
}
"""Partition values (strings that need no escaping in a folder name, which DuckDB's hive reader would not undo)."""
DUCK_KINDS = LEAF_KINDS - {"func"}
"""Function calls are where engines differ (Spark's substr, trim, Unicode case): checked against evaluate instead."""

_tables = itertools.count()


@dataclasses.dataclass(frozen=True)
class Drawn:
    """A random table: its schema and rows, how its files were laid out."""

    keys: list[tuple[str, str]]
    columns: list[tuple[str, str]]
    rows: list[dict[str, Any]]
    from_folders: bool

    @property
    def schema(self) -> list[tuple[str, str]]:
        return [*self.columns, *self.keys]


@st.composite
def drawn_tables(draw: st.DrawFn, max_rows: int = 14) -> Drawn:
    key_types = draw(st.lists(st.sampled_from(KEY_TYPES), min_size=1, max_size=2))
    keys = [(f"k{i}", t) for i, t in enumerate(key_types)]
    data_types = draw(st.lists(st.sampled_from(DATA_TYPES), min_size=1, max_size=4))
    columns = [(f"c{i}", t) for i, t in enumerate(data_types)]
    key_values = {name: st.one_of(st.sampled_from(KEY_POOLS[t]), st.none()) for name, t in keys}
    row = st.fixed_dictionaries({**{n: values(t) for n, t in columns}, **key_values})
    rows = draw(st.lists(row, min_size=1, max_size=max_rows))
    return Drawn(keys, columns, rows, draw(st.booleans()))


def write_table(ms: Metastore, root: Path, drawn: Drawn, *, split: int = 2, name: str | None = None) -> str:
    """Create the table, add its partitions, and write each partition's rows as Parquet files (up to `split` a
    partition) into the partition's folder; register them unless the table lists its folders. Returns its name."""
    name = name or f"t{next(_tables)}"
    location = root / name
    ms.create_database("db", if_not_exists=True)
    folders = drawn.from_folders
    ms.create_table("db", name, drawn.columns, drawn.keys, location=str(location), files_from_folders=folders)
    key_names = [k for k, _ in drawn.keys]
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in drawn.rows:
        groups.setdefault(tuple(row[k] for k in key_names), []).append(row)
    if not groups:
        return name
    ms.add_partitions("db", name, [dict(zip(key_names, values, strict=True)) for values in groups])
    schema = pa.schema([(n, readers.column_arrow_type(parse_type(t))) for n, t in drawn.columns])
    files = []
    for partition in ms.table(f"db.{name}").partitions():
        part_rows = groups[tuple(partition.values)]
        os.makedirs(partition.location, exist_ok=True)
        chunks = max(1, min(split, len(part_rows)))
        for i in range(chunks):
            chunk = part_rows[i::chunks]
            path = f"{partition.location}/part-{i}.parquet"
            pq.write_table(pa.Table.from_pylist([{n: r[n] for n, _ in drawn.columns} for r in chunk], schema), path)
            stats = stats_from_parquet(path, drawn.columns, partition=partition.spec)
            files.append(dataclasses.replace(stats, path=path, size_bytes=os.path.getsize(path)))
    if not drawn.from_folders:
        ms.commit("db", name, add_files=files)
    return name


def _cell(value: Any) -> Any:
    return ("NaN",) if isinstance(value, float) and math.isnan(value) else value


def multiset(rows: Sequence[Sequence[Any]]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(_cell(v) for v in row) for row in rows)


def duckdb_rows(location: Path, drawn: Drawn, sql: str) -> list[tuple[Any, ...]]:
    """DuckDB's rows of every file of the table where `sql` holds (partition columns from the folder names)."""
    if not drawn.rows:
        return []
    types = ", ".join(f"'{n}': '{duck_type(parse_type(t))}'" for n, t in drawn.keys)
    names = ", ".join(f'"{n}"' for n, _ in drawn.schema)
    source = f"read_parquet('{location}/**/*.parquet', hive_partitioning = true, hive_types = {{{types}}})"
    return duckdb.connect().execute(f"SELECT {names} FROM {source} WHERE {sql}").fetchall()


def arrow_rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return [tuple(row.values()) for row in table.to_pylist()]


def _check_against_duckdb(ms: Metastore, root: Path, drawn: Drawn, predicate: Any, loaded: bool = False) -> None:
    """`to_arrow` (and `to_dataset`, and DuckDB reading `to_duckdb`'s view) give DuckDB's rows over all files; with
    `loaded`, from a handle whose version was listed whole first (its partitions answer from memory)."""
    name = write_table(ms, root, drawn)
    table = ms.table(f"db.{name}")
    if loaded:
        table.scan()
    event(f"handle: {'loaded' if loaded else 'cold'}")
    scan = table.scan(predicate)
    result = scan.to_arrow()
    assert result.schema == pa.schema([(n, readers.column_arrow_type(parse_type(t))) for n, t in drawn.schema])
    expected = duckdb_rows(root / name, drawn, to_duckdb(scan.filter.expr))
    assert multiset(arrow_rows(result)) == multiset(expected), (scan.filter.text, str(scan.report))
    event(f"rows: {'some' if expected else 'none'} of {'some' if drawn.rows else 'none'}")
    _, rest = split_for_arrow(None if scan.residual is None else scan.residual.expr)
    event(f"residual: {'none' if scan.residual is None else 'arrow' if rest is None else 'evaluator'}")
    if rest is None:
        assert multiset(arrow_rows(scan.to_dataset().to_table())) == multiset(expected)
    with scan.to_duckdb() as con:
        assert multiset(con.execute("SELECT * FROM scan").fetchall()) == multiset(expected)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_to_arrow_agrees_with_duckdb_over_all_files(data: st.DataObject, metastore: Metastore, tmp_path: Path) -> None:
    drawn = data.draw(drawn_tables())
    pools = {n: [r[n] for r in drawn.rows if r[n] is not None] for n, _ in drawn.schema}
    predicate = data.draw(predicates(drawn.schema, kinds=DUCK_KINDS, pools=pools, max_leaves=6))
    _check_against_duckdb(metastore, tmp_path, drawn, predicate, data.draw(st.booleans(), label="loaded"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_partition_filters_agree_with_duckdb(data: st.DataObject, metastore: Metastore, tmp_path: Path) -> None:
    """Filters on partition keys only (the partition oracle's shape): pruned exactly, never re-applied."""
    drawn = data.draw(drawn_tables())
    pools = {n: [r[n] for r in drawn.rows if r[n] is not None] for n, _ in drawn.keys}
    kinds = frozenset({"compare", "in", "between", "is_null", "like"})
    predicate = data.draw(predicates(drawn.keys, kinds=kinds, pools=pools, max_leaves=4))
    _check_against_duckdb(metastore, tmp_path, drawn, predicate, data.draw(st.booleans(), label="loaded"))


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_functions_agree_with_evaluate_row_by_row(data: st.DataObject, tmp_path_factory: Any) -> None:
    """Function calls have no Arrow form: sargable's evaluator applies them to the rows read, as on every row."""
    drawn = data.draw(drawn_tables())
    pools = {n: [r[n] for r in drawn.rows if r[n] is not None] for n, _ in drawn.schema}
    kinds = frozenset({"func", "compare", "is_null"})
    predicate = data.draw(predicates(drawn.schema, kinds=kinds, pools=pools, max_leaves=4))
    root = tmp_path_factory.mktemp("functions")
    with Metastore.open(f"sqlite:///{root}/meta.db", warehouse=root / "warehouse") as ms:
        name = write_table(ms, root, drawn)
        result = ms.table(f"db.{name}").scan(predicate).to_arrow()
    names = [n for n, _ in drawn.schema]
    expected = [tuple(r[n] for n in names) for r in drawn.rows if evaluate(predicate, r) is True]
    assert multiset(arrow_rows(result)) == multiset(expected)


# -- the translator ---------------------------------------------------------------------------------------------------

TRANSLATED_TYPES = ("int", "bigint", "double", "float", "string", "decimal(10,2)", "date", "timestamp", "boolean")


PREDICATE_NODES = (Comparison, In, Between, IsNull, Like, Not, And, Or)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_the_arrow_translation_is_true_false_and_null_where_evaluate_is(data: st.DataObject) -> None:
    """Each predicate and sub-predicate that translates, evaluated by Arrow as a column, is evaluate's three-valued
    result on every row (NaN, NULL, -0.0 and type extremes among the values)."""
    types = data.draw(st.lists(st.sampled_from(TRANSLATED_TYPES), min_size=1, max_size=3))
    schema = [(f"c{i}", t) for i, t in enumerate(types)]
    rows = data.draw(st.lists(st.fixed_dictionaries({n: values(t) for n, t in schema}), min_size=1, max_size=10))
    pools = {n: [r[n] for r in rows if r[n] is not None] for n, _ in schema}
    predicate = data.draw(predicates(schema, kinds=LEAF_KINDS - {"func", "rlike"}, pools=pools, max_leaves=4))
    table = ds.dataset(pa.Table.from_pylist(rows, pa.schema([(n, arrow_type(parse_type(t))) for n, t in schema])))
    translated = 0
    for node in walk(predicate):
        if not isinstance(node, PREDICATE_NODES):
            continue
        try:
            expression = to_arrow_expression(node)
        except SargableError:
            continue
        translated += 1
        got = table.to_table(columns={"truth": expression}).column("truth").to_pylist()
        assert got == [evaluate(node, row) for row in rows], str(node)
    event(f"sub-predicates translated: {min(translated, 3)}+")


FLOATING_EDGES = [math.nan, -0.0, 0.0, 1.0, 0.5, math.inf, -math.inf, None]


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_floating_translations_put_nan_above_every_number(data: st.DataObject) -> None:
    """NaN is above every number and equal to itself, -0.0 equals 0.0, as in evaluate (Arrow's IEEE order differs)."""
    dtype = data.draw(st.sampled_from(["double", "float"]))
    rows = [{"x": v} for v in data.draw(st.lists(st.sampled_from(FLOATING_EDGES), min_size=1, max_size=8))]
    pools = {"x": [v for v in FLOATING_EDGES if v is not None]}
    kinds = frozenset({"compare", "in", "between", "is_null"})
    predicate = data.draw(predicates([("x", dtype)], kinds=kinds, pools=pools, exotic=False, max_leaves=3))
    table = ds.dataset(pa.Table.from_pylist(rows, pa.schema([("x", arrow_type(parse_type(dtype)))])))
    got = table.to_table(columns={"truth": to_arrow_expression(predicate)}).column("truth").to_pylist()
    assert got == [evaluate(predicate, row) for row in rows], str(predicate)


def test_what_has_no_arrow_form_is_kept_for_the_evaluator() -> None:
    schema = [("s", "string"), ("n", "int"), ("x", "double")]
    predicate = bind(sg.parse("s like 'a%' and lower(s) = 'ab' and n > 2.5 and s rlike 'a+' and x > 1"), schema)
    arrow, rest = split_for_arrow(predicate)
    assert arrow is not None and rest is not None
    assert sg.render(rest) == "lower(s) = 'ab' AND n > 2.5 AND s RLIKE 'a+'"
    assert split_for_arrow(bind(sg.parse("n = 3 or lower(s) = 'a'"), schema))[0] is None
    arrow, rest = split_for_arrow(bind(sg.parse("n = 3 and s != 'x\ud800'"), schema))
    assert str(arrow) == "(n == 3)" and rest is not None, "a string with no UTF-8 form has no Arrow value"


def test_deep_predicates_stay_with_the_evaluator_and_long_lists_with_arrow(events: sg.Table) -> None:
    """Arrow binds expressions recursively: a NOT chain 10,000 deep crashed the process when handed to it. Such a
    conjunct is applied by the (iterative) evaluator; a 1,000-term OR is a balanced tree and stays with Arrow."""
    deep = sg.col("user_id") > 3
    for _ in range(10_000):
        deep = ~deep
    scan = events.scan(sg.and_(deep, sg.col("hr").eq(1)))
    assert split_for_arrow(scan.residual.expr)[1] is not None
    assert sorted(scan.to_arrow(columns=["user_id"]).column("user_id").to_pylist()) == [4, 4, 5, 5]
    wide = sg.parse(" or ".join(f"user_id = {i}" for i in range(3, 1_003)))
    scan = events.scan(sg.and_(wide, sg.col("hr").eq(1)))
    assert split_for_arrow(scan.residual.expr)[1] is None
    assert sorted(scan.to_arrow(columns=["user_id"]).column("user_id").to_pylist()) == [3, 3, 4, 4, 5, 5]


def test_like_escapes_become_arrows_backslash() -> None:
    schema = [("s", "string")]
    table = ds.dataset(pa.table({"s": ["a%b", "axb", "a\\b", "a!b", "a_b", None]}))

    def matching(text: str) -> list[str]:
        expression = to_arrow_expression(bind(sg.parse(text), schema))
        return table.to_table(filter=expression).column("s").to_pylist()

    assert matching("s like 'a!%b' escape '!'") == ["a%b"]
    assert matching("s like 'a!!b' escape '!'") == ["a!b"]
    assert matching("s like 'a\\b'") == ["a\\b"]
    assert matching("s like 'a_b'") == ["a%b", "axb", "a\\b", "a!b", "a_b"]
    assert matching("s like 'a#_b' escape '#'") == ["a_b"]


# -- each reader -----------------------------------------------------------------------------------------------------

EVENTS_COLUMNS = [("user_id", "bigint"), ("amount", "double"), ("country", "string"), ("payload", "binary")]
EVENTS_KEYS = [("ds", "date"), ("hr", "int")]


@pytest.fixture
def events(metastore: Metastore, tmp_path: Path) -> sg.Table:
    """`db.events`: two days x hours 1, 2 and NULL, two files a partition, 6 users, a big `payload` column."""
    rows = []
    for day, hr, user in itertools.product((dt.date(2024, 1, 1), dt.date(2024, 1, 2)), (1, 2, None), range(6)):
        amount = math.nan if user == 5 else (None if user == 4 else float(user * 10))
        country = "US" if user % 2 else "DE"
        rows.append({"user_id": user, "amount": amount, "country": country, "payload": os.urandom(20_000), "ds": day,
                     "hr": hr})
    write_table(metastore, tmp_path, Drawn(EVENTS_KEYS, EVENTS_COLUMNS, rows, from_folders=False), name="events")
    return metastore.table("db.events")


class RecordingFiles(pafs.FileSystemHandler):
    """The local file system, recording the byte ranges read of each file opened for reading."""

    def __init__(self) -> None:
        self.local = pafs.LocalFileSystem()
        self.reads: dict[str, list[tuple[int, int]]] = {}

    def open_input_file(self, path: str) -> Any:
        reads = self.reads.setdefault(path, [])

        class Recorded(io.FileIO):
            def read(self, size: int = -1) -> bytes:
                start = self.tell()
                data = super().read(size)
                reads.append((start, start + len(data)))
                return data

        return pa.PythonFile(Recorded(path, "rb"), mode="r")

    def open_input_stream(self, path: str) -> Any:
        return self.open_input_file(path)

    def get_type_name(self) -> str:
        return "recording"

    def equals(self, other: Any) -> bool:
        return other is self

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return self.local.get_file_info(paths)

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        return self.local.get_file_info(selector)

    def normalize_path(self, path: str) -> str:
        return path

    def create_dir(self, path: str, recursive: bool) -> None:
        raise NotImplementedError

    def delete_dir(self, path: str) -> None:
        raise NotImplementedError

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        raise NotImplementedError

    def delete_root_dir_contents(self) -> None:
        raise NotImplementedError

    def delete_file(self, path: str) -> None:
        raise NotImplementedError

    def move(self, src: str, dest: str) -> None:
        raise NotImplementedError

    def copy_file(self, src: str, dest: str) -> None:
        raise NotImplementedError

    def open_output_stream(self, path: str, metadata: Any = None) -> Any:
        raise NotImplementedError

    def open_append_stream(self, path: str, metadata: Any = None) -> Any:
        raise NotImplementedError


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> RecordingFiles:
    """Reads go through `RecordingFiles` (the readers open files through `sargable.fs.FileSystem`)."""
    handler = RecordingFiles()
    real = readers.FileSystem.at

    def at(location: str) -> Any:
        found = real(location)
        return dataclasses.replace(found, fs=pafs.PyFileSystem(handler))

    monkeypatch.setattr(readers.FileSystem, "at", staticmethod(at))
    return handler


def _chunk_ranges(path: str, column: str) -> list[tuple[int, int]]:
    """The byte ranges of a column's chunks in a Parquet file."""
    metadata = pq.ParquetFile(path).metadata
    index = metadata.schema.names.index(column)
    ranges = []
    for group in range(metadata.num_row_groups):
        chunk = metadata.row_group(group).column(index)
        start = chunk.dictionary_page_offset or chunk.data_page_offset
        ranges.append((start, start + chunk.total_compressed_size))
    return ranges


def _touched(path: str, reads: list[tuple[int, int]], ranges: list[tuple[int, int]]) -> bool:
    """Whether a read other than the footer's overlaps the ranges (Arrow reads a file's last 64 KiB at once to find
    its footer, whatever columns it holds)."""
    size = os.path.getsize(path)
    return any(start < high and low < end for start, end in reads if end != size for low, high in ranges)


def test_projection_reads_only_the_asked_columns(events: sg.Table, recording: RecordingFiles) -> None:
    """No byte of the big column not asked for is read (Arrow coalesces reads of small neighbouring chunks)."""
    scan = events.scan("hr = 1 and country = 'US'")
    result = scan.to_arrow(columns=["user_id", "hr"])
    assert result.column_names == ["user_id", "hr"]
    assert sorted(result.column("user_id").to_pylist()) == [1, 1, 3, 3, 5, 5]
    assert set(recording.reads) == {f.path for f in scan.files} and len(scan.files) == 2, "statistics skip DE files"
    for path, reads in recording.reads.items():
        assert _touched(path, reads, _chunk_ranges(path, "user_id"))
        assert _touched(path, reads, _chunk_ranges(path, "country")), "the filter's column is read"
        assert not _touched(path, reads, _chunk_ranges(path, "payload"))


def test_columns_the_evaluator_needs_are_read_and_dropped(events: sg.Table, recording: RecordingFiles) -> None:
    scan = events.scan("lower(country) = 'us' and ds = '2024-01-02'", columns=["user_id"])
    result = scan.to_arrow()
    assert result.column_names == ["user_id"]
    assert sorted(result.column("user_id").to_pylist()) == [1, 1, 1, 3, 3, 3, 5, 5, 5]
    for path, reads in recording.reads.items():
        assert _touched(path, reads, _chunk_ranges(path, "country"))
        assert not _touched(path, reads, _chunk_ranges(path, "payload"))


def test_reading_every_column_reads_the_big_one(events: sg.Table, recording: RecordingFiles) -> None:
    """The recording sees a column's reads (so the projection tests above can fail)."""
    scan = events.scan("hr = 1")
    assert scan.to_arrow().num_rows == 12
    assert all(_touched(path, reads, _chunk_ranges(path, "payload")) for path, reads in recording.reads.items())


def test_null_partitions_are_nulls_of_the_key_type(events: sg.Table) -> None:
    scan = events.scan("hr is null", columns=["user_id", "ds", "hr"])
    result = scan.to_arrow()
    assert result.schema.field("hr").type == pa.int32() and result.schema.field("ds").type == pa.date32()
    assert result.num_rows == 12 and result.column("hr").null_count == 12
    assert events.scan("not (hr = 1)").to_arrow().column("hr").to_pylist() == [2] * 12
    fragments = list(scan.to_dataset().get_fragments())
    assert len(fragments) == 4
    assert all(str(f.partition_expression).endswith("is_null(hr, {nan_is_null=false}))") for f in fragments)


def test_empty_results_keep_the_schema(events: sg.Table) -> None:
    none = events.scan("ds = '2030-01-01'", columns=["amount", "ds"])
    assert none.files == ()
    assert list(none.to_batches()) == []
    assert none.to_arrow().schema == pa.schema([("amount", pa.float64()), ("ds", pa.date32())])
    assert list(none.to_pandas().columns) == ["amount", "ds"]
    read = events.scan("lower(country) = 'fr'")
    assert read.files and read.to_arrow().num_rows == 0
    assert read.to_arrow().schema.names == ["user_id", "amount", "country", "payload", "ds", "hr"]
    assert read.to_arrow().schema.field("payload").type == pa.binary()


def test_nan_is_above_every_number_when_reading(events: sg.Table) -> None:
    rows = events.scan("amount > 30 and ds = '2024-01-01' and hr = 1", columns=["user_id", "amount"]).to_arrow()
    assert rows.column("user_id").to_pylist() == [5]
    assert all(math.isnan(v) for v in rows.column("amount").to_pylist())


def test_batches_hold_at_most_batch_rows(events: sg.Table) -> None:
    scan = events.scan("country = 'DE'")
    batches = list(scan.to_batches(["user_id", "hr"], batch_rows=2))
    assert batches and all(0 < b.num_rows <= 2 for b in batches)
    assert sum(b.num_rows for b in batches) == 18
    with pytest.raises(SargableError, match="batch_rows"):
        list(scan.to_batches(batch_rows=0))
    with pytest.raises(SargableError, match="unknown columns"):
        scan.to_arrow(columns=["nope"])
    assert scan.to_arrow(columns=["USER_ID"]).column_names == ["user_id"]


def test_to_dataset_is_exactly_the_files_with_their_partitions(events: sg.Table) -> None:
    scan = events.scan("ds = '2024-01-02' and hr > 1")
    assert scan.residual is None
    dataset = scan.to_dataset()
    fragments = sorted(dataset.get_fragments(), key=lambda f: f.path)
    assert [f.path for f in fragments] == sorted(f.path for f in scan.files) and len(fragments) == 2
    expected = (pc.field("ds") == pc.scalar(pa.scalar(dt.date(2024, 1, 2), pa.date32()))) & (
        pc.field("hr") == pc.scalar(pa.scalar(2, pa.int32()))
    )
    assert all(f.partition_expression.equals(expected) for f in fragments)
    assert dataset.to_table(filter=pc.field("hr") == 1).num_rows == 0, "the partition expressions prune"
    assert multiset(arrow_rows(dataset.to_table())) == multiset(arrow_rows(scan.to_arrow()))


def test_to_dataset_applies_the_residual(events: sg.Table) -> None:
    scan = events.scan("ds = '2024-01-02' and hr > 1 and (amount < 25 or amount is null)")
    dataset = scan.to_dataset()
    assert sorted(dataset.to_table(columns=["user_id"]).column("user_id").to_pylist()) == [0, 1, 2, 4]
    assert multiset(arrow_rows(dataset.to_table())) == multiset(arrow_rows(scan.to_arrow()))
    with pytest.raises(SargableError, match="no Arrow form"):
        events.scan("lower(country) = 'us'").to_dataset()


def test_to_duckdb_pushes_duckdbs_own_filter_and_projection(events: sg.Table) -> None:
    scan = events.scan("ds = '2024-01-01' and user_id < 4")
    con = scan.to_duckdb(duckdb.connect(), "ev")
    rows = con.execute("SELECT hr, count(*) FROM ev WHERE country = 'US' GROUP BY hr ORDER BY hr").fetchall()
    assert rows == [(1, 2), (2, 2), (None, 2)]
    fallback = events.scan("lower(country) = 'us' and ds = '2024-01-01'").to_duckdb(name="us")
    assert fallback.execute("SELECT count(*), min(user_id) FROM us").fetchall() == [(9, 1)]
    assert fallback.execute("SELECT DISTINCT country FROM us").fetchall() == [("US",)]
    with pytest.raises(SargableError, match="duckdb connection"):
        scan.to_duckdb("not a connection", "ev")


def test_to_polars_is_lazy_and_exact(events: sg.Table) -> None:
    pl = pytest.importorskip("polars")
    lazy = events.scan("hr = 2").to_polars()
    assert isinstance(lazy, pl.LazyFrame)
    frame = lazy.filter(pl.col("country") == "US").select("user_id", "ds").collect()
    assert sorted(frame["user_id"].to_list()) == [1, 1, 3, 3, 5, 5] and frame.width == 2
    fallback = events.scan("lower(country) = 'us' and hr = 2").to_polars()
    assert sorted(fallback.select("user_id").collect()["user_id"].to_list()) == [1, 1, 3, 3, 5, 5]
    assert fallback.filter(pl.col("user_id") > 1).head(3).collect().height == 3


def test_a_missing_extra_is_named(events: sg.Table, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "polars", None)
    monkeypatch.setitem(sys.modules, "duckdb", None)
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(SargableError, match=r"pip install 'sargable\[pandas\]'"):
        events.scan().to_pandas()
    with pytest.raises(SargableError, match=r"pip install 'sargable\[polars\]'"):
        events.scan().to_polars()
    with pytest.raises(SargableError, match=r"pip install 'sargable\[duckdb\]'"):
        events.scan().to_duckdb()


def test_ranged_key_sets_are_applied_by_value(events: sg.Table) -> None:
    """A key set of more values than the residual lists is there only as its range: the reader applies the values."""
    evens = sg.KeySet("user_id", values=frozenset(range(0, 3000, 2)))
    scan = events.scan("hr = 1", key_sets=[evens])
    assert scan.ranged_keys == ("user_id",)
    assert sorted(set(scan.to_arrow(columns=["user_id"]).column("user_id").to_pylist())) == [0, 2, 4]


def test_a_file_that_cannot_be_read_is_an_error_naming_it(events: sg.Table, tmp_path: Path) -> None:
    scan = events.scan("hr = 2 and ds = '2024-01-01'")
    gone = scan.files[0].path
    os.remove(gone)
    with pytest.raises(SargableError, match=f"reading db.events: .*{re.escape(gone)}"):
        scan.to_arrow()
    Path(gone).write_bytes(b"not parquet")
    with pytest.raises(SargableError, match=r"reading db\.events: .*Parquet"):
        scan.to_arrow()


def test_to_pandas(events: sg.Table) -> None:
    frame = events.scan("hr = 1 and user_id = 2", columns=["user_id", "amount", "ds"]).to_pandas()
    assert frame.shape == (2, 3) and frame["amount"].tolist() == [20.0] * 2


def test_timestamps_as_spark_writes_them_read_as_utc_wall_clock(metastore: Metastore, tmp_path: Path) -> None:
    """Spark's INT96 (legacy) and instant (UTC-adjusted) timestamps read as naive UTC wall-clock times, as file
    statistics take them; a file registered outside the table's folder is read too."""
    metastore.create_database("db", if_not_exists=True)
    metastore.create_table("db", "ts", [("t", "timestamp")], [("p", "int")], location=str(tmp_path / "ts"))
    when = dt.datetime(1500, 3, 1, 12, 30, 15, 250)
    files = []
    for p, (folder, options) in enumerate(
        [(tmp_path / "ts" / "p=0", {"use_deprecated_int96_timestamps": True}), (tmp_path / "elsewhere", {})]
    ):
        folder.mkdir(parents=True)
        path = str(folder / "f.parquet")
        column = pa.array([when.replace(tzinfo=dt.UTC)], pa.timestamp("us", tz="UTC"))
        pq.write_table(pa.table({"t": column}), path, **options)
        files.append(sg.FileStats(path, row_count=1, size_bytes=os.path.getsize(path), partition={"p": p}))
    metastore.commit("db", "ts", add_files=files)
    result = metastore.table("db.ts").scan("t = '1500-03-01 12:30:15.00025'").to_arrow()
    assert result.column("t").type == pa.timestamp("us")
    assert sorted(zip(result.column("p").to_pylist(), result.column("t").to_pylist(), strict=True)) == [
        (0, when), (1, when)
    ]


# -- sargable head ----------------------------------------------------------------------------------------------------


def _head(capsys: pytest.CaptureFixture[str], url: str, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["--metastore", url, "head", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def events_url(events: sg.Table, metastore_url: str) -> str:
    return metastore_url


def test_head_prints_the_first_rows_as_a_table(events_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _head(capsys, events_url, "db.events", "hr = 2 and user_id < 2", "--columns", "user_id,amount,ds")
    assert code == 0
    assert "db.events (first 4 rows)" in out
    assert re.search(r"user_id\s*┃\s*amount\s*┃\s*ds", out)
    assert len(re.findall(r"2024-01-0[12]", out)) == 4 and "payload" not in out
    code, out, _ = _head(capsys, events_url, "db.events", "-n", "3", "--columns", "hr")
    assert code == 0 and "(first 3 rows)" in " ".join(out.split()) and out.count("NULL") == 3, "NULL partitions first"


def test_head_json_is_one_document(events_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _head(capsys, events_url, "db.events", "user_id >= 4 and hr = 1 and ds = '2024-01-02'", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["table"] == "db.events" and data["columns"] == ["user_id", "amount", "country", "payload", "ds", "hr"]
    assert [(r["user_id"], r["amount"], r["ds"], r["hr"]) for r in data["rows"]] == [
        (4, None, "2024-01-02", 1), (5, "NaN", "2024-01-02", 1)
    ]
    assert len(base64.b64decode(data["rows"][0]["payload"])) == 20_000


def test_head_writes_csv_and_parquet(events_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = _head(capsys, events_url, "db.events", "hr is null", "--columns", "ds,user_id,amount", "--csv")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "ds,user_id,amount" and len(lines) == 13
    assert sorted(lines[1:7]) == ["2024-01-01,0,0.0", "2024-01-01,1,10.0", "2024-01-01,2,20.0", "2024-01-01,3,30.0",
                                  "2024-01-01,4,", "2024-01-01,5,NaN"]
    target = tmp_path / "rows.parquet"
    code, out, _ = _head(capsys, events_url, "db.events", "country = 'US'", "-n", "5", "--parquet", str(target))
    assert code == 0 and f"wrote 5 rows of db.events to {target}" in out
    written = pq.read_table(target)
    assert written.num_rows == 5 and set(written.column("country").to_pylist()) == {"US"}
    assert written.schema.field("hr").type == pa.int32()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["db.events", "--columns", "nope"], "unknown columns ['nope']"),
        (["db.events", "-n", "-1"], "-n must be 0 or more"),
        (["db.events", "--columns", " , "], "--columns names no column"),
        (["db.events", "hr = 'x'"], "hr"),
        (["db.nope"], "nope"),
    ],
)
def test_head_refuses_bad_input_with_one_line(
    events_url: str, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = _head(capsys, events_url, *argv)
    assert code == 1 and out == "" and err.startswith("error: ") and message in err


def test_head_with_no_rows_prints_the_columns(events_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _head(capsys, events_url, "db.events", "ds = '2030-01-01'", "--json")
    assert code == 0 and json.loads(out)["rows"] == []
    code, out, _ = _head(capsys, events_url, "db.events", "-n", "0", "--columns", "user_id")
    assert code == 0 and "(first 0 rows)" in " ".join(out.split()) and "user_id" in out


def test_an_unpartitioned_table_reads_the_files_of_its_location(metastore: Metastore, tmp_path: Path) -> None:
    location = tmp_path / "flat"
    location.mkdir()
    metastore.create_database("db", if_not_exists=True)
    metastore.create_table("db", "flat", [("n", "int")], location=str(location), files_from_folders=True)
    for part in range(2):
        path = str(location / f"part-{part}.parquet")
        pq.write_table(pa.table({"n": pa.array([part * 10, part * 10 + 1], pa.int32())}), path)
    scan = metastore.table("db.flat").scan("n > 0")
    assert sorted(scan.to_arrow().column("n").to_pylist()) == [1, 10, 11]
    assert [str(f.partition_expression) for f in metastore.table("db.flat").scan().to_dataset().get_fragments()] == [
        "true", "true"
    ]


def test_select_files_lays_out_only_the_columns_the_predicate_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planning a data-column filter over many files built every column's statistics (partition keys included, one
    record per file and column): only the predicate's columns are built now, and the answer is the same."""
    from sargable.skipping import table as stats_table

    schema = [("user_id", "bigint"), ("amount", "double"), ("country", "string"), ("ds", "date"), ("hr", "int")]
    files = [
        sg.FileStats(f"f{i}", row_count=10, size_bytes=1, partition={"ds": dt.date(2024, 1, 1), "hr": i % 24},
                     columns={"user_id": sg.ColumnStats(min=i * 10, max=i * 10 + 9, null_count=0),
                              "amount": sg.ColumnStats(min=0.0, max=1.0, null_count=0)})
        for i in range(100)
    ]
    built: list[str] = []
    real = stats_table.column_stats

    def counted(file: Any, name: str) -> Any:
        built.append(name)
        return real(file, name)

    monkeypatch.setattr(stats_table, "column_stats", counted)
    assert [f.path for f in sg.select_files("user_id between 415 and 432", files, schema)] == ["f41", "f42", "f43"]
    assert set(built) == {"user_id"} and len(built) == 100
    built.clear()
    assert len(sg.select_files("user_id < 20 or hr = 5", files, schema)) == 6
    assert set(built) == {"user_id", "hr"}
