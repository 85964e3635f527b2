"""Metadata tables as Arrow tables: snapshots, history, refs, manifests, files, entries, partitions.

Column names and meanings follow Iceberg Java's metadata tables. Tables that read manifests take an
optional ``snapshot_id`` (default: the current snapshot; an empty table gives zero rows) and go
through the read seam, so they work the same for every format version the seam reads.

The ``partition`` column uses the table's unified partition type (Java's
``Partitioning.partitionType``): every partition field of every spec, ordered by field id, named as in
the newest spec that has it; a file's struct holds the values of its own spec's fields and nulls for
the others. Unpartitioned tables have no ``partition`` column (and ``partitions`` no ``spec_id``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pyarrow as pa

from icefloe.errors import IcefloeError, ValidationError
from icefloe.formats.arrow_schema import internal_to_arrow, type_to_arrow
from icefloe.io.fileio import FileIO
from icefloe.spec.content import DataFile, FileContent, ManifestContent, ManifestEntry
from icefloe.spec.conversions import from_bytes
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.transforms import VoidTransform
from icefloe.spec.types import (
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    UnknownType,
)
from icefloe.tree.read_seam import dropped_entries, manifest_refs, read_entries

_TS_MS = pa.timestamp("ms", tz="UTC")
_INT_LONG_MAP = pa.map_(pa.int32(), pa.int64())
_INT_BINARY_MAP = pa.map_(pa.int32(), pa.binary())

SNAPSHOTS_SCHEMA = pa.schema(
    [
        pa.field("committed_at", _TS_MS, False),
        pa.field("snapshot_id", pa.int64(), False),
        pa.field("parent_id", pa.int64()),
        pa.field("operation", pa.string()),
        pa.field("manifest_list", pa.string()),
        pa.field("summary", pa.map_(pa.string(), pa.string())),
    ]
)
HISTORY_SCHEMA = pa.schema(
    [
        pa.field("made_current_at", _TS_MS, False),
        pa.field("snapshot_id", pa.int64(), False),
        pa.field("parent_id", pa.int64()),
        pa.field("is_current_ancestor", pa.bool_(), False),
    ]
)
REFS_SCHEMA = pa.schema(
    [
        pa.field("name", pa.string(), False),
        pa.field("type", pa.string(), False),
        pa.field("snapshot_id", pa.int64(), False),
        pa.field("max_reference_age_in_ms", pa.int64()),
        pa.field("min_snapshots_to_keep", pa.int32()),
        pa.field("max_snapshot_age_in_ms", pa.int64()),
    ]
)
_SUMMARY_TYPE = pa.struct(
    [
        pa.field("contains_null", pa.bool_(), False),
        pa.field("contains_nan", pa.bool_()),
        pa.field("lower_bound", pa.string()),
        pa.field("upper_bound", pa.string()),
    ]
)
MANIFESTS_SCHEMA = pa.schema(
    [
        pa.field("content", pa.int32(), False),
        pa.field("path", pa.string(), False),
        pa.field("length", pa.int64(), False),
        pa.field("partition_spec_id", pa.int32(), False),
        pa.field("added_snapshot_id", pa.int64()),
        pa.field("added_data_files_count", pa.int32()),
        pa.field("existing_data_files_count", pa.int32()),
        pa.field("deleted_data_files_count", pa.int32()),
        pa.field("added_delete_files_count", pa.int32()),
        pa.field("existing_delete_files_count", pa.int32()),
        pa.field("deleted_delete_files_count", pa.int32()),
        pa.field("partition_summaries", pa.list_(pa.field("item", _SUMMARY_TYPE))),
        pa.field("reference_snapshot_id", pa.int64(), False),
    ]
)
_FILE_HEAD = [
    pa.field("content", pa.int32(), False),
    pa.field("file_path", pa.string(), False),
    pa.field("file_format", pa.string(), False),
    pa.field("spec_id", pa.int32(), False),
]
_FILE_TAIL = [
    pa.field("record_count", pa.int64(), False),
    pa.field("file_size_in_bytes", pa.int64(), False),
    pa.field("column_sizes", _INT_LONG_MAP),
    pa.field("value_counts", _INT_LONG_MAP),
    pa.field("null_value_counts", _INT_LONG_MAP),
    pa.field("nan_value_counts", _INT_LONG_MAP),
    pa.field("lower_bounds", _INT_BINARY_MAP),
    pa.field("upper_bounds", _INT_BINARY_MAP),
    pa.field("key_metadata", pa.binary()),
    pa.field("split_offsets", pa.list_(pa.int64())),
    pa.field("equality_ids", pa.list_(pa.int32())),
    pa.field("sort_order_id", pa.int32()),
    pa.field("first_row_id", pa.int64()),
    pa.field("referenced_data_file", pa.string()),
    pa.field("content_offset", pa.int64()),
    pa.field("content_size_in_bytes", pa.int64()),
]
_METRIC_NAMES = ("column_size", "value_count", "null_value_count", "nan_value_count")


# ---------------------------------------------------------------------------------------------
# table-level tables


def snapshots_table(md: TableMetadata) -> pa.Table:
    """One row per snapshot still in the metadata, oldest first."""
    rows = [
        {
            "committed_at": s.timestamp_ms,
            "snapshot_id": s.snapshot_id,
            "parent_id": s.parent_snapshot_id,
            "operation": s.operation,
            "manifest_list": s.manifest_list if s.manifest_list is not None else s.root_manifest,
            "summary": [(k, v) for k, v in s.summary.items() if k != "operation"],
        }
        for s in md.snapshots
    ]
    return pa.Table.from_pylist(rows, SNAPSHOTS_SCHEMA)


def history_table(md: TableMetadata) -> pa.Table:
    """The snapshot log: when each snapshot became main's head, and whether it still is an ancestor."""
    by_id = {s.snapshot_id: s for s in md.snapshots}
    ancestors = set(_ancestors(by_id, md.current_snapshot_id))
    rows = []
    for entry in md.snapshot_log:
        snap = by_id.get(entry.snapshot_id)
        rows.append(
            {
                "made_current_at": entry.timestamp_ms,
                "snapshot_id": entry.snapshot_id,
                "parent_id": snap.parent_snapshot_id if snap is not None else None,
                "is_current_ancestor": entry.snapshot_id in ancestors,
            }
        )
    return pa.Table.from_pylist(rows, HISTORY_SCHEMA)


