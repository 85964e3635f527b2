"""The columnar planner on v4 trees must plan exactly what the object planner plans.

Random v4 trees written by hand with the byte layer: Parquet leaves mixing partition specs
(partition evolution), every entry status, inherited and explicit tracking values, manifest DVs
hiding leaf rows, colocated deletion vectors, equality-delete leaves, inline root entries and a
legacy Avro manifest referenced from the root. Both paths run unfiltered and with random filters;
tasks are compared field by field with the planning statistics (``plan_both``).
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path
from typing import Any

import pytest

from icefloe.expressions import ast
from icefloe.formats.avro import columnar as ac
from icefloe.formats.avro.manifest import write_manifest
from icefloe.formats.v4 import mumbling
from icefloe.formats.v4.content_entry import ContentRow, write_content_entries
from icefloe.io.fileio import FileIO
from icefloe.scan.planner import PlanStats, plan_files
from icefloe.spec.content import (
    DataFile,
    DeletionVectorRef,
    EntryStatus,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.sort_order import UNSORTED
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.read_seam import manifest_refs, read_live_columns
from icefloe.tree.v4_leaf_columns import LeafColumns
from tests.scan.test_columnar_planning import (
    COLUMNS,
    FID,
    SCHEMA,
    SPECS,
    metrics,
    partition_of,
    plan_both,
    random_filter,
)

pytestmark = pytest.mark.skipif(not ac.decoder_available(), reason="DataFusion is not installed")

E = EntryStatus
SNAPSHOT_ID, SEQ = 77, 9


def _v4_metrics(rng: random.Random, rows: int) -> dict[str, Any]:
    """``metrics`` without the bounds v4 stats cannot hold (a long column's 4-byte legacy bound)."""
    out = metrics(rng, rows)
    for key in ("lower_bounds", "upper_bounds"):
        bounds = out[key]
        if bounds is not None and len(bounds.get(FID["id"], b"12345678")) != 8:
            del bounds[FID["id"]]
    return out


class RandomV4Table:
    """A random v4 snapshot: a root with leaf references (some under an MDV) and inline entries."""

    def __init__(self, tmp_path: Path, seed: int) -> None:
        self.rng = rng = random.Random(seed)
        self.io = FileIO()
        self.root = tmp_path / f"v4_{seed}"
        (self.root / "metadata").mkdir(parents=True)
        self.md = TableMetadata(
            format_version=4,
            table_uuid=str(uuid.UUID(int=1000 + seed)),
            location=f"file://{self.root}",
            last_updated_ms=0,
            last_column_id=len(COLUMNS),
            schemas=(SCHEMA,),
            current_schema_id=0,
            partition_specs=tuple(SPECS),
            default_spec_id=0,
            last_partition_id=max(pf.field_id for s in SPECS for pf in s.fields),
            sort_orders=(UNSORTED,),
            default_sort_order_id=0,
            properties={},
            next_row_id=0,
        )
        self.count = 0
        rows: list[ContentRow] = [self._data_leaf(i) for i in range(rng.randint(2, 6))]
        rows += [self._delete_leaf(i) for i in range(rng.randint(1, 2))]
        if rng.random() < 0.6:
            rows.append(self._legacy_manifest())
        rows += [self._entry(self._file(FileContent.DATA), inline=True) for _ in range(rng.randint(0, 6))]
        for _ in range(rng.randint(0, 2)):
            rows.append(self._entry(self._file(FileContent.EQUALITY_DELETES), inline=True))
        path = self.root / "metadata" / "root.parquet"
        write_content_entries(
            str(path),
            rows,
            table_schema=SCHEMA,
            specs=SPECS,
            kind="root",
            snapshot_id=SNAPSHOT_ID,
            sequence_number=SEQ,
        )
        self.snapshot = Snapshot(
            snapshot_id=SNAPSHOT_ID,
            timestamp_ms=0,
            sequence_number=SEQ,
            root_manifest=f"file://{path}",
            first_row_id=0,
            added_rows=0,
        )
        self.md = self.md.with_changes(
            snapshots=(self.snapshot,), current_snapshot_id=SNAPSHOT_ID, last_sequence_number=SEQ
        )

    def _file(self, content: FileContent, spec_id: int | None = None) -> DataFile:
        rng = self.rng
        spec = SPECS[spec_id] if spec_id is not None else rng.choice(SPECS)
        rows = rng.choice([1, 5, 10, 50])
        self.count += 1
        extra: dict[str, Any] = {}
        if content == FileContent.EQUALITY_DELETES:
            extra["equality_ids"] = (FID["id"],)
        elif rng.random() < 0.3:
            extra["first_row_id"] = rng.randint(0, 10_000)
        if content == FileContent.DATA and rng.random() < 0.25:
            dv_path = f"{self.md.location}/data/dv-{self.count}.puffin"
            extra["deletion_vector"] = DeletionVectorRef(dv_path, 4, 40, 2)
        return DataFile(
            file_path=f"{self.md.location}/data/{content.name.lower()}-{self.count}.parquet",
            file_format="parquet",
            record_count=rows,
            file_size_in_bytes=rng.randint(1, 10_000),
            content=content,
            spec_id=spec.spec_id,
            partition=partition_of(rng, spec),
            split_offsets=(4,) if rng.random() < 0.5 else None,
            sort_order_id=0 if rng.random() < 0.5 else None,
            **_v4_metrics(rng, rows),
            **extra,
        )

    def _entry(self, df: DataFile, inline: bool = False) -> ManifestEntry:
        rng = self.rng
        statuses = [E.ADDED, E.ADDED, E.EXISTING, E.MODIFIED, E.DELETED, E.REPLACED]
        status = rng.choice(statuses)
        inherited = not inline and status == E.ADDED and rng.random() < 0.8
        sid = None if inherited or (not inline and rng.random() < 0.1) else rng.randint(1, 40)
        seq = None if inherited else rng.randint(1, 8)
        fseq = None if seq is None else seq + rng.randint(0, 1)
        dv_sid = None if df.deletion_vector is None else rng.randint(1, 40)  # the writer wants both or none
        if inline and df.content == FileContent.DATA and df.first_row_id is None:
            df = df.with_changes(first_row_id=rng.randint(0, 10_000))
        return ManifestEntry(status, sid, seq, fseq, df, dv_sid)

    def _leaf(self, name: str, entries: list[ManifestEntry], content: ManifestContent) -> ManifestFile:
        rng = self.rng
        path = self.root / "metadata" / name
        write_content_entries(str(path), entries, table_schema=SCHEMA, specs=SPECS, kind="leaf")
        masked = sorted(rng.sample(range(len(entries)), rng.randint(0, len(entries) // 2)))
        mdv = mumbling.encode(masked) if masked and rng.random() < 0.7 else None
        counts = {s: sum(1 for e in entries if e.status == s) for s in E}
        return ManifestFile(
            manifest_path=f"file://{path}",
            manifest_length=path.stat().st_size,
            partition_spec_id=entries[0].data_file.spec_id if rng.random() < 0.5 else -1,
            content=content,
            sequence_number=rng.randint(1, SEQ),
            min_sequence_number=1,
            added_snapshot_id=rng.randint(1, 40),
            added_files_count=counts[E.ADDED],
            existing_files_count=counts[E.EXISTING],
            deleted_files_count=counts[E.DELETED],
            added_rows_count=0,
            existing_rows_count=0,
            deleted_rows_count=0,
            first_row_id=rng.randint(0, 5_000) if content == ManifestContent.DATA else None,
            format_version=4,
            status=rng.choice([E.EXISTING, E.ADDED, E.MODIFIED]),
            modified_files_count=counts[E.MODIFIED],
            record_count=len(entries),
            mdv=mdv,
            dv_snapshot_id=rng.randint(1, 40) if mdv else None,
        )

    def _data_leaf(self, i: int) -> ManifestFile:
        spec_ids = [s.spec_id for s in self.rng.sample(SPECS, self.rng.randint(1, 3))]  # mixed specs
        count = self.rng.randint(1, 40)
        files = [self._file(FileContent.DATA, self.rng.choice(spec_ids)) for _ in range(count)]
        return self._leaf(f"data-{i}.parquet", [self._entry(f) for f in files], ManifestContent.DATA)

    def _delete_leaf(self, i: int) -> ManifestFile:
        files = [self._file(FileContent.EQUALITY_DELETES) for _ in range(self.rng.randint(1, 10))]
        return self._leaf(f"deletes-{i}.parquet", [self._entry(f) for f in files], ManifestContent.DELETES)

    def _legacy_manifest(self) -> ManifestFile:
        """A v2 Avro manifest left over from before an upgrade (``format_version`` 0 in the root)."""
        spec = self.rng.choice(SPECS)
        files = [
            self._file(FileContent.DATA, spec.spec_id).with_changes(deletion_vector=None)
            for _ in range(self.rng.randint(1, 15))
        ]
        statuses = [E.ADDED, E.EXISTING, E.DELETED]
        entries = [ManifestEntry(self.rng.choice(statuses), None, None, None, f) for f in files]
        path = self.root / "metadata" / "legacy.avro"
        with open(path, "wb") as out:
            m = write_manifest(out, entries, spec, SCHEMA, 2, ManifestContent.DATA, 5, path=str(path))
        return m.with_changes(
            manifest_path=f"file://{path}",
            added_snapshot_id=5,
            sequence_number=3,
            format_version=0,
            first_row_id=self.rng.randint(0, 100),
        )


@pytest.mark.parametrize("seed", range(8))
def test_random_v4_trees_plan_alike(tmp_path: Path, seed: int) -> None:
    table = RandomV4Table(tmp_path, seed)
    rng = random.Random(seed * 11 + 4)
    tasks, stats = plan_both(table.io, table.md, table.snapshot, None, SCHEMA)
    assert stats.manifests_columnar > 0
    assert len(tasks) == stats.files_considered
    selected = 0
    for _ in range(25):
        got, _ = plan_both(table.io, table.md, table.snapshot, random_filter(rng), SCHEMA)
        selected += len(got) < len(tasks)
    assert selected > 0


def test_the_random_trees_cover_what_the_comparison_is_about(tmp_path: Path) -> None:
    seen: set[str] = set()
    for seed in range(8):
        table = RandomV4Table(tmp_path, seed)
        refs = manifest_refs(table.io, table.md, table.snapshot)
        seen |= {"mdv"} if any(r.mdv for r in refs) else set()
        seen |= {"inline"} if any(r.manifest_path == table.snapshot.root_manifest for r in refs) else set()
        seen |= {"legacy"} if any(r.format_version == 0 for r in refs) else set()
        for t in plan_files(table.io, table.md, table.snapshot, None, columnar=True):
            seen |= {"eq-deletes"} if t.deletes else set()
            seen |= {"dv"} if t.data_file.deletion_vector is not None else set()
            seen |= {"modified"} if t.entry.status == E.MODIFIED else set()
            seen |= {f"spec{t.data_file.spec_id}"}
        for r in refs:
            if r.format_version >= 4 and r.manifest_path != table.snapshot.root_manifest:
                cols = read_live_columns(table.io, table.md, r)
                assert isinstance(cols, LeafColumns)
                live = cols.live_mask()
                assert live is not None
                if len({s for s, _ in cols.spec_groups(live.nonzero()[0])}) > 1:
                    seen.add("mixed-specs")
    assert seen >= {"mdv", "inline", "legacy", "eq-deletes", "dv", "modified", "mixed-specs"}
    assert seen >= {f"spec{s.spec_id}" for s in SPECS}


def test_leaves_are_pruned_before_objects_are_built(tmp_path: Path) -> None:
    table = RandomV4Table(tmp_path, 3)
    everything = plan_files(table.io, table.md, table.snapshot, None)
    target = everything[len(everything) // 2].data_file
    row_filter = ast.EqualTo("i", target.partition[0]) if target.spec_id == 0 else ast.IsNull("s")
    stats = PlanStats()
    got = plan_files(table.io, table.md, table.snapshot, row_filter, stats=stats)
    assert stats.manifests_columnar > 0 and stats.manifests_fallback > 0  # inline entries as objects
    assert len(got) < len(everything)
    plan_both(table.io, table.md, table.snapshot, row_filter, SCHEMA)
