"""Tables in an ``s3://`` warehouse on a real S3-compatible server (moto over HTTP, see tests/support).

Every path a table takes through storage runs here against the object store: create, append,
overwrite, row-level deletes (position deletes in v2, deletion vectors in v3 and v4), update,
merge, scans, metadata tables, snapshot expiry and orphan removal (which lists the store), on
format versions 2, 3 and 4, with exact rows. Request counts pin the cost of a small append,
and injected 503 answers check that a write retries or fails cleanly, leaving the table as it was.
A commit's objects are uploaded together in the background (``io.uploads``): all of them exist
when the catalog's COMMIT runs, and a failed upload (a bucket gone) fails the commit before it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from icefloe.catalog import load_catalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.io.fileio import FileIO
from icefloe.io.uploads import UploadFailed
from icefloe.server import ServerConfig, start_server
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.table.table import Table
from tests.support.s3server import S3Server
from tests.support.swap_commits import SwapCommitWatchingCatalog

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("category", pa.string())])


def _rows(table: Table) -> list[tuple[int, str | None]]:
    data = table.scan().to_arrow().sort_by("id")
    return list(zip(data["id"].to_pylist(), data["category"].to_pylist(), strict=True))


def _batch(ids: list[int], category: str) -> pa.Table:
    return pa.table({"id": ids, "category": [category] * len(ids)}, schema=SCHEMA)


@pytest.fixture
def s3_catalog(tmp_path: Path, s3: S3Server, s3_warehouse: str) -> Iterator[SqlCatalog]:
    cat = SqlCatalog(
        "s3cat", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=s3_warehouse, **s3.properties
    )
    cat.create_namespace("db")
    try:
        yield cat
    finally:
        cat.close()


@pytest.mark.parametrize("version", [2, 3, 4])
def test_every_table_operation_on_object_storage(s3_catalog: SqlCatalog, s3: S3Server, version: int) -> None:
    table = s3_catalog.create_table("db.t", SCHEMA, properties={"format-version": str(version)})
    assert table.location().startswith("s3://")
    assert table.metadata_location.startswith(table.location() + "/metadata/")

    table.append(_batch([1, 2, 3], "a"))
    table.append(_batch([4, 5], "b"))
    assert _rows(table) == [(1, "a"), (2, "a"), (3, "a"), (4, "b"), (5, "b")]

    table.overwrite(_batch([6], "c"), "category = 'b'")
    assert _rows(table) == [(1, "a"), (2, "a"), (3, "a"), (6, "c")]

    table.delete("id = 2", mode="merge-on-read")
    assert _rows(table) == [(1, "a"), (3, "a"), (6, "c")]
    deletes = table.inspect.delete_files()
    if version < 4:
        assert deletes.num_rows == 1
        expected_format = "PARQUET" if version == 2 else "PUFFIN"
        assert deletes["file_format"].to_pylist() == [expected_format]
        assert deletes["file_path"][0].as_py().startswith("s3://")
    else:  # v4 keeps the deletion vector in the data file's entry, not in a delete file
        assert deletes.num_rows == 0

    table.update({"category": "z"}, "id = 3")
    assert _rows(table) == [(1, "a"), (3, "z"), (6, "c")]

    changes = pa.table({"id": [1, 7], "category": ["m", "n"]}, schema=SCHEMA)
    table.merge(changes, on="id").when_matched_update().when_not_matched_insert().execute()
    assert _rows(table) == [(1, "m"), (3, "z"), (6, "c"), (7, "n")]

    filtered = table.scan(filter="id > 2", columns=["id"]).to_arrow().sort_by("id")
    assert filtered["id"].to_pylist() == [3, 6, 7]
    first = table.snapshots()[0].snapshot_id
    assert sorted(table.scan(snapshot_id=first).to_arrow()["id"].to_pylist()) == [1, 2, 3]

    reopened = s3_catalog.load_table("db.t")
    assert _rows(reopened) == [(1, "m"), (3, "z"), (6, "c"), (7, "n")]
    assert reopened.inspect.snapshots().num_rows == len(table.snapshots()) == 6
    if version < 4:
        live = sum(reopened.inspect.data_files()["record_count"].to_pylist()) - _deleted_rows(reopened)
        assert live == 4


def _deleted_rows(table: Table) -> int:
    deletes = table.inspect.delete_files()
    return int(pc.sum(deletes["record_count"]).as_py() or 0) if deletes.num_rows else 0


@pytest.mark.parametrize("version", [2, 3, 4])
def test_expiry_and_orphan_removal_on_object_storage(
    s3_catalog: SqlCatalog, s3: S3Server, version: int
) -> None:
    table = s3_catalog.create_table("db.m", SCHEMA, properties={"format-version": str(version)})
    table.append(_batch([1, 2], "a"))
    table.overwrite(_batch([3], "b"))
    io = FileIO(s3.properties)
    before = set(io.list_prefix(table.location()))

    expired = table.maintenance.expire_snapshots(retain_last=1, older_than=2**62)
    assert len(expired.expired_snapshot_ids) == 1
    assert expired.deleted_content_files and all(f.startswith("s3://") for f in expired.deleted_content_files)
    new_metadata = {table.metadata_location}  # expiry commits a new metadata file
    after_expiry = set(io.list_prefix(table.location())) - new_metadata
    assert after_expiry == before - set(expired.deleted_content_files) - set(expired.deleted_metadata_files)
    assert _rows(table) == [(3, "b")]

    orphan = f"{table.location()}/data/orphan-from-a-failed-job.parquet"
    io.new_output(orphan).write_bytes(b"not referenced")
    young = table.maintenance.remove_orphan_files()  # default age threshold: nothing this young
    assert young.orphan_files == ()
    s3.reset_counts()
    removed = table.maintenance.remove_orphan_files(older_than=2**62)
    assert removed.orphan_files == (orphan,)
    assert s3.counts().get("LIST", 0) >= 1
    assert not io.exists(orphan)
    assert _rows(s3_catalog.load_table("db.m")) == [(3, "b")]


_OPERATIONS = ("PUT", "HEAD", "GET", "LIST", "POST", "DELETE")


def _requests(s3: S3Server) -> dict[str, int]:
    counts = s3.counts()
    assert set(counts) <= set(_OPERATIONS), counts
    return {op: counts.get(op, 0) for op in _OPERATIONS}


@pytest.mark.parametrize(
    ("version", "puts"),
    [
        # the data file, the root manifest (inline entry), the metadata file
        (4, 3),
        # the data file, a manifest, the manifest list, the metadata file: v1-v3 list the new
        # manifest in a manifest list, one more file than a v4 root
        (3, 4),
    ],
)
def test_small_append_request_counts(s3_catalog: SqlCatalog, s3: S3Server, version: int, puts: int) -> None:
    table = s3_catalog.create_table(f"db.c{version}", SCHEMA, properties={"format-version": str(version)})
    table.append(_batch([1], "a"))
    s3.reset_counts()
    table.append(_batch([2], "b"))
    # Only PUTs: fresh UUID names need no existence check, and the base (metadata file, parent
    # manifest list or root) is what this table itself wrote last, so nothing is read back.
    assert _requests(s3) == {"PUT": puts, "HEAD": 0, "GET": 0, "LIST": 0, "POST": 0, "DELETE": 0}
    assert _rows(table) == [(1, "a"), (2, "b")]


@pytest.mark.parametrize("version", [2, 3, 4])
def test_a_scan_asks_the_store_for_no_size_it_knows(
    s3_catalog: SqlCatalog, s3: S3Server, version: int
) -> None:
    table = s3_catalog.create_table(f"db.z{version}", SCHEMA, properties={"format-version": str(version)})
    table.append(_batch([1, 2, 3], "a"))
    table.append(_batch([4], "b"))
    table.delete("id = 2", mode="merge-on-read")
    assert _rows(table) == [(1, "a"), (3, "a"), (4, "b")]  # a first plan decodes the tree
    s3.reset_counts()
    assert _rows(table) == [(1, "a"), (3, "a"), (4, "b")]
    under_data = [r for r in s3.requests() if "/data/" in r[1]]
    parquet = sorted(r for r in under_data if r[1].endswith(".parquet"))
    # Each Parquet file (the two data files; in v2 the position delete file too): a GET for the
    # footer and one for the columns, no HEAD for the size (the manifest entry records it).
    files = 3 if version == 2 else 2
    assert [op for op, _ in parquet] == ["GET"] * 2 * files
    assert len({key for _, key in parquet}) == files
    # A v3 or v4 deletion vector is read from its Puffin file by path: pyarrow asks for the size
    # first (its Python binding opens by path only, see formats/parquet/opening.py).
    puffin = [op for op, key in under_data if key.endswith(".puffin")]
    assert puffin == (["HEAD", "GET"] if version >= 3 else [])
    # The snapshot's manifest list (v2, v3) or root (v4) was decoded by the first plan and is kept
    # by location: immutable, it is not asked for again, not even its size. A v4 root holding
    # inline entries and a deletion vector is also the planner's "manifest" for those entries: it
    # is answered from the same decoded root.
    tree = [op for op, key in s3.requests() if "/metadata/snap-" in key]
    assert tree == []


@pytest.mark.parametrize("version", [2, 3, 4])
def test_a_delete_file_covering_several_data_files_is_read_once_per_scan(
    s3_catalog: SqlCatalog, s3: S3Server, version: int
) -> None:
    # v2: one position delete file per partition (the table has one), naming several data files
    granularity = {"write.delete.granularity": "partition"} if version == 2 else {}
    properties = {"format-version": str(version), **granularity}
    table = s3_catalog.create_table(f"db.s{version}", SCHEMA, properties=properties)
    for first in (10, 20, 30, 40):
        table.append(_batch([first, first + 1, first + 2], "a"))
    table.delete("id in (11, 20, 22, 41)", mode="merge-on-read")  # one commit: rows of every file
    expected = [(10, "a"), (12, "a"), (21, "a"), (30, "a"), (31, "a"), (32, "a"), (40, "a"), (42, "a")]
    assert _rows(table) == expected  # a first plan decodes the tree
    s3.reset_counts()
    assert _rows(table) == expected
    under_data = [r for r in s3.requests() if "/data/" in r[1]]
    data_files = {f for f in table.inspect.data_files()["file_path"].to_pylist()}
    assert len(data_files) == 4
    delete_files = [r for r in under_data if not any(r[1] in f for f in data_files)]
    if version == 2:
        # one position delete file names the three files with deletes: its footer and its columns
        # are read once for the scan, not once per task
        assert sorted(op for op, key in delete_files) == ["GET", "GET"]
        assert all(key.endswith(".parquet") for _, key in delete_files)
    else:
        # the three deletion vectors are blobs of one Puffin file: its size asked for and its
        # blobs read once for the scan, not once per task
        assert [op for op, _ in delete_files] == ["HEAD", "GET"]
        assert all(key.endswith(".puffin") for _, key in delete_files)
    data_reads = [op for op, key in under_data if any(key in f for f in data_files)]
    assert data_reads == ["GET"] * 2 * 4


@pytest.mark.parametrize(("version", "puts"), [(4, 3), (3, 4)])
def test_a_commits_uploads_are_in_flight_together(
    s3_catalog: SqlCatalog, s3: S3Server, version: int, puts: int
) -> None:
    table = s3_catalog.create_table(f"db.g{version}", SCHEMA, properties={"format-version": str(version)})
    table.append(_batch([1], "a"))
    s3.reset_counts()
    s3.gather_next_puts(puts)  # the server holds each PUT until all of the commit's PUTs are in flight
    table.append(_batch([2], "b"))
    assert s3.gathered_puts() == puts
    assert _requests(s3)["PUT"] == puts
    assert _rows(s3_catalog.load_table(f"db.g{version}")) == [(1, "a"), (2, "b")]


class ListingAtCommitCatalog(SwapCommitWatchingCatalog):
    """Lists the table's objects as each pointer swap commits."""

    table_location = ""
    seen_at_commit: list[set[str]]

    def at_swap_commit(self) -> None:
        self.seen_at_commit.append(set(FileIO(self.properties).list_prefix(self.table_location)))


