"""The Arrow (DataFusion) manifest decoder against the fastavro reader it must agree with."""

from __future__ import annotations

import decimal
import io
import math
import uuid
from pathlib import Path
from typing import Any

import fastavro
import numpy as np
import pytest

from icefloe.errors import CorruptMetadata
from icefloe.formats.avro import columnar as ac
from icefloe.formats.avro import schemas as avs
from icefloe.formats.avro.manifest import manifest_metadata, read_manifest_with_header, write_manifest
from icefloe.io.fileio import FileIO
from icefloe.spec.content import DataFile, EntryStatus, FileContent, ManifestContent, ManifestEntry
from icefloe.spec.partitioning import UNPARTITIONED, PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import IdentityTransform, VoidTransform
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
    TimestamptzType,
    TimeType,
    UUIDType,
)
from tests.support.canonical import canonical

pytestmark = pytest.mark.skipif(not ac.decoder_available(), reason="DataFusion is not installed")

TYPES = [
    ("i", IntegerType()),
    ("l", LongType()),
    ("d", DateType()),
    ("ts", TimestampType()),
    ("tstz", TimestamptzType()),
    ("tsn", TimestampNanoType()),
    ("t", TimeType()),
    ("dec", DecimalType(9, 2)),
    ("big", DecimalType(30, 3)),
    ("u", UUIDType()),
    ("fx", FixedType(3)),
    ("b", BinaryType()),
    ("s", StringType()),
    ("bo", BooleanType()),
    ("f", FloatType()),
    ("db", DoubleType()),
]
SCHEMA = Schema(*[NestedField(i + 1, n, t, False) for i, (n, t) in enumerate(TYPES)], schema_id=0)
SPEC = PartitionSpec(
    *[PartitionField(i + 1, 1000 + i, IdentityTransform(), n) for i, (n, _) in enumerate(TYPES)],
    PartitionField(13, 1100, VoidTransform(), "s_void"),
    spec_id=3,
)
VALUES: tuple[Any, ...] = (
    -7,
    2**40,
    19_000,
    1_700_000_000_123_456,
    -1,
    1_700_000_000_000_000_123,
    3_600_000_001,
    decimal.Decimal("-12.34"),
    decimal.Decimal("-123456789012345678901234567.891"),
    uuid.UUID("12345678-1234-5678-1234-567812345678"),
    b"\x00ab",
    b"",
    "héllo",
    False,
    float("nan"),
    -0.0,
    None,
)


def _entries(n: int, fv: int, partition: tuple[Any, ...], content: FileContent = FileContent.DATA) -> list:
    out = []
    for i in range(n):
        status = [EntryStatus.ADDED, EntryStatus.EXISTING, EntryStatus.DELETED][i % 3]
        explicit = status != EntryStatus.ADDED and fv > 1
        df = DataFile(
            file_path=f"s3://bucket/data/{i}.parquet",
            file_format="parquet" if i % 2 else "avro",
            record_count=100 + i,
            file_size_in_bytes=1000 + i,
            content=content,
            spec_id=SPEC.spec_id,
            partition=partition if i % 4 else tuple(None for _ in partition),
            column_sizes={1: 10, 2: 20} if i % 5 else None,
            value_counts={1: 100 + i},
            null_value_counts={} if i % 7 == 0 else {1: 0, 3: i},
            nan_value_counts={15: 1} if i % 2 else None,
            lower_bounds={1: b"\x01\x00\x00\x00", 13: b"a"} if i % 3 else None,
            upper_bounds={1: b"\x09\x00\x00\x00", 13: b"zz"},
            key_metadata=b"\x00\x01" if i == 1 else None,
            split_offsets=(4, 100) if i % 2 else None,
            equality_ids=(1, 2) if content == FileContent.EQUALITY_DELETES else None,
            sort_order_id=0 if i % 2 else None,
            first_row_id=(1000 * i if i % 2 else None) if fv >= 3 and content == FileContent.DATA else None,
            referenced_data_file="s3://bucket/data/x.parquet"
            if content == FileContent.POSITION_DELETES
            else None,
            content_offset=4 if fv >= 3 and content == FileContent.POSITION_DELETES else None,
            content_size_in_bytes=40 if fv >= 3 and content == FileContent.POSITION_DELETES else None,
        )
        out.append(
            ManifestEntry(
                status,
                7 if explicit else None,
                3 if explicit else None,
                3 if explicit else None,
                df,
            )
        )
    return out


