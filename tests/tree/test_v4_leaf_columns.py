"""``LeafColumns``: a v4 leaf as columns for planning (liveness, bounds, specs, uuid partitions)."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np

from icefloe.formats.v4 import mumbling
from icefloe.formats.v4.content_entry import ContentRow, write_content_entries
from icefloe.io import FileIO
from icefloe.spec.content import DataFile, EntryStatus, LazyMap, ManifestEntry, ManifestFile
from icefloe.spec.conversions import to_bytes
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.sort_order import UNSORTED
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import DateType, LongType, NestedField, StringType, UUIDType
from icefloe.tree.read_seam import live_entries, manifest_refs, read_entries, read_live_columns
from icefloe.tree.v4_leaf_columns import LeafColumns

E = EntryStatus
SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "day", DateType()),
    NestedField(3, "u", UUIDType()),
    NestedField(4, "s", StringType()),
    schema_id=0,
)
BY_UUID = PartitionSpec(PartitionField(3, 1000, IdentityTransform(), "u"), spec_id=0)
BY_DAY = PartitionSpec(PartitionField(2, 1001, IdentityTransform(), "day"), spec_id=1)
U1, U2 = uuid.UUID(int=1), uuid.UUID(int=2)


def _metadata(tmp_path: Path) -> TableMetadata:
    return TableMetadata(
        format_version=4,
        table_uuid=str(uuid.UUID(int=7)),
        location=f"file://{tmp_path}",
        last_updated_ms=0,
        last_column_id=4,
        schemas=(SCHEMA,),
        current_schema_id=0,
        partition_specs=(BY_UUID, BY_DAY),
        default_spec_id=0,
        last_partition_id=1001,
        sort_orders=(UNSORTED,),
        default_sort_order_id=0,
        properties={},
        next_row_id=0,
    )


def _file(name: str, spec: PartitionSpec, partition: tuple[object, ...], lo: int, hi: int) -> DataFile:
    return DataFile(
        file_path=f"file:///data/{name}.parquet",
        file_format="parquet",
        record_count=10,
        file_size_in_bytes=100,
        spec_id=spec.spec_id,
        partition=partition,
        value_counts={1: 10},
        null_value_counts={1: 0},
        lower_bounds={1: to_bytes(LongType(), lo), 4: b"a"},
        upper_bounds={1: to_bytes(LongType(), hi), 4: b"z"},
        first_row_id=None,
    )


def _table(tmp_path: Path) -> tuple[TableMetadata, Snapshot]:
    """A root with one leaf (4 rows over two specs; one deleted, one under the MDV) and one inline row."""
    md = _metadata(tmp_path)
    leaf_rows: list[ContentRow] = [
        ManifestEntry(E.ADDED, None, None, None, _file("a", BY_UUID, (U1,), 0, 9)),
        ManifestEntry(E.DELETED, 5, 2, 2, _file("b", BY_UUID, (U2,), 10, 19)),
        ManifestEntry(E.EXISTING, 5, 2, 2, _file("c", BY_DAY, (19_000,), 20, 29)),
        ManifestEntry(E.MODIFIED, 6, 3, 3, _file("d", BY_UUID, (U2,), 30, 39)),
    ]
    leaf = tmp_path / "leaf.parquet"
    write_content_entries(str(leaf), leaf_rows, table_schema=SCHEMA, specs=md.partition_specs, kind="leaf")
    mdv = mumbling.encode([2])
    ref = ManifestFile(
        manifest_path=f"file://{leaf}",
        manifest_length=leaf.stat().st_size,
        partition_spec_id=0,
        sequence_number=8,
        added_snapshot_id=70,
        added_files_count=1,
        existing_files_count=1,
        deleted_files_count=1,
        added_rows_count=10,
        existing_rows_count=10,
        deleted_rows_count=10,
        first_row_id=100,
        format_version=4,
        modified_files_count=1,
        mdv=mdv,
        dv_snapshot_id=71,
    )
    inline = ManifestEntry(
        E.EXISTING, 60, 4, 4, _file("i", BY_UUID, (U1,), 40, 49).with_changes(first_row_id=7)
    )
    root = tmp_path / "root.parquet"
    write_content_entries(
        str(root),
        [ref, inline],
        table_schema=SCHEMA,
        specs=md.partition_specs,
        kind="root",
        snapshot_id=77,
        sequence_number=9,
    )
    snap = Snapshot(snapshot_id=77, timestamp_ms=0, sequence_number=9, root_manifest=f"file://{root}")
    return md.with_changes(snapshots=(snap,), current_snapshot_id=77, last_sequence_number=9), snap


def test_liveness_inheritance_and_entries_of_selected_rows(tmp_path: Path) -> None:
    md, snap = _table(tmp_path)
    leaf_ref = manifest_refs(FileIO(), md, snap)[0]
    cols = read_live_columns(FileIO(), md, leaf_ref)
    assert isinstance(cols, LeafColumns)
    live = cols.live_mask()
    assert live is not None and live.tolist() == [True, False, False, True]  # deleted; masked by the MDV
    assert [(s, r.tolist()) for s, r in cols.spec_groups(np.arange(4))] == [(0, [0, 1, 3]), (1, [2])]
    a, d = cols.entries(np.flatnonzero(live))
    assert (a.snapshot_id, a.sequence_number, a.file_sequence_number, a.data_file.first_row_id) == (
        70,
        8,
        8,
        100,
    )
    assert (d.snapshot_id, d.sequence_number, d.data_file.first_row_id) == (
        6,
        3,
        120,
    )  # c counts, though masked; deleted b does not
    assert isinstance(a.data_file.lower_bounds, LazyMap) and a.data_file.lower_bounds == {
        1: to_bytes(LongType(), 0),
        4: b"a",
    }
    assert a.data_file.column_sizes is None and a.data_file.nan_value_counts is None


def test_integer_bounds_come_from_the_typed_stats(tmp_path: Path) -> None:
    md, snap = _table(tmp_path)
    cols = read_live_columns(FileIO(), md, manifest_refs(FileIO(), md, snap)[0])
    lower = cols.integer_bounds(1, 8, upper=False)
    upper = cols.integer_bounds(1, 8, upper=True)
    assert lower is not None and upper is not None
    assert lower[0].tolist() == [0, 10, 20, 30] and lower[1].all()
    assert upper[0].tolist() == [9, 19, 29, 39]
    assert cols.integer_bounds(1, 4, upper=False) is None  # another width than the stats: cannot tell
    assert cols.integer_bounds(4, 8, upper=False) is None  # strings are not integer-like
    _, known = cols.integer_bounds(2, 4, upper=False) or (None, None)
    assert known is not None and not known.any()  # no bounds stored for ``day``


def test_uuid_partitions_read_as_uuids_from_leaves_and_inline_entries(tmp_path: Path) -> None:
    md, snap = _table(tmp_path)
    got = sorted(
        (e.data_file.file_path[-9:], e.data_file.partition) for e in live_entries(FileIO(), md, snap)
    )
    assert got == [("a.parquet", (U1,)), ("d.parquet", (U2,)), ("i.parquet", (U1,))]
    leaf_ref, inline_ref = manifest_refs(FileIO(), md, snap)
    assert [e.data_file.partition for e in read_entries(FileIO(), md, leaf_ref)] == [(U1,), (U2,), (U2,)]
    assert [e.data_file.partition for e in read_entries(FileIO(), md, inline_ref)] == [(U1,)]
    cols = read_live_columns(FileIO(), md, leaf_ref)
    assert cols.for_spec(0).partition_values(np.array([0, 3])) == [(U1,), (U2,)]
    assert cols.for_spec(1).partition_values(np.array([2])) == [(19_000,)]
