"""Build a SparkSession configured for icefloe and register the ``icefloe`` data source on it.

The session is pinned to UTC (SQL session time zone, JVM ``user.timezone`` and the Python workers'
``TZ``), has Arrow on, reads and writes Parquet field ids, writes ``TIMESTAMP_MICROS`` and registers
the ``icefloe`` Python data source; the settings themselves are ``runtime.RUNTIME_CONF`` /
``STATIC_CONF``. When icefloe's jar was built (``scripts/build_jar.py``) it goes on the session's
class path and streaming reads run on the JVM (``jvm_stream``), unless ``spark.icefloe.jvm.enabled``
is ``false``.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from icefloe.spark import jvm_stream
from icefloe.spark.datasource import datasource_class
from icefloe.spark.runtime import (
    CATALOG_CONF_PREFIX,
    RUNTIME_CONF,
    STATIC_CONF,
    UTC_JAVA_OPTS,
    catalog_properties,
    conf_string,
    get_conf,
    note_registered,
    try_set_conf,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

JVM_ENABLED_CONF = "spark.icefloe.jvm.enabled"
"""``false``: leave icefloe's jar off the session (streaming reads then go through Python)."""


def session(
    app_name: str = "icefloe",
    master: str = "local[2]",
    catalog_uri: str | None = None,
    warehouse: str | None = None,
    **conf: Any,
) -> SparkSession:
    """A SparkSession in UTC with Arrow, Parquet field ids and the icefloe data source registered.

    Extra Spark settings go in ``conf`` (``session(**{"spark.sql.shuffle.partitions": "4"})``);
    ``spark.driver.extraJavaOptions`` given there is kept and ``-Duser.timezone=UTC`` appended.
    """
    from pyspark.sql import SparkSession

    settings: dict[str, str] = {**STATIC_CONF, **RUNTIME_CONF}
    settings.update({k: conf_string(v) for k, v in conf.items()})
    if settings.get(JVM_ENABLED_CONF, "true").lower() != "false":
        settings.update(jvm_stream.classpath_settings(settings))
    for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
        opts = settings.get(key, "")
        if "user.timezone" not in opts:
            settings[key] = f"{opts} {UTC_JAVA_OPTS}".strip()
    if catalog_uri is not None:
        settings[CATALOG_CONF_PREFIX + "uri"] = catalog_uri
    if warehouse is not None:
        settings[CATALOG_CONF_PREFIX + "warehouse"] = warehouse

    # PySpark takes the worker interpreter from PYSPARK_PYTHON (default: "python3" on the PATH),
    # which may not see icefloe: use this interpreter unless the user chose one.
    python = os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if spark.sparkContext.pythonExec == "python3" and python != "python3":
        spark.sparkContext.pythonExec = python
    for key, value in settings.items():
        if key in RUNTIME_CONF or key.startswith(CATALOG_CONF_PREFIX) or key in conf:
            try_set_conf(spark, key, value)
    _quiet_unused_join_hints(spark)
    register(spark)
    return spark


def _quiet_unused_join_hints(spark: SparkSession) -> None:
    """Log Spark's "join hint is not part of a join" at ERROR only.

    Reads through the Python route carry a merge-join hint (see ``read.dataframe_for_plan``);
    every such read that is not joined would otherwise print a warning.
    """
    jvm: Any = spark.sparkContext._jvm
    try:
        level = jvm.org.apache.logging.log4j.Level.ERROR
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
            "org.apache.spark.sql.catalyst.analysis.HintErrorLogger", level
        )
    except Exception:  # a different logging backend: the warning is harmless
        return


def register(spark: SparkSession) -> None:
    """Register the ``icefloe`` data source on ``spark`` with the session's catalog configuration."""
    pushdown = get_conf(spark, "spark.sql.python.filterPushdown.enabled", "false").lower() == "true"
    props = catalog_properties(spark)
    source = datasource_class(props, pushdown=pushdown)
    if jvm_stream.loaded(spark):
        jvm_stream.register(spark, source, source.catalog)
    else:
        spark.dataSource.register(source)
    note_registered(spark, props, register)  # registered anew when the catalog conf changes
