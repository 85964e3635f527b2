"""MERGE INTO table USING source ON keys (``write.merge.mode``), on Arrow data.

The clauses are a :class:`~icefloe.dml.merge_clauses.MergeSpec` (ordered; the first clause of a
row's kind whose condition holds applies). Expressions are ``pyarrow.compute`` expressions: the
target row's ``x`` is ``pc.field("x")``, the source row's ``pc.field("source.x")`` (conditions
and values of inserts see only the source row).

Keys compare with SQL equality: a null key matches nothing. A target row matched by several
source rows is an error when a WHEN MATCHED clause is set (``ValidationError``, nothing written).
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
from icefloe.dml.merge_clauses import DELETE, UPDATE, MergeSpec
from icefloe.dml.row_io import canonical_rows, mark_inserted, mark_modified, read_for_change
from icefloe.dml.update import change_read_schema
from icefloe.errors import Unsupported, ValidationError
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


@dataclass(frozen=True, eq=False)
class _Clause:
    """One clause, compiled against the table schema: its condition, DELETE or its assignments."""

    condition: pc.Expression | None
    delete: bool
    assignments: tuple[Assignment, ...] = ()


@dataclass(frozen=True)
class _Compiled:
    matched: tuple[_Clause, ...]
    inserts: tuple[_Clause, ...]  # assignments () = INSERT * (the source's columns)
    by_source: tuple[_Clause, ...]


def plan_merge(
    io: FileIO,
    md: TableMetadata,
    snapshot: Snapshot | None,
    source: pa.Table,
    spec: MergeSpec,
    mode: str | None = None,
    case_sensitive: bool = True,
) -> RowLevelChange:
    """Write the files of a MERGE of ``source`` into the table (uncommitted)."""
    if spec.condition is not None:
        raise Unsupported(
            "the Python MERGE matches on key columns only: a general match condition runs on Spark"
        )
    chosen = write_mode(md, "merge", mode)
    schema = md.schema()
    src = _prepare_source(schema, source, list(spec.on), spec, case_sensitive)
    compiled = _compile(schema, src, spec, case_sensitive)
    _check_clauses(md, src, compiled)
    scan_filter: Expression = AlwaysTrue() if spec.reads_whole_table else _key_filter(schema, src)
    change = RowLevelChange.reading("merge", chosen, snapshot, scan_filter, case_sensitive)
    builder = ChangeBuilder(io, md, change)
    try:
        tasks = plan_files(io, md, snapshot, scan_filter, case_sensitive=case_sensitive) if snapshot else []
        for task in tasks:
            rows = read_for_change(io, md, task, case_sensitive)
            deleted, updates = _merge_file(rows, src, compiled, change)
            updated = np.zeros(rows.num_rows, dtype=bool)
            for where, _, _ in updates:
                updated[where] = True
            new_values = _concat([values for _, values, _ in updates], rows.schema)
            changed = tuple(sorted({fid for _, _, ids in updates for fid in ids}))
            builder.update_rows(task, rows, updated, new_values, changed, deleted=deleted)
        if compiled.inserts:
            inserted = _inserted_rows(schema, src, compiled.inserts)
            builder.add_rows(mark_inserted(inserted))
            change.inserted_rows += inserted.num_rows
        return builder.finish()
    except BaseException:
        builder.abort()
        raise


_Update = tuple[np.ndarray, pa.Table, tuple[int, ...]]
"""Rows of a file one clause updates: their indexes, their new values, the columns it sets."""


def _concat(parts: list[pa.Table], schema: pa.Schema) -> pa.Table:
    return pa.concat_tables(parts) if parts else schema.empty_table()


def _merge_file(
    rows: pa.Table, src: _Source, compiled: _Compiled, change: RowLevelChange
) -> tuple[np.ndarray, list[_Update]]:
    """Apply the clauses to one file's rows: the mask of deleted rows, and the updates."""
    removed = np.zeros(rows.num_rows, dtype=bool)
    updates: list[_Update] = []
    pairs = src.pairs_with(rows)
    target_idx = pairs.column(_T).to_numpy()
    source_idx = pairs.column(_S).to_numpy()
    src.matched[source_idx] = True
    if compiled.matched and len(target_idx):
        _check_single_match(rows, src, target_idx, source_idx)
        pair_rows = _pair_table(rows, src, target_idx, source_idx)
        _apply_clauses(pair_rows, target_idx, compiled.matched, removed, updates, change, _row_columns(rows))
    if compiled.by_source:
        unmatched = np.ones(rows.num_rows, dtype=bool)
        unmatched[target_idx] = False
        where = np.flatnonzero(unmatched)
        if len(where):
            target = rows.take(pa.array(where))
            _apply_clauses(target, where, compiled.by_source, removed, updates, change, rows.column_names)
    return removed, updates


