"""v1–v3 Avro manifest lists: header, round trips, sequence numbers, first_row_id, other readers."""

from __future__ import annotations

import glob
import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pytest

from icefloe.errors import CorruptMetadata, ValidationError
from icefloe.formats.avro.container import container_bytes, manifest_list_writer
from icefloe.formats.avro.manifest import UNASSIGNED_SEQ, read_manifest, write_manifest
from icefloe.formats.avro.manifest_list import (
    _record,
    assign_commit_values,
    read_manifest_list,
    read_manifest_list_header,
    write_manifest_list,
)
from icefloe.formats.avro.schemas import BLOCK_CRC_KEY
from icefloe.spec.content import (
    DataFile,
    EntryStatus,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    PartitionFieldSummary,
)
from icefloe.spec.conversions import to_bytes
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import parse_transform
from icefloe.spec.types import DateType, DecimalType, LongType, NestedField, StringType


def manifest(path: str, **kw: Any) -> ManifestFile:
    base: dict[str, Any] = {
        "manifest_path": path,
        "manifest_length": 1000,
        "partition_spec_id": 0,
        "content": ManifestContent.DATA,
        "sequence_number": UNASSIGNED_SEQ,
        "min_sequence_number": UNASSIGNED_SEQ,
        "added_snapshot_id": 7,
        "added_files_count": 1,
        "existing_files_count": 0,
        "deleted_files_count": 0,
        "added_rows_count": 10,
        "existing_rows_count": 0,
        "deleted_rows_count": 0,
        "partitions": (PartitionFieldSummary(False, False, b"a", b"z"),),
    }
    base.update(kw)
    return ManifestFile(**base)


def test_spec_row_lineage_example() -> None:
    """The spec's example: next-row-id 1000, three new manifests after an existing one."""
    manifests = [
        manifest(
            "existing",
            added_rows_count=75,
            existing_rows_count=0,
            first_row_id=925,
            sequence_number=3,
            min_sequence_number=3,
        ),
        manifest("added1", added_rows_count=100, existing_rows_count=25),
        manifest("deletes", content=ManifestContent.DELETES, added_rows_count=9),
        manifest("added2", added_rows_count=0, existing_rows_count=100),
        manifest("added3", added_rows_count=125, existing_rows_count=25),
    ]
    out, end = assign_commit_values(manifests, 3, sequence_number=8, first_row_id=1000)
    assert [m.first_row_id for m in out] == [925, 1000, None, 1125, 1225]
    assert end == 1375  # added-rows = 375
    assert [m.sequence_number for m in out] == [3, 8, 8, 8, 8]
    assert [m.min_sequence_number for m in out] == [3, 8, 8, 8, 8]


def test_v3_requires_first_row_id() -> None:
    with pytest.raises(ValidationError):
        assign_commit_values([manifest("m")], 3, 1, None)


