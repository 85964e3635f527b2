"""Writing the files of a v4 tree: leaf manifests with their root references, roots, legacy rewrites.

Leaf rows written here follow facts §4.2: rows ADDED by the commit leave ``snapshot_id``, both
sequence numbers (unless an explicit data sequence number was asked for) and ``first_row_id``
null, to be inherited from the reference; every other row carries explicit, materialised values.
A reference to a new leaf is ADDED with the commit's snapshot id and sequence number as both
sequence numbers, per-status counts, ``min_sequence_number`` over live rows, the spec id when all
rows share one, and ``content_stats`` aggregated over the live rows. Its ``first_row_id`` is
assigned when the root is written (``unassigned_rows`` says how many row ids the leaf needs).
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
from collections.abc import Sequence
from typing import Any, cast

import pyarrow as pa

from icefloe.errors import ValidationError
from icefloe.formats.avro.manifest import write_manifest
from icefloe.formats.v4.content_entry import (
    ContentRow,
    content_entries_table,
    encode_entries_table,
    write_content_entries,
)
from icefloe.formats.v4.content_entry_schema import content_entry_schema
from icefloe.formats.v4.content_stats import (
    NAN_VALUE_COUNT,
    ColumnStats,
    ContentStats,
    StatsLayout,
    content_stats_type,
)
from icefloe.io.fileio import FileIO
from icefloe.spec.content import (
    DataFile,
    EntryStatus,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.locations import LocationProvider
from icefloe.tree.v4_policy import V4Policy
from icefloe.tree.v4_read import (
    RootTableKey,
    counted_reference,
    remember_root_table,
    table_location,
    written_roots,
)
from icefloe.tree.v4_root_checks import MDV_ENCODING_KEY
from icefloe.tree.v4_written_root import remember_root

logger = logging.getLogger(__name__)

_LEAF_CONTENT = {
    ManifestContent.DATA: FileContent.DATA,
    ManifestContent.DELETES: FileContent.EQUALITY_DELETES,
}


def materialised(e: ManifestEntry) -> ManifestEntry:
    """A carried live entry as an EXISTING row with every tracking value written out."""
    return e if e.status == EntryStatus.EXISTING else e.with_changes(status=EntryStatus.EXISTING)


def unassigned_rows(rows: list[ManifestEntry]) -> int:
    """Row ids a leaf's reference must provide: non-deleted DATA rows without a first_row_id."""
    return sum(
        e.data_file.record_count
        for e in rows
        if e.data_file.content == FileContent.DATA
        and e.status != EntryStatus.DELETED
        and e.data_file.first_row_id is None
    )


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def aggregate_metrics(files: Sequence[DataFile], layout: StatsLayout) -> ContentStats:
    """``aggregate_content_stats`` of the files' metric maps, without per-file stats objects.

    Same rules: counts summed when every file has them, bounds min / max unless a file lacks
    them (an all-null column excepted), ``tight_bounds`` unknown (None): v1–v3 bounds may be
    truncated, and an AND over unknowns is unknown.
    """
    if not files:
        return {}
    out: ContentStats = {}
    n = len(files)
    vcs = [f.value_counts or {} for f in files]
    ncs = [f.null_value_counts or {} for f in files]
    nans = [f.nan_value_counts or {} for f in files]
    los = [f.lower_bounds or {} for f in files]
    his = [f.upper_bounds or {} for f in files]
    present: set[int] = set()
    for maps in (vcs, ncs, nans, los, his):
        for m in maps:
            present.update(m)
    for col in sorted(present):
        where = layout.columns.get(col)
        if where is None:
            continue
        base, _, members = where
        decode = layout.codecs[col][0]
        has_nan = base + NAN_VALUE_COUNT in members
        v = [m.get(col) for m in vcs]
        nc = [m.get(col) for m in ncs]
        nan = [m.get(col) for m in nans] if has_nan else [None] * n
        if not any(
            x is not None for x in (*v, *nc, *nan, *(m.get(col) for m in los), *(m.get(col) for m in his))
        ):
            continue
        lows: list[Any] = []
        highs: list[Any] = []
        known = True
        for i in range(n):
            lo_b, hi_b = los[i].get(col), his[i].get(col)
            lo = None if lo_b is None else decode(lo_b)
            if lo is None or hi_b is None or _is_nan(lo):
                known = known and v[i] is not None and nc[i] == v[i]
                continue
            lows.append(lo)
            highs.append(decode(hi_b))
        bounded = known and bool(lows)
        cs = ColumnStats(
            lower_bound=min(lows) if bounded else None,
            upper_bound=max(highs) if bounded else None,
            value_count=None if None in v else sum(cast(list[int], v)),
            null_value_count=None if None in nc else sum(cast(list[int], nc)),
            nan_value_count=None if None in nan else sum(cast(list[int], nan)),
        )
        if not cs.is_empty:
            out[col] = cs
    return out


