"""What every Spark path shares: the configured session, the catalog it uses, and executor file IO.

``session()`` builds a SparkSession configured for icefloe; ``resolve_catalog`` finds the catalog a
Spark job should use; ``executor_io`` gives executors their (cached) FileIO, which renews vended
credentials itself when the driver shipped how; ``session_conf`` sets SQL confs for the duration of
one job.

The session is pinned to UTC (SQL session time zone, JVM ``user.timezone`` and the Python workers'
``TZ``), has Arrow on, reads and writes Parquet field ids, writes ``TIMESTAMP_MICROS`` (Spark's
INT96 default is wrong for Iceberg) and registers the ``icefloe`` Python data source. The catalog
configuration is the session's ``spark.icefloe.catalog.*`` settings (``type``, ``uri``,
``warehouse`` and any other catalog property), read afresh by every driver-side call, so
``spark.conf.set`` / ``unset`` of any of them switches catalogs at runtime. The registered data
source class carries the configuration as a ``worker_catalog.CatalogRef`` (the data source runs in
separate Python processes that cannot see the Spark conf; a login stays in a private file on the
driver's host), so a call that finds the configuration changed registers it anew.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
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

REDACTION_REGEX = (
    r"(?i)secret|password|token|access[.]?key"  # Spark's own default
    r"|credential|oauth2-server-uri|icefloe\.catalog\.header\.|://[^/@\s]*:[^/@\s]*@"
)
"""Spark's ``spark.redaction.regex``, widened to catalog logins (``catalog.login``).

Spark redacts a setting whose key or value matches, wherever it shows its configuration (the
UI's environment page, event logs, ``SparkConf`` dumps in logs). Its default already hides
``spark.icefloe.catalog.token``; this adds a client ``credential``, ``oauth2-server-uri``,
``header.*`` and any value with a password in a URL (``postgresql://user:pw@host/db``)."""

# Static confs: only effective when this call starts the JVM.
STATIC_CONF: dict[str, str] = {
    "spark.redaction.regex": REDACTION_REGEX,
    "spark.python.worker.reuse": "true",
    "spark.executorEnv.TZ": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}


_KEY_SEPARATOR = "\x1e"


def catalog_properties(spark: SparkSession) -> dict[str, str]:
    """The catalog properties the session's conf holds now (``spark.icefloe.catalog.*``).

    The runtime conf holds what the session was built with as well as what ``spark.conf.set``
    changed since (and loses what ``unset`` removed). Its keys come over in one py4j call and
    only icefloe's values are fetched: copying the whole conf to Python costs tens of
    milliseconds, too much for every statement.
    """
    props: dict[str, str] = {}
    for key in _conf_keys(spark):
        if key.startswith(CATALOG_CONF_PREFIX):
            value = get_conf(spark, key, "")
            if value:
                props[key[len(CATALOG_CONF_PREFIX) :]] = value
    return props


def _conf_keys(spark: SparkSession) -> list[str]:
    """The keys set in the session's runtime conf."""
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:  # Spark Connect: no JVM handle, the conf comes whole
        return list(spark.conf.getAll)
    text = str(jsession.conf().getAll().keys().mkString(_KEY_SEPARATOR))
    return text.split(_KEY_SEPARATOR) if text else []


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
    """The catalog to use: an explicit one, explicit properties, else the one the session's conf
    names now (re-registering the session's data source when that changed, see ``note_registered``)."""
    if catalog is not None and not isinstance(catalog, dict):
        return catalog
    if isinstance(catalog, dict):
        return catalog_from_properties(dict(catalog))
    if spark is None:
        return catalog_from_properties({})
    props = catalog_properties(spark)
    _follow_registration(spark, props)
    return catalog_from_properties(props)


@dataclass
class _Registration:
    """The catalog properties a session's data source was registered with, and how to register it."""

    spark: SparkSession
    properties: dict[str, str]
    register: Callable[[SparkSession], None]


_REGISTRATIONS: dict[int, _Registration] = {}


def note_registered(
    spark: SparkSession, properties: dict[str, str], register: Callable[[SparkSession], None]
) -> None:
    """Remember that ``spark``'s data source carries ``properties``: ``resolve_catalog`` calls
    ``register(spark)`` again once the session's conf names another catalog, so that
    ``spark.read.format("icefloe")`` never reads the previous catalog's table."""
    with _CATALOG_LOCK:
        _REGISTRATIONS[id(spark)] = _Registration(spark, dict(properties), register)


def follow_catalog_conf(spark: SparkSession) -> None:
    """Register ``spark``'s data source again if the session's catalog conf changed since."""
    _follow_registration(spark, catalog_properties(spark))


def _follow_registration(spark: SparkSession, properties: dict[str, str]) -> None:
    with _CATALOG_LOCK:
        known = _REGISTRATIONS.get(id(spark))
    if known is not None and known.spark is spark and known.properties != properties:
        known.register(spark)


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
