"""Turn the rows a commit took away and brought into change records.

Rows that merely moved (compaction, the survivors of a copy-on-write rewrite) appear on both
sides of a :class:`~icefloe.scan.changelog_diff.StateDiff` with the same values; they are
*carry-overs* and are dropped. What is left is classified:

- v3/v4 (row lineage): rows are matched by ``_row_id``, exactly: the same id on both sides with
  different values is an update (``UPDATE_BEFORE`` + ``UPDATE_AFTER``), the same values a
  carry-over, an id on one side only a ``DELETE`` or an ``INSERT``. Rows without a row id (files
  from before an upgrade to v3) are matched like v2 rows.
- v2: rows are matched by value as multisets (equal rows cancel: carry-overs); the rest are
  ``DELETE`` / ``INSERT``. With identifier columns (Iceberg Java's ``compute_updates``), a deleted
  and an inserted row of the same commit with equal identifiers become an update pair.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

INSERT = "INSERT"
DELETE = "DELETE"
UPDATE_BEFORE = "UPDATE_BEFORE"
UPDATE_AFTER = "UPDATE_AFTER"
CHANGE_TYPE = "_change_type"


def _freeze(value: Any) -> Any:
    """A hashable stand-in for a Python value of an Arrow cell (lists, maps and structs included)."""
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, float) and value != value:
        return ("NaN",)
    return value


def _row_keys(table: pa.Table, columns: Sequence[str]) -> list[tuple[Any, ...]]:
    """One hashable key per row over ``columns``."""
    if not columns:
        return [()] * table.num_rows
    lists = [table.column(c).to_pylist() for c in columns]
    return [tuple(_freeze(v) for v in row) for row in zip(*lists, strict=True)]


def _same_values(a: pa.Table, b: pa.Table, columns: Sequence[str]) -> np.ndarray:
    """Per row pair (row i of ``a`` and of ``b``): whether every column holds the same value."""
    same = np.ones(a.num_rows, dtype=bool)
    for name in columns:
        x, y = a.column(name), b.column(name)
        try:
            eq = pc.fill_null(pc.equal(x, y), False)
            both_null = pc.and_(pc.is_null(x), pc.is_null(y))
            col = pc.or_(eq, both_null)
            if pa.types.is_floating(x.type):
                col = pc.or_(col, pc.fill_null(pc.and_(pc.is_nan(x), pc.is_nan(y)), False))
            same &= np.asarray(col.to_numpy(zero_copy_only=False), dtype=bool)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
            xs, ys = x.to_pylist(), y.to_pylist()
            same &= np.array([_freeze(p) == _freeze(q) for p, q in zip(xs, ys, strict=True)], dtype=bool)
    return same


def _take(table: pa.Table, indices: Sequence[int] | np.ndarray) -> pa.Table:
    return table.take(pa.array(np.asarray(indices, dtype=np.int64), pa.int64()))


def _labelled(table: pa.Table, change: str) -> pa.Table:
    return table.append_column(CHANGE_TYPE, pa.array([change] * table.num_rows, pa.string()))


def _interleave(before: pa.Table, after: pa.Table) -> pa.Table:
    """UPDATE_BEFORE / UPDATE_AFTER pairs next to each other."""
    both = pa.concat_tables([_labelled(before, UPDATE_BEFORE), _labelled(after, UPDATE_AFTER)])
    n = before.num_rows
    order = np.empty(2 * n, dtype=np.int64)
    order[0::2] = np.arange(n)
    order[1::2] = np.arange(n) + n
    return _take(both, order)


def classify_changes(
    before: pa.Table,
    after: pa.Table,
    value_columns: Sequence[str],
    *,
    row_id_column: str | None,
    identifier_columns: Sequence[str] | None,
    compute_updates: bool,
) -> pa.Table:
    """Change records (``before``/``after`` columns plus ``_change_type``): deletes, update pairs, inserts."""
    gone_idx = np.arange(before.num_rows)
    came_idx = np.arange(after.num_rows)
    pairs_before: list[int] = []
    pairs_after: list[int] = []
    if row_id_column is not None:
        b_ids = before.column(row_id_column)
        a_ids = after.column(row_id_column)
        b_valid = np.asarray(pc.is_valid(b_ids).to_numpy(zero_copy_only=False), dtype=bool)
        a_valid = np.asarray(pc.is_valid(a_ids).to_numpy(zero_copy_only=False), dtype=bool)
        b_at, a_at = np.flatnonzero(b_valid), np.flatnonzero(a_valid)
        b_np = np.asarray(pc.fill_null(b_ids, 0).to_numpy(), dtype=np.int64)[b_at]
        a_np = np.asarray(pc.fill_null(a_ids, 0).to_numpy(), dtype=np.int64)[a_at]
        _, ib, ia = np.intersect1d(b_np, a_np, assume_unique=True, return_indices=True)
        matched_b, matched_a = b_at[ib], a_at[ia]
        same = _same_values(_take(before, matched_b), _take(after, matched_a), value_columns)
        pairs_before = list(matched_b[~same])
        pairs_after = list(matched_a[~same])
        # rows without a row id (written before the table tracked lineage) are matched by value
        b_null, a_null = _cancel_equal(
            before, after, np.flatnonzero(~b_valid), np.flatnonzero(~a_valid), value_columns
        )
        gone = b_valid.copy()
        gone[matched_b] = False
        gone[b_null] = True
        came = a_valid.copy()
        came[matched_a] = False
        came[a_null] = True
        gone_idx, came_idx = np.flatnonzero(gone), np.flatnonzero(came)
    else:
        gone_idx, came_idx = _cancel_equal(before, after, gone_idx, came_idx, value_columns)
    if identifier_columns:
        gone_idx, came_idx, more_b, more_a = _pair_by_identifier(
            before, after, gone_idx, came_idx, identifier_columns
        )
        pairs_before += more_b
        pairs_after += more_a
    deletes = _take(before, gone_idx)
    inserts = _take(after, came_idx)
    updated_before, updated_after = _take(before, pairs_before), _take(after, pairs_after)
    parts = [_labelled(deletes, DELETE)]
    if compute_updates:
        parts.append(_interleave(updated_before, updated_after))
    else:
        parts += [_labelled(updated_before, DELETE), _labelled(updated_after, INSERT)]
    parts.append(_labelled(inserts, INSERT))
    return pa.concat_tables(parts)


def _cancel_equal(
    before: pa.Table,
    after: pa.Table,
    gone_idx: np.ndarray,
    came_idx: np.ndarray,
    columns: Sequence[str],
) -> tuple[np.ndarray, np.ndarray]:
    """Drop equal rows present on both sides (as multisets): carry-overs of rewritten files."""
    if len(gone_idx) == 0 or len(came_idx) == 0:
        return gone_idx, came_idx
    gone_keys = _row_keys(_take(before, gone_idx), columns)
    waiting: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for i, key in zip(gone_idx, gone_keys, strict=True):
        waiting[key].append(int(i))
    cancelled_gone: set[int] = set()
    kept_came: list[int] = []
    for i, key in zip(came_idx, _row_keys(_take(after, came_idx), columns), strict=True):
        candidates = waiting.get(key)
        if candidates:
            cancelled_gone.add(candidates.pop())
        else:
            kept_came.append(int(i))
    kept_gone = [int(i) for i in gone_idx if int(i) not in cancelled_gone]
    return np.array(kept_gone, dtype=np.int64), np.array(kept_came, dtype=np.int64)


def _pair_by_identifier(
    before: pa.Table,
    after: pa.Table,
    gone_idx: np.ndarray,
    came_idx: np.ndarray,
    identifier_columns: Sequence[str],
) -> tuple[np.ndarray, np.ndarray, list[int], list[int]]:
    """A deleted and an inserted row with equal identifiers become an update pair."""
    if len(gone_idx) == 0 or len(came_idx) == 0:
        return gone_idx, came_idx, [], []
    waiting: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for i, key in zip(gone_idx, _row_keys(_take(before, gone_idx), identifier_columns), strict=True):
        waiting[key].append(int(i))
    pairs_b: list[int] = []
    pairs_a: list[int] = []
    kept_came: list[int] = []
    for i, key in zip(came_idx, _row_keys(_take(after, came_idx), identifier_columns), strict=True):
        candidates = waiting.get(key)
        if candidates:
            pairs_b.append(candidates.pop(0))
            pairs_a.append(int(i))
        else:
            kept_came.append(int(i))
    paired = set(pairs_b)
    kept_gone = [int(i) for i in gone_idx if int(i) not in paired]
    return np.array(kept_gone, dtype=np.int64), np.array(kept_came, dtype=np.int64), pairs_b, pairs_a