def test_every_object_of_a_commit_exists_when_the_catalog_commits(
    tmp_path: Path, s3: S3Server, s3_warehouse: str
) -> None:
    cat = ListingAtCommitCatalog(
        "watch", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=s3_warehouse, **s3.properties
    )
    try:
        cat.create_namespace("db")
        table = cat.create_table("db.x", SCHEMA, properties={"format-version": "4"})
        io = FileIO(s3.properties)
        cat.table_location, cat.seen_at_commit = table.location(), []
        before = set(io.list_prefix(table.location()))
        table.append(_batch([1], "a"))
        written = set(io.list_prefix(table.location())) - before
        assert len(written) == 3  # data file, root, metadata file
        assert table.metadata_location in written
        assert cat.seen_at_commit == [before | written]
    finally:
        cat.close()


@pytest.mark.parametrize("version", [3, 4])
def test_an_upload_that_fails_fails_the_commit_before_the_pointer_moves(
    tmp_path: Path, s3: S3Server, version: int
) -> None:
    bucket = f"icefloe-gone-v{version}"
    fs = s3.filesystem()
    fs.create_dir(bucket)
    props = {**s3.properties, "s3.retry.num-retries": "0"}
    uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    cat = SqlCatalog("gone", uri=uri, warehouse=f"s3://{bucket}/wh", **props)
    try:
        cat.create_namespace("db")
        table = cat.create_table("db.t", SCHEMA, properties={"format-version": str(version)})
        table.append(_batch([1], "a"))
        metadata_before = table.metadata_location
        io = FileIO(s3.properties)
        kept = {location: io.new_input(location).read() for location in io.list_prefix(f"s3://{bucket}/wh")}

        fs.delete_dir_contents(bucket)
        fs.delete_dir(bucket)  # a real server condition: every PUT of the next commit fails
        with pytest.raises(UploadFailed, match=re.escape(f"upload of s3://{bucket}/wh/db/t/")):
            table.append(_batch([2], "b"))

        fs.create_dir(bucket)  # the bucket back as it was, to read the catalog's table again
        for location, data in kept.items():
            io.new_output(location).write_bytes(data, overwrite=True)
        reloaded = cat.load_table("db.t")
        assert reloaded.metadata_location == metadata_before
        assert _rows(reloaded) == [(1, "a")]
        assert set(io.list_prefix(f"s3://{bucket}/wh")) == set(kept)
        reloaded.append(_batch([3], "c"))
        assert _rows(cat.load_table("db.t")) == [(1, "a"), (3, "c")]
    finally:
        cat.close()
        fs.delete_dir(bucket)  # with its objects


