"""Tables opened from a metadata file alone, with no catalog: read-only.

``open_static_table("s3://bucket/wh/db/t/metadata/00003-....metadata.json")`` reads the table as
that file describes it (every snapshot, ref and metadata table); any write raises ``Unsupported``
before a file is written, since no catalog pointer exists to swap. ``catalog.static.static_table``
also accepts a Hadoop-layout table directory.
"""

from __future__ import annotations

from dataclasses import dataclass

from icefloe.errors import Unsupported
from icefloe.formats.metadata.files import read_table_metadata
from icefloe.io.fileio import FileIO, load_file_io
from icefloe.spec.table_metadata import TableMetadata
from icefloe.table.table import Table


@dataclass(frozen=True)
class ReadOnlyTarget:
    """A commit target that reloads the same metadata file and refuses every commit."""

    def ensure_writable(self) -> None:
        """Always refused (checked before any file is written)."""
        raise Unsupported(_read_only(self.metadata_location))

    def committed_metadata(self, location: str, proposed: TableMetadata) -> TableMetadata:
        """Never reached: nothing commits."""
        raise Unsupported(_read_only(self.metadata_location))

    def other_table_roots(self) -> tuple[str, ...]:
        """No catalog, so no neighbours are known."""
        return ()

    io: FileIO
    metadata_location: str

    def load_for_commit(self) -> tuple[TableMetadata, str | None]:
        """The metadata file, read again."""
        return read_table_metadata(self.io, self.metadata_location), self.metadata_location

    def load_current(self) -> tuple[TableMetadata, str | None]:
        """The metadata file, read again."""
        return self.load_for_commit()

    def swap_metadata(
        self, base_location: str | None, base_metadata: TableMetadata, new_metadata: TableMetadata
    ) -> str:
        """Always refused."""
        raise Unsupported(_read_only(self.metadata_location))


def _read_only(location: str) -> str:
    return f"a static table is read-only (opened from {location}): load it from a catalog to change it"


def open_static_table(
    metadata_location: str, io: FileIO | None = None, properties: dict[str, str] | None = None
) -> Table:
    """Open the table a metadata file describes, read-only, without a catalog."""
    props = dict(properties or {})
    # a path the caller names: that it exists now is the point, even when its parse is cached
    metadata = read_table_metadata(
        io or load_file_io(props, metadata_location), metadata_location, confirm_exists=True
    )
    io = io or load_file_io({**props, **metadata.properties}, metadata.location)
    name = metadata_location.rstrip("/").rsplit("/", 3)[-3] if metadata_location.count("/") >= 3 else "static"
    return Table(("static", name), metadata, metadata_location, io, ReadOnlyTarget(io, metadata_location))
