"""Format-version 4 tables through the Table API: every operation, time travel, branches, upgrades."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.base import Catalog
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.spec.updates import TableUpdate, UpgradeFormatVersion
from icefloe.table.table import Table
from icefloe.tree.read_seam import manifest_refs
from icefloe.txn.transaction import AttemptContext, Transaction
from tests.tree.v4_helpers import head, raw_rows

pytestmark = pytest.mark.catalog_namespaces("db")

SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "cat", StringType(), False))
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"))


def rows(start: int, n: int) -> pa.Table:
    """ids start..start+n-1, categories a/b/c."""
    ids = list(range(start, start + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "cat": pa.array(["abc"[i % 3] for i in ids])})


def ids(table: Table, **scan: Any) -> list[int]:
    """The sorted ids a scan returns."""
    return sorted(table.scan(**scan).to_arrow()["id"].to_pylist())


def lineage(table: Table) -> dict[int, tuple[int, int]]:
    got = table.scan(columns=("id", "_row_id", "_last_updated_sequence_number")).to_arrow()
    return {r["id"]: (r["_row_id"], r["_last_updated_sequence_number"]) for r in got.to_pylist()}


@dataclass
class Upgrade:
    """A transaction action that upgrades the table's format version."""

    version: int

    def apply(self, ctx: AttemptContext, current: TableMetadata) -> list[TableUpdate]:
        """Only the metadata changes; the next commit writes the first v4 root."""
        return [UpgradeFormatVersion(self.version)]

    def committed_files(self) -> list[str]:
        """No files."""
        return []


def test_every_operation_on_a_v4_table(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, partition_spec=SPEC, properties={"format-version": "4"})
    assert table.format_version == 4
    table.append(rows(0, 9))
    s1 = table.current_snapshot()
    assert s1 is not None and s1.root_manifest is not None and s1.manifest_list is None
    table.append(rows(9, 6))
    table.delete("cat = 'a'")  # whole files: metadata-only delete
    assert table.current_snapshot().operation == "delete"  # type: ignore[union-attr]
    assert ids(table) == [1, 2, 4, 5, 7, 8, 10, 11, 13, 14]
    table.delete("id = 4")  # rewrites a file copy-on-write
    assert ids(table) == [1, 2, 5, 7, 8, 10, 11, 13, 14]
    table.overwrite(rows(100, 2), overwrite_filter="cat = 'b'")
    assert ids(table) == [2, 5, 8, 11, 14, 100, 101]
    assert ids(table, snapshot_id=s1.snapshot_id) == list(range(9))
    assert ids(table, as_of_timestamp=s1.timestamp_ms) == list(range(9))
    table.append(rows(200, 2), branch="audit")
    assert ids(table, ref="audit") == [2, 5, 8, 11, 14, 100, 101, 200, 201]
    assert ids(table) == [2, 5, 8, 11, 14, 100, 101]
    # row lineage: ids assigned per file in commit order (batch 1: a=[0,3,6] 0-2, b 3-5, c=[2,5,8]
    # 6-8; batch 2: a 9-10, b 11-12, c=[11,14] 13-14), kept through copy-on-write rewrites
    assert {i: v[0] for i, v in lineage(table).items() if i < 100} == {2: 6, 5: 7, 8: 8, 11: 13, 14: 14}
    # 15 appended rows + the 2 rows rewritten by "id = 4" + 2 overwrite rows + 2 on the branch
    assert table.metadata.next_row_id == 21
    reloaded = catalog.load_table("db.t")
    assert ids(reloaded) == [2, 5, 8, 11, 14, 100, 101]
    assert len(table.snapshots()) == 6


def test_small_appends_write_one_tree_file_each(catalog: Catalog, tmp_path: Path) -> None:
    table = catalog.create_table("db.small", SCHEMA, properties={"format-version": "4"})
    meta = tmp_path / "warehouse" / "db" / "small" / "metadata"
    for k in range(5):
        before = set(meta.iterdir()) if meta.exists() else set()
        table.append(rows(k, 1))
        new = sorted(
            p.name.rsplit(".", 2)[-2] if p.name.endswith(".metadata.json") else "root"
            for p in set(meta.iterdir()) - before
        )
        assert new == ["metadata", "root"]
    snap = table.current_snapshot()
    assert snap is not None
    (root_row,) = [r for r in raw_rows(snap.root_manifest)][:1]
    assert root_row["content_type"] == 0 and len(raw_rows(snap.root_manifest)) == 5
    assert ids(table) == [0, 1, 2, 3, 4]