def test_rest_client_uploads_together_and_sends_the_commit_only_once_they_succeeded(
    tmp_path: Path, s3: S3Server, s3_warehouse: str
) -> None:
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "category", StringType()))

    uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    backing = SqlCatalog("backing", uri=uri, warehouse=s3_warehouse, **s3.properties)
    client_props = {**s3.properties, "s3.retry.num-retries": "0"}
    try:
        with start_server(ServerConfig(backing)) as server:
            client = load_catalog("c", type="rest", uri=server.uri, **client_props)
            try:
                client.create_namespace("db")
                table = client.create_table("db.r", schema, properties={"format-version": "4"})
                table.append(_batch([1], "a"))
                s3.gather_next_puts(2)  # the client's data file and root, then the server's metadata file
                table.append(_batch([2], "b"))
                assert s3.gathered_puts() == 2
                metadata_before = backing.load_table("db.r").metadata_location
                files_before = set(FileIO(s3.properties).list_prefix(table.location()))

                s3.fail_next_puts(2, status=403)  # both of the client's uploads refused
                with pytest.raises(UploadFailed):
                    table.append(_batch([3], "c"))
                s3.clear_faults()
                direct = backing.load_table("db.r")
                assert direct.metadata_location == metadata_before  # the commit was never sent
                assert _rows(direct) == [(1, "a"), (2, "b")]
                assert set(FileIO(s3.properties).list_prefix(table.location())) == files_before
            finally:
                client.close()
    finally:
        backing.close()


