"""``rewrite_manifests`` on a format version 4 table: the root's inline entries and its small leaves
re-packed into leaves, by the write seam's own compaction.

A v4 root holds small changes inline and references leaf manifests; its compaction
(``tree.v4_write``, ``write.v4.compaction.*``) merges small leaves of one size tier as commits go.
This rewrite is one ``replace`` snapshot that adds and removes no file, written with overrides of
that policy for its commit only: ``write.v4.root.max-inline-entries=0`` (every root-level entry
moves into a leaf), ``write.v4.compaction.full=true`` (every small leaf is merged, whatever its
tier) and compaction enabled. Entries keep their snapshot ids, sequence numbers and first row ids.

Counted as Iceberg counts manifests: *rewritten* are the parent's manifests the new root no longer
references (merged leaves, and the root's inline entries when it had any, counted as one manifest
per content as ``manifest_refs`` lists them); *added* are the new leaves.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from icefloe.errors import ValidationError
from icefloe.spec.content import ManifestFile
from icefloe.spec.snapshots import Operation, Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.changes import TreeChange, TreeResult, TreeWriteRequest
from icefloe.tree.read_seam import manifest_refs
from icefloe.tree.v4_policy import COMPACTION_ENABLED, COMPACTION_FULL, ROOT_MAX_INLINE_ENTRIES
from icefloe.txn.handle import TableHandle, commit_action
from icefloe.txn.producers import SnapshotProducer, branch_head
from icefloe.txn.transaction import AttemptContext

REPACK = {ROOT_MAX_INLINE_ENTRIES: "0", COMPACTION_ENABLED: "true", COMPACTION_FULL: "true"}


@dataclass
class RepackLeaves(SnapshotProducer):
    """A ``replace`` snapshot of a v4 table whose root carries no inline entry and few small leaves."""

    operation: Operation = Operation.REPLACE
    rewritten: list[ManifestFile] = field(default_factory=list)
    added: list[ManifestFile] = field(default_factory=list)

    def change(self, ctx: AttemptContext, current: TableMetadata, parent: Snapshot | None) -> TreeChange:
        """No file is added or removed."""
        if parent is None:
            raise ValidationError("rewrite_manifests: the branch has no snapshot")
        return TreeChange()

    def write_tree(self, ctx: AttemptContext, request: TreeWriteRequest) -> TreeResult:
        """The write seam with the re-packing overrides; records what it replaced and added."""
        assert request.parent is not None
        before = manifest_refs(request.io, request.metadata, request.parent)
        result = super().write_tree(
            ctx, replace(request, properties={**(request.properties or {}), **REPACK})
        )
        kept = {m.manifest_path for m in result.manifests}
        previous = {m.manifest_path for m in before}
        self.rewritten = [m for m in before if m.manifest_path not in kept]
        self.added = [m for m in result.manifests if m.manifest_path not in previous]
        return result


def repack_leaves(table: TableHandle, branch: str) -> tuple[int, int]:
    """Re-pack ``branch``'s head; (manifests rewritten, manifests added), (0, 0) with nothing to do
    (no inline entry and at most one leaf), when nothing is committed."""
    md = table.metadata
    head = branch_head(md, branch)
    if head is None:
        return 0, 0
    refs = manifest_refs(table.io, md, head)
    inline = [m for m in refs if m.manifest_path == head.root_manifest]
    if not inline and len(refs) <= 1:
        return 0, 0
    producer = RepackLeaves(branch=branch)
    commit_action(table, producer)
    return len(producer.rewritten), len(producer.added)