def _write(
    tmp_path: Path, name: str, entries: list, spec: PartitionSpec, fv: int, content: ManifestContent
) -> str:
    path = str(tmp_path / name)
    with open(path, "wb") as f:
        write_manifest(f, entries, spec, SCHEMA, fv, content, 99)
    return path


def _assert_same(
    path: str, specs: dict[int, PartitionSpec], spec_id: int | None = None
) -> ac.ManifestColumns:
    header, expected = read_manifest_with_header(FileIO().new_input(path).read(), specs, spec_id=spec_id)
    cols = ac.read_manifest_columns(FileIO(), path, specs, spec_id=spec_id)
    got = cols.entries()
    assert cols.header == header
    assert len(got) == len(expected) == cols.num_rows
    for g, e in zip(got, expected, strict=True):
        assert canonical(g) == canonical(e)
    return cols


@pytest.mark.parametrize("fv", [1, 2, 3])
def test_every_partition_type_and_metric_decodes_like_fastavro(tmp_path: Path, fv: int) -> None:
    path = _write(tmp_path, f"m{fv}.avro", _entries(13, fv, VALUES), SPEC, fv, ManifestContent.DATA)
    cols = _assert_same(path, {SPEC.spec_id: SPEC})
    got = cols.entries()
    # spot checks against the values written, independent of the fastavro reader
    p = got[1].data_file.partition
    assert p[0] == -7 and p[2] == 19_000 and p[5] == 1_700_000_000_000_000_123
    assert p[7] == decimal.Decimal("-12.34") and isinstance(p[9], uuid.UUID) and p[10] == b"\x00ab"
    assert math.isnan(p[14]) and math.copysign(1.0, p[15]) == -1.0 and p[16] is None
    assert got[0].data_file.partition == tuple(None for _ in VALUES)
    assert got[0].data_file.null_value_counts == {}
    assert got[2].data_file.lower_bounds == {1: b"\x01\x00\x00\x00", 13: b"a"}
    assert got[1].data_file.split_offsets == (4, 100) and got[1].data_file.file_format == "parquet"
    assert [e.status for e in got[:3]] == [EntryStatus.ADDED, EntryStatus.EXISTING, EntryStatus.DELETED]


@pytest.mark.parametrize("content", [FileContent.POSITION_DELETES, FileContent.EQUALITY_DELETES])
def test_delete_manifests_decode_like_fastavro(tmp_path: Path, content: FileContent) -> None:
    entries = _entries(6, 3, VALUES, content)
    path = _write(tmp_path, "d.avro", entries, SPEC, 3, ManifestContent.DELETES)
    cols = _assert_same(path, {SPEC.spec_id: SPEC})
    assert {e.data_file.content for e in cols.entries()} == {content}


def test_unpartitioned_manifest_has_an_empty_partition_record(tmp_path: Path) -> None:
    # DataFusion cannot build a struct without fields: the decoder drops the (zero-byte) field
    entries = [
        ManifestEntry(EntryStatus.ADDED, None, None, None, DataFile(f"/d/{i}.parquet", "parquet", i, 10))
        for i in range(5)
    ]
    path = _write(tmp_path, "u.avro", entries, UNPARTITIONED, 2, ManifestContent.DATA)
    cols = _assert_same(path, {0: UNPARTITIONED})
    assert [e.data_file.partition for e in cols.entries()] == [()] * 5
    assert [e.data_file.record_count for e in cols.entries()] == [0, 1, 2, 3, 4]


