"""v1–v3 Avro manifests: schema shape, header metadata, round trips, summaries, other writers."""

from __future__ import annotations

import glob
import io
import json
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pytest

from icefloe.errors import CorruptMetadata, ValidationError
from icefloe.formats.avro import schemas as avs
from icefloe.formats.avro.manifest import (
    UNASSIGNED_SEQ,
    read_manifest,
    read_manifest_header,
    read_manifest_with_header,
    write_manifest,
)
from icefloe.spec.content import (
    DataFile,
    EntryStatus,
    FileContent,
    ManifestContent,
    ManifestEntry,
)
from icefloe.spec.conversions import to_bytes
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import parse_transform
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
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
from tests.support.fixtures import install_acceptance_fixtures

SCHEMA = Schema(
    NestedField(1, "b", BooleanType()),
    NestedField(2, "i", IntegerType()),
    NestedField(3, "l", LongType()),
    NestedField(4, "f", FloatType()),
    NestedField(5, "d", DoubleType()),
    NestedField(6, "dec", DecimalType(9, 2)),
    NestedField(7, "dt", DateType()),
    NestedField(8, "t", TimeType()),
    NestedField(9, "ts", TimestampType()),
    NestedField(10, "tstz", TimestamptzType()),
    NestedField(11, "s", StringType()),
    NestedField(12, "u", UUIDType()),
    NestedField(13, "fx", FixedType(4)),
    NestedField(14, "bin", BinaryType()),
    NestedField(15, "big", DecimalType(38, 10)),
    NestedField(16, "tsns", TimestampNanoType()),
    NestedField(17, "tstzns", TimestamptzNanoType()),
    schema_id=3,
)
SOURCE_VALUES: dict[int, Any] = {
    1: True,
    2: 7,
    3: 2**40,
    4: 1.5,
    5: -0.0,
    6: Decimal("1.23"),
    7: 19_000,
    8: 36_000_000_000,
    9: 1_700_000_000_123_456,
    10: 1_700_000_000_654_321,
    11: "héllo wörld",
    12: uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
    13: b"\x00\x01\x02\x03",
    14: b"\xffbin",
    15: Decimal("-1234567890123456789.0123456789"),
    16: 1_700_000_000_123_456_789,
    17: 1_700_000_000_987_654_321,
}
TRANSFORMS = [
    *((sid, "identity") for sid in range(1, 16)),
    (11, "bucket[8]"),
    (11, "truncate[3]"),
    (6, "truncate[10]"),
    (14, "truncate[2]"),
    (9, "year"),
    (7, "month"),
    (10, "day"),
    (9, "hour"),
    (2, "void"),
]
V3_TRANSFORMS = [(16, "identity"), (17, "identity"), (16, "day"), (17, "hour")]


def make_spec(format_version: int, spec_id: int = 2) -> PartitionSpec:
    """A spec using every transform (and every result type) the format version allows."""
    pairs = TRANSFORMS + (V3_TRANSFORMS if format_version >= 3 else [])
    fields = [
        PartitionField(sid, 1000 + n, parse_transform(t), f"p{n}_{t.split('[')[0]}")
        for n, (sid, t) in enumerate(pairs)
    ]
    return PartitionSpec(*fields, spec_id=spec_id)


def partition_of(spec: PartitionSpec, values: dict[int, Any]) -> tuple[Any, ...]:
    """The partition tuple of a row, computed with the spec's transforms."""
    return tuple(
        f.transform.apply(SCHEMA.find_type(f.source_id), values.get(f.source_id)) for f in spec.fields
    )


def data_file(path: str, spec: PartitionSpec, partition: tuple[Any, ...], **kw: Any) -> DataFile:
    base: dict[str, Any] = {
        "file_path": path,
        "file_format": "parquet",
        "record_count": 10,
        "file_size_in_bytes": 1234,
        "spec_id": spec.spec_id,
        "partition": partition,
        "column_sizes": {1: 10, 2: 20},
        "value_counts": {1: 10, 2: 10},
        "null_value_counts": {1: 0, 2: 3},
        "nan_value_counts": {4: 1},
        "lower_bounds": {2: to_bytes(IntegerType(), 1)},
        "upper_bounds": {2: to_bytes(IntegerType(), 9)},
        "split_offsets": (4, 1000),
        "sort_order_id": 0,
    }
    base.update(kw)
    return DataFile(**base)


