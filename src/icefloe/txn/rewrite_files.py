"""RewriteFiles: the ``replace`` snapshot of compaction (same rows, different files).

Old data files are removed together with the delete files that only they used; new files are
added, normally with an explicit data sequence number (that of the snapshot the rewrite read), so
equality deletes committed later keep applying to the rewritten rows and older ones do not.

Validation on every commit attempt, against what the snapshots committed since the base did
(``icefloe.txn.validation``, which reads only the manifests those snapshots wrote):

- every rewritten data file and every retired delete file must still be live;
- no position delete or DV for a rewritten file (nor, v4, a change of its colocated DV) may have
  been committed since: those rows would come back. Equality deletes committed since are fine
  while the new files keep the old sequence number (they still apply); without it they conflict;
- the new files may not hold more rows than the removed ones (a rewrite never adds rows).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icefloe.errors import CommitConflict, ValidationError
from icefloe.spec.content import DataFile, FileContent, ManifestEntry
from icefloe.spec.snapshots import Operation, Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.changes import TreeChange, TreeResult
from icefloe.txn import validation
from icefloe.txn.producers import RowLevelProducer
from icefloe.txn.transaction import AttemptContext


@dataclass
class RewriteFiles(RowLevelProducer):
    """Replace live data files (and their now unused delete files) by new files with the same rows."""

    operation: Operation = Operation.REPLACE
    removed_data: list[ManifestEntry] = field(default_factory=list)
    removed_deletes: list[ManifestEntry] = field(default_factory=list)
    added: list[DataFile] = field(default_factory=list)
    # the data sequence number of the added files (None: the new snapshot's)
    data_sequence_number: int | None = None

    def change(self, ctx: AttemptContext, current: TableMetadata, parent: Snapshot | None) -> TreeChange:
        """Check the rewrite still applies to the branch head; describe the replacement."""
        _check_files(current, self.added, self.removed_data, self.removed_deletes)
        history = self._history(ctx, current, parent)
        if not history.is_empty:
            action = self._action()
            removed = [*self.removed_data, *self.removed_deletes]
            validation.check_still_live(history, (e.data_file.content_key for e in removed), action)
            data = [e.data_file for e in self.removed_data]
            validation.check_no_new_deletes(history, (validation.Target.of(f) for f in data), action)
            if self.data_sequence_number is None:
                validation.check_no_new_equality_deletes(history, current, data, action)
        return TreeChange(
            added_data_files=list(self.added),
            removed_entries=[*self.removed_data, *self.removed_deletes],
            added_data_sequence_number=self.data_sequence_number if current.format_version >= 2 else None,
            fail_missing_removals=False,
        )

    def check_written(self, result: TreeResult) -> None:
        """A file the seam did not find live was removed concurrently (v4 records no DELETED row)."""
        found = {e.data_file.content_key for e in result.removed_entries}
        for e in [*self.removed_data, *self.removed_deletes]:
            if e.data_file.content_key not in found:
                raise CommitConflict(
                    f"{self._action()}: {e.data_file.file_path} is no longer live on branch "
                    f"{self.branch!r} (removed by a concurrent commit)",
                    retryable=False,
                )


def _check_files(
    md: TableMetadata, added: list[DataFile], removed: list[ManifestEntry], deletes: list[ManifestEntry]
) -> None:
    if not removed:
        raise ValidationError("a rewrite must remove at least one data file")
    specs = md.specs_by_id()
    for f in added:
        if f.content != FileContent.DATA:
            raise ValidationError(f"{f.file_path} is a delete file; a rewrite adds data files only")
        if f.spec_id not in specs:
            raise ValidationError(f"data file {f.file_path} uses unknown partition spec {f.spec_id}")
    for e in removed:
        if e.data_file.content != FileContent.DATA:
            raise ValidationError(f"{e.data_file.file_path} is not a data file; retire it as a delete file")
    for e in deletes:
        if e.data_file.content == FileContent.DATA:
            raise ValidationError(f"{e.data_file.file_path} is a data file, not a delete file")
    added_rows = sum(f.record_count for f in added)
    removed_rows = sum(e.data_file.record_count for e in removed)
    if added_rows > removed_rows:
        raise ValidationError(
            f"a rewrite cannot add rows: {added_rows} rows added, {removed_rows} rows in removed files"
        )