@pytest.mark.parametrize(("version", "client_files"), [(4, 2), (2, 3)])
def test_an_append_through_the_rest_server_sends_its_puts_in_two_waves_and_nothing_else(
    tmp_path: Path, s3: S3Server, s3_warehouse: str, version: int, client_files: int
) -> None:
    """The client's files (v4: data file and root; v2: data file, manifest, manifest list) go up
    together, then the server's metadata file: two round trips to the store, no HEAD, no GET."""
    uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    backing = SqlCatalog("backing", uri=uri, warehouse=s3_warehouse, **s3.properties)
    try:
        with start_server(ServerConfig(backing)) as server:
            client = load_catalog("c", type="rest", uri=server.uri, **s3.properties)
            try:
                client.create_namespace("db")
                schema = Schema(
                    NestedField(1, "id", LongType(), required=True), NestedField(2, "category", StringType())
                )
                table = client.create_table("db.w", schema, properties={"format-version": str(version)})
                table.append(_batch([1], "a"))
                s3.reset_counts()
                s3.gather_next_puts(client_files)
                table.append(_batch([2], "b"))
                assert s3.gathered_puts() == client_files
                keys = [key for op, key in s3.requests() if op == "PUT"]
                assert _requests(s3) == {
                    "PUT": client_files + 1,
                    "HEAD": 0,
                    "GET": 0,
                    "LIST": 0,
                    "POST": 0,
                    "DELETE": 0,
                }
                metadata_file = backing.load_table("db.w").metadata_location.removeprefix(
                    f"s3://{s3.bucket}/"
                )
                assert keys[-1] == metadata_file  # the second wave, after the first
                assert not any(key.endswith(".metadata.json") for key in keys[:-1])
                assert _rows(table.refresh()) == [(1, "a"), (2, "b")]
            finally:
                client.close()
    finally:
        backing.close()


