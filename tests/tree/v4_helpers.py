"""Helpers for v4 tree tests: commit a TreeChange to in-memory metadata, read tree files raw."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.formats.v4 import mumbling
from icefloe.io import FileIO
from icefloe.spec.snapshots import Operation, Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.changes import TreeChange, TreeResult, TreeWriteRequest
from icefloe.tree.locations import LocationProvider
from icefloe.tree.write_seam import write_snapshot_tree


def commit4(
    io: FileIO,
    md: TableMetadata,
    change: TreeChange,
    properties: dict[str, str] | None = None,
    operation: Operation = Operation.APPEND,
) -> tuple[TableMetadata, TreeResult]:
    """Write the tree of a change on top of the current snapshot; add the snapshot to ``md``."""
    parent = md.current_snapshot()
    snapshot_id = 1000 + len(md.snapshots)
    seq = md.last_sequence_number + 1
    result = write_snapshot_tree(
        TreeWriteRequest(
            io,
            md,
            parent,
            change,
            snapshot_id=snapshot_id,
            sequence_number=seq,
            location_provider=LocationProvider(md),
            properties=properties,
        )
    )
    snap = Snapshot(
        snapshot_id=snapshot_id,
        timestamp_ms=1_700_000_000_000 + len(md.snapshots),
        summary={"operation": operation.value, **result.summary},
        parent_snapshot_id=parent.snapshot_id if parent else None,
        sequence_number=seq,
        manifest_list=result.manifest_list_location,
        root_manifest=result.root_manifest_location,
        schema_id=0,
        first_row_id=result.first_row_id,
        added_rows=result.added_rows,
    )
    new_md = md.with_changes(
        snapshots=(*md.snapshots, snap),
        current_snapshot_id=snapshot_id,
        last_sequence_number=seq,
        next_row_id=(md.next_row_id or 0) + (result.added_rows or 0),
    )
    return new_md, result


def head(md: TableMetadata) -> Snapshot:
    """The current snapshot (which must exist)."""
    snap = md.current_snapshot()
    assert snap is not None
    return snap


def local(path: str | None) -> str:
    """A local filesystem path for a ``file:`` URI."""
    assert path is not None
    return path.removeprefix("file://")


class Row(dict[str, Any]):
    """A stored row; optional columns the writer left out (all null) read as None."""

    def __missing__(self, key: str) -> None:
        return None


def _rows(value: Any) -> Any:
    if isinstance(value, dict):
        return Row({k: _rows(v) for k, v in value.items()})
    return value


def raw_rows(path: str | None) -> list[Row]:
    """The rows of a content-entry Parquet file exactly as stored (names from the file)."""
    return [_rows(r) for r in pq.read_table(local(path)).to_pylist()]


def field_ids(path: str | None) -> dict[str, int]:
    """Dotted column path -> Parquet field id, for every field of a content-entry file."""
    out: dict[str, int] = {}

    def walk(prefix: str, f: pa.Field) -> None:
        name = f"{prefix}{f.name}"
        meta = f.metadata or {}
        if b"PARQUET:field_id" in meta:
            out[name] = int(meta[b"PARQUET:field_id"])
        t = f.type
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(name + ".", t.field(i))
        elif pa.types.is_list(t):
            walk(name + ".", t.value_field)

    for f in pq.read_schema(local(path)):
        walk("", f)
    return out


def footer(path: str | None) -> dict[str, str]:
    """Footer key/value metadata of a Parquet file."""
    meta = pq.read_metadata(local(path)).metadata or {}
    return {k.decode(): v.decode() for k, v in meta.items()}


def bits(data: bytes | None) -> list[int]:
    """Positions of a Mumbling v1 bitmap ([] for None)."""
    return [] if data is None else mumbling.decode(data)


def tree_files(tmp_path: Path) -> list[str]:
    """Names of the metadata files written under the test table (sorted)."""
    meta = tmp_path / "t" / "metadata"
    return sorted(p.name for p in meta.iterdir()) if meta.exists() else []
