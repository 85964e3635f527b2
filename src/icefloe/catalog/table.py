"""The user-facing Table: a catalog identifier bound to its current metadata (coordinator owns this)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icefloe.catalog.base import Catalog
    from icefloe.io.fileio import FileIO
    from icefloe.spec.table_metadata import TableMetadata


class Table:
    """An Iceberg table loaded from a catalog."""

    def __init__(
        self,
        identifier: tuple[str, ...],
        metadata: TableMetadata,
        metadata_location: str,
        io: FileIO,
        catalog: Catalog,
    ) -> None:
        self.identifier = identifier
        self.metadata = metadata
        self.metadata_location = metadata_location
        self.io = io
        self.catalog = catalog
