"""A local SparkSession set up for sargable (tests, the demo, benchmarks): modest memory, no UI, pushdown on."""

from __future__ import annotations

import os
import sys
from typing import Any

DEFAULT_CONF = {
    "spark.driver.memory": "2g",
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "true",
    "spark.sql.python.filterPushdown.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
}


def local_session(app_name: str = "sargable", master: str = "local[2]", **conf: Any) -> Any:
    """Get or create a SparkSession; Python workers use this interpreter (so they can import sargable).

    Extra `conf` entries are Spark settings that override the defaults, e.g.
    `local_session(**{"spark.driver.memory": "4g"})`.
    """
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**DEFAULT_CONF, **conf}.items():
        builder = builder.config(key, str(value))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
