"""rewrite_table_path: a staged copy that, copied per its file list and registered, is the same table.

Every test copies the listed files, moves the source table out of the way (so a path left pointing
at it fails the read instead of quietly reading the source), registers the copy in a catalog of
its own warehouse and compares every snapshot's rows with what the source held.
"""

from __future__ import annotations

import csv
import io
import re
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from icefloe.catalog.base import Catalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import CorruptMetadata, ValidationError
from icefloe.formats.puffin.files import read_puffin_footer
from icefloe.io.fileio import FileIO
from icefloe.maintenance.partition_stats import compute_partition_stats
from icefloe.maintenance.rewrite_table_path import RewriteTablePathResult, rewrite_table_path
from icefloe.maintenance.table_path_prefix import PathOutsidePrefix, PrefixMap
from icefloe.maintenance.table_stats import compute_table_stats
from icefloe.table.table import Table
from tests.maintenance.helpers import BY_CAT, SCHEMA, batch, delete_ids
from tests.support.interop import read_with_duckdb, read_with_pyiceberg
from tests.support.s3server import S3Server

pytestmark = [pytest.mark.catalog_namespaces("db")]

V4_LEAVES = {"write.v4.root.max-inline-entries": "2", "write.v4.leaf.target-entries": "4"}
"""Small enough that a v4 table's root points at leaf manifests, not only inline entries."""


def _table(catalog: Catalog, fv: int, name: str = "db.t") -> Table:
    """A partitioned table with several snapshots: two appends, a row-level delete, an append."""
    properties = {"format-version": str(fv), **(V4_LEAVES if fv >= 4 else {})}
    table = catalog.create_table(name, SCHEMA, partition_spec=BY_CAT, properties=properties)
    table.append(batch(0, 6))
    table.append(batch(6, 6))
    delete_ids(table.refresh(), {0, 4, 7})
    table.refresh().append(batch(12, 3))
    return table.refresh()


def _rows(table: Table) -> dict[int, list[dict[str, Any]]]:
    """Every snapshot's rows, sorted by id."""
    return {
        s.snapshot_id: table.scan(snapshot_id=s.snapshot_id).to_arrow().sort_by("id").to_pylist()
        for s in table.metadata.snapshots
    }


def _files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by relative path, with its bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _plan(fio: FileIO, result: RewriteTablePathResult) -> list[tuple[str, str]]:
    text = fio.new_input(result.file_list_location).read().decode("utf-8")
    return [(source, target) for source, target in csv.reader(io.StringIO(text))]


def _copy(fio: FileIO, result: RewriteTablePathResult) -> list[tuple[str, str]]:
    """Copy every listed file, as a user's copy tool would; the plan."""
    plan = _plan(fio, result)
    for source, target in plan:
        fio.new_output(target).write_bytes(fio.new_input(source).read(), overwrite=True)
    return plan


def _relative(paths: list[str], prefix: str) -> list[str]:
    assert all(p.startswith(prefix + "/") for p in paths), paths
    return sorted(p[len(prefix) + 1 :] for p in paths)


def _referenced_data_files(root: Path) -> list[str]:
    """The data files named inside the delete files under ``root``: the ``file_path`` column of
    position delete files, the ``referenced-data-file`` of deletion-vector blobs."""
    named: list[str] = []
    for path in root.rglob("*.puffin"):
        footer = read_puffin_footer(path.read_bytes(), source=str(path))
        named += [b.properties["referenced-data-file"] for b in footer.blobs]
    for path in root.glob("**/data/**/*.parquet"):
        table = pq.read_table(path)
        if "file_path" in table.column_names:
            named += table.column("file_path").to_pylist()
    return named


def _target_catalog(tmp_path: Path, warehouse: Path) -> SqlCatalog:
    catalog = SqlCatalog("copies", uri=f"sqlite:///{tmp_path / 'copies.db'}", warehouse=str(warehouse))
    catalog.create_namespace("db")
    return catalog


