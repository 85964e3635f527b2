"""Parser-compatible text for column names and literal values."""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import Decimal
from typing import Any

KEYWORDS = frozenset({"and", "or", "not", "in", "is", "null", "nan", "like", "between", "true", "false"})
_SIMPLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def quote_name(name: str) -> str:
    """A dotted column name as parser text; parts that are not plain identifiers get backticks."""
    parts = []
    for part in name.split("."):
        if _SIMPLE_NAME.fullmatch(part) and part.lower() not in KEYWORDS:
            parts.append(part)
        else:
            parts.append("`" + part.replace("`", "``") + "`")
    return ".".join(parts)


def format_literal(value: Any) -> str:
    """A literal as parser text: 'quoted' strings, X'hex' bytes, plain numbers, true/false."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"'{value}'"
    if isinstance(value, bytes | bytearray):
        return "X'" + bytes(value).hex().upper() + "'"
    if isinstance(value, dt.date | dt.time | dt.datetime):
        return "'" + value.isoformat() + "'"
    return "'" + str(value).replace("'", "''") + "'"


def like_pattern(prefix: str) -> str:
    """A LIKE pattern matching strings that start with ``prefix`` (``%``, ``_``, ``\\`` escaped)."""
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return format_literal(escaped + "%")
