"""Metadata files named with a UUID are written once: a cached parse of one is served with no request.

Which names qualify is pinned by a table of names. On a real S3-compatible server (moto, requests
counted by key) a second load of a table sends nothing for its metadata file, while a file whose
name can be rewritten (``v<N>.metadata.json``) still gets its HEAD and is parsed again when it
changed. Where existence is the point (register, opening a static table) a deleted cached file is
still ``NotFound``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog import load_catalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import NotFound
from icefloe.formats.metadata import files as mf
from icefloe.io.fileio import FileIO
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.table.static import open_static_table
from tests.support.s3server import S3Server

SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "name", StringType(), False))
UUID = "4f1c2a9e-8b3d-4e5f-a6b7-c8d9e0f1a2b3"


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    mf.clear_metadata_cache()
    yield
    mf.set_metadata_cache_limit(mf.DEFAULT_CACHE_BYTES)
    mf.clear_metadata_cache()


@pytest.mark.parametrize(
    ("name", "write_once"),
    [
        # what icefloe, Iceberg Java and PyIceberg write
        (f"00001-{UUID}.metadata.json", True),
        (f"00001-{UUID}.gz.metadata.json", True),
        (f"00001-{UUID}.metadata.json.gz", True),
        (f"123456-{UUID}.metadata.json", True),
        (f"{UUID}.metadata.json", True),
        (f"00001-{UUID.upper()}.metadata.json", True),
        # the Hadoop catalog's reused names, and its pointer
        ("v1.metadata.json", False),
        ("v12.gz.metadata.json", False),
        ("version-hint.text", False),
        # names a user or another tool chose
        ("metadata.json", False),
        ("custom.metadata.json", False),
        ("00001-custom.metadata.json", False),
        ("00001-4f1c2a9e.metadata.json", False),  # a UUID's first group only
        (f"00001-{UUID}x.metadata.json", False),
        (f"00001-{UUID.replace('-', '')}.metadata.json", False),  # no dashes: not the UUID form
        (f"v1-{UUID}.metadata.json", False),
        (f"00001-{UUID}.metadata.json.bak", False),
        (f"00001-{UUID}.json", False),
        (f"00001-{UUID}.gz.metadata.json.gz", False),
        (f"copy-of-00001-{UUID}.metadata.json", False),
    ],
)
def test_which_names_are_written_once(name: str, write_once: bool) -> None:
    assert mf.is_write_once_name(f"s3://bucket/wh/db/t/metadata/{name}") is write_once
    assert mf.is_write_once_name(f"/wh/db/t/metadata/{name}") is write_once
    assert mf.is_write_once_name(name) is write_once


def test_a_directory_named_like_a_uuid_file_does_not_count() -> None:
    assert not mf.is_write_once_name(f"/wh/00001-{UUID}.metadata.json/v1.metadata.json")


# -- local files --------------------------------------------------------------------------------


def _sql_catalog(tmp_path: Path, **properties: str) -> SqlCatalog:
    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"), **properties)
    catalog.create_namespace("db")
    return catalog


def test_a_cached_write_once_file_is_trusted_and_existence_checks_still_ask(tmp_path: Path) -> None:
    catalog = _sql_catalog(tmp_path)
    table = catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    first = table.metadata_location
    table.append(pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]}))
    io = table.io
    cached = mf.read_table_metadata(io, first)
    Path(first.removeprefix("file://")).unlink()
    # nothing asks the file system: the name says the content cannot have changed
    assert mf.read_table_metadata(io, first) is cached
    with pytest.raises(NotFound, match="does not exist"):
        mf.read_table_metadata(io, first, confirm_exists=True)
    with pytest.raises(NotFound):
        catalog.register_table("db.again", first)
    assert not catalog.table_exists("db.again")
    with pytest.raises(NotFound):
        open_static_table(first)


def test_a_hadoop_table_created_again_under_the_same_name_is_read_afresh(tmp_path: Path) -> None:
    catalog = load_catalog("h", type="hadoop", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    before = catalog.create_table("db.t", SCHEMA, properties={"k": "first"})
    assert catalog.load_table("db.t").metadata.properties["k"] == "first"
    catalog.drop_table("db.t")
    after = catalog.create_table("db.t", SCHEMA, properties={"k": "second!"})
    assert after.metadata_location == before.metadata_location  # v1.metadata.json once more
    loaded = catalog.load_table("db.t")
    assert loaded.metadata.properties["k"] == "second!"
    assert loaded.metadata.table_uuid == after.metadata.table_uuid != before.metadata.table_uuid


# -- object storage: requests counted by key ----------------------------------------------------


@pytest.fixture
def s3_catalog(tmp_path: Path, s3: S3Server, s3_warehouse: str) -> Iterator[SqlCatalog]:
    catalog = SqlCatalog("s3cat", uri=f"sqlite:///{tmp_path}/c.db", warehouse=s3_warehouse, **s3.properties)
    catalog.create_namespace("db")
    try:
        yield catalog
    finally:
        catalog.close()


def _key(location: str, s3: S3Server) -> str:
    return location.removeprefix(f"s3://{s3.bucket}/")


def test_loading_a_table_again_sends_no_request(s3_catalog: SqlCatalog, s3: S3Server) -> None:
    table = s3_catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    table.append(pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]}))
    s3.reset_counts()
    # this process wrote the file: no request at all
    assert s3_catalog.load_table("db.t").metadata is table.metadata
    assert s3.requests() == []
    # another process's view: the first load reads the file (pyarrow's HEAD for the size, the
    # GET), the second load nothing
    mf.clear_metadata_cache()
    loaded = s3_catalog.load_table("db.t")
    assert loaded.metadata == table.metadata
    key = _key(table.metadata_location, s3)
    assert s3.requests() == [("HEAD", key), ("GET", key)]
    s3.reset_counts()
    assert s3_catalog.load_table("db.t").metadata is loaded.metadata
    assert s3_catalog.load_table("db.t").metadata is loaded.metadata
    assert s3.requests() == []


def test_existence_checks_still_ask_the_store(s3_catalog: SqlCatalog, s3: S3Server) -> None:
    table = s3_catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    location = table.metadata_location
    FileIO(s3.properties).delete(location)
    assert s3_catalog.load_table("db.t").metadata is table.metadata  # the pointer names it: as Java
    s3.reset_counts()
    with pytest.raises(NotFound):
        s3_catalog.register_table("db.again", location)
    assert ("HEAD", _key(location, s3)) in s3.requests()


def test_a_rewritable_name_is_checked_on_every_load(s3_catalog: SqlCatalog, s3: S3Server) -> None:
    io = FileIO(s3.properties)
    md = s3_catalog.create_table("db.t", SCHEMA).metadata
    location = f"{md.location}/metadata/v1.metadata.json"
    io.new_output(location).write_bytes(mf.encode_table_metadata(md))
    first = mf.read_table_metadata(io, location)
    key = _key(location, s3)
    s3.reset_counts()
    assert mf.read_table_metadata(io, location) is first
    assert s3.requests() == [("HEAD", key)]  # size and modification time, then the cached parse
    # rewritten in place (as a Hadoop table dropped and created again): parsed again
    other = md.with_changes(properties={"k": "v"})
    io.new_output(location).write_bytes(mf.encode_table_metadata(other), overwrite=True)
    assert mf.read_table_metadata(io, location) == other
