"""v4 content-entry files: exact Parquet layout, footers, round trips, projection, failures."""

from __future__ import annotations

import io
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from icefloe.errors import CorruptMetadata, ValidationError
from icefloe.formats.arrow_schema import FIELD_ID_KEY, field_id_of
from icefloe.formats.v4 import content_entry_schema as ce
from icefloe.formats.v4 import mumbling
from icefloe.formats.v4.content_entry import (
    ContentRow,
    encode_content_entries,
    filter_positions,
    read_content_entries,
    read_footer_metadata,
    relativize_location,
    resolve_location,
    write_content_entries,
)
from icefloe.formats.v4.content_entry_schema import (
    content_entry_schema,
    fill_required_members,
    union_partition_type,
)
from icefloe.formats.v4.content_rows import to_content_rows, to_positioned_rows
from icefloe.formats.v4.content_stats import ColumnStats
from icefloe.formats.v4.null_columns import prune_null_columns
from icefloe.spec.content import (
    DataFile,
    DeletionVectorRef,
    EntryStatus,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icefloe.spec.conversions import to_bytes
from icefloe.spec.partitioning import UNPARTITIONED, PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import BucketTransform, DayTransform, IdentityTransform
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

LOC = "s3://bucket/warehouse/tbl"

PRIMITIVES: list[tuple[IcebergType, Any, Any]] = [
    (BooleanType(), False, True),
    (IntegerType(), -7, 2**31 - 1),
    (LongType(), -(2**40), 2**62),
    (FloatType(), -1.5, 3.25),
    (DoubleType(), -1e300, 2.5),
    (DecimalType(9, 2), Decimal("-12.34"), Decimal("9999.99")),
    (DateType(), -3, 19_000),
    (TimeType(), 0, 86_399_999_999),
    (TimestampType(), -1, 1_700_000_000_000_000),
    (TimestamptzType(), 5, 1_700_000_000_000_001),
    (TimestampNanoType(), -10, 1_700_000_000_000_000_123),
    (TimestamptzNanoType(), 7, 1_700_000_000_000_000_456),
    (StringType(), "aardvark", "zebra ünïcode"),
    (UUIDType(), uuid.UUID(int=1), uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")),
    (FixedType(3), b"\x00\x01\x02", b"\xff\xfe\xfd"),
    (BinaryType(), b"", b"\xff" * 5),
]
SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "ts", TimestampType()),
    *(NestedField(10 + i, f"c{i}", t) for i, (t, _, _) in enumerate(PRIMITIVES)),
    schema_id=3,
)
SPEC0 = PartitionSpec(
    PartitionField(1, 1000, IdentityTransform(), "id"),
    PartitionField(2, 1001, DayTransform(), "ts_day"),
    spec_id=0,
)
SPEC1 = PartitionSpec(PartitionField(1, 1002, BucketTransform(16), "id_bucket"), spec_id=1)
SPECS = [SPEC0, SPEC1]


def data_file(name: str = "a", **changes: Any) -> DataFile:
    base = DataFile(
        f"{LOC}/data/{name}.parquet",
        "parquet",
        100,
        4096,
        spec_id=0,
        partition=(5, 19_000),
        split_offsets=(4, 2048),
        sort_order_id=1,
    )
    return base.with_changes(**changes)


def entry(df: DataFile, status: EntryStatus = EntryStatus.ADDED, **changes: Any) -> ManifestEntry:
    return ManifestEntry(status, 42, None, None, df).with_changes(**changes)


def leaf(rows: list[ContentRow], **options: Any) -> bytes:
    opts: dict[str, Any] = {"table_schema": SCHEMA, "specs": SPECS, "kind": "leaf", "table_location": LOC}
    opts.update(options)
    return encode_content_entries(rows, **opts)


def root(rows: list[ContentRow], **options: Any) -> bytes:
    opts: dict[str, Any] = {"snapshot_id": 77, "sequence_number": 9, "parent_snapshot_id": 76, "kind": "root"}
    opts.update(options)
    return leaf(rows, **opts)


def read(data: bytes, **options: Any) -> pa.Table:
    opts: dict[str, Any] = {
        "table_schema": SCHEMA,
        "specs": SPECS,
        "table_location": LOC,
        "source": "m.parquet",
    }
    opts.update(options)
    return read_content_entries(data, **opts)


def round_trip(data: bytes, **options: Any) -> list[ContentRow]:
    return to_content_rows(read(data, **options), specs=SPECS)


def raw(data: bytes) -> pa.Table:
    return pq.read_table(pa.BufferReader(data))


def rewrite(data: bytes, table: pa.Table) -> bytes:
    """Write ``table`` as Parquet, keeping the footer key/values of ``data`` (when not empty)."""
    buf = io.BytesIO()
    with pq.ParquetWriter(buf, table.schema, store_schema=False) as out:
        out.write_table(table)
        if data:
            out.add_key_value_metadata(read_footer_metadata(data))
    return buf.getvalue()