def _apply_clauses(
    candidates: pa.Table,
    row_index: np.ndarray,
    clauses: tuple[_Clause, ...],
    deleted: np.ndarray,
    updates: list[_Update],
    change: RowLevelChange,
    keep_columns: list[str],
) -> None:
    """First clause whose condition holds wins; ``row_index`` maps candidates to the file's rows."""
    undecided = np.ones(candidates.num_rows, dtype=bool)
    for clause in clauses:
        hits = undecided.copy()
        if clause.condition is not None:
            hits &= row_mask(candidates, clause.condition)
        if not hits.any():
            continue
        undecided &= ~hits
        if clause.delete:
            deleted[row_index[hits]] = True
            change.deleted_rows += int(hits.sum())
            continue
        changed = apply_assignments(candidates.filter(pa.array(hits)), list(clause.assignments))
        columns = tuple(a.field.field_id for a in clause.assignments)
        updates.append((row_index[hits], mark_modified(changed.select(keep_columns)), columns))
        change.updated_rows += int(hits.sum())


def _inserted_rows(schema: Schema, src: _Source, inserts: tuple[_Clause, ...]) -> pa.Table:
    """The rows the WHEN NOT MATCHED clauses insert, in the table's column order."""
    unmatched = src.table.filter(pa.array(~src.matched))
    columns = [f.name for f in schema.fields]
    prefixed = _prefixed(unmatched)
    undecided = np.ones(unmatched.num_rows, dtype=bool)
    parts: list[pa.Table] = []
    for clause in inserts:
        hits = undecided.copy()
        if clause.condition is not None:
            hits &= row_mask(prefixed, clause.condition)
        if not hits.any():
            continue
        undecided &= ~hits
        chosen = unmatched.filter(pa.array(hits))
        if not clause.assignments:  # INSERT *
            parts.append(chosen.select([c for c in columns if c in chosen.column_names]))
            continue
        base = _null_rows(schema, chosen.num_rows)
        for name in chosen.column_names:
            base = base.append_column(SOURCE_PREFIX + name, chosen.column(name))
        values = apply_assignments(base, list(clause.assignments))
        parts.append(values.select(columns))
    if not parts:
        return unmatched.slice(0, 0).select([c for c in columns if c in unmatched.column_names])
    return pa.concat_tables(parts, promote_options="default")


def _prefixed(source: pa.Table) -> pa.Table:
    """Source rows with their columns named ``source.<name>``."""
    return source.rename_columns([SOURCE_PREFIX + n for n in source.column_names])


def _null_rows(schema: Schema, n: int) -> pa.Table:
    arrow = [field_to_arrow(f) for f in schema.fields]
    return pa.Table.from_arrays([pa.nulls(n, f.type) for f in arrow], schema=pa.schema(arrow))


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
    schema: Schema, source: pa.Table, keys: list[str], spec: MergeSpec, case_sensitive: bool
) -> _Source:
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
    copies_all = any(c.action == UPDATE and c.set is None for c in spec.matched) or any(
        c.values is None for c in spec.not_matched
    )
    if extra and copies_all:
        raise ValidationError(
            f"MERGE source columns {extra} are not in the table schema (UPDATE SET * and INSERT * copy "
            "every source column; to use extra columns, give the clauses explicit values)"
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


def _compile(schema: Schema, src: _Source, spec: MergeSpec, case_sensitive: bool) -> _Compiled:
    """Resolve every clause's columns and literals against the table schema (errors before writes)."""
    copy_all = {
        f.name: pc.field(SOURCE_PREFIX + f.name) for f in schema.fields if f.name in src.table.column_names
    }

    def assignments(values: Mapping[str, Any] | None, copied: Mapping[str, Any]) -> tuple[Assignment, ...]:
        chosen = copied if values is None else values
        return tuple(resolve_assignments(schema, chosen, case_sensitive if values is not None else True))

    matched = tuple(
        _Clause(
            _expression(c.condition),
            c.action == DELETE,
            ()
            if c.action == DELETE
            else assignments(c.set, {k: v for k, v in copy_all.items() if k not in src.keys}),
        )
        for c in spec.matched
    )
    inserts = tuple(
        _Clause(_expression(c.condition), False, () if c.values is None else assignments(c.values, {}))
        for c in spec.not_matched
    )
    by_source = tuple(
        _Clause(
            _expression(c.condition), c.action == DELETE, () if c.action == DELETE else assignments(c.set, {})
        )
        for c in spec.not_matched_by_source
    )
    return _Compiled(matched, inserts, by_source)


def _expression(condition: Any) -> pc.Expression | None:
    if condition is None or condition is True:
        return None
    if not isinstance(condition, pc.Expression):
        raise ValidationError(
            f"MERGE conditions on Arrow data are pyarrow.compute expressions, not {type(condition).__name__}"
        )
    return condition


def _check_clauses(md: TableMetadata, src: _Source, compiled: _Compiled) -> None:
    """Evaluate every condition and value on one all-null row (type errors before any write)."""
    rows = change_read_schema(md).empty_table()
    pairs = _pair_table(rows, src, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    source_rows = _prefixed(src.table.slice(0, 0))
    for clauses, table in (
        (compiled.matched, pairs),
        (compiled.by_source, rows),
        (compiled.inserts, source_rows),
    ):
        for clause in clauses:
            if clause.condition is not None:
                row_mask(_one_null_row(table), clause.condition)
    for group, table in ((compiled.matched, pairs), (compiled.by_source, rows)):
        for clause in group:
            if clause.assignments:
                apply_assignments(table, list(clause.assignments))
    if any(not c.assignments for c in compiled.inserts):
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
