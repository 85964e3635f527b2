"""Predicate operations and their algebra (negation, operand swap)."""

from __future__ import annotations

from enum import Enum


class Op(Enum):
    """The operation of a predicate."""

    IS_NULL = "is_null"
    NOT_NULL = "not_null"
    IS_NAN = "is_nan"
    NOT_NAN = "not_nan"
    EQ = "="
    NOT_EQ = "!="
    LT = "<"
    LT_EQ = "<="
    GT = ">"
    GT_EQ = ">="
    IN = "in"
    NOT_IN = "not_in"
    STARTS_WITH = "starts_with"
    NOT_STARTS_WITH = "not_starts_with"

    @property
    def negated(self) -> Op:
        """The operation that is true exactly when this one is false on a non-null value."""
        return _NEGATED[self]

    @property
    def flipped(self) -> Op:
        """The operation with swapped operands (``5 < x`` is ``x > 5``)."""
        return _FLIPPED.get(self, self)

    @property
    def is_unary(self) -> bool:
        """True for null and NaN tests."""
        return self in UNARY_OPS

    @property
    def is_set(self) -> bool:
        """True for IN / NOT IN."""
        return self in SET_OPS


UNARY_OPS = frozenset({Op.IS_NULL, Op.NOT_NULL, Op.IS_NAN, Op.NOT_NAN})
SET_OPS = frozenset({Op.IN, Op.NOT_IN})
COMPARISON_OPS = frozenset({Op.EQ, Op.NOT_EQ, Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ})
PREFIX_OPS = frozenset({Op.STARTS_WITH, Op.NOT_STARTS_WITH})

_NEGATED = {
    Op.IS_NULL: Op.NOT_NULL,
    Op.IS_NAN: Op.NOT_NAN,
    Op.EQ: Op.NOT_EQ,
    Op.LT: Op.GT_EQ,
    Op.LT_EQ: Op.GT,
    Op.IN: Op.NOT_IN,
    Op.STARTS_WITH: Op.NOT_STARTS_WITH,
}
_NEGATED.update({v: k for k, v in list(_NEGATED.items())})
_FLIPPED = {Op.LT: Op.GT, Op.GT: Op.LT, Op.LT_EQ: Op.GT_EQ, Op.GT_EQ: Op.LT_EQ}