def fields_by_path(schema: pa.Schema) -> dict[str, tuple[int | None, bool]]:
    out: dict[str, tuple[int | None, bool]] = {}

    def walk(f: pa.Field, path: str) -> None:
        out[path] = (field_id_of(f), f.nullable)
        t = f.type
        if pa.types.is_struct(t):
            for child in t:
                walk(child, f"{path}.{child.name}")
        elif pa.types.is_list(t):
            walk(t.value_field, f"{path}.element")

    for f in schema:
        walk(f, f.name)
    return out


# -- layout ---------------------------------------------------------------------------------------

FIXED_LAYOUT = {
    "tracking": (147, False),
    "tracking.status": (0, False),
    "tracking.snapshot_id": (1, True),
    "tracking.sequence_number": (3, True),
    "tracking.file_sequence_number": (4, True),
    "tracking.dv_snapshot_id": (5, True),
    "tracking.first_row_id": (142, True),
    "tracking.deleted_positions": (6, True),
    "tracking.replaced_positions": (7, True),
    "tracking.latest_column_file_snapshot_id": (160, True),
    "content_type": (134, False),
    "format_version": (157, False),
    "location": (100, False),
    "file_format": (101, False),
    "record_count": (103, False),
    "file_size_in_bytes": (104, False),
    "spec_id": (141, True),
    "partition": (102, True),
    "partition.id": (1000, True),
    "partition.ts_day": (1001, True),
    "partition.id_bucket": (1002, True),
    "content_stats": (146, True),
    "sort_order_id": (140, True),
    "deletion_vector": (148, True),
    "deletion_vector.location": (155, False),
    "deletion_vector.offset": (144, False),
    "deletion_vector.size_in_bytes": (145, False),
    "deletion_vector.cardinality": (156, False),
    "deletion_vector.key_metadata": (149, True),
    "manifest_info": (150, True),
    "manifest_info.added_files_count": (504, False),
    "manifest_info.existing_files_count": (505, False),
    "manifest_info.deleted_files_count": (506, False),
    "manifest_info.replaced_files_count": (520, False),
    "manifest_info.modified_files_count": (524, False),
    "manifest_info.added_rows_count": (512, False),
    "manifest_info.existing_rows_count": (513, False),
    "manifest_info.deleted_rows_count": (514, False),
    "manifest_info.replaced_rows_count": (521, False),
    "manifest_info.modified_rows_count": (525, False),
    "manifest_info.min_sequence_number": (516, False),
    "manifest_info.dv": (522, True),
    "manifest_info.dv_cardinality": (523, True),
    "key_metadata": (131, True),
    "split_offsets": (132, True),
    "split_offsets.element": (133, False),
    "equality_ids": (135, True),
    "equality_ids.element": (136, False),
    "column_files": (158, True),
    "column_files.element": (159, False),
    "column_files.element.format_version": (161, False),
    "column_files.element.field_ids": (162, False),
    "column_files.element.field_ids.element": (163, False),
    "column_files.element.location": (164, False),
    "column_files.element.file_format": (165, False),
    "column_files.element.file_size_in_bytes": (166, False),
    "column_files.element.key_metadata": (167, True),
    "column_files.element.split_offsets": (168, True),
    "column_files.element.split_offsets.element": (169, False),
}
TOP_LEVEL_ORDER = [
    "tracking",
    "content_type",
    "format_version",
    "location",
    "file_format",
    "record_count",
    "file_size_in_bytes",
    "spec_id",
    "partition",
    "content_stats",
    "sort_order_id",
    "deletion_vector",
    "manifest_info",
    "key_metadata",
    "split_offsets",
    "equality_ids",
    "column_files",
]


def test_every_field_has_its_id_and_nullability() -> None:
    data = leaf([entry(data_file())])
    schema = pq.ParquetFile(pa.BufferReader(data)).schema_arrow
    assert schema.names == TOP_LEVEL_ORDER
    tracking = schema.field("tracking").type
    assert [tracking.field(i).name for i in range(tracking.num_fields)] == [
        "status",
        "snapshot_id",
        "sequence_number",
        "file_sequence_number",
        "dv_snapshot_id",
        "first_row_id",
        "deleted_positions",
        "replaced_positions",
        "latest_column_file_snapshot_id",
    ]
    found = fields_by_path(schema)
    for path, expected in FIXED_LAYOUT.items():
        assert found[path] == expected, path
    stats_paths = {p: v for p, v in found.items() if p.startswith("content_stats.")}
    assert stats_paths, "content_stats has per-column structs"
    assert all(fid is not None and nullable for fid, nullable in stats_paths.values())
    assert found["content_stats.id.lower_bound"] == (10_201, True)
    assert found["content_stats._row_id"] == (9_200, True)
    assert found["content_stats._last_updated_sequence_number"] == (9_000, True)
    assert found["content_stats.c4.nan_value_count"] == (10_000 + 200 * 14 + 6, True)
    assert found["content_stats.c12.avg_value_size_in_bytes"] == (10_000 + 200 * 22 + 7, True)
    assert all(fid is not None for fid, _ in found.values())
    # Parquet-level types: file counts are INT32, row counts INT64 (decision Q1)
    pschema = pq.ParquetFile(pa.BufferReader(data)).schema
    physical = {pschema.column(i).path: pschema.column(i).physical_type for i in range(len(pschema))}
    assert physical["manifest_info.added_files_count"] == "INT32"
    assert physical["manifest_info.added_rows_count"] == "INT64"
    assert physical["split_offsets.list.element"] == "INT64"


