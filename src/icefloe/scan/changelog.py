"""Changelog scan: the rows inserted, deleted and updated in a snapshot range ``(start, end]``.

Each commit of the range is compared with its parent (:mod:`icefloe.scan.changelog_diff`: only
the data files whose live rows changed are read, with the read machinery) and its changed rows
are classified (:mod:`icefloe.scan.changelog_rows`). Every row carries the table's columns (with
the end snapshot's schema; deleted rows carry their old values) plus:

- ``_change_type``: ``INSERT``, ``DELETE``, ``UPDATE_BEFORE``, ``UPDATE_AFTER``;
- ``_change_ordinal``: the position of the commit in the range (0 for the oldest);
- ``_commit_snapshot_id``: the snapshot that made the change.

Every kind of commit works the same way: appends, overwrites, copy-on-write and merge-on-read
deletes / updates / merges (position delete files, DVs, v4 colocated DVs and manifest DVs) and
equality deletes. ``replace`` snapshots (compactions) change no row and are skipped, as in Java.

Updates: on v3/v4 tables rows are followed by ``_row_id``, exactly (no identifier fields needed,
across files). On v2 a deleted and an inserted row of one commit with equal identifier columns
form an update pair (``identifier_columns``, default the schema's identifier fields), like Iceberg
Java's ``create_changelog_view`` with ``compute_updates``; on v3/v4 explicit
``identifier_columns`` also pair what row ids cannot (an equality-delete upsert gives the new
version a new row id). ``compute_updates=False`` reports
updates as DELETE + INSERT. ``net_changes=True`` reports the difference of the range's two end
states only (one record set, ordinal 0, stamped with the end snapshot): rows inserted and deleted
again inside the range vanish; unlike Java it may be combined with ``compute_updates``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pyarrow as pa

from icefloe.errors import ValidationError
from icefloe.expressions.ast import AlwaysTrue, Expression
from icefloe.io.fileio import FileIO
from icefloe.scan.batch_reader import DEFAULT_BATCH_SIZE, record_batch_reader
from icefloe.scan.changelog_diff import PlanCache, diff_states
from icefloe.scan.changelog_rows import CHANGE_TYPE, classify_changes
from icefloe.scan.incremental import SnapshotRange
from icefloe.scan.reader import METADATA_COLUMNS, POS, ROW_ID, ReadRequest
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import Operation, Snapshot
from icefloe.spec.table_metadata import TableMetadata

CHANGE_ORDINAL = "_change_ordinal"
COMMIT_SNAPSHOT_ID = "_commit_snapshot_id"
CHANGE_COLUMNS = (CHANGE_TYPE, CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID)
_CHANGE_FIELDS = (
    pa.field(CHANGE_TYPE, pa.string(), nullable=False),
    pa.field(CHANGE_ORDINAL, pa.int32(), nullable=False),
    pa.field(COMMIT_SNAPSHOT_ID, pa.int64(), nullable=False),
)


@dataclass(frozen=True)
class Commit:
    """One step of a changelog: the snapshot, its ordinal and the state it is compared with."""

    ordinal: int
    parent: Snapshot | None
    snapshot: Snapshot


@dataclass(frozen=True)
class ChangelogScan:
    """The changes of a snapshot range; ``to_arrow()`` or ``to_arrow_batch_reader()`` read them."""

    io: FileIO
    metadata: TableMetadata
    snapshot_range: SnapshotRange
    row_filter: Expression = field(default_factory=AlwaysTrue)
    selected_fields: tuple[str, ...] = ("*",)
    case_sensitive: bool = True
    compute_updates: bool | None = None
    identifier_columns: tuple[str, ...] | None = None
    net_changes: bool = False
    schema: Schema | None = None

    # ---- what is read ---------------------------------------------------------------------
    @property
    def table_schema(self) -> Schema:
        """The schema rows are read with (the end snapshot's, as for a scan of it)."""
        return self.schema or self.metadata.schema()

    @property
    def tracks_lineage(self) -> bool:
        """Whether rows are matched by ``_row_id`` (format version 3 and later)."""
        return self.metadata.format_version >= 3

    def identifiers(self) -> tuple[str, ...]:
        """The identifier columns that pair deletes with inserts into updates (may be empty)."""
        if self.identifier_columns is not None:
            for name in self.identifier_columns:
                self.table_schema.find_field(name, self.case_sensitive)
            return self.identifier_columns
        if self.compute_updates is False or self.tracks_lineage:
            return ()  # v3/v4 follow rows by _row_id; identifiers only when asked for explicitly
        schema = self.table_schema
        return tuple(schema.find_column_name(i) or str(i) for i in schema.identifier_field_ids)

    def updates_computed(self) -> bool:
        """Whether updates come out as UPDATE_BEFORE / UPDATE_AFTER pairs (else DELETE + INSERT)."""
        if self.compute_updates is False:
            return False
        if self.compute_updates and not self.tracks_lineage and not self.identifiers():
            raise ValidationError(
                "compute_updates on a v2 table needs identifier columns: pass identifier_columns or "
                "set the schema's identifier fields"
            )
        return True

    def commits(self) -> list[Commit]:
        """The commits whose changes are reported, oldest first (one net step with ``net_changes``)."""
        rng = self.snapshot_range
        if not rng.snapshots:
            return []
        if self.net_changes:
            return [Commit(0, rng.start, rng.snapshots[-1])]
        return [
            Commit(i, rng.parent_of(i), snap)
            for i, snap in enumerate(rng.snapshots)
            if snap.operation != Operation.REPLACE.value
        ]

    def _read_request(self) -> ReadRequest:
        schema = self.table_schema
        meta = (POS.name, ROW_ID.name) if self.tracks_lineage else (POS.name,)
        return ReadRequest(
            schema, schema, meta, self.row_filter, self.case_sensitive, self.metadata.specs_by_id()
        )

    def output_columns(self) -> tuple[list[str], list[str]]:
        """Table columns and metadata columns of the output, in order."""
        schema = self.table_schema
        if "*" in self.selected_fields:
            names = [f.name for f in schema.fields]
            meta = [n for n in self.selected_fields if n in METADATA_COLUMNS]
        else:
            picked = [
                n for n in self.selected_fields if n not in METADATA_COLUMNS and n not in CHANGE_COLUMNS
            ]
            names = [f.name for f in schema.select(picked, self.case_sensitive).fields]
            meta = [n for n in self.selected_fields if n in METADATA_COLUMNS]
        unsupported = set(meta) - {ROW_ID.name}
        if unsupported:
            raise ValidationError(f"a changelog has no metadata columns {sorted(unsupported)} (only _row_id)")
        if meta and not self.tracks_lineage:
            raise ValidationError("_row_id needs format version 3 or later")
        return names, meta

    def output_schema(self) -> pa.Schema:
        """Arrow schema of the changelog rows."""
        full = self._read_request().output_schema()
        names, meta = self.output_columns()
        return pa.schema([full.field(n) for n in (*names, *meta)] + list(_CHANGE_FIELDS))

    # ---- reading ----------------------------------------------------------------------------
    def _changes_of(self, cache: PlanCache, commit: Commit) -> pa.Table:
        diff = diff_states(cache, commit.parent, commit.snapshot)
        cache.keep_only(commit.snapshot)  # the next commit's parent; older plans are done with
        value_columns = [f.name for f in self.table_schema.fields]
        changes = classify_changes(
            diff.before,
            diff.after,
            value_columns,
            row_id_column=ROW_ID.name if self.tracks_lineage else None,
            identifier_columns=self.identifiers(),
            compute_updates=self.updates_computed(),
        )
        n = changes.num_rows
        names, meta = self.output_columns()
        out = changes.select([*names, *meta, CHANGE_TYPE])
        out = out.append_column(CHANGE_ORDINAL, pa.array([commit.ordinal] * n, pa.int32()))
        out = out.append_column(COMMIT_SNAPSHOT_ID, pa.array([commit.snapshot.snapshot_id] * n, pa.int64()))
        return out.cast(self.output_schema())

    def _cache(self) -> PlanCache:
        return PlanCache(self.io, self.metadata, self.row_filter, self._read_request())

    def changes_by_commit(self) -> Iterator[tuple[Commit, pa.Table]]:
        """Each commit of the range with its change rows, oldest first."""
        cache = self._cache()
        for commit in self.commits():
            yield commit, self._changes_of(cache, commit)

    def to_arrow(self) -> pa.Table:
        """Every change of the range as one Arrow table (commit by commit, oldest first)."""
        tables = [t for _, t in self.changes_by_commit()]
        return pa.concat_tables(tables) if tables else self.output_schema().empty_table()

    def to_arrow_batch_reader(self, batch_size: int = DEFAULT_BATCH_SIZE) -> pa.RecordBatchReader:
        """The changes streamed commit by commit (one commit's changed rows in memory at a time)."""
        cache = self._cache()

        def read(commit: Commit) -> pa.Table:
            return self._changes_of(cache, commit)

        return record_batch_reader(
            self.output_schema(), self.commits(), read, batch_size=batch_size, prefetch=0
        )

    def count(self) -> int:
        """Number of change rows."""
        return sum(t.num_rows for _, t in self.changes_by_commit())
