"""FileIO over the local file system: atomic exclusive create, listing, deleting, path spellings."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from icefloe.errors import AlreadyExists, NotFound
from icefloe.io.fileio import FileIO, load_file_io, local_path, normalize_location, s3_options


@pytest.fixture
def fio() -> FileIO:
    return load_file_io({})


def test_path_spellings_name_the_same_file(tmp_path: Path, fio: FileIO) -> None:
    target = tmp_path / "a" / "b.txt"
    fio.new_output(f"file:{target}").write_bytes(b"hello")
    for spelling in (str(target), f"file:{target}", f"file://{target}", f"file://localhost{target}"):
        assert fio.exists(spelling)
        assert fio.new_input(spelling).read() == b"hello"
        assert fio.new_input(spelling).length == 5
        assert normalize_location(spelling) == f"file://{target}"
    assert local_path(f"file:{target}") == str(target)


def test_normalize_location_object_stores() -> None:
    assert normalize_location("s3a://bucket/t/data/x.parquet") == "s3://bucket/t/data/x.parquet"
    assert normalize_location("s3n://bucket/t/") == "s3://bucket/t"
    assert normalize_location("s3://bucket/t") == normalize_location("s3://bucket/t/")
    assert normalize_location("file:///tmp/t//data/./x") == "file:///tmp/t/data/x"


def test_create_is_exclusive_and_atomic(tmp_path: Path, fio: FileIO) -> None:
    loc = str(tmp_path / "deep" / "dir" / "v1.metadata.json")
    out = fio.new_output(loc)
    with out.create() as stream:
        stream.write(b"first")
        # nothing visible under the final name until the stream closes
        assert not os.path.exists(loc)
    assert fio.new_input(loc).read() == b"first"
    with pytest.raises(AlreadyExists, match=r"v1\.metadata\.json"):
        out.create()
    with pytest.raises(AlreadyExists):
        out.write_bytes(b"second")
    out.write_bytes(b"second", overwrite=True)
    assert fio.new_input(loc).read() == b"second"
    assert sorted(os.listdir(tmp_path / "deep" / "dir")) == ["v1.metadata.json"]


def test_create_race_loser_gets_already_exists(tmp_path: Path, fio: FileIO) -> None:
    loc = str(tmp_path / "v2.metadata.json")
    a = fio.new_output(loc).create()
    b = fio.new_output(loc).create()
    a.write(b"a")
    b.write(b"b")
    a.close()
    with pytest.raises(AlreadyExists):
        b.close()
    assert fio.new_input(loc).read() == b"a"
    assert os.listdir(tmp_path) == ["v2.metadata.json"]


def test_failed_write_leaves_nothing(tmp_path: Path, fio: FileIO) -> None:
    loc = str(tmp_path / "data.parquet")
    with pytest.raises(RuntimeError), fio.new_output(loc).create() as stream:
        stream.write(b"partial")
        raise RuntimeError("boom")
    assert os.listdir(tmp_path) == []


def test_unclosed_stream_is_never_published(tmp_path: Path, fio: FileIO) -> None:
    loc = str(tmp_path / "x.bin")
    stream = fio.new_output(loc).create()
    stream.write(b"partial")
    del stream
    assert os.listdir(tmp_path) == []


def test_missing_files_raise_not_found(tmp_path: Path, fio: FileIO) -> None:
    loc = f"file://{tmp_path}/nope.avro"
    with pytest.raises(NotFound, match=r"nope\.avro"):
        fio.new_input(loc).read()
    with pytest.raises(NotFound, match=r"nope\.avro"):
        _ = fio.new_input(loc).length
    with pytest.raises(NotFound, match=r"nope\.avro"):
        fio.delete(loc)
    fio.delete(loc, missing_ok=True)
    assert not fio.exists(loc)


def test_list_prefix_and_delete(tmp_path: Path, fio: FileIO) -> None:
    base = f"file:{tmp_path}/tbl"
    for rel in ("data/a.parquet", "data/p=1/b.parquet", "metadata/v1.metadata.json"):
        fio.new_output(f"{base}/{rel}").write_bytes(b"x")
    assert fio.list_prefix(base) == [
        f"{base}/data/a.parquet",
        f"{base}/data/p=1/b.parquet",
        f"{base}/metadata/v1.metadata.json",
    ]
    assert fio.list_prefix(f"{tmp_path}/tbl/data/") == [
        f"{tmp_path}/tbl/data/a.parquet",
        f"{tmp_path}/tbl/data/p=1/b.parquet",
    ]
    assert fio.list_prefix(f"{tmp_path}/missing") == []
    fio.delete(f"file://{tmp_path}/tbl/data/a.parquet")
    assert fio.list_prefix(f"{base}/data") == [f"{base}/data/p=1/b.parquet"]


def test_list_files_reports_size_and_modification_time(tmp_path: Path, fio: FileIO) -> None:
    base = f"file:{tmp_path}/tbl"
    fio.new_output(f"{base}/data/a.parquet").write_bytes(b"12345")
    fio.new_output(f"{base}/data/b.parquet").write_bytes(b"1")
    os.utime(tmp_path / "tbl" / "data" / "b.parquet", (1_000_000, 1_000_000))
    listed = fio.list_files(base)
    assert [(f.location, f.size) for f in listed] == [
        (f"{base}/data/a.parquet", 5),
        (f"{base}/data/b.parquet", 1),
    ]
    assert listed[1].modified_ms == 1_000_000_000
    assert listed[0].modified_ms is not None and abs(listed[0].modified_ms / 1000 - time.time()) < 600


def test_delete_many_counts_missing_files_as_deleted_and_reports_failures(
    tmp_path: Path, fio: FileIO
) -> None:
    base = f"file:{tmp_path}/tbl"
    for name in ("a", "b"):
        fio.new_output(f"{base}/{name}.parquet").write_bytes(b"x")
    (tmp_path / "tbl" / "dir.parquet").mkdir()  # not a file: deleting it fails
    failed = fio.delete_many(
        [
            f"{base}/a.parquet",
            f"{base}/b.parquet",
            f"{base}/gone.parquet",
            f"{base}/dir.parquet",
            f"{base}/a.parquet",
        ]
    )
    assert failed == [f"{base}/dir.parquet"]
    assert fio.list_prefix(base) == []
    assert fio.delete_many([]) == []


def test_open_is_seekable(tmp_path: Path, fio: FileIO) -> None:
    loc = str(tmp_path / "blob")
    fio.new_output(loc).write_bytes(bytes(range(100)))
    with fio.new_input(loc).open() as stream:
        stream.seek(40)
        assert stream.read(3) == bytes([40, 41, 42])


def test_filesystem_and_path(tmp_path: Path, fio: FileIO) -> None:
    fs, path = fio.filesystem_and_path(f"file:{tmp_path}/x")
    assert isinstance(fs, pafs.LocalFileSystem)
    assert path == f"{tmp_path}/x"


def test_s3_options_from_properties() -> None:
    opts = s3_options(
        {
            "s3.endpoint": "http://localhost:9000",
            "s3.access-key-id": "admin",
            "s3.secret-access-key": "password",
            "s3.region": "us-east-1",
            "s3.path-style-access": "true",
        }
    )
    retry = opts.pop("retry_strategy")
    assert isinstance(retry, pafs.AwsStandardS3RetryStrategy)
    assert opts == {
        "endpoint_override": "localhost:9000",
        "scheme": "http",
        "access_key": "admin",
        "secret_key": "password",
        "region": "us-east-1",
        "force_virtual_addressing": False,
        "allow_delayed_open": True,
    }
    fio = FileIO({"s3.endpoint": "http://localhost:9000", "s3.region": "us-east-1"})
    fs, path = fio.filesystem_and_path("s3a://bucket/t/data/x.parquet")
    assert isinstance(fs, pafs.S3FileSystem)
    assert path == "bucket/t/data/x.parquet"
