"""Version-neutral content model: data/delete files, manifest entries and manifest references.

The read seam (``icefloe.tree``) turns v1–v3 Avro manifests and v4 Parquet content entries into
these objects; the write seam turns them back into the right tree for the table's format version.
Nothing above the seams needs to know which format version wrote them.
"""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterator, KeysView, Mapping, ValuesView
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class FileContent(IntEnum):
    """What a content file holds (``content`` / ``content_type``)."""

    DATA = 0
    POSITION_DELETES = 1
    EQUALITY_DELETES = 2
    DATA_MANIFEST = 3  # v4 root references only
    DELETE_MANIFEST = 4  # v4 root references only


class ManifestContent(IntEnum):
    """What a v1–v3 manifest holds (manifest list field 517)."""

    DATA = 0
    DELETES = 1


class EntryStatus(IntEnum):
    """Status of a manifest entry; REPLACED and MODIFIED exist only in v4 trees."""

    EXISTING = 0
    ADDED = 1
    DELETED = 2
    REPLACED = 3
    MODIFIED = 4

    @property
    def is_live(self) -> bool:
        """EXISTING, ADDED and MODIFIED entries are part of the snapshot's contents."""
        return self in (EntryStatus.EXISTING, EntryStatus.ADDED, EntryStatus.MODIFIED)


class LazyMap(Mapping[K, V]):
    """A read-only map built on first use: ``load(arg)`` is called once and must return a dict.

    Why: planning a million files builds a ``DataFile`` for each, and most plans never read the
    metric maps of most files (scan tasks need paths, partitions and counts). Readers that decode
    manifests column-wise (:mod:`icefloe.formats.avro.columnar`, the v4 leaf decoder) put one of
    these in the metric fields instead of a dict, with a loader that builds the dict from the
    decoded columns; ``load`` is released once loaded. It compares equal to the dict
    it stands for, and pickles and copies as that plain dict (scan tasks travel to Spark
    executors). ``arg`` saves a closure per map: one loader serves every row of a column.
    """

    __slots__ = ("_arg", "_data", "_load")

    def __init__(self, load: Callable[[Any], dict[K, V]], arg: Any = None) -> None:
        self._load: Callable[[Any], dict[K, V]] | None = load
        self._arg = arg
        self._data: dict[K, V] | None = None

    def _dict(self) -> dict[K, V]:
        data = self._data
        if data is None:
            load = self._load
            if load is None:  # another thread loaded it since ``_data`` was read (it is set first)
                return self._data  # type: ignore[return-value]
            data = self._data = load(self._arg)
            self._load = None
        return data

    def __getitem__(self, key: K) -> V:
        return self._dict()[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._dict())

    def __len__(self) -> int:
        return len(self._dict())

    def __contains__(self, key: object) -> bool:
        return key in self._dict()

    def get(self, key: K, default: Any = None) -> Any:
        """The value of ``key`` or ``default``."""
        return self._dict().get(key, default)

    def keys(self) -> KeysView[K]:
        """The loaded dict's keys."""
        return self._dict().keys()

    def items(self) -> ItemsView[K, V]:
        """The loaded dict's items."""
        return self._dict().items()

    def values(self) -> ValuesView[V]:
        """The loaded dict's values."""
        return self._dict().values()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyMap):
            other = other._dict()
        if not isinstance(other, Mapping):
            return NotImplemented
        return self._dict() == (other if isinstance(other, dict) else dict(other.items()))

    __hash__ = None  # type: ignore[assignment]  # like the dict it stands for

    def __repr__(self) -> str:
        return repr(self._dict())

    def __reduce__(self) -> tuple[type[dict[K, V]], tuple[dict[K, V]]]:
        return (dict, (self._dict(),))


@dataclass(frozen=True, slots=True)
class DeletionVectorRef:
    """Where a deletion-vector-v1 blob lives: Puffin file, blob offset and length, cardinality."""

    location: str
    offset: int
    size_in_bytes: int
    cardinality: int
    key_metadata: bytes | None = None