def refs_table(md: TableMetadata) -> pa.Table:
    """Branches and tags with their retention settings."""
    rows = [
        {
            "name": name,
            "type": ref.ref_type.value.upper(),
            "snapshot_id": ref.snapshot_id,
            "max_reference_age_in_ms": ref.max_ref_age_ms,
            "min_snapshots_to_keep": ref.min_snapshots_to_keep,
            "max_snapshot_age_in_ms": ref.max_snapshot_age_ms,
        }
        for name, ref in sorted(md.refs.items())
    ]
    return pa.Table.from_pylist(rows, REFS_SCHEMA)


# ---------------------------------------------------------------------------------------------
# manifest-level tables


def manifests_table(io: FileIO, md: TableMetadata, snapshot_id: int | None = None) -> pa.Table:
    """One row per manifest of the snapshot, with file counts and partition summaries."""
    snap = snapshot_or_current(md, snapshot_id)
    rows = []
    for m in manifest_refs(io, md, snap) if snap is not None else []:
        is_data = m.content == ManifestContent.DATA
        counts = (m.added_files_count, m.existing_files_count, m.deleted_files_count)
        data, deletes = (counts, (0, 0, 0)) if is_data else ((0, 0, 0), counts)
        rows.append(
            {
                "content": int(m.content),
                "path": m.manifest_path,
                "length": m.manifest_length,
                "partition_spec_id": m.partition_spec_id,
                "added_snapshot_id": m.added_snapshot_id,
                "added_data_files_count": data[0],
                "existing_data_files_count": data[1],
                "deleted_data_files_count": data[2],
                "added_delete_files_count": deletes[0],
                "existing_delete_files_count": deletes[1],
                "deleted_delete_files_count": deletes[2],
                "partition_summaries": _summaries(md, m.partition_spec_id, m.partitions),
                "reference_snapshot_id": snap.snapshot_id if snap is not None else None,
            }
        )
    return pa.Table.from_pylist(rows, MANIFESTS_SCHEMA)