def test_metadata_tables_of_a_v4_table(catalog: Catalog) -> None:
    table = catalog.create_table("db.mt", SCHEMA, properties={"format-version": "4"})
    table.append(rows(0, 3))
    table.append(rows(3, 2))
    files = table.metadata_table("files")
    assert sorted(files["record_count"].to_pylist()) == [2, 3]
    entries = table.metadata_table("entries")
    assert sorted(entries["status"].to_pylist()) == [0, 1]
    manifests = table.metadata_table("manifests")
    assert manifests.num_rows == 1  # the root's inline entries


def _build_v3(catalog: Catalog) -> Table:
    table = catalog.create_table("db.up", SCHEMA, partition_spec=SPEC, properties={"format-version": "3"})
    table.append(rows(0, 9))
    table.append(rows(9, 6))
    table.delete("id = 4 or cat = 'c'")
    return table


def test_v3_table_upgraded_to_v4_reads_identically_and_keeps_working(catalog: Catalog) -> None:
    table = _build_v3(catalog)
    v3_snapshots = [s.snapshot_id for s in table.snapshots()]
    before = {sid: ids(table, snapshot_id=sid) for sid in v3_snapshots}
    lineage_before = lineage(table)
    last_list = table.current_snapshot().manifest_list  # type: ignore[union-attr]
    v3_refs = manifest_refs(table.io, table.metadata, head(table.metadata))

    Transaction(table).add(Upgrade(4)).commit()
    table = catalog.load_table("db.up")
    assert table.format_version == 4
    assert {sid: ids(table, snapshot_id=sid) for sid in v3_snapshots} == before
    assert lineage(table) == lineage_before

    table.append(rows(50, 2))
    snap = table.current_snapshot()
    assert snap is not None and snap.root_manifest is not None and last_list is not None
    root = raw_rows(snap.root_manifest)
    legacy = [r for r in root if r["content_type"] == 3]
    assert [(r["format_version"], r["file_format"], r["spec_id"]) for r in legacy] == [(0, "avro", 0)] * len(
        v3_refs
    )
    assert [
        (
            r["tracking"]["status"],
            r["tracking"]["snapshot_id"],
            r["tracking"]["sequence_number"],
            r["tracking"]["first_row_id"],
        )
        for r in legacy
    ] == [(0, m.added_snapshot_id, m.sequence_number, m.first_row_id) for m in v3_refs]
    assert [r["manifest_info"]["added_files_count"] for r in legacy] == [m.added_files_count for m in v3_refs]
    assert ids(table) == [*before[v3_snapshots[-1]], 50, 51]
    assert {i: v for i, v in lineage(table).items() if i < 50} == lineage_before
    # deletes reach into the legacy manifests (rewritten as v4 leaves) and into the root
    table.delete("id = 1 or id = 50")
    assert ids(table) == [x for x in [*before[v3_snapshots[-1]], 50, 51] if x not in (1, 50)]
    assert {i: v[0] for i, v in lineage(table).items() if i < 50} == {
        i: v[0] for i, v in lineage_before.items() if i != 1
    }
    table.append(rows(60, 1))
    assert ids(table)[-2:] == [51, 60]


def test_v2_table_upgraded_to_v4_gets_row_ids(catalog: Catalog) -> None:
    table = catalog.create_table("db.v2", SCHEMA, properties={"format-version": "2"})
    table.append(rows(0, 4))
    Transaction(table).add(Upgrade(4)).commit()
    table = catalog.load_table("db.v2")
    table.append(rows(4, 2))
    snap = table.current_snapshot()
    assert snap is not None and (snap.first_row_id, snap.added_rows) == (0, 6)
    assert {i: v[0] for i, v in lineage(table).items()} == {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 5}
    assert table.metadata.next_row_id == 6
