"""PyIceberg's `HiveCatalog`, a second real client of `sargable serve`: an Iceberg table (warehouse on local disk) is
created, appended to, overwritten, evolved, renamed and dropped through the server on both backends; its commits run
under the server's HMS locks, so concurrent appenders lose no commit."""

from __future__ import annotations

import contextlib
import io
import threading
from pathlib import Path

import pytest

from hms_server import SargableServe
from metastore_fixtures import BACKENDS, fresh_url
from test_docs import blocks_of

pytest.importorskip("pyiceberg.catalog.hive")
import pyarrow as pa
from pyiceberg.catalog.hive import HiveCatalog
from pyiceberg.exceptions import CommitFailedException, NoSuchTableError
from pyiceberg.schema import Schema
from pyiceberg.types import DoubleType, LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "name", StringType(), required=False),
)


@pytest.fixture(scope="module", params=BACKENDS)
def servers(request, tmp_path_factory):
    """Two servers over one metastore (and one warehouse)."""
    tmp = tmp_path_factory.mktemp(f"iceberg-{request.param}")
    postgres = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    url = fresh_url(request.param, tmp, postgres)
    first = SargableServe(tmp, url).start()
    try:
        second = SargableServe(tmp, url).start()
    except BaseException:
        first.stop()
        raise
    yield first, second
    assert [first.stop(), second.stop()] == [0, 0]


@pytest.fixture(scope="module")
def server(servers):
    return servers[0]


def _catalog(server: SargableServe) -> HiveCatalog:
    return HiveCatalog(
        "sargable",
        uri=server.uri,
        warehouse=f"file://{server.warehouse}",
        **{"lock-check-retries": "30", "lock-check-max-wait-time": "0.5"},
    )


def _rows(ids: range, name: str) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "name": pa.array([name] * len(ids), pa.string())})


DOC = Path(__file__).resolve().parent.parent / "docs" / "hms.md"


def test_doc_snippet(server):
    """The PyIceberg snippet of docs/hms.md, pointed at the test's server and warehouse."""
    code = next(b.text for b in blocks_of(DOC) if b.lang == "python" and "HiveCatalog(" in b.text)
    assert 'uri="thrift://127.0.0.1:9083"' in code and 'warehouse="file:///data/warehouse"' in code
    code = code.replace("thrift://127.0.0.1:9083", server.uri).replace("file:///data/warehouse", f"file://{server.warehouse}")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(DOC), "exec"), {})
    assert printed.getvalue().split() == ["2"]


def test_iceberg_table_life_cycle(server):
    catalog = _catalog(server)
    catalog.create_namespace("life")
    table = catalog.create_table("life.events", SCHEMA)
    assert ("life", "events") in catalog.list_tables("life")

    table.append(_rows(range(3), "a"))
    assert catalog.load_table("life.events").scan().to_arrow().num_rows == 3

    table.overwrite(_rows(range(10, 12), "b"))
    rows = catalog.load_table("life.events").scan().to_arrow()
    assert sorted(rows.column("id").to_pylist()) == [10, 11]

    with table.update_schema() as update:
        update.add_column("score", DoubleType())
    evolved = catalog.load_table("life.events")
    assert [f.name for f in evolved.schema().fields] == ["id", "name", "score"]
    evolved.append(_rows(range(20, 21), "c").append_column("score", pa.array([1.5], pa.float64())))
    scores = catalog.load_table("life.events").scan().to_arrow().sort_by("id").column("score").to_pylist()
    assert scores == [None, None, 1.5]

    catalog.rename_table("life.events", "life.renamed")
    with pytest.raises(NoSuchTableError):
        catalog.load_table("life.events")
    assert catalog.load_table("life.renamed").scan().to_arrow().num_rows == 3

    with catalog.create_table_transaction("life.staged", SCHEMA) as staged:
        staged.append(_rows(range(5), "s"))
    assert catalog.load_table("life.staged").scan().to_arrow().num_rows == 5

    for name in ("life.renamed", "life.staged"):
        catalog.drop_table(name)
        with pytest.raises(NoSuchTableError):
            catalog.load_table(name)
    assert catalog.list_tables("life") == []


def test_concurrent_appenders_lose_no_commit(servers):
    """Three appenders (each its own catalog and connection, through either of two servers over one metastore)
    append five batches each; a commit that loses the race to another is retried on the table's new metadata, as
    PyIceberg's users do. Every row lands exactly once."""
    server = servers[0]
    catalog = _catalog(server)
    catalog.create_namespace("race")
    catalog.create_table("race.t", SCHEMA)
    writers, batches, rows = 3, 5, 10
    errors: list[BaseException] = []
    start = threading.Barrier(writers)

    def appender(writer: int) -> None:
        mine = _catalog(servers[writer % 2])
        try:
            start.wait()
            for batch in range(batches):
                first = (writer * batches + batch) * rows
                while True:
                    try:
                        mine.load_table("race.t").append(_rows(range(first, first + rows), f"w{writer}"))
                        break
                    except CommitFailedException:
                        continue
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=appender, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    table = catalog.load_table("race.t")
    ids = table.scan().to_arrow().column("id").to_pylist()
    assert sorted(ids) == list(range(writers * batches * rows))
    assert len(table.snapshots()) == writers * batches
    calls = [line.split()[0] for serve in servers for line in serve.calls()]
    assert calls.count("lock") == calls.count("unlock") >= calls.count("alter_table_with_environment_context") > 0
