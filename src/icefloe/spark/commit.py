"""Turn staged data files into the one snapshot producer a Spark write commits.

Shared by ``write_table`` (driver process) and the data source writer's ``commit()`` (which Spark
runs in a separate Python process on the driver).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from icefloe.dml.copy_on_write import plan_copy_on_write
from icefloe.expressions.ast import Expression
from icefloe.expressions.change_filters import change_filter
from icefloe.spec.content import DataFile, FileContent, ManifestEntry
from icefloe.spec.snapshots import MAIN_BRANCH, Operation
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.read_seam import live_entries
from icefloe.txn.producers import AppendFiles, OverwriteFiles, SnapshotProducer, branch_head

if TYPE_CHECKING:
    from icefloe.table.table import Table


def merge_enabled(md: TableMetadata) -> bool:
    """``commit.manifest-merge.enabled`` (default true)."""
    return md.properties.get("commit.manifest-merge.enabled", "true").lower() == "true"


def build_action(
    table: Table,
    files: list[DataFile],
    mode: str,
    overwrite_filter: Expression | str | None = None,
    partition_overwrite: str = "static",
    branch: str = MAIN_BRANCH,
    snapshot_properties: dict[str, str] | None = None,
) -> SnapshotProducer | None:
    """The producer for an append / static overwrite / dynamic partition overwrite (None: no-op)."""
    md = table.metadata
    props = dict(snapshot_properties or {})
    paths = [f.file_path for f in files]
    if mode == "append":
        if not files:
            return None
        return AppendFiles(
            branch=branch,
            snapshot_properties=props,
            owned_files=paths,
            merge_manifests=merge_enabled(md),
            files=list(files),
        )
    base = branch_head(md, branch)
    if partition_overwrite == "dynamic":
        removed = replaced_partitions(table, files, branch)
        conflict: Expression | None = None
        added = list(files)
    else:
        row_filter = change_filter(overwrite_filter, "overwrite", none_means_all=True)
        plan = plan_copy_on_write(table.io, md, base, row_filter)
        removed = plan.removed
        added = plan.added + list(files)
        conflict = row_filter  # also when nothing matched yet: concurrent matching rows conflict
    if not removed and not added:
        return None
    return OverwriteFiles(
        branch=branch,
        snapshot_properties=props,
        owned_files=[f.file_path for f in added],
        operation=Operation.OVERWRITE if removed else Operation.APPEND,
        merge_manifests=merge_enabled(md),
        removed=removed,
        added=added,
        base_snapshot_id=base.snapshot_id if base else None,
        conflict_filter=conflict,
    )


def replaced_partitions(
    table: Table, files: list[DataFile], branch: str = MAIN_BRANCH
) -> list[ManifestEntry]:
    """Live data files in the partitions (of the same spec) that ``files`` write to."""
    md = table.metadata
    base = branch_head(md, branch)
    if base is None or not files:
        return []
    targets: set[tuple[int, tuple[Any, ...]]] = {(f.spec_id, tuple(f.partition)) for f in files}
    return [
        e
        for e in live_entries(table.io, md, base)
        if e.data_file.content == FileContent.DATA
        and (e.data_file.spec_id, tuple(e.data_file.partition)) in targets
    ]
