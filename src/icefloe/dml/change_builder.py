"""What delete / update / merge share: write modes, the per-file change builder, results, producers.

A row-level operation looks at planned data files one at a time and decides, per file, which rows
go away and which new rows replace them. ``ChangeBuilder`` turns those decisions into files:

- **copy-on-write**: a changed file is removed and its surviving rows are rewritten (same spec and
  partition, lineage kept);
- **merge-on-read**: the removed rows get deletes (v2 position deletes, v3 DVs, v4 colocated DVs,
  see ``row_deletes``) and the file stays.

Replacement and inserted rows are buffered and written partitioned by the default spec. The
result (``RowLevelChange``) becomes one ``OverwriteFiles`` (copy-on-write) or ``RowDelta``
(merge-on-read) snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from icefloe.dml.column_updates import column_updates_enabled, write_column_update
from icefloe.dml.copy_on_write import retired_deletes
from icefloe.dml.position_deletes import RowDeletes, write_row_deletes
from icefloe.dml.row_io import POS_COLUMN, canonical_rows, write_changed_rows, write_survivors
from icefloe.errors import ValidationError
from icefloe.expressions.ast import Expression
from icefloe.io.fileio import FileIO
from icefloe.scan.tasks import FileScanTask
from icefloe.spec.content import ColumnFile, DataFile, FileContent, ManifestEntry
from icefloe.spec.snapshots import Operation, Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.txn.commit_options import DEFAULT_OPTIONS, CommitOptions
from icefloe.txn.producers import OverwriteFiles, RowDelta, SnapshotProducer

COPY_ON_WRITE = "copy-on-write"
MERGE_ON_READ = "merge-on-read"
WRITE_MODES = (COPY_ON_WRITE, MERGE_ON_READ)
_FLUSH_BYTES = 128 * 1024 * 1024  # buffered new rows are written once they hold this many bytes


def write_mode(md: TableMetadata, operation: str, mode: str | None = None) -> str:
    """The write mode of ``delete`` / ``update`` / ``merge``: ``mode``, else ``write.<op>.mode``."""
    key = f"write.{operation}.mode"
    chosen = (mode if mode is not None else md.properties.get(key, COPY_ON_WRITE)).strip().lower()
    if chosen not in WRITE_MODES:
        where = "mode" if mode is not None else key
        raise ValidationError(f"{where} must be 'copy-on-write' or 'merge-on-read', not {chosen!r}")
    if chosen == MERGE_ON_READ and md.format_version < 2:
        raise ValidationError(
            f"merge-on-read {operation} needs format version 2 or later (this table is v1); "
            f"use copy-on-write or upgrade the table"
        )
    return chosen


@dataclass
class RowLevelResult:
    """What a delete / update / merge did (``snapshot_id`` is set once it is committed)."""

    operation: str
    mode: str
    deleted_rows: int = 0
    updated_rows: int = 0
    inserted_rows: int = 0
    data_files_added: int = 0
    data_files_removed: int = 0
    delete_files_added: int = 0
    delete_files_removed: int = 0
    files_written: list[str] = field(default_factory=list)
    snapshot_id: int | None = None

    @property
    def changed(self) -> bool:
        """False when nothing matched: no snapshot is committed."""
        return bool(self.deleted_rows or self.updated_rows or self.inserted_rows)


@dataclass
class RowLevelChange:
    """Files written for one row-level operation, ready to become a snapshot producer."""

    operation: str
    mode: str
    removed: list[ManifestEntry] = field(default_factory=list)  # copy-on-write: rewritten / dropped
    added: list[DataFile] = field(default_factory=list)
    deletes: RowDeletes = field(default_factory=RowDeletes)
    deleted_rows: int = 0
    updated_rows: int = 0
    inserted_rows: int = 0
    base_snapshot_id: int | None = None
    conflict_filter: Expression | None = None
    case_sensitive: bool = True  # how the conflict filter's column names bind at commit time
    delete_targets: list[DataFile] = field(default_factory=list)  # merge-on-read: files given deletes
    column_files: dict[str, ColumnFile] = field(default_factory=dict)  # v4 column updates by data file

    @classmethod
    def reading(
        cls,
        operation: str,
        mode: str,
        snapshot: Snapshot | None,
        conflict_filter: Expression,
        case_sensitive: bool,
    ) -> RowLevelChange:
        """An empty change computed from ``snapshot`` (None: an empty table), validated at commit
        against concurrent changes to the rows ``conflict_filter`` selects."""
        return cls(
            operation,
            mode,
            base_snapshot_id=snapshot.snapshot_id if snapshot else None,
            conflict_filter=conflict_filter,
            case_sensitive=case_sensitive,
        )

    @property
    def is_empty(self) -> bool:
        """True when the operation changes nothing (nothing to commit)."""
        return not (self.removed or self.added or self.column_files or not self.deletes.is_empty)

    @property
    def written_files(self) -> list[str]:
        """Every file written (deleted again when the commit fails)."""
        columns = [cf.location for cf in self.column_files.values()]
        return [f.file_path for f in self.added] + list(self.deletes.written_files) + columns

    def result(self) -> RowLevelResult:
        """The user-facing summary."""
        return RowLevelResult(
            operation=self.operation,
            mode=self.mode,
            deleted_rows=self.deleted_rows,
            updated_rows=self.updated_rows,
            inserted_rows=self.inserted_rows,
            data_files_added=len(self.added),
            data_files_removed=sum(1 for e in self.removed if e.data_file.content == FileContent.DATA),
            delete_files_added=len(self.deletes.added_deletes) + len(self.deletes.added_dvs),
            delete_files_removed=len(self.deletes.removed_deletes)
            + sum(1 for e in self.removed if e.data_file.content != FileContent.DATA),
            files_written=self.written_files,
        )

    def producer(
        self, md: TableMetadata, options: CommitOptions = DEFAULT_OPTIONS, merge_manifests: bool = True
    ) -> SnapshotProducer | None:
        """One ``OverwriteFiles`` (copy-on-write) or ``RowDelta`` (merge-on-read); None when empty."""
        if self.is_empty:
            return None
        common: dict[str, Any] = {
            "branch": options.branch,
            "snapshot_properties": options.properties,
            "owned_files": self.written_files,
            "merge_manifests": merge_manifests,
            "base_snapshot_id": self.base_snapshot_id,
            "conflict_filter": self.conflict_filter,
            "isolation_level": options.isolation_for(md, self.operation),
            "case_sensitive": self.case_sensitive,
        }
        if self.deletes.is_empty and not self.column_files:
            if self.removed:
                operation = Operation.OVERWRITE if self.added else Operation.DELETE
            else:
                operation = Operation.APPEND
            return OverwriteFiles(operation=operation, removed=self.removed, added=self.added, **common)
        if self.removed:
            raise AssertionError("a merge-on-read change cannot also remove data files")
        return RowDelta(
            added_data=self.added,
            added_deletes=self.deletes.added_deletes,
            removed_deletes=self.deletes.removed_entries(),
            added_dvs=self.deletes.added_dvs,
            added_column_files=dict(self.column_files),
            target_files=list(self.delete_targets),
            **common,
        )


def row_mask(rows: pa.Table, condition: pc.Expression) -> np.ndarray:
    """A boolean per row: where ``condition`` holds (null counts as false, as in SQL WHERE)."""
    if rows.num_rows == 0:
        return np.zeros(0, dtype=bool)
    try:
        result = ds.dataset(rows).to_table(columns={"__mask": condition}).column("__mask")
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError) as exc:
        raise ValidationError(f"cannot evaluate condition {condition}: {exc}") from None
    if not pa.types.is_boolean(result.type):
        raise ValidationError(f"condition {condition} is not boolean (it gives {result.type})")
    return np.asarray(result.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)


class ChangeBuilder:
    """Collects per-file decisions of one operation and writes the files (cleaned up on failure)."""

    def __init__(self, io: FileIO, md: TableMetadata, change: RowLevelChange) -> None:
        self.io = io
        self.md = md
        self.change = change
        self._targets: list[tuple[FileScanTask, np.ndarray]] = []
        self._buffer: list[pa.Table] = []
        self._buffered_bytes = 0
        self._finished = False

    @property
    def copy_on_write(self) -> bool:
        """Whether changed files are rewritten (else they get deletes)."""
        return self.change.mode == COPY_ON_WRITE

    def drop_file(self, task: FileScanTask, live_rows: int) -> None:
        """Every live row of the file goes (known without reading it)."""
        self.change.deleted_rows += live_rows
        if self.copy_on_write:
            self.change.removed.append(task.entry)
            self.change.removed.extend(retired_deletes(self.io, self.md, task))
        else:
            self._targets.append((task, np.arange(task.data_file.record_count, dtype=np.int64)))

    def change_file(self, task: FileScanTask, rows: pa.Table, removed: pa.Array | np.ndarray) -> None:
        """Remove the rows of ``rows`` (from ``read_for_change``) where ``removed`` is true."""
        mask = np.asarray(removed, dtype=bool)
        if not mask.any():
            return
        if self.copy_on_write:
            self.change.removed.append(task.entry)
            self.change.removed.extend(retired_deletes(self.io, self.md, task))
            survivors = rows.filter(pa.array(~mask))
            if survivors.num_rows:
                self.change.added.append(write_survivors(self.io, self.md, task, survivors))
        else:
            positions = rows.column(POS_COLUMN).to_numpy()[mask]
            self._targets.append((task, positions))

    def delete_positions(self, task: FileScanTask, positions: np.ndarray) -> None:
        """Merge-on-read: delete these positions of the file (copy-on-write callers use change_file)."""
        if len(positions):
            self._targets.append((task, positions))

    def update_rows(
        self,
        task: FileScanTask,
        rows: pa.Table,
        mask: np.ndarray,
        updated: pa.Table,
        field_ids: tuple[int, ...],
        deleted: np.ndarray | None = None,
    ) -> None:
        """Give the rows of ``rows`` where ``mask`` holds the values in ``updated``; remove the rows
        where ``deleted`` holds (call once per file).

        v4 tables with column updates on write a column file of the changed top-level columns
        ``field_ids`` when the policy allows (:mod:`icefloe.dml.column_updates`); otherwise the old
        versions go (a DV, or a rewrite) and ``updated`` is written as new rows.
        """
        gone = np.zeros(rows.num_rows, dtype=bool) if deleted is None else np.asarray(deleted, dtype=bool)
        if mask.any() and self.column_updates and task.file_path not in self.change.column_files:
            column_file = write_column_update(self.io, self.md, task, updated, field_ids, current_rows=rows)
            if column_file is not None:
                self.change.column_files[task.file_path] = column_file
                self.change.delete_targets.append(task.data_file)
                self.change_file(task, rows, gone)
                return
        self.add_rows(updated)
        self.change_file(task, rows, gone | mask)

    @property
    def column_updates(self) -> bool:
        """Whether updates may write v4 column files."""
        return column_updates_enabled(self.md, not self.copy_on_write)

    def add_rows(self, rows: pa.Table) -> None:
        """Buffer new rows (replacements or inserts; lineage columns as they should be written)."""
        if rows.num_rows == 0:
            return
        rows = canonical_rows(self.md, rows)  # fails now (bad types, nulls) rather than at flush
        self._buffer.append(rows)
        self._buffered_bytes += rows.nbytes
        if self._buffered_bytes >= _FLUSH_BYTES:
            self._flush()

    def _flush(self) -> None:
        if not self._buffer:
            return
        rows = pa.concat_tables(self._buffer)
        self._buffer, self._buffered_bytes = [], 0
        self.change.added.extend(write_changed_rows(self.io, self.md, rows))

    def finish(self) -> RowLevelChange:
        """Write what is buffered and the deletes; returns the change."""
        self._flush()
        if self._targets:
            deletes = write_row_deletes(self.io, self.md, self._targets)
            self.change.deletes = self.change.deletes.merge(deletes)
            self.change.delete_targets.extend(task.data_file for task, _ in self._targets)
        self._finished = True
        return self.change

    def abort(self) -> None:
        """Delete every file written so far."""
        for path in self.change.written_files:
            self.io.delete(path, missing_ok=True)
        self.change.added.clear()
        self.change.deletes = RowDeletes()