@dataclass(frozen=True, slots=True)
class ColumnFile:
    """A v4 column file of a data file: new values of whole top-level columns for some of its rows.

    The file holds the columns ``field_ids`` (the ones still live in it: a later column file for the
    same column takes the id away) and a required ``_pos`` column, the base-file ordinal of each
    row it holds. Rows it does not hold keep the base file's values.
    """

    location: str
    file_format: str
    file_size_in_bytes: int
    field_ids: tuple[int, ...]
    format_version: int = 4
    key_metadata: bytes | None = None
    split_offsets: tuple[int, ...] | None = None

    def without_fields(self, field_ids: set[int] | frozenset[int]) -> ColumnFile | None:
        """This file with ``field_ids`` no longer live in it (None once no field is left)."""
        kept = tuple(f for f in self.field_ids if f not in field_ids)
        if not kept:
            return None
        return self if kept == self.field_ids else replace(self, field_ids=kept)


def stack_column_files(current: tuple[ColumnFile, ...] | None, new: ColumnFile) -> tuple[ColumnFile, ...]:
    """The column files of a data file once ``new`` is added: at most one per field id, so the
    fields ``new`` holds stop being live in the older files (files left with none are dropped)."""
    taken = frozenset(new.field_ids)
    kept = [k for k in (c.without_fields(taken) for c in current or ()) if k is not None]
    return (*kept, new)


@dataclass(frozen=True, slots=True)
class DataFile:
    """A data file or delete file, with the metrics manifests carry.

    ``partition`` holds one value per field of the file's partition spec, in spec order, using
    the internal representation of each partition field's result type.
    Metric maps are keyed by column field id; bounds are single-value binary serialisations.
    Readers may fill them with a :class:`LazyMap` (a read-only ``Mapping`` equal to the dict):
    consumers read them through the ``Mapping`` interface and never mutate them.
    """

    file_path: str
    file_format: str  # "parquet" | "avro" | "orc" | "puffin" (lower case)
    record_count: int
    file_size_in_bytes: int
    content: FileContent = FileContent.DATA
    spec_id: int = 0
    partition: tuple[Any, ...] = ()
    column_sizes: dict[int, int] | None = None
    value_counts: dict[int, int] | None = None
    null_value_counts: dict[int, int] | None = None
    nan_value_counts: dict[int, int] | None = None
    lower_bounds: dict[int, bytes] | None = None
    upper_bounds: dict[int, bytes] | None = None
    key_metadata: bytes | None = None
    split_offsets: tuple[int, ...] | None = None
    equality_ids: tuple[int, ...] | None = None
    sort_order_id: int | None = None
    first_row_id: int | None = None
    referenced_data_file: str | None = None
    content_offset: int | None = None
    content_size_in_bytes: int | None = None
    # v4 only: the colocated deletion vector of a DATA entry.
    deletion_vector: DeletionVectorRef | None = None
    # v4 only: column files updating some columns of some rows of a DATA entry (oldest first).
    column_files: tuple[ColumnFile, ...] | None = None

    @property
    def content_key(self) -> tuple[str, int]:
        """Identity of this content file: its path, plus the blob offset for DVs sharing a Puffin file."""
        return (self.file_path, -1 if self.content_offset is None else self.content_offset)

    def with_changes(self, **changes: Any) -> DataFile:
        """A copy with some fields changed."""
        return replace(self, **changes)

    def without_metrics(self, field_ids: set[int]) -> DataFile:
        """A copy that no longer claims counts or bounds for these columns (their values changed)."""
        if not field_ids:
            return self

        def drop(metric: Mapping[int, Any] | None) -> dict[int, Any] | None:
            return None if metric is None else {k: v for k, v in metric.items() if k not in field_ids}

        return replace(
            self,
            column_sizes=drop(self.column_sizes),
            value_counts=drop(self.value_counts),
            null_value_counts=drop(self.null_value_counts),
            nan_value_counts=drop(self.nan_value_counts),
            lower_bounds=drop(self.lower_bounds),
            upper_bounds=drop(self.upper_bounds),
        )