def files_table(
    io: FileIO,
    md: TableMetadata,
    snapshot_id: int | None = None,
    content: str = "all",
    readable_metrics: bool = True,
) -> pa.Table:
    """Live data and delete files of the snapshot (``content``: "all", "data" or "deletes")."""
    if content not in ("all", "data", "deletes"):
        raise ValidationError(f"content must be 'all', 'data' or 'deletes', got {content!r}")
    snap = snapshot_or_current(md, snapshot_id)
    files = [
        e.data_file
        for e in snapshot_entries(io, md, snap)
        if e.status.is_live
        and (content == "all" or (e.data_file.content == FileContent.DATA) == (content == "data"))
    ]
    layout = FileLayout(md)
    table = layout.files(files)
    if readable_metrics:
        table = table.append_column(layout.metrics_field(), layout.metrics(files))
    return table


def data_files_table(io: FileIO, md: TableMetadata, snapshot_id: int | None = None) -> pa.Table:
    """Live data files of the snapshot."""
    return files_table(io, md, snapshot_id, content="data")


def delete_files_table(io: FileIO, md: TableMetadata, snapshot_id: int | None = None) -> pa.Table:
    """Live delete files (position, equality, deletion vectors) of the snapshot."""
    return files_table(io, md, snapshot_id, content="deletes")


def entries_table(io: FileIO, md: TableMetadata, snapshot_id: int | None = None) -> pa.Table:
    """Every manifest entry of the snapshot (deleted ones included), with inherited values resolved."""
    return _entries_arrow(md, list(snapshot_entries(io, md, snapshot_or_current(md, snapshot_id))))


def all_entries_table(io: FileIO, md: TableMetadata, snapshot_id: int | None = None) -> pa.Table:
    """The entries of every snapshot still in the metadata, each distinct entry once.

    Two entries are the same when their status, snapshot, sequence number, file and deletion
    vector are: a file carried unchanged through many snapshots shows once per status it had
    (ADDED, EXISTING, DELETED). Java's table lists each manifest once instead; this form does
    not depend on how the tree was written, so v4 roots and leaves show a file's history as
    v1–v3 manifests do. ``snapshot_id`` is accepted for the common signature and ignored.
    """
    seen: set[tuple[Any, ...]] = set()
    entries: list[ManifestEntry] = []
    for snap in md.snapshots:
        for e in snapshot_entries(io, md, snap):
            f = e.data_file
            key = (e.status, e.snapshot_id, e.sequence_number, f.content_key, f.deletion_vector)
            if key not in seen:
                seen.add(key)
                entries.append(e)
    return _entries_arrow(md, entries)


def _entries_arrow(md: TableMetadata, entries: list[ManifestEntry]) -> pa.Table:
    layout = FileLayout(md)
    files = [e.data_file for e in entries]
    data_file = layout.files(files).combine_chunks()
    struct = pa.StructArray.from_arrays(
        [c.chunk(0) if c.num_chunks else pa.array([], c.type) for c in data_file.columns],
        fields=list(data_file.schema),
    )
    return pa.table(
        {
            "status": pa.array([int(e.status) for e in entries], pa.int32()),
            "snapshot_id": pa.array([e.snapshot_id for e in entries], pa.int64()),
            "sequence_number": pa.array([e.sequence_number for e in entries], pa.int64()),
            "file_sequence_number": pa.array([e.file_sequence_number for e in entries], pa.int64()),
            "data_file": struct,
            "readable_metrics": layout.metrics(files),
        }
    )