@pytest.mark.parametrize("format_version", [1, 2, 3])
def test_round_trip_and_header(format_version: int) -> None:
    manifests = [
        manifest("s3://b/m0.avro", min_sequence_number=2),
        manifest(
            "s3://b/m1.avro", sequence_number=2, min_sequence_number=1, first_row_id=40, added_snapshot_id=3
        ),
        manifest(
            "s3://b/m2.avro",
            content=ManifestContent.DELETES if format_version > 1 else ManifestContent.DATA,
            partitions=None,
            key_metadata=b"key",
        ),
    ]
    buf = io.BytesIO()
    result = write_manifest_list(
        buf, manifests, format_version, 77, 66, 5, 100 if format_version >= 3 else None
    )
    data = buf.getvalue()
    assert result.length == len(data)
    meta = fastavro.reader(io.BytesIO(data)).metadata
    assert meta["snapshot-id"] == "77"
    assert meta["parent-snapshot-id"] == "66"
    assert meta["format-version"] == str(format_version)
    assert meta.get("sequence-number") == (None if format_version == 1 else "5")
    assert meta.get("first-row-id") == ("100" if format_version == 3 else None)
    got = read_manifest_list(data)
    header = read_manifest_list_header(data)
    assert (header.snapshot_id, header.parent_snapshot_id, header.format_version) == (77, 66, format_version)
    assert [m.manifest_path for m in got] == ["s3://b/m0.avro", "s3://b/m1.avro", "s3://b/m2.avro"]
    assert got[0].partitions == (PartitionFieldSummary(False, False, b"a", b"z"),)
    assert got[2].partitions is None and got[2].key_metadata == b"key"
    assert [m.added_snapshot_id for m in got] == [7, 3, 7]
    if format_version == 1:
        assert all(m.sequence_number == 0 and m.min_sequence_number == 0 for m in got)
        assert all(m.content == ManifestContent.DATA for m in got)
    else:
        assert [(m.sequence_number, m.min_sequence_number) for m in got] == [(5, 2), (2, 1), (5, 5)]
        assert got[2].content == ManifestContent.DELETES
    if format_version == 3:
        assert [m.first_row_id for m in got] == [100, 40, None]
        assert result.added_rows == 10 and result.next_row_id == 110
    else:
        assert all(m.first_row_id is None for m in got)
        assert result.added_rows is None
    if format_version > 1:
        fr = format_version >= 3
        assert got == [
            m.with_changes(format_version=format_version, first_row_id=m.first_row_id if fr else None)
            for m in result.manifests
        ]


def _list_manifests(format_version: int) -> list[ManifestFile]:
    return [
        manifest("s3://b/m0.avro", min_sequence_number=2, partitions=(PartitionFieldSummary(True, None),)),
        manifest("s3://b/m1.avro", sequence_number=2, min_sequence_number=1, first_row_id=40),
        manifest(
            "s3://b/m2.avro",
            content=ManifestContent.DELETES if format_version > 1 else ManifestContent.DATA,
            partitions=None,
            key_metadata=b"key",
            added_files_count=None if format_version == 1 else 1,
        ),
    ]


@pytest.mark.parametrize("format_version", [1, 2, 3])
def test_as_read_is_what_the_reader_decodes(format_version: int) -> None:
    """``as_read`` equals decoding the bytes written, field by field, in every format version."""
    buf = io.BytesIO()
    first_row_id = 100 if format_version >= 3 else None
    manifests = _list_manifests(format_version)
    result = write_manifest_list(buf, manifests, format_version, 77, 66, 5, first_row_id)
    got = read_manifest_list(buf.getvalue())
    assert list(result.as_read) == got
    assert [m.format_version for m in result.as_read] == [format_version] * 3


@pytest.mark.parametrize(("parent_version", "format_version"), [(1, 1), (2, 2), (3, 3), (1, 2), (2, 3)])
def test_as_read_keeps_decoded_manifests_of_the_same_version(
    parent_version: int, format_version: int
) -> None:
    """A child list carrying its parent's manifests (as read) on: those read from a list of the same
    format version are kept as they are; after an upgrade they are decoded again. Either way
    ``as_read`` is what reading the child's bytes gives."""
    buf = io.BytesIO()
    write_manifest_list(
        buf, _list_manifests(parent_version), parent_version, 77, 66, 5, 100 if parent_version >= 3 else None
    )
    parents = read_manifest_list(buf.getvalue())
    if format_version >= 2:
        parents = [m.with_changes(added_files_count=1) if m.added_files_count is None else m for m in parents]
    new = manifest("s3://b/m3.avro", added_snapshot_id=78)
    child = io.BytesIO()
    first_row_id = 200 if format_version >= 3 else None
    result = write_manifest_list(
        child, [new, *parents], format_version, 78, 77, 6, first_row_id, decoded=parents
    )
    assert list(result.as_read) == read_manifest_list(child.getvalue())
    kept = [a is p for a, p in zip(result.as_read[1:], parents, strict=True)]
    assert kept == [p.format_version == format_version for p in parents]


