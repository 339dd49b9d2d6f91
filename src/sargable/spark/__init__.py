"""sargable for PySpark: `write` and `read` partitioned tables through the metastore, and the `sargable` data source.

    from sargable import spark as sgs
    spark = sgs.local_session()                     # or any SparkSession (workers need pyspark, pyarrow)
    sgs.write(df, "sales.events", partition_by=["ds", "hr"], mode="append")     # or "overwrite"
    df = sgs.read(spark, "sales.events", where="ds >= '2024-01-01' and amount > 100")
    sgs.scan_report(df)                              # partitions/files/bytes total vs selected, planning time
    spark.read.format("sargable").load("sales.events").where("ds = '2024-01-02'")   # the data source
    sgs.vacuum("sales.events")                       # files left behind by failed writes (dry run)
    sgs.read(spark, "sales.events", prune_by=[(dim_df, "d_date", "ds")])        # pruned by a dimension's keys
    sgs.join("sales.events", dim_df, on=[("ds", "d_date")], how="inner")        # Spark's join over that read
    sgs.optimize(spark, "sales.events", cluster_by=["user_id", "event_time"])   # compact + cluster, atomic commits

This is the only part of sargable that imports pyspark. Executors need pyspark[sql] only: what runs there (footer
statistics on write, the data source's planning and reads) travels with sargable's source (`ship`), and no module
of this package imports rich at its top (the driver's progress bars import it where they are drawn). Modules: `reader`
(`read`), `join`, `dimensions` (collecting join keys), `frames` (the DataFrame of a scan), `translate` (Spark
filters to expressions), `datasource`, `writer`, `optimize`, `schema`, `catalog`, `session`, `cluster`, `demo`.
"""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("pyspark") is None:
    raise ImportError("sargable.spark needs pyspark: pip install 'sargable[spark]'", name="pyspark")

from sargable.scan import ScanReport
from sargable.spark.datasource import register
from sargable.spark.dimensions import JoinScanReport, KeyPruning
from sargable.spark.join import join
from sargable.spark.optimize import OptimizeResult, optimize
from sargable.spark.reader import read, scan_report
from sargable.spark.session import local_session
from sargable.spark.writer import WriteResult, vacuum, write

__all__ = [
    "JoinScanReport",
    "KeyPruning",
    "OptimizeResult",
    "ScanReport",
    "WriteResult",
    "join",
    "local_session",
    "optimize",
    "read",
    "register",
    "scan_report",
    "vacuum",
    "write",
]
