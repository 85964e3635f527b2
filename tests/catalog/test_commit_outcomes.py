"""Commit outcomes when the database connection fails: unknown means raise and delete nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import Connection, create_engine, text
from sqlalchemy.exc import OperationalError

from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import CommitConflict, CommitStateUnknown
from icefloe.io.fileio import local_path
from icefloe.spec.schema import Schema
from icefloe.spec.table_metadata import TableMetadata

pytestmark = pytest.mark.all_catalogs


def _bump(md: TableMetadata) -> TableMetadata:
    return md.with_changes(
        properties={**md.properties, "n": str(len(md.metadata_log))}, last_updated_ms=md.last_updated_ms + 1
    )


def _metadata_files(md: TableMetadata) -> set[str]:
    return {str(p) for p in (Path(local_path(md.location)) / "metadata").glob("*.metadata.json")}


def _lost_connection() -> OperationalError:
    return OperationalError("COMMIT", {}, Exception("server closed the connection unexpectedly"))


@pytest.mark.parametrize("catalog", ["sql"], indirect=True)  # SQL layout / outside-warehouse paths
def test_failure_before_commit_lands_is_unknown_and_keeps_the_file(
    catalog: SqlCatalog, schema: Schema, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema)

    def fail(conn: Connection) -> None:
        raise _lost_connection()

    monkeypatch.setattr(catalog, "_commit_transaction", fail)
    before = _metadata_files(table.metadata)
    with pytest.raises(CommitStateUnknown, match="may or may not"):
        catalog.commit_table(
            "ns.t", table.metadata_location, _bump(table.metadata), base_metadata=table.metadata
        )
    after = _metadata_files(table.metadata)
    assert len(after - before) == 1  # the new file is kept: it might be the current metadata
    monkeypatch.undo()
    assert catalog.load_table("ns.t").metadata_location == table.metadata_location


@pytest.mark.parametrize("catalog", ["sql"], indirect=True)  # SQL layout / outside-warehouse paths
def test_failure_after_commit_landed_is_verified_as_success(
    catalog: SqlCatalog, schema: Schema, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema)

    def commit_then_fail(conn: Connection) -> None:
        conn.commit()
        raise _lost_connection()

    monkeypatch.setattr(catalog, "_commit_transaction", commit_then_fail)
    location = catalog.commit_table(
        "ns.t", table.metadata_location, _bump(table.metadata), base_metadata=table.metadata
    )
    monkeypatch.undo()
    assert catalog.load_table("ns.t").metadata_location == location


@pytest.mark.parametrize("catalog", ["sql"], indirect=True)  # SQL layout / outside-warehouse paths
def test_create_with_unknown_outcome(
    catalog: SqlCatalog, schema: Schema, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog.create_namespace("ns")

    def fail(conn: Connection) -> None:
        raise _lost_connection()

    monkeypatch.setattr(catalog, "_commit_transaction", fail)
    with pytest.raises(CommitStateUnknown):
        catalog.create_table("ns.t", schema)
    monkeypatch.undo()
    assert not catalog.table_exists("ns.t")
    metadata_dir = Path(local_path(catalog.warehouse or "")) / "ns" / "t" / "metadata"
    files = list(metadata_dir.glob("*.metadata.json"))
    assert len(files) == 1


@pytest.mark.postgres
def test_backend_killed_during_commit(
    postgres_uri: str, warehouse: Path, catalog_name: str, schema: Schema
) -> None:
    """A real dropped connection: the server session is terminated between UPDATE and COMMIT."""
    catalog = SqlCatalog(catalog_name, uri=postgres_uri, warehouse=str(warehouse))
    admin = create_engine(postgres_uri, isolation_level="AUTOCOMMIT")
    try:
        catalog.create_namespace("ns")
        table = catalog.create_table("ns.t", schema)
        real_commit = SqlCatalog._commit_transaction

        def kill_then_commit(self: SqlCatalog, conn: Connection) -> None:
            pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
            with admin.connect() as other:
                other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            real_commit(self, conn)

        catalog._commit_transaction = kill_then_commit.__get__(catalog)  # type: ignore[method-assign]
        before = _metadata_files(table.metadata)
        with pytest.raises(CommitStateUnknown):
            catalog.commit_table(
                "ns.t", table.metadata_location, _bump(table.metadata), base_metadata=table.metadata
            )
        assert len(_metadata_files(table.metadata) - before) == 1
        del catalog._commit_transaction
        # The pool recovers (pre-ping) and the table is unchanged.
        assert catalog.load_table("ns.t").metadata_location == table.metadata_location
    finally:
        admin.dispose()
        catalog.close()


def test_sqlite_lock_is_waited_out(
    tmp_path: Path, warehouse: Path, schema: Schema, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer holding the SQLite lock delays a commit but does not fail it. The lock is released
    when the commit has seen it (not after a fixed time), so no machine is too slow for the test."""
    from icefloe.catalog import sql as sql_catalog

    uri = f"sqlite:///{tmp_path / 'c.db'}"
    catalog = SqlCatalog("c", uri=uri, warehouse=str(warehouse), **{"sqlite.busy-timeout-seconds": "0.05"})
    try:
        catalog.create_namespace("ns")
        table = catalog.create_table("ns.t", schema)
        blocker = sqlite3.connect(tmp_path / "c.db", isolation_level=None, check_same_thread=False)
        blocker.execute("BEGIN IMMEDIATE")
        seen: list[BaseException] = []
        real_is_locked = sql_catalog.is_sqlite_locked

        def release_once_seen(exc: BaseException) -> bool:
            locked = real_is_locked(exc)
            if locked and not seen:
                seen.append(exc)
                blocker.rollback()  # the other writer finishes; the commit must now go through
            return locked

        monkeypatch.setattr(sql_catalog, "is_sqlite_locked", release_once_seen)
        location = catalog.commit_table(
            "ns.t", table.metadata_location, _bump(table.metadata), base_metadata=table.metadata
        )
        blocker.close()
        assert len(seen) == 1  # the commit did meet the lock
        assert catalog.load_table("ns.t").metadata_location == location
    finally:
        catalog.close()


def test_sqlite_lock_that_never_clears_is_a_conflict(tmp_path: Path, warehouse: Path, schema: Schema) -> None:
    uri = f"sqlite:///{tmp_path / 'c.db'}"
    catalog = SqlCatalog(
        "c",
        uri=uri,
        warehouse=str(warehouse),
        **{"sqlite.busy-timeout-seconds": "0.05", "lock-retry-seconds": "0.3"},
    )
    try:
        catalog.create_namespace("ns")
        table = catalog.create_table("ns.t", schema)
        before = _metadata_files(table.metadata)
        blocker = sqlite3.connect(tmp_path / "c.db", isolation_level=None, check_same_thread=False)
        blocker.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(CommitConflict, match="locked"):
                catalog.commit_table(
                    "ns.t", table.metadata_location, _bump(table.metadata), base_metadata=table.metadata
                )
        finally:
            blocker.rollback()
            blocker.close()
        assert _metadata_files(table.metadata) == before  # known not committed: file removed
    finally:
        catalog.close()
