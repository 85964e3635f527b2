"""Metadata tables over the whole history: ``all_data_files``, ``all_delete_files``, ``all_files``,
``all_manifests``, and the ``metadata_log_entries`` of the table's metadata files; ``any_metadata_table``
also reaches ``position_deletes`` (``scan.position_deletes_table``).

Built from the per-snapshot tables of ``scan.metadata_tables`` (same columns): the ``all_*`` file
tables list each distinct content file of every snapshot still in the metadata once;
``all_manifests`` has one row per (manifest, snapshot that lists it), as Iceberg Java's does.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.errors import ValidationError
from icefloe.io.fileio import FileIO
from icefloe.scan.metadata_tables import METADATA_TABLES, files_table, manifests_table
from icefloe.scan.position_deletes_table import position_deletes_table
from icefloe.spec.table_metadata import TableMetadata

METADATA_LOG_SCHEMA = pa.schema(
    [
        pa.field("timestamp", pa.timestamp("ms", tz="UTC"), False),
        pa.field("file", pa.string(), False),
        pa.field("latest_snapshot_id", pa.int64()),
        pa.field("latest_schema_id", pa.int32()),
        pa.field("latest_sequence_number", pa.int64()),
    ]
)


HISTORY_TABLES = ("all_data_files", "all_delete_files", "all_files", "all_manifests", "metadata_log_entries")


def all_files_table(io: FileIO, md: TableMetadata, content: str = "all") -> pa.Table:
    """Each distinct live content file of every snapshot in the metadata (``content`` as in files)."""
    parts = [files_table(io, md, s.snapshot_id, content=content) for s in md.snapshots]
    if not parts:
        return files_table(io, md, None, content=content)
    table = pa.concat_tables(parts)
    keys = pc.binary_join_element_wise(
        table.column("file_path"), pc.cast(pc.fill_null(table.column("content_offset"), -1), pa.string()), "#"
    )
    seen: set[str] = set()
    keep = []
    for i, key in enumerate(keys.to_pylist()):
        if key not in seen:
            seen.add(key)
            keep.append(i)
    return table.take(pa.array(keep, pa.int64()))


def all_manifests_table(io: FileIO, md: TableMetadata) -> pa.Table:
    """Every manifest of every snapshot in the metadata, once per snapshot that lists it."""
    parts = [manifests_table(io, md, s.snapshot_id) for s in md.snapshots]
    return pa.concat_tables(parts) if parts else manifests_table(io, md, None)


def metadata_log_entries_table(md: TableMetadata, metadata_location: str | None) -> pa.Table:
    """The previous metadata files and the current one, with the snapshot current at each."""
    entries = [(e.timestamp_ms, e.metadata_file) for e in md.metadata_log]
    if metadata_location is not None:
        entries.append((md.last_updated_ms, metadata_location))
    by_id = {s.snapshot_id: s for s in md.snapshots}
    rows = []
    for ts, path in entries:
        snapshot_id = None
        for log in md.snapshot_log:
            if log.timestamp_ms <= ts:
                snapshot_id = log.snapshot_id
        snap = by_id.get(snapshot_id) if snapshot_id is not None else None
        rows.append(
            {
                "timestamp": ts,
                "file": path,
                "latest_snapshot_id": snapshot_id,
                "latest_schema_id": snap.schema_id if snap is not None else None,
                "latest_sequence_number": snap.sequence_number if snap is not None else None,
            }
        )
    return pa.Table.from_pylist(rows, METADATA_LOG_SCHEMA)


def any_metadata_table(
    io: FileIO,
    md: TableMetadata,
    name: str,
    snapshot_id: int | None = None,
    metadata_location: str | None = None,
) -> pa.Table:
    """Any metadata table by name, the per-snapshot ones and the whole-history ones."""
    if name == "all_data_files":
        return all_files_table(io, md, "data")
    if name == "all_delete_files":
        return all_files_table(io, md, "deletes")
    if name == "all_files":
        return all_files_table(io, md, "all")
    if name == "all_manifests":
        return all_manifests_table(io, md)
    if name == "metadata_log_entries":
        return metadata_log_entries_table(md, metadata_location)
    if name == "position_deletes":
        return position_deletes_table(io, md, snapshot_id)
    build = METADATA_TABLES.get(name)
    if build is None:
        known = sorted([*METADATA_TABLES, *HISTORY_TABLES, "position_deletes"])
        raise ValidationError(f"unknown metadata table {name!r}; known: {', '.join(known)}")
    return build(io, md, snapshot_id=snapshot_id)
