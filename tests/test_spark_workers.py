"""Workers need pyspark[sql], not sargable: a plain SparkSession whose Python workers can't import sargable (nor
its own dependencies such as rich) still writes (the footer job) and reads through the data source (its planning
and its reader).

The worker Python is this interpreter behind a `sitecustomize` that takes every `sys.path` entry holding sargable
away and refuses every installed package outside pyspark[sql]'s (pyspark, py4j, pyarrow, pandas, numpy and theirs),
as on a cluster node where only those are installed; the script checks that it can't import sargable or rich before
sargable ships anything to it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

HIDE = textwrap.dedent(
    """
    import importlib.machinery, os, sys
    sys.path[:] = [p for p in sys.path if not os.path.isdir(os.path.join(p or ".", "sargable"))]

    WORKER_PACKAGES = {"pyspark", "py4j", "pyarrow", "pandas", "numpy", "dateutil", "pytz", "tzdata", "six"}

    class OnlyPysparkSql:
        # Installed packages other than pyspark[sql]'s are absent on the worker (rich, psycopg, thrift, ...).
        def find_spec(self, name, path=None, target=None):
            top = name.partition(".")[0]
            if path is None and top not in WORKER_PACKAGES:
                spec = importlib.machinery.PathFinder.find_spec(top)
                if spec is not None and "site-packages" in (spec.origin or str(spec.submodule_search_locations)):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, OnlyPysparkSql())
    """
)

SCRIPT = textwrap.dedent(
    """
    import importlib.util, json, sys
    from pyspark.sql import SparkSession
    from pyspark.sql.functions import udf

    import sargable as sg
    from sargable import spark as sgs

    spark = (
        SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false").getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    has_sargable = udf(lambda _: importlib.util.find_spec("sargable") is not None, "boolean")
    before = spark.range(1).select(has_sargable("id")).first()[0]
    ms = sg.Metastore.open(f"sqlite:///{sys.argv[1]}/m.db", warehouse=sys.argv[1])
    rows = [(i, i % 3, float(i)) for i in range(60)]
    df = spark.createDataFrame(rows, "id long, hr int, amount double")
    written = sgs.write(df, "s.t", partition_by=["hr"], metastore=ms, progress=False)
    sgs.register(spark, ms)
    source = spark.read.format("sargable").load("s.t").where("hr = 1 and amount > 30")
    print(json.dumps({
        "worker_had_sargable": before,
        "files": written.files,
        "rows": written.rows,
        "stats": sorted(f.row_count for f in ms.table("s.t").files()),
        "read": sorted(r.id for r in source.collect()),
    }))
    """
)


def test_write_and_data_source_with_workers_without_sargable(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(HIDE)
    worker = tmp_path / "python"
    worker.write_text(f'#!/bin/sh\nPYTHONPATH="{site}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" "$@"\n')
    worker.chmod(0o755)
    for module in ("sargable", "rich"):
        hidden = subprocess.run([str(worker), "-c", f"import {module}"], capture_output=True, text=True, check=False)
        assert f"No module named '{module}'" in hidden.stderr
    present = subprocess.run([str(worker), "-c", "import pyspark.sql, pandas"], capture_output=True, check=False)
    assert present.returncode == 0, present.stderr
    env = {**os.environ, "PYSPARK_PYTHON": str(worker)}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, env=env, timeout=900, check=False
    )
    assert done.returncode == 0, done.stderr[-5000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["worker_had_sargable"] is False
    assert result["rows"] == 60 and sum(result["stats"]) == 60 and len(result["stats"]) == result["files"] >= 3
    assert result["read"] == [i for i in range(60) if i % 3 == 1 and i > 30]
