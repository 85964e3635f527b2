"""The SQLAlchemy side of SqlCatalog: the JDBC catalog table definitions and engine set-up.

SQLite engines get a busy timeout and WAL journal on every connection (event listener), and
writers begin with ``BEGIN IMMEDIATE`` so that they wait for the write lock instead of failing
when a read lock cannot be upgraded. PostgreSQL engines ping pooled connections before use.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from typing import Any

from sqlalchemy import Column, Connection, Engine, MetaData, String, Table, create_engine, event
from sqlalchemy.engine import make_url

logger = logging.getLogger(__name__)

TABLES = "iceberg_tables"
NAMESPACE_PROPERTIES = "iceberg_namespace_properties"
TABLE_TYPE = "TABLE"
VIEW_TYPE = "VIEW"

# Catalog properties for the engine.
SQLITE_BUSY_TIMEOUT = "sqlite.busy-timeout-seconds"
SQLITE_JOURNAL_MODE = "sqlite.journal-mode"
ECHO = "echo"


def catalog_tables(with_type: bool) -> tuple[Table, Table]:
    """SQLAlchemy Core definitions of the two catalog tables (with or without ``iceberg_type``)."""
    md = MetaData()
    columns: list[Column[Any]] = [
        Column("catalog_name", String(255), primary_key=True, nullable=False),
        Column("table_namespace", String(255), primary_key=True, nullable=False),
        Column("table_name", String(255), primary_key=True, nullable=False),
        Column("metadata_location", String(1000), nullable=True),
        Column("previous_metadata_location", String(1000), nullable=True),
    ]
    if with_type:
        columns.append(Column("iceberg_type", String(5), nullable=True))
    tables = Table(TABLES, md, *columns)
    namespace_properties = Table(
        NAMESPACE_PROPERTIES,
        md,
        Column("catalog_name", String(255), primary_key=True, nullable=False),
        Column("namespace", String(255), primary_key=True, nullable=False),
        Column("property_key", String(255), primary_key=True, nullable=False),
        Column("property_value", String(1000), nullable=False),
    )
    return tables, namespace_properties


def escape_like(text: str) -> str:
    """``text`` with LIKE wildcards escaped by ``!`` (use ``escape="!"``)."""
    return text.replace("!", "!!").replace("%", "!%").replace("_", "!_")


def is_sqlite_locked(exc: BaseException) -> bool:
    """Whether a database error is SQLite saying another connection holds the lock."""
    orig = getattr(exc, "orig", exc)
    if not isinstance(orig, sqlite3.OperationalError):
        return False
    message = str(orig).lower()
    return "locked" in message or "busy" in message


def create_catalog_engine(uri: str, properties: dict[str, str]) -> Engine:
    """A SQLAlchemy engine for a catalog database; SQLite gets WAL, busy timeout and IMMEDIATE writes."""
    url = make_url(uri)
    echo = properties.get(ECHO, "false").lower() == "true"
    if url.get_backend_name() != "sqlite":
        return create_engine(url, echo=echo, pool_pre_ping=True)
    database = url.database or ""
    in_memory = database in ("", ":memory:") or "mode=memory" in database
    if not in_memory and not database.startswith("file:"):
        os.makedirs(os.path.dirname(os.path.abspath(database)), exist_ok=True)
    busy_seconds = float(properties.get(SQLITE_BUSY_TIMEOUT, "30"))
    journal_mode = properties.get(SQLITE_JOURNAL_MODE, "wal").upper()
    engine = create_engine(url, echo=echo, connect_args={"timeout": busy_seconds})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event (below) emit BEGIN instead of the driver's implicit one.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {int(busy_seconds * 1000)}")
            if not in_memory:
                try:
                    cursor.execute(f"PRAGMA journal_mode = {journal_mode}")
                except sqlite3.OperationalError as exc:  # another process is switching it right now
                    logger.debug("could not set journal_mode=%s: %s", journal_mode, exc)
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # Writers take the write lock up front, so the busy timeout applies and a read lock is
        # never upgraded (WAL would fail that upgrade at once with SQLITE_BUSY).
        write = conn.get_execution_options().get("icefloe_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine
