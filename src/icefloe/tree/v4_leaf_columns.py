"""A v4 Parquet leaf as columns for scan planning: inheritance and the manifest DV applied column-wise.

``v4_read.live_leaf_entries`` builds an object for every live row of a leaf and then applies
inheritance row by row. Planning usually keeps a small part of a leaf (or, unfiltered, needs
every row built once and only once), so :class:`LeafColumns` keeps the leaf as the Arrow table
``read_content_entries`` returns, resolves the inherited tracking values as whole columns (the
rules of ``v4_read``: snapshot id, sequence numbers for ADDED rows, first row ids counted over
non-deleted DATA rows, a colocated DV's snapshot id), computes liveness (live status and not set
in the reference's manifest DV), and builds ``ManifestEntry`` objects only for the rows the
planner selects. It implements :class:`icefloe.tree.entry_columns.EntryColumns`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.formats.v4 import content_entry_schema as ce
from icefloe.formats.v4.content_entry_schema import POS_COLUMN
from icefloe.formats.v4.content_stats import LOWER_BOUND, UPPER_BOUND, StatsLayout, stats_struct_id
from icefloe.spec.content import EntryStatus, FileContent, ManifestContent, ManifestEntry, ManifestFile
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.types import IcebergType
from icefloe.tree.v4_columnar import decode_leaf_rows, partition_values, struct_members, top_columns

_LIVE = np.array([int(s) for s in EntryStatus if s.is_live], dtype=np.int64)
_LEAF_CONTENTS = np.array([int(FileContent.DATA), int(FileContent.EQUALITY_DELETES)], dtype=np.int64)
_INT64 = pa.int64()


def _int_numpy(arr: pa.Array | None, n: int, fill: int) -> np.ndarray:
    if arr is None:
        return np.full(n, fill, dtype=np.int64)
    return cast(np.ndarray, pc.fill_null(arr, fill).to_numpy(zero_copy_only=False)).astype(np.int64)


class _SpecPartition:
    """The partition columns of one spec inside a leaf's union partition struct."""

    def __init__(
        self,
        num_rows: int,
        spec: PartitionSpec,
        members: Mapping[int, pa.Array],
        types: Mapping[int, IcebergType],
    ) -> None:
        self.num_rows = num_rows
        self.types = types
        self.field_ids = tuple(f.field_id for f in spec.fields)
        self.partition: tuple[pa.Array | None, ...] = tuple(members.get(fid) for fid in self.field_ids)

    def partition_values(self, rows: np.ndarray | None = None) -> list[tuple[Any, ...]]:
        """Partition tuples (spec order, internal values), as ``decode_leaf_rows`` builds them."""
        n = self.num_rows if rows is None else len(rows)
        if not self.partition:
            return [()] * n
        columns = []
        for fid, arr in zip(self.field_ids, self.partition, strict=True):
            if arr is None:
                columns.append([None] * n)
                continue
            columns.append(partition_values(arr if rows is None else arr.take(rows), fid, self.types))
        return list(zip(*columns, strict=True))


