"""Which locations Spark's own (Hadoop) file systems can reach, and so which route a read or write takes.

Spark's native Parquet reader and writer go through Hadoop file systems. Object stores need Hadoop's
S3A connector (``hadoop-aws`` and the AWS SDK jars) on the driver and executors; the pyspark
distribution does not ship it and this project cannot fetch jars from Maven. So ``s3://`` (and
``s3a://`` / ``s3n://``) locations go through icefloe's own reader and writer inside Spark tasks
(``mapInArrow`` with icefloe's FileIO on the executors), while local and HDFS locations keep
Spark's native routes.
"""

from __future__ import annotations

from icefloe.io.fileio import split_scheme

HADOOP_SCHEMES = frozenset({"", "file", "hdfs"})
"""Schemes the Hadoop file systems bundled with pyspark read and write."""


def spark_native_storage(location: str) -> bool:
    """True when Spark's own Parquet reader and writer can reach ``location``."""
    return split_scheme(location)[0] in HADOOP_SCHEMES
