"""What every Spark path shares: the configured session, the catalog it uses, and executor file IO.

``session()`` builds a SparkSession configured for icefloe; ``resolve_catalog`` finds the catalog a
Spark job should use; ``executor_io`` gives executors their (cached) FileIO, which renews vended
credentials itself when the driver shipped how; ``session_conf`` sets SQL confs for the duration of
one job.

The session is pinned to UTC (SQL session time zone, JVM ``user.timezone`` and the Python workers'
``TZ``), has Arrow on, reads and writes Parquet field ids, writes ``TIMESTAMP_MICROS`` (Spark's
INT96 default is wrong for Iceberg) and registers the ``icefloe`` Python data source. The catalog
configuration (``uri``, ``warehouse``) is remembered in the Spark conf under ``spark.icefloe.catalog.*``
for driver-side helpers, and baked into the registered data source class, because the data source
runs in separate Python processes that cannot see the Spark conf.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any

from icefloe.catalog.rest.vended import CREDENTIALS_URI
from icefloe.io.fileio import FileIO, load_file_io, split_scheme

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from icefloe.catalog.base import Catalog

CATALOG_CONF_PREFIX = "spark.icefloe.catalog."
UTC_JAVA_OPTS = "-Duser.timezone=UTC"
CATALOGS_KEPT = 32
"""How many catalogs ``catalog_from_properties`` keeps (the least recently made go first)."""

# Runtime SQL confs: applied at build time and again on an existing session.
RUNTIME_CONF: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.parquet.fieldId.read.enabled": "true",
    "spark.sql.parquet.fieldId.write.enabled": "true",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.python.filterPushdown.enabled": "true",
}

# Static confs: only effective when this call starts the JVM.
STATIC_CONF: dict[str, str] = {
    "spark.python.worker.reuse": "true",
    "spark.executorEnv.TZ": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}


def catalog_properties(spark: SparkSession) -> dict[str, str]:
    """The catalog properties remembered in the session (``spark.icefloe.catalog.*``)."""
    props: dict[str, str] = {}
    for key, value in spark.sparkContext.getConf().getAll():
        if key.startswith(CATALOG_CONF_PREFIX):
            props[key[len(CATALOG_CONF_PREFIX) :]] = value
    for name in ("uri", "warehouse"):
        value = get_conf(spark, CATALOG_CONF_PREFIX + name, "")
        if value:
            props[name] = value
    return props


_CATALOGS: dict[tuple[tuple[str, str], ...], Catalog] = {}
_CATALOG_LOCK = threading.Lock()


def catalog_from_properties(props: dict[str, str]) -> Catalog:
    """A cached catalog for these properties (``load_catalog`` defaults fill the gaps). The last
    ``CATALOGS_KEPT`` are kept: the data source's read tasks get a new access token with every
    reader (``worker_catalog.task_catalog_properties``), hence new properties."""
    key = tuple(sorted(props.items()))
    with _CATALOG_LOCK:
        cat = _CATALOGS.get(key)
        if cat is None:
            from icefloe.catalog import load_catalog

            # Same catalog name as load_catalog()'s default: the name is part of the JDBC row key,
            # so tables created from Python must be visible from Spark.
            rest = dict(props)
            cat = load_catalog(rest.pop("name", "default"), **rest)
            while len(_CATALOGS) >= CATALOGS_KEPT:
                _CATALOGS.pop(next(iter(_CATALOGS)))  # dicts keep insertion order
            _CATALOGS[key] = cat
        return cat


def resolve_catalog(spark: SparkSession | None, catalog: Catalog | dict[str, str] | None) -> Catalog:
    """The catalog to use: an explicit one, explicit properties, else the session's remembered one."""
    if catalog is not None and not isinstance(catalog, dict):
        return catalog
    props = dict(catalog) if isinstance(catalog, dict) else (catalog_properties(spark) if spark else {})
    return catalog_from_properties(props)


def get_conf(spark: SparkSession, key: str, default: str) -> str:
    """A Spark SQL conf as a string (``default`` when unset or unknown to this Spark version)."""
    try:
        value = spark.conf.get(key, default)
    except Exception:  # unknown key on some versions
        return default
    return default if value is None else str(value)


def coalesces_shuffles(spark: SparkSession) -> bool:
    """Whether adaptive execution coalesces shuffle partitions by size (both on by default)."""
    adaptive = get_conf(spark, "spark.sql.adaptive.enabled", "true")
    coalescing = get_conf(spark, "spark.sql.adaptive.coalescePartitions.enabled", "true")
    return adaptive.strip().lower() == "true" and coalescing.strip().lower() == "true"


def try_set_conf(spark: SparkSession, key: str, value: str) -> None:
    """Set a conf where the running session allows it (static confs cannot change)."""
    with contextlib.suppress(Exception):  # static confs cannot change on a running session
        spark.conf.set(key, value)


def conf_string(value: Any) -> str:
    """A Python value as Spark conf text (booleans lower-case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def spark_location(location: str) -> str:
    """A location as Spark's Hadoop file systems spell it (``s3://`` -> ``s3a://``)."""
    scheme, rest = split_scheme(location)
    if scheme == "s3":
        return "s3a:" + rest
    return location


class session_conf:
    """Temporarily set Spark SQL confs, restoring the previous values afterwards."""

    def __init__(self, spark: SparkSession, conf: dict[str, str]) -> None:
        self._spark = spark
        self._conf = conf
        self._old: dict[str, str | None] = {}

    def __enter__(self) -> None:
        for key, value in self._conf.items():
            self._old[key] = self._spark.conf.get(key, None)
            self._spark.conf.set(key, value)

    def __exit__(self, *exc: object) -> None:
        for key, value in self._old.items():
            if value is None:
                self._spark.conf.unset(key)
            else:
                self._spark.conf.set(key, value)


_EXECUTOR_IO: dict[tuple[tuple[str, str], ...], FileIO] = {}


def executor_io(properties: dict[str, str], location: str) -> FileIO:
    """The FileIO an executor uses for these properties (one per process, cached): one that renews
    vended credentials itself when the driver shipped how (``catalog.rest.executor_renewal``)."""
    key = (*sorted(properties.items()), ("__location", split_scheme(location)[0]))
    io = _EXECUTOR_IO.get(key)
    if io is None:
        if CREDENTIALS_URI in properties:
            # imported here: only executors of tables on a REST catalog pay for its HTTP client
            from icefloe.catalog.rest.executor_renewal import executor_file_io

            io = executor_file_io(properties)
        else:
            io = load_file_io(properties, location)
        _EXECUTOR_IO[key] = io
    return io


def delete_tree(io: FileIO, location: str) -> None:
    """Delete a directory tree (best effort: leftovers are orphans, never table data)."""
    try:
        fs, base = io.filesystem_and_path(location)
        fs.delete_dir(base)
        return
    except FileNotFoundError:
        return
    except OSError:
        pass
    for path in io.list_prefix(location):
        io.delete(path, missing_ok=True)