def entries_for(format_version: int, spec: PartitionSpec) -> list[ManifestEntry]:
    full = partition_of(spec, SOURCE_VALUES)
    nulls = partition_of(spec, {})
    other = partition_of(spec, {**SOURCE_VALUES, 4: float("nan"), 5: 0.0, 2: -3, 11: "abc"})
    v2 = format_version >= 2
    out = [
        ManifestEntry(EntryStatus.ADDED, None, None, None, data_file("s3://b/t/data/a.parquet", spec, full)),
        ManifestEntry(
            EntryStatus.EXISTING,
            11,
            4 if v2 else None,
            5 if v2 else None,
            data_file(
                "s3://b/t/data/b c.parquet",
                spec,
                nulls,
                record_count=5,
                first_row_id=100 if format_version >= 3 else None,
            ),
        ),
        ManifestEntry(
            EntryStatus.DELETED,
            12,
            3 if v2 else None,
            3 if v2 else None,
            data_file("file:/tmp/x.parquet", spec, other, record_count=7, key_metadata=b"k"),
        ),
    ]
    return out


@pytest.mark.parametrize("format_version", [1, 2, 3])
def test_round_trip_every_partition_type(format_version: int) -> None:
    spec = make_spec(format_version)
    entries = entries_for(format_version, spec)
    buf = io.BytesIO()
    mf = write_manifest(buf, entries, spec, SCHEMA, format_version, ManifestContent.DATA, 99, path="m.avro")
    got = read_manifest(buf.getvalue(), {spec.spec_id: spec})
    expected = [entries[0].with_changes(snapshot_id=99), *entries[1:]]
    assert repr(got) == repr(expected)  # repr: one partition value is NaN
    assert mf.manifest_path == "m.avro"
    assert mf.manifest_length == len(buf.getvalue())
    assert mf.partition_spec_id == spec.spec_id
    assert (mf.added_files_count, mf.existing_files_count, mf.deleted_files_count) == (1, 1, 1)
    assert (mf.added_rows_count, mf.existing_rows_count, mf.deleted_rows_count) == (10, 5, 7)
    assert mf.added_snapshot_id == 99
    if format_version == 1:
        assert (mf.sequence_number, mf.min_sequence_number) == (0, 0)
    else:
        assert mf.sequence_number == UNASSIGNED_SEQ
        assert mf.min_sequence_number == 4  # live entries only; the DELETED one has 3


def test_partition_values_keep_internal_representation() -> None:
    spec = make_spec(3)
    entries = entries_for(3, spec)
    buf = io.BytesIO()
    write_manifest(buf, entries, spec, SCHEMA, 3, ManifestContent.DATA, 1)
    got = read_manifest(buf.getvalue(), {spec.spec_id: spec})[0].data_file.partition
    by_name = {f.name: v for f, v in zip(spec.fields, got, strict=True)}
    assert by_name["p6_identity"] == 19_000  # date stays days
    assert by_name["p8_identity"] == 1_700_000_000_123_456  # timestamp stays micros
    assert by_name["p5_identity"] == Decimal("1.23")
    assert by_name["p14_identity"] == Decimal("-1234567890123456789.0123456789")
    assert by_name["p11_identity"] == SOURCE_VALUES[12]
    assert by_name["p24_identity"] == 1_700_000_000_123_456_789  # timestamp_ns stays nanos
    assert by_name["p23_void"] is None


def test_partition_summaries() -> None:
    spec = make_spec(2)
    buf = io.BytesIO()
    mf = write_manifest(buf, entries_for(2, spec), spec, SCHEMA, 2, ManifestContent.DATA, 1)
    assert mf.partitions is not None
    summaries = dict(zip([f.name for f in spec.fields], mf.partitions, strict=True))
    ints = summaries["p1_identity"]
    assert ints.contains_null and not ints.contains_nan
    assert (ints.lower_bound, ints.upper_bound) == (to_bytes(IntegerType(), -3), to_bytes(IntegerType(), 7))
    floats = summaries["p3_identity"]
    assert floats.contains_nan and floats.contains_null
    assert floats.lower_bound == floats.upper_bound == to_bytes(FloatType(), 1.5)
    zeros = summaries["p4_identity"]  # -0.0 and +0.0: the lower bound must be -0.0
    assert zeros.lower_bound == to_bytes(DoubleType(), -0.0)
    assert zeros.upper_bound == to_bytes(DoubleType(), 0.0)
    strings = summaries["p10_identity"]
    assert (strings.lower_bound, strings.upper_bound) == (b"abc", "héllo wörld".encode())
    void = summaries["p23_void"]
    assert void.contains_null and void.lower_bound is None


