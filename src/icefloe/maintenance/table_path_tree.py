"""Rewriting a snapshot's tree for a copy of the table at another location, bottom up.

Every file whose bytes hold a path is rewritten (its paths moved to the target prefix) into the
staging location; every other file is copied as it is. Each rewritten file's new length goes into
the file that points at it, so the tree is rewritten from its leaves up:

- v1–v3: position delete files (``file_path`` column) and deletion-vector Puffin files (the
  ``referenced-data-file`` blob property) first, then manifests (``file_path``,
  ``referenced_data_file``, the ``file_path`` bounds of position delete files, the new sizes),
  then the manifest list (``manifest_path``, ``manifest_length``);
- v4: deletion-vector Puffin files and position delete files, then leaf manifests, then the root
  (``location``, ``deletion_vector.location``, ``column_files[].location``, file sizes). A
  relative location stays relative: it is resolved against the copy's own table location.

A file is rewritten once however many snapshots share it. Only files *added* by the snapshots
being copied are put on the copy plan (Java's rule for incremental copies: an entry's or a
manifest's snapshot id); files of earlier snapshots are still rewritten in memory when a new
manifest list or root points at them, because their new length is needed, but not staged again.
Nothing is written here: the caller writes :attr:`TreeRewriter.staged` once the whole table has
been rewritten, so a path outside the source prefix fails the copy before anything is written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from icefloe.errors import Unsupported
from icefloe.formats.avro import schemas as avs
from icefloe.formats.avro.rewrite import Record, field_names, rewrite_records
from icefloe.formats.parquet.delete_paths import with_deleted_file_paths
from icefloe.formats.puffin.files import FileMetadata, read_puffin_footer, with_footer
from icefloe.formats.v4.content_entry_schema import has_scheme, resolve_location
from icefloe.formats.v4.entry_paths import EntryPaths, read_entry_paths, with_entry_paths
from icefloe.io.fileio import FileIO
from icefloe.maintenance.table_path_prefix import PrefixMap
from icefloe.spec.content import EntryStatus, FileContent
from icefloe.spec.conversions import to_bytes
from icefloe.spec.schema import DELETE_FILE_PATH_ID
from icefloe.spec.types import StringType

# manifest list and manifest entry field ids (Iceberg spec)
MANIFEST_PATH, MANIFEST_LENGTH, ADDED_SNAPSHOT_ID = 500, 501, 503
ENTRY_STATUS, ENTRY_SNAPSHOT_ID, ENTRY_DATA_FILE = 0, 1, 2
FILE_PATH, FILE_FORMAT, FILE_SIZE, CONTENT = 100, 101, 104, 134
LOWER_BOUNDS, UPPER_BOUNDS, REFERENCED_DATA_FILE = 125, 128, 143
REFERENCED_DATA_FILE_PROPERTY = "referenced-data-file"


class TreeRewriter:
    """Rewrites the trees of the snapshots being copied; collects the staged bytes and the copy plan."""

    def __init__(
        self, io: FileIO, prefixes: PrefixMap, table_location: str, copied_snapshot_ids: set[int]
    ) -> None:
        self.io = io
        self.prefixes = prefixes
        self.table_location = table_location
        self.copied_snapshot_ids = copied_snapshot_ids
        self.staged: dict[str, bytes] = {}
        """Staging location -> bytes, for every rewritten file on the copy plan."""
        self.copies: dict[str, str] = {}
        """Copy source (a staged file or an original) -> target, content files first."""
        self._metadata_copies: dict[str, str] = {}
        self._lengths: dict[str, int] = {}
        self._moved_manifests: dict[str, tuple[str, int]] = {}
        """Manifest path -> (its target, its rewritten length): a full copy meets each manifest
        in every later snapshot's manifest list (n²/2 times for n unmerged appends)."""

    def copy_plan(self) -> list[tuple[str, str]]:
        """(source, target) pairs: content files first, then the metadata that points at them."""
        return [*self.copies.items(), *self._metadata_copies.items()]

    # -- shared ------------------------------------------------------------------------------

    def _absolute(self, location: str) -> str:
        return resolve_location(location, self.table_location)

    def _moved(self, location: str) -> str:
        """The location as the copy stores it: absolute ones moved, relative ones (v4) kept."""
        if not has_scheme(location):
            self.prefixes.relative(self._absolute(location))  # still refuse what resolves outside
            return location
        return self.prefixes.target(location)

    def copy_as_is(self, location: str) -> None:
        """Put a file that holds no path (a statistics file) on the copy plan."""
        self._copy(location)

    def _copy(self, location: str) -> None:
        path = self._absolute(location)
        self.copies.setdefault(path, self.prefixes.target(path))

    def _rewrite(
        self, location: str, listed: bool, rewrite: Callable[[bytes, str], bytes], *, metadata: bool
    ) -> int:
        """Rewrite one file (once, unless it must now be staged too); its new length."""
        path = self._absolute(location)
        staged = self.prefixes.staged(path)
        known = self._lengths.get(path)
        if known is not None and (not listed or staged in self.staged):
            return known
        data = rewrite(self.io.new_input(path).read(), path)
        self._lengths[path] = len(data)
        if listed:
            self.staged[staged] = data
            (self._metadata_copies if metadata else self.copies)[staged] = self.prefixes.target(path)
        return len(data)

    def _delete_file(self, location: str, file_format: str, listed: bool) -> int:
        """Rewrite a position delete file or a deletion-vector Puffin file; its new length."""
        fmt = file_format.lower()
        if fmt == "puffin":
            return self._rewrite(location, listed, self._puffin, metadata=False)
        if fmt == "parquet":
            return self._rewrite(
                location,
                listed,
                lambda data, src: with_deleted_file_paths(data, src, self._moved),
                metadata=False,
            )
        raise Unsupported(
            f"position delete file {location} is {file_format}: only Parquet position delete files "
            "can be rewritten for a copy"
        )

    def _puffin(self, data: bytes, source: str) -> bytes:
        footer = read_puffin_footer(data, len(data), source)
        blobs = []
        for blob in footer.blobs:
            referenced = blob.properties.get(REFERENCED_DATA_FILE_PROPERTY)
            if referenced is not None:
                properties = {**blob.properties, REFERENCED_DATA_FILE_PROPERTY: self._moved(referenced)}
                blob = dataclasses.replace(blob, properties=properties)
            blobs.append(blob)
        return with_footer(data, FileMetadata(tuple(blobs), footer.properties), source)

    # -- v1–v3 -------------------------------------------------------------------------------

    def manifest_list(self, location: str) -> None:
        """Rewrite a v1–v3 snapshot's manifest list and the manifests it references."""
        self._rewrite(location, True, self._manifest_list_bytes, metadata=True)

    def _manifest_list_bytes(self, data: bytes, source: str) -> bytes:
        def change_for(schema: dict) -> Callable[[Record], Record]:
            names = field_names(schema)
            path_name, length_name = names[MANIFEST_PATH], names[MANIFEST_LENGTH]
            added_name = names.get(ADDED_SNAPSHOT_ID)

            def change(record: Record) -> Record:
                manifest = record[path_name]
                moved = self._moved_manifests.get(manifest)
                if moved is None:  # whether it is staged depends on the manifest alone: once
                    added = record.get(added_name) if added_name else None
                    listed = added is None or added in self.copied_snapshot_ids
                    length = self._rewrite(
                        manifest, listed, lambda d, s: self._manifest_bytes(d, s, added), metadata=True
                    )
                    moved = self._moved_manifests[manifest] = (self.prefixes.target(manifest), length)
                return {**record, path_name: moved[0], length_name: moved[1]}

            return change

        return rewrite_records(data, source, change_for)

    def _manifest_bytes(self, data: bytes, source: str, added_snapshot_id: int | None) -> bytes:
        def change_for(schema: dict) -> Callable[[Record], Record]:
            names = field_names(schema)
            file_field = avs.fields_by_id(schema)[ENTRY_DATA_FILE]
            file_record = avs.record_of(file_field["type"])
            if file_record is None:
                raise Unsupported(f"{source}: manifest entry without a data_file record")
            file_names = field_names(file_record)
            status_name, snapshot_name = names[ENTRY_STATUS], names.get(ENTRY_SNAPSHOT_ID)

            def change(record: Record) -> Record:
                snapshot_id = record.get(snapshot_name) if snapshot_name else None
                if snapshot_id is None:
                    snapshot_id = added_snapshot_id
                live = EntryStatus(record[status_name]).is_live
                listed = live and (snapshot_id is None or snapshot_id in self.copied_snapshot_ids)
                content_file = self._content_file(record[file_field["name"]], file_names, live, listed)
                return {**record, file_field["name"]: content_file}

            return change

        return rewrite_records(data, source, change_for)

    def _content_file(self, record: Record, names: dict[int, str], live: bool, listed: bool) -> Record:
        path = record[names[FILE_PATH]]
        content = record.get(names[CONTENT], 0) if CONTENT in names else 0
        out = {**record, names[FILE_PATH]: self.prefixes.target(path)}
        if content == FileContent.POSITION_DELETES:
            if live:
                out[names[FILE_SIZE]] = self._delete_file(path, record[names[FILE_FORMAT]], listed)
            for bounds_id in (LOWER_BOUNDS, UPPER_BOUNDS):
                if bounds_id in names and record.get(names[bounds_id]) is not None:
                    out[names[bounds_id]] = self._moved_bounds(record[names[bounds_id]])
        elif live and listed:
            self._copy(path)
        referenced = names.get(REFERENCED_DATA_FILE)
        if referenced and record.get(referenced) is not None:
            out[referenced] = self.prefixes.target(record[referenced])
        return out

    def _moved_bounds(self, pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The bounds of a position delete file with its ``file_path`` bounds moved like the paths.

        Writers may truncate these bounds (icefloe keeps 16 characters): a truncated bound that
        still starts under the source prefix moves with it (replacing a common prefix keeps the
        order), one that does not is dropped (no bound is always correct; a stale one is not).
        """
        out = []
        for pair in pairs:
            if pair.get("key") == DELETE_FILE_PATH_ID and pair.get("value") is not None:
                value = bytes(pair["value"]).decode("utf-8", "replace")
                if not self.prefixes.contains(value):
                    continue
                pair = {**pair, "value": to_bytes(StringType(), self.prefixes.target(value))}
            out.append(pair)
        return out

    # -- v4 ----------------------------------------------------------------------------------

    def root(self, location: str, snapshot_id: int) -> None:
        """Rewrite a v4 snapshot's root manifest and the leaves and delete files it references."""
        self._rewrite(location, True, lambda d, s: self._entries_bytes(d, s, snapshot_id), metadata=True)

    def _entries_bytes(self, data: bytes, source: str, file_snapshot_id: int) -> bytes:
        entries = [self._entry(e, file_snapshot_id) for e in read_entry_paths(data, source)]
        return with_entry_paths(data, source, entries)

    def _entry(self, e: EntryPaths, file_snapshot_id: int) -> EntryPaths:
        snapshot_id = file_snapshot_id if e.snapshot_id is None else e.snapshot_id
        live = EntryStatus(e.status).is_live
        listed = live and snapshot_id in self.copied_snapshot_ids
        size = e.file_size_in_bytes
        if e.content_type in (FileContent.DATA_MANIFEST, FileContent.DELETE_MANIFEST):
            size = self._rewrite(
                e.location, listed, lambda d, s: self._entries_bytes(d, s, snapshot_id), metadata=True
            )
        elif e.content_type == FileContent.POSITION_DELETES and live:
            size = self._delete_file(e.location, e.file_format, listed)
        elif listed:
            self._copy(e.location)
        if e.dv_location is not None and live:
            dv_snapshot_id = snapshot_id if e.dv_snapshot_id is None else e.dv_snapshot_id
            self._delete_file(e.dv_location, "puffin", dv_snapshot_id in self.copied_snapshot_ids)
        columns_snapshot_id = snapshot_id if e.column_file_snapshot_id is None else e.column_file_snapshot_id
        if live and columns_snapshot_id in self.copied_snapshot_ids:
            for column_file in e.column_file_locations:
                self._copy(column_file)
        return dataclasses.replace(
            e,
            location=self._moved(e.location),
            file_size_in_bytes=size,
            dv_location=None if e.dv_location is None else self._moved(e.dv_location),
            column_file_locations=tuple(self._moved(c) for c in e.column_file_locations),
        )
