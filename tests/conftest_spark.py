"""Spark test fixtures (a pytest plugin: `pytest_plugins = ["conftest_spark"]`).

One local[2] SparkSession serves every Spark test of the run (starting the JVM costs seconds); each test module
gets its own metastore and warehouse directory. The session reads and writes `s3a://` paths on the test session's
S3 server (`s3_fixtures`), all on loopback (`SPARK_LOCAL_IP`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark(s3a_conf: dict[str, str]) -> Iterator[Any]:
    """The shared local[2] session: 2 GB driver, 4 shuffle partitions, no UI, UTC session time zone, s3a on the
    test S3 server."""
    pytest.importorskip("pyspark")
    from sargable.spark import local_session

    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    session = local_session("sargable-tests", **s3a_conf)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def spark_metastore(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A fresh SQLite metastore whose warehouse (table locations) is a temporary directory of this module."""
    from sargable.metastore import Metastore

    root = tmp_path_factory.mktemp("spark-warehouse")
    ms = Metastore.open(f"sqlite:///{root / 'metastore.db'}", warehouse=root)
    yield ms
    ms.close()
