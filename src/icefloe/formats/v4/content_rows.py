"""v4 content-entry rows as objects: the Arrow table ``read_content_entries`` returns, turned into
``ManifestEntry`` (data and equality-delete files) and ``ManifestFile`` (manifest references).

Values are raw, as stored: inheritance (snapshot id, sequence numbers, first row id) is the read
seam's job. ``icefloe.tree.v4_columnar`` is the fast path for whole roots; a differential test
keeps it equal to :func:`to_positioned_rows`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields as dataclass_fields
from typing import Any, cast

import pyarrow as pa

from icefloe.errors import CorruptMetadata
from icefloe.formats.arrow_schema import arrow_type_to_iceberg, field_id_of
from icefloe.formats.v4 import content_entry_schema as ce
from icefloe.formats.v4.content_entry import (
    ENTRY_FORMAT_VERSION,
    LEGACY_FORMAT_VERSION,
    POSITION_BITMAP_FIELDS,
    ContentRow,
    SpecsArg,
)
from icefloe.formats.v4.content_entry_schema import specs_by_id, to_python_values
from icefloe.formats.v4.content_stats import (
    ContentStats,
    StatsLayout,
    content_stats_from_struct_value,
    metrics_from_struct_value,
)
from icefloe.spec.content import (
    ColumnFile,
    DataFile,
    DeletionVectorRef,
    EntryStatus,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.schema import POS_COLUMN_ID
from icefloe.spec.types import StructType

__all__ = ["column_files_from_values", "to_content_rows", "to_positioned_rows"]

_MANIFEST_FILE_FIELDS = frozenset(f.name for f in dataclass_fields(ManifestFile))


def _unpartitioned_spec_id(specs: Mapping[int, PartitionSpec]) -> int:
    return min((s.spec_id for s in specs.values() if not s.fields), default=0)


def to_positioned_rows(
    table: pa.Table, *, specs: SpecsArg, source: str = "<content entries>"
) -> list[tuple[int, ContentRow]]:
    """``(position, row)`` for every row of a table from ``read_content_entries`` (filtered or not).

    Positions come from ``_pos`` (else the row index). DATA / EQUALITY_DELETES rows become
    ``ManifestEntry`` (v1–v3 metric maps rebuilt from content_stats, the colocated DV as
    ``data_file.deletion_vector``, the partition tuple in the entry's own spec order); manifest
    references become ``ManifestFile`` (``format_version`` 0 for legacy Avro manifests, 4 for
    leaves; ``partition_spec_id`` -1 when not written). Values are raw: no inheritance.
    """
    spec_map = specs_by_id(specs)
    n = table.num_rows
    cols: dict[int, list[Any]] = {}
    stats_type = StructType()
    for i, f in enumerate(table.schema):
        fid = field_id_of(f)
        if fid is None or fid in cols:
            continue
        t = arrow_type_to_iceberg(f.type, f.name)
        if fid == ce.CONTENT_STATS and isinstance(t, StructType):
            stats_type = t
        cols[fid] = to_python_values(cast(pa.Array, table.column(i).combine_chunks()), t)
    positions = cols.pop(POS_COLUMN_ID, None) or list(range(n))
    layout = StatsLayout(stats_type)
    empty: list[Any] = [None] * n
    get = {fid: cols.get(fid, empty) for fid in ce.CONTENT_ENTRY_FIELD_IDS}
    out: list[tuple[int, ContentRow]] = []
    for i in range(n):
        row = {fid: values[i] for fid, values in get.items()}
        out.append((positions[i], _row_object(row, spec_map, layout, source)))
    return out


def to_content_rows(
    table: pa.Table, *, specs: SpecsArg, source: str = "<content entries>"
) -> list[ContentRow]:
    """The rows of a table from ``read_content_entries`` as ``ManifestEntry`` / ``ManifestFile``."""
    return [row for _, row in to_positioned_rows(table, specs=specs, source=source)]


def _row_object(
    row: dict[int, Any], specs: Mapping[int, PartitionSpec], layout: StatsLayout, source: str
) -> ContentRow:
    tracking = row[ce.TRACKING] or {}
    try:
        status = EntryStatus(int(tracking.get(ce.STATUS) or 0))
        content = FileContent(row[ce.CONTENT_TYPE])
    except ValueError as exc:
        raise CorruptMetadata(f"{source}: {row[ce.LOCATION]}: {exc}", location=source) from exc
    if content in (FileContent.DATA_MANIFEST, FileContent.DELETE_MANIFEST):
        stats = content_stats_from_struct_value(row[ce.CONTENT_STATS])
        return _manifest_file(row, tracking, status, content, stats, source)
    spec_id = row[ce.SPEC_ID]
    if spec_id is None:
        spec_id = _unpartitioned_spec_id(specs)
    spec = specs.get(spec_id)
    if spec is None and (row[ce.SPEC_ID] is not None or specs):
        raise CorruptMetadata(
            f"{source}: {row[ce.LOCATION]}: unknown partition spec id {spec_id}", location=source
        )
    union = row[ce.PARTITION] or {}
    partition = tuple(union.get(pf.field_id) for pf in spec.fields) if spec is not None else ()
    dv_value = row[ce.DELETION_VECTOR]
    dv = None
    if dv_value is not None:
        dv = DeletionVectorRef(
            location=dv_value[ce.DV_LOCATION],
            offset=dv_value[ce.DV_OFFSET],
            size_in_bytes=dv_value[ce.DV_SIZE],
            cardinality=dv_value[ce.DV_CARDINALITY],
            key_metadata=dv_value.get(ce.DV_KEY_METADATA),
        )
    split_offsets, equality_ids = row[ce.SPLIT_OFFSETS], row[ce.EQUALITY_IDS]
    data_file = DataFile(
        file_path=row[ce.LOCATION],
        file_format=str(row[ce.FILE_FORMAT]).lower(),
        record_count=row[ce.RECORD_COUNT],
        file_size_in_bytes=row[ce.FILE_SIZE],
        content=content,
        spec_id=spec_id,
        partition=partition,
        key_metadata=row[ce.KEY_METADATA],
        split_offsets=None if split_offsets is None else tuple(split_offsets),
        equality_ids=None if equality_ids is None else tuple(equality_ids),
        sort_order_id=row[ce.SORT_ORDER_ID],
        first_row_id=tracking.get(ce.FIRST_ROW_ID) if content == FileContent.DATA else None,
        deletion_vector=dv,
        column_files=column_files_from_values(row.get(ce.COLUMN_FILES)),
        **metrics_from_struct_value(row[ce.CONTENT_STATS], layout).as_changes(),
    )
    return ManifestEntry(
        status=status,
        snapshot_id=tracking.get(ce.SNAPSHOT_ID),
        sequence_number=tracking.get(ce.SEQUENCE_NUMBER),
        file_sequence_number=tracking.get(ce.FILE_SEQUENCE_NUMBER),
        data_file=data_file,
        dv_snapshot_id=tracking.get(ce.DV_SNAPSHOT_ID),
        latest_column_file_snapshot_id=tracking.get(ce.LATEST_COLUMN_FILE_SNAPSHOT_ID),
    )


def column_files_from_values(values: list[dict[int, Any]] | None) -> tuple[ColumnFile, ...] | None:
    """``column_files`` list values (structs as dicts by field id) as ``ColumnFile`` objects."""
    if not values:
        return None
    return tuple(
        ColumnFile(
            location=v[ce.CF_LOCATION],
            file_format=str(v[ce.CF_FILE_FORMAT]).lower(),
            file_size_in_bytes=v[ce.CF_FILE_SIZE],
            field_ids=tuple(v[ce.CF_FIELD_IDS] or ()),
            format_version=v[ce.CF_FORMAT_VERSION],
            key_metadata=v.get(ce.CF_KEY_METADATA),
            split_offsets=None if v.get(ce.CF_SPLIT_OFFSETS) is None else tuple(v[ce.CF_SPLIT_OFFSETS]),
        )
        for v in values
    )


def _manifest_file(
    row: dict[int, Any],
    tracking: Mapping[int, Any],
    status: EntryStatus,
    content: FileContent,
    stats: ContentStats,
    source: str,
) -> ManifestFile:
    where = f"{source}: {row[ce.LOCATION]}"
    info = row[ce.MANIFEST_INFO]
    if info is None:
        raise CorruptMetadata(f"{where}: manifest reference without manifest_info")
    snapshot_id, seq, file_seq = (
        tracking.get(i) for i in (ce.SNAPSHOT_ID, ce.SEQUENCE_NUMBER, ce.FILE_SEQUENCE_NUMBER)
    )
    if snapshot_id is None or seq is None:
        raise CorruptMetadata(f"{where}: manifest reference without snapshot id or sequence number")
    if file_seq is not None and file_seq != seq:
        raise CorruptMetadata(
            f"{where}: manifest reference with data sequence number {seq} != file {file_seq}"
        )
    version = row[ce.FORMAT_VERSION]
    files = [int(info.get(i) or 0) for i in ce.FILE_COUNT_IDS]
    rows = [int(info.get(i) or 0) for i in ce.ROW_COUNT_IDS]
    extras = {
        name: tracking.get(fid) for name, fid in POSITION_BITMAP_FIELDS if name in _MANIFEST_FILE_FIELDS
    }
    spec_id = row[ce.SPEC_ID]
    return ManifestFile(
        manifest_path=row[ce.LOCATION],
        manifest_length=row[ce.FILE_SIZE],
        partition_spec_id=-1 if spec_id is None else spec_id,
        content=ManifestContent.DATA if content == FileContent.DATA_MANIFEST else ManifestContent.DELETES,
        sequence_number=seq,
        min_sequence_number=info.get(ce.MIN_SEQUENCE_NUMBER) or 0,
        added_snapshot_id=snapshot_id,
        added_files_count=files[0],
        existing_files_count=files[1],
        deleted_files_count=files[2],
        added_rows_count=rows[0],
        existing_rows_count=rows[1],
        deleted_rows_count=rows[2],
        key_metadata=row[ce.KEY_METADATA],
        first_row_id=tracking.get(ce.FIRST_ROW_ID) if content == FileContent.DATA_MANIFEST else None,
        format_version=LEGACY_FORMAT_VERSION if version < ENTRY_FORMAT_VERSION else version,
        status=status,
        replaced_files_count=files[3],
        replaced_rows_count=rows[3],
        modified_files_count=files[4],
        modified_rows_count=rows[4],
        record_count=row[ce.RECORD_COUNT],
        mdv=info.get(ce.MDV),
        dv_snapshot_id=tracking.get(ce.DV_SNAPSHOT_ID),
        content_stats=cast(dict[int, Any], stats) if stats else None,
        **extras,
    )
