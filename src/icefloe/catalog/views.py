"""What a catalog's view store offers, whichever catalog holds the views.

``SqlViews`` (views in icefloe's SQL catalog) and ``RestViews`` (views behind the Iceberg REST
protocol) both satisfy ``ViewStore``, so callers such as the Spark SQL statements use either.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from icefloe.spec.view_metadata import ViewMetadata


class ViewStore(Protocol):
    """The views of one catalog, by identifier (namespace levels + name)."""

    def exists(self, identifier: str | Iterable[str]) -> bool:
        """Whether a view of that name exists."""
        ...

    def load(self, identifier: str | Iterable[str]) -> tuple[ViewMetadata, str]:
        """The view's metadata and its metadata file's location (``NoSuchView`` when missing)."""
        ...

    def names(self, namespace: str | Iterable[str]) -> list[tuple[str, ...]]:
        """The views of a namespace, sorted."""
        ...

    def create(self, identifier: str | Iterable[str], metadata: ViewMetadata) -> str:
        """Create the view; returns its metadata location (``AlreadyExists`` when the name is taken)."""
        ...

    def replace(self, identifier: str | Iterable[str], expected_location: str, metadata: ViewMetadata) -> str:
        """Commit ``metadata`` if the view is still at ``expected_location`` (else CommitConflict), as
        Iceberg Java's ``ViewMetadata.Builder`` builds it on that file: equal schemas and versions
        reused, versions beyond ``version.history.num-entries`` expired, a SQL dialect dropped
        refused (ValidationError) unless ``replace.drop-dialect.allowed``; returns the view's
        metadata location (unchanged when nothing changes)."""
        ...

    def drop(self, identifier: str | Iterable[str]) -> None:
        """Drop the view (``NoSuchView`` when missing)."""
        ...

    def rename(self, source: str | Iterable[str], target: str | Iterable[str]) -> None:
        """Rename or move the view."""
        ...