def test_first_snapshot_header_says_null_parent() -> None:
    buf = io.BytesIO()
    write_manifest_list(buf, [], 2, 1, None, 1)
    assert fastavro.reader(io.BytesIO(buf.getvalue())).metadata["parent-snapshot-id"] == "null"
    assert read_manifest_list(buf.getvalue()) == []


def test_v2_requires_counts() -> None:
    with pytest.raises(ValidationError, match="added_files_count"):
        write_manifest_list(io.BytesIO(), [manifest("m", added_files_count=None)], 2, 1, None, 1)


def test_schema_field_ids() -> None:
    buf = io.BytesIO()
    write_manifest_list(buf, [manifest("m")], 3, 1, None, 1, 0)
    schema = json.loads(fastavro.reader(io.BytesIO(buf.getvalue())).metadata["avro.schema"])
    ids = {f["name"]: f["field-id"] for f in schema["fields"]}
    assert ids == {
        "manifest_path": 500,
        "manifest_length": 501,
        "partition_spec_id": 502,
        "content": 517,
        "sequence_number": 515,
        "min_sequence_number": 516,
        "added_snapshot_id": 503,
        "added_files_count": 504,
        "existing_files_count": 505,
        "deleted_files_count": 506,
        "added_rows_count": 512,
        "existing_rows_count": 513,
        "deleted_rows_count": 514,
        "partitions": 507,
        "key_metadata": 519,
        "first_row_id": 520,
    }
    parts = next(f for f in schema["fields"] if f["name"] == "partitions")["type"][1]
    assert parts["element-id"] == 508
    assert [f["field-id"] for f in parts["items"]["fields"]] == [509, 518, 510, 511]


def test_reads_every_acceptance_manifest_list() -> None:
    from tests.support.fixtures import install_acceptance_fixtures

    root = install_acceptance_fixtures()
    lists = [
        p
        for p in sorted(glob.glob(str(root / "*" / "metadata" / "*.avro")))
        if fastavro.reader(open(p, "rb")).writer_schema.get("name") == "manifest_file"  # noqa: SIM115
    ]
    assert len(lists) > 40
    for path in lists:
        got = read_manifest_list(Path(path).read_bytes())
        raw = list(fastavro.reader(open(path, "rb")))  # noqa: SIM115
        assert [m.manifest_path for m in got] == [r["manifest_path"] for r in raw]
        assert [m.added_rows_count for m in got] == [r.get("added_rows_count") for r in raw]
        for m, r in zip(got, raw, strict=True):
            assert m.first_row_id == r.get("first_row_id")
            assert m.sequence_number == r.get("sequence_number", 0)


# -- an independent reader: PyIceberg reads what icefloe writes ----------------------------------