def test_partition_tuple_follows_the_spec_not_the_file_order(tmp_path: Path) -> None:
    written = PartitionSpec(
        PartitionField(1, 1000, IdentityTransform(), "i"), PartitionField(13, 1001, IdentityTransform(), "s")
    )
    entries = [
        ManifestEntry(
            EntryStatus.ADDED, None, None, None, DataFile("/d/a", "parquet", 1, 1, partition=(5, "x"))
        )
    ]
    path = _write(tmp_path, "o.avro", entries, written, 2, ManifestContent.DATA)
    reordered = PartitionSpec(
        PartitionField(13, 1001, IdentityTransform(), "s"),
        PartitionField(2, 1005, IdentityTransform(), "l"),  # not stored in this file: None
        PartitionField(1, 1000, IdentityTransform(), "i"),
    )
    cols = _assert_same(path, {0: reordered})
    assert cols.entries()[0].data_file.partition == ("x", None, 5)


def test_rows_subset_and_partition_values(tmp_path: Path) -> None:
    path = _write(tmp_path, "r.avro", _entries(9, 2, VALUES), SPEC, 2, ManifestContent.DATA)
    cols = ac.read_manifest_columns(FileIO(), path, {SPEC.spec_id: SPEC})
    rows = np.array([8, 1, 4])
    everything = cols.entries()
    assert [canonical(e) for e in cols.entries(rows)] == [canonical(everything[i]) for i in rows]
    assert [canonical(p) for p in cols.partition_values(rows)] == [
        canonical(everything[i].data_file.partition) for i in rows
    ]


def _renamed_schema(partition_fields: list[dict]) -> dict:
    """A manifest schema whose field names differ from Iceberg's (only the field ids are standard)."""
    long_map = {
        "type": "array",
        "logicalType": "map",
        "items": {
            "type": "record",
            "name": "kv_counts",
            "fields": [
                {"name": "key", "type": "int", "field-id": 119},
                {"name": "value", "type": "long", "field-id": 120},
            ],
        },
    }
    return {
        "type": "record",
        "name": "manifest_entry",
        "fields": [
            {"name": "st", "type": "int", "field-id": 0},
            {"name": "snap", "type": ["null", "long"], "default": None, "field-id": 1},
            {
                "name": "file",
                "field-id": 2,
                "type": {
                    "type": "record",
                    "name": "r2",
                    "fields": [
                        {"name": "path", "type": "string", "field-id": 100},
                        {"name": "fmt", "type": "string", "field-id": 101},
                        {
                            "name": "part",
                            "field-id": 102,
                            "type": {"type": "record", "name": "r102", "fields": partition_fields},
                        },
                        {"name": "rows", "type": "long", "field-id": 103},
                        {"name": "size", "type": "long", "field-id": 104},
                        {"name": "vc", "type": ["null", long_map], "default": None, "field-id": 109},
                    ],
                },
            },
        ],
    }


def _write_raw(path: Path, schema: dict, records: list[dict], meta: dict[str, str]) -> str:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, metadata=meta)
    path.write_bytes(buf.getvalue())
    return str(path)


def test_fields_are_found_by_id_whatever_their_names(tmp_path: Path) -> None:
    spec = PartitionSpec(PartitionField(1, 1000, IdentityTransform(), "i"))
    schema = _renamed_schema([{"name": "weird", "type": ["null", "int"], "default": None, "field-id": 1000}])
    records = [
        {
            "st": 1,
            "snap": None,
            "file": {
                "path": f"/d/{i}",
                "fmt": "ORC",
                "part": {"weird": i},
                "rows": i,
                "size": 9,
                "vc": [{"key": 1, "value": i}],
            },
        }
        for i in range(3)
    ]
    path = _write_raw(tmp_path / "n.avro", schema, records, {"format-version": "1", "partition-spec-id": "0"})
    cols = _assert_same(path, {0: spec})
    first = cols.entries()[2]
    assert first.data_file.partition == (2,) and first.data_file.file_format == "orc"
    assert first.data_file.value_counts == {1: 2} and first.data_file.content == FileContent.DATA
    assert cols.header.format_version == 1 and cols.spec_id == 0


