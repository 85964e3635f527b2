"""Filters of operations that change rows: "every row" must be said explicitly.

``delete``, ``update`` and ``overwrite`` take a filter; a missing (``None``), empty or blank one is
far more often a bug (an unset variable, an empty form field) than a wish to change the whole
table, so it is refused. Pass ``True``, ``"true"`` or ``AlwaysTrue()`` to mean every row.

The one exception is ``overwrite`` without any filter argument (``None``): replacing the whole
table with new rows is what an overwrite means (Spark's ``mode="overwrite"``); an empty or blank
string is still refused there.
"""

from __future__ import annotations

from icefloe.errors import ValidationError
from icefloe.expressions.ast import AlwaysFalse, AlwaysTrue, Expression
from icefloe.expressions.parser import parse

__all__ = ["change_filter"]


def change_filter(
    value: Expression | str | bool | None, operation: str, *, none_means_all: bool = False
) -> Expression:
    """The filter of a row-changing ``operation``; ValidationError unless "every row" is explicit."""
    if isinstance(value, bool):
        return AlwaysTrue() if value else AlwaysFalse()
    if value is None:
        if none_means_all:
            return AlwaysTrue()
        raise ValidationError(
            f"{operation}: a filter is required; pass True or 'true' to {operation} every row"
        )
    if isinstance(value, Expression):
        return value
    if isinstance(value, str):
        if not value.strip():
            raise ValidationError(
                f"{operation}: the filter is empty; pass True or 'true' to {operation} every row"
            )
        return parse(value)
    raise ValidationError(
        f"{operation}: a filter must be text, an expression or True, got {type(value).__name__}"
    )
