"""Location provider: metadata and data paths, path properties, partition directories."""

from __future__ import annotations

from pathlib import Path

from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import parse_transform
from icefloe.spec.types import BinaryType, DateType, NestedField, StringType, TimestampType
from icefloe.tree.locations import LocationProvider, partition_path
from tests.tree.helpers import new_metadata

SCHEMA = Schema(
    NestedField(1, "s", StringType()),
    NestedField(2, "d", DateType()),
    NestedField(3, "ts", TimestampType()),
    NestedField(4, "b", BinaryType()),
)


def test_metadata_paths(tmp_path: Path) -> None:
    md = new_metadata(tmp_path, 2)
    lp = LocationProvider(md)
    m0, m1 = lp.new_manifest_path(), lp.new_manifest_path()
    assert m0 == f"file://{tmp_path}/t/metadata/{lp.commit_uuid}-m0.avro"
    assert m1.endswith(f"{lp.commit_uuid}-m1.avro")
    assert lp.new_manifest_list_path(42, 3) == f"file://{tmp_path}/t/metadata/snap-42-3-{lp.commit_uuid}.avro"
    assert LocationProvider(md).commit_uuid != lp.commit_uuid


def test_path_properties_and_trailing_slashes() -> None:
    lp = LocationProvider(
        "s3://bucket/tbl/", {"write.data.path": "s3://other/data/", "write.metadata.path": "s3://m"}
    )
    assert lp.new_manifest_path().startswith("s3://m/")
    assert lp.new_data_file_path().startswith("s3://other/data/")
    plain = LocationProvider("s3://bucket/tbl/")
    assert plain.new_data_file_path(file_name="x.parquet") == "s3://bucket/tbl/data/x.parquet"
    assert plain.new_manifest_list_path(1).startswith("s3://bucket/tbl/metadata/snap-1-1-")


def test_partition_paths() -> None:
    spec = PartitionSpec(
        PartitionField(1, 1000, parse_transform("identity"), "s"),
        PartitionField(2, 1001, parse_transform("identity"), "d"),
        PartitionField(3, 1002, parse_transform("day"), "ts_day"),
        PartitionField(3, 1003, parse_transform("hour"), "ts hour"),
        PartitionField(1, 1004, parse_transform("bucket[4]"), "s_bucket"),
        PartitionField(4, 1005, parse_transform("identity"), "b"),
    )
    path = partition_path(spec, SCHEMA, ("a/b c=d", 19723, 19724, 473376, 3, b"\x01\x02"))
    assert path == "s=a%2Fb+c%3Dd/d=2024-01-01/ts_day=2024-01-02/ts+hour=2024-01-02-00/s_bucket=3/b=AQI%3D"
    assert partition_path(spec, SCHEMA, (None,) * 6).startswith("s=null/d=null/")
    lp = LocationProvider("file:///w")
    data = lp.new_data_file_path(spec, SCHEMA, ("x", 1, 2, 3, 4, b""))
    assert data.startswith("file:///w/data/s=x/d=1970-01-02/ts_day=1970-01-03/") and data.endswith(".parquet")