def partitions_table(io: FileIO, md: TableMetadata, snapshot_id: int | None = None) -> pa.Table:
    """Per partition: data record and file counts, sizes, delete counts and the last update."""
    snap = snapshot_or_current(md, snapshot_id)
    layout = FileLayout(md)
    timestamps = {s.snapshot_id: s.timestamp_ms for s in md.snapshots}
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for e in snapshot_entries(io, md, snap):
        if not e.status.is_live:
            continue
        f = e.data_file
        values = layout.unified(f)
        key = tuple(values.get(pf.field_id) for pf in layout.partition_fields)
        g = groups.setdefault(
            key,
            {
                "partition": values,
                "spec_id": f.spec_id,
                "record_count": 0,
                "file_count": 0,
                "total_data_file_size_in_bytes": 0,
                "position_delete_record_count": 0,
                "position_delete_file_count": 0,
                "equality_delete_record_count": 0,
                "equality_delete_file_count": 0,
                "last_updated_at": None,
                "last_updated_snapshot_id": None,
            },
        )
        if f.content == FileContent.DATA:
            g["record_count"] += f.record_count
            g["file_count"] += 1
            g["total_data_file_size_in_bytes"] += f.file_size_in_bytes
        elif f.content == FileContent.POSITION_DELETES:
            g["position_delete_record_count"] += f.record_count
            g["position_delete_file_count"] += 1
        else:
            g["equality_delete_record_count"] += f.record_count
            g["equality_delete_file_count"] += 1
        ts = timestamps.get(e.snapshot_id) if e.snapshot_id is not None else None
        if ts is not None and (g["last_updated_at"] is None or ts > g["last_updated_at"]):
            g.update(last_updated_at=ts, last_updated_snapshot_id=e.snapshot_id, spec_id=f.spec_id)
    rows = list(groups.values())
    fields = [
        pa.field("record_count", pa.int64(), False),
        pa.field("file_count", pa.int32(), False),
        pa.field("total_data_file_size_in_bytes", pa.int64(), False),
        pa.field("position_delete_record_count", pa.int64(), False),
        pa.field("position_delete_file_count", pa.int32(), False),
        pa.field("equality_delete_record_count", pa.int64(), False),
        pa.field("equality_delete_file_count", pa.int32(), False),
        pa.field("last_updated_at", _TS_MS),
        pa.field("last_updated_snapshot_id", pa.int64()),
    ]
    table = pa.Table.from_pylist(rows, pa.schema(fields))
    if layout.partition_fields:
        table = table.add_column(
            0, pa.field("spec_id", pa.int32(), False), pa.array([r["spec_id"] for r in rows], pa.int32())
        )
        partitions = layout.partition_array([r["partition"] for r in rows])
        table = table.add_column(0, layout.partition_field(), partitions)
    return table


METADATA_TABLES: dict[str, Callable[..., pa.Table]] = {
    "snapshots": lambda io, md, snapshot_id=None: snapshots_table(md),
    "history": lambda io, md, snapshot_id=None: history_table(md),
    "refs": lambda io, md, snapshot_id=None: refs_table(md),
    "manifests": manifests_table,
    "files": files_table,
    "data_files": data_files_table,
    "delete_files": delete_files_table,
    "entries": entries_table,
    "all_entries": all_entries_table,
    "partitions": partitions_table,
}


def metadata_table(io: FileIO, md: TableMetadata, name: str, snapshot_id: int | None = None) -> pa.Table:
    """A metadata table by name (``"snapshots"``, ``"files"``, ...)."""
    try:
        build = METADATA_TABLES[name]
    except KeyError:
        raise ValidationError(
            f"unknown metadata table {name!r}; known: {', '.join(sorted(METADATA_TABLES))}"
        ) from None
    return build(io, md, snapshot_id=snapshot_id)


# ---------------------------------------------------------------------------------------------
# helpers


def snapshot_or_current(md: TableMetadata, snapshot_id: int | None) -> Snapshot | None:
    """The snapshot with that id, else the current one (None for a table without snapshots)."""
    return md.snapshot_by_id(snapshot_id) if snapshot_id is not None else md.current_snapshot()


def snapshot_entries(io: FileIO, md: TableMetadata, snap: Snapshot | None) -> Iterable[ManifestEntry]:
    """Every entry of the snapshot's tree (v4 removals included); none for no snapshot."""
    if snap is None:
        return
    for m in manifest_refs(io, md, snap):
        yield from read_entries(io, md, m)
    yield from dropped_entries(io, md, snap)  # v4: removals recorded by DELETED references


