"""Small builders for tree-layer tests: table metadata, data files, and a minimal commit."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from icefloe.io import FileIO
from icefloe.spec.content import DataFile, FileContent
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import Operation, Snapshot
from icefloe.spec.sort_order import UNSORTED
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.transforms import parse_transform
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.tree.changes import TreeChange, TreeResult, TreeWriteRequest
from icefloe.tree.locations import LocationProvider
from icefloe.tree.write_seam import write_snapshot_tree

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "cat", StringType()),
    schema_id=0,
)
SPEC = PartitionSpec(PartitionField(2, 1000, parse_transform("identity"), "cat"), spec_id=0)
UNPARTITIONED = PartitionSpec(spec_id=1)


def new_metadata(
    tmp_path: Path, format_version: int, properties: dict[str, str] | None = None
) -> TableMetadata:
    """An empty table with an identity-partitioned spec 0 and an unpartitioned spec 1."""
    return TableMetadata(
        format_version=format_version,
        table_uuid=str(uuid.uuid4()),
        location=f"file://{tmp_path}/t",
        last_updated_ms=0,
        last_column_id=2,
        schemas=(SCHEMA,),
        current_schema_id=0,
        partition_specs=(SPEC, UNPARTITIONED),
        default_spec_id=0,
        last_partition_id=1000,
        sort_orders=(UNSORTED,),
        default_sort_order_id=0,
        properties=dict(properties or {}),
        next_row_id=0 if format_version >= 3 else None,
    )


_counter = iter(range(1, 10**9))


def data_file(cat: str | None = "a", rows: int = 10, spec_id: int = 0, **kw: Any) -> DataFile:
    """A data file of spec 0 (partition ``(cat,)``) or the unpartitioned spec 1."""
    n = next(_counter)
    return DataFile(
        file_path=kw.pop("file_path", f"file:///data/{cat}/f{n}.parquet"),
        file_format="parquet",
        record_count=rows,
        file_size_in_bytes=kw.pop("size", 100 * rows),
        spec_id=spec_id,
        partition=(cat,) if spec_id == 0 else (),
        value_counts={1: rows},
        **kw,
    )


def delete_file(target: DataFile, rows: int = 2, dv: bool = False) -> DataFile:
    """A position delete file (or a v3 deletion vector) for ``target``."""
    n = next(_counter)
    return DataFile(
        file_path=f"file:///data/del{n}.{'puffin' if dv else 'parquet'}",
        file_format="puffin" if dv else "parquet",
        record_count=rows,
        file_size_in_bytes=50,
        content=FileContent.POSITION_DELETES,
        spec_id=target.spec_id,
        partition=target.partition,
        referenced_data_file=target.file_path,
        content_offset=4 if dv else None,
        content_size_in_bytes=30 if dv else None,
    )


def commit(
    io: FileIO,
    md: TableMetadata,
    change: TreeChange,
    merge: bool = False,
    properties: dict[str, str] | None = None,
) -> tuple[TableMetadata, TreeResult]:
    """Write the tree for a change on top of the current snapshot and add the snapshot to ``md``."""
    parent = md.current_snapshot()
    snapshot_id = 1000 + len(md.snapshots)
    seq = md.last_sequence_number + 1 if md.format_version >= 2 else 0
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
            merge=merge,
        )
    )
    snap = Snapshot(
        snapshot_id=snapshot_id,
        timestamp_ms=1_700_000_000_000 + len(md.snapshots),
        summary={"operation": Operation.APPEND.value, **result.summary},
        parent_snapshot_id=parent.snapshot_id if parent else None,
        sequence_number=seq,
        manifest_list=result.manifest_list_location,
        schema_id=0,
        first_row_id=result.first_row_id,
        added_rows=result.added_rows,
    )
    new_md = md.with_changes(
        snapshots=(*md.snapshots, snap),
        current_snapshot_id=snapshot_id,
        last_sequence_number=seq,
        next_row_id=(md.next_row_id or 0) + (result.added_rows or 0) if md.format_version >= 3 else None,
    )
    return new_md, result