@pytest.mark.parametrize("format_version", [1, 2, 3])
def test_avro_schema_and_header(format_version: int) -> None:
    spec = make_spec(format_version)
    buf = io.BytesIO()
    write_manifest(
        buf, entries_for(format_version, spec), spec, SCHEMA, format_version, ManifestContent.DATA, 1
    )
    reader = fastavro.reader(io.BytesIO(buf.getvalue()))
    meta = reader.metadata
    assert json.loads(meta["schema"])["fields"][0] == {
        "id": 1,
        "name": "b",
        "required": False,
        "type": "boolean",
    }
    assert meta["schema-id"] == "3"
    assert json.loads(meta["partition-spec"])[0] == {
        "name": "p0_identity",
        "transform": "identity",
        "source-id": 1,
        "field-id": 1000,
    }
    assert meta["partition-spec-id"] == "2"
    assert meta["format-version"] == str(format_version)
    assert meta.get("content") == (None if format_version == 1 else "data")
    schema = json.loads(meta["avro.schema"])
    top = {f["name"]: f for f in schema["fields"]}
    assert top["status"]["field-id"] == 0 and top["data_file"]["field-id"] == 2
    assert ("sequence_number" in top) == (format_version >= 2)
    df = {f["name"]: f for f in top["data_file"]["type"]["fields"]}
    assert all("field-id" in f for f in df.values())
    assert ("content" in df) == (format_version >= 2)
    assert ("block_size_in_bytes" in df) == (format_version == 1)
    assert ("equality_ids" in df) == (format_version >= 2)
    for name in ("first_row_id", "content_offset", "content_size_in_bytes"):
        assert (name in df) == (format_version >= 3)
    sizes = df["column_sizes"]["type"][1]
    assert sizes["logicalType"] == "map" and sizes["type"] == "array"
    assert sizes["items"]["name"] == "k117_v118"
    assert [f["field-id"] for f in sizes["items"]["fields"]] == [117, 118]
    assert df["split_offsets"]["type"][1]["element-id"] == 133
    part = {f["name"]: f for f in df["partition"]["type"]["fields"]}
    assert [f["field-id"] for f in df["partition"]["type"]["fields"]] == [f.field_id for f in spec.fields]
    assert part["p6_identity"]["type"][1] == {"type": "int", "logicalType": "date"}
    assert part["p9_identity"]["type"][1] == {
        "type": "long",
        "logicalType": "timestamp-micros",
        "adjust-to-utc": True,
    }
    assert part["p5_identity"]["type"][1]["logicalType"] == "decimal"
    assert part["p5_identity"]["type"][1]["size"] == 4
    assert part["p11_identity"]["type"][1] == {
        "type": "fixed",
        "name": "uuid_fixed",
        "size": 16,
        "logicalType": "uuid",
    }
    assert part["p21_day"]["type"][1] == {"type": "int", "logicalType": "date"}
    # fastavro (a reader that applies logical types) sees the same values
    first = next(iter(reader))
    assert first["data_file"]["partition"]["p6_identity"].isoformat() == "2022-01-08"
    assert first["data_file"]["partition"]["p5_identity"] == Decimal("1.23")
    assert first["data_file"]["file_format"] == "PARQUET"
    if format_version == 1:
        assert first["data_file"]["block_size_in_bytes"] == avs.V1_BLOCK_SIZE
    header = read_manifest_header(buf.getvalue())
    assert (header.format_version, header.spec_id, header.schema_id) == (format_version, 2, 3)


def test_delete_manifest_v3_fields() -> None:
    spec = PartitionSpec(spec_id=0)
    dv = DataFile(
        "s3://b/t/data/dv.puffin",
        "puffin",
        3,
        500,
        content=FileContent.POSITION_DELETES,
        referenced_data_file="s3://b/t/data/a.parquet",
        content_offset=4,
        content_size_in_bytes=40,
    )
    eq = DataFile(
        "s3://b/t/data/eq.parquet",
        "parquet",
        2,
        300,
        content=FileContent.EQUALITY_DELETES,
        equality_ids=(1, 2),
    )
    entries = [ManifestEntry(EntryStatus.ADDED, 5, None, None, f) for f in (dv, eq)]
    buf = io.BytesIO()
    mf = write_manifest(buf, entries, spec, SCHEMA, 3, ManifestContent.DELETES, 5)
    assert mf.content == ManifestContent.DELETES
    assert read_manifest(buf.getvalue()) == entries
    assert fastavro.reader(io.BytesIO(buf.getvalue())).metadata["content"] == "deletes"


