"""Names a reader cannot tell apart: invisible and confusable characters.

Two tables, namespaces or columns must never differ only in what a reader cannot see, so a new
name is refused when it has leading or trailing whitespace, whitespace other than the plain
space, control characters, invisible format characters (zero-width spaces and joiners, bidi
overrides and isolates, the BOM), private-use or unassigned code points, or is not in Unicode
normal form NFC (a decomposed ``é`` looks exactly like the composed one). Catalog identifiers
(``catalog.identifiers``) and new column names (``Catalog.create_table``, schema evolution) apply
this rule; names already stored by other writers are read as they are.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from icefloe.errors import ValidationError
from icefloe.spec.types import IcebergType, ListType, MapType, NestedField, StructType

__all__ = ["check_column_names", "confusable_problem"]

# format (zero-width, bidi controls, BOM), private use, unassigned, line/paragraph separators
_INVISIBLE = ("Cf", "Co", "Cn", "Zl", "Zp")


def confusable_problem(name: str) -> str | None:
    """Why ``name`` could be mistaken for another name, or None when it cannot."""
    if name != name.strip():
        return f"{name!r} has leading or trailing whitespace"
    for ch in name:
        category = unicodedata.category(ch)
        if category in ("Cc", "Cs"):
            return f"{name!r} contains the control character {ch!r}"
        if category in _INVISIBLE or (ch.isspace() and ch != " "):
            return f"{name!r} contains the invisible or confusable character U+{ord(ch):04X}"
    composed = unicodedata.normalize("NFC", name)
    if composed != name:
        return f"{name!r} is not in Unicode normal form NFC (it looks like {composed!r})"
    return None


def check_column_names(fields: Iterable[NestedField], prefix: str = "") -> None:
    """ValidationError naming the first column (nested ones too) whose name is confusable."""
    for field in fields:
        problem = confusable_problem(field.name)
        if problem is not None:
            raise ValidationError(f"invalid column name {prefix + field.name!r}: {problem}")
        check_column_names(_children(field.field_type), f"{prefix}{field.name}.")


def _children(t: IcebergType) -> tuple[NestedField, ...]:
    if isinstance(t, StructType):
        return t.fields
    if isinstance(t, ListType):
        return (t.element_field,)
    if isinstance(t, MapType):
        return (t.key_field, t.value_field)
    return ()
