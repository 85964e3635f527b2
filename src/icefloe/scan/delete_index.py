"""Match delete files to data files during planning, without reading any delete file.

Rules (format/spec.md "Scan Planning"):
- a deletion vector applies to the one data file it references, when data seq <= DV seq;
- a position delete file applies when data seq <= delete seq and spec + partition match
  (a ``referenced_data_file`` narrows it to one file); position delete files are ignored for
  a data file that has a DV;
- an equality delete file applies when data seq < delete seq and either its spec is
  unpartitioned or spec + partition match.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from icefloe.io.fileio import normalize_location
from icefloe.scan.tasks import DeleteFileRef
from icefloe.spec.content import FileContent, ManifestEntry, deletion_vector_file
from icefloe.spec.partitioning import PartitionSpec

_PartitionKey = tuple[int, tuple[Any, ...]]


class _BySequence:
    """Delete refs sorted by data sequence number for fast 'seq >= n' / 'seq > n' lookups."""

    def __init__(self) -> None:
        self._refs: list[DeleteFileRef] = []
        self._seqs: list[int] = []
        self._sorted = True

    def add(self, ref: DeleteFileRef) -> None:
        self._refs.append(ref)
        self._sorted = False

    def _sort(self) -> None:
        if not self._sorted:
            self._refs.sort(key=lambda r: r.data_sequence_number)
            self._seqs = [r.data_sequence_number for r in self._refs]
            self._sorted = True

    def at_or_after(self, seq: int) -> list[DeleteFileRef]:
        self._sort()
        return self._refs[bisect.bisect_left(self._seqs, seq) :]

    def after(self, seq: int) -> list[DeleteFileRef]:
        self._sort()
        return self._refs[bisect.bisect_right(self._seqs, seq) :]


class DeleteIndex:
    """All live delete files of a snapshot, indexed by data file path and by partition."""

    def __init__(self, delete_entries: Iterable[ManifestEntry], specs: dict[int, PartitionSpec]) -> None:
        self._dvs: dict[str, list[DeleteFileRef]] = defaultdict(list)
        self._pos_by_path: dict[str, _BySequence] = defaultdict(_BySequence)
        self._pos_by_partition: dict[_PartitionKey, _BySequence] = defaultdict(_BySequence)
        self._eq_by_partition: dict[_PartitionKey, _BySequence] = defaultdict(_BySequence)
        self._eq_global = _BySequence()
        self._empty = True
        for entry in delete_entries:
            self._add(entry, specs)

    def _add(self, entry: ManifestEntry, specs: dict[int, PartitionSpec]) -> None:
        f = entry.data_file
        ref = DeleteFileRef(f, entry.sequence_number or 0)
        self._empty = False
        key = (f.spec_id, tuple(f.partition))
        if f.content == FileContent.POSITION_DELETES:
            if f.file_format.lower() == "puffin" and f.referenced_data_file:
                self._dvs[normalize_location(f.referenced_data_file)].append(ref)
            elif f.referenced_data_file:
                self._pos_by_path[normalize_location(f.referenced_data_file)].add(ref)
            else:
                self._pos_by_partition[key].add(ref)
        elif f.content == FileContent.EQUALITY_DELETES:
            spec = specs.get(f.spec_id)
            if spec is None or spec.is_unpartitioned:
                self._eq_global.add(ref)
            else:
                self._eq_by_partition[key].add(ref)

    @property
    def is_empty(self) -> bool:
        """True when the snapshot has no delete files at all."""
        return self._empty

    def deletes_for(self, entry: ManifestEntry) -> tuple[DeleteFileRef, ...]:
        """The delete files that apply to one live data entry."""
        if self._empty:  # a v4 colocated DV needs no delete files elsewhere in the snapshot
            return (_colocated_dv(entry),) if entry.data_file.deletion_vector is not None else ()
        f = entry.data_file
        seq = entry.sequence_number or 0
        path = normalize_location(f.file_path)
        key = (f.spec_id, tuple(f.partition))
        out: list[DeleteFileRef] = []
        if f.deletion_vector is not None:
            out.append(_colocated_dv(entry))
        else:
            dvs = [r for r in self._dvs.get(path, ()) if r.data_sequence_number >= seq]
            if dvs:
                out.extend(dvs)
            else:
                if path in self._pos_by_path:
                    out.extend(self._pos_by_path[path].at_or_after(seq))
                if key in self._pos_by_partition:
                    out.extend(self._pos_by_partition[key].at_or_after(seq))
        if key in self._eq_by_partition:
            out.extend(self._eq_by_partition[key].after(seq))
        out.extend(self._eq_global.after(seq))
        return tuple(out)


def _colocated_dv(entry: ManifestEntry) -> DeleteFileRef:
    """A v4 colocated DV seen as a Puffin position-delete file, at the data file's sequence number."""
    f = entry.data_file
    dv = f.deletion_vector
    assert dv is not None
    return DeleteFileRef(deletion_vector_file(f, dv), entry.sequence_number or 0)