def test_pyiceberg_reads_icefloe_manifest_and_list(tmp_path: Path) -> None:
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.manifest import read_manifest_list as py_read_manifest_list

    schema = Schema(
        NestedField(1, "id", LongType()),
        NestedField(2, "s", StringType()),
        NestedField(3, "d", DateType()),
        NestedField(4, "dec", DecimalType(9, 2)),
    )
    spec = PartitionSpec(
        PartitionField(2, 1000, parse_transform("identity"), "s"),
        PartitionField(3, 1001, parse_transform("day"), "d_day"),
        PartitionField(1, 1002, parse_transform("bucket[4]"), "id_bucket"),
        PartitionField(4, 1003, parse_transform("identity"), "dec"),
        spec_id=1,
    )
    from decimal import Decimal

    files = [
        DataFile(
            f"file://{tmp_path}/data/f{i}.parquet",
            "parquet",
            10 + i,
            100 * (i + 1),
            spec_id=1,
            partition=(f"v{i}", 19000 + i, i % 4, Decimal("1.25") * i),
            value_counts={1: 10 + i},
            null_value_counts={1: 0},
            lower_bounds={1: to_bytes(LongType(), i)},
            upper_bounds={1: to_bytes(LongType(), 100 + i)},
            split_offsets=(4,),
        )
        for i in range(3)
    ]
    entries = [
        ManifestEntry(EntryStatus.ADDED, 5, None, None, files[0]),
        ManifestEntry(EntryStatus.EXISTING, 4, 2, 2, files[1]),
        ManifestEntry(EntryStatus.DELETED, 5, 1, 1, files[2]),
    ]
    mpath = str(tmp_path / "m0.avro")
    with open(mpath, "wb") as fh:
        mf = write_manifest(fh, entries, spec, schema, 2, ManifestContent.DATA, 5, path=f"file://{mpath}")
    lpath = str(tmp_path / "snap.avro")
    with open(lpath, "wb") as fh:
        listed = write_manifest_list(fh, [mf], 2, 5, 4, 3)
    py_io = PyArrowFileIO()
    py_manifests = list(py_read_manifest_list(py_io.new_input(f"file://{lpath}")))
    assert len(py_manifests) == 1
    pm = py_manifests[0]
    ours = listed.manifests[0]
    assert pm.manifest_path == ours.manifest_path
    assert pm.manifest_length == ours.manifest_length
    assert pm.partition_spec_id == 1
    assert (pm.sequence_number, pm.min_sequence_number) == (3, 2)
    assert (pm.added_files_count, pm.existing_files_count, pm.deleted_files_count) == (1, 1, 1)
    assert (pm.added_rows_count, pm.existing_rows_count, pm.deleted_rows_count) == (10, 11, 12)
    assert [p.lower_bound for p in pm.partitions] == [p.lower_bound for p in ours.partitions or ()]
    py_entries = pm.fetch_manifest_entry(py_io, discard_deleted=False)
    assert [int(e.status) for e in py_entries] == [1, 0, 2]
    assert [e.snapshot_id for e in py_entries] == [5, 4, 5]
    assert [e.sequence_number for e in py_entries] == [3, 2, 1]  # ADDED inherits the list's 3
    for e, f in zip(py_entries, files, strict=True):
        df = e.data_file
        assert df.file_path == f.file_path
        assert df.record_count == f.record_count
        assert df.file_size_in_bytes == f.file_size_in_bytes
        assert str(df.file_format.value).lower() == "parquet"
        assert int(df.content) == int(FileContent.DATA)
        assert df.value_counts == f.value_counts
        assert df.lower_bounds == f.lower_bounds
        assert list(df.partition) == list(f.partition)


def test_icefloe_reads_pyiceberg_written_manifest(tmp_path: Path) -> None:
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.manifest import DataFile as PyDataFile
    from pyiceberg.manifest import DataFileContent, FileFormat, ManifestEntryStatus
    from pyiceberg.manifest import ManifestEntry as PyManifestEntry
    from pyiceberg.manifest import write_manifest as py_write_manifest
    from pyiceberg.partitioning import PartitionField as PyPartitionField
    from pyiceberg.partitioning import PartitionSpec as PyPartitionSpec
    from pyiceberg.schema import Schema as PySchema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.typedef import Record
    from pyiceberg.types import IntegerType as PyInt
    from pyiceberg.types import NestedField as PyField

    py_schema = PySchema(PyField(1, "x", PyInt(), required=False))
    py_spec = PyPartitionSpec(PyPartitionField(1, 1000, IdentityTransform(), "x"), spec_id=0)
    df = PyDataFile.from_args(
        content=DataFileContent.DATA,
        file_path="file:///tmp/x.parquet",
        file_format=FileFormat.PARQUET,
        partition=Record(42),
        record_count=3,
        file_size_in_bytes=99,
    )
    path = f"file://{tmp_path}/py.avro"
    with py_write_manifest(2, py_spec, py_schema, PyArrowFileIO().new_output(path), 11, "deflate") as writer:
        writer.add_entry(
            PyManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=11, data_file=df)
        )
    spec = PartitionSpec(PartitionField(1, 1000, parse_transform("identity"), "x"))
    got = read_manifest(Path(path.removeprefix("file://")).read_bytes(), {0: spec})
    assert len(got) == 1
    assert got[0].data_file.partition == (42,)
    assert got[0].data_file.file_path == "file:///tmp/x.parquet"
    assert got[0].snapshot_id == 11 and got[0].sequence_number is None


