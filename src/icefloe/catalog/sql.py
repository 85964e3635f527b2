"""SqlCatalog: the Iceberg JDBC catalog layout on SQLAlchemy 2 (SQLite by default, PostgreSQL too).

The two tables are the ones Iceberg Java's JdbcCatalog and PyIceberg's SqlCatalog use, so all three
can share one catalog database:

- ``iceberg_tables(catalog_name, table_namespace, table_name, metadata_location,
  previous_metadata_location[, iceberg_type])``, primary key (catalog_name, table_namespace,
  table_name). ``iceberg_type`` ("TABLE" / "VIEW") only exists in the newer ("V1") layout; rows
  with NULL there are tables. When the column is missing (tables created by an older Java or
  PyIceberg) the catalog works without it and does not migrate.
- ``iceberg_namespace_properties(catalog_name, namespace, property_key, property_value)``, primary
  key (catalog_name, namespace, property_key). A namespace is its levels joined by ".", and a
  namespace created without properties is marked by the reserved ``exists = true`` row (which
  ``load_namespace_properties`` hides, as Java does).

A commit is one conditional UPDATE of ``metadata_location`` (compare-and-swap on the old value);
the files it names are fsynced while that transaction runs, and it commits once they are
durable (``background_sync``).
SQLite connections use WAL, a busy timeout, ``BEGIN IMMEDIATE`` for writes (see sql_engine.py),
and operations are retried while the database is locked.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from sqlalchemy import (
    ColumnElement,
    Connection,
    delete,
    func,
    insert,
    inspect,
    literal,
    or_,
    select,
    union,
    update,
)
from sqlalchemy.exc import DBAPIError, IntegrityError

from icefloe.catalog.background_sync import BackgroundSync, start_pending_sync
from icefloe.catalog.base import Catalog, PropertiesUpdateSummary
from icefloe.catalog.identifiers import (
    Namespace,
    identifier_to_string,
    namespace_from_string,
    namespace_to_string,
    parse_namespace,
)
from icefloe.catalog.sql_engine import (
    NAMESPACE_PROPERTIES,
    TABLE_TYPE,
    TABLES,
    VIEW_TYPE,
    catalog_tables,
    create_catalog_engine,
    escape_like,
    is_sqlite_locked,
)
from icefloe.catalog.sql_statements import PointerStatements, table_type_filter
from icefloe.errors import (
    AlreadyExists,
    CommitConflict,
    CommitStateUnknown,
    NamespaceNotEmpty,
    NoSuchNamespace,
    NoSuchTable,
    TableGoneDuringCommit,
    ValidationError,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

EXISTS_PROPERTY = "exists"
MAX_KEY_LENGTH = 255
MAX_VALUE_LENGTH = 1000

# Catalog properties understood here (besides uri / warehouse and the engine's in sql_engine.py).
LOCK_RETRY_SECONDS = "lock-retry-seconds"
INIT_CATALOG_TABLES = "init_catalog_tables"

_VERIFY_ATTEMPTS = 3


class SqlCatalog(Catalog):
    """An Iceberg catalog in a SQL database using the JDBC catalog tables (SQLite or PostgreSQL)."""

    swap_checks_location = True  # one conditional UPDATE on the old location; fresh UUID file names
    swap_syncs_pending = True  # every write transaction waits for the barrier's fsyncs before COMMIT

    def __init__(
        self, name: str = "default", uri: str | None = None, warehouse: str | None = None, **properties: str
    ) -> None:
        props = dict(properties)
        uri = uri or props.get("uri")
        if not uri:
            raise ValidationError("SqlCatalog needs a database uri, e.g. 'sqlite:///catalog.db'")
        props["uri"] = uri
        if warehouse is not None:
            props["warehouse"] = warehouse
        super().__init__(name, **props)
        self.engine = create_catalog_engine(uri, self.properties)
        self._lock_retry_seconds = float(self.properties.get(LOCK_RETRY_SECONDS, "60"))
        if self.properties.get(INIT_CATALOG_TABLES, "true").lower() != "false":
            self._create_tables_if_missing()
        self._has_type = self._detect_type_column()
        self._t, self._p = catalog_tables(self._has_type)
        self._pointer = PointerStatements.build(self._t, self._has_type)

    # ------------------------------------------------------------------ setup

    def _create_tables_if_missing(self) -> None:
        names = set(self._run(lambda conn: inspect(conn).get_table_names(), write=False))
        if {TABLES, NAMESPACE_PROPERTIES} <= names:
            return
        tables, _ = catalog_tables(with_type=True)
        try:
            self._run(lambda conn: tables.metadata.create_all(conn, checkfirst=True), write=True)
        except DBAPIError:
            # Another process may have created them at the same moment: fine if they exist now.
            names = set(self._run(lambda conn: inspect(conn).get_table_names(), write=False))
            if not {TABLES, NAMESPACE_PROPERTIES} <= names:
                raise

    def _detect_type_column(self) -> bool:
        def work(conn: Connection) -> bool:
            insp = inspect(conn)
            if not insp.has_table(TABLES):
                return True
            return "iceberg_type" in {c["name"] for c in insp.get_columns(TABLES)}

        return self._run(work, write=False)

    def close(self) -> None:
        """Dispose of the connection pool."""
        self.engine.dispose()

    def __repr__(self) -> str:
        return f"SqlCatalog({self.name!r}, uri={self.engine.url.render_as_string(hide_password=True)!r})"

    # ------------------------------------------------------------------ transactions

    def _commit_transaction(self, conn: Connection) -> None:
        """Commit the open transaction (a seam for tests that simulate a lost connection)."""
        conn.commit()

    def _run(
        self,
        work: Callable[[Connection], T],
        *,
        write: bool,
        verify: Callable[[Connection], bool] | None = None,
        what: str = "catalog operation",
    ) -> T:
        """Run ``work`` in one transaction, retrying while SQLite is locked.

        With ``verify``: if the COMMIT itself fails, ask ``verify`` on a fresh connection whether
        the change landed; if it cannot be confirmed, raise CommitStateUnknown.

        A write may move a pointer to the files written so far in this context's durability
        barrier: they are fsynced while ``work`` runs, and the COMMIT waits for them
        (``catalog.background_sync``).
        """
        syncing = start_pending_sync() if write else None
        try:
            return self._run_transaction(work, write=write, verify=verify, what=what, syncing=syncing)
        finally:
            if syncing is not None:
                syncing.settle()  # waited for before any COMMIT; here only when failing before one

    def _run_transaction(
        self,
        work: Callable[[Connection], T],
        *,
        write: bool,
        verify: Callable[[Connection], bool] | None,
        what: str,
        syncing: BackgroundSync | None,
    ) -> T:
        deadline = time.monotonic() + self._lock_retry_seconds
        delay = 0.005
        while True:
            committing = False
            conn = None
            try:
                conn = self.engine.connect()
                if write:
                    conn.execution_options(icefloe_write=True)
                conn.begin()
                result = work(conn)
                if not write:
                    conn.rollback()
                    return result
                if syncing is not None:
                    syncing.wait()  # the files the pointer may name are durable before it moves
                committing = True
                self._commit_transaction(conn)
                return result
            except DBAPIError as exc:
                if is_sqlite_locked(exc) and time.monotonic() < deadline:
                    _close_quietly(conn)
                    conn = None
                    time.sleep(delay * (0.5 + random.random()))
                    delay = min(delay * 2, 0.25)
                    continue
                if committing and verify is not None and not is_sqlite_locked(exc):
                    _close_quietly(conn)
                    conn = None
                    if self._verify(verify):
                        return result
                    raise CommitStateUnknown(
                        f"{what}: the database connection failed while committing ({exc.orig!r}); "
                        "the change may or may not have been applied"
                    ) from exc
                if is_sqlite_locked(exc):
                    raise CommitConflict(
                        f"{what}: the catalog database stayed locked for {self._lock_retry_seconds:.0f} s"
                    ) from exc
                raise
            finally:
                _close_quietly(conn)

    def _verify(self, check: Callable[[Connection], bool]) -> bool:
        for attempt in range(_VERIFY_ATTEMPTS):
            try:
                return self._run(check, write=False)
            except DBAPIError as exc:
                logger.warning("could not check the outcome of a commit (attempt %d): %s", attempt + 1, exc)
                time.sleep(0.1 * (attempt + 1))
        return False

    def _table_filter(self) -> ColumnElement[bool]:
        return table_type_filter(self._t, self._has_type)

    def _row_filter(self, namespace: Namespace, name: str) -> list[ColumnElement[bool]]:
        t = self._t
        return [
            t.c.catalog_name == self.name,
            t.c.table_namespace == namespace_to_string(namespace),
            t.c.table_name == name,
        ]

    # ------------------------------------------------------------------ namespaces

    def _namespace_exists(self, conn: Connection, ns: str) -> bool:
        prefix = escape_like(ns) + ".%"
        for table, column in ((self._t, self._t.c.table_namespace), (self._p, self._p.c.namespace)):
            query = (
                select(literal(1))
                .select_from(table)
                .where(table.c.catalog_name == self.name, or_(column == ns, column.like(prefix, escape="!")))
                .limit(1)
            )
            if conn.execute(query).first() is not None:
                return True
        return False

    def namespace_exists(self, namespace: str | Iterable[str]) -> bool:
        """Whether the namespace exists (has properties, tables, or child namespaces)."""
        ns = namespace_to_string(parse_namespace(namespace))
        return self._run(lambda conn: self._namespace_exists(conn, ns), write=False)

    def create_namespace(
        self, namespace: str | Iterable[str], properties: dict[str, str] | None = None
    ) -> None:
        """Create a namespace with optional properties; AlreadyExists if it exists."""
        levels = parse_namespace(namespace)
        ns = namespace_to_string(levels)
        props = _checked_properties(properties or {})
        self._check_namespace_properties(levels, props)
        rows = [
            {"catalog_name": self.name, "namespace": ns, "property_key": k, "property_value": v}
            for k, v in {**props, EXISTS_PROPERTY: "true"}.items()
        ]

        def work(conn: Connection) -> None:
            if self._namespace_exists(conn, ns):
                raise AlreadyExists(f"namespace {ns!r} already exists")
            conn.execute(insert(self._p), rows)

        try:
            self._run(work, write=True, what=f"create namespace {ns}")
        except IntegrityError:
            raise AlreadyExists(f"namespace {ns!r} already exists") from None

    def list_namespaces(self, parent: str | Iterable[str] = ()) -> list[Namespace]:
        """Namespaces directly below ``parent`` (top-level ones for ``()``), sorted."""
        levels = parse_namespace(parent, allow_empty=True)
        ns = namespace_to_string(levels)
        t, p = self._t, self._p

        def work(conn: Connection) -> list[str]:
            if levels and not self._namespace_exists(conn, ns):
                raise NoSuchNamespace(f"namespace {ns!r} does not exist")
            q1 = select(t.c.table_namespace.label("ns")).where(t.c.catalog_name == self.name)
            q2 = select(p.c.namespace.label("ns")).where(p.c.catalog_name == self.name)
            if levels:
                prefix = escape_like(ns) + ".%"
                q1 = q1.where(t.c.table_namespace.like(prefix, escape="!"))
                q2 = q2.where(p.c.namespace.like(prefix, escape="!"))
            return [row[0] for row in conn.execute(union(q1, q2))]

        depth = len(levels) + 1
        children = {
            found[:depth]
            for found in map(namespace_from_string, self._run(work, write=False))
            if len(found) >= depth and found[: len(levels)] == levels
        }
        return sorted(children)

    def load_namespace_properties(self, namespace: str | Iterable[str]) -> dict[str, str]:
        """A namespace's properties (without the reserved ``exists`` marker)."""
        ns = namespace_to_string(parse_namespace(namespace))
        p = self._p

        def work(conn: Connection) -> dict[str, str]:
            if not self._namespace_exists(conn, ns):
                raise NoSuchNamespace(f"namespace {ns!r} does not exist")
            query = select(p.c.property_key, p.c.property_value).where(
                p.c.catalog_name == self.name, p.c.namespace == ns
            )
            return {k: v or "" for k, v in conn.execute(query) if k != EXISTS_PROPERTY}

        return self._run(work, write=False)

    def update_namespace_properties(
        self,
        namespace: str | Iterable[str],
        removals: Iterable[str] | None = None,
        updates: dict[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        """Remove and set namespace properties in one transaction."""
        levels = parse_namespace(namespace)
        ns = namespace_to_string(levels)
        removal_keys = sorted(set(removals or ()))
        new_values = _checked_properties(updates or {})
        self._check_namespace_properties(levels, new_values)
        overlap = set(removal_keys) & set(new_values)
        if overlap:
            raise ValidationError(f"properties both removed and updated: {sorted(overlap)}")
        if EXISTS_PROPERTY in removal_keys:
            raise ValidationError(f"cannot remove the reserved namespace property {EXISTS_PROPERTY!r}")
        p = self._p

        def work(conn: Connection) -> PropertiesUpdateSummary:
            if not self._namespace_exists(conn, ns):
                raise NoSuchNamespace(f"namespace {ns!r} does not exist")
            where = (p.c.catalog_name == self.name, p.c.namespace == ns)
            current = {k for (k,) in conn.execute(select(p.c.property_key).where(*where))}
            removed = [k for k in removal_keys if k in current]
            if removed:
                conn.execute(delete(p).where(*where, p.c.property_key.in_(removed)))
            for key, value in new_values.items():
                if key in current:
                    conn.execute(
                        update(p).where(*where, p.c.property_key == key).values(property_value=value)
                    )
            inserts = {k: v for k, v in new_values.items() if k not in current}
            if EXISTS_PROPERTY not in current:  # keep the namespace alive whatever is removed
                inserts[EXISTS_PROPERTY] = "true"
            if inserts:
                conn.execute(
                    insert(p),
                    [
                        {"catalog_name": self.name, "namespace": ns, "property_key": k, "property_value": v}
                        for k, v in inserts.items()
                    ],
                )
            return PropertiesUpdateSummary(
                removed=removed,
                updated=sorted(new_values),
                missing=[k for k in removal_keys if k not in current],
            )

        return self._run(work, write=True, what=f"update properties of namespace {ns}")

    def drop_namespace(self, namespace: str | Iterable[str]) -> None:
        """Drop a namespace; NamespaceNotEmpty while it holds tables or child namespaces."""
        ns = namespace_to_string(parse_namespace(namespace))
        t, p = self._t, self._p

        def work(conn: Connection) -> None:
            if not self._namespace_exists(conn, ns):
                raise NoSuchNamespace(f"namespace {ns!r} does not exist")
            count = conn.execute(
                select(func.count())
                .select_from(t)
                .where(t.c.catalog_name == self.name, t.c.table_namespace == ns)
            ).scalar_one()
            if count:
                raise NamespaceNotEmpty(
                    f"namespace {ns!r} is not empty: it holds {count} table(s) or view(s)"
                )
            prefix = escape_like(ns) + ".%"
            for table, column in ((t, t.c.table_namespace), (p, p.c.namespace)):
                child = conn.execute(
                    select(column)
                    .where(table.c.catalog_name == self.name, column.like(prefix, escape="!"))
                    .limit(1)
                ).first()
                if child is not None:
                    raise NamespaceNotEmpty(
                        f"namespace {ns!r} is not empty: it has child namespace {child[0]!r}"
                    )
            conn.execute(delete(p).where(p.c.catalog_name == self.name, p.c.namespace == ns))

        self._run(work, write=True, what=f"drop namespace {ns}")

    # ------------------------------------------------------------------ table rows

    def _insert_table_row(self, namespace: Namespace, name: str, metadata_location: str) -> None:
        values: dict[str, Any] = {
            "catalog_name": self.name,
            "table_namespace": namespace_to_string(namespace),
            "table_name": name,
            "metadata_location": metadata_location,
            "previous_metadata_location": None,
        }
        if self._has_type:
            values["iceberg_type"] = TABLE_TYPE
        shown = identifier_to_string((*namespace, name))

        def verify(conn: Connection) -> bool:
            row = conn.execute(
                select(self._t.c.metadata_location).where(*self._row_filter(namespace, name))
            ).first()
            return row is not None and row[0] == metadata_location

        try:
            self._run(
                lambda conn: conn.execute(insert(self._t).values(**values)),
                write=True,
                verify=verify,
                what=f"create table {shown}",
            )
        except IntegrityError:
            raise AlreadyExists(f"table or view {shown!r} already exists") from None

    def _table_metadata_location(self, namespace: Namespace, name: str) -> str:
        shown = identifier_to_string((*namespace, name))
        query, row_params = self._pointer.pointer, PointerStatements.row(self.name, namespace, name)
        row = self._run(lambda conn: conn.execute(query, row_params).first(), write=False)
        if row is None:
            raise NoSuchTable(f"table {shown!r} does not exist")
        if not row[0]:
            raise NoSuchTable(f"table {shown!r} has no metadata location in the catalog")
        return str(row[0])

    def _delete_table_row(self, namespace: Namespace, name: str) -> None:
        stmt = delete(self._t).where(*self._row_filter(namespace, name), self._table_filter())
        count = self._run(lambda conn: conn.execute(stmt).rowcount, write=True)
        if count == 0:
            raise NoSuchTable(f"table {identifier_to_string((*namespace, name))!r} does not exist")

    def _rename_table_row(self, src: tuple[Namespace, str], dst: tuple[Namespace, str]) -> None:
        stmt = (
            update(self._t)
            .where(*self._row_filter(*src), self._table_filter())
            .values(table_namespace=namespace_to_string(dst[0]), table_name=dst[1])
        )
        try:
            count = self._run(lambda conn: conn.execute(stmt).rowcount, write=True)
        except IntegrityError:
            raise AlreadyExists(
                f"table or view {identifier_to_string((*dst[0], dst[1]))!r} already exists"
            ) from None
        if count == 0:
            raise NoSuchTable(f"table {identifier_to_string((*src[0], src[1]))!r} does not exist")

    def _all_table_rows(self) -> list[tuple[Namespace, str, str]]:
        t = self._t
        query = select(t.c.table_namespace, t.c.table_name, t.c.metadata_location).where(
            t.c.catalog_name == self.name, self._table_filter(), t.c.metadata_location.is_not(None)
        )
        rows = self._run(lambda conn: list(conn.execute(query)), write=False)
        return [(namespace_from_string(ns), name, str(location)) for ns, name, location in rows]

    def _all_view_rows(self) -> list[tuple[Namespace, str, str, str | None]]:
        if not self._has_type:  # the V0 layout holds no views
            return []
        t = self._t
        query = select(
            t.c.table_namespace, t.c.table_name, t.c.metadata_location, t.c.previous_metadata_location
        ).where(
            t.c.catalog_name == self.name, t.c.iceberg_type == VIEW_TYPE, t.c.metadata_location.is_not(None)
        )
        rows = self._run(lambda conn: list(conn.execute(query)), write=False)
        return [
            (namespace_from_string(ns), name, str(location), str(previous) if previous else None)
            for ns, name, location, previous in rows
        ]

    def _list_table_names(self, namespace: Namespace) -> list[str]:
        t = self._t
        query = select(t.c.table_name).where(
            t.c.catalog_name == self.name,
            t.c.table_namespace == namespace_to_string(namespace),
            self._table_filter(),
        )
        return self._run(lambda conn: [r[0] for r in conn.execute(query)], write=False)

    def _swap_metadata_location(self, namespace: Namespace, name: str, expected: str, new: str) -> None:
        shown = identifier_to_string((*namespace, name))
        stmt = self._pointer.swap
        values = PointerStatements.swap_values(self.name, namespace, name, expected, new)
        current = self._pointer.pointer_and_previous
        row_params = PointerStatements.row(self.name, namespace, name)

        def work(conn: Connection) -> None:
            if conn.execute(stmt, values).rowcount == 1:
                return
            row = conn.execute(current, row_params).first()
            if row is None:
                raise TableGoneDuringCommit(
                    f"cannot commit to table {shown!r}: it does not exist (dropped concurrently?)"
                )
            raise CommitConflict(
                f"table {shown!r} was changed by another commit: expected metadata {expected}, "
                f"catalog points at {row[0]}"
            )

        def verify(conn: Connection) -> bool:
            row = conn.execute(current, row_params).first()
            return row is not None and new in (row[0], row[1])

        self._run(work, write=True, verify=verify, what=f"commit to table {shown}")


def _close_quietly(conn: Connection | None) -> None:
    if conn is None:
        return
    try:
        conn.close()
    except Exception as exc:  # a dead connection may fail to roll back; the pool discards it
        logger.debug("ignoring error while closing a catalog connection: %s", exc)


def _checked_properties(properties: dict[str, str]) -> dict[str, str]:
    """String namespace properties that fit the catalog columns; the reserved key is refused.

    A NUL character is refused on every backend: PostgreSQL text columns cannot hold it (the
    insert fails with a DataError), and a catalog SQLite accepts it into could not be moved there.
    """
    checked: dict[str, str] = {}
    for key, value in properties.items():
        if not isinstance(key, str) or not key:
            raise ValidationError(f"invalid namespace property key {key!r}: expected a non-empty string")
        if key == EXISTS_PROPERTY:
            raise ValidationError(f"{EXISTS_PROPERTY!r} is a reserved namespace property")
        if len(key) > MAX_KEY_LENGTH:
            raise ValidationError(f"namespace property key {key[:40]!r}... is longer than {MAX_KEY_LENGTH}")
        text = value if isinstance(value, str) else str(value)
        if len(text) > MAX_VALUE_LENGTH:
            raise ValidationError(f"value of namespace property {key!r} is longer than {MAX_VALUE_LENGTH}")
        if "\x00" in key or "\x00" in text:
            raise ValidationError(
                f"namespace property {key!r} contains a NUL character, which a catalog cannot store"
            )
        checked[key] = text
    return checked
