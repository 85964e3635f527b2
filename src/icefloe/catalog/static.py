"""Static tables: a table opened read-only from a metadata file, without any catalog.

``static_table(location)`` accepts a ``*.metadata.json`` location, or a table directory in the
Hadoop layout (its ``version-hint.text`` picks the file). Scans, time travel and metadata tables
work; anything that would commit raises ``Unsupported`` before a single file is written.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from icefloe.catalog.base import Catalog, PropertiesUpdateSummary
from icefloe.catalog.hadoop import current_version_file
from icefloe.catalog.identifiers import Namespace
from icefloe.catalog.table import Table
from icefloe.errors import NotFound, Unsupported
from icefloe.formats.metadata_file import read_table_metadata
from icefloe.io.fileio import load_file_io, local_path
from icefloe.spec.table_metadata import TableMetadata

READ_ONLY = "a static table is read-only: open it through a catalog to change it"


class StaticCatalog(Catalog):
    """The stand-in catalog of static tables: knows one metadata file and refuses every change."""

    def __init__(self, metadata_location: str, **properties: str) -> None:
        super().__init__("static", **properties)
        self.metadata_location = metadata_location

    def _refuse(self, *args: object, **kwargs: object) -> None:
        raise Unsupported(READ_ONLY)

    def create_namespace(
        self, namespace: str | Iterable[str], properties: dict[str, str] | None = None
    ) -> None:
        """Refused."""
        self._refuse()

    def list_namespaces(self, parent: str | Iterable[str] = ()) -> list[Namespace]:
        """No namespaces."""
        return []

    def load_namespace_properties(self, namespace: str | Iterable[str]) -> dict[str, str]:
        """No namespaces."""
        raise NotFound("a static table has no namespaces")

    def update_namespace_properties(
        self,
        namespace: str | Iterable[str],
        removals: Iterable[str] | None = None,
        updates: dict[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        """Refused."""
        raise Unsupported(READ_ONLY)

    def drop_namespace(self, namespace: str | Iterable[str]) -> None:
        """Refused."""
        self._refuse()

    def namespace_exists(self, namespace: str | Iterable[str]) -> bool:
        """No namespaces."""
        return False

    def _insert_table_row(self, namespace: Namespace, name: str, metadata_location: str) -> None:
        self._refuse()

    def _table_metadata_location(self, namespace: Namespace, name: str) -> str:
        return self.metadata_location

    def _delete_table_row(self, namespace: Namespace, name: str) -> None:
        self._refuse()

    def _rename_table_row(self, src: tuple[Namespace, str], dst: tuple[Namespace, str]) -> None:
        self._refuse()

    def _list_table_names(self, namespace: Namespace) -> list[str]:
        return []

    def _swap_metadata_location(self, namespace: Namespace, name: str, expected: str, new: str) -> None:
        self._refuse()

    def commit_table(
        self,
        identifier: str | Iterable[str],
        base_metadata_location: str | None,
        new_metadata: TableMetadata,
        *,
        base_metadata: TableMetadata | None = None,
    ) -> str:
        """Refused."""
        raise Unsupported(READ_ONLY)

    def ensure_writable(self, table: Table) -> None:
        """Refused: static tables take no writes."""
        raise Unsupported(f"{READ_ONLY} (table {table.name})")


def static_table(location: str, properties: dict[str, str] | None = None) -> Table:
    """Open a table read-only from its metadata file (or a Hadoop-layout table directory)."""
    props = dict(properties or {})
    path = local_path(location)
    if path is not None and os.path.isdir(path):
        found = current_version_file(path)
        if found is None:
            raise NotFound(f"{location} holds no table metadata (no metadata/v<N>.metadata.json)")
        location = "file://" + found
    catalog = StaticCatalog(location, **props)
    io = load_file_io(props, location)
    md = read_table_metadata(io, location)
    name = os.path.basename(md.location.rstrip("/")) or "static"
    return Table(
        ("static", name), md, location, load_file_io({**props, **md.properties}, md.location), catalog
    )
