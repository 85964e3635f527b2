"""Table statistics: a Puffin file of Apache DataSketches theta sketches, one per column, with each
column's number of distinct values (NDV), registered for a snapshot (``set-statistics``).

As Iceberg's ``compute_table_stats``: every blob is ``apache-datasketches-theta-v1`` over one
field, holding a serialised compact theta sketch of the column's non-null values in the snapshot,
with the estimate rounded in the blob's ``ndv`` property; the file goes under the table's metadata
location as ``<snapshot-id>-<uuid>.stats`` and replaces the snapshot's former statistics entry.

Values are fed to the sketch through the ``datasketches`` binding, which hashes 64-bit integers,
doubles and UTF-8 strings the way Iceberg Java's byte forms hash for ``long``, ``timestamp``,
``double`` and ``string`` columns; ``int``, ``date``, ``float``, ``decimal``, ``boolean`` and
binary columns are hashed through their 64-bit / text form instead, so their sketches estimate
the same NDV but do not merge bit-for-bit with Java's. The rows are read in this process (a
table scan of the snapshot, deletes applied).
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from icefloe.errors import Unsupported, ValidationError, nothing_committed
from icefloe.formats.puffin.files import PuffinWriter
from icefloe.scan.table_scan import TableScan
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import NestedField, PrimitiveType, UnknownType
from icefloe.spec.updates import SetPartitionStatistics, SetStatistics, TableUpdate
from icefloe.tree.locations import LocationProvider
from icefloe.txn.handle import TableHandle, commit_action
from icefloe.txn.transaction import AttemptContext

THETA_BLOB_TYPE = "apache-datasketches-theta-v1"
NDV_PROPERTY = "ndv"


@dataclass
class RegisterStatisticsFile:
    """Commit a (partition) statistics file written beforehand: it is the table's once committed."""

    update: SetStatistics | SetPartitionStatistics

    def apply(self, ctx: AttemptContext, current: TableMetadata) -> list[TableUpdate]:
        """The one update, replacing the snapshot's former file of that kind."""
        return [self.update]

    def committed_files(self) -> list[str]:
        """The statistics file."""
        entry = (
            self.update.statistics
            if isinstance(self.update, SetStatistics)
            else self.update.partition_statistics
        )
        return [str(entry["statistics-path"])]


def _sketched(f: NestedField) -> bool:
    """Every top-level primitive column has a sketch (not a column of unknown type: always null)."""
    return isinstance(f.field_type, PrimitiveType) and not isinstance(f.field_type, UnknownType)


def compute_table_stats(
    table: TableHandle, snapshot_id: int | None = None, columns: Sequence[str] | None = None
) -> str | None:
    """Write and register the theta sketches of ``columns`` (default: every top-level primitive
    column) at ``snapshot_id`` (default: the current snapshot); the statistics file's location,
    None for a table without snapshots."""
    md = table.metadata
    snapshot = md.snapshot_by_id(snapshot_id) if snapshot_id is not None else md.current_snapshot()
    if snapshot is None:
        return None
    schema = md.schema_by_id(snapshot.schema_id) if snapshot.schema_id is not None else md.schema()
    fields = _fields(schema.fields, columns)
    names = tuple(f.name for f in fields)
    rows = TableScan(table.io, md, selected_fields=names, snapshot_id=snapshot.snapshot_id).to_arrow()
    path = LocationProvider(md).new_metadata_file_path(f"{snapshot.snapshot_id}-{uuid.uuid4()}.stats")
    buffer = io.BytesIO()
    writer = PuffinWriter(buffer)
    for f in fields:
        sketch = theta_sketch(rows.column(f.name))
        writer.add_blob(
            THETA_BLOB_TYPE,
            sketch.serialize(),
            fields=[f.field_id],
            snapshot_id=snapshot.snapshot_id,
            sequence_number=snapshot.sequence_number,
            properties={NDV_PROPERTY: str(round(sketch.get_estimate()))},
        )
    result = writer.finish()
    statistics = {
        "snapshot-id": snapshot.snapshot_id,
        "statistics-path": path,
        "file-size-in-bytes": result.file_size,
        "file-footer-size-in-bytes": result.footer_size,
        "blob-metadata": [
            {
                "type": b.type,
                "snapshot-id": b.snapshot_id,
                "sequence-number": b.sequence_number,
                "fields": list(b.fields),
                "properties": dict(b.properties),
            }
            for b in result.blobs
        ],
    }
    publish_statistics_file(table, buffer.getvalue(), SetStatistics(statistics))
    return path


def publish_statistics_file(
    table: TableHandle, data: bytes, update: SetStatistics | SetPartitionStatistics
) -> None:
    """Write a (partition) statistics file and commit ``update`` registering it; the file is deleted
    again unless the commit may have happened."""
    action = RegisterStatisticsFile(update)
    (path,) = action.committed_files()
    with table.io.new_output(path, fresh_name=True).create() as out:
        out.write(data)
    try:
        commit_action(table, action)
    except BaseException as exc:
        if nothing_committed(exc):
            table.io.delete(path, missing_ok=True)
        raise


def _fields(fields: Iterable[NestedField], columns: Sequence[str] | None) -> list[NestedField]:
    by_name = {f.name.lower(): f for f in fields}
    if columns is None:
        return [f for f in by_name.values() if _sketched(f)]
    out = []
    for name in columns:
        f = by_name.get(name.lower())
        if f is None:
            raise ValidationError(f"compute_table_stats: no top-level column {name!r}")
        if not _sketched(f):
            raise Unsupported(
                f"compute_table_stats: column {name} of type {f.field_type} has no theta sketch"
            )
        out.append(f)
    return out


def theta_sketch(values: pa.ChunkedArray) -> Any:
    """The compact theta sketch of the non-null values of one column."""
    from datasketches import update_theta_sketch

    if pa.types.is_date(values.type):
        values = values.cast(pa.int32())  # days
    elif pa.types.is_timestamp(values.type) or pa.types.is_time(values.type):
        values = values.cast(pa.int64())  # micro- or nanoseconds
    sketch = update_theta_sketch()
    for value in values.drop_null().to_pylist():
        sketch.update(_hashable(value))
    return sketch.compact()


def _hashable(value: Any) -> int | float | str:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float | str):
        return value
    if isinstance(value, bytes):
        return value.hex()
    return str(value)  # decimals, UUIDs
