"""Unbound filter expressions: constants, And/Or/Not, predicates over column references.

Expressions are immutable values compared by value. ``And``/``Or``/``Not`` simplify on
construction (``And(AlwaysTrue(), x)`` is ``x``, ``Not(Not(x))`` is ``x``). ``str(expr)`` is SQL-like
text that :func:`icefloe.expressions.parser.parse` reads back.

Semantics are SQL's three-valued logic: a comparison with NULL is not true and neither is its
negation. ``IS NAN`` is false for NULL and ``IS NOT NAN`` is true for NULL (as in Iceberg and Spark).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from icefloe.errors import ValidationError
from icefloe.expressions.ops import COMPARISON_OPS, PREFIX_OPS, SET_OPS, UNARY_OPS, Op
from icefloe.expressions.text import KEYWORDS, format_literal, like_pattern, quote_name

__all__ = [
    "COMPARISON_OPS",
    "KEYWORDS",
    "PREFIX_OPS",
    "SET_OPS",
    "UNARY_OPS",
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "Column",
    "EqualTo",
    "Expression",
    "GreaterThan",
    "GreaterThanOrEqual",
    "In",
    "IsNaN",
    "IsNull",
    "LessThan",
    "LessThanOrEqual",
    "LiteralPredicate",
    "Not",
    "NotEqualTo",
    "NotIn",
    "NotNaN",
    "NotNull",
    "NotStartsWith",
    "Op",
    "Or",
    "Reference",
    "SetPredicate",
    "StartsWith",
    "UnaryPredicate",
    "UnboundPredicate",
    "col",
    "format_literal",
    "make_predicate",
    "quote_name",
    "rewrite_not",
]

# ---------------------------------------------------------------------------------------------
# expressions


class Expression:
    """Base of all boolean filter expressions (unbound and bound)."""

    __slots__ = ()

    def negate(self) -> Expression:
        """The expression that is true exactly when this one is false (NOT pushed down)."""
        raise NotImplementedError

    def __and__(self, other: Expression) -> Expression:
        return And(self, _check(other))

    def __or__(self, other: Expression) -> Expression:
        return Or(self, _check(other))

    def __invert__(self) -> Expression:
        return Not(self)

    def __bool__(self) -> bool:
        raise TypeError(
            f"the truth value of filter {self} is undefined: combine filters with & | ~, not and/or/not"
        )


def _check(value: object) -> Expression:
    if not isinstance(value, Expression):
        raise ValidationError(f"expected a filter expression, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class AlwaysTrue(Expression):
    """The expression that every row satisfies."""

    def negate(self) -> Expression:
        """AlwaysFalse."""
        return AlwaysFalse()

    def __str__(self) -> str:
        return "true"


@dataclass(frozen=True, slots=True)
class AlwaysFalse(Expression):
    """The expression that no row satisfies."""

    def negate(self) -> Expression:
        """AlwaysTrue."""
        return AlwaysTrue()

    def __str__(self) -> str:
        return "false"


class _Frozen(Expression):
    __slots__ = ()

    def __init__(self, *args: Any) -> None:  # fields are set in __new__
        pass

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")


class _Connective(_Frozen):
    """``And`` / ``Or``: two operands; ``cls(a, b, c)`` nests to the left and constants simplify
    away (the absorbing constant wins, the neutral one drops out)."""

    __slots__ = ("left", "right")
    left: Expression
    right: Expression
    _absorbing: type[AlwaysTrue] | type[AlwaysFalse]
    _neutral: type[AlwaysTrue] | type[AlwaysFalse]
    _keyword: str

    def __new__(cls, left: Expression, right: Expression, *rest: Expression) -> Expression:  # type: ignore[misc]
        if rest:
            return cls(cls(left, right), *rest)
        left, right = _check(left), _check(right)
        if isinstance(left, cls._absorbing) or isinstance(right, cls._absorbing):
            return cls._absorbing()
        if isinstance(left, cls._neutral):
            return right
        if isinstance(right, cls._neutral):
            return left
        obj = object.__new__(cls)
        object.__setattr__(obj, "left", left)
        object.__setattr__(obj, "right", right)
        return obj

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.left == other.left and self.right == other.right

    def __hash__(self) -> int:
        return hash((self._keyword, self.left, self.right))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.left!r}, {self.right!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.left, self.right))


class And(_Connective):
    """Both operands hold. ``And(a, b, c)`` nests to the left; constants simplify away."""

    __slots__ = ()
    _absorbing, _neutral, _keyword = AlwaysFalse, AlwaysTrue, "and"

    def negate(self) -> Expression:
        """NOT (a AND b) = NOT a OR NOT b."""
        return Or(self.left.negate(), self.right.negate())

    def __str__(self) -> str:
        return f"{_paren_or(self.left)} AND {_paren_or(self.right)}"


class Or(_Connective):
    """Either operand holds. ``Or(a, b, c)`` nests to the left; constants simplify away."""

    __slots__ = ()
    _absorbing, _neutral, _keyword = AlwaysTrue, AlwaysFalse, "or"

    def negate(self) -> Expression:
        """NOT (a OR b) = NOT a AND NOT b."""
        return And(self.left.negate(), self.right.negate())

    def __str__(self) -> str:
        return f"{self.left} OR {self.right}"


def _paren_or(e: Expression) -> str:
    return f"({e})" if isinstance(e, Or) else str(e)


class Not(_Frozen):
    """The operand does not hold. ``Not(Not(x))`` is ``x``; constants flip."""

    __slots__ = ("child",)
    child: Expression

    def __new__(cls, child: Expression) -> Expression:  # type: ignore[misc]
        child = _check(child)
        if isinstance(child, AlwaysTrue | AlwaysFalse):
            return child.negate()
        if isinstance(child, Not):
            return child.child
        obj = object.__new__(cls)
        object.__setattr__(obj, "child", child)
        return obj

    def negate(self) -> Expression:
        """The operand itself."""
        return self.child

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Not) and self.child == other.child

    def __hash__(self) -> int:
        return hash(("not", self.child))

    def __repr__(self) -> str:
        return f"Not({self.child!r})"

    def __str__(self) -> str:
        return f"NOT ({self.child})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Not, (self.child,))


def rewrite_not(expr: Expression) -> Expression:
    """An equivalent expression without Not nodes (negation pushed into the predicates)."""
    if isinstance(expr, And):
        return And(rewrite_not(expr.left), rewrite_not(expr.right))
    if isinstance(expr, Or):
        return Or(rewrite_not(expr.left), rewrite_not(expr.right))
    if isinstance(expr, Not):
        return rewrite_not(expr.child).negate()
    return expr


# ---------------------------------------------------------------------------------------------
# unbound predicates


@dataclass(frozen=True, slots=True)
class Reference:
    """A column by (dotted) name, resolved against a schema when binding."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValidationError(f"a column reference needs a non-empty name, got {self.name!r}")

    def __str__(self) -> str:
        return quote_name(self.name)


def _ref(term: str | Reference) -> Reference:
    return term if isinstance(term, Reference) else Reference(term)


def _check_value(op: Op, term: Reference, value: Any) -> Any:
    if value is None:
        hint = "IS NULL" if op in (Op.EQ, Op.IN) else "IS NOT NULL" if op in (Op.NOT_EQ, Op.NOT_IN) else ""
        extra = f"; use {hint}" if hint else ""
        raise ValidationError(f"cannot compare column {term.name!r} with NULL{extra}")
    if isinstance(value, float) and math.isnan(value):
        raise ValidationError(f"cannot compare column {term.name!r} with NaN; use IS NAN / IS NOT NAN")
    if isinstance(value, Expression | Reference | Column):
        raise ValidationError(f"cannot compare column {term.name!r} with {value!r}: expected a literal")
    return value


class UnboundPredicate(Expression):
    """Base of predicates over a column reference that is not yet resolved to a field id."""

    __slots__ = ()
    op: ClassVar[Op]
    term: Reference

    def negate(self) -> Expression:
        """The predicate with the negated operation."""
        return make_predicate(self.op.negated, self.term, *self._operands())

    def _operands(self) -> tuple[Any, ...]:
        return ()


@dataclass(frozen=True, slots=True, init=False)
class UnaryPredicate(UnboundPredicate):
    """A test on the column alone (null / NaN)."""

    term: Reference

    def __init__(self, term: str | Reference) -> None:
        object.__setattr__(self, "term", _ref(term))

    def __str__(self) -> str:
        return f"{self.term} {_UNARY_TEXT[self.op]}"


