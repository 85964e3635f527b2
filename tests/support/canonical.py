"""A comparable form of planning results, for differential tests (columnar vs object path)."""

from __future__ import annotations

import decimal
import math
from collections.abc import Mapping
from typing import Any

from icefloe.expressions import ast


def canonical(value: Any) -> Any:
    """NaN equal to NaN, types kept (1 != 1.0 != True), decimals by their text, any Mapping as a dict.

    Mappings include the lazy metric maps of the columnar readers; dataclasses compare field by field.
    """
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else repr(value))
    if isinstance(value, decimal.Decimal):
        return ("decimal", str(value))
    if isinstance(value, tuple | list):
        return (type(value).__name__, tuple(canonical(v) for v in value))
    if isinstance(value, Mapping):
        return ("dict", tuple(sorted((k, canonical(v)) for k, v in value.items())))
    if isinstance(value, ast.Expression):
        return ("expr", str(value))
    if hasattr(value, "__dataclass_fields__"):
        return (
            type(value).__name__,
            tuple((f, canonical(getattr(value, f))) for f in value.__dataclass_fields__),
        )
    return (type(value).__name__, value)
