"""The fast paths of the v4 tree give exactly what the byte layer's reference functions give."""

from __future__ import annotations

import uuid
from decimal import Decimal

from icefloe.formats.v4.content_entry import encode_content_entries, read_content_entries
from icefloe.formats.v4.content_rows import to_positioned_rows
from icefloe.formats.v4.content_stats import (
    StatsLayout,
    aggregate_content_stats,
    content_stats_from_metrics,
    content_stats_type,
)
from icefloe.spec.content import (
    DataFile,
    DeletionVectorRef,
    EntryStatus,
    FileContent,
    ManifestEntry,
    ManifestFile,
)
from icefloe.spec.conversions import to_bytes
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.sort_order import UNSORTED
from icefloe.spec.transforms import BucketTransform, DayTransform, IdentityTransform, TruncateTransform
from icefloe.spec.types import (
    BinaryType,
    DateType,
    DecimalType,
    DoubleType,
    LongType,
    NestedField,
    StringType,
    TimestamptzType,
    UUIDType,
)
from icefloe.spec.updates import new_table_metadata
from icefloe.tree import v4_read
from icefloe.tree.v4_columnar import decode_leaf_rows
from icefloe.tree.v4_leaves import aggregate_metrics

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "name", StringType()),
    NestedField(3, "amount", DecimalType(10, 2)),
    NestedField(4, "ts", TimestamptzType()),
    NestedField(5, "day", DateType()),
    NestedField(6, "score", DoubleType()),
    NestedField(7, "blob", BinaryType()),
    NestedField(8, "u", UUIDType()),
)
SPECS = {
    0: PartitionSpec(PartitionField(5, 1000, IdentityTransform(), "day"), spec_id=0),
    1: PartitionSpec(
        PartitionField(4, 1001, DayTransform(), "ts_day"),
        PartitionField(1, 1002, BucketTransform(8), "id_bucket"),
        PartitionField(3, 1003, TruncateTransform(100), "amount_trunc"),
        spec_id=1,
    ),
    2: PartitionSpec(spec_id=2),
}


def _file(i: int) -> DataFile:
    spec_id = i % 3
    partition: tuple[object, ...] = {
        0: (19_000 + i,),
        1: (19_500 + i, i % 8, Decimal(i) if i % 4 else None),
        2: (),
    }[spec_id]
    bounds_lo = {
        1: to_bytes(LongType(), i),
        2: to_bytes(StringType(), f"n{i}é"),
        3: to_bytes(DecimalType(10, 2), Decimal(f"{i}.25")),
        4: to_bytes(TimestamptzType(), 1_700_000_000_000_000 + i),
        5: to_bytes(DateType(), 19_000 + i),
        6: to_bytes(DoubleType(), -1.5 * i),
        7: b"\x00\x01" + bytes([i % 256]),
        8: to_bytes(UUIDType(), uuid.UUID(int=i)),
    }
    return DataFile(
        file_path=f"file:///t/data/f{i}.parquet",
        file_format="PARQUET" if i % 2 else "parquet",
        record_count=10 + i,
        file_size_in_bytes=1000 + i,
        content=FileContent.EQUALITY_DELETES if i % 5 == 4 else FileContent.DATA,
        spec_id=spec_id,
        partition=partition,
        value_counts={1: 10 + i, 6: 10 + i} if i % 3 else None,
        null_value_counts={2: i % 2, 6: 0} if i % 2 else None,
        nan_value_counts={6: i % 3} if i % 7 else None,
        lower_bounds=bounds_lo if i % 6 else None,
        upper_bounds={k: v for k, v in bounds_lo.items() if k != 7} if i % 6 else None,
        key_metadata=b"k" if i % 9 == 0 else None,
        split_offsets=(4, 100 + i) if i % 2 == 0 else None,
        equality_ids=(1, 2) if i % 5 == 4 else None,
        sort_order_id=0 if i % 4 == 0 else None,
        first_row_id=100 * i if i % 3 == 0 and i % 5 != 4 else None,
        deletion_vector=DeletionVectorRef(f"file:///t/data/dv{i}.puffin", 4, 40 + i, i, None)
        if i % 4 == 1 and i % 5 != 4
        else None,
    )


def test_columnar_decoding_matches_the_row_decoder() -> None:
    entries = []
    for i in range(60):
        f = _file(i)
        status = list(EntryStatus)[i % 5]
        dv_sid = 77 if f.deletion_vector is not None else None
        entries.append(
            ManifestEntry(status, None if i % 2 else 70 + i, None if i % 3 else i, None, f, dv_sid)
        )
    data = encode_content_entries(
        [e for e in entries if e.data_file.content == FileContent.DATA],
        table_schema=SCHEMA,
        specs=SPECS,
        kind="leaf",
        table_location="file:///t",
    )
    deletes = encode_content_entries(
        [e for e in entries if e.data_file.content != FileContent.DATA],
        table_schema=SCHEMA,
        specs=SPECS,
        kind="leaf",
        table_location="file:///t",
    )
    layout = StatsLayout(content_stats_type(SCHEMA))
    for blob in (data, deletes):
        table = read_content_entries(blob, table_schema=SCHEMA, specs=SPECS, table_location="file:///t")
        fast = decode_leaf_rows(table, SPECS, layout, "leaf")
        assert fast == to_positioned_rows(table, specs=SPECS)
        assert len(fast) in (48, 12)
    table = read_content_entries(data, table_schema=SCHEMA, specs=SPECS, table_location="file:///t")
    pos, first = decode_leaf_rows(table.slice(3), SPECS, layout, "leaf")[0]
    assert pos == 3 and first.data_file.file_path == "file:///t/data/f3.parquet"
    assert first.data_file.partition == (19_003,)
    pos, f16 = decode_leaf_rows(table.slice(13), SPECS, layout, "leaf")[0]  # i = 16 (eq deletes skipped)
    assert (pos, f16.data_file.partition, f16.data_file.spec_id) == (13, (19_516, 0, None), 1)
    assert decode_leaf_rows(table.slice(0, 0), SPECS, layout, "leaf") == []