def test_union_partition_type_over_specs() -> None:
    t = union_partition_type({1: SPEC1, 0: SPEC0}, SCHEMA)
    assert [(f.field_id, f.name, f.field_type, f.required) for f in t.fields] == [
        (1000, "id", LongType(), False),
        (1001, "ts_day", DateType(), False),
        (1002, "id_bucket", IntegerType(), False),
    ]
    clash = PartitionSpec(PartitionField(2, 1003, IdentityTransform(), "id"), spec_id=2)
    dropped = PartitionSpec(PartitionField(999, 1004, IdentityTransform(), "gone"), spec_id=3)
    names = [f.name for f in union_partition_type([SPEC0, clash, dropped], SCHEMA).fields]
    assert names == ["id", "ts_day", "id_1003"]


def test_footer_metadata() -> None:
    assert read_footer_metadata(leaf([entry(data_file())])) == {
        "format-version": "4",
        "schema-id": "3",
        "content": "data",
    }
    eq = data_file("eq", content=FileContent.EQUALITY_DELETES, equality_ids=(1,), sort_order_id=None)
    assert read_footer_metadata(leaf([entry(eq)]))["content"] == "equality-deletes"
    assert read_footer_metadata(leaf([], leaf_content=FileContent.EQUALITY_DELETES))["content"] == (
        "equality-deletes"
    )
    footer = read_footer_metadata(root([], metadata={"created-by": "icefloe"}))
    assert footer == {
        "format-version": "4",
        "schema-id": "3",
        "content": "root-manifest",
        "snapshot-id": "77",
        "parent-snapshot-id": "76",
        "sequence-number": "9",
        "created-by": "icefloe",
    }
    assert "parent-snapshot-id" not in read_footer_metadata(root([], parent_snapshot_id=None))
    with pytest.raises(ValidationError, match="snapshot id"):
        root([], snapshot_id=None)


def test_empty_root_is_a_real_file() -> None:
    data = root([])
    assert data[:4] == b"PAR1"
    assert read(data).num_rows == 0
    assert round_trip(data) == []


def test_bounds_of_every_primitive_type_round_trip() -> None:
    ids = [10 + i for i in range(len(PRIMITIVES))]
    df = data_file(
        value_counts={fid: 100 for fid in ids},
        null_value_counts={fid: 3 for fid in ids},
        nan_value_counts={13: 1, 14: 0},
        lower_bounds={fid: to_bytes(t, lo) for fid, (t, lo, _) in zip(ids, PRIMITIVES, strict=True)},
        upper_bounds={fid: to_bytes(t, hi) for fid, (t, _, hi) in zip(ids, PRIMITIVES, strict=True)},
        first_row_id=1000,
        key_metadata=b"km",
    )
    e = entry(df, EntryStatus.EXISTING, sequence_number=3, file_sequence_number=2)
    [back] = round_trip(leaf([e]))
    assert back == e
    stats = raw(leaf([e])).column("content_stats").combine_chunks()
    c5 = stats.field("c5").field("lower_bound")  # decimal(9, 2) stored in its own type
    assert c5.type == pa.decimal128(9, 2) and c5[0].as_py() == Decimal("-12.34")
    assert stats.field("c13").field("lower_bound").type == pa.binary(16)  # uuid
    assert stats.field("c9").field("upper_bound").type == pa.timestamp("us", tz="UTC")


def test_union_partition_rows_of_two_specs() -> None:
    a = entry(data_file("a"))
    b = entry(data_file("b", spec_id=1, partition=(11,)))
    c = entry(data_file("c", partition=(None, 18_000)))
    data = leaf([a, b, c])
    part = raw(data).column("partition").to_pylist()
    assert part == [
        {"id": 5, "ts_day": pa.scalar(19_000, pa.date32()).as_py(), "id_bucket": None},
        {"id": None, "ts_day": None, "id_bucket": 11},
        {"id": None, "ts_day": pa.scalar(18_000, pa.date32()).as_py(), "id_bucket": None},
    ]
    assert raw(data).column("spec_id").to_pylist() == [0, 1, 0]
    assert round_trip(data) == [a, b, c]


def test_unpartitioned_table_has_no_partition_column() -> None:
    spec = UNPARTITIONED
    e = entry(data_file(spec_id=0, partition=()))
    data = leaf([e], specs=[spec])
    ids = {field_id_of(f) for f in pq.ParquetFile(pa.BufferReader(data)).schema_arrow}
    assert 102 not in ids
    assert "partition" not in str(pq.ParquetFile(pa.BufferReader(data)).schema)
    [back] = to_content_rows(read(data, specs=[spec]), specs=[spec])
    assert back == e
    no_stats = content_entry_schema(Schema(), [spec], row_lineage=False)
    assert not no_stats.has_stats and not no_stats.has_partition
    assert 146 not in {field_id_of(f) for f in no_stats.write_arrow}


