"""An interrupt at every step of a commit's swap never deletes a committed file (issue 13, item 8).

Iceberg Java's rule: a writer deletes the files it wrote for a commit only when the failure is
known to be clean (a ``CleanableFailure``: a lost compare-and-swap, a validation failure before the
swap). A ``KeyboardInterrupt`` (or a signal, a timeout, an unknown error) raised while the catalog
swap is under way may strike after the database COMMIT, so nothing may be deleted then.

Each test appends to a table and raises ``KeyboardInterrupt`` from one step of the SQL catalog's
swap (hooks on SQLAlchemy's cursor events and patched seams), on SQLite and PostgreSQL, then
checks with a fresh catalog that the table reads, that it is at the old or the new state exactly as
the step implies, and that every file its metadata references still exists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from sqlalchemy import Connection, event

from icefloe.catalog import base as catalog_base
from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import CommitConflict, ValidationError, nothing_committed
from icefloe.io.fileio import local_path
from icefloe.spec.schema import Schema
from icefloe.table.table import Table
from icefloe.tree.reachable import reachable_files
from icefloe.txn import transaction


class Interrupt(KeyboardInterrupt):
    """The injected interrupt (a KeyboardInterrupt, so ``except Exception`` cannot swallow it)."""


@dataclass(frozen=True)
class Step:
    """A point of the swap where the interrupt strikes, and whether the commit has landed there."""

    name: str
    committed: bool


STEPS = [
    Step("before-metadata-write", committed=False),
    Step("after-metadata-write", committed=False),
    Step("before-update-statement", committed=False),
    Step("after-update-statement", committed=False),
    Step("before-database-commit", committed=False),
    Step("after-database-commit", committed=True),
    Step("after-swap-returned", committed=True),
    Step("after-commit-table-returned", committed=True),
]


def _is_pointer_update(statement: str) -> bool:
    return statement.lstrip().upper().startswith("UPDATE ICEBERG_TABLES")


@pytest.fixture
def arm(monkeypatch: pytest.MonkeyPatch, catalog: SqlCatalog) -> Iterator[Callable[[Step], None]]:
    """Install the interrupt of one step on ``catalog`` (undone at teardown)."""
    listeners: list[tuple[str, Callable[..., None]]] = []

    def install(step: Step) -> None:
        name = step.name
        if name in ("before-metadata-write", "after-metadata-write"):
            real_write = catalog_base.write_table_metadata

            def write(*args: Any, **kwargs: Any) -> str:
                if name == "before-metadata-write":
                    raise Interrupt(name)
                real_write(*args, **kwargs)
                raise Interrupt(name)

            monkeypatch.setattr(catalog_base, "write_table_metadata", write)
        elif name in ("before-update-statement", "after-update-statement"):
            hook = "before_cursor_execute" if name.startswith("before") else "after_cursor_execute"

            def on_execute(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
                if _is_pointer_update(statement):
                    raise Interrupt(name)

            event.listen(catalog.engine, hook, on_execute)
            listeners.append((hook, on_execute))
        elif name in ("before-database-commit", "after-database-commit"):

            def commit(conn: Connection) -> None:
                if name == "before-database-commit":
                    raise Interrupt(name)
                conn.commit()
                raise Interrupt(name)

            monkeypatch.setattr(catalog, "_commit_transaction", commit)
        elif name == "after-swap-returned":
            real_swap = catalog._swap_metadata_location

            def swap(*args: Any) -> None:
                real_swap(*args)
                raise Interrupt(name)

            monkeypatch.setattr(catalog, "_swap_metadata_location", swap)
        else:
            real_commit_table = catalog.commit_table

            def commit_table(*args: Any, **kwargs: Any) -> str:
                real_commit_table(*args, **kwargs)
                raise Interrupt(name)

            monkeypatch.setattr(catalog, "commit_table", commit_table)

    yield install
    for hook, fn in listeners:
        event.remove(catalog.engine, hook, fn)


def _rows(start: int, n: int) -> pa.Table:
    ids = range(start, start + n)
    return pa.table({"id": pa.array(ids, pa.int64()), "name": [f"r{i}" for i in ids]})


def _referenced_files(table: Table) -> set[str]:
    md = table.metadata
    reachable = reachable_files(table.io, md, md.snapshots)
    names = set(reachable.tree) | reachable.live | {table.metadata_location}
    names.update(entry.metadata_file for entry in md.metadata_log)
    return names


def _missing(paths: set[str]) -> list[str]:
    return sorted(p for p in paths if not Path(local_path(p) or p).exists())


def _files_under(location: str) -> set[str]:
    root = Path(local_path(location) or location)
    return {str(p) for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("format_version", [2, 4])
@pytest.mark.parametrize("step", STEPS, ids=[s.name for s in STEPS])
def test_interrupt_during_swap_deletes_no_committed_file(
    catalog: SqlCatalog,
    schema: Schema,
    arm: Callable[[Step], None],
    monkeypatch: pytest.MonkeyPatch,
    step: Step,
    format_version: int,
) -> None:
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema, properties={"format-version": str(format_version)})
    table.append(_rows(0, 3))
    before = _referenced_files(catalog.load_table("ns.t"))

    arm(step)
    with pytest.raises(Interrupt) as raised:
        table.append(_rows(3, 4))
    assert not nothing_committed(raised.value)  # callers holding staged files must keep them too
    monkeypatch.undo()

    fresh = SqlCatalog(catalog.name, uri=str(catalog.engine.url.render_as_string(hide_password=False)))
    try:
        reloaded = fresh.load_table("ns.t")
        expected = 7 if step.committed else 3
        ids = sorted(reloaded.to_arrow().column("id").to_pylist())
        assert ids == list(range(expected))
        assert len(reloaded.snapshots()) == (2 if step.committed else 1)
        after = _referenced_files(reloaded)
        assert _missing(after) == []  # nothing the table references was deleted
        assert before <= after
        reloaded.append(_rows(expected, 2))  # and the table keeps working
        assert sorted(fresh.load_table("ns.t").to_arrow().column("id").to_pylist()) == list(
            range(expected + 2)
        )
    finally:
        fresh.close()


def test_lost_compare_and_swap_is_cleaned_up(
    catalog: SqlCatalog, schema: Schema, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CommitConflict from a failed compare-and-swap is clean: the attempt's files are deleted."""
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema, properties={"commit.retry.num-retries": "0"})
    table.append(_rows(0, 2))
    stale = catalog.load_table("ns.t")
    base = (stale.metadata, stale.metadata_location)
    catalog.load_table("ns.t").append(_rows(2, 2))  # moves the pointer under ``stale``
    monkeypatch.setattr(stale, "load_for_commit", lambda: base)  # the attempt starts from the old base
    files_before = _files_under(table.location())
    with pytest.raises(CommitConflict) as raised:
        stale.append(_rows(10, 5))
    assert nothing_committed(raised.value)
    assert _files_under(table.location()) == files_before  # data, manifests, metadata: all removed
    assert sorted(catalog.load_table("ns.t").to_arrow().column("id").to_pylist()) == [0, 1, 2, 3]


def test_failure_before_the_swap_is_cleaned_up(
    catalog: SqlCatalog, schema: Schema, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupt before the swap starts (while writing manifests) is clean: files are deleted."""
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema)
    table.append(_rows(0, 2))
    files_before = _files_under(table.location())

    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise Interrupt("before the swap")

    monkeypatch.setattr(transaction, "apply_updates", interrupted)  # after the manifests were written
    with pytest.raises(Interrupt) as raised:
        table.append(_rows(2, 3))
    assert nothing_committed(raised.value)
    assert _files_under(table.location()) == files_before
    monkeypatch.undo()
    with pytest.raises(ValidationError):  # a validation failure is clean too
        table.append(pa.table({"other": [1]}))
    assert _files_under(table.location()) == files_before
