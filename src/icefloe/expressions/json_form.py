"""Expressions in the JSON form of the Iceberg REST spec (``Predicate`` in the OpenAPI document).

Accepted: ``true``/``false`` (bare or ``{"type": "true"}``), ``and``/``or`` (``left``, ``right``),
``not`` (``child``), the unary ``is-null``/``not-null``/``is-nan``/``not-nan``, the comparisons
``lt``/``lt-eq``/``gt``/``gt-eq``/``eq``/``not-eq``/``starts-with``/``not-starts-with`` and the
sets ``in``/``not-in``, with operands either in the current ``child``/``left``/``right`` form or
the deprecated ``term``/``value``. References are names (``"x"`` or ``{"type": "reference",
"name": "x"}``); literals are bare JSON values or ``{"value": ...}`` objects, converted to the
column's type when the expression is bound. Anything else raises ``ValidationError`` /
``Unsupported``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from icefloe.errors import Unsupported, ValidationError
from icefloe.expressions.ast import AlwaysFalse, AlwaysTrue, And, Expression, Not, Or, make_predicate
from icefloe.expressions.ops import Op

_UNARY = {"is-null": Op.IS_NULL, "not-null": Op.NOT_NULL, "is-nan": Op.IS_NAN, "not-nan": Op.NOT_NAN}
_COMPARISON = {
    "lt": Op.LT,
    "lt-eq": Op.LT_EQ,
    "gt": Op.GT,
    "gt-eq": Op.GT_EQ,
    "eq": Op.EQ,
    "not-eq": Op.NOT_EQ,
    "starts-with": Op.STARTS_WITH,
    "not-starts-with": Op.NOT_STARTS_WITH,
}
_SET = {"in": Op.IN, "not-in": Op.NOT_IN}
MAX_DEPTH = 200


def _reference(value: Any) -> str | None:
    """The column name of a reference, or None when ``value`` is not a reference."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and value.get("type") == "reference":
        name = value.get("name", value.get("term"))
        if isinstance(name, str):
            return name
        if "id" in value:
            raise Unsupported("references by field id are not supported in filters; use names")
        raise ValidationError(f"invalid reference {dict(value)!r}"[:200])
    if isinstance(value, Mapping) and value.get("type") in ("transform", "apply"):
        raise Unsupported("transform terms and function applications are not supported in filters")
    return None


def _literal(value: Any) -> Any:
    if isinstance(value, Mapping):
        if "value" not in value:
            raise ValidationError(f"invalid literal {dict(value)!r}"[:200])
        return value["value"]
    if isinstance(value, (list, dict)):
        raise ValidationError("a literal must be a single value")
    return value


def _operand(data: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in data:
            return data[key]
    raise ValidationError(f"predicate {data.get('type')!r} needs one of {keys}")


def expression_from_json(data: Any, depth: int = 0) -> Expression:
    """Parse a REST filter expression."""
    if depth > MAX_DEPTH:
        raise ValidationError("filter expression nested too deeply")
    if isinstance(data, bool):
        return AlwaysTrue() if data else AlwaysFalse()
    if not isinstance(data, Mapping) or not isinstance(data.get("type"), str):
        raise ValidationError("a filter expression must be a boolean or an object with a 'type'")
    kind = data["type"].lower()
    if kind in ("true", "false"):
        return AlwaysTrue() if kind == "true" else AlwaysFalse()
    if kind in ("and", "or"):
        left = expression_from_json(_operand(data, "left"), depth + 1)
        right = expression_from_json(_operand(data, "right"), depth + 1)
        return And(left, right) if kind == "and" else Or(left, right)
    if kind == "not":
        return Not(expression_from_json(_operand(data, "child"), depth + 1))
    if kind in _UNARY:
        name = _reference(_operand(data, "child", "term"))
        if name is None:
            raise ValidationError(f"{kind} needs a column reference")
        return make_predicate(_UNARY[kind], name)
    if kind in _COMPARISON:
        op = _COMPARISON[kind]
        if "term" in data:
            lhs, rhs = data["term"], data.get("value")
        else:
            lhs, rhs = _operand(data, "left"), _operand(data, "right")
        name = _reference(lhs)
        if name is None:  # ``5 < x``: flip to ``x > 5``
            name = _reference(rhs) if not isinstance(rhs, (int, float, bool)) else None
            if name is None or op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH):
                raise ValidationError(f"{kind} needs a column reference on one side")
            return make_predicate(op.flipped, name, _literal(lhs))
        return make_predicate(op, name, _literal(rhs))
    if kind in _SET:
        name = _reference(_operand(data, "child", "term"))
        if name is None:
            raise ValidationError(f"{kind} needs a column reference")
        values = data.get("values")
        if isinstance(values, Mapping):
            values = values.get("values")
        if not isinstance(values, list):
            raise ValidationError(f"{kind} needs a list of values")
        return make_predicate(_SET[kind], name, [_literal(v) for v in values])
    raise Unsupported(f"filter expression type {kind!r} is not supported")