def manifest_ref(path: str = f"{LOC}/metadata/leaf-1.parquet", **changes: Any) -> ManifestFile:
    base = ManifestFile(
        manifest_path=path,
        manifest_length=5120,
        partition_spec_id=0,
        content=ManifestContent.DATA,
        sequence_number=4,
        min_sequence_number=2,
        added_snapshot_id=40,
        added_files_count=3,
        existing_files_count=2,
        deleted_files_count=1,
        added_rows_count=300,
        existing_rows_count=200,
        deleted_rows_count=100,
        first_row_id=1000,
        format_version=4,
        status=EntryStatus.EXISTING,
        replaced_files_count=1,
        replaced_rows_count=10,
        modified_files_count=1,
        modified_rows_count=10,
        record_count=8,
    )
    return base.with_changes(**changes)


def test_manifest_references_with_mdv() -> None:
    mdv = mumbling.encode([1, 5])
    stats = {1: ColumnStats(lower_bound=1, upper_bound=9, value_count=500, null_value_count=0)}
    modified = manifest_ref(status=EntryStatus.MODIFIED, mdv=mdv, dv_snapshot_id=77, content_stats=stats)
    legacy = manifest_ref(
        f"{LOC}/metadata/old-m0.avro",
        content=ManifestContent.DELETES,
        format_version=2,
        first_row_id=None,
        partition_spec_id=1,
        replaced_files_count=0,
        replaced_rows_count=0,
        modified_files_count=0,
        modified_rows_count=0,
        record_count=None,
    )
    data = root([modified, legacy])
    t = raw(data)
    assert t.column("content_type").to_pylist() == [3, 4]
    assert t.column("format_version").to_pylist() == [4, 0]
    assert t.column("file_format").to_pylist() == ["parquet", "avro"]
    assert t.column("location").to_pylist() == ["metadata/leaf-1.parquet", "metadata/old-m0.avro"]
    assert t.column("record_count").to_pylist() == [8, 6]  # legacy: sum of file counts
    assert t.column("partition").null_count == 2
    info = t.column("manifest_info").combine_chunks()
    assert info.field("dv").to_pylist() == [mdv, None]
    assert info.field("dv_cardinality").to_pylist() == [2, None]
    assert info.type.field("added_files_count").type == pa.int32()
    tracking = t.column("tracking").to_pylist()
    assert tracking[0]["sequence_number"] == tracking[0]["file_sequence_number"] == 4
    assert tracking[0]["dv_snapshot_id"] == 77 and tracking[1]["first_row_id"] is None
    back = round_trip(data)
    assert back == [modified, legacy.with_changes(format_version=0, record_count=6)]
    assert isinstance(back[0], ManifestFile) and back[0].content_stats == stats


def test_colocated_dv_replaced_and_modified_pair() -> None:
    old_dv = DeletionVectorRef(f"{LOC}/data/dv-1.puffin", 4, 40, 2)
    new_dv = DeletionVectorRef("s3://elsewhere/dv-2.puffin", 4, 48, 5, key_metadata=b"k")
    df = data_file(first_row_id=500)
    replaced = ManifestEntry(EntryStatus.REPLACED, 77, 3, 3, df.with_changes(deletion_vector=old_dv), 60)
    modified = ManifestEntry(EntryStatus.MODIFIED, 40, 3, 3, df.with_changes(deletion_vector=new_dv), 77)
    data = leaf([replaced, modified])
    t = raw(data)
    assert t.column("deletion_vector").to_pylist() == [
        {
            "location": "data/dv-1.puffin",
            "offset": 4,
            "size_in_bytes": 40,
            "cardinality": 2,
            "key_metadata": None,
        },
        {
            "location": "s3://elsewhere/dv-2.puffin",
            "offset": 4,
            "size_in_bytes": 48,
            "cardinality": 5,
            "key_metadata": b"k",
        },
    ]
    assert [r["status"] for r in t.column("tracking").to_pylist()] == [3, 4]
    assert round_trip(data) == [replaced, modified]


