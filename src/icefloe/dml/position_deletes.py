"""Write the deletes that remove rows (by position) from planned data files, per format version.

- v2: position delete files (Parquet ``file_path``/``pos``, sorted), one per data file
  (``write.delete.granularity=file``, the default) or one per partition (``partition``);
- v3: deletion vectors in one Puffin file; each merges the file's existing DV and older position
  deletes (one DV per data file), and the superseded DV entries and the position delete files
  that reference only that data file are retired;
- v4: colocated deletion vectors (``RowDelta.added_dvs``), merged the same way with the file's
  colocated DV or its legacy v3 deletes (facts Q16).

Nothing is committed here: the result feeds a ``RowDelta``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, cast

import numpy as np

from icefloe.errors import CorruptMetadata, ValidationError
from icefloe.formats.puffin.files import read_puffin_footer
from icefloe.formats.puffin.roaring64 import PositionBitmap
from icefloe.io.fileio import FileIO, normalize_location
from icefloe.scan.delete_readers import read_dv_positions, read_position_delete_positions
from icefloe.scan.tasks import FileScanTask
from icefloe.spec.content import DataFile, DeletionVectorRef, EntryStatus, FileContent, ManifestEntry
from icefloe.spec.table_metadata import TableMetadata
from icefloe.txn.delete_writer import write_dv_puffin, write_position_deletes

DELETE_GRANULARITY = "write.delete.granularity"


@dataclass
class RowDeletes:
    """Delete files written for a set of data files, not committed yet."""

    added_deletes: list[DataFile] = field(default_factory=list)  # v2 position deletes / v3 DVs
    removed_deletes: list[DataFile] = field(default_factory=list)  # superseded DVs, merged pos deletes
    added_dvs: dict[str, DeletionVectorRef] = field(default_factory=dict)  # v4, by data file path
    written_files: list[str] = field(default_factory=list)  # delete these if the commit fails
    deleted_rows: int = 0  # rows newly deleted (already-deleted rows are not counted)

    @property
    def is_empty(self) -> bool:
        """True when nothing was written (no row newly deleted)."""
        return not (self.added_deletes or self.added_dvs or self.removed_deletes)

    def merge(self, other: RowDeletes) -> RowDeletes:
        """Combine the results of several writers (each data file must appear in one of them only)."""
        mine = _dv_targets(self)
        clash = mine & _dv_targets(other)
        if clash:
            raise ValidationError(
                f"two deletion vectors were written for data file {sorted(clash)[0]}; "
                "each data file must be handled by one writer"
            )
        removed = {f.content_key: f for f in (*self.removed_deletes, *other.removed_deletes)}
        return RowDeletes(
            added_deletes=[*self.added_deletes, *other.added_deletes],
            removed_deletes=list(removed.values()),
            added_dvs={**self.added_dvs, **other.added_dvs},
            written_files=list(dict.fromkeys([*self.written_files, *other.written_files])),
            deleted_rows=self.deleted_rows + other.deleted_rows,
        )

    def removed_entries(self) -> list[ManifestEntry]:
        """``removed_deletes`` as manifest entries (what ``RowDelta.removed_deletes`` takes)."""
        return [ManifestEntry(EntryStatus.EXISTING, None, None, None, f) for f in self.removed_deletes]

    def cleanup(self, io: FileIO) -> None:
        """Delete the written files (after a failed or abandoned commit)."""
        for path in self.written_files:
            io.delete(path, missing_ok=True)


def _dv_targets(deletes: RowDeletes) -> set[str]:
    dvs = {f.referenced_data_file for f in deletes.added_deletes if f.file_format == "puffin"}
    return {p for p in dvs if p is not None} | set(deletes.added_dvs)


@dataclass
class _Target:
    """One data file: its task, the positions to delete now, the positions deleted before."""

    task: FileScanTask
    new: np.ndarray
    existing: np.ndarray


def write_row_deletes(
    io: FileIO,
    md: TableMetadata,
    targets: Sequence[tuple[FileScanTask, Iterable[int] | np.ndarray]],
) -> RowDeletes:
    """For each (task, new positions): write deletes per the table's format version.

    v3/v4 merge with the task's existing deletes (DV and position deletes). Positions already
    deleted are not counted again; a file whose positions are all deleted already gets nothing.
    """
    if md.format_version < 2:
        raise ValidationError(
            "format version 1 tables cannot hold row-level deletes: use copy-on-write "
            "(write.delete.mode / write.update.mode / write.merge.mode) or upgrade the table"
        )
    pending = _collect(io, targets)
    out = RowDeletes(deleted_rows=sum(len(t.new) for t in pending))
    if not pending:
        return out
    try:
        if md.format_version == 2:
            _write_position_deletes(io, md, pending, out)
        else:
            _write_dvs(io, md, pending, out)
    except BaseException:
        out.cleanup(io)
        raise
    return out


def _collect(io: FileIO, targets: Sequence[tuple[FileScanTask, Iterable[int] | np.ndarray]]) -> list[_Target]:
    """Validate positions, combine repeated data files, drop positions deleted already."""
    by_path: dict[str, tuple[FileScanTask, list[np.ndarray]]] = {}
    for task, positions in targets:
        array = _positions_array(positions, task)
        if task.file_path in by_path:
            by_path[task.file_path][1].append(array)
        else:
            by_path[task.file_path] = (task, [array])
    out = []
    for task, arrays in by_path.values():
        wanted = np.unique(np.concatenate(arrays))
        if not len(wanted):
            continue
        existing = existing_deleted_positions(io, task)
        new = np.setdiff1d(wanted, existing, assume_unique=True)
        if len(new):
            out.append(_Target(task, new, existing))
    return out


def _positions_array(positions: Iterable[int] | np.ndarray, task: FileScanTask) -> np.ndarray:
    try:
        array = np.unique(np.asarray(positions if isinstance(positions, np.ndarray) else list(positions)))
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"row positions for {task.file_path} must be integers: {exc}") from None
    if len(array) and not np.issubdtype(array.dtype, np.integer):
        raise ValidationError(f"row positions for {task.file_path} must be integers, not {array.dtype}")
    array = array.astype(np.int64, copy=False)
    count = task.data_file.record_count
    if len(array) and (array[0] < 0 or array[-1] >= count):
        bad = int(array[0] if array[0] < 0 else array[-1])
        raise ValidationError(f"row position {bad} is outside data file {task.file_path} ({count} rows)")
    return array


def existing_deleted_positions(io: FileIO, task: FileScanTask) -> np.ndarray:
    """Positions of the task's file already deleted by its DV or position delete files (sorted)."""
    target = normalize_location(task.file_path)
    chunks = []
    for ref in task.deletes:
        f = ref.delete_file
        if f.content != FileContent.POSITION_DELETES:
            continue
        if f.file_format.lower() == "puffin":
            chunks.append(read_dv_positions(io, f))
        else:
            chunks.append(read_position_delete_positions(io, f, target))
    if not chunks:
        return np.empty(0, dtype=np.int64)
    return np.unique(np.concatenate(chunks).astype(np.int64, copy=False))


