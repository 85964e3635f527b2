"""What Spark's Python workers receive of the session's catalog, and where each of them runs.

A catalog's login (``catalog.login``: ``token``, ``credential``, ``oauth2-server-uri``,
``header.*``, a password in the ``uri``) opens every table of the catalog, for as long as it is
valid. Whatever Spark pickles reaches other processes and, on a cluster, other hosts. So:

**Executor tasks** get no login. They need the table's FileIO properties (vended credentials,
and how to renew them: ``catalog.rest.executor_renewal``), its metadata and the files, never the
catalog. Per route, what the task functions carry:

- ``read_table``, ``read_changes``, ``write_table``, ``delete`` / ``update`` / ``merge`` /
  ``upsert``, ``rewrite_data_files``, ``add_files``, the SQL statements (they call these) and
  ``stream_writer`` (its ``foreachBatch`` function runs in the driver's process and writes through
  ``write_table``): the catalog is opened in the driver's Python process, which plans and commits;
  the ``mapInArrow`` functions (and ``executor_jobs.run_chunks`` / ``collect_results`` work
  closures) carry table metadata, FileIO properties (``Catalog._io_properties``: no login) and
  planned tasks or staged files.
- data source batch and streaming writes: the writer (``datasource._WriteSetup``), that is the
  write job and a ``CatalogRef`` (no login).
- data source streaming read: the stream reader and the data source instance (PySpark's read
  function holds both): the read setup, FileIO properties, a ``CatalogRef``.
- data source batch read of one snapshot id (``snapshot-id``, or ``end-snapshot-id``), or of a
  timestamp a later commit has passed (``as-of-timestamp`` / ``end-timestamp``, resolved to the
  id by ``datasource._ReadSetup.pinned``): the reader (read setup, FileIO properties) and the data
  source instance; each input partition carries its own planned tasks
  (``datasource.PinnedSnapshotReader``). No catalog at all.
- data source batch read of the current state, a branch, a tag, or a timestamp at or after the
  newest commit: the reader and the data source instance, **and ``task_catalog_properties``**
  (below).
- JVM streaming read (``jvm_stream``): no Python on executors (Spark's Parquet reader); its
  planning runs in the driver's own process through py4j.
- ``workers.require_icefloe_on_workers``: a probe function, nothing of the catalog.

The one task that needs the catalog is the data source's **batch read of a table's current
state** (or a branch's, or a tag's, which can move): Spark keeps a relation's pickled reader and
input partitions for the relation's lifetime, so the only code that runs for each query is its
tasks, and they load the table's current metadata to plan (``datasource.IcefloeReader``). Checked
on PySpark 4.3: ``PythonDataSourceV2.getOrCreateReadInfo`` runs the planning worker (``reader()``
then ``partitions()``) only while its ``readInfo`` is unset, and ``PythonBatch`` takes the
partitions from it; one ``PythonDataSourceV2`` lives in the relation, which a DataFrame and every
view or query built on it share. So ``count()`` again after an append, ``collect()`` twice, a
temporary view queried before and after an append, ``df.cache()``: none of them plans again;
only ``load()`` again does, and, with ``spark.sql.python.filterPushdown.enabled``, a query with a
filter Spark can push (``PythonScanBuilder.pushFilters`` replaces the read info). Planning in the
planning worker would freeze a view at its first query's snapshot; a read of one snapshot id
can be frozen, and is. Handing the tasks the metadata location the planning worker saw would
freeze the view just the same, and the newest metadata file under the table's location is not
its pointer (a failed or losing commit leaves one behind), so neither stands in for the catalog.

These tasks get ``task_catalog_properties``: a catalog without a login as it is; a REST catalog
without ``credential``, ``oauth2-server-uri`` and ``header.*``, with the session's current bearer
token instead (as short-lived as the token ``rest.executor-renewal.*`` carries; a fixed ``token``
is its own access token); a SQL catalog with its URI, password included, because the table's
pointer is a database row that only the database login can read and no narrower credential
exists. Reads planned on the driver (``read_table``) and reads of a snapshot id ship no catalog.
The price of the access token: a view or DataFrame over a REST catalog with a client credential,
queried again after the token has expired (``icefloe serve`` issues them for an hour), fails its
tasks with the catalog's 401 where they used to log in again; loading the table anew
(``spark.read.format("icefloe").load(...)``, or the view again) gives the reader a fresh token.

**The planning worker** is the Python worker the driver's JVM starts, on the driver's host, to
run the data source's ``schema()``, ``reader()``, ``writer()``, ``partitions()``, the writers'
``commit()`` / ``abort()`` and the streaming source's offsets; it loads and commits tables, so it
needs the whole login. It gets the registered data source class, which the JVM hands it for
every plan; PySpark's read function then pickles the data source instance, class included, into
every read task. So the class must not hold the login: it holds a ``CatalogRef``, which names a
private file on the driver's host (mode 0600, in a directory of this driver process removed when
it exits) that holds the catalog properties. A catalog without a login is carried inline and
needs no file. A ``CatalogRef`` read on a host without the file fails, naming the file.

Catalog options of the data source (``catalog.uri`` and the like) are Spark options, pickled as
they are with the data source instance; a login belongs in the session's configuration, not there.
That configuration (``spark.icefloe.catalog.*``) reaches executor JVMs as all Spark settings do;
where Spark shows it (UI, event logs) a login is redacted (``runtime.REDACTION_REGEX``).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from icefloe.catalog import catalog_type_of
from icefloe.catalog.login import has_login, is_login_key, without_login
from icefloe.errors import ValidationError

CATALOG_OPTIONS = (
    ("catalog-type", "type"),
    ("catalog.type", "type"),
    ("catalog-uri", "uri"),
    ("catalog.uri", "uri"),
    ("uri", "uri"),
    ("warehouse", "warehouse"),
    ("catalog.warehouse", "warehouse"),
)
"""Data source options that override the session's catalog (option key, catalog property)."""