def test_relative_paths_on_write_and_resolution_on_read(tmp_path: Path) -> None:
    inside = entry(
        data_file("x", deletion_vector=DeletionVectorRef(f"{LOC}/data/d.puffin", 4, 9, 1)), dv_snapshot_id=42
    )
    outside = entry(data_file("y", file_path="s3://other-bucket/y.parquet"))
    similar = entry(data_file("z", file_path=f"{LOC}-copy/data/z.parquet"))
    data = leaf([inside, outside, similar])
    assert raw(data).column("location").to_pylist() == [
        "data/x.parquet",
        "s3://other-bucket/y.parquet",
        f"{LOC}-copy/data/z.parquet",
    ]
    unresolved = read(data, table_location=None).column("location").to_pylist()
    assert unresolved[0] == "data/x.parquet"
    assert round_trip(data) == [inside, outside, similar]
    moved = round_trip(data, table_location="file:/mnt/t")[0]
    assert isinstance(moved, ManifestEntry)
    assert moved.data_file.file_path == "file:/mnt/t/data/x.parquet"
    assert resolve_location("data/x", "s3://b/t/") == "s3://b/t//data/x"  # spec example, literally
    assert resolve_location("s3a://b/x", "s3://b/t") == "s3a://b/x"
    assert resolve_location("data/x", None) == "data/x"
    assert relativize_location("s3://b/t/data/x", "s3://b/t") == "data/x"
    assert relativize_location("s3://b/t/c:d", "s3://b/t") == "s3://b/t/c:d"  # would look absolute
    assert relativize_location("s3://b/t/data/x", "s3://b/t/") == "s3://b/t/data/x"
    assert relativize_location("s3://b/t/x", None) == "s3://b/t/x"
    # absolute paths everywhere when no table location is given
    plain = leaf([inside], table_location=None)
    assert raw(plain).column("location").to_pylist() == [f"{LOC}/data/x.parquet"]


def test_sinks_and_sources(tmp_path: Path) -> None:
    rows: list[ContentRow] = [entry(data_file())]
    opts: dict[str, Any] = {"table_schema": SCHEMA, "specs": SPECS, "kind": "leaf", "table_location": LOC}
    path = tmp_path / "leaf.parquet"
    n = write_content_entries(str(path), rows, **opts)
    assert n == path.stat().st_size
    stream = io.BytesIO()
    assert write_content_entries(stream, rows, **opts) == len(stream.getvalue())

    class Sink:
        data = b""

        def write_bytes(self, data: bytes) -> None:
            Sink.data = data

    assert write_content_entries(Sink(), rows, **opts) == len(Sink.data)
    with pa.OSFile(str(path)) as f:
        t = read_content_entries(f, table_schema=SCHEMA, specs=SPECS, table_location=LOC)
    assert to_content_rows(t, specs=SPECS) == rows
    t2 = read_content_entries(str(path), table_schema=SCHEMA, specs=SPECS, table_location=LOC)
    assert t2.num_rows == 1


def test_positions_survive_filtering() -> None:
    rows: list[ContentRow] = [entry(data_file(str(i))) for i in range(5)]
    t = read(leaf(rows))
    assert t.column("_pos").to_pylist() == [0, 1, 2, 3, 4]
    assert t.schema.field("_pos").metadata == {FIELD_ID_KEY: b"2147483645"}
    kept = filter_positions(t, [1, 3])
    positioned = to_positioned_rows(kept, specs=SPECS)
    assert [p for p, _ in positioned] == [0, 2, 4]
    assert [r for _, r in positioned] == [rows[0], rows[2], rows[4]]
    assert filter_positions(t, []).num_rows == 5
    live = t.filter(pc.equal(pc.struct_field(t.column("tracking"), [0]), 1))
    assert live.num_rows == 5


def test_row_subset_read_keeps_file_positions() -> None:
    rows: list[ContentRow] = [entry(data_file(str(i))) for i in range(6)]
    data = leaf(rows)
    picked = read(data, rows=[1, 4, 5])
    assert picked.column("_pos").to_pylist() == [1, 4, 5]
    assert picked.equals(read(data).take([1, 4, 5]))
    positioned = to_positioned_rows(picked, specs=SPECS)
    assert positioned == [(1, rows[1]), (4, rows[4]), (5, rows[5])]
    assert read(data, rows=[]).num_rows == 0


def test_rows_chosen_from_the_content_type_and_tracking_columns() -> None:
    rows: list[ContentRow] = [
        entry(data_file(str(i)), EntryStatus.EXISTING if i % 2 else EntryStatus.ADDED) for i in range(5)
    ]
    probed: list[pa.Table] = []

    def added(probe: pa.Table) -> list[int]:
        probed.append(probe)
        statuses = pc.struct_field(probe.column("tracking"), [0]).to_pylist()
        return [i for i, status in enumerate(statuses) if status == EntryStatus.ADDED]

    picked = read(leaf(rows), rows=added)
    assert {field_id_of(f) for f in probed[0].schema} == {ce.CONTENT_TYPE, ce.TRACKING}
    assert to_positioned_rows(picked, specs=SPECS) == [(0, rows[0]), (2, rows[2]), (4, rows[4])]


def test_column_subset_read() -> None:
    t = read(leaf([entry(data_file())]), columns=[100, 147])
    assert {field_id_of(f) for f in t.schema} == {100, 147, 134, 157, 2147483645}


# -- tolerant reading -----------------------------------------------------------------------------


def _with_int64_counts(t: pa.Table) -> pa.Table:
    i = t.schema.get_field_index("manifest_info")
    f = t.schema.field(i)
    children = [
        pa.field(c.name, pa.int64(), c.nullable, c.metadata) if c.type == pa.int32() else c for c in f.type
    ]
    new_field = pa.field(f.name, pa.struct(children), f.nullable, f.metadata)
    return t.set_column(i, new_field, t.column(i).cast(new_field.type))


