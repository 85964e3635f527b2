"""Pruning evaluators: partition tuples, manifest partition summaries, data file metrics.

All of them answer "may this hold a matching row?" with SQL semantics (a comparison with NULL
is never true), and say "may match" whenever the metadata does not decide. In particular a
partition summary or a column without bounds is *unknown*, never *empty*.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from icefloe.expressions.ast import AlwaysFalse, AlwaysTrue, And, Expression, Not, Op, Or, rewrite_not
from icefloe.expressions.binding import bind
from icefloe.expressions.bound import BoundPredicate, evaluate
from icefloe.expressions.bound_evaluation import bounds_may_match, decode_bound
from icefloe.expressions.metrics import InclusiveMetricsEvaluator
from icefloe.expressions.projection import inclusive_projection, partition_schema, strict_projection
from icefloe.expressions.residuals import ResidualEvaluator, residual_for
from icefloe.spec.content import ManifestFile, PartitionFieldSummary
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.schema import Schema

__all__ = [
    "InclusiveMetricsEvaluator",
    "ManifestEvaluator",
    "PartitionEvaluator",
    "ResidualEvaluator",
    "decode_bound",
    "residual_for",
    "strict_partition_evaluators",
]


def _projected_partition_filter(
    spec: PartitionSpec, schema: Schema, row_filter: Expression, case_sensitive: bool
) -> Expression:
    projected = inclusive_projection(schema, spec, case_sensitive)(row_filter)
    return rewrite_not(bind(partition_schema(spec, schema), projected, case_sensitive=True))


class PartitionEvaluator:
    """Decides whether a partition tuple (values in spec order, internal form) may hold matching rows.

    By default ``expr`` is a row filter, projected inclusively onto the spec. With ``projected=True``
    it is already a filter over the partition field names (for example a strict projection) and is
    evaluated as is. ``bound_to_partition`` is an alias of ``projected``.
    """

    def __init__(
        self,
        spec: PartitionSpec,
        schema: Schema,
        expr: Expression,
        case_sensitive: bool = True,
        *,
        projected: bool = False,
        bound_to_partition: bool = False,
    ) -> None:
        self.spec = spec
        if projected or bound_to_partition:
            self.expr = rewrite_not(bind(partition_schema(spec, schema), expr, case_sensitive))
        else:
            self.expr = _projected_partition_filter(spec, schema, expr, case_sensitive)

    def eval(self, partition: Sequence[Any]) -> bool:
        """True when the partition satisfies the (projected) filter."""
        return evaluate(self.expr, partition)


def strict_partition_evaluators(
    specs: Mapping[int, PartitionSpec], schema: Schema, row_filter: Expression, case_sensitive: bool = True
) -> dict[int, PartitionEvaluator]:
    """Per spec id, an evaluator that is True only for partitions in which *every* row matches.

    Built from the strict projection of ``row_filter``: whole files can then be dropped (or
    removed from a snapshot) without reading them.
    """
    return {
        spec_id: PartitionEvaluator(
            spec,
            schema,
            strict_projection(schema, spec, case_sensitive)(row_filter),
            case_sensitive,
            projected=True,
        )
        for spec_id, spec in specs.items()
    }


class ManifestEvaluator:
    """Decides from a manifest's partition summaries whether it may hold matching files."""

    def __init__(
        self, spec: PartitionSpec, schema: Schema, row_filter: Expression, case_sensitive: bool = True
    ) -> None:
        self.spec = spec
        self.expr = _projected_partition_filter(spec, schema, row_filter, case_sensitive)

    def eval(self, manifest: ManifestFile) -> bool:
        """True when the manifest may reference a file with matching rows."""
        if isinstance(self.expr, AlwaysTrue | AlwaysFalse):
            return isinstance(self.expr, AlwaysTrue)
        summaries = manifest.partitions
        if not summaries or len(summaries) != len(self.spec.fields):
            return True
        return _visit(self.expr, summaries)


def _visit(expr: Expression, summaries: Sequence[PartitionFieldSummary]) -> bool:
    if isinstance(expr, BoundPredicate):
        return _summary_may_match(expr, summaries[expr.ref.positions[0]])
    if isinstance(expr, And):
        return _visit(expr.left, summaries) and _visit(expr.right, summaries)
    if isinstance(expr, Or):
        return _visit(expr.left, summaries) or _visit(expr.right, summaries)
    if isinstance(expr, Not):
        return _visit(expr.child.negate(), summaries)
    return not isinstance(expr, AlwaysFalse)


def _summary_may_match(pred: BoundPredicate, summary: PartitionFieldSummary) -> bool:
    op = pred.op
    if op is Op.IS_NULL:
        return summary.contains_null is not False
    if op is Op.IS_NAN:
        return summary.contains_nan is not False
    if op in (Op.NOT_NULL, Op.NOT_NAN, Op.NOT_EQ, Op.NOT_IN):
        return True  # missing bounds are unknown: the manifest may hold other values
    rtype = pred.ref.field_type
    lower = decode_bound(rtype, summary.lower_bound)
    upper = decode_bound(rtype, summary.upper_bound)
    return bounds_may_match(pred, lower, upper)