def _ancestors(by_id: dict[int, Snapshot], snapshot_id: int | None) -> Iterable[int]:
    seen: set[int] = set()
    while snapshot_id is not None and snapshot_id in by_id and snapshot_id not in seen:
        seen.add(snapshot_id)
        yield snapshot_id
        snapshot_id = by_id[snapshot_id].parent_snapshot_id


def _source_type(md: TableMetadata, source_id: int) -> IcebergType | None:
    """A column's type in the current schema, else in the newest older schema that has it."""
    for schema in (md.schema(), *reversed(md.schemas)):
        if source_id in schema.field_ids():
            return schema.find_type(source_id)
    return None


def _result_type(md: TableMetadata, pf: PartitionField) -> IcebergType:
    source = _source_type(md, pf.source_id)
    if source is None:
        return UnknownType()
    try:
        return pf.transform.result_type(source)
    except IcefloeError:
        return UnknownType()


def _summaries(md: TableMetadata, spec_id: int, summaries: Any) -> list[dict[str, Any]] | None:
    if summaries is None:
        return None
    try:
        spec: PartitionSpec | None = md.spec_by_id(spec_id)
    except IcefloeError:
        spec = None
    out = []
    for i, s in enumerate(summaries):
        pf = spec.fields[i] if spec is not None and i < len(spec.fields) else None
        out.append(
            {
                "contains_null": s.contains_null,
                "contains_nan": s.contains_nan,
                "lower_bound": _human(md, pf, s.lower_bound),
                "upper_bound": _human(md, pf, s.upper_bound),
            }
        )
    return out


def _human(md: TableMetadata, pf: PartitionField | None, data: bytes | None) -> str | None:
    if data is None:
        return None
    if pf is None:
        return data.hex()
    source = _source_type(md, pf.source_id)
    try:
        value = from_bytes(_result_type(md, pf), data)
        return pf.transform.to_human_string(source, value) if source is not None else str(value)
    except IcefloeError:
        return data.hex()