class LeafColumns:
    """One v4 leaf's rows as Arrow columns with inheritance resolved (see the module docstring)."""

    def __init__(
        self,
        table: pa.Table,
        ref: ManifestFile,
        specs: Mapping[int, PartitionSpec],
        layout: StatsLayout,
        masked: Collection[int],
        partition_types: Mapping[int, IcebergType],
    ) -> None:
        self.location = ref.manifest_path
        self.num_rows = n = table.num_rows
        self._table = table
        self._specs = specs
        self._layout = layout
        self._masked = masked
        self._partition_types = partition_types
        self._top = top = top_columns(table)
        tracking = struct_members(top.get(ce.TRACKING))
        self._status = _int_numpy(tracking.get(ce.STATUS), n, -1)
        self._tracking = self._inherited(tracking, ref, n)

    def _inherited(self, tracking: dict[int, pa.Array], ref: ManifestFile, n: int) -> dict[int, pa.Array]:
        """The tracking members after inheritance from the reference (facts §5.4, Q6)."""
        added = pa.array(self._status == int(EntryStatus.ADDED))
        sid = pc.fill_null(_member(tracking, ce.SNAPSHOT_ID, n), pa.scalar(ref.added_snapshot_id, _INT64))
        out = {ce.SNAPSHOT_ID: sid}
        for fid in (ce.SEQUENCE_NUMBER, ce.FILE_SEQUENCE_NUMBER):
            arr = _member(tracking, fid, n)
            fill = pc.and_(pc.is_null(arr), added)
            out[fid] = pc.if_else(fill, pa.scalar(ref.sequence_number, _INT64), arr)
        base = ref.first_row_id if ref.content == ManifestContent.DATA else None
        frid = _member(tracking, ce.FIRST_ROW_ID, n)
        if base is not None and frid.null_count:
            assign = (
                (self.contents() == int(FileContent.DATA))
                & (self._status != int(EntryStatus.DELETED))
                & ~frid.is_valid().to_numpy(zero_copy_only=False)
            )
            if assign.any():
                counts = np.where(assign, self.record_counts(), 0)
                before = np.cumsum(counts) - counts + base
                frid = pc.if_else(pa.array(assign), pa.array(before, _INT64), frid)
        out[ce.FIRST_ROW_ID] = frid
        dv_sid = _member(tracking, ce.DV_SNAPSHOT_ID, n)
        dv = self._top.get(ce.DELETION_VECTOR)
        if dv is not None and dv.null_count < n and dv_sid.null_count:
            out[ce.DV_SNAPSHOT_ID] = pc.if_else(pc.and_(pc.is_null(dv_sid), dv.is_valid()), sid, dv_sid)
        cf_sid = _member(tracking, ce.LATEST_COLUMN_FILE_SNAPSHOT_ID, n)
        cfs = self._top.get(ce.COLUMN_FILES)
        if cfs is not None and cfs.null_count < n and cf_sid.null_count:
            inherit = pc.and_(pc.is_null(cf_sid), cfs.is_valid())
            out[ce.LATEST_COLUMN_FILE_SNAPSHOT_ID] = pc.if_else(inherit, sid, cf_sid)
        return out

    # -- EntryColumns ---------------------------------------------------------------------------

    def live_mask(self) -> np.ndarray | None:
        """Live status and not hidden by the manifest DV; None when a live row has a non-leaf content."""
        live = np.isin(self._status, _LIVE)
        if self._masked:
            positions = self._positions()
            live &= ~np.isin(positions, np.fromiter(self._masked, dtype=np.int64, count=len(self._masked)))
        if not np.isin(self.contents()[live], _LEAF_CONTENTS).all():
            return None  # the object path reports the corrupt row
        if live.any() and self._unknown_specs(np.flatnonzero(live)):
            return None
        return cast(np.ndarray, live)

    def contents(self) -> np.ndarray:
        """``content_type`` of every row."""
        return _int_numpy(self._top.get(ce.CONTENT_TYPE), self.num_rows, -1)

    def record_counts(self) -> np.ndarray:
        """Record count of every row (nulls as 0)."""
        return _int_numpy(self._top.get(ce.RECORD_COUNT), self.num_rows, 0)

    def spec_groups(self, rows: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """``rows`` by partition spec id (a null spec id is the unpartitioned spec, as when decoding)."""
        ids = self._spec_ids()[rows]
        if len(ids) and (ids == ids[0]).all():
            return [(int(ids[0]), rows)]
        return [(int(s), rows[ids == s]) for s in np.unique(ids)]

    def for_spec(self, spec_id: int) -> _SpecPartition:
        """The partition columns of ``spec_id`` over all rows of the leaf."""
        members = struct_members(self._top.get(ce.PARTITION))
        return _SpecPartition(self.num_rows, self._specs[spec_id], members, self._partition_types)

    def integer_bounds(self, field_id: int, width: int, upper: bool) -> tuple[np.ndarray, np.ndarray] | None:
        """A column's typed lower / upper bound from ``content_stats`` as int64 (None: not integer-like)."""
        n = self.num_rows
        base = stats_struct_id(field_id)
        where = self._layout.columns.get(field_id)
        if base is None or where is None or where[0] != base:
            return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
        stats = struct_members(self._top.get(ce.CONTENT_STATS)).get(base)
        member = struct_members(stats).get(base + (UPPER_BOUND if upper else LOWER_BOUND))
        if member is None:
            return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
        t = member.type
        if pa.types.is_date32(t) or pa.types.is_int32(t):
            bits = 32
        elif pa.types.is_int64(t) or pa.types.is_time64(t) or pa.types.is_timestamp(t):
            bits = 64
        else:
            return None
        if bits != width * 8:
            return None  # another encoding than the predicate's type: let the exact evaluator decide
        known = member.is_valid().to_numpy(zero_copy_only=False)
        as_int = member.cast(pa.int32() if bits == 32 else _INT64)
        values = _int_numpy(as_int, n, 0)
        return values, cast(np.ndarray, known)

    def entries(self, rows: np.ndarray | None = None) -> list[ManifestEntry]:
        """Objects for ``rows`` (all when None), tracking values already inherited."""
        table, tracking = self._table, self._tracking
        if rows is not None and len(rows) != self.num_rows:
            indices = pa.array(rows, _INT64)
            table = table.take(indices)
            tracking = {fid: arr.take(indices) for fid, arr in tracking.items()}
        decoded = decode_leaf_rows(
            table, self._specs, self._layout, self.location, tracking, self._partition_types
        )
        return [e for _, e in decoded]

    def content_locations(self, rows: np.ndarray) -> list[str]:
        """Locations (already resolved) of ``rows``' files, then of their deletion vectors' Puffin files."""
        if not len(rows):
            return []
        indices = pa.array(rows, _INT64)
        locations = self._top.get(ce.LOCATION)
        out = [] if locations is None else [p for p in locations.take(indices).to_pylist() if p is not None]
        dv_location = struct_members(self._top.get(ce.DELETION_VECTOR)).get(ce.DV_LOCATION)
        if dv_location is not None and dv_location.null_count < self.num_rows:
            out += [p for p in dv_location.take(indices).to_pylist() if p is not None]
        column_files = self._top.get(ce.COLUMN_FILES)
        if column_files is not None and column_files.null_count < self.num_rows:
            for files in column_files.take(indices).to_pylist():
                out += [f["location"] for f in files or ()]
        return out

    # -- helpers --------------------------------------------------------------------------------

    def _positions(self) -> np.ndarray:
        if POS_COLUMN in self._table.column_names:
            return _int_numpy(self._table.column(POS_COLUMN).combine_chunks(), self.num_rows, -1)
        return np.arange(self.num_rows, dtype=np.int64)

    def _spec_ids(self) -> np.ndarray:
        unpartitioned = min((s.spec_id for s in self._specs.values() if not s.fields), default=0)
        return _int_numpy(self._top.get(ce.SPEC_ID), self.num_rows, unpartitioned)

    def _unknown_specs(self, rows: np.ndarray) -> bool:
        """True when some row names a spec the table does not have (the object path rejects it)."""
        known = np.fromiter(self._specs, dtype=np.int64, count=len(self._specs))
        return not np.isin(self._spec_ids()[rows], known).all()


def _member(members: Mapping[int, pa.Array], field_id: int, n: int) -> pa.Array:
    arr = members.get(field_id)
    if arr is None:
        return pa.nulls(n, _INT64)
    return arr if arr.type == _INT64 else arr.cast(_INT64)
