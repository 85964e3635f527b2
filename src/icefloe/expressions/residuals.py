"""Residual filters: what remains of a row filter for one partition once its values are known.

For each predicate, if the strict projection holds on the partition tuple every row matches
(AlwaysTrue); if the inclusive projection fails no row matches (AlwaysFalse); otherwise the
predicate stays. And/Or then simplify. The result is what a reader must still apply to the rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from icefloe.expressions.ast import AlwaysFalse, AlwaysTrue, And, Expression, Not, Or, rewrite_not
from icefloe.expressions.binding import bind
from icefloe.expressions.bound import BoundPredicate, evaluate, unbind
from icefloe.expressions.projection import partition_schema, project_inclusive, project_strict
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema

__all__ = ["ResidualEvaluator", "residual_for"]

_Projections = list[tuple[Expression | None, Expression | None]]


class ResidualEvaluator:
    """Computes residual filters for the partitions of one spec (projections are prepared once)."""

    def __init__(
        self, spec: PartitionSpec, schema: Schema, row_filter: Expression, case_sensitive: bool = True
    ) -> None:
        self.spec = spec
        self.expr = rewrite_not(bind(schema, row_filter, case_sensitive))
        self._partition_schema = partition_schema(spec, schema)
        self._by_source: dict[int, list[PartitionField]] = {}
        for pf in spec.fields:
            self._by_source.setdefault(pf.source_id, []).append(pf)
        self._projections: dict[tuple[BoundPredicate, str], _Projections] = {}

    def residual_for(self, partition: Sequence[Any]) -> Expression:
        """The unbound residual filter for a partition tuple (values in spec order)."""
        return unbind(self.bound_residual_for(partition))

    def bound_residual_for(self, partition: Sequence[Any]) -> Expression:
        """The residual filter for a partition tuple, still bound to the table schema."""
        if not self._by_source:
            return self.expr
        return self._visit(self.expr, partition)

    def _visit(self, expr: Expression, partition: Sequence[Any]) -> Expression:
        if isinstance(expr, And):
            return And(self._visit(expr.left, partition), self._visit(expr.right, partition))
        if isinstance(expr, Or):
            return Or(self._visit(expr.left, partition), self._visit(expr.right, partition))
        if isinstance(expr, Not):
            return self._visit(expr.child.negate(), partition)
        if isinstance(expr, BoundPredicate):
            for strict, inclusive in self._projected(expr):
                if strict is not None and evaluate(strict, partition):
                    return AlwaysTrue()
                if inclusive is not None and not evaluate(inclusive, partition):
                    return AlwaysFalse()
        return expr

    def _projected(self, pred: BoundPredicate) -> _Projections:
        key = (pred, repr(pred))  # repr tells -0.0 from 0.0, which compare (and hash) equal
        cached = self._projections.get(key)
        if cached is None:
            cached = []
            for pf in self._by_source.get(pred.ref.field_id, ()):
                strict = project_strict(pf, pred.ref.field_type, pred)
                inclusive = project_inclusive(pf, pred.ref.field_type, pred)
                cached.append(
                    (
                        None if strict is None else bind(self._partition_schema, strict),
                        None if inclusive is None else bind(self._partition_schema, inclusive),
                    )
                )
            self._projections[key] = cached
        return cached


@lru_cache(maxsize=128)
def _cached_evaluator(
    spec: PartitionSpec, schema: Schema, row_filter: Expression, case_sensitive: bool, text: str
) -> ResidualEvaluator:
    """``text`` (the filter's repr) is part of the key: ``x = -0.0`` equals ``x = 0.0`` as a value."""
    return ResidualEvaluator(spec, schema, row_filter, case_sensitive)


def residual_for(
    spec: PartitionSpec,
    schema: Schema,
    row_filter: Expression,
    partition: Sequence[Any],
    case_sensitive: bool = True,
) -> Expression:
    """The unbound residual of ``row_filter`` for one partition tuple of ``spec``.

    Evaluators are cached per (spec, schema, filter), so calling this once per data file is cheap.
    """
    try:
        evaluator = _cached_evaluator(spec, schema, row_filter, case_sensitive, repr(row_filter))
    except TypeError:  # an unhashable schema (e.g. a dict default value): no caching
        evaluator = ResidualEvaluator(spec, schema, row_filter, case_sensitive)
    return evaluator.residual_for(partition)