def test_counts_written_as_long_are_accepted() -> None:
    ref = manifest_ref()
    data = root([ref])
    longs = rewrite(data, _with_int64_counts(raw(data)))
    assert raw(longs).column("manifest_info").type.field("added_files_count").type == pa.int64()
    t = read(longs)
    assert t.column("manifest_info").type.field("added_files_count").type == pa.int64()
    assert round_trip(longs) == [ref]
    assert read(data).column("manifest_info").type.field("added_files_count").type == pa.int64()


def _id_field(name: str, t: pa.DataType, fid: int, nullable: bool = True) -> pa.Field:
    return pa.field(name, t, nullable, {FIELD_ID_KEY: str(fid).encode()})


def test_placeholder_and_unknown_fields_are_ignored() -> None:
    spec = UNPARTITIONED
    e = entry(data_file(spec_id=0, partition=()))
    t = raw(leaf([e], specs=[spec]))
    placeholder = pa.struct([_id_field("_unpartitioned", pa.bool_(), 99_999)])
    no_stats = pa.struct([_id_field("_no_stats", pa.bool_(), 99_998)])
    t = t.drop_columns(["content_stats"])
    t = t.append_column(
        _id_field("partition", placeholder, 102), pa.array([{"_unpartitioned": True}], placeholder)
    )
    t = t.append_column(_id_field("content_stats", no_stats, 146), pa.array([{"_no_stats": None}], no_stats))
    t = t.append_column(_id_field("column_files", pa.int32(), 158), pa.array([1], pa.int32()))
    t = t.append_column(pa.field("no_id", pa.int32()), pa.array([1], pa.int32()))
    data = rewrite(b"", t)
    assert to_content_rows(read(data, specs=[spec]), specs=[spec]) == [e]
    # read with a partitioned expectation: union members are missing, so null
    back = to_content_rows(read(data, specs=[spec, SPEC1]), specs=[spec, SPEC1])
    assert back == [e]


def test_file_with_extra_stats_of_dropped_columns_reads() -> None:
    df = data_file(value_counts={1: 100, 12: 100}, lower_bounds={12: to_bytes(IntegerType(), 3)})
    data = leaf([entry(df)])
    narrow = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "ts", TimestampType()))
    [back] = to_content_rows(read(data, table_schema=narrow), specs=SPECS)
    assert isinstance(back, ManifestEntry)
    assert back.data_file.value_counts == {1: 100} and back.data_file.lower_bounds is None


# -- failures -------------------------------------------------------------------------------------


def _set_int_column(data: bytes, name: str, value: int) -> bytes:
    t = raw(data)
    i = t.schema.get_field_index(name)
    return rewrite(data, t.set_column(i, t.schema.field(i), pa.array([value] * t.num_rows, pa.int32())))


def test_unreadable_input_names_the_file() -> None:
    with pytest.raises(CorruptMetadata, match=r"m\.parquet"):
        read(b"definitely not parquet")
    with pytest.raises(CorruptMetadata, match="required field ids"):
        read(rewrite(b"", pa.table({"x": [1]})))


def test_position_deletes_rejected_on_read() -> None:
    data = _set_int_column(leaf([entry(data_file())]), "content_type", 1)
    with pytest.raises(CorruptMetadata, match=r"m\.parquet.*content_type 1"):
        read(data)


def test_future_format_version_rejected() -> None:
    data = _set_int_column(leaf([entry(data_file())]), "format_version", 5)
    with pytest.raises(CorruptMetadata, match="format version 5"):
        read(data)


def _with_field_id(data: bytes, name: str, field_id: int) -> bytes:
    """The file with top-level field ``name`` relabelled to ``field_id`` (a corrupted schema id)."""
    t = raw(data)
    i = t.schema.get_field_index(name)
    field = t.schema.field(i).with_metadata({FIELD_ID_KEY: str(field_id).encode()})
    return rewrite(data, t.set_column(i, field, t.column(i)))


@pytest.mark.parametrize(
    "field_id",
    [ce.DV_KEY_METADATA, 180, ce.MANIFEST_INFO],
    ids=["a nested id", "an unknown id", "another top-level id"],
)
def test_a_relabelled_deletion_vector_names_the_leaf(field_id: int) -> None:
    # Found by the fuzz suite: one flipped bit turned deletion_vector's id 148 into 149 (a nested
    # id); projection by id read the DV as absent, so the deleted rows would have come back, and
    # only the snapshot's totals check caught it, naming the root instead of this leaf.
    dv = DeletionVectorRef(f"{LOC}/data/dv-1.puffin", 4, 40, 2)
    data = leaf([entry(data_file(deletion_vector=dv), dv_snapshot_id=42)])
    assert round_trip(data)[0].data_file.deletion_vector == dv
    with pytest.raises(CorruptMetadata, match=r"m\.parquet: .*field id\(s\) \[148\] are missing") as caught:
        read(_with_field_id(data, "deletion_vector", field_id))
    assert caught.value.location == "m.parquet"


