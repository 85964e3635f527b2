"""Remove every live file of a branch in one ``delete`` snapshot: SQL's ``TRUNCATE TABLE``.

Iceberg's Spark runtime truncates with ``DeleteFiles.deleteFromRowFilter(alwaysTrue())``: a
metadata-only commit that drops every live data file and delete file, reads and writes no data
file, and records the removals in the summary (``deleted-data-files``, ``deleted-records``,
``removed-delete-files`` ..., ``total-records`` 0). What is live is read again on every commit
attempt, so a concurrent append that lands first is truncated as well, as Java's row-filter delete
re-evaluates its filter on retry. A branch with nothing live (an empty table) still gets its
snapshot: Java's ``DeleteFiles`` has no "nothing changed" short cut either.
"""

from __future__ import annotations

from dataclasses import dataclass

from icefloe.spec.snapshots import Operation, Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.changes import TreeChange
from icefloe.tree.read_seam import live_entries
from icefloe.txn.producers import SnapshotProducer
from icefloe.txn.transaction import AttemptContext


@dataclass
class TruncateFiles(SnapshotProducer):
    """A ``delete`` snapshot on ``branch`` that removes every entry live at its head."""

    operation: Operation = Operation.DELETE

    def change(self, ctx: AttemptContext, current: TableMetadata, parent: Snapshot | None) -> TreeChange:
        """Every live data and delete entry of the branch head, as it is at this attempt."""
        removed = [] if parent is None else list(live_entries(ctx.io, current, parent))
        return TreeChange(removed_entries=removed)