@pytest.mark.parametrize("fv", [2, 3, 4])
def test_a_copy_reads_every_snapshot_like_the_source(catalog: Catalog, tmp_path: Path, fv: int) -> None:
    table = _table(catalog, fv)
    compute_table_stats(table)  # a statistics and a partition statistics file: copied as they are
    compute_partition_stats(table)
    table = table.refresh()
    source_dir = Path(table.location().removeprefix("file://"))
    source = f"file://{source_dir}"
    target_root = tmp_path / "dr"
    target = f"file://{target_root}/db/t"
    staging = f"file://{tmp_path}/staging"
    expected = _rows(table)
    assert len(expected) == 4 and [len(r) for r in expected.values()] == [6, 12, 9, 12]
    before = _files(source_dir)

    result = rewrite_table_path(table, source, target, staging_location=staging)

    assert _files(source_dir) == before  # the source is not touched, not even its metadata dir
    assert result.latest_version == table.metadata_location.rsplit("/", 1)[-1]
    assert result.file_list_location == f"{staging}/file-list"
    plan = _copy(table.io, result)
    # every file of the source table is copied (it has no orphans), each to the same relative path
    assert _relative([t for _, t in plan], target) == sorted(before)
    rewritten = [s for s, _ in plan if s.startswith(staging)]
    assert len(rewritten) == result.rewritten_files and len(plan) - len(rewritten) == result.copied_files
    assert plan[-1] == (
        f"{staging}/metadata/{result.latest_version}",
        f"{target}/metadata/{result.latest_version}",
    )
    assert _referenced_data_files(target_root) and all(
        r.startswith(f"{target}/data/") for r in _referenced_data_files(target_root)
    )
    shutil.move(source_dir, tmp_path / "moved-away")  # a path still pointing at the source fails

    copy = _target_catalog(tmp_path, target_root).register_table(
        "db.t", f"{target}/metadata/{result.latest_version}"
    )
    assert copy.location() == target
    assert _relative(list(copy.metadata.statistics_paths()), target) == _relative(
        list(table.metadata.statistics_paths()), source
    )
    assert len(copy.metadata.statistics_paths()) == 2
    assert _rows(copy) == expected
    if fv <= 3:  # independent readers
        for snapshot_id, rows in expected.items():
            for read in (read_with_pyiceberg, read_with_duckdb):
                got = read(copy.metadata_location, snapshot_id).sort_by("id").to_pylist()
                assert got == rows, (read.__name__, snapshot_id)


@pytest.mark.parametrize("fv", [2, 3, 4])
def test_an_incremental_copy_lists_only_what_came_after_start_version(
    catalog: Catalog, tmp_path: Path, fv: int
) -> None:
    table = _table(catalog, fv)
    source_dir = Path(table.location().removeprefix("file://"))
    source, target_root = f"file://{source_dir}", tmp_path / "dr"
    target = f"file://{target_root}/db/t"
    first = rewrite_table_path(table, source, target, staging_location=f"file://{tmp_path}/s1")
    _copy(table.io, first)
    files_at_first = _files(source_dir)

    delete_ids(table, {12, 5})
    table = table.refresh()
    table.append(batch(100, 4))
    table = table.refresh()
    expected = _rows(table)
    second = rewrite_table_path(
        table, source, target, start_version=first.latest_version, staging_location=f"file://{tmp_path}/s2"
    )

    new_files = sorted(set(_files(source_dir)) - set(files_at_first))
    plan = _copy(table.io, second)
    assert _relative([t for _, t in plan], target) == new_files
    shutil.move(source_dir, tmp_path / "moved-away")
    copy = _target_catalog(tmp_path, target_root).register_table(
        "db.t", f"{target}/metadata/{second.latest_version}"
    )
    assert _rows(copy) == expected and len(expected) == 6


def test_end_version_copies_the_table_as_it_was(catalog: Catalog, tmp_path: Path) -> None:
    table = _table(catalog, 2)
    at = table.metadata_location.rsplit("/", 1)[-1]
    expected = _rows(table)
    table.append(batch(50, 3))
    table = table.refresh()
    source_dir = Path(table.location().removeprefix("file://"))
    target_root = tmp_path / "dr"
    result = rewrite_table_path(
        table,
        f"file://{source_dir}",
        f"file://{target_root}/db/t",
        end_version=at,
        staging_location=f"file://{tmp_path}/staging",
    )
    assert result.latest_version == at
    _copy(table.io, result)
    shutil.move(source_dir, tmp_path / "moved-away")
    copy = _target_catalog(tmp_path, target_root).register_table(
        "db.t", f"file://{target_root}/db/t/metadata/{at}"
    )
    assert _rows(copy) == expected


def test_the_default_staging_location_is_in_the_metadata_directory(catalog: Catalog, tmp_path: Path) -> None:
    table = _table(catalog, 3)
    result = table.maintenance.rewrite_table_path(table.location(), f"file://{tmp_path}/dr/t")
    assert result.staging_location.startswith(f"{table.location()}/metadata/copy-table-staging-")
    assert result.file_list_location == f"{result.staging_location}/file-list"
    assert table.io.exists(result.file_list_location)