def test_leaf_stats_aggregation_matches_the_reference_aggregation() -> None:
    layout = StatsLayout(content_stats_type(SCHEMA))
    files = [_file(i) for i in range(60)]
    nan_bound = files[1].with_changes(
        lower_bounds={6: to_bytes(DoubleType(), float("nan"))}, upper_bounds={6: to_bytes(DoubleType(), 1.0)}
    )
    all_null = files[2].with_changes(
        value_counts={1: 3, 6: 3}, null_value_counts={1: 3, 6: 3}, lower_bounds=None, upper_bounds=None
    )
    subsets = [
        files,
        files[1:2],
        files[6:12],
        [f for f in files if f.lower_bounds],
        [nan_bound, files[7]],
        [all_null, files[7]],
        [],
    ]
    for subset in subsets:
        want = aggregate_content_stats(content_stats_from_metrics(f, layout) for f in subset)
        assert aggregate_metrics(subset, layout) == want
    got = aggregate_metrics([f for f in files if f.lower_bounds], layout)
    assert (got[1].lower_bound, got[1].upper_bound, got[1].tight_bounds) == (1, 59, None)  # v1–v3: unknown
    assert got[2].lower_bound == "n10é" and got[6].lower_bound == -88.5


def test_root_parse_matches_the_row_decoder() -> None:
    """Roots decode inline rows column-wise: same objects as the reference row decoder gives."""
    uuid_spec = PartitionSpec(PartitionField(8, 1004, IdentityTransform(), "u"), spec_id=3)
    specs = {**SPECS, 3: uuid_spec}
    md = new_table_metadata(SCHEMA, SPECS[0], UNSORTED, "file:///t", {"format-version": "4"}).with_changes(
        partition_specs=tuple(specs.values())
    )
    inline = []
    for i in range(40):
        f = _file(i)
        if i % 8 == 7:
            f = f.with_changes(spec_id=3, partition=(uuid.UUID(int=i),))
        if f.content == FileContent.DATA:
            f = f.with_changes(first_row_id=1_000 * i)  # root rows carry every tracking value
        status = list(EntryStatus)[i % 5]
        dv_sid = 90 + i if f.deletion_vector is not None else None
        inline.append(ManifestEntry(status, 70 + i, i, i, f, dv_sid))
    reference = ManifestFile(
        "file:///t/metadata/leaf-l0.parquet",
        4_000,
        0,
        added_snapshot_id=5,
        sequence_number=2,
        min_sequence_number=2,
        added_files_count=3,
        existing_files_count=0,
        deleted_files_count=0,
        added_rows_count=30,
        existing_rows_count=0,
        deleted_rows_count=0,
        first_row_id=0,
        format_version=4,
        status=EntryStatus.EXISTING,
        record_count=3,
    )
    data = encode_content_entries(
        [
            reference,
            *inline[:20],
            reference.with_changes(manifest_path="file:///t/metadata/b.parquet"),
            *inline[20:],
        ],
        table_schema=SCHEMA,
        specs=specs,
        kind="root",
        table_location="file:///t",
        snapshot_id=99,
        sequence_number=9,
        compact=True,
    )
    root = v4_read._parse_root(md, "file:///t/metadata/root.parquet", data)

    table = read_content_entries(data, table_schema=SCHEMA, specs=specs, table_location="file:///t")
    rows = [row for _, row in to_positioned_rows(table, specs=specs)]
    expected = []
    for row in rows:
        if isinstance(row, ManifestEntry):
            df = row.data_file
            if df.spec_id == 3 and isinstance(df.partition[0], bytes):
                row = row.with_changes(
                    data_file=df.with_changes(partition=(uuid.UUID(bytes=df.partition[0]),))
                )
            if df.deletion_vector is not None and row.dv_snapshot_id is None:
                row = row.with_changes(dv_snapshot_id=row.snapshot_id)  # facts Q6
            expected.append(row)
    assert list(root.inline) == expected and len(expected) == 40
    assert [r.manifest_path for r in root.refs] == [
        "file:///t/metadata/leaf-l0.parquet",
        "file:///t/metadata/b.parquet",
    ]
    assert any(
        isinstance(e.data_file.partition[0], uuid.UUID) for e in root.inline if e.data_file.spec_id == 3
    )
