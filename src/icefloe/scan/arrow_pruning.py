"""Entry pruning on manifests decoded to Arrow: partition filters and column-metrics filters, vectorised.

The manifests come from the read seam as :class:`icefloe.tree.entry_columns.EntryColumns` (v1–v3
Avro manifests and v4 leaves alike). Both functions return a numpy boolean mask over the
manifest's rows and agree exactly with the per-object evaluators of
:mod:`icefloe.expressions.evaluators`:

- :func:`partition_mask` groups the rows by partition tuple (Arrow dictionary encoding) and runs
  the ``PartitionEvaluator`` once per distinct tuple, so its answer is the evaluator's by design;
- :func:`metrics_may_match` is a *sound pre-filter*: it drops a row only where the
  ``InclusiveMetricsEvaluator`` would certainly drop it (comparisons and IN on integer, date, time
  and timestamp columns against the stored lower/upper bounds) and keeps everything it cannot
  decide; the exact evaluator then runs on the few materialised survivors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.expressions.ast import AlwaysFalse, And, Expression, Op, Or
from icefloe.expressions.bound import BoundPredicate
from icefloe.expressions.evaluators import PartitionEvaluator
from icefloe.spec.types import (
    DateType,
    IcebergType,
    IntegerType,
    LongType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
)
from icefloe.tree.entry_columns import EntryColumns, PartitionColumns

Mask = np.ndarray

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_BOUND_OPS = (Op.EQ, Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.IN)


# -- partitions ---------------------------------------------------------------------------------


def partition_mask(columns: PartitionColumns, evaluator: PartitionEvaluator, rows: np.ndarray) -> Mask:
    """Which of ``rows`` (indices) have a partition tuple the evaluator accepts; False elsewhere."""
    out = np.zeros(columns.num_rows, dtype=bool)
    if len(rows) == 0:
        return out
    groups, representatives = _group_rows(columns, rows)
    tuples = columns.partition_values(representatives)
    verdicts = np.fromiter((evaluator.eval(t) for t in tuples), dtype=bool, count=len(tuples))
    out[rows] = verdicts[groups]
    return out


def _group_rows(columns: PartitionColumns, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(group number of each row, one row index per group): rows with equal partition tuples share one.

    Equal means equal as Arrow sees it (dictionary encoding of every partition column); the
    evaluators compare values, so rows Arrow puts together always get the same answer.
    """
    key = np.zeros(len(rows), dtype=np.int64)
    for arr in columns.partition:
        if arr is None or pa.types.is_null(arr.type):
            continue
        try:
            encoded = cast(pa.DictionaryArray, pc.dictionary_encode(arr.take(rows), null_encoding="encode"))
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
            return _group_rows_in_python(columns, rows)
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        key = key * max(len(encoded.dictionary), 1) + codes
        _, key = np.unique(key, return_inverse=True)  # keep the key dense: no overflow
    _, first, groups = np.unique(key, return_index=True, return_inverse=True)
    return groups.reshape(-1), rows[first]


def _group_rows_in_python(columns: PartitionColumns, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    seen: dict[Any, int] = {}
    groups = np.empty(len(rows), dtype=np.int64)
    firsts: list[int] = []
    for i, t in enumerate(columns.partition_values(rows)):
        g = seen.setdefault(t, len(seen))
        if g == len(firsts):
            firsts.append(int(rows[i]))
        groups[i] = g
    return groups, np.asarray(firsts, dtype=np.int64)


# -- column metrics -----------------------------------------------------------------------------


def metrics_may_match(columns: EntryColumns, expr: Expression) -> Mask:
    """False only for rows whose bounds prove that no row of the file matches the bound ``expr``.

    ``expr`` is bound to the table schema with NOT rewritten away (``InclusiveMetricsEvaluator.expr``).
    Files with a negative record count (nothing known) are always kept.
    """
    n = columns.num_rows
    may = _visit(columns, expr)
    if may is None:
        return np.ones(n, dtype=bool)
    unknown_counts = columns.record_counts() < 0
    return cast(Mask, may | unknown_counts)


def _visit(columns: EntryColumns, expr: Expression) -> Mask | None:
    """The pre-filter mask of an expression; None means "keep every row"."""
    if isinstance(expr, BoundPredicate):
        return _predicate_mask(columns, expr)
    if isinstance(expr, And):
        left, right = _visit(columns, expr.left), _visit(columns, expr.right)
        if left is None or right is None:
            return right if left is None else left
        return cast(Mask, left & right)
    if isinstance(expr, Or):
        left, right = _visit(columns, expr.left), _visit(columns, expr.right)
        if left is None or right is None:
            return None
        return cast(Mask, left | right)
    if isinstance(expr, AlwaysFalse):
        return np.zeros(columns.num_rows, dtype=bool)
    return None


def _bound_width(t: IcebergType) -> int | None:
    """Byte width of the bounds the pre-filter decodes for a type (the exact, unpromoted encoding)."""
    if isinstance(t, IntegerType | DateType):
        return 4
    if isinstance(
        t,
        LongType | TimeType | TimestampType | TimestamptzType | TimestampNanoType | TimestamptzNanoType,
    ):
        return 8
    return None


def _predicate_mask(columns: EntryColumns, pred: BoundPredicate) -> Mask | None:
    if pred.op not in _BOUND_OPS:
        return None
    width = _bound_width(pred.ref.field_type)
    if width is None:
        return None
    literals: Sequence[Any] = sorted(pred.literals or ()) if pred.op is Op.IN else [pred.literal]
    if not literals or not all(isinstance(v, int) and _INT64_MIN <= v <= _INT64_MAX for v in literals):
        return None
    lower = columns.integer_bounds(pred.ref.field_id, width, upper=False)
    upper = columns.integer_bounds(pred.ref.field_id, width, upper=True)
    if lower is None or upper is None:
        return None
    (lo, lo_known), (hi, hi_known) = lower, upper
    op = pred.op
    if op is Op.IN:
        lits = np.asarray(literals, dtype=np.int64)
        lo_eff = np.where(lo_known, lo, _INT64_MIN)
        hi_eff = np.where(hi_known, hi, _INT64_MAX)
        return cast(
            Mask, np.searchsorted(lits, hi_eff, side="right") > np.searchsorted(lits, lo_eff, side="left")
        )
    v = literals[0]
    if op is Op.LT:
        return cast(Mask, ~lo_known | (lo < v))
    if op is Op.LT_EQ:
        return cast(Mask, ~lo_known | (lo <= v))
    if op is Op.GT:
        return cast(Mask, ~hi_known | (hi > v))
    if op is Op.GT_EQ:
        return cast(Mask, ~hi_known | (hi >= v))
    return cast(Mask, (~lo_known | (lo <= v)) & (~hi_known | (hi >= v)))
