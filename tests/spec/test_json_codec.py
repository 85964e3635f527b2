"""Table metadata JSON: exact keys per format version, tolerant reading, errors, real fixtures."""

from __future__ import annotations

import copy
import dataclasses
import gzip
import json
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from icefloe.errors import CorruptMetadata, Unsupported
from icefloe.spec.json_codec import (
    ref_from_dict,
    ref_to_dict,
    schema_from_dict,
    schema_to_dict,
    snapshot_from_dict,
    snapshot_to_dict,
    sort_order_from_dict,
    sort_order_to_dict,
    spec_from_dict,
    spec_to_dict,
    table_metadata_from_json,
    table_metadata_to_dict,
    table_metadata_to_json,
)
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import RefType, Snapshot, SnapshotRef
from icefloe.spec.sort_order import NullOrder, SortDirection, SortField, SortOrder
from icefloe.spec.transforms import BucketTransform, DayTransform, IdentityTransform, UnknownTransform
from icefloe.spec.types import (
    DecimalType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
    UUIDType,
)
from tests.support.fixtures import corpus_files

FIXTURES = [str(path) for path in corpus_files("*/metadata/*.metadata.json")]

SCHEMA_JSON: dict[str, Any] = {
    "type": "struct",
    "schema-id": 3,
    "identifier-field-ids": [1],
    "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long", "doc": "primary key"},
        {
            "id": 2,
            "name": "u",
            "required": False,
            "type": "uuid",
            "initial-default": "0db3e2a8-9d1d-42b9-aa7b-74ebe558dceb",
            "write-default": "ec5911be-b0a7-458c-8438-c9a3e53cffae",
        },
        {
            "id": 3,
            "name": "tags",
            "required": False,
            "type": {"type": "list", "element-id": 6, "element": "string", "element-required": True},
        },
        {
            "id": 4,
            "name": "props",
            "required": False,
            "type": {
                "type": "map",
                "key-id": 7,
                "key": "string",
                "value-id": 8,
                "value": "decimal(9, 2)",
                "value-required": False,
            },
        },
        {
            "id": 5,
            "name": "point",
            "required": False,
            "type": {
                "type": "struct",
                "fields": [
                    {"id": 9, "name": "x", "required": True, "type": "int", "initial-default": 0},
                    {
                        "id": 10,
                        "name": "amount",
                        "required": False,
                        "type": "decimal(9, 2)",
                        "write-default": "1.50",
                    },
                ],
            },
            "initial-default": {},
        },
    ],
}


def test_schema_round_trip_exact() -> None:
    schema = schema_from_dict(SCHEMA_JSON)
    assert schema.schema_id == 3
    assert schema.identifier_field_ids == (1,)
    assert schema.find_field(1) == NestedField(1, "id", LongType(), True, "primary key")
    assert schema.find_field(2).initial_default == uuid.UUID("0db3e2a8-9d1d-42b9-aa7b-74ebe558dceb")
    assert schema.find_type(3) == ListType(6, StringType(), True)
    assert schema.find_type(4) == MapType(7, StringType(), 8, DecimalType(9, 2), False)
    assert schema.find_field(9).initial_default == 0
    assert schema.find_field(10).write_default == Decimal("1.50")
    assert schema.find_field(5).initial_default == {}
    assert schema_to_dict(schema) == SCHEMA_JSON


def test_schema_without_optional_keys() -> None:
    schema = schema_from_dict({"type": "struct", "fields": [{"id": 1, "name": "a", "type": "int"}]})
    assert schema == Schema(NestedField(1, "a", IntegerType(), False), schema_id=0)
    assert schema_to_dict(schema) == {
        "type": "struct",
        "schema-id": 0,
        "fields": [{"id": 1, "name": "a", "required": False, "type": "int"}],
    }


