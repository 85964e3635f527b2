"""A few content-entry rows converted by name give the array ``internal_to_arrow`` builds."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from icefloe.formats.arrow_schema import internal_to_arrow
from icefloe.formats.v4.content_entry import _RowWriter
from icefloe.formats.v4.content_entry_schema import content_entry_schema
from icefloe.formats.v4.row_values import converts_by_name, entry_values_to_arrow, values_by_name_to_arrow
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
from icefloe.spec.conversions import to_bytes
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import BucketTransform, DayTransform, IdentityTransform
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    LongType,
    NestedField,
    StringType,
    TimestamptzType,
    UUIDType,
)

LOC = "s3://bucket/warehouse/tbl"
SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "name", StringType()),
    NestedField(3, "score", DoubleType()),
    NestedField(4, "day", DateType()),
    NestedField(5, "ts", TimestamptzType()),
    NestedField(6, "ok", BooleanType()),
    NestedField(7, "blob", BinaryType()),
)
SPECS = {
    0: PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "name"), spec_id=0),
    1: PartitionSpec(
        PartitionField(5, 1001, DayTransform(), "ts_day"),
        PartitionField(1, 1002, BucketTransform(8), "id_bucket"),
        spec_id=1,
    ),
}


def _file(i: int, **changes: Any) -> DataFile:
    bounds = {
        1: to_bytes(LongType(), i),
        2: to_bytes(StringType(), f"n{i}"),
        3: to_bytes(DoubleType(), i / 2),
    }
    base = DataFile(
        f"{LOC}/data/f{i}.parquet",
        "parquet",
        10 + i,
        1000 + i,
        spec_id=0,
        partition=(f"n{i}",),
        value_counts={1: 10 + i, 2: 10 + i, 3: 10 + i, 6: 10 + i},
        null_value_counts={1: 0, 2: i % 2, 6: 10 + i},  # column 6 all null: no bounds
        nan_value_counts={3: 0},
        lower_bounds=bounds,
        upper_bounds=bounds,
        split_offsets=(4,),
        first_row_id=100 * i,
    )
    return base.with_changes(**changes)


def _rows() -> list[ManifestEntry | ManifestFile]:
    dv = DeletionVectorRef(f"{LOC}/data/dv.puffin", 4, 40, 3, None)
    column_file = ColumnFile(f"{LOC}/data/cf.parquet", "parquet", 77, (3,), 1)
    return [
        ManifestEntry(EntryStatus.ADDED, 7, 3, 3, _file(1)),
        ManifestEntry(EntryStatus.EXISTING, 6, 2, 2, _file(2, value_counts=None, null_value_counts=None,
                      nan_value_counts=None, lower_bounds=None, upper_bounds=None)),  # no stats at all
        ManifestEntry(EntryStatus.ADDED, 7, 3, 3, _file(3, deletion_vector=dv), dv_snapshot_id=7),
        ManifestEntry(EntryStatus.ADDED, 7, 3, 3, _file(4, column_files=(column_file,)),
                      latest_column_file_snapshot_id=7),
        ManifestEntry(EntryStatus.ADDED, 7, 3, 3, _file(5, spec_id=1, partition=(19_000, 3))),
        ManifestEntry(EntryStatus.ADDED, 7, 3, 3, _file(6, content=FileContent.EQUALITY_DELETES,
                      equality_ids=(1,), first_row_id=None, split_offsets=None)),
        ManifestFile(f"{LOC}/metadata/leaf.parquet", 5000, 0, ManifestContent.DATA, 2, 1, 6,
                     added_files_count=3, existing_files_count=1, deleted_files_count=0,
                     added_rows_count=30, existing_rows_count=10, deleted_rows_count=0,
                     first_row_id=500, format_version=4, status=EntryStatus.EXISTING),
    ]  # fmt: skip


def _same(a: pa.Array, b: pa.Array, path: str = "row") -> None:
    """Equal down to the members under null structs (``equals`` does not look there; pruning does)."""
    assert a.type.equals(b.type, check_metadata=True), path
    assert a.equals(b), path
    if isinstance(a, pa.StructArray):
        for i, f in enumerate(a.type):
            _same(a.field(i), b.field(i), f"{path}.{f.name}")


def test_rows_converted_by_name_are_the_arrays_internal_to_arrow_builds() -> None:
    schema = content_entry_schema(SCHEMA, SPECS)
    assert converts_by_name(schema)
    writer = _RowWriter(schema, SPECS, "root", LOC, None)
    values = [writer.row(r) for r in _rows()]
    target = pa.struct(list(schema.write_arrow))
    for batch in ([values[0]], [values[1]], values[2:4], values, [*values, None]):
        _same(
            values_by_name_to_arrow(schema.write_type, batch, target),
            internal_to_arrow(schema.write_type, batch, target),
        )
        _same(
            entry_values_to_arrow(schema, batch, target), internal_to_arrow(schema.write_type, batch, target)
        )


def test_types_pyarrow_does_not_build_from_the_internal_value_are_converted_by_internal_to_arrow() -> None:
    for t in (DecimalType(9, 2), UUIDType()):
        schema = content_entry_schema(
            Schema(NestedField(1, "id", LongType(), True), NestedField(2, "x", t)), {}
        )
        assert not converts_by_name(schema)
    assert converts_by_name(content_entry_schema(Schema(NestedField(1, "id", LongType(), True)), {}))
