"""What a reader decodes is cross-checked against what the parent file says; disagreement is corrupt.

Tables are written with the public API, then one parent file is rewritten with a wrong value
(a count, a content type, a sequence number, a summary total): the read must fail with a
CorruptMetadata naming the file at fault instead of returning fewer or more rows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog import load_catalog
from icefloe.errors import CorruptMetadata
from icefloe.formats.avro.manifest_list import read_manifest_list, write_manifest_list
from icefloe.formats.metadata.files import clear_metadata_cache
from icefloe.spec.content import ManifestContent
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField
from icefloe.table.table import Table
from icefloe.tree import read_seam
from icefloe.tree.integrity import check_manifest_version

SCHEMA = Schema(NestedField(1, "id", LongType(), True))


@pytest.fixture
def table(tmp_path: Path) -> Table:
    catalog = load_catalog(uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace(("db",))
    t = catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    t.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    t.append(pa.table({"id": pa.array([4, 5], pa.int64())}))
    return t


def _rewrite_list(table: Table, **changes: Any) -> str:
    """Rewrite the current manifest list in place with ``changes`` applied to its first manifest."""
    snap = table.current_snapshot()
    assert snap is not None and snap.manifest_list is not None
    manifests = read_manifest_list(table.io.new_input(snap.manifest_list))
    manifests[0] = manifests[0].with_changes(**changes)
    path = snap.manifest_list.removeprefix("file://")
    with open(path, "wb") as out:
        write_manifest_list(
            out, manifests, 2, snap.snapshot_id, snap.parent_snapshot_id, snap.sequence_number
        )
    read_seam.clear_caches()
    return manifests[0].manifest_path


def _ids(table: Table) -> list[int]:
    return sorted(table.scan().to_arrow()["id"].to_pylist())


def test_entry_counts_that_disagree_with_the_list_name_the_manifest(table: Table) -> None:
    # the totals still add up (1 file, 2 rows): only reading the manifest can tell
    manifest = _rewrite_list(table, added_files_count=0, existing_files_count=1)
    snap = table.current_snapshot()
    assert snap is not None
    with pytest.raises(CorruptMetadata, match="1 ADDED entries, its parent says 0") as err:
        table.scan().to_arrow()
    assert err.value.location == manifest
    assert str(snap.manifest_list) in str(err.value)  # the parent is named too
    assert err.value.snapshot_id == snap.snapshot_id


def test_row_counts_that_disagree_with_the_list_are_corrupt(table: Table) -> None:
    _rewrite_list(table, added_rows_count=0, existing_rows_count=2)
    with pytest.raises(CorruptMetadata, match="hold 2 rows, its parent says 0"):
        table.scan().to_arrow()


def test_a_manifest_the_list_says_is_empty_cannot_vanish_silently(table: Table) -> None:
    snap = table.current_snapshot()
    assert snap is not None
    _rewrite_list(table, added_files_count=0, existing_files_count=0, added_rows_count=0)
    for scan in (table.scan(), table.scan(filter="id > 0")):  # filtered scans too
        with pytest.raises(CorruptMetadata, match="count total-data-files 1, the summary") as err:
            scan.to_arrow()
        assert err.value.location == snap.manifest_list


def test_a_manifest_listed_with_the_other_content_is_corrupt(table: Table) -> None:
    manifest = _rewrite_list(table, content=ManifestContent.DELETES)
    with pytest.raises(CorruptMetadata, match="count total-data-files 1, the summary"):
        table.scan().to_arrow()  # the list no longer adds up
    snap = table.current_snapshot()
    assert snap is not None
    ref = next(m for m in read_manifest_list(table.io.new_input(str(snap.manifest_list))))
    with pytest.raises(CorruptMetadata, match="header says DATA manifest, its parent says DELETES") as err:
        read_seam.read_entries(table.io, table.metadata, ref)  # and the manifest's header disagrees
    assert err.value.location == manifest


def test_sequence_numbers_newer_than_the_snapshot_are_corrupt(table: Table) -> None:
    snap = table.current_snapshot()
    assert snap is not None
    _rewrite_list(table, sequence_number=snap.sequence_number + 5)
    with pytest.raises(CorruptMetadata, match="has sequence number") as err:
        table.scan().to_arrow()
    assert err.value.location == snap.manifest_list


def test_summary_totals_that_disagree_with_the_tree_are_corrupt(table: Table, tmp_path: Path) -> None:
    location = table.metadata_location.removeprefix("file://")
    doc = json.loads(Path(location).read_text())
    snap = next(s for s in doc["snapshots"] if s["snapshot-id"] == doc["current-snapshot-id"])
    snap["summary"]["total-records"] = "4"
    Path(location).write_text(json.dumps(doc))
    clear_metadata_cache()
    # loaded afresh: the handle's refresh() keeps the metadata it holds while the catalog still
    # names the same (immutable) file, and this test rewrote that file in place
    catalog = load_catalog(uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=str(tmp_path / "wh"))
    with pytest.raises(CorruptMetadata, match=r"count total-records 5, the summary .* says 4"):
        catalog.load_table("db.t").scan().to_arrow()


def test_manifest_versions_may_be_older_than_the_table_never_newer() -> None:
    check_manifest_version(1, 2, "m.avro")  # an upgraded table keeps its v1 manifests
    check_manifest_version(3, 4, "m.avro")  # legacy manifests of an upgraded v4 table
    for header, table_version in ((3, 2), (2, 1), (0, 2), (7, 3)):
        with pytest.raises(CorruptMetadata, match=r"m\.avro.*format-version"):
            check_manifest_version(header, table_version, "m.avro")


def test_the_unmodified_table_reads_and_plans_without_complaint(table: Table) -> None:
    assert _ids(table) == [1, 2, 3, 4, 5]
    assert table.scan().count() == 5