class TreeFiles:
    """Writes the leaves and the root of one v4 commit attempt and remembers what it wrote."""

    def __init__(
        self,
        io: FileIO,
        metadata: TableMetadata,
        locations: LocationProvider,
        snapshot_id: int,
        sequence_number: int,
        policy: V4Policy,
    ) -> None:
        self.io = io
        self.md = metadata
        self.locations = locations
        self.snapshot_id = snapshot_id
        self.seq = sequence_number
        self.policy = policy
        self.schema = metadata.schema()
        self.specs = metadata.specs_by_id()
        self.written: list[str] = []
        self.unassigned: dict[str, int] = {}
        self._counter = itertools.count()

    @functools.cached_property
    def layout(self) -> StatsLayout:
        """The content-stats layout of leaf references (built when first needed: a fast append's
        root carries its rows' stats as stored)."""
        return StatsLayout(content_stats_type(self.schema))

    def _options(self) -> dict[str, Any]:
        return {
            "table_schema": self.schema,
            "specs": self.specs,
            "table_location": table_location(self.md),
            "mdv_encoding": self.policy.mdv_encoding,
            "compact": True,  # all-null optional columns left out: roots stay a few KB
        }

    def new_leaf_path(self) -> str:
        """``<metadata>/<commit-uuid>-l<N>.parquet``."""
        return self.locations.new_metadata_file_path(
            f"{self.locations.commit_uuid}-l{next(self._counter)}.parquet"
        )

    def write_leaves(self, rows: list[ManifestEntry], content: ManifestContent) -> list[ManifestFile]:
        """Write rows into as many leaves as ``write.v4.leaf.target-entries`` asks for."""
        size = self.policy.leaf_target_entries
        return [self.write_leaf(rows[i : i + size], content) for i in range(0, len(rows), size)]

    def write_leaf(self, rows: list[ManifestEntry], content: ManifestContent) -> ManifestFile:
        """Write one leaf and return its (ADDED) root reference, first_row_id still unassigned."""
        path = self.new_leaf_path()
        length = write_content_entries(
            self.io.new_output(path, fresh_name=True),
            rows,
            kind="leaf",
            leaf_content=_LEAF_CONTENT[content],
            **self._options(),
        )
        self.written.append(path)
        ref = self.reference(path, length, rows, content)
        self.unassigned[path] = unassigned_rows(rows) if content == ManifestContent.DATA else 0
        return ref

    def reference(
        self, path: str, length: int, rows: list[ManifestEntry], content: ManifestContent
    ) -> ManifestFile:
        """The root reference of a leaf written by this commit."""
        live = [e for e in rows if e.is_live]
        seqs = [self.seq if e.sequence_number is None else e.sequence_number for e in live]
        spec_ids = {e.data_file.spec_id for e in rows}
        return counted_reference(
            rows,
            path,
            length,
            content,
            snapshot_id=self.snapshot_id,
            sequence_number=self.seq,
            min_sequence_number=min(seqs, default=self.seq),
            partition_spec_id=spec_ids.pop() if len(spec_ids) == 1 else -1,
            status=EntryStatus.ADDED,
            content_stats=self.aggregate(live) or None,
        )

    def aggregate(self, live: list[ManifestEntry]) -> ContentStats:
        """Aggregated content stats of a leaf's live rows (empty when nothing is known)."""
        return aggregate_metrics([e.data_file for e in live], self.layout)

    def write_legacy_deletes(self, entries: list[ManifestEntry], spec_id: int) -> ManifestFile:
        """Rewrite a legacy delete manifest that still holds position deletes as a v3 Avro manifest.

        v4 content entries cannot hold position deletes (content 1), so what remains of a legacy
        delete manifest after a removal stays an Avro manifest, referenced with format_version 0.
        """
        spec = self.specs.get(spec_id)
        if spec is None:
            raise ValidationError(f"partition spec {spec_id} is not in the table metadata")
        ptype = self.md.partition_type(spec)
        path = self.locations.new_manifest_path()
        mf = write_manifest(
            self.io.new_output(path, fresh_name=True),
            entries,
            spec,
            self.schema,
            3,
            ManifestContent.DELETES,
            self.snapshot_id,
            path=path,
            partition_type=ptype,
        )
        self.written.append(path)
        live = [e for e in entries if e.is_live]
        return mf.with_changes(
            sequence_number=self.seq,
            min_sequence_number=min((e.sequence_number or self.seq for e in live), default=self.seq),
            added_snapshot_id=self.snapshot_id,
            status=EntryStatus.ADDED,
            first_row_id=None,
            record_count=len(entries),
            format_version=3,
        )

    @property
    def entry_key(self) -> RootTableKey:
        """What the Arrow rows of this commit's root depend on besides the rows."""
        schema = content_entry_schema(self.schema, self.specs)
        return (schema, table_location(self.md), self.policy.mdv_encoding)

    def write_root(self, rows: list[ContentRow], parent_snapshot_id: int | None, attempt: int) -> str:
        """Write the root manifest of the snapshot; returns its location."""
        table = self.root_table(rows)
        path, data = self.write_root_table(table, parent_snapshot_id, attempt)
        remember_root(self.md, path, data, rows, self.policy.mdv_encoding, self.layout)  # nor decoding
        return path

    def root_table(self, rows: Sequence[ContentRow]) -> pa.Table:
        """Root rows as the encoder's Arrow table (every column, before pruning)."""
        return content_entries_table(rows, kind="root", **self._options())

    def write_root_table(
        self, table: pa.Table, parent_snapshot_id: int | None, attempt: int, *, keep_bytes: bool = False
    ) -> tuple[str, bytes]:
        """Write the root holding ``table`` (see ``root_table``); returns its location and bytes.

        ``keep_bytes``: the next read of the root decodes the bytes written, even for a local file
        (for a root whose rows were never objects, :func:`remember_root` cannot be used)."""
        name = f"snap-{self.snapshot_id}-{attempt}-{self.locations.commit_uuid}-root.parquet"
        path = self.locations.new_metadata_file_path(name)
        data = encode_entries_table(
            table,
            kind="root",
            table_schema=self.schema,
            table_location=table_location(self.md),
            snapshot_id=self.snapshot_id,
            parent_snapshot_id=parent_snapshot_id,
            sequence_number=self.seq,
            metadata={MDV_ENCODING_KEY: self.policy.mdv_encoding},  # the root describes its bitmaps
            mdv_encoding=self.policy.mdv_encoding,
            compact=True,  # all-null optional columns left out: roots stay a few KB
        )
        self.io.new_output(path, fresh_name=True).write_bytes(data)
        self.written.append(path)
        written_roots.remember(path, data, local=keep_bytes)  # the next read: without a request
        remember_root_table(path, self.entry_key, table)  # a fast append carries its rows on as Arrow
        return path, data

    def cleanup(self) -> None:
        """Delete everything this attempt wrote (it will never be committed)."""
        for path in self.written:
            try:
                self.io.delete(path)
            except Exception:  # best effort: an orphan file is harmless
                logger.warning("could not delete %s after a failed v4 tree write", path)