def test_write_rejects_mismatches() -> None:
    spec = make_spec(2)
    good = entries_for(2, spec)[0]
    deletes = good.with_changes(data_file=good.data_file.with_changes(content=FileContent.POSITION_DELETES))
    with pytest.raises(ValidationError):
        write_manifest(io.BytesIO(), [deletes], spec, SCHEMA, 2, ManifestContent.DATA, 1)
    with pytest.raises(ValidationError):
        write_manifest(io.BytesIO(), [deletes], spec, SCHEMA, 1, ManifestContent.DELETES, 1)
    short = good.with_changes(data_file=good.data_file.with_changes(partition=(1,)))
    with pytest.raises(ValidationError):
        write_manifest(io.BytesIO(), [short], spec, SCHEMA, 2, ManifestContent.DATA, 1)


def test_corrupt_input_names_the_file() -> None:
    with pytest.raises(CorruptMetadata, match=r"broken\.avro"):
        read_manifest(_Named(b"not avro at all", "broken.avro"))


class _Named(io.BytesIO):
    def __init__(self, data: bytes, location: str) -> None:
        super().__init__(data)
        self.location = location


def test_awkward_partition_names_are_sanitised() -> None:
    schema = Schema(NestedField(1, "a-b", StringType()), NestedField(2, "1x", IntegerType()))
    spec = PartitionSpec(
        PartitionField(1, 1000, parse_transform("identity"), "a-b"),
        PartitionField(2, 1001, parse_transform("identity"), "1x"),
    )
    entry = ManifestEntry(EntryStatus.ADDED, 1, None, None, data_file("p", spec, ("v", 3)))
    buf = io.BytesIO()
    write_manifest(buf, [entry], spec, schema, 2, ManifestContent.DATA, 1)
    assert read_manifest(buf.getvalue(), {0: spec}) == [entry]
    names = [
        f["name"]
        for f in fastavro.reader(io.BytesIO(buf.getvalue())).writer_schema["fields"][4]["type"]["fields"][3][
            "type"
        ]["fields"]
    ]
    assert names == ["a_x2Db", "_1x"]


# -- manifests written by other implementations -------------------------------------------------


@pytest.fixture(scope="module")
def acceptance() -> Path:
    return install_acceptance_fixtures()


def _manifests(root: Path) -> list[str]:
    out = []
    for path in sorted(glob.glob(str(root / "*" / "metadata" / "*.avro"))):
        if fastavro.reader(open(path, "rb")).writer_schema.get("name") == "manifest_entry":  # noqa: SIM115
            out.append(path)
    return out


def test_reads_every_acceptance_manifest(acceptance: Path) -> None:
    paths = _manifests(acceptance)
    assert len(paths) > 50
    for path in paths:
        with open(path, "rb") as fh:
            header, entries = read_manifest_with_header(fh.read())
        assert entries, path
        raw = list(fastavro.reader(open(path, "rb")))  # noqa: SIM115
        assert len(raw) == len(entries)
        for e, r in zip(entries, raw, strict=True):
            assert e.data_file.file_path == r["data_file"]["file_path"]  # paths exactly as stored
            assert e.data_file.record_count == r["data_file"]["record_count"]
            assert e.data_file.file_format in ("parquet", "puffin")
            assert int(e.status) == r["status"]
            if header.format_version == 1:
                assert e.sequence_number is None and e.data_file.content == FileContent.DATA
            assert len(e.data_file.partition) == len(r["data_file"]["partition"] or {})


def test_reads_java_decimal_and_date_partitions(acceptance: Path) -> None:
    path = next(p for p in _manifests(acceptance) if "p07_primitive_types" in p)
    raw = next(iter(fastavro.reader(open(path, "rb"))))["data_file"]["partition"]  # noqa: SIM115
    entry = read_manifest(Path(path).read_bytes())[0]
    assert entry.data_file.partition[1] == raw["c_dec9_trunc"]
    assert isinstance(entry.data_file.partition[1], Decimal)
    assert all(not hasattr(v, "isoformat") for v in entry.data_file.partition)


def test_reads_chdb_and_lakesail_headers(acceptance: Path) -> None:
    chdb = [p for p in _manifests(acceptance) if "p10b_chdb" in p]
    header = read_manifest_header(Path(chdb[0]).read_bytes())
    assert header.spec_id == 0 and header.format_version == 2  # "partition_spec_id" spelling
    entry = read_manifest(Path(chdb[0]).read_bytes())[0]
    assert entry.data_file.file_format == "parquet"  # chDB writes "Parquet"
    assert entry.data_file.partition[0] in ("a", "b", "c") and isinstance(entry.data_file.partition[1], int)
    sail = [p for p in _manifests(acceptance) if "p10c_sail" in p]
    for p in sail:  # LakeSail writes the partition struct as an optional union
        for e in read_manifest(Path(p).read_bytes()):
            assert len(e.data_file.partition) == 1
