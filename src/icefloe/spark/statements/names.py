"""Which names are icefloe tables: ``catalog.namespace.table``, ``USE``, branch/tag and metadata suffixes.

icefloe's catalog is known to SQL under one name (``spark.icefloe.sql.catalog``, default
``icefloe``, read once per session). ``icefloe.db.t`` always means an icefloe table; ``db.t``
does when the current catalog is icefloe's (after ``USE icefloe`` or with
``spark.sql.defaultCatalog=icefloe``); a one-part name does after ``USE icefloe.db``. A last part
``branch_<b>`` / ``tag_<t>`` selects a ref and a metadata-table name (``snapshots``, ``files``,
...) selects that metadata table, when the part before it is a table. Everything else belongs to
Spark.

How a statement's names are found, and why they are the ones Spark finds. icefloe reads a
statement with sqlglot, Spark with its own parser; where the two disagree on which relations a
statement names, icefloe would read or write another table than the one written. So:

1. Tokens: sqlglot reserves keywords Spark does not (``FROM select``, ``FROM t, fetch``,
   ``icefloe.inner.t``); ``keyword_names`` retypes them as names where Spark reads names.
2. ``IDENTIFIER('db.t')`` with a literal becomes the name ``db.t`` (``parse``), as Spark's parser
   reads it, so that it resolves here like any other name.
3. ``relations.relation_tables`` keeps the table nodes that name a relation: not table functions,
   not hint arguments, not one-part names of a CTE in scope, with Spark's CTE scoping (a CTE is
   not in scope in its own body, nor outside the query it is attached to).
4. Each of those names resolves here (``SqlContext.resolve``), except a name Spark reads as one of
   its temporary views (a session's, by a one-part name; a global one, as ``global_temp.<name>``),
   which Spark looks up before any catalog; DML targets are their statement's
   ``this``. A leading ``WITH`` of an INSERT is carried into its query; one of DELETE, UPDATE or
   MERGE, whose parts run separately, is refused.
5. A query or DML statement Spark's parser refuses is refused before anything runs
   (``run.refuse_what_spark_refuses``): sqlglot accepts more than Spark, and reads it otherwise.

``tests/spark/statements/test_relations_fuzz.py`` generates statements and checks, with Spark's
parser as the oracle, that icefloe names the same tables Spark does or refuses the statement;
``test_keyword_names.py`` does the same for every keyword as a name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from icefloe.errors import NoSuchTable, NotFound
from icefloe.spark.runtime import resolve_catalog

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from icefloe.catalog.base import Catalog
    from icefloe.table.table import Table

CATALOG_NAME_CONF = "spark.icefloe.sql.catalog"
CURRENT_CATALOG_CONF = "spark.icefloe.sql.current-catalog"
CURRENT_NAMESPACE_CONF = "spark.icefloe.sql.current-namespace"
DEFAULT_CATALOG_NAME = "icefloe"
SPARK_CATALOG = "spark_catalog"
METADATA_TABLE_NAMES = (
    "snapshots",
    "history",
    "files",
    "data_files",
    "delete_files",
    "manifests",
    "partitions",
    "entries",
    "all_entries",
    "refs",
    "all_data_files",
    "all_delete_files",
    "all_files",
    "all_manifests",
    "metadata_log_entries",
    "position_deletes",
    "changes",
)


@dataclass(frozen=True)
class TableRef:
    """A name that resolved to an icefloe table (maybe a ref of it, maybe one of its metadata tables)."""

    identifier: tuple[str, ...]
    table: Table
    branch: str | None = None
    tag: str | None = None
    metadata_table: str | None = None
    # ``snapshot-property.<key>`` options of a write: (key, value) pairs for the snapshot summary
    snapshot_properties: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        """``namespace.table`` as text."""
        return ".".join(self.identifier)


@dataclass
class SqlContext:
    """One SparkSession as icefloe's SQL sees it: its icefloe catalog, its name and the current one."""

    spark: SparkSession
    catalog: Catalog
    name: str = DEFAULT_CATALOG_NAME
    _tables: dict[tuple[str, ...], Table | None] = field(default_factory=dict)
    _current: tuple[bool, tuple[str, ...]] | None = None
    _temp_views: dict[tuple[str, ...], bool] = field(default_factory=dict)

    @classmethod
    def for_session(cls, spark: SparkSession, catalog: Catalog | None = None) -> SqlContext:
        """The context of ``spark`` (catalog from the session's icefloe configuration unless given).

        The catalog follows the session's ``spark.icefloe.catalog.*`` conf as it is at each
        statement (``runtime.resolve_catalog``: one catalog object per configuration, so a switch
        never serves the previous catalog's tables). The catalog's SQL name
        (``spark.icefloe.sql.catalog``) is read once per SparkSession.
        """
        state = _SESSIONS.get(id(spark))
        if state is None or state.spark is not spark:
            state = _Session(spark, _conf(spark, CATALOG_NAME_CONF, DEFAULT_CATALOG_NAME))
            _SESSIONS[id(spark)] = state
        return cls(spark, catalog if catalog is not None else resolve_catalog(spark, None), state.name)

    # ---------------------------------------------------------------- current catalog / namespace

    def _current_state(self) -> tuple[bool, tuple[str, ...]]:
        if self._current is None:
            current = _conf(self.spark, CURRENT_CATALOG_CONF, "")
            if not current:
                current = _conf(self.spark, "spark.sql.defaultCatalog", SPARK_CATALOG)
            text = _conf(self.spark, CURRENT_NAMESPACE_CONF, "")
            self._current = (current.lower() == self.name.lower(), tuple(text.split("\x1f")) if text else ())
        return self._current

    def current_is_icefloe(self) -> bool:
        """Whether unqualified names resolve in icefloe's catalog."""
        return self._current_state()[0]

    def current_namespace(self) -> tuple[str, ...]:
        """The namespace set by ``USE icefloe.ns`` (empty when none)."""
        return self._current_state()[1]

    def use(self, parts: list[str]) -> bool:
        """Apply ``USE parts``; True when it concerned icefloe's catalog (else Spark should run it)."""
        self._current = None
        if parts and parts[0].lower() == self.name.lower():
            self.spark.conf.set(CURRENT_CATALOG_CONF, self.name)
            self.spark.conf.set(CURRENT_NAMESPACE_CONF, "\x1f".join(parts[1:]))
            self._current = None
            return True
        if self.current_is_icefloe() and parts and parts[0].lower() != SPARK_CATALOG:
            if not self.catalog.namespace_exists(tuple(parts)):
                raise NotFound(f"namespace {'.'.join(parts)!r} does not exist in catalog {self.name!r}")
            self.spark.conf.set(CURRENT_NAMESPACE_CONF, "\x1f".join(parts))
            self._current = None
            return True
        self.spark.conf.set(CURRENT_CATALOG_CONF, SPARK_CATALOG)
        self.spark.conf.set(CURRENT_NAMESPACE_CONF, "")
        self._current = None
        return False

    # ---------------------------------------------------------------- names

    def icefloe_parts(self, parts: list[str]) -> list[str] | None:
        """The namespace + name parts of an icefloe name, or None when the name belongs to Spark."""
        if not parts:
            return None
        if len(parts) > 1 and parts[0].lower() == self.name.lower():
            return list(parts[1:])
        if not self.current_is_icefloe() or parts[0].lower() == SPARK_CATALOG:
            return None
        if self.is_temp_view(parts):
            return None
        if len(parts) == 1:
            ns = self.current_namespace()
            return [*ns, parts[0]] if ns else None
        return list(parts)

    def is_temp_view(self, parts: list[str]) -> bool:
        """Whether Spark reads ``parts`` as one of its temporary views: a one-part name of a
        session's temporary view, or ``global_temp.<name>`` of a global one. Spark looks those up
        before any catalog, whichever catalog is current, so such a name is never icefloe's."""
        key = tuple(p.lower() for p in parts)
        if key not in self._temp_views:
            self._temp_views[key] = _spark_temp_view_exists(self.spark, parts)
        return self._temp_views[key]

    def explicit(self, parts: list[str]) -> bool:
        """Whether the name starts with icefloe's catalog name."""
        return len(parts) > 1 and parts[0].lower() == self.name.lower()

    def load(self, identifier: tuple[str, ...]) -> Table | None:
        """The table (cached for this statement), None if the catalog has no such table."""
        if identifier not in self._tables:
            try:
                self._tables[identifier] = (
                    self.catalog.load_table(identifier) if len(identifier) > 1 else None
                )
            except NotFound:
                self._tables[identifier] = None
        return self._tables[identifier]

    def forget(self, identifier: tuple[str, ...]) -> None:
        """Drop a cached table (after a statement changed it)."""
        self._tables.pop(identifier, None)

    def resolve(self, parts: list[str]) -> TableRef | None:
        """The icefloe table a name refers to, or None for Spark's names.

        A name qualified with icefloe's catalog that names no table raises NoSuchTable.
        """
        rest = self.icefloe_parts(parts)
        if rest is None:
            return None
        ident = tuple(rest)
        table = self.load(ident)
        if table is not None:
            return TableRef(ident, table)
        if len(rest) >= 3:
            base, suffix = tuple(rest[:-1]), rest[-1]
            table = self.load(base)
            if table is not None:
                lowered = suffix.lower()
                if lowered in METADATA_TABLE_NAMES:
                    return TableRef(base, table, metadata_table=lowered)
                if lowered.startswith("branch_"):
                    return TableRef(base, table, branch=suffix[len("branch_") :])
                if lowered.startswith("tag_"):
                    return TableRef(base, table, tag=suffix[len("tag_") :])
        if self.explicit(parts):
            raise NoSuchTable(f"table {'.'.join(parts)!r} does not exist")
        return None

    def table_identifier(self, parts: list[str]) -> tuple[str, ...] | None:
        """namespace + name for a table to create or drop (None: not an icefloe name)."""
        rest = self.icefloe_parts(parts)
        return tuple(rest) if rest is not None and len(rest) > 1 else None


