"""The parsed-metadata cache and incremental gzip of formats/metadata/files.py / metadata_gzip.py.

The cache must never change what a read returns: files whose names can be rewritten, replaced
in place (other size or modification time), are parsed again, missing files are NotFound, and a
commit loop parses nothing it wrote itself (UUID-named files: test_write_once_names.py).
Incrementally gzipped files must decompress (with the standard library, streaming zlib and
PyIceberg) to exactly the plain JSON text.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import NotFound
from icefloe.formats.metadata import files as mf
from icefloe.formats.metadata import incremental_gzip as metadata_gzip
from icefloe.io.fileio import load_file_io
from icefloe.spec.json_codec import table_metadata_to_json
from icefloe.spec.partitioning import UNPARTITIONED
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import Snapshot, SnapshotLogEntry
from icefloe.spec.sort_order import UNSORTED
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.spec.updates import new_table_metadata
from tests.support.interop import read_with_pyiceberg

SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "name", StringType(), False))


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    mf.clear_metadata_cache()
    metadata_gzip.clear_gzip_state()
    yield
    mf.set_metadata_cache_limit(mf.DEFAULT_CACHE_BYTES)
    mf.clear_metadata_cache()


@pytest.fixture
def md(tmp_path: Path) -> TableMetadata:
    return new_table_metadata(SCHEMA, UNPARTITIONED, UNSORTED, f"file://{tmp_path}/tbl", {}, 2)


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Locations parsed from bytes (cache misses)."""
    seen: list[str] = []
    original = mf.decode_table_metadata

    def counting(data: bytes, location: str) -> TableMetadata:
        seen.append(location)
        return original(data, location)

    monkeypatch.setattr(mf, "decode_table_metadata", counting)
    return seen


def with_snapshots(md: TableMetadata, count: int, start: int = 0) -> TableMetadata:
    snaps = [
        Snapshot(
            snapshot_id=10_000 + i,
            timestamp_ms=1_700_000_000_000 + i,
            summary={"operation": "append", "added-records": str(i), "total-records": str(i * 7)},
            parent_snapshot_id=10_000 + i - 1 if i else None,
            sequence_number=i + 1,
            manifest_list=f"{md.location}/metadata/snap-{10_000 + i}-1-0b7d7f4c-{i:012d}.avro",
            schema_id=0,
        )
        for i in range(start, start + count)
    ]
    last = snaps[-1]
    return md.with_changes(
        snapshots=(*md.snapshots, *snaps),
        snapshot_log=(*md.snapshot_log, *(SnapshotLogEntry(s.timestamp_ms, s.snapshot_id) for s in snaps)),
        current_snapshot_id=last.snapshot_id,
        last_sequence_number=last.sequence_number,
        refs={},
    )


def test_written_and_read_files_are_not_parsed_again(md: TableMetadata, parses: list[str]) -> None:
    io = load_file_io({}, md.location)
    location = mf.write_table_metadata(io, md.location, md)
    assert mf.read_table_metadata(io, location) is md
    assert parses == []
    mf.clear_metadata_cache()
    first = mf.read_table_metadata(io, location)
    assert first == md and parses == [location]
    assert mf.read_table_metadata(io, location) is first
    assert parses == [location]


def test_a_file_replaced_in_place_is_parsed_again(md: TableMetadata, parses: list[str]) -> None:
    io = load_file_io({}, md.location)
    written = Path(mf.write_table_metadata(io, md.location, md).removeprefix("file://"))
    path = written.with_name("v1.metadata.json")  # a name that can be written again (Hadoop's)
    written.rename(path)
    location = f"file://{path}"
    assert mf.read_table_metadata(io, location) == md
    other = md.with_changes(properties={"k": "v"})
    path.write_text(table_metadata_to_json(other))  # other size
    assert mf.read_table_metadata(io, location) == other
    # same size, other content: recognised by the modification time
    same_size = md.with_changes(properties={"k": "w"})
    stat = path.stat()
    path.write_text(table_metadata_to_json(same_size))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert mf.read_table_metadata(io, location) == same_size
    assert len(parses) == 3
    path.unlink()
    with pytest.raises(NotFound, match=path.name):
        mf.read_table_metadata(io, location)


def test_the_cache_is_bounded_and_can_be_turned_off(md: TableMetadata, parses: list[str]) -> None:
    io = load_file_io({}, md.location)
    locations = [mf.write_table_metadata(io, md.location, md) for _ in range(4)]
    size = Path(locations[0].removeprefix("file://")).stat().st_size
    assert mf.metadata_cache_size() == 4
    mf.set_metadata_cache_limit(2 * size)
    mf.write_table_metadata(io, md.location, md)
    assert mf.metadata_cache_size() == 2
    mf.set_metadata_cache_limit(size // 2)  # smaller than one file: the newest file is still kept
    newest = mf.write_table_metadata(io, md.location, md)
    assert mf.metadata_cache_size() == 1
    assert mf.read_table_metadata(io, newest) is md
    mf.set_metadata_cache_limit(0)
    assert mf.metadata_cache_size() == 0
    assert mf.read_table_metadata(io, newest) == md
    assert mf.read_table_metadata(io, newest) == md
    assert parses == [newest, newest]
    assert mf.metadata_cache_size() == 0


def test_commits_parse_no_metadata_they_wrote(tmp_path: Path, parses: list[str]) -> None:
    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA, properties={"format-version": "4"})
    for i in range(5):
        table.append(pa.table({"id": pa.array([i], pa.int64()), "name": [f"n{i}"]}))
    assert parses == []
    # another process's view (empty cache) reads the same state
    mf.clear_metadata_cache()
    fresh = catalog.load_table("db.t")
    assert fresh.metadata == table.metadata
    assert sorted(fresh.to_arrow().column("id").to_pylist()) == [0, 1, 2, 3, 4]
    assert parses == [table.metadata_location]