def _rewritten_list(change: Any) -> bytes:
    """A v2 manifest list written again with ``change(schema, records)`` applied to its schema and
    records (what a damaged or hostile writer could put in a header)."""
    buf = io.BytesIO()
    write_manifest_list(buf, [manifest("s3://b/m0.avro")], 2, 77, 66, 5, None)
    reader = fastavro.reader(io.BytesIO(buf.getvalue()))
    schema, records = reader.writer_schema, list(reader)
    change(schema, records)
    out = io.BytesIO()
    metadata = {k: v for k, v in reader.metadata.items() if k != BLOCK_CRC_KEY}  # blocks change
    fastavro.writer(out, fastavro.parse_schema(schema), records, metadata=metadata)
    return out.getvalue()


def _field(schema: dict, name: str) -> dict:
    return next(f for f in schema["fields"] if f["name"] == name)


def test_a_list_whose_path_answers_the_row_id_field_id_is_corrupt() -> None:
    # a one-bit flip turns manifest_path's field id 500 into 520 (first_row_id): the path would
    # be read as the manifest's first row id and end in arithmetic on a string
    def change(schema: dict, records: list) -> None:
        _field(schema, "manifest_path")["field-id"] = 520

    with pytest.raises(CorruptMetadata, match="'manifest_path' answers both field ids 500 and 520"):
        read_manifest_list(_rewritten_list(change))


def test_a_list_field_of_the_wrong_type_is_corrupt() -> None:
    def change(schema: dict, records: list) -> None:
        _field(schema, "added_rows_count")["type"] = "string"
        for rec in records:
            rec["added_rows_count"] = str(rec["added_rows_count"])

    with pytest.raises(CorruptMetadata, match=r"'added_rows_count' \(id 512\) has type 'string'"):
        read_manifest_list(_rewritten_list(change))


@pytest.mark.parametrize("codec", ["deflate", "null"])
@pytest.mark.parametrize("format_version", [1, 2, 3])
def test_a_list_of_records_encoded_once_is_the_list_fastavro_encodes(format_version: int, codec: str) -> None:
    """Manifests carried from list to list keep their encoded records; the file is the one that
    encoding every record again gives (only the random sync marker differs)."""
    first_row_id = 100 if format_version >= 3 else None
    manifests = _list_manifests(format_version)
    for _ in range(2):  # the second time every record is a kept one
        buf = io.BytesIO()
        result = write_manifest_list(buf, manifests, format_version, 77, 66, 5, first_row_id, codec=codec)
        records = [_record(m, format_version) for m in result.manifests]
        meta = {k: v for k, v in fastavro.reader(io.BytesIO(buf.getvalue())).metadata.items()}
        expected = container_bytes(manifest_list_writer(format_version), records, _list_meta(meta), codec)
        assert _without_sync(buf.getvalue()) == _without_sync(expected)


def test_a_changed_manifest_is_encoded_again_never_taken_from_its_original() -> None:
    original = manifest("s3://b/m1.avro", sequence_number=3, min_sequence_number=3)
    write_manifest_list(io.BytesIO(), [original], 2, 77, 66, 5)
    changed = original.with_changes(added_rows_count=11, manifest_length=1001)
    buf = io.BytesIO()
    write_manifest_list(buf, [changed, original], 2, 78, 77, 6)
    read = read_manifest_list(buf.getvalue())
    assert [(m.added_rows_count, m.manifest_length) for m in read] == [(11, 1001), (10, 1000)]


def _list_meta(meta: dict[str, str]) -> dict[str, str]:
    """The header keys write_manifest_list sets (the writer adds schema, codec and checksum)."""
    keys = ("snapshot-id", "parent-snapshot-id", "format-version", "sequence-number", "first-row-id")
    return {k: meta[k] for k in keys if k in meta}


def _without_sync(data: bytes) -> bytes:
    return data.replace(data[-16:], b"")