def test_spec_round_trip_and_legacy_forms() -> None:
    data = {
        "spec-id": 2,
        "fields": [
            {"name": "ts_day", "transform": "day", "source-id": 4, "field-id": 1000},
            {"name": "id_bucket", "transform": "bucket[16]", "source-id": 1, "field-id": 1001},
            {"name": "z", "transform": "zorder", "source-ids": [1, 4], "field-id": 1002},
        ],
    }
    spec = spec_from_dict(data)
    assert spec == PartitionSpec(
        PartitionField(4, 1000, DayTransform(), "ts_day"),
        PartitionField(1, 1001, BucketTransform(16), "id_bucket"),
        PartitionField(1, 1002, UnknownTransform("zorder"), "z", source_ids=(1, 4)),
        spec_id=2,
    )
    assert spec_to_dict(spec) == data
    # v1: field ids may be missing (assigned from 1000), legacy list form means spec 0
    legacy = spec_from_dict([{"name": "a", "transform": "identity", "source-id": 1}])
    assert legacy == PartitionSpec(PartitionField(1, 1000, IdentityTransform(), "a"), spec_id=0)
    # a one-element source-ids list is a single-argument field
    single = spec_from_dict(
        {"spec-id": 0, "fields": [{"name": "a", "transform": "identity", "source-ids": [3]}]}
    )
    assert single.fields[0].source_id == 3 and single.fields[0].source_ids is None


def test_sort_order_round_trip() -> None:
    data = {
        "order-id": 1,
        "fields": [
            {"transform": "identity", "source-id": 2, "direction": "asc", "null-order": "nulls-first"},
            {"transform": "bucket[4]", "source-id": 3, "direction": "desc", "null-order": "nulls-last"},
        ],
    }
    order = sort_order_from_dict(data)
    assert order == SortOrder(
        SortField(2, IdentityTransform(), SortDirection.ASC, NullOrder.NULLS_FIRST),
        SortField(3, BucketTransform(4), SortDirection.DESC, NullOrder.NULLS_LAST),
        order_id=1,
    )
    assert sort_order_to_dict(order) == data


def test_snapshot_forms_per_version() -> None:
    v1 = {"snapshot-id": 1, "timestamp-ms": 10, "manifests": ["a.avro", "b.avro"]}
    snap = snapshot_from_dict(v1)
    assert snap == Snapshot(1, 10, manifests=("a.avro", "b.avro"))
    assert snapshot_to_dict(snap, 1) == v1
    v3 = {
        "sequence-number": 4,
        "snapshot-id": 2,
        "parent-snapshot-id": 1,
        "timestamp-ms": 11,
        "summary": {"operation": "append"},
        "manifest-list": "s2.avro",
        "schema-id": 0,
        "first-row-id": 100,
        "added-rows": 30,
        "key-id": "k1",
    }
    snap3 = snapshot_from_dict(v3)
    assert snap3.first_row_id == 100 and snap3.added_rows == 30 and snap3.operation == "append"
    assert snapshot_to_dict(snap3, 3) == v3
    v4 = {
        "sequence-number": 5,
        "snapshot-id": 3,
        "timestamp-ms": 12,
        "summary": {"operation": "append"},
        "root-manifest": "metadata/root-3.parquet",
        "first-row-id": 130,
        "added-rows": 0,
    }
    snap4 = snapshot_from_dict(v4)
    assert snap4.root_manifest == "metadata/root-3.parquet" and snap4.manifest_list is None
    assert snapshot_to_dict(snap4, 4) == v4
    with pytest.raises(CorruptMetadata, match="manifest-list"):
        snapshot_from_dict({"snapshot-id": 1, "timestamp-ms": 1})


def test_ref_round_trip() -> None:
    data = {"snapshot-id": 5, "type": "tag", "max-ref-age-ms": 1000}
    assert ref_from_dict(data) == SnapshotRef(5, RefType.TAG, max_ref_age_ms=1000)
    assert ref_to_dict(ref_from_dict(data)) == data
    branch = {"snapshot-id": 6, "type": "branch", "min-snapshots-to-keep": 2, "max-snapshot-age-ms": 9}
    assert ref_to_dict(ref_from_dict(branch)) == branch