def test_incremental_gzip_decompresses_to_the_plain_text(md: TableMetadata) -> None:
    gz = md.with_changes(properties={mf.METADATA_COMPRESSION: "gzip"})
    gz = with_snapshots(gz, 300)
    one_shot_sizes = []
    for step in range(40):
        gz = with_snapshots(gz, 1 + step % 3, start=300 + 3 * step)
        if step == 25:  # expire the oldest snapshots: no longer an extension
            gz = gz.with_changes(snapshots=gz.snapshots[50:], snapshot_log=gz.snapshot_log[50:])
        if step == 30:  # expire one and add more: longer than before, and still no extension
            gz = gz.with_changes(snapshots=gz.snapshots[1:], snapshot_log=gz.snapshot_log[1:])
            gz = with_snapshots(gz, 5, start=1_000 + step)
        data = mf.encode_table_metadata(gz)
        text = table_metadata_to_json(gz).encode("utf-8")
        assert gzip.decompress(data) == text
        stream = zlib.decompressobj(wbits=31)
        assert stream.decompress(data) == text and stream.eof and stream.unused_data == b""
        one_shot_sizes.append((len(data), len(gzip.compress(text, compresslevel=6))))
    # appended segments compress a little worse; a rebuild bounds the loss
    assert all(ours <= 1.3 * theirs for ours, theirs in one_shot_sizes)


def test_gzip_tables_commit_and_read_everywhere(tmp_path: Path, parses: list[str]) -> None:
    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t", SCHEMA, properties={"format-version": "2", mf.METADATA_COMPRESSION: "gzip"}
    )
    # enough snapshots that the snapshot array is compressed incrementally
    for i in range(60):
        table.append(pa.table({"id": pa.array([i], pa.int64()), "name": [f"n{i}"]}))
    location = table.metadata_location
    assert location.endswith(".gz.metadata.json")
    raw = Path(location.removeprefix("file://")).read_bytes()
    assert raw[:2] == b"\x1f\x8b"
    assert gzip.decompress(raw) == table_metadata_to_json(table.metadata).encode()
    assert parses == []
    mf.clear_metadata_cache()
    assert catalog.load_table("db.t").metadata == table.metadata
    rows = read_with_pyiceberg(location)
    assert sorted(rows.column("id").to_pylist()) == list(range(60))


def test_the_least_recently_used_file_leaves_the_cache_first(md: TableMetadata, parses: list[str]) -> None:
    io = load_file_io({}, md.location)
    a, b, c = (mf.write_table_metadata(io, md.location, md) for _ in range(3))
    mf.set_metadata_cache_limit(3 * Path(a.removeprefix("file://")).stat().st_size)
    assert mf.read_table_metadata(io, a) is md  # a hit: a is now the most recently used
    d = mf.write_table_metadata(io, md.location, md)  # b, the least recently used, leaves
    assert mf.read_table_metadata(io, b) == md  # parsed again, and c leaves
    assert [mf.read_table_metadata(io, loc) is md for loc in (a, d)] == [True, True]
    assert parses == [b]
    assert mf.read_table_metadata(io, c) == md
    assert parses == [b, c]


def test_the_bytes_of_the_last_four_plain_files_written_are_kept(md: TableMetadata) -> None:
    """Asking for a file's bytes does not keep it longer: the fifth file written evicts the first."""
    io = load_file_io({}, md.location)
    locations = [mf.write_table_metadata(io, md.location, md) for _ in range(4)]
    text = table_metadata_to_json(md).encode("utf-8")
    assert mf.written_metadata_bytes(locations[0], md) == text
    assert mf.written_metadata_bytes(locations[0], md.with_changes(properties={})) is None  # another object
    locations.append(mf.write_table_metadata(io, md.location, md))
    assert [mf.written_metadata_bytes(loc, md) == text for loc in locations] == [
        False,
        True,
        True,
        True,
        True,
    ]


def test_gzip_state_is_kept_for_the_last_eight_tables_written(md: TableMetadata) -> None:
    """A table's next file extends its kept compressor while fewer than eight other tables were
    written since; after eight, it is compressed afresh (the same text, other bytes)."""
    gz = with_snapshots(md.with_changes(properties={mf.METADATA_COMPRESSION: "gzip"}), 300)
    grown = with_snapshots(gz, 1, start=300)
    others = [gz.with_changes(table_uuid=f"00000000-0000-0000-0000-00000000000{i}") for i in range(8)]
    metadata_gzip.clear_gzip_state()
    fresh = mf.encode_table_metadata(grown)

    def after(written_between: int) -> bytes:
        metadata_gzip.clear_gzip_state()
        mf.encode_table_metadata(gz)
        for other in others[:written_between]:
            mf.encode_table_metadata(other)
        return mf.encode_table_metadata(grown)

    extended = after(7)
    assert extended != fresh and gzip.decompress(extended) == gzip.decompress(fresh)
    assert after(0) == extended
    assert after(8) == fresh
