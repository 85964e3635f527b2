"""Data-file pruning by column metrics: value/null/NaN counts and lower/upper bounds per field id.

``InclusiveMetricsEvaluator.eval(data_file)`` is False only when the metrics prove that no row of
the file can match. Missing metrics mean "may match"; NaN bounds (written by old writers) are
ignored; truncated string and binary bounds remain valid bounds and are used as such.
"""

from __future__ import annotations

from typing import Any

from icefloe.expressions.ast import AlwaysFalse, AlwaysTrue, And, Expression, Not, Op, Or, rewrite_not
from icefloe.expressions.binding import bind
from icefloe.expressions.bound import BoundPredicate
from icefloe.expressions.bound_evaluation import bounds_may_match, decode_bound
from icefloe.spec.content import DataFile
from icefloe.spec.schema import Schema

__all__ = ["InclusiveMetricsEvaluator"]


class InclusiveMetricsEvaluator:
    """Decides from a data (or delete) file's metrics whether any of its rows may match a filter."""

    def __init__(
        self,
        schema: Schema,
        row_filter: Expression,
        case_sensitive: bool = True,
        include_empty_files: bool = False,
    ) -> None:
        self.schema = schema
        self.expr = rewrite_not(bind(schema, row_filter, case_sensitive))
        self.include_empty_files = include_empty_files

    def eval(self, data_file: DataFile) -> bool:
        """True when the file may contain rows matching the filter."""
        if isinstance(self.expr, AlwaysFalse):
            return False
        if data_file.record_count == 0 and not self.include_empty_files:
            return False
        if isinstance(self.expr, AlwaysTrue) or data_file.record_count < 0:
            return True  # negative counts come from imported v1 files: nothing is known
        return _FileMetrics(data_file).visit(self.expr)


class _FileMetrics:
    """Metric look-ups for one file, decoding each bound at most once."""

    def __init__(self, data_file: DataFile) -> None:
        self.file = data_file
        self._bounds: dict[tuple[int, bool], Any] = {}

    def visit(self, expr: Expression) -> bool:
        if isinstance(expr, BoundPredicate):
            return self.may_match(expr)
        if isinstance(expr, And):
            return self.visit(expr.left) and self.visit(expr.right)
        if isinstance(expr, Or):
            return self.visit(expr.left) or self.visit(expr.right)
        if isinstance(expr, Not):
            return self.visit(expr.child.negate())
        return not isinstance(expr, AlwaysFalse)

    def _count(self, counts: dict[int, int] | None, field_id: int) -> int | None:
        return None if counts is None else counts.get(field_id)

    def _bound(self, pred: BoundPredicate, upper: bool) -> Any:
        key = (pred.ref.field_id, upper)
        if key not in self._bounds:
            bounds = self.file.upper_bounds if upper else self.file.lower_bounds
            data = None if bounds is None else bounds.get(pred.ref.field_id)
            self._bounds[key] = decode_bound(pred.ref.field_type, data)
        return self._bounds[key]

    def may_match(self, pred: BoundPredicate) -> bool:
        fid = pred.ref.field_id
        f = self.file
        values = self._count(f.value_counts, fid)
        if values is None and len(pred.ref.positions) == 1:
            values = f.record_count  # a top-level column has one value per row
        nulls = self._count(f.null_value_counts, fid)
        nans = self._count(f.nan_value_counts, fid)
        nulls_only = values is not None and nulls is not None and nulls >= values
        nans_only = values is not None and nans is not None and nans >= values
        nothing_comparable = (
            values is not None
            and (nulls or 0) + (nans or 0) >= values
            and (nulls is not None or nans is not None)
        )
        op = pred.op
        if op is Op.IS_NULL:
            return nulls is None or nulls > 0
        if op is Op.NOT_NULL:
            return not nulls_only
        if op is Op.IS_NAN:
            return not nulls_only and (nans is None or nans > 0)
        if op is Op.NOT_NAN:
            return not nans_only
        if nulls_only:
            return False  # no comparison, set or prefix test is true for NULL
        if op in (Op.NOT_EQ, Op.NOT_IN):
            return True
        if op is not Op.NOT_STARTS_WITH and nothing_comparable:
            return False  # only nulls and NaNs: NaN satisfies neither comparisons nor IN
        return bounds_may_match(pred, self._bound(pred, False), self._bound(pred, True))