V1_LEGACY: dict[str, Any] = {
    "format-version": 1,
    "location": "s3://b/wh/t",
    "last-updated-ms": 1515100955770,
    "last-column-id": 2,
    "schema": {
        "type": "struct",
        "fields": [
            {"id": 1, "name": "id", "required": True, "type": "long"},
            {"id": 2, "name": "ts", "required": False, "type": "timestamptz"},
        ],
    },
    "partition-spec": [{"name": "ts_day", "transform": "day", "source-id": 2}],
    "properties": {"k": "v"},
    "current-snapshot-id": 7,
    "snapshots": [{"snapshot-id": 7, "timestamp-ms": 1515100955770, "manifests": ["m1.avro"]}],
}


def test_v1_legacy_metadata_is_synthesized() -> None:
    md = table_metadata_from_json(json.dumps(V1_LEGACY))
    assert md.format_version == 1
    assert md.table_uuid == ""
    assert md.schema() == Schema(
        NestedField(1, "id", LongType(), True), NestedField(2, "ts", TimestamptzType(), False)
    )
    assert md.spec() == PartitionSpec(PartitionField(2, 1000, DayTransform(), "ts_day"), spec_id=0)
    assert md.last_partition_id == 1000
    assert md.sort_orders == (SortOrder(order_id=0),) and md.default_sort_order_id == 0
    assert md.refs == {"main": SnapshotRef(7, RefType.BRANCH)}
    assert md.last_sequence_number == 0
    out = table_metadata_to_dict(md)
    assert list(out) == [
        "format-version",
        "location",
        "last-updated-ms",
        "last-column-id",
        "schema",
        "current-schema-id",
        "schemas",
        "partition-spec",
        "default-spec-id",
        "partition-specs",
        "last-partition-id",
        "default-sort-order-id",
        "sort-orders",
        "properties",
        "current-snapshot-id",
        "refs",
        "snapshots",
        "statistics",
        "partition-statistics",
        "snapshot-log",
        "metadata-log",
    ]
    assert out["partition-spec"] == [{"name": "ts_day", "transform": "day", "source-id": 2, "field-id": 1000}]
    assert out["snapshots"] == [{"snapshot-id": 7, "timestamp-ms": 1515100955770, "manifests": ["m1.avro"]}]
    assert out["schema"] == out["schemas"][0]
    assert table_metadata_from_json(table_metadata_to_json(md)) == md


def _v2_dict() -> dict[str, Any]:
    return {
        "format-version": 2,
        "table-uuid": "fb072c92-a02b-11e9-ae9c-1bb7bc9eca94",
        "location": "s3://b/wh/t",
        "last-sequence-number": 1,
        "last-updated-ms": 1515100955770,
        "last-column-id": 1,
        "current-schema-id": 0,
        "schemas": [
            {
                "type": "struct",
                "schema-id": 0,
                "fields": [{"id": 1, "name": "x", "required": True, "type": "long"}],
            }
        ],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": []}],
        "last-partition-id": 999,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {},
        "current-snapshot-id": 3051729675574597004,
        "refs": {"main": {"snapshot-id": 3051729675574597004, "type": "branch"}},
        "snapshots": [
            {
                "sequence-number": 1,
                "snapshot-id": 3051729675574597004,
                "timestamp-ms": 1515100955770,
                "summary": {"operation": "append"},
                "manifest-list": "s3://b/wh/t/metadata/snap-1.avro",
                "schema-id": 0,
            }
        ],
        "statistics": [],
        "partition-statistics": [],
        "snapshot-log": [{"timestamp-ms": 1515100955770, "snapshot-id": 3051729675574597004}],
        "metadata-log": [{"timestamp-ms": 1515100000000, "metadata-file": "s3://b/wh/t/metadata/v1.json"}],
    }