@dataclass
class _Session:
    """What ``SqlContext.for_session`` reads once per SparkSession."""

    spark: SparkSession
    name: str


_SESSIONS: dict[int, _Session] = {}


def _spark_temp_view_exists(spark: SparkSession, parts: list[str]) -> bool:
    """Whether Spark's session catalog holds a temporary view named ``parts`` (False on Spark
    Connect, which has no JVM catalog to ask)."""
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None or len(parts) > 2:
        return False
    catalog = jsession.sessionState().catalog()
    if len(parts) == 1:
        return bool(catalog.getTempView(parts[0]).isDefined())
    global_db = _conf(spark, "spark.sql.globalTempDatabase", "global_temp")
    return parts[0].lower() == global_db.lower() and bool(catalog.getGlobalTempView(parts[1]).isDefined())


def _conf(spark: SparkSession, key: str, default: str) -> str:
    try:
        value = spark.conf.get(key, default)
    except Exception:  # unknown key on some versions
        return default
    return default if value is None else str(value)


def namespace_parts(ctx: SqlContext, parts: list[str]) -> tuple[str, ...] | None:
    """The icefloe namespace a name means (None: a Spark database)."""
    if ctx.explicit(parts) or (len(parts) == 1 and parts[0].lower() == ctx.name.lower()):
        return tuple(parts[1:])
    if ctx.current_is_icefloe() and parts and parts[0].lower() != "spark_catalog":
        return tuple(parts)
    return None


WAP_ENABLED = "write.wap.enabled"
WAP_BRANCH_CONF = "spark.wap.branch"


def wap_branch(ctx: SqlContext, ref: TableRef) -> str | None:
    """The session's ``spark.wap.branch`` when the table has ``write.wap.enabled`` (else None)."""
    if ref.table.metadata.properties.get(WAP_ENABLED, "false").lower() != "true":
        return None
    return ctx.spark.conf.get(WAP_BRANCH_CONF, None) or None
