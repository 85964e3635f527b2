"""Filter expressions: AST, parser, binding, partition projections, pruning evaluators, residuals.

Typical use::

    from icefloe.expressions import col, parse, bind

    row_filter = (col("id") > 5) & (col("category") == "a")   # or parse("id > 5 and category = 'a'")
    bound = bind(schema, row_filter)

The Arrow conversion lives in :mod:`icefloe.expressions.arrow` (imported on demand, it needs pyarrow).
"""

from icefloe.expressions.ast import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Column,
    EqualTo,
    Expression,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    LiteralPredicate,
    Not,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Op,
    Or,
    Reference,
    SetPredicate,
    StartsWith,
    UnaryPredicate,
    UnboundPredicate,
    col,
    make_predicate,
    rewrite_not,
)
from icefloe.expressions.binding import bind, referenced_field_ids
from icefloe.expressions.bound import BoundPredicate, BoundReference, evaluate, is_bound, unbind
from icefloe.expressions.evaluators import (
    InclusiveMetricsEvaluator,
    ManifestEvaluator,
    PartitionEvaluator,
    ResidualEvaluator,
    residual_for,
)
from icefloe.expressions.parser import parse, to_expression
from icefloe.expressions.projection import inclusive_projection, partition_schema, strict_projection

__all__ = [
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "BoundPredicate",
    "BoundReference",
    "Column",
    "EqualTo",
    "Expression",
    "GreaterThan",
    "GreaterThanOrEqual",
    "In",
    "InclusiveMetricsEvaluator",
    "IsNaN",
    "IsNull",
    "LessThan",
    "LessThanOrEqual",
    "LiteralPredicate",
    "ManifestEvaluator",
    "Not",
    "NotEqualTo",
    "NotIn",
    "NotNaN",
    "NotNull",
    "NotStartsWith",
    "Op",
    "Or",
    "PartitionEvaluator",
    "Reference",
    "ResidualEvaluator",
    "SetPredicate",
    "StartsWith",
    "UnaryPredicate",
    "UnboundPredicate",
    "bind",
    "col",
    "evaluate",
    "inclusive_projection",
    "is_bound",
    "make_predicate",
    "parse",
    "partition_schema",
    "referenced_field_ids",
    "residual_for",
    "rewrite_not",
    "strict_projection",
    "to_expression",
    "unbind",
]
