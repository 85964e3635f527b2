"""MERGE INTO table USING source ON keys (``write.merge.mode``): update, delete, insert rows.

Clauses (each optional):

- ``matched_update``: ``True`` sets every table column the source has to the source's value;
  a dict ``{column: literal | pc.Expression}`` sets chosen columns, expressions seeing the target
  row's columns as ``pc.field("x")`` and the source row's as ``pc.field("source.x")``;
- ``matched_delete``: ``True`` deletes every matched row, an expression (over the same pair)
  deletes the matched rows where it holds (the others are updated when ``matched_update`` is set);
- ``not_matched_insert``: source rows matching no target row are inserted;
- ``not_matched_by_source_delete``: ``True`` or an expression over the target row: target rows
  no source row matches are deleted (this reads the whole table).

Keys compare with SQL equality: a null key matches nothing. A target row matched by several
source rows is an error when a matched clause is set (``ValidationError``, nothing written).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.dml.assignments import Assignment, apply_assignments, resolve_assignments
from icefloe.dml.change_builder import ChangeBuilder, RowLevelChange, row_mask, write_mode
from icefloe.dml.row_io import canonical_rows, mark_inserted, mark_modified, read_for_change
from icefloe.dml.update import change_read_schema
from icefloe.errors import ValidationError
from icefloe.expressions.ast import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Expression,
    GreaterThanOrEqual,
    In,
    LessThanOrEqual,
)
from icefloe.formats.arrow_schema import conform_array, field_to_arrow
from icefloe.io.fileio import FileIO
from icefloe.scan.planner import plan_files
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import IntegerType, LongType, NestedField, PrimitiveType, StringType

SOURCE_PREFIX = "source."
IN_LIST_LIMIT = 1000  # more distinct source keys than this prune the target scan by range only
_T, _S = "__icefloe_target_row", "__icefloe_source_row"


@dataclass(frozen=True)
class MergeClauses:
    """What MERGE does with matched, not-matched and not-matched-by-source rows."""

    matched_update: bool | Mapping[str, Any] = True
    matched_delete: bool | pc.Expression = False
    not_matched_insert: bool = True
    not_matched_by_source_delete: bool | pc.Expression = False

    @property
    def has_matched(self) -> bool:
        """Whether a WHEN MATCHED clause is set."""
        return bool(self.matched_update) or _is_set(self.matched_delete)


def _is_set(clause: bool | pc.Expression) -> bool:
    return isinstance(clause, pc.Expression) or bool(clause)


@dataclass
class _Source:
    """The source table conformed to the table's types, its join keys and match bookkeeping."""

    table: pa.Table  # table columns conformed, extra columns as given
    keys: list[str]
    key_table: pa.Table  # non-null key columns (join form) + source row index
    matched: np.ndarray  # per source row: matched some target row

    def pairs_with(self, rows: pa.Table) -> pa.Table:
        """(target row, source row) index pairs whose keys are equal."""
        target = pa.table({k: _join_form(rows.column(k)) for k in self.keys})
        target = target.append_column(_T, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
        return target.join(self.key_table, keys=self.keys, join_type="inner").select([_T, _S])


def _join_form(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return arr.storage if isinstance(arr, pa.ExtensionArray) else arr


def plan_merge(
    io: FileIO,
    md: TableMetadata,
    snapshot: Snapshot | None,
    source: pa.Table,
    on: list[str] | str,
    clauses: MergeClauses,
    mode: str | None = None,
    case_sensitive: bool = True,
) -> RowLevelChange:
    """Write the files of a MERGE of ``source`` into the table on ``on`` (uncommitted)."""
    chosen = write_mode(md, "merge", mode)
    schema = md.schema()
    src = _prepare_source(schema, source, [on] if isinstance(on, str) else list(on), clauses, case_sensitive)
    updates = _update_assignments(schema, src, clauses, case_sensitive)
    _check_clauses(md, src, clauses, updates)
    scan_filter: Expression = (
        AlwaysTrue() if _is_set(clauses.not_matched_by_source_delete) else _key_filter(schema, src)
    )
    change = RowLevelChange(
        "merge",
        chosen,
        base_snapshot_id=snapshot.snapshot_id if snapshot else None,
        conflict_filter=scan_filter,
        case_sensitive=case_sensitive,
    )
    builder = ChangeBuilder(io, md, change)
    try:
        tasks = plan_files(io, md, snapshot, scan_filter, case_sensitive=case_sensitive) if snapshot else []
        for task in tasks:
            rows = read_for_change(io, md, task, case_sensitive)
            removed = _merge_file(rows, src, clauses, updates, builder)
            builder.change_file(task, rows, removed)
        if clauses.not_matched_insert:
            inserted = src.table.filter(pa.array(~src.matched))
            inserted = inserted.select([f.name for f in schema.fields if f.name in inserted.column_names])
            builder.add_rows(mark_inserted(inserted))
            change.inserted_rows += inserted.num_rows
        return builder.finish()
    except BaseException:
        builder.abort()
        raise


def _merge_file(
    rows: pa.Table, src: _Source, clauses: MergeClauses, updates: list[Assignment], builder: ChangeBuilder
) -> np.ndarray:
    """Apply the clauses to one file's rows; returns the mask of rows that leave the file."""
    change = builder.change
    removed = np.zeros(rows.num_rows, dtype=bool)
    pairs = src.pairs_with(rows)
    target_idx = pairs.column(_T).to_numpy()
    source_idx = pairs.column(_S).to_numpy()
    src.matched[source_idx] = True
    if clauses.has_matched and len(target_idx):
        _check_single_match(rows, src, target_idx, source_idx)
        pair_rows = _pair_table(rows, src, target_idx, source_idx)
        if isinstance(clauses.matched_delete, pc.Expression):
            delete = row_mask(pair_rows, clauses.matched_delete)
        else:
            delete = np.full(len(target_idx), bool(clauses.matched_delete))
        removed[target_idx[delete]] = True
        change.deleted_rows += int(delete.sum())
        if updates:
            update = ~delete
            changed = apply_assignments(pair_rows.filter(pa.array(update)), updates)
            builder.add_rows(mark_modified(changed.select(_row_columns(rows))))
            removed[target_idx[update]] = True
            change.updated_rows += int(update.sum())
    if _is_set(clauses.not_matched_by_source_delete):
        unmatched = np.ones(rows.num_rows, dtype=bool)
        unmatched[target_idx] = False
        condition = clauses.not_matched_by_source_delete
        if isinstance(condition, pc.Expression):
            unmatched &= row_mask(rows, condition)
        removed |= unmatched
        change.deleted_rows += int(unmatched.sum())
    return removed


def _row_columns(rows: pa.Table) -> list[str]:
    return [n for n in rows.column_names if not n.startswith(SOURCE_PREFIX) and n not in (_T, _S)]


def _pair_table(rows: pa.Table, src: _Source, target_idx: np.ndarray, source_idx: np.ndarray) -> pa.Table:
    """Matched pairs: target columns by name, source columns as ``source.<name>``."""
    target = rows.take(pa.array(target_idx))
    source = src.table.take(pa.array(source_idx))
    for name in source.column_names:
        target = target.append_column(SOURCE_PREFIX + name, source.column(name))
    return target


def _check_single_match(rows: pa.Table, src: _Source, target_idx: np.ndarray, source_idx: np.ndarray) -> None:
    if len(np.unique(target_idx)) == len(target_idx):
        return
    ordered = np.sort(target_idx, kind="stable")
    dup = int(ordered[np.flatnonzero(ordered[1:] == ordered[:-1])[0]])
    key = {k: rows.column(k)[dup].as_py() for k in src.keys}
    count = int((target_idx == dup).sum())
    raise ValidationError(
        f"MERGE: {count} source rows match the same target row (key {key}); "
        "each target row may be matched by at most one source row: deduplicate the source"
    )


def _prepare_source(
    schema: Schema, source: pa.Table, keys: list[str], clauses: MergeClauses, case_sensitive: bool
) -> _Source:
    if not keys:
        raise ValidationError("MERGE needs at least one key column in 'on'")
    by_name = {f.name if case_sensitive else f.name.lower(): f for f in schema.fields}
    columns: dict[str, pa.ChunkedArray] = {}
    extra: list[str] = []
    for name in source.column_names:
        f = by_name.get(name if case_sensitive else name.lower())
        if f is None:
            extra.append(name)
            columns[name] = source.column(name)
            continue
        if f.name in columns:
            raise ValidationError(f"MERGE source has column {f.name!r} more than once")
        target = field_to_arrow(f).type
        chunks = [conform_array(c, f.field_type, target, f.name) for c in source.column(name).chunks]
        columns[f.name] = pa.chunked_array(chunks, type=target)
    if extra and (clauses.matched_update is True or clauses.not_matched_insert):
        raise ValidationError(
            f"MERGE source columns {extra} are not in the table schema (update-all and insert copy "
            "every source column; to use extra columns, set matched_update to a dict and "
            "not_matched_insert=False)"
        )
    resolved: list[str] = []
    for key in keys:
        f = by_name.get(key if case_sensitive else key.lower())
        if f is None:
            raise ValidationError(f"MERGE key {key!r} is not a column of the table")
        if f.name not in columns:
            raise ValidationError(f"MERGE key {f.name!r} is not a column of the source")
        if not isinstance(f.field_type, PrimitiveType):
            raise ValidationError(f"MERGE key {f.name!r} must be a primitive column, not {f.field_type}")
        resolved.append(f.name)
    table = pa.table(columns) if columns else source
    key_table = pa.table({k: _join_form(table.column(k)) for k in resolved})
    key_table = key_table.append_column(_S, pa.array(np.arange(table.num_rows, dtype=np.int64)))
    not_null = np.ones(table.num_rows, dtype=bool)
    for k in resolved:
        not_null &= ~np.asarray(table.column(k).is_null().to_numpy(zero_copy_only=False), dtype=bool)
    key_table = key_table.filter(pa.array(not_null))
    return _Source(table, resolved, key_table, np.zeros(table.num_rows, dtype=bool))


def _update_assignments(
    schema: Schema, src: _Source, clauses: MergeClauses, case_sensitive: bool
) -> list[Assignment]:
    update = clauses.matched_update
    if not update:
        return []
    if update is True:
        names = [f.name for f in schema.fields if f.name in src.table.column_names and f.name not in src.keys]
        if not names:
            return []
        return resolve_assignments(schema, {n: pc.field(SOURCE_PREFIX + n) for n in names}, True)
    if not isinstance(update, Mapping):
        raise ValidationError(
            f"matched_update must be True, False or a dict of column values, not {update!r}"
        )
    return resolve_assignments(schema, update, case_sensitive)


def _check_clauses(md: TableMetadata, src: _Source, clauses: MergeClauses, updates: list[Assignment]) -> None:
    """Reject ambiguous clauses and evaluate every expression on empty input (errors before writes)."""
    if clauses.matched_delete is True and clauses.matched_update:
        raise ValidationError(
            "MERGE: matched rows cannot be both updated and deleted; give matched_delete a condition "
            "or set matched_update=False"
        )
    rows = change_read_schema(md).empty_table()
    pairs = _pair_table(rows, src, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    if updates:
        apply_assignments(pairs, updates)
    for clause, table in ((clauses.matched_delete, pairs), (clauses.not_matched_by_source_delete, rows)):
        if isinstance(clause, pc.Expression):
            row_mask(_one_null_row(table), clause)
    if clauses.not_matched_insert:
        canonical_rows(md, src.table.slice(0, 0))


def _one_null_row(table: pa.Table) -> pa.Table:
    """One all-null row of ``table``'s schema (so a condition is evaluated and type-checked)."""
    return pa.Table.from_arrays([pa.nulls(1, f.type) for f in table.schema], schema=table.schema)


def _key_filter(schema: Schema, src: _Source) -> Expression:
    """A filter that prunes target files to those that may hold a source key."""
    out: Expression = AlwaysTrue()
    for key in src.keys:
        f: NestedField = schema.find_field(key)
        if not isinstance(f.field_type, IntegerType | LongType | StringType):
            continue
        values = pc.unique(src.key_table.column(key))
        if len(values) == 0:
            continue
        if len(values) <= IN_LIST_LIMIT:
            predicate: Expression = In(key, values.to_pylist())
        else:
            bounds = pc.min_max(values)
            predicate = And(
                GreaterThanOrEqual(key, bounds["min"].as_py()), LessThanOrEqual(key, bounds["max"].as_py())
            )
        out = predicate if isinstance(out, AlwaysTrue) else And(out, predicate)
    return AlwaysFalse() if len(src.key_table) == 0 else out