@pytest.mark.parametrize("version", [3, 4])
def test_append_after_another_writer_starts_from_its_commit(
    s3_catalog: SqlCatalog, s3: S3Server, version: int
) -> None:
    table = s3_catalog.create_table("db.w", SCHEMA, properties={"format-version": str(version)})
    table.append(_batch([1], "a"))
    other = s3_catalog.load_table("db.w")
    other.append(_batch([2], "b"))  # another handle moves the pointer
    s3.reset_counts()
    table.append(_batch([3], "c"))
    # The table's own base is stale, so the other writer's metadata file is looked up: this
    # process wrote it, and its UUID name proves the cached parse current, so nothing is read
    # (another process would HEAD and GET it once).
    metadata_file = other.metadata_location.removeprefix(f"s3://{s3.bucket}/")
    assert [r for r in s3.requests() if r[1] == metadata_file] == []
    assert _requests(s3)["PUT"] >= 1
    current, others = table.current_snapshot(), other.current_snapshot()
    assert current is not None and others is not None
    assert current.parent_snapshot_id == others.snapshot_id
    assert _rows(s3_catalog.load_table("db.w")) == [(1, "a"), (2, "b"), (3, "c")]


def test_throttled_put_is_retried_and_the_append_succeeds(s3_catalog: SqlCatalog, s3: S3Server) -> None:
    table = s3_catalog.create_table("db.r", SCHEMA, properties={"format-version": "4"})
    table.append(_batch([1], "a"))
    s3.reset_counts()
    s3.fail_next_puts(1)
    table.append(_batch([2], "b"))
    assert s3.counts()["PUT"] == 4  # the failed PUT and its retry, the root, the metadata file
    assert _rows(s3_catalog.load_table("db.r")) == [(1, "a"), (2, "b")]


def test_put_failing_beyond_retries_leaves_the_table_unchanged(
    tmp_path: Path, s3: S3Server, s3_warehouse: str
) -> None:
    props = {**s3.properties, "s3.retry.num-retries": "1"}
    cat = SqlCatalog("s3fail", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=s3_warehouse, **props)
    try:
        cat.create_namespace("db")
        table = cat.create_table("db.f", SCHEMA, properties={"format-version": "4"})
        table.append(_batch([1], "a"))
        metadata_before = table.metadata_location
        files_before = set(FileIO(s3.properties).list_prefix(table.location()))

        s3.fail_next_puts(1000)
        with pytest.raises(OSError, match="SLOW_DOWN"):
            table.append(_batch([2], "b"))
        s3.clear_faults()

        reloaded = cat.load_table("db.f")
        assert reloaded.metadata_location == metadata_before
        assert _rows(reloaded) == [(1, "a")]
        assert set(FileIO(s3.properties).list_prefix(table.location())) == files_before
        reloaded.append(_batch([3], "c"))
        assert _rows(cat.load_table("db.f")) == [(1, "a"), (3, "c")]
    finally:
        cat.close()


def test_secrets_stay_out_of_metadata_and_logs(
    s3_catalog: SqlCatalog, s3: S3Server, caplog: pytest.LogCaptureFixture
) -> None:
    secret = s3.properties["s3.secret-access-key"]
    caplog.set_level(logging.DEBUG)
    table = s3_catalog.create_table("db.s", SCHEMA, properties={"format-version": "3"})
    table.append(_batch([1], "a"))
    s3.fail_next_puts(1)
    table.append(_batch([2], "b"))
    io = FileIO(s3.properties)
    for location in io.list_prefix(table.location() + "/metadata"):
        assert secret.encode() not in io.new_input(location).read(), location
    assert secret not in caplog.text
    assert secret not in repr(table.io) and secret not in repr(table)


def test_command_line_on_object_storage(
    s3_catalog: SqlCatalog, s3: S3Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from icefloe.cli.main import main

    table = s3_catalog.create_table("db.cli", SCHEMA, properties={"format-version": "4"})
    table.append(_batch([1, 2], "a"))
    table.append(_batch([3], "b"))
    props = [f"--property={key}={value}" for key, value in s3.properties.items()]
    base = ["--uri", f"sqlite:///{tmp_path / 'catalog.db'}", "--catalog", "s3cat", *props]
    assert main([*base, "snapshots", "db.cli"]) == 0
    assert capsys.readouterr().out.count("append") == 2
    assert main([*base, "expire-snapshots", "db.cli", "--retain-last", "1", "--older-than", "0s"]) == 0
    capsys.readouterr()
    assert main([*base, "remove-orphan-files", "db.cli", "--dry-run"]) == 0
    assert len(s3_catalog.load_table("db.cli").snapshots()) == 1
    assert _rows(s3_catalog.load_table("db.cli")) == [(1, "a"), (2, "a"), (3, "b")]
