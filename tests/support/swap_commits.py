"""A real SqlCatalog with a hook at the moment a pointer swap commits (the new pointer becomes
visible and durable then, not when the swap's transaction begins)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from sqlalchemy import Connection

from icefloe.catalog.identifiers import Namespace
from icefloe.catalog.sql import SqlCatalog


class SwapCommitWatchingCatalog(SqlCatalog):
    """Calls ``at_swap_commit`` right before each compare-and-swap's COMMIT."""

    swapping = False

    def at_swap_commit(self) -> None:
        """Override: look at the world as the pointer moves."""

    def _swap_metadata_location(self, namespace: Namespace, name: str, expected: str, new: str) -> None:
        self.swapping = True
        try:
            super()._swap_metadata_location(namespace, name, expected, new)
        finally:
            self.swapping = False

    def _commit_transaction(self, conn: Connection) -> None:
        if self.swapping:
            self.at_swap_commit()
        super()._commit_transaction(conn)


C = TypeVar("C", bound=SwapCommitWatchingCatalog)


@contextmanager
def opened(kind: type[C], root: Path) -> Iterator[C]:
    """A fresh SQLite catalog of ``kind`` under ``root`` (warehouse ``root/wh``, namespace ``db``)."""
    catalog = kind("c", uri=f"sqlite:///{root / 'c.db'}", warehouse=str(root / "wh"))
    catalog.create_namespace("db")
    try:
        yield catalog
    finally:
        catalog.close()