def _write_position_deletes(io: FileIO, md: TableMetadata, pending: list[_Target], out: RowDeletes) -> None:
    granularity = md.properties.get(DELETE_GRANULARITY, "file").strip().lower()
    if granularity not in ("file", "partition"):
        raise ValidationError(f"{DELETE_GRANULARITY} must be 'file' or 'partition', not {granularity!r}")
    groups: dict[Any, dict[str, tuple[DataFile, np.ndarray]]] = {}
    for t in pending:
        f = t.task.data_file
        key: Any = (f.spec_id, tuple(f.partition)) if granularity == "partition" else f.file_path
        groups.setdefault(key, {})[f.file_path] = (f, t.new)
    for deletes in groups.values():
        written = write_position_deletes(io, md, deletes)
        out.written_files.append(written.file_path)
        out.added_deletes.append(written)


def _write_dvs(io: FileIO, md: TableMetadata, pending: list[_Target], out: RowDeletes) -> None:
    bitmaps = {t.task.file_path: PositionBitmap(np.union1d(t.existing, t.new)) for t in pending}
    puffin = write_dv_puffin(io, md, bitmaps)
    out.written_files.append(puffin.path)
    retired: dict[tuple[str, int], DataFile] = {}
    for t in pending:
        task = t.task
        if md.format_version >= 4:
            out.added_dvs[task.file_path] = puffin.reference(task.file_path)
        else:
            out.added_deletes.append(puffin.delete_file(task.data_file))
        for f in deletes_only_for(io, md, task):
            retired[f.content_key] = f
    out.removed_deletes.extend(retired.values())


def deletes_only_for(io: FileIO, md: TableMetadata, task: FileScanTask) -> list[DataFile]:
    """The task's delete files that apply to its data file only, safe to retire with it.

    Used when the deletes are merged into a new DV, or when the data file itself is removed.
    v2/v3: position delete files referencing only this file, and its DV. v4: a colocated DV is
    handled by the tree itself; legacy position delete files referencing only the file are
    retired, and a legacy DV only when it is alone in its Puffin file (v4 trees match removals
    by path, and other blobs of a shared Puffin file still apply to other data files).
    """
    if task.data_file.deletion_vector is not None:
        return []  # v4 colocated DV: the REPLACED/MODIFIED pair supersedes it
    target = normalize_location(task.file_path)
    out = []
    for ref in task.deletes:
        f = ref.delete_file
        if f.content != FileContent.POSITION_DELETES or f.referenced_data_file is None:
            continue
        if normalize_location(f.referenced_data_file) != target:
            continue
        if f.file_format.lower() == "puffin" and md.format_version >= 4 and not _alone_in_puffin(io, f):
            continue
        out.append(f)
    return out


def _alone_in_puffin(io: FileIO, dv: DataFile) -> bool:
    try:
        with io.new_input(dv.file_path).open() as stream:
            footer = read_puffin_footer(cast(IO[bytes], stream), dv.file_size_in_bytes, dv.file_path)
    except CorruptMetadata:
        return False
    return len(footer.blobs) == 1
