"""The types the two seams share: what a commit changes, how a tree write is asked for, what it wrote.

Every tree module (the dispatchers ``read_seam`` / ``write_seam`` and the version modules
``v3_*`` / ``v4_*``) takes these from here, so no version module needs a seam module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from icefloe.errors import ValidationError
from icefloe.formats.avro.manifest_list import ManifestListResult
from icefloe.formats.v4.content_entry_schema import ContentEntrySchema
from icefloe.io.fileio import FileIO
from icefloe.spec.content import (
    ColumnFile,
    DataFile,
    DeletionVectorRef,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.locations import LocationProvider

ManifestFilter = Callable[[ManifestFile], bool]
"""Keeps a manifest (or v4 reference) when it returns True."""
EntryFilter = Callable[[ManifestEntry], bool]
"""Keeps a content entry when it returns True."""


@dataclass(frozen=True)
class EntrySelection:
    """Which manifests and entries a read of live entries keeps (everything by default)."""

    manifest_filter: ManifestFilter | None = None
    entry_filter: EntryFilter | None = None
    content: ManifestContent | None = None

    def keeps_manifest(self, manifest: ManifestFile) -> bool:
        """The manifest has the wanted content and passes the manifest filter."""
        if self.content is not None and manifest.content != self.content:
            return False
        return self.manifest_filter is None or self.manifest_filter(manifest)

    def keeps_entry(self, entry: ManifestEntry) -> bool:
        """The entry passes the entry filter."""
        return self.entry_filter is None or self.entry_filter(entry)


@dataclass(frozen=True)
class StoredAdditions:
    """Root rows of added data files as a v4 root stored them, in the encoder's Arrow types.

    ``rows`` follow ``TreeChange.added_data_files`` in order, typed by ``schema.write_arrow``
    with locations relative to ``table_location``; their tracking is rewritten for the commit.
    """

    rows: pa.Table
    schema: ContentEntrySchema
    table_location: str | None


@dataclass
class TreeChange:
    """What a commit changes: files added, live parent entries removed (matched by file path)."""

    added_data_files: list[DataFile] = field(default_factory=list)
    added_delete_files: list[DataFile] = field(default_factory=list)
    removed_entries: list[ManifestEntry] = field(default_factory=list)
    # explicit data sequence number for the added files (e.g. compaction keeping the old one)
    added_data_sequence_number: int | None = None
    # raise ValidationError when a removed path is not live in the parent
    fail_missing_removals: bool = True
    # v4: new colocated deletion vectors by data file path (live or added in this change)
    added_dvs: dict[str, DeletionVectorRef] = field(default_factory=dict)
    # v4: a new column file for each of these live data files (it supersedes older column files
    # for the same fields; the entry's data sequence number moves to this commit's)
    added_column_files: dict[str, ColumnFile] = field(default_factory=dict)
    # v4: the added data files' root rows as another root stored them, when the caller has them (a
    # server rebasing a client's append): the fast path uses them instead of encoding the files
    # again; the general path does not need them
    stored_additions: StoredAdditions | None = None

    def check_contents(self) -> None:
        """ValidationError when a delete file is added as data or a data file as a delete."""
        for f in self.added_data_files:
            if f.content != FileContent.DATA:
                raise ValidationError(f"{f.file_path} is a delete file; add it with added_delete_files")
        for f in self.added_delete_files:
            if f.content == FileContent.DATA:
                raise ValidationError(f"{f.file_path} is a data file; add it with added_data_files")


@dataclass(frozen=True)
class TreeWriteRequest:
    """One request to write a new snapshot's metadata tree (any format version).

    ``properties`` override table properties; ``merge`` turns on the merge-append policy (v1–v3,
    still subject to ``commit.manifest-merge.enabled``; v4 compaction follows
    ``write.v4.compaction.*``). Row ids start at ``first_row_id`` (default: the table's
    ``next-row-id``). ``attempt`` numbers the commit attempt in the written file names.
    """

    io: FileIO
    metadata: TableMetadata
    parent: Snapshot | None
    change: TreeChange
    snapshot_id: int
    sequence_number: int
    location_provider: LocationProvider | None = None
    properties: Mapping[str, str] | None = None
    merge: bool = False
    attempt: int = 1
    first_row_id: int | None = None

    @property
    def effective_properties(self) -> dict[str, str]:
        """Table properties with this request's overrides applied."""
        return {**self.metadata.properties, **(self.properties or {})}

    @property
    def locations(self) -> LocationProvider:
        """Where new files go: the request's provider or the table's default one."""
        return self.location_provider or LocationProvider(self.metadata)


@dataclass(frozen=True)
class TreeResult:
    """The written tree: where the snapshot points, its manifests, row-id range and summary."""

    manifest_list_location: str | None
    root_manifest_location: str | None
    manifests: Sequence[ManifestFile]  # v4: the new root's live references
    first_row_id: int | None
    added_rows: int | None
    summary: dict[str, str]
    written_files: list[str] = field(default_factory=list)
    removed_entries: list[ManifestEntry] = field(default_factory=list)

    @classmethod
    def of_manifest_list(
        cls,
        location: str,
        listed: ManifestListResult,
        summary: dict[str, str],
        written_files: list[str],
        removed_entries: list[ManifestEntry] | None = None,
    ) -> TreeResult:
        """The tree of a v1–v3 snapshot: the manifest list ``listed`` written at ``location``."""
        return cls(
            manifest_list_location=location,
            root_manifest_location=None,
            manifests=listed.manifests,
            first_row_id=listed.first_row_id,
            added_rows=listed.added_rows,
            summary=summary,
            written_files=written_files,
            removed_entries=[] if removed_entries is None else removed_entries,
        )