def test_v2_round_trip_is_exact() -> None:
    data = _v2_dict()
    md = table_metadata_from_json(data)
    assert json.loads(table_metadata_to_json(md)) == data
    assert list(table_metadata_to_dict(md)) == list(data)


def test_v2_empty_table_writes_minus_one_and_v3_null() -> None:
    data = _v2_dict()
    data.update({"current-snapshot-id": -1, "refs": {}, "snapshots": [], "snapshot-log": []})
    md = table_metadata_from_json(data)
    assert md.current_snapshot_id is None and md.refs == {}
    assert table_metadata_to_dict(md)["current-snapshot-id"] == -1
    v3 = md.with_changes(format_version=3, next_row_id=0)
    out = table_metadata_to_dict(v3)
    assert out["current-snapshot-id"] is None and out["next-row-id"] == 0


def test_v3_row_lineage_and_extra_keys() -> None:
    data = _v2_dict()
    data["format-version"] = 3
    data["next-row-id"] = 130
    data["snapshots"][0].update({"first-row-id": 100, "added-rows": 30})
    data["encryption-keys"] = [{"key-id": "5f819b", "encrypted-key-metadata": "aWNlYmVyZwo="}]
    data["x-vendor"] = {"a": 1}
    md = table_metadata_from_json(data)
    assert md.next_row_id == 130
    assert md.snapshots[0].first_row_id == 100
    assert md.extra == {"x-vendor": {"a": 1}}
    out = json.loads(table_metadata_to_json(md))
    assert out == data
    again = table_metadata_from_json(out)
    assert again == md and again.extra == md.extra
    # missing next-row-id: tolerated, past every assigned id
    del data["next-row-id"]
    assert table_metadata_from_json(data).next_row_id == 130


def test_v4_optional_location_and_root_manifest() -> None:
    data = _v2_dict()
    data["format-version"] = 4
    del data["location"]
    data["next-row-id"] = 5
    snap = data["snapshots"][0]
    del snap["manifest-list"]
    snap.update({"root-manifest": "metadata/root-1.parquet", "first-row-id": 0, "added-rows": 5})
    md = table_metadata_from_json(data)
    assert md.location == "" and md.snapshots[0].root_manifest == "metadata/root-1.parquet"
    out = json.loads(table_metadata_to_json(md))
    assert "location" not in out
    assert out["snapshots"][0]["root-manifest"] == "metadata/root-1.parquet"
    assert table_metadata_from_json(out) == md


def test_missing_refs_synthesize_main_and_sort_orders_tolerated() -> None:
    data = _v2_dict()
    del data["refs"], data["sort-orders"], data["default-sort-order-id"], data["properties"]
    md = table_metadata_from_json(data)
    assert md.refs == {"main": SnapshotRef(3051729675574597004, RefType.BRANCH)}
    assert md.sort_orders == (SortOrder(order_id=0),)
    assert md.properties == {}


def test_gzip_bytes() -> None:
    raw = gzip.compress(json.dumps(_v2_dict()).encode())
    assert table_metadata_from_json(raw) == table_metadata_from_json(_v2_dict())


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.pop("last-sequence-number"), "last-sequence-number"),
        (lambda d: d.pop("table-uuid"), "table-uuid"),
        (lambda d: d.pop("location"), "location"),
        (lambda d: d.pop("schemas"), "schemas"),
        (lambda d: d.pop("current-schema-id"), "current-schema-id"),
        (lambda d: d.pop("partition-specs"), "partition-specs"),
        (lambda d: d.pop("last-column-id"), "last-column-id"),
        (lambda d: d.update({"current-schema-id": 9}), "current-schema-id 9"),
        (lambda d: d.update({"last-updated-ms": "soon"}), "last-updated-ms"),
        (lambda d: d["snapshots"][0].pop("snapshot-id"), "snapshot-id"),
        (lambda d: d["schemas"][0]["fields"][0].update({"type": "bogus"}), "bogus"),
        (lambda d: d.update({"snapshots": {}}), "snapshots"),
    ],
)
def test_corrupt_metadata_messages(mutate: Any, message: str) -> None:
    data = copy.deepcopy(_v2_dict())
    mutate(data)
    with pytest.raises(CorruptMetadata, match=message):
        table_metadata_from_json(data)


