"""Namespace and table identifiers: parsing, validation and the dotted form SQL catalogs store.

A namespace is a tuple of levels, ``("sales", "eu")``; a table identifier is the namespace plus a
table name, ``("sales", "eu", "orders")``. Users may also write them as dotted strings
(``"sales.eu.orders"``). The JDBC catalog layout that Iceberg Java and PyIceberg share stores a
namespace as its levels joined with ``"."``, so a level may not itself contain a dot.

Names that look like another name are refused too (``spec.names.confusable_problem``), so that
two tables can never be told apart only by what a reader cannot see: leading or trailing
whitespace, whitespace other than the plain space, invisible format characters (zero-width spaces
and joiners, bidi overrides and isolates, the BOM), private-use and unassigned code points, and
text not in Unicode normal form NFC (a decomposed ``é`` looks exactly like the composed one).
"""

from __future__ import annotations

from collections.abc import Iterable

from icefloe.errors import ValidationError
from icefloe.spec.names import confusable_problem

Namespace = tuple[str, ...]
TableIdentifier = tuple[str, ...]

# Column widths of the shared JDBC catalog tables.
MAX_NAMESPACE_LENGTH = 255
MAX_TABLE_NAME_LENGTH = 255


def _problem(part: object, *, allow_dot: bool) -> str | None:
    """Why a namespace level or table name is unusable, or None when it is fine."""
    if not isinstance(part, str):
        return f"{part!r} is not a string"
    if part.strip() == "":
        return "empty names are not allowed"
    if "/" in part or "\\" in part:
        return f"{part!r} contains '/' or '\\'"
    if ".." in part or part == ".":
        return f"{part!r} is '.' or contains '..'"
    if not allow_dot and "." in part:
        return f"namespace level {part!r} contains '.'; pass the levels separately, e.g. ('a', 'b')"
    return confusable_problem(part)


def _shown(value: str | Iterable[str]) -> str:
    return repr(value) if isinstance(value, str) else repr(tuple(value))


def parse_namespace(namespace: str | Iterable[str], *, allow_empty: bool = False) -> Namespace:
    """A validated namespace tuple from ``"a.b"`` or ``("a", "b")``; ``()`` only when allowed."""
    if isinstance(namespace, str):
        levels: tuple[str, ...] = tuple(namespace.split(".")) if namespace != "" else ()
    else:
        levels = tuple(namespace)
    if not levels:
        if allow_empty:
            return ()
        raise ValidationError("invalid namespace (): a namespace needs at least one level")
    for level in levels:
        problem = _problem(level, allow_dot=False)
        if problem:
            raise ValidationError(f"invalid namespace {_shown(namespace)}: {problem}")
    if len(".".join(levels)) > MAX_NAMESPACE_LENGTH:
        raise ValidationError(
            f"invalid namespace {_shown(namespace)}: longer than {MAX_NAMESPACE_LENGTH} characters"
        )
    return levels


def parse_table_identifier(identifier: str | Iterable[str]) -> tuple[Namespace, str]:
    """Split ``"ns.table"`` or ``("ns", "table")`` into a validated (namespace, table name)."""
    is_text = isinstance(identifier, str)
    parts: tuple[str, ...] = (
        tuple(identifier.split(".")) if isinstance(identifier, str) else tuple(identifier)
    )
    shown = repr(identifier) if is_text else repr(parts)
    if len(parts) < 2:
        raise ValidationError(
            f"invalid table identifier {shown}: it needs a namespace and a table name, e.g. 'namespace.table'"
        )
    for i, part in enumerate(parts):
        problem = _problem(part, allow_dot=(i == len(parts) - 1 and not is_text))
        if problem:
            raise ValidationError(f"invalid table identifier {shown}: {problem}")
    namespace, name = parts[:-1], parts[-1]
    if len(".".join(namespace)) > MAX_NAMESPACE_LENGTH:
        raise ValidationError(
            f"invalid table identifier {shown}: namespace longer than {MAX_NAMESPACE_LENGTH}"
        )
    if len(name) > MAX_TABLE_NAME_LENGTH:
        raise ValidationError(f"invalid table identifier {shown}: name longer than {MAX_TABLE_NAME_LENGTH}")
    return namespace, name


def table_identifier(identifier: str | Iterable[str]) -> TableIdentifier:
    """A validated identifier tuple ``(*namespace, name)``."""
    namespace, name = parse_table_identifier(identifier)
    return (*namespace, name)


def namespace_to_string(namespace: Namespace) -> str:
    """The dotted form stored in the catalog database (``("a", "b")`` -> ``"a.b"``)."""
    return ".".join(namespace)


def namespace_from_string(text: str) -> Namespace:
    """The namespace tuple of a stored dotted string (no validation: rows may come from other tools)."""
    return tuple(text.split(".")) if text else ()


def identifier_to_string(identifier: Iterable[str]) -> str:
    """Dotted form of a namespace or table identifier, for messages."""
    return ".".join(identifier)