def test_manifest_reference_inside_leaf_rejected() -> None:
    data = root([manifest_ref()])
    with pytest.raises(CorruptMetadata, match="leaf"):
        read(data, kind="leaf")
    relabelled = _set_int_column(leaf([entry(data_file())]), "content_type", 3)
    with pytest.raises(CorruptMetadata, match="leaf"):
        read(relabelled)  # kind taken from the footer's content key
    assert read(data).num_rows == 1


def test_write_side_validation() -> None:
    pos = data_file(content=FileContent.POSITION_DELETES, referenced_data_file="x")
    with pytest.raises(ValidationError, match="POSITION_DELETES"):
        leaf([entry(pos)])
    with pytest.raises(ValidationError, match="root manifest"):
        leaf([manifest_ref()])
    eq = data_file("eq", content=FileContent.EQUALITY_DELETES, equality_ids=(1,))
    with pytest.raises(ValidationError, match="one kind"):
        leaf([entry(data_file()), entry(eq)])
    with pytest.raises(ValidationError, match="equality_ids"):
        leaf([entry(eq.with_changes(equality_ids=None))])
    dv = DeletionVectorRef("d.puffin", 4, 9, 1)
    with pytest.raises(ValidationError, match="dv_snapshot_id"):
        leaf([entry(data_file(deletion_vector=dv))])
    with pytest.raises(ValidationError, match="explicit snapshot id"):
        root([entry(data_file(first_row_id=0))])
    with pytest.raises(ValidationError, match="first_row_id"):
        root([entry(data_file(), sequence_number=1, file_sequence_number=1)])
    with pytest.raises(ValidationError, match="counts"):
        root([manifest_ref(added_files_count=None)])
    with pytest.raises(ValidationError, match="dv_snapshot_id"):
        root([manifest_ref(mdv=mumbling.encode([1]))])
    with pytest.raises(ValidationError, match="spec"):
        leaf([entry(data_file(spec_id=9))])
    with pytest.raises(ValidationError, match="does not match"):
        leaf([entry(data_file(partition=(1,)))])
    with pytest.raises(CorruptMetadata):
        root([manifest_ref(mdv=b"\x07garbage", dv_snapshot_id=77)])


def test_root_rows_need_explicit_tracking_on_read() -> None:
    data = leaf([entry(data_file())])  # snapshot id set, sequence numbers inherited
    assert read(data, kind="leaf").num_rows == 1
    with pytest.raises(CorruptMetadata, match=r"tracking\.sequence_number"):
        read(data, kind="root")


def test_inline_root_data_rows_round_trip() -> None:
    e = ManifestEntry(EntryStatus.ADDED, 77, 9, 9, data_file(first_row_id=0))
    ref = manifest_ref()
    assert round_trip(root([ref, e])) == [ref, e]


# -- compact files --------------------------------------------------------------------------------

INTEGER_TYPES = ("INT32", "INT64")


def _bounded_file(i: int, **changes: Any) -> DataFile:
    """A data file with bounds of every primitive type, split offsets and a first row id."""
    ids = [10 + k for k in range(len(PRIMITIVES))]
    return data_file(
        f"f{i}",
        record_count=100 + i,
        value_counts={fid: 100 + i for fid in ids},
        null_value_counts={fid: i for fid in ids},
        nan_value_counts={13: 0, 14: i},
        lower_bounds={fid: to_bytes(t, lo) for fid, (t, lo, _) in zip(ids, PRIMITIVES, strict=True)},
        upper_bounds={fid: to_bytes(t, hi) for fid, (t, _, hi) in zip(ids, PRIMITIVES, strict=True)},
        split_offsets=(4, 2048 + i, 9000 + i),
        first_row_id=1000 * i,
    ).with_changes(**changes)


def _compact_rows() -> list[ContentRow]:
    """Inline data and equality-delete entries (lists, bounds of every type) and manifest references."""
    data = [entry(_bounded_file(i), sequence_number=i + 1, file_sequence_number=i + 1) for i in range(5)]
    eq = _bounded_file(9, content=FileContent.EQUALITY_DELETES, equality_ids=(1, 2), first_row_id=None)
    stats = {1: ColumnStats(lower_bound=1, upper_bound=9, value_count=500, null_value_count=0)}
    refs = [
        manifest_ref(f"{LOC}/metadata/leaf-{k}.parquet", first_row_id=10_000 * k, content_stats=stats)
        for k in range(3)
    ]
    modified = refs[0].with_changes(
        status=EntryStatus.MODIFIED, mdv=mumbling.encode([1, 5]), dv_snapshot_id=77
    )
    return [modified, *refs[1:], *data, entry(eq, sequence_number=3, file_sequence_number=3)]


