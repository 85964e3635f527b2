"""Upsert and delete by key through equality delete files: one snapshot, no read of the table.

``upsert_with_equality_deletes(table, df, on)`` commits one row-delta snapshot (operation
``overwrite``) holding equality delete file(s) with the keys of ``df`` and data file(s) with the rows
of ``df``. The deletes remove every older row with one of those keys (null keys match null keys);
they do not remove the new rows, which share their data sequence number (deletes apply only to
strictly lower ones). Concurrent upserts need no conflict check: the later commit wins, key by key.
``delete_by_key(table, keys, on)`` commits the deletes alone (operation ``delete``).

Keys default to the schema's identifier fields. Partition scoping of the deletes follows
:mod:`icefloe.txn.equality_deletes` (on a partitioned table, keys normally include the partition
source columns). Format version 2 and later; v1 tables cannot hold delete files.

Row lineage (v3+, facts §6.4): equality-delete updates do not preserve lineage. An upserted row
is a new row: it gets a new ``_row_id`` and ``_last_updated_sequence_number``, and its old version
is simply deleted. Nothing is known here about which keys existed before, so the result reports
the rows written and the keys deleted, not an inserted/updated split.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.errors import ValidationError
from icefloe.io.fileio import FileIO
from icefloe.spec.content import DataFile
from icefloe.spec.schema import Schema
from icefloe.spec.table_metadata import TableMetadata
from icefloe.txn.commit_options import DEFAULT_OPTIONS, CommitOptions
from icefloe.txn.data_writer import prepare_arrow_table, write_data_files
from icefloe.txn.equality_deletes import key_groups, validate_equality_ids, write_equality_delete_files
from icefloe.txn.handle import TableHandle, commit_action
from icefloe.txn.producers import RowDelta, branch_head


@dataclass(frozen=True)
class UpsertResult:
    """What an upsert / delete-by-key committed (``snapshot_id`` None: nothing to commit)."""

    snapshot_id: int | None
    rows_written: int
    keys_deleted: int
    data_files: tuple[DataFile, ...] = field(default_factory=tuple)
    delete_files: tuple[DataFile, ...] = field(default_factory=tuple)


def upsert_with_equality_deletes(
    table: TableHandle,
    df: pa.Table,
    on: Sequence[str] | str | None = None,
    options: CommitOptions = DEFAULT_OPTIONS,
) -> UpsertResult:
    """Replace the rows whose key is in ``df`` by the rows of ``df`` (inserting new keys), in one snapshot.

    ``on``: key column names (dotted for struct fields); default the identifier fields. Keys
    repeated inside ``df`` are a ValidationError (which row would win is undefined).
    """
    md = table.metadata
    _require_deletes(md)
    schema = md.schema()
    ids = key_field_ids(schema, on)
    prepared = prepare_arrow_table(md, df)
    if prepared.num_rows == 0:
        return UpsertResult(None, 0, 0)
    _reject_duplicate_keys(prepared, schema, ids)
    deletes = write_equality_delete_files(table.io, md, prepared, ids, branch=options.branch)
    try:
        data = write_data_files(table.io, md, prepared)
    except BaseException:
        _delete_quietly(table.io, deletes)
        raise
    snapshot_id = _commit(table, data, deletes, options)
    return UpsertResult(snapshot_id, prepared.num_rows, prepared.num_rows, tuple(data), tuple(deletes))


def delete_by_key(
    table: TableHandle,
    keys: pa.Table,
    on: Sequence[str] | str | None = None,
    options: CommitOptions = DEFAULT_OPTIONS,
) -> UpsertResult:
    """Delete every row whose key equals a row of ``keys`` (null matches null), in one snapshot.

    ``keys`` holds the key columns (other table columns are ignored); ``on`` as for the upsert.
    Repeated keys are fine. No snapshot is committed for an empty ``keys``.
    """
    md = table.metadata
    _require_deletes(md)
    schema = md.schema()
    ids = key_field_ids(schema, on)
    deletes = write_equality_delete_files(table.io, md, keys, ids, branch=options.branch)
    if not deletes:
        return UpsertResult(None, 0, 0)
    distinct = _distinct_key_count(deletes)
    snapshot_id = _commit(table, [], deletes, options)
    return UpsertResult(snapshot_id, 0, distinct, (), tuple(deletes))


def key_field_ids(schema: Schema, on: Sequence[str] | str | None) -> tuple[int, ...]:
    """Field ids of the key columns ``on`` (names), else of the schema's identifier fields; validated."""
    if on is None:
        if not schema.identifier_field_ids:
            raise ValidationError(
                "the table has no identifier fields: pass the key columns (on=[...]) or set them with "
                "update_schema().set_identifier_fields(...)"
            )
        ids: Sequence[int] = schema.identifier_field_ids
    else:
        names = [on] if isinstance(on, str) else list(on)
        ids = [schema.find_field(name).field_id for name in names]
    return validate_equality_ids(schema, ids)


def _require_deletes(md: TableMetadata) -> None:
    if md.format_version < 2:
        raise ValidationError(
            f"format version {md.format_version} tables cannot hold equality delete files: "
            "upgrade the table to format version 2 or later to upsert by key"
        )


def _reject_duplicate_keys(prepared: pa.Table, schema: Schema, ids: Sequence[int]) -> None:
    groups = key_groups(prepared, schema, ids)
    if groups.num_rows == prepared.num_rows:
        return
    repeated = groups.filter(pc.greater(groups.column("count"), 1))
    row = repeated.slice(0, 1).to_pylist()[0]
    key = ", ".join(f"{name}={row[name]!r}" for name in groups.column_names[: len(ids)])
    raise ValidationError(
        f"the upsert input holds {repeated.num_rows} key(s) more than once, e.g. ({key}) in "
        f"{row['count']} rows; keys must be unique within one upsert"
    )


def _distinct_key_count(deletes: Sequence[DataFile]) -> int:
    """Distinct keys written: every spec's file set holds each key once, so count one spec's files."""
    first_spec = deletes[0].spec_id
    return sum(f.record_count for f in deletes if f.spec_id == first_spec)


def _commit(
    table: TableHandle,
    data: list[DataFile],
    deletes: list[DataFile],
    options: CommitOptions,
) -> int:
    """Commit data and equality deletes as one RowDelta; returns the new snapshot id."""
    branch = options.branch
    base = branch_head(table.metadata, branch)
    action = RowDelta(
        branch=branch,
        snapshot_properties=options.properties,
        owned_files=[f.file_path for f in (*deletes, *data)],
        added_data=list(data),
        added_deletes=list(deletes),
        base_snapshot_id=base.snapshot_id if base else None,
    )
    commit_action(table, action)
    return table.metadata.refs[branch].snapshot_id


def _delete_quietly(io: FileIO, files: Sequence[DataFile]) -> None:
    for f in files:
        with contextlib.suppress(Exception):  # best effort: an orphan file is harmless
            io.delete(f.file_path, missing_ok=True)