def catalog_props(options: Mapping[str, str], baked: Mapping[str, str]) -> dict[str, str]:
    """The catalog properties of a read or write: the session's, overridden by the options.

    An http(s) ``uri`` is a REST catalog's (no SQL catalog has one), so it implies ``type`` rest.
    Options naming another type of catalog than the session's leave the session's properties out:
    a SQL catalog's ``warehouse`` means nothing to a REST server, and a REST client given the
    session's SQLite URI would fail far from the option that caused it. Options naming another URI
    leave the session's login out: its token must not reach another server."""
    overrides = {target: options[key] for key, target in CATALOG_OPTIONS if options.get(key)}
    if "type" not in overrides and catalog_type_of(overrides) == "rest":
        overrides["type"] = "rest"
    same_kind = catalog_type_of({**baked, **overrides}) == catalog_type_of(baked)
    kept = dict(baked) if same_kind else {}
    if overrides.get("uri", kept.get("uri")) != kept.get("uri"):
        kept = {k: v for k, v in kept.items() if not is_login_key(k)}
    return {**kept, **overrides}


@dataclass(frozen=True)
class CatalogRef:
    """The session's catalog as Spark's Python workers receive it: inline when it has no login,
    else the path of the driver-host file that holds it; plus a read's or write's catalog options."""

    inline: dict[str, str] = field(default_factory=dict)
    kept_at: str = ""
    options: dict[str, str] = field(default_factory=dict)

    def with_options(self, options: Mapping[str, str]) -> CatalogRef:
        """The same catalog with a read's or write's data source options (keys in lower case)."""
        chosen = {key: options[key] for key, _ in CATALOG_OPTIONS if options.get(key)}
        return CatalogRef(self.inline, self.kept_at, chosen)

    def session_properties(self) -> dict[str, str]:
        """The session's catalog properties, login included (read from the file when kept)."""
        return _read_kept(self.kept_at) if self.kept_at else dict(self.inline)

    def properties(self) -> dict[str, str]:
        """The properties to open the catalog with: the session's, overridden by the options."""
        return catalog_props(self.options, self.session_properties())


def keep_catalog(properties: Mapping[str, str]) -> CatalogRef:
    """A reference to the session's catalog for Spark's Python workers: a catalog with a login is
    written to a private file on this host, one without is carried inline."""
    if not has_login(properties):
        return CatalogRef(inline=dict(properties))
    text = json.dumps(dict(properties), sort_keys=True)
    path = os.path.join(_private_dir(), hashlib.sha256(text.encode()).hexdigest()[:24] + ".json")
    if not os.path.exists(path):
        partial = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.replace(partial, path)
    return CatalogRef(kept_at=path)


def task_catalog_properties(properties: Mapping[str, str], catalog: Any) -> dict[str, str]:
    """What the data source's batch read tasks load the current metadata with (see the module
    docstring): the properties as they are without a login; a REST catalog's without its login,
    with the session's current bearer token; a SQL catalog's as they are (the URI's password is
    the only way to its pointer)."""
    if not has_login(properties):
        return dict(properties)
    if catalog_type_of(properties) != "rest":
        return dict(properties)
    shipped = without_login(properties)
    token = catalog.shipping_token() if hasattr(catalog, "shipping_token") else None
    if token:
        shipped["token"] = token
    return shipped


_DIR: list[str] = []
_DIR_LOCK = threading.Lock()
_KEPT: dict[str, dict[str, str]] = {}


def _private_dir() -> str:
    """This process's directory of kept catalogs (mode 0700), removed when the process exits."""
    with _DIR_LOCK:
        if not _DIR:
            path = tempfile.mkdtemp(prefix="icefloe-catalog-")
            atexit.register(_remove_dir, path, os.getpid())
            _DIR.append(path)
        return _DIR[0]


def _remove_dir(path: str, owner: int) -> None:
    """Remove the directory at exit of the process that made it (a forked child inherits the
    exit handler, and must not take the driver's login away from its planning workers)."""
    if os.getpid() == owner:
        shutil.rmtree(path, ignore_errors=True)


def _read_kept(path: str) -> dict[str, str]:
    """The catalog properties kept at ``path`` (read once per process)."""
    kept = _KEPT.get(path)
    if kept is None:
        try:
            with open(path) as src:
                kept = {str(k): str(v) for k, v in json.load(src).items()}
        except FileNotFoundError:
            raise ValidationError(
                f"the session's catalog login is kept on the Spark driver's host, in {path}, which "
                "is not here: this code needs the catalog and ran away from the driver (or after the "
                "driver process exited)"
            ) from None
        _KEPT[path] = kept
    return dict(kept)