_UNARY_TEXT = {
    Op.IS_NULL: "IS NULL",
    Op.NOT_NULL: "IS NOT NULL",
    Op.IS_NAN: "IS NAN",
    Op.NOT_NAN: "IS NOT NAN",
}


@dataclass(frozen=True, slots=True, init=False)
class LiteralPredicate(UnboundPredicate):
    """A comparison of the column with one literal value."""

    term: Reference
    value: Any

    def __init__(self, term: str | Reference, value: Any) -> None:
        ref = _ref(term)
        object.__setattr__(self, "term", ref)
        object.__setattr__(self, "value", _check_value(self.op, ref, value))
        if self.op in PREFIX_OPS and not isinstance(value, str):
            raise ValidationError(f"a prefix test on column {ref.name!r} needs a string, got {value!r}")

    def _operands(self) -> tuple[Any, ...]:
        return (self.value,)

    def __str__(self) -> str:
        if self.op is Op.STARTS_WITH:
            return f"{self.term} LIKE {like_pattern(self.value)}"
        if self.op is Op.NOT_STARTS_WITH:
            return f"{self.term} NOT LIKE {like_pattern(self.value)}"
        return f"{self.term} {self.op.value} {format_literal(self.value)}"


def _sorted_values(values: Iterable[Any]) -> list[Any]:
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=lambda v: (type(v).__name__, repr(v)))


@dataclass(frozen=True, slots=True, init=False)
class SetPredicate(UnboundPredicate):
    """Membership of the column's value in a set of literals."""

    term: Reference
    values: frozenset[Any]

    def __init__(self, term: str | Reference, values: Iterable[Any]) -> None:
        ref = _ref(term)
        if isinstance(values, str | bytes) or not isinstance(values, Iterable):
            raise ValidationError(f"IN on column {ref.name!r} needs a collection of values, got {values!r}")
        try:
            checked = frozenset(_check_value(self.op, ref, v) for v in values)
        except TypeError as exc:
            raise ValidationError(f"IN on column {ref.name!r}: values must be hashable ({exc})") from None
        object.__setattr__(self, "term", ref)
        object.__setattr__(self, "values", checked)

    def _operands(self) -> tuple[Any, ...]:
        return (self.values,)

    def __str__(self) -> str:
        keyword = "IN" if self.op is Op.IN else "NOT IN"
        items = ", ".join(format_literal(v) for v in _sorted_values(self.values))
        return f"{self.term} {keyword} ({items})"


class IsNull(UnaryPredicate):
    """The column is NULL."""

    __slots__ = ()
    op = Op.IS_NULL


class NotNull(UnaryPredicate):
    """The column is not NULL."""

    __slots__ = ()
    op = Op.NOT_NULL


class IsNaN(UnaryPredicate):
    """The (floating point) column is NaN; false for NULL."""

    __slots__ = ()
    op = Op.IS_NAN


class NotNaN(UnaryPredicate):
    """The (floating point) column is not NaN; true for NULL."""

    __slots__ = ()
    op = Op.NOT_NAN


class EqualTo(LiteralPredicate):
    """column = value."""

    __slots__ = ()
    op = Op.EQ


class NotEqualTo(LiteralPredicate):
    """column != value (not true for NULL)."""

    __slots__ = ()
    op = Op.NOT_EQ


class LessThan(LiteralPredicate):
    """column < value."""

    __slots__ = ()
    op = Op.LT


class LessThanOrEqual(LiteralPredicate):
    """column <= value."""

    __slots__ = ()
    op = Op.LT_EQ


