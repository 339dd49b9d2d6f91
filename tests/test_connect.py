"""sargable from a Spark Connect session, against the Spark Connect server that ships with pyspark.

The `connect_server` fixture starts the server (over local[2]) on 127.0.0.1; a driver subprocess connects with
`SparkSession.builder.remote(...)` and runs `sgs.write`, `sgs.read` (filter text and a pyspark Column), the
`sargable` data source and `vacuum`. Every result is compared with the local[2] session reading the same table.
What does not work from Connect is asserted here too (see docs/deployment.md#spark-connect).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.register_assert_rewrite("spark_cluster")
from spark_cluster import FILTERS, create_orders, finish, kill, rows_for, run_driver  # noqa: E402

pytest_plugins = ["conftest_spark", "spark_cluster"]

DAYS = ["2024-01-01", "2024-01-02", "2024-01-03"]
DOCS = Path(__file__).resolve().parent.parent / "docs" / "deployment.md"


@pytest.fixture(scope="module")
def connect_run(connect_server, tmp_path_factory):
    """The Connect driver's results and the metastore URL (a SQLite file both the driver and the server reach).

    The example of docs/deployment.md runs at the same time, in its own process, on the same server.
    """
    root = tmp_path_factory.mktemp("connect-warehouse")
    url = f"sqlite:///{root / 'metastore.db'}"
    create_orders(url, root)
    docs = _start_docs_example(connect_server.url, tmp_path_factory.mktemp("connect-docs"))
    args = {"url": connect_server.url, "metastore": url, "table": "sales.orders", "days": DAYS}
    try:
        result = finish(run_driver("connect", args))
        docs_out, docs_err = docs.communicate(timeout=300)
    finally:
        kill(docs)
    return result, url, (docs.returncode, docs_out, docs_err)


def _local(spark, url, where):
    from sargable import spark as sgs
    from spark_cluster import canonical

    df = sgs.read(spark, "sales.orders", where=where, metastore=url)
    return canonical(df.collect()), sgs.scan_report(df)


def test_write_from_connect(connect_run):
    from sargable.metastore import Metastore

    result, url, _ = connect_run
    assert result["connect"] is True
    assert "error" not in result["write"], result["write"]
    written = result["write"]["ok"]
    assert written["rows"] == len(rows_for(DAYS))
    assert written["partitions"] == len(DAYS) * 2
    with Metastore.open(url) as ms:
        stats = ms.table_stats("sales", "orders")
        files = ms.list_files("sales", "orders")
    assert (stats.rows, stats.files, stats.partitions) == (written["rows"], written["files"], written["partitions"])
    assert all(f.columns for f in files)  # footer statistics were read (by the server's Python workers)


def test_read_from_connect_equals_local(connect_run, spark):
    result, url, _ = connect_run
    assert "error" not in result["reads"], result["reads"]
    reads = result["reads"]["ok"]
    assert [r["where"] for r in reads] == FILTERS
    for read in reads:
        rows, report = _local(spark, url, read["where"])
        assert read["rows"] == rows, read["where"]
        assert read["files"] == report.files_selected, read["where"]
    assert len(reads[0]["rows"]) == len(rows_for(DAYS))


def test_column_filter_from_connect_prunes_like_text(connect_run, spark):
    """A Connect Column is translated on the client: it selects the files of the same filter as text."""
    result, url, _ = connect_run
    assert "error" not in result["column_read"], result["column_read"]
    read = result["column_read"]["ok"]
    rows, report = _local(spark, url, "ds = '2024-01-02' and store = 1")
    assert read["rows"] == rows and rows
    assert read["files"] == report.files_selected
    _, everything = _local(spark, url, None)
    assert read["files"] < everything.files_selected
    assert not [note for note in read["notes"] if "without pruning" in note]


def test_untranslatable_conjunct_from_connect_is_applied_by_spark(connect_run, spark):
    """The conjuncts sargable can't translate go back to Spark as Connect Columns; the others still prune."""
    from pyspark.sql import functions as F

    result, url, _ = connect_run
    assert "error" not in result["mixed_column_read"], result["mixed_column_read"]
    read = result["mixed_column_read"]["ok"]
    where = (F.col("ds") >= dt.date(2024, 1, 2)) & (F.upper("name") == "A3") & F.col("name").startswith("a")
    rows, _ = _local(spark, url, where)
    _, pruned = _local(spark, url, "ds >= '2024-01-02' and name like 'a%'")
    assert read["rows"] == rows and rows
    assert read["files"] == pruned.files_selected
    unpruned = [note for note in read["notes"] if "without pruning" in note]
    assert len(unpruned) == 1 and "upper" in unpruned[0]


def test_data_source_from_connect(connect_run, spark):
    result, url, _ = connect_run
    assert "error" not in result["data_source"], result["data_source"]
    rows, _ = _local(spark, url, "ds = '2024-01-02' and amount > 50")
    assert result["data_source"]["ok"]["rows"] == rows and rows


def test_join_pruning_from_connect(connect_run, spark):
    result, url, _ = connect_run
    assert "error" not in result["prune_by"], result["prune_by"]
    rows, _ = _local(spark, url, "store = 2 and ds in ('2024-01-02', '2024-01-03')")
    assert result["prune_by"]["ok"] == {"rows": rows, "partitions": 2}


def test_read_of_more_files_than_the_listing_threshold_from_connect(connect_run, spark):
    """Past Spark's listing threshold a local read goes through a temporary manifest; from Connect, whose server
    resolves the read after `sgs.read` returns, the files go as paths and the rows are all there."""
    result, url, _ = connect_run
    assert "error" not in result["many_files"], result["many_files"]
    rows, report = _local(spark, url, None)
    assert result["many_files"]["ok"] == {"rows": rows, "files": report.files_selected}
    assert report.files_selected > 1


def test_vacuum_after_connect_write(connect_run):
    result, _, _ = connect_run
    assert result["vacuum"] == {"ok": []}


def _docs_script() -> str:
    """The Python program of the Spark Connect example in docs/deployment.md (a bash heredoc)."""
    text = DOCS.read_text()
    section = text[text.index("### Spark Connect") :]
    match = re.search(r"python - <<'EOF'\n(.*?)\nEOF\n", section, re.S)
    assert match, "docs/deployment.md#spark-connect has no `python - <<'EOF'` example"
    return match.group(1)


def _start_docs_example(url: str, directory: Path) -> subprocess.Popen:
    script = _docs_script().replace("sc://127.0.0.1:15002", url)
    env = dict(os.environ, SARGABLE_METASTORE=f"sqlite:///{directory / 'metastore.db'}")
    env["SARGABLE_WAREHOUSE"] = str(directory / "warehouse")
    for variable in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE"):
        env.pop(variable, None)
    return subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=directory,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def test_docs_example_runs(connect_run):
    _, _, (returncode, out, err) = connect_run
    assert returncode == 0, err[-4000:]
    assert out.splitlines() == _docs_output()


def _docs_output() -> list[str]:
    """The output shown after the Spark Connect example."""
    section = DOCS.read_text().split("### Spark Connect", 1)[1]
    match = re.search(r"\nEOF\n[^`]*```\n\nprints\n\n```text\n(.*?)\n```", section, re.S)
    assert match, "docs/deployment.md#spark-connect shows no output of its example"
    return match.group(1).splitlines()