def test_malformed_json_and_versions() -> None:
    with pytest.raises(CorruptMetadata, match="not valid JSON"):
        table_metadata_from_json("{not json")
    with pytest.raises(CorruptMetadata, match="JSON object"):
        table_metadata_from_json("[1, 2]")
    with pytest.raises(CorruptMetadata, match="format-version"):
        table_metadata_from_json("{}")
    data = _v2_dict()
    data["format-version"] = 5
    with pytest.raises(Unsupported, match="format-version 5"):
        table_metadata_from_json(data)


def test_defaults_types_survive_nested_struct_round_trip() -> None:
    st = StructType(NestedField(1, "a", UUIDType()))
    schema = Schema(NestedField(1, "s", st, False, initial_default={}))
    assert schema_from_dict(schema_to_dict(schema)) == schema


def test_every_fixture_metadata_file_parses_and_round_trips() -> None:
    assert len(FIXTURES) >= 90
    versions = set()
    for path in FIXTURES:
        md = table_metadata_from_json(Path(path).read_bytes())
        versions.add(md.format_version)
        text = table_metadata_to_json(md)
        again = table_metadata_from_json(text)
        assert again == md, path
        assert again.extra == md.extra, path
        assert table_metadata_to_json(again) == text, path
    assert versions == {1, 2, 3}


def test_known_snapshots_repeated_exactly_are_taken_as_they_are() -> None:
    """Parsing with ``known`` gives what parsing without it gives; the snapshots the JSON repeats
    field for field are ``known``'s own objects (v2, v3 lineage, v4 roots relative to the table)."""
    checked = 0
    for path in FIXTURES:
        data = json.loads(Path(path).read_text())
        fresh = table_metadata_from_json(data)
        if fresh.format_version < 2 or not fresh.snapshots:
            continue
        again = table_metadata_from_json(data, known=fresh)
        assert again == fresh, path
        assert all(a is f for a, f in zip(again.snapshots, fresh.snapshots, strict=True)), path
        checked += 1
    assert checked >= 10
    v4 = _v2_dict()
    v4.update({"format-version": 4, "next-row-id": 5})
    snap = v4["snapshots"][0]
    del snap["manifest-list"]
    snap.update({"root-manifest": "metadata/root-1.parquet", "first-row-id": 0, "added-rows": 5})
    fresh = table_metadata_from_json(v4)
    assert fresh.snapshots[0].root_manifest == "s3://b/wh/t/metadata/root-1.parquet"
    assert table_metadata_from_json(v4, known=fresh).snapshots[0] is fresh.snapshots[0]


@pytest.mark.parametrize(
    "change",
    [
        {"sequence_number": 2},
        {"parent_snapshot_id": 7},
        {"timestamp_ms": 1},
        {"manifest_list": "s3://b/wh/t/metadata/snap-rebased.avro"},
        {"summary": {"operation": "overwrite"}},
        {"schema_id": 1},
        {"first_row_id": 3},
        {"key_id": "k"},
    ],
)
def test_a_known_snapshot_that_differs_is_parsed(change: dict[str, Any]) -> None:
    """A snapshot the catalog changed under the same id (a server-side rebase keeps the id but not
    the sequence number, parent or manifest list) is parsed from the JSON, not taken from ``known``."""
    data = _v2_dict()
    fresh = table_metadata_from_json(data)
    stale = fresh.with_changes(snapshots=(dataclasses.replace(fresh.snapshots[0], **change),))
    again = table_metadata_from_json(data, known=stale)
    assert again == fresh
    assert again.snapshots[0] is not stale.snapshots[0]
