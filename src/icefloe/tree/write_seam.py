"""The write seam: turn a parent snapshot plus a change into the new snapshot's metadata tree.

This module only dispatches on the table's format version: v1–v3 tables get Avro manifests and a
manifest list (:mod:`icefloe.tree.v3_write`), v4 tables one new root manifest with leaves only for
large changes (:mod:`icefloe.tree.v4_write`). The request, change and result types live in
:mod:`icefloe.tree.changes`.
"""

from __future__ import annotations

from icefloe.tree.changes import TreeResult, TreeWriteRequest
from icefloe.tree.v3_write import write_v3_tree
from icefloe.tree.v4_write import write_v4_tree


def write_snapshot_tree(request: TreeWriteRequest) -> TreeResult:
    """Write the metadata tree of a new snapshot; on failure, files already written are deleted."""
    if request.metadata.format_version >= 4:
        return write_v4_tree(request)
    return write_v3_tree(request)
