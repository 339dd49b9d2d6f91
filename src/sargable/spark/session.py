"""SparkSessions set up for sargable (tests, the demo, benchmarks), and what differs between classic and Connect.

`local_session` starts (or returns) a classic session: local, or on a cluster with `master="spark://host:port"`;
its Python workers (executors) run the driver's interpreter unless `PYSPARK_PYTHON` says otherwise.
`remote_session` connects to a Spark Connect server. The helpers below let the pipeline run on both kinds of
session (a Connect session has no `SparkContext`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

DEFAULT_CONF = {
    "spark.driver.memory": "2g",
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.sql.python.filterPushdown.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
}
_CONNECT_PARALLELISM = 8
"""Spread of a job from a Connect session, which can't ask the cluster for its default parallelism."""


def local_session(
    app_name: str = "sargable", master: str = "local[2]", *, log: str | os.PathLike | None = None, **conf: Any
) -> Any:
    """Get or create a SparkSession; Python workers use this interpreter (so they can import sargable).

    Extra `conf` entries are Spark settings that override the defaults, e.g.
    `local_session(**{"spark.driver.memory": "4g"})`. On a cluster (`master="spark://host:7077"`) the executors
    start `PYSPARK_PYTHON`, this interpreter unless set: it must exist at that path on every worker.
    `log` names a file (appended to) that takes the JVM's console output, its start-up warnings, log lines and
    stage progress bars, so that they stay out of this program's terminal; without it they go to stderr.
    """
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    settings = {**DEFAULT_CONF, "spark.ui.showConsoleProgress": str(log is None).lower(), **conf}
    for key, value in settings.items():
        builder = builder.config(key, str(value))
    with _stderr_to(log):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@contextmanager
def _stderr_to(log: str | os.PathLike | None) -> Iterator[None]:
    """Point file descriptor 2 at `log` inside the block, so that a JVM started there writes its stderr to it."""
    if log is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(log, "ab") as target:
            os.dup2(target.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def remote_session(url: str, **conf: Any) -> Any:
    """A Spark Connect session on the server at `url` (`sc://host:port`), session time zone UTC.

    Needs `pip install 'sargable[connect]'`. Note that pyspark then marks this whole Python process as a Connect
    client: a classic session can't be used in the same process afterwards.
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.remote(url)
    for key, value in {"spark.sql.session.timeZone": "UTC", **conf}.items():
        builder = builder.config(key, str(value))
    return builder.getOrCreate()


def is_connect(spark: Any) -> bool:
    """Whether `spark` is a Spark Connect session (no SparkContext, no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def parallelism(spark: Any) -> int:
    """The default parallelism of a classic session's cluster; a fixed spread for a Connect session."""
    if is_connect(spark):
        return _CONNECT_PARALLELISM
    return int(spark.sparkContext.defaultParallelism)


@contextmanager
def job_description(spark: Any, text: str) -> Iterator[None]:
    """Name the Spark jobs started inside the block (shown in the Spark UI); nothing on a Connect session."""
    if is_connect(spark):
        yield
        return
    sc = spark.sparkContext
    sc.setJobDescription(text)
    try:
        yield
    finally:
        sc.setJobDescription(None)