def deletion_vector_file(
    data_file: DataFile, dv: DeletionVectorRef, *, puffin_size: int | None = None
) -> DataFile:
    """A deletion vector seen as the position-delete file v3 manifests list: one Puffin blob.

    The one place that builds it (v3 delete files, v4 colocated DVs in summaries and scan
    planning). ``puffin_size`` is the whole Puffin file's size when known (the writer knows it);
    a v4 colocated reference records only the blob, whose size stands in for it then.
    """
    return DataFile(
        file_path=dv.location,
        file_format="puffin",
        record_count=dv.cardinality,
        file_size_in_bytes=dv.size_in_bytes if puffin_size is None else puffin_size,
        content=FileContent.POSITION_DELETES,
        spec_id=data_file.spec_id,
        partition=data_file.partition,
        key_metadata=dv.key_metadata,
        referenced_data_file=data_file.file_path,
        content_offset=dv.offset,
        content_size_in_bytes=dv.size_in_bytes,
    )


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """A file's entry in a manifest: status plus (possibly inherited) tracking values.

    After the read seam, ``snapshot_id``, ``sequence_number``, ``file_sequence_number`` and
    ``data_file.first_row_id`` are resolved (inheritance applied) wherever the spec allows.
    """

    status: EntryStatus
    snapshot_id: int | None
    sequence_number: int | None
    file_sequence_number: int | None
    data_file: DataFile
    dv_snapshot_id: int | None = None  # v4: snapshot in which the colocated DV last changed
    latest_column_file_snapshot_id: int | None = None  # v4: snapshot that added the newest column file

    @property
    def is_live(self) -> bool:
        """Whether the entry belongs to the snapshot's contents."""
        return self.status.is_live

    def with_changes(self, **changes: Any) -> ManifestEntry:
        """A copy with some fields changed."""
        return replace(self, **changes)


@dataclass(frozen=True, slots=True)
class PartitionFieldSummary:
    """Manifest-list summary of one partition field: nulls, NaNs and serialised bounds."""

    contains_null: bool
    contains_nan: bool | None = None
    lower_bound: bytes | None = None
    upper_bound: bytes | None = None


@dataclass(frozen=True, slots=True)
class ManifestFile:
    """A reference to a manifest: a v1–v3 manifest-list entry or a v4 root manifest reference.

    ``format_version`` is the format of the referenced manifest file (1–3 Avro; 4 Parquet
    content entries). ``mdv`` is the v4 manifest deletion vector (Mumbling-encoded leaf positions
    that are no longer live), ``None`` elsewhere.
    """

    manifest_path: str
    manifest_length: int
    partition_spec_id: int
    content: ManifestContent = ManifestContent.DATA
    sequence_number: int = 0
    min_sequence_number: int = 0
    added_snapshot_id: int = 0
    added_files_count: int | None = None
    existing_files_count: int | None = None
    deleted_files_count: int | None = None
    added_rows_count: int | None = None
    existing_rows_count: int | None = None
    deleted_rows_count: int | None = None
    partitions: tuple[PartitionFieldSummary, ...] | None = None
    key_metadata: bytes | None = None
    first_row_id: int | None = None
    format_version: int = 2
    # v4 reference extras
    status: EntryStatus = EntryStatus.EXISTING
    replaced_files_count: int = 0
    replaced_rows_count: int = 0
    modified_files_count: int = 0
    modified_rows_count: int = 0
    record_count: int | None = None
    mdv: bytes | None = None
    dv_snapshot_id: int | None = None
    # v4: leaf positions this snapshot deleted / replaced (one snapshot's delta of ``mdv``).
    deleted_positions: bytes | None = None
    replaced_positions: bytes | None = None
    # v4: aggregated per-column stats of the leaf, keyed by column field id.
    content_stats: dict[int, Any] | None = field(default=None, compare=False)

    def has_added_files(self) -> bool:
        """True unless the counts say the manifest added nothing."""
        return self.added_files_count is None or self.added_files_count > 0

    def has_existing_files(self) -> bool:
        """True unless the counts say the manifest holds no existing files."""
        return self.existing_files_count is None or self.existing_files_count > 0

    def with_changes(self, **changes: Any) -> ManifestFile:
        """A copy with some fields changed."""
        return replace(self, **changes)
