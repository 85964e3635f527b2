"""What columnar scan planning needs from one manifest decoded to Arrow, whatever the format version.

The read seam hands out one :class:`EntryColumns` per manifest (``read_seam.read_live_columns``):
v1–v3 Avro manifests as :class:`icefloe.formats.avro.columnar.ManifestColumns`, v4 Parquet
leaves as :class:`icefloe.tree.v4_leaf_columns.LeafColumns`. Both already have inheritance
applied, so the planner prunes rows with numpy masks and builds objects only for the rows it
keeps, without knowing which tree shape the rows came from.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from icefloe.spec.content import ManifestEntry


class PartitionColumns(Protocol):
    """The partition tuples of one spec's rows: Arrow arrays (spec field order) and Python tuples."""

    @property
    def num_rows(self) -> int:
        """Rows of the whole manifest (row indices below refer to them)."""
        ...

    @property
    def partition(self) -> tuple[pa.Array | None, ...]:
        """One array per spec field over all rows (None: the field is not stored)."""
        ...

    def partition_values(self, rows: np.ndarray | None = None) -> list[tuple[Any, ...]]:
        """Partition tuples (spec order, internal values) of ``rows`` (all rows when None)."""
        ...


class EntryColumns(Protocol):
    """One manifest's entries as columns, inheritance applied."""

    @property
    def location(self) -> str:
        """The manifest's location (for error messages)."""
        ...

    @property
    def num_rows(self) -> int:
        """Entries in the manifest (live or not)."""
        ...

    def live_mask(self) -> np.ndarray | None:
        """Which rows are live; None when some value is one the object path must judge (corrupt)."""
        ...

    def contents(self) -> np.ndarray:
        """``FileContent`` code of every row."""
        ...

    def record_counts(self) -> np.ndarray:
        """Record count of every row (nulls as 0)."""
        ...

    def spec_groups(self, rows: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """``rows`` split by partition spec id: (spec id, the rows' indices), in spec id order."""
        ...

    def for_spec(self, spec_id: int) -> PartitionColumns:
        """The partition columns of the rows written with ``spec_id``."""
        ...

    def integer_bounds(self, field_id: int, width: int, upper: bool) -> tuple[np.ndarray, np.ndarray] | None:
        """(value, known) per row of a column's lower (or upper) bound, for integer-like columns.

        ``width`` is the byte width of the column's bound encoding (4 or 8). A bound that cannot
        be read as such is unknown; None means "cannot tell for any row" (keep every row).
        """
        ...

    def entries(self, rows: np.ndarray | None = None) -> list[ManifestEntry]:
        """``ManifestEntry`` objects of ``rows`` (all rows when None), in row order."""
        ...

    def content_locations(self, rows: np.ndarray) -> list[str]:
        """The files ``rows`` name: their own locations, then their colocated DVs' Puffin files."""
        ...
