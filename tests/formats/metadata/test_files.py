"""formats/metadata/files.py: naming, exclusive writes, gzip, errors and the metadata-log."""

from __future__ import annotations

import gzip
import uuid
from pathlib import Path

import pytest

from icefloe.errors import CorruptMetadata, NotFound
from icefloe.formats.metadata import files as mf
from icefloe.io.fileio import load_file_io
from icefloe.spec.json_codec import table_metadata_to_json
from icefloe.spec.partitioning import UNPARTITIONED
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import MetadataLogEntry
from icefloe.spec.sort_order import UNSORTED
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.spec.updates import new_table_metadata


@pytest.fixture
def schema() -> Schema:
    """A two-column schema."""
    return Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType(), required=False),
    )


@pytest.fixture
def md(schema: Schema, tmp_path: Path) -> TableMetadata:
    return new_table_metadata(schema, UNPARTITIONED, UNSORTED, str(tmp_path / "tbl"), {}, 2)


def test_parse_metadata_version() -> None:
    assert mf.parse_metadata_version(f"/w/t/metadata/00042-{uuid.uuid4()}.metadata.json") == 42
    assert mf.parse_metadata_version(f"s3://b/t/metadata/123456-{uuid.uuid4()}.gz.metadata.json") == 123456
    assert mf.parse_metadata_version("/w/t/metadata/v7.metadata.json") == 7
    assert mf.parse_metadata_version("/w/t/metadata/v7.gz.metadata.json") == 7
    assert mf.parse_metadata_version("/w/t/metadata/whatever.json") is None
    assert mf.parse_metadata_version(None) is None


def test_write_numbers_versions_and_reads_back(md: TableMetadata, tmp_path: Path) -> None:
    io = load_file_io({}, md.location)
    first = mf.write_table_metadata(io, md.location, md)
    assert first.startswith(f"{md.location}/metadata/00000-") and first.endswith(".metadata.json")
    uuid.UUID(first.rsplit("/", 1)[1][6:42])  # a real UUID in the name
    second = mf.write_table_metadata(io, md.location, md, previous_location=first)
    assert "/metadata/00001-" in second
    tenth = mf.write_table_metadata(io, md.location, md, previous_location=second.replace("00001-", "00009-"))
    assert "/metadata/00010-" in tenth
    unknown = mf.write_table_metadata(io, md.location, md, previous_location="/x/not-versioned.json")
    assert "/metadata/00000-" in unknown
    assert mf.read_table_metadata(io, first) == md
    assert mf.read_table_metadata(io, "file://" + first) == md


def test_write_never_overwrites(md: TableMetadata, monkeypatch: pytest.MonkeyPatch) -> None:
    io = load_file_io({}, md.location)
    fixed = uuid.UUID("00000000-0000-4000-8000-000000000001")
    first = mf.write_table_metadata(io, md.location, md)
    taken = f"{md.location}/metadata/00001-{fixed}.metadata.json"
    Path(taken).write_text("original")
    uuids = iter([fixed, uuid.UUID("00000000-0000-4000-8000-000000000002")])
    monkeypatch.setattr(mf, "uuid4", lambda: next(uuids))
    second = mf.write_table_metadata(io, md.location, md, previous_location=first)
    assert second.endswith("00001-00000000-0000-4000-8000-000000000002.metadata.json")
    assert Path(taken).read_text() == "original"


def test_write_metadata_path_and_gzip(md: TableMetadata, tmp_path: Path) -> None:
    custom = md.with_changes(
        properties={
            "write.metadata.path": str(tmp_path / "elsewhere") + "/",
            "write.metadata.compression-codec": "gzip",
        }
    )
    io = load_file_io({}, custom.location)
    location = mf.write_table_metadata(io, custom.location, custom)
    assert location.startswith(str(tmp_path / "elsewhere") + "/00000-")
    assert location.endswith(".gz.metadata.json")
    raw = Path(location).read_bytes()
    assert raw[:2] == b"\x1f\x8b"
    assert mf.read_table_metadata(io, location) == custom
    assert mf.parse_metadata_version(location) == 0


