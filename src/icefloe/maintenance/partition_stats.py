"""Partition statistics (the spec's "Partition Statistics" file): one row per partition of a
snapshot with its data and delete counts, written as Parquet and registered for the snapshot
(``set-partition-statistics``), as Iceberg's ``compute_partition_stats`` does.

The file's schema (field ids as the spec gives them): ``partition`` (1, the table's unified
partition type), ``spec_id`` (2), ``data_record_count`` (3), ``data_file_count`` (4),
``total_data_file_size_in_bytes`` (5), ``position_delete_record_count`` (6, deletion-vector
records included), ``position_delete_file_count`` (7, deletion vectors excluded),
``equality_delete_record_count`` (8), ``equality_delete_file_count`` (9), ``total_record_count``
(10, null: not computed, as Java leaves it), ``last_updated_at`` (11, ms) and
``last_updated_snapshot_id`` (12) of the newest change to a live entry (v4: its deletion vector
or column files too), and from v3 ``dv_count`` (13, v3
deletion vectors and v4 colocated ones). Rows are keyed by spec id and partition tuple and sorted by
partition, nulls first. The counts are a full computation over the snapshot's live entries.
"""

from __future__ import annotations

import io
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.errors import ValidationError
from icefloe.formats.arrow_schema import internal_to_arrow, schema_to_arrow
from icefloe.maintenance.table_stats import publish_statistics_file
from icefloe.scan.metadata_tables import unified_partition_type
from icefloe.spec.content import DataFile, FileContent
from icefloe.spec.schema import Schema
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import IntegerType, LongType, NestedField, StructType
from icefloe.spec.updates import SetPartitionStatistics
from icefloe.tree.locations import LocationProvider
from icefloe.tree.read_seam import live_entries
from icefloe.txn.handle import TableHandle

COUNTERS = (
    (3, "data_record_count", LongType(), True),
    (4, "data_file_count", IntegerType(), True),
    (5, "total_data_file_size_in_bytes", LongType(), True),
    (6, "position_delete_record_count", LongType(), False),
    (7, "position_delete_file_count", IntegerType(), False),
    (8, "equality_delete_record_count", LongType(), False),
    (9, "equality_delete_file_count", IntegerType(), False),
    (10, "total_record_count", LongType(), False),
    (11, "last_updated_at", LongType(), False),
    (12, "last_updated_snapshot_id", LongType(), False),
)
DV_COUNT = (13, "dv_count", IntegerType(), True)


def partition_stats_schema(partition_type: StructType, format_version: int) -> Schema:
    """The partition statistics file schema for a unified partition type."""
    fields = [
        NestedField(1, "partition", partition_type, True),
        NestedField(2, "spec_id", IntegerType(), True),
        *(NestedField(fid, name, t, required) for fid, name, t, required in COUNTERS),
    ]
    if format_version >= 3:
        fid, name, t, required = DV_COUNT
        fields.append(NestedField(fid, name, t, required))
    return Schema(*fields)


def compute_partition_stats(table: TableHandle, snapshot_id: int | None = None) -> str | None:
    """Write and register the partition statistics of ``snapshot_id`` (default: the current
    snapshot); the file's location, None for a table without snapshots."""
    md = table.metadata
    snapshot = md.snapshot_by_id(snapshot_id) if snapshot_id is not None else md.current_snapshot()
    if snapshot is None:
        return None
    if all(spec.is_unpartitioned for spec in md.partition_specs):
        raise ValidationError(f"compute_partition_stats: table {table.name} is not partitioned")
    partition_type = unified_partition_type(md)
    schema = partition_stats_schema(partition_type, md.format_version)
    rows = _rows(table, md, snapshot.snapshot_id, partition_type)
    arrow_schema = schema_to_arrow(schema)
    struct = internal_to_arrow(StructType(*schema.fields), rows, pa.struct(list(arrow_schema)))
    data = pa.Table.from_struct_array(struct).cast(arrow_schema)
    buffer = io.BytesIO()
    pq.write_table(data, buffer)
    path = LocationProvider(md).new_metadata_file_path(
        f"partition-stats-{snapshot.snapshot_id}-{uuid.uuid4()}.parquet"
    )
    entry = {
        "snapshot-id": snapshot.snapshot_id,
        "statistics-path": path,
        "file-size-in-bytes": len(buffer.getvalue()),
    }
    publish_statistics_file(table, buffer.getvalue(), SetPartitionStatistics(entry))
    return path


def _rows(
    table: TableHandle, md: TableMetadata, snapshot_id: int, partition_type: StructType
) -> list[dict[int, Any]]:
    """One row (values by field id) per (spec id, partition tuple), sorted by partition."""
    specs = {s.spec_id: [f.field_id for f in s.fields] for s in md.partition_specs}
    timestamps = {s.snapshot_id: s.timestamp_ms for s in md.snapshots}
    with_dvs = md.format_version >= 3
    groups: dict[tuple[int, tuple[Any, ...]], dict[int, Any]] = {}
    for e in live_entries(table.io, md, md.snapshot_by_id(snapshot_id)):
        f = e.data_file
        row = groups.get((f.spec_id, tuple(f.partition)))
        if row is None:
            unified = dict(zip(specs[f.spec_id], f.partition, strict=False))
            row = {
                1: unified,
                2: f.spec_id,
                3: 0,
                4: 0,
                5: 0,
                6: 0,
                7: 0,
                8: 0,
                9: 0,
                10: None,
                11: None,
                12: None,
            }
            if with_dvs:
                row[13] = 0
            groups[(f.spec_id, tuple(f.partition))] = row
        _count(row, f, with_dvs)
        for sid in (e.snapshot_id, e.dv_snapshot_id, e.latest_column_file_snapshot_id):
            ts = timestamps.get(sid) if sid is not None else None
            if ts is not None and (row[11] is None or ts > row[11]):
                row[11], row[12] = ts, sid
    ids = [pf.field_id for pf in partition_type.fields]
    return sorted(groups.values(), key=lambda r: [(r[1].get(i) is not None, r[1].get(i)) for i in ids])


def _count(row: dict[int, Any], f: DataFile, with_dvs: bool) -> None:
    if f.content == FileContent.DATA:
        row[3] += f.record_count
        row[4] += 1
        row[5] += f.file_size_in_bytes
        if f.deletion_vector is not None:  # a v4 colocated deletion vector
            row[6] += f.deletion_vector.cardinality
            row[13] += 1
    elif f.content == FileContent.POSITION_DELETES:
        row[6] += f.record_count
        if with_dvs and f.file_format.lower() == "puffin":
            row[13] += 1
        else:
            row[7] += 1
    else:
        row[8] += f.record_count
        row[9] += 1