def _column_chunks(data: bytes) -> list[tuple[str, str, set[str]]]:
    """(dotted path, physical type, encodings) of every column chunk of the first row group."""
    meta = pq.ParquetFile(pa.BufferReader(data)).metadata
    assert meta.num_row_groups == 1
    rg = meta.row_group(0)
    return [
        (c.path_in_schema, c.physical_type, set(c.encodings))
        for c in (rg.column(i) for i in range(meta.num_columns))
    ]


def test_compact_files_delta_encode_every_integer_column() -> None:
    rows = _compact_rows()
    data_rows = [r for r in rows if isinstance(r, ManifestEntry) and r.data_file.content == FileContent.DATA]
    for data in (root(rows, compact=True), leaf(data_rows, compact=True)):
        chunks = _column_chunks(data)
        integers = [(path, enc) for path, physical, enc in chunks if physical in INTEGER_TYPES]
        others = [(path, enc) for path, physical, enc in chunks if physical not in INTEGER_TYPES]
        assert {"split_offsets.list.element", "content_stats.c7.lower_bound"} <= {p for p, _ in integers}
        assert all("DELTA_BINARY_PACKED" in enc and "PLAIN" not in enc for _, enc in integers), integers
        assert others and all("DELTA_BINARY_PACKED" not in enc for _, enc in others)
        assert all(enc.isdisjoint({"PLAIN_DICTIONARY", "RLE_DICTIONARY"}) for _, _, enc in chunks)


def test_roots_are_written_with_snappy_and_leaves_with_zstd() -> None:
    # a root is written once per commit: zstd's fixed cost per column chunk doubled its write time
    rows = _compact_rows()
    data_rows = [r for r in rows if isinstance(r, ManifestEntry) and r.data_file.content == FileContent.DATA]
    for data, codec in ((root(rows, compact=True), "SNAPPY"), (leaf(data_rows, compact=True), "ZSTD")):
        meta = pq.ParquetFile(io.BytesIO(data)).metadata
        rg = meta.row_group(0)
        assert {rg.column(i).compression for i in range(meta.num_columns)} == {codec}


def test_compact_files_read_back_like_full_ones() -> None:
    rows = _compact_rows()
    full, compact = root(rows), root(rows, compact=True)
    assert len(compact) < len(full)
    assert round_trip(compact) == round_trip(full) == rows
    assert to_positioned_rows(read(compact), specs=SPECS) == to_positioned_rows(read(full), specs=SPECS)
    stored = raw(compact)
    assert stored.equals(prune_null_columns(raw(full)))


def _leaf_columns(table: pa.Table) -> pa.Table:
    """The table with its structs flattened to dotted leaf columns (lists kept)."""
    while any(pa.types.is_struct(f.type) for f in table.schema):
        table = table.flatten()
    return table


def test_compact_files_read_in_duckdb(tmp_path: Path) -> None:
    import duckdb

    path = tmp_path / "root.parquet"
    path.write_bytes(root(_compact_rows(), compact=True))
    want = _leaf_columns(raw(path.read_bytes()))
    got = _leaf_columns(duckdb.sql(f"select * from read_parquet('{path}')").arrow().read_all())
    assert got.column_names == want.column_names and got.num_rows == len(_compact_rows())
    for name in want.column_names:
        expected, actual = want.column(name), got.column(name)
        if expected.type == pa.timestamp("ns", tz="UTC"):  # DuckDB has no nanosecond TIMESTAMPTZ
            expected = expected.cast(pa.timestamp("us", tz="UTC"), safe=False)
        assert actual.cast(expected.type).equals(expected), name


def test_required_members_are_filled_under_null_parents_only() -> None:
    inner = pa.struct([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())])
    t = pa.struct(
        [pa.field("all_optional", pa.struct([pa.field("x", pa.int64())])), pa.field("inner", inner)]
    )
    arr = pa.array(
        [
            None,
            {"all_optional": None, "inner": {"k": 1, "v": None}},
            {"all_optional": {"x": 2}, "inner": None},
        ],
        t,
    )
    filled = fill_required_members(arr, t, "e")
    assert filled.to_pylist() == arr.to_pylist()  # the same values ...
    assert filled.field(1).field(0).null_count == 0  # ... with no null left in a required member
    missing = pa.array([{"all_optional": None, "inner": {"k": None, "v": "a"}}], t)
    with pytest.raises(ValidationError, match=r"e\.inner\.k is required but missing"):
        fill_required_members(missing, t, "e")


def test_single_array_takes_a_columns_only_chunk_without_copying_it() -> None:
    struct = pa.array([{"a": 1, "b": "x"}, None, {"a": 3, "b": "z"}])
    one = pa.chunked_array([struct.slice(1)])
    taken = ce.single_array(one)
    assert taken.to_pylist() == [None, {"a": 3, "b": "z"}]
    # the chunk's own buffers (combine_chunks copied even a single chunk)
    assert taken.buffers()[0].address == struct.buffers()[0].address
    several = pa.chunked_array([struct.slice(0, 1), struct.slice(2)])
    assert ce.single_array(several).to_pylist() == [{"a": 1, "b": "x"}, {"a": 3, "b": "z"}]
    assert ce.single_array(struct) is struct