def _decode(t: IcebergType, data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        return from_bytes(t, data)
    except IcefloeError:
        return None


class FileLayout:
    """Arrow shapes of one table's partition struct (every spec's fields) and readable metrics."""

    def __init__(self, md: TableMetadata) -> None:
        self.md = md
        self.partition_fields = _unified_partition_fields(md)
        self.partition_type = StructType(*self.partition_fields)
        self.spec_ids = {s.spec_id: [f.field_id for f in s.fields] for s in md.partition_specs}
        self.leaves = _primitive_leaves(md.schema())

    def unified(self, f: DataFile) -> dict[int, Any]:
        ids = self.spec_ids.get(f.spec_id, [])
        return {fid: v for fid, v in zip(ids, f.partition, strict=False)}

    def partition_field(self) -> pa.Field:
        return pa.field("partition", type_to_arrow(self.partition_type, include_field_ids=False), False)

    def partition_array(self, values: list[dict[int, Any]]) -> pa.Array:
        return internal_to_arrow(self.partition_type, values, self.partition_field().type)

    def files(self, files: list[DataFile]) -> pa.Table:
        head = pa.Table.from_pylist(
            [
                {
                    "content": int(f.content),
                    "file_path": f.file_path,
                    "file_format": f.file_format.upper(),
                    "spec_id": f.spec_id,
                }
                for f in files
            ],
            pa.schema(_FILE_HEAD),
        )
        tail = pa.Table.from_pylist([_file_row(f) for f in files], pa.schema(_FILE_TAIL))
        columns, fields = list(head.columns), list(head.schema)
        if self.partition_fields:
            columns.append(self.partition_array([self.unified(f) for f in files]))
            fields.append(self.partition_field())
        return pa.Table.from_arrays([*columns, *tail.columns], schema=pa.schema([*fields, *tail.schema]))

    def metrics_type(self) -> StructType:
        out, next_id = [], 1
        for name, leaf in self.leaves:
            inner = [NestedField(next_id + i, n, LongType()) for i, n in enumerate(_METRIC_NAMES)]
            inner += [
                NestedField(next_id + 4, "lower_bound", leaf.field_type),
                NestedField(next_id + 5, "upper_bound", leaf.field_type),
            ]
            out.append(NestedField(next_id + 6, name, StructType(*inner)))
            next_id += 7
        return StructType(*out)

    def metrics_field(self) -> pa.Field:
        return pa.field("readable_metrics", type_to_arrow(self.metrics_type(), include_field_ids=False))

    def metrics(self, files: list[DataFile]) -> pa.Array:
        t = self.metrics_type()
        rows = []
        for f in files:
            row: dict[int, Any] = {}
            for (_, leaf), column in zip(self.leaves, t.fields, strict=True):
                fid = leaf.field_id
                ids = [c.field_id for c in column.field_type.fields]  # type: ignore[attr-defined]
                values = [
                    (f.column_sizes or {}).get(fid),
                    (f.value_counts or {}).get(fid),
                    (f.null_value_counts or {}).get(fid),
                    (f.nan_value_counts or {}).get(fid),
                    _decode(leaf.field_type, (f.lower_bounds or {}).get(fid)),
                    _decode(leaf.field_type, (f.upper_bounds or {}).get(fid)),
                ]
                row[column.field_id] = dict(zip(ids, values, strict=True))
            rows.append(row)
        return internal_to_arrow(t, rows, self.metrics_field().type)


def _file_row(f: DataFile) -> dict[str, Any]:
    return {
        "record_count": f.record_count,
        "file_size_in_bytes": f.file_size_in_bytes,
        "column_sizes": _items(f.column_sizes),
        "value_counts": _items(f.value_counts),
        "null_value_counts": _items(f.null_value_counts),
        "nan_value_counts": _items(f.nan_value_counts),
        "lower_bounds": _items(f.lower_bounds),
        "upper_bounds": _items(f.upper_bounds),
        "key_metadata": f.key_metadata,
        "split_offsets": list(f.split_offsets) if f.split_offsets is not None else None,
        "equality_ids": list(f.equality_ids) if f.equality_ids is not None else None,
        "sort_order_id": f.sort_order_id,
        "first_row_id": f.first_row_id,
        "referenced_data_file": f.referenced_data_file,
        "content_offset": f.content_offset,
        "content_size_in_bytes": f.content_size_in_bytes,
    }


def _items(d: dict[int, Any] | None) -> list[tuple[int, Any]] | None:
    return None if d is None else list(d.items())


def unified_partition_type(md: TableMetadata) -> StructType:
    """The table's unified partition type: every partition field of every spec, by field id."""
    return StructType(*_unified_partition_fields(md))


def _unified_partition_fields(md: TableMetadata) -> list[NestedField]:
    """Every partition field of every spec by field id; names from the newest spec, types non-void first."""
    chosen: dict[int, tuple[PartitionField, str]] = {}
    for spec in sorted(md.partition_specs, key=lambda s: s.spec_id, reverse=True):
        for pf in spec.fields:
            seen = chosen.get(pf.field_id)
            if seen is None:
                chosen[pf.field_id] = (pf, pf.name)
            elif isinstance(seen[0].transform, VoidTransform) and not isinstance(pf.transform, VoidTransform):
                chosen[pf.field_id] = (pf, seen[1])
    out = []
    for fid in sorted(chosen):
        pf, name = chosen[fid]
        t = _result_type(md, pf)
        out.append(NestedField(fid, name, IntegerType() if isinstance(t, UnknownType) else t))
    return out


def _primitive_leaves(schema: Schema) -> list[tuple[str, NestedField]]:
    """(full name, field) of every primitive column, list elements and map parts included, by name."""
    out: list[tuple[str, NestedField]] = []

    def walk(fields: tuple[NestedField, ...], prefix: str) -> None:
        for f in fields:
            name = f"{prefix}{f.name}"
            if isinstance(f.field_type, StructType | ListType | MapType):
                walk(f.field_type.fields, name + ".")
            elif isinstance(f.field_type, PrimitiveType) and not isinstance(f.field_type, UnknownType):
                out.append((name, f))

    walk(schema.fields, "")
    return sorted(out, key=lambda item: item[0])