def test_avro_map_of_metrics_is_left_to_fastavro(tmp_path: Path) -> None:
    schema = _renamed_schema([])
    file_fields = schema["fields"][2]["type"]["fields"]
    file_fields[-1] = {
        "name": "vc",
        "type": ["null", {"type": "map", "values": "long"}],
        "default": None,
        "field-id": 109,
    }
    records = [
        {
            "st": 1,
            "snap": 5,
            "file": {"path": "/d/a", "fmt": "PARQUET", "part": {}, "rows": 1, "size": 9, "vc": {"1": 4}},
        }
    ]
    path = _write_raw(tmp_path / "map.avro", schema, records, {"format-version": "2"})
    with pytest.raises(ac.ColumnarUnsupported, match="field 109"):
        ac.read_manifest_columns(FileIO(), path, {0: UNPARTITIONED})


def test_not_an_avro_file_is_unsupported_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "junk.avro"
    path.write_bytes(b"Obj\x01" + b"\xff" * 40)
    with pytest.raises((ac.ColumnarUnsupported, CorruptMetadata)):
        ac.read_manifest_columns(FileIO(), str(path), {})
    path.write_bytes(b"PAR1 not avro")
    with pytest.raises(CorruptMetadata, match=r"junk\.avro"):
        ac.read_manifest_columns(FileIO(), str(path), {})


def test_a_truncated_manifest_is_never_decoded_partially(tmp_path: Path) -> None:
    path = _write(tmp_path, "t.avro", _entries(40, 2, VALUES), SPEC, 2, ManifestContent.DATA)
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[: len(data) - 100])
    with pytest.raises(ac.ColumnarUnsupported, match=r"t\.avro"):
        ac.read_manifest_columns(FileIO(), path, {SPEC.spec_id: SPEC})


def test_odd_local_paths_are_decoded_from_a_private_copy(tmp_path: Path) -> None:
    # glob characters, spaces and another extension must not reach DataFusion's path parser
    odd = tmp_path / "a [b] *c%20"
    odd.mkdir()
    path = _write(odd, "m 1.manifest", _entries(5, 2, VALUES), SPEC, 2, ManifestContent.DATA)
    _assert_same(path, {SPEC.spec_id: SPEC})
    _assert_same("file://" + path, {SPEC.spec_id: SPEC})


class _MemoryIO:
    """A FileIO serving one non-local location from memory (as S3 would)."""

    def __init__(self, location: str, data: bytes) -> None:
        self.location, self.data = location, data

    def new_input(self, location: str) -> Any:
        assert location == self.location
        return io.BytesIO(self.data)


def test_remote_manifests_are_decoded_from_their_bytes(tmp_path: Path) -> None:
    path = _write(tmp_path, "m.avro", _entries(4, 2, VALUES), SPEC, 2, ManifestContent.DATA)
    data = Path(path).read_bytes()
    cols = ac.read_manifest_columns(_MemoryIO("s3://b/m.avro", data), "s3://b/m.avro", {SPEC.spec_id: SPEC})
    _, expected = read_manifest_with_header(data, {SPEC.spec_id: SPEC})
    assert [canonical(e) for e in cols.entries()] == [canonical(e) for e in expected]
    assert cols.location == "s3://b/m.avro"


def test_missing_decoder_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> Any:
        raise ac.ColumnarUnsupported("DataFusion is not installed")

    monkeypatch.setattr(ac, "_session", missing)
    assert not ac.decoder_available()


def test_header_metadata_is_kept(tmp_path: Path) -> None:
    path = _write(tmp_path, "h.avro", _entries(2, 3, VALUES), SPEC, 3, ManifestContent.DATA)
    cols = ac.read_manifest_columns(FileIO(), path, {SPEC.spec_id: SPEC})
    assert cols.header.metadata == manifest_metadata(SPEC, SCHEMA, 3, ManifestContent.DATA) | {
        k: v for k, v in cols.header.metadata.items() if k.startswith("avro.")
    }
    assert avs.int_or_none(cols.header.metadata["partition-spec-id"]) == SPEC.spec_id == cols.spec_id
