"""Spark settings for tables on S3 (`s3a://`), through Hadoop's s3a connector.

pyspark does not bundle the connector: its two jars (hadoop-aws and the AWS SDK bundle it was built with) go on
the class path (`scripts/s3a-jars.sh` fetches hadoop-aws 3.3.1, the version found to run on pyspark 4.3's Hadoop
3.5). hadoop-aws 3.3.1 reads four durations that Hadoop 3.5's defaults spell with units (`"60s"`) as plain numbers
and fails on them, so they are given as numbers here.
"""

from __future__ import annotations

from collections.abc import Sequence

DURATIONS = {
    "spark.hadoop.fs.s3a.threads.keepalivetime": "60",
    "spark.hadoop.fs.s3a.connection.establish.timeout": "30000",
    "spark.hadoop.fs.s3a.connection.timeout": "200000",
    "spark.hadoop.fs.s3a.multipart.purge.age": "86400",
}
"""hadoop-aws 3.3.1's durations as plain numbers (seconds or milliseconds, as it reads them)."""


def s3a_settings(
    jars: Sequence[str],
    *,
    endpoint_url: str | None = None,
    access_key: str | None = None,
    secret_key: str | None = None,
) -> dict[str, str]:
    """Spark settings (for `SparkSession.builder.config` or `--conf`) that make `s3a://` paths work: the jars on
    the driver's and executors' class path, the durations above, and, when given, an S3-compatible endpoint
    (path-style, TLS as its URL says) and fixed credentials; without them s3a uses AWS's endpoint and its own
    credential chain (environment, profile, instance role)."""
    settings = {
        "spark.driver.extraClassPath": ":".join(jars),
        "spark.executor.extraClassPath": ":".join(jars),
        **DURATIONS,
    }
    if endpoint_url is not None:
        settings["spark.hadoop.fs.s3a.endpoint"] = endpoint_url
        settings["spark.hadoop.fs.s3a.path.style.access"] = "true"
        settings["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(endpoint_url.startswith("https:")).lower()
    if access_key is not None and secret_key is not None:
        settings["spark.hadoop.fs.s3a.access.key"] = access_key
        settings["spark.hadoop.fs.s3a.secret.key"] = secret_key
        settings["spark.hadoop.fs.s3a.aws.credentials.provider"] = (
            "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
        )
    return settings