def test_read_gzip_written_elsewhere(md: TableMetadata, tmp_path: Path) -> None:
    path = tmp_path / "00003-abc.gz.metadata.json"
    path.write_bytes(gzip.compress(table_metadata_to_json(md).encode()))
    assert mf.read_table_metadata(load_file_io({}, str(path)), str(path)) == md


def test_read_errors_name_the_file(tmp_path: Path) -> None:
    io = load_file_io({}, str(tmp_path))
    missing = tmp_path / "00000-missing.metadata.json"
    with pytest.raises(NotFound, match=r"00000-missing\.metadata\.json") as missing_error:
        mf.read_table_metadata(io, str(missing))
    assert missing_error.value.location == str(missing)
    cases = {
        "bad-json": b"{ nope",
        "not-object": b"[1, 2]",
        "bad-gzip": b"\x1f\x8b\x08garbage",
        "bad-utf8": b"\xff\xfe{}",
        "missing-fields": b'{"format-version": 2}',
    }
    for name, data in cases.items():
        path = tmp_path / f"00000-{name}.metadata.json"
        path.write_bytes(data)
        with pytest.raises(CorruptMetadata, match=rf"00000-{name}\.metadata\.json") as caught:
            mf.read_table_metadata(io, str(path))
        assert caught.value.location == str(path)  # the file also as a structured attribute


def test_metadata_log_append_and_trim(md: TableMetadata) -> None:
    previous = md.with_changes(last_updated_ms=1234)
    out = mf.new_metadata_with_log(md, "/m/00000-a.metadata.json", previous)
    assert out.metadata_log == (MetadataLogEntry(1234, "/m/00000-a.metadata.json"),)
    assert mf.new_metadata_with_log(out, "/m/00000-a.metadata.json", previous) is out  # idempotent
    assert mf.new_metadata_with_log(md, None, None) is md

    limited = md.with_changes(
        properties={"write.metadata.previous-versions-max": "3"},
        metadata_log=tuple(MetadataLogEntry(i, f"/m/{i:05d}-x.metadata.json") for i in range(5)),
    )
    trimmed = mf.new_metadata_with_log(
        limited, "/m/00005-x.metadata.json", limited.with_changes(last_updated_ms=5)
    )
    assert [e.timestamp_ms for e in trimmed.metadata_log] == [3, 4, 5]
    assert mf.removed_metadata_files(limited, trimmed) == [f"/m/{i:05d}-x.metadata.json" for i in range(3)]
    default = md.with_changes(
        metadata_log=tuple(MetadataLogEntry(i, f"/m/{i}") for i in range(150)),
    )
    assert len(mf.new_metadata_with_log(default, "/m/new", default).metadata_log) == 100


def test_the_bytes_of_a_written_file_are_kept_for_the_object_written(md: TableMetadata) -> None:
    """A REST server embeds the metadata it has just written in its answers: the bytes kept are the
    file's own, for that very object; equal metadata in another object, a gzip file and files
    written long ago have none."""
    io = load_file_io({}, md.location)
    location = mf.write_table_metadata(io, md.location, md)
    data = mf.written_metadata_bytes(location, md)
    assert data is not None
    assert data == Path(location).read_bytes() == table_metadata_to_json(md).encode("utf-8")
    equal = md.with_changes()
    assert equal == md and mf.written_metadata_bytes(location, equal) is None

    gz = md.with_changes(properties={mf.METADATA_COMPRESSION: "gzip"})
    gz_location = mf.write_table_metadata(io, md.location, gz)
    assert gzip.decompress(Path(gz_location).read_bytes()) == table_metadata_to_json(gz).encode("utf-8")
    assert mf.written_metadata_bytes(gz_location, gz) is None

    for _ in range(4):
        mf.write_table_metadata(io, md.location, md)
    assert mf.written_metadata_bytes(location, md) is None  # four newer files since
