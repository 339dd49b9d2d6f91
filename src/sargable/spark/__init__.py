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
statistics on write, the data source's planning and reads) travels with sargable's source (`ship`), and this
package loads its modules on first use, so a worker imports only what it runs. Modules: `reader`
(`read`), `join`, `dimensions` (collecting join keys), `frames` (the DataFrame of a scan), `translate` (Spark
filters to expressions), `datasource`, `writer`, `optimize`, `schema`, `catalog`, `session`, `cluster`, `demo`.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

if importlib.util.find_spec("pyspark") is None:
    raise ImportError("sargable.spark needs pyspark: pip install 'sargable[spark]'", name="pyspark")

_EXPORTS = {
    "JoinScanReport": "sargable.spark.dimensions",
    "KeyPruning": "sargable.spark.dimensions",
    "OptimizeResult": "sargable.spark.optimize",
    "ScanReport": "sargable.scan",
    "WriteResult": "sargable.spark.writer",
    "join": "sargable.spark.join",
    "local_session": "sargable.spark.session",
    "optimize": "sargable.spark.optimize",
    "read": "sargable.spark.reader",
    "register": "sargable.spark.datasource",
    "scan_report": "sargable.spark.reader",
    "vacuum": "sargable.spark.writer",
    "write": "sargable.spark.writer",
}
"""Where each public name lives. They load on first use (PEP 562), so a Python worker that unpickles one of the
data source's objects imports that object's module only, not the driver's progress bars (`rich`) with it."""

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sargable.spark' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