class GreaterThan(LiteralPredicate):
    """column > value."""

    __slots__ = ()
    op = Op.GT


class GreaterThanOrEqual(LiteralPredicate):
    """column >= value."""

    __slots__ = ()
    op = Op.GT_EQ


class StartsWith(LiteralPredicate):
    """The string column starts with a prefix (``LIKE 'prefix%'``)."""

    __slots__ = ()
    op = Op.STARTS_WITH


class NotStartsWith(LiteralPredicate):
    """The string column does not start with a prefix (not true for NULL)."""

    __slots__ = ()
    op = Op.NOT_STARTS_WITH


class In(SetPredicate):
    """column IN (values)."""

    __slots__ = ()
    op = Op.IN


class NotIn(SetPredicate):
    """column NOT IN (values) (not true for NULL)."""

    __slots__ = ()
    op = Op.NOT_IN


PREDICATE_CLASSES: dict[Op, type[UnboundPredicate]] = {
    cls.op: cls
    for cls in (
        IsNull,
        NotNull,
        IsNaN,
        NotNaN,
        EqualTo,
        NotEqualTo,
        LessThan,
        LessThanOrEqual,
        GreaterThan,
        GreaterThanOrEqual,
        StartsWith,
        NotStartsWith,
        In,
        NotIn,
    )
}


def make_predicate(op: Op, term: str | Reference, *operands: Any) -> UnboundPredicate:
    """The unbound predicate for ``op``: no operand for unary ops, a value, or a collection for IN."""
    cls: Any = PREDICATE_CLASSES[op]
    return cls(term, *operands)


# ---------------------------------------------------------------------------------------------
# the col() builder


class Column:
    """Builds predicates on one column with Python operators: ``col("x") > 5``."""

    __slots__ = ("ref",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, name: str) -> None:
        self.ref = Reference(name)

    def __eq__(self, value: object) -> EqualTo:  # type: ignore[override]
        return EqualTo(self.ref, value)

    def __ne__(self, value: object) -> NotEqualTo:  # type: ignore[override]
        return NotEqualTo(self.ref, value)

    def __lt__(self, value: Any) -> LessThan:
        return LessThan(self.ref, value)

    def __le__(self, value: Any) -> LessThanOrEqual:
        return LessThanOrEqual(self.ref, value)

    def __gt__(self, value: Any) -> GreaterThan:
        return GreaterThan(self.ref, value)

    def __ge__(self, value: Any) -> GreaterThanOrEqual:
        return GreaterThanOrEqual(self.ref, value)

    def isin(self, values: Iterable[Any]) -> In:
        """column IN (values)."""
        return In(self.ref, values)

    def notin(self, values: Iterable[Any]) -> NotIn:
        """column NOT IN (values)."""
        return NotIn(self.ref, values)

    not_in = notin

    def is_null(self) -> IsNull:
        """column IS NULL."""
        return IsNull(self.ref)

    def not_null(self) -> NotNull:
        """column IS NOT NULL."""
        return NotNull(self.ref)

    is_not_null = not_null

    def is_nan(self) -> IsNaN:
        """column IS NAN."""
        return IsNaN(self.ref)

    def not_nan(self) -> NotNaN:
        """column IS NOT NAN."""
        return NotNaN(self.ref)

    def starts_with(self, prefix: str) -> StartsWith:
        """column LIKE 'prefix%'."""
        return StartsWith(self.ref, prefix)

    def not_starts_with(self, prefix: str) -> NotStartsWith:
        """column NOT LIKE 'prefix%'."""
        return NotStartsWith(self.ref, prefix)

    def between(self, low: Any, high: Any) -> Expression:
        """low <= column <= high."""
        return And(GreaterThanOrEqual(self.ref, low), LessThanOrEqual(self.ref, high))

    def __bool__(self) -> bool:
        raise TypeError(f"the truth value of column {self.ref} is undefined")

    def __repr__(self) -> str:
        return f"col({self.ref.name!r})"


def col(name: str) -> Column:
    """A predicate builder for a column (dotted names reach nested fields)."""
    return Column(name)