def test_a_file_outside_the_source_prefix_is_refused_and_nothing_is_written(
    catalog: Catalog, warehouse: Path, tmp_path: Path
) -> None:
    table = _table(catalog, 2)
    with table.transaction() as tx:  # one append's files go elsewhere in the warehouse
        tx.set_properties({"write.data.path": f"file://{warehouse}/elsewhere"})
    table.refresh().append(batch(60, 3))
    with table.refresh().transaction() as tx:
        tx.remove_properties("write.data.path")
    table = table.refresh()
    outside = sorted(p.as_posix() for p in (warehouse / "elsewhere").rglob("*.parquet"))
    assert len(outside) == 3
    staging = tmp_path / "staging"

    with pytest.raises(PathOutsidePrefix) as caught:
        rewrite_table_path(table, table.location(), f"file://{tmp_path}/dr/t", staging_location=str(staging))
    # the first path met outside: the write.data.path of the versions in between, or a data file
    assert f"path file://{warehouse}/elsewhere" in str(caught.value)
    assert not staging.exists()
    with pytest.raises(PathOutsidePrefix, match="does not start with the source prefix"):
        rewrite_table_path(
            table, f"{table.location()}/data", f"file://{tmp_path}/dr", staging_location=str(staging)
        )
    assert not staging.exists()


def test_a_damaged_metadata_file_in_the_log_is_refused_naming_it(catalog: Catalog, tmp_path: Path) -> None:
    table = _table(catalog, 2)
    older = table.metadata.metadata_log[0].metadata_file
    Path(older.removeprefix("file://")).write_bytes(b"\x1f\x8b not gzip at all")
    staging = tmp_path / "staging"
    with pytest.raises(CorruptMetadata, match=f"metadata file {re.escape(older)} is not valid gzip"):
        rewrite_table_path(table, table.location(), f"file://{tmp_path}/dr/t", staging_location=str(staging))
    assert not staging.exists()


def test_prefixes_match_whole_path_segments_in_any_local_spelling() -> None:
    prefixes = PrefixMap("/wh/db/t", "s3://bucket/copy", "file:///tmp/stage")
    assert prefixes.target("file:///wh/db/t/data/a.parquet") == "s3://bucket/copy/data/a.parquet"
    assert (
        prefixes.target("file:/wh/db/t/metadata/v1.metadata.json")
        == "s3://bucket/copy/metadata/v1.metadata.json"
    )
    assert prefixes.staged("/wh/db/t/metadata/m.avro") == "file:///tmp/stage/metadata/m.avro"
    assert prefixes.target("file:///wh/db/t/data/../data//a.parquet") == "s3://bucket/copy/data/a.parquet"
    assert prefixes.target("file:///wh/db/t") == "s3://bucket/copy"
    with pytest.raises(
        PathOutsidePrefix, match=re.escape("file:///wh/db/t2/data/a.parquet does not start with")
    ):
        prefixes.target("file:///wh/db/t2/data/a.parquet")
    with pytest.raises(ValidationError, match="the same"):
        PrefixMap("/wh/t", "file:///wh/t/", "/stage")


def test_a_copy_onto_another_tables_location_is_not_registered(catalog: Catalog, tmp_path: Path) -> None:
    table = _table(catalog, 2)
    target_root = tmp_path / "dr"
    copies = _target_catalog(tmp_path, target_root)
    copies.create_table("db.other", SCHEMA, location=f"file://{target_root}/db/other")
    result = rewrite_table_path(
        table,
        table.location(),
        f"file://{target_root}/db/other/nested",
        staging_location=f"file://{tmp_path}/s",
    )
    _copy(table.io, result)
    with pytest.raises(ValidationError, match="other"):
        copies.register_table(
            "db.t", f"file://{target_root}/db/other/nested/metadata/{result.latest_version}"
        )


def test_a_local_table_copied_to_s3_reads_the_same(
    catalog: Catalog, tmp_path: Path, s3: S3Server, s3_warehouse: str
) -> None:
    table = _table(catalog, 3)
    expected = _rows(table)
    target = f"{s3_warehouse}/db/t"
    result = rewrite_table_path(
        table, table.location(), target, staging_location=f"file://{tmp_path}/staging"
    )
    plan = _copy(FileIO(s3.properties), result)
    assert all(t.startswith(f"{target}/") for _, t in plan)
    shutil.move(Path(table.location().removeprefix("file://")), tmp_path / "moved-away")
    copies = SqlCatalog(
        "s3copies", uri=f"sqlite:///{tmp_path / 's3.db'}", warehouse=s3_warehouse, **s3.properties
    )
    try:
        copies.create_namespace("db")
        copy = copies.register_table("db.t", f"{target}/metadata/{result.latest_version}")
        assert _rows(copy) == expected
    finally:
        copies.close()
