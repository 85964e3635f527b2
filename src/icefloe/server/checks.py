"""What the server refuses before touching the catalog: bad identifiers and foreign locations.

Identifiers go through ``catalog.identifiers`` (no ``/``, ``\\``, ``..``, control characters such
as NUL). Every location a request names - a table location, a registered metadata file, a
namespace ``location``, the ``write.*.path`` table properties - must lie inside the warehouse,
compared after normalising ``.`` / ``..`` segments, so a caller cannot make the server read or
write files elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping

from icefloe.catalog.base import warehouse_location
from icefloe.catalog.identifiers import Namespace, parse_namespace, parse_table_identifier
from icefloe.errors import ValidationError
from icefloe.io.fileio import normalize_location

NAMESPACE_SEPARATOR = "\x1f"
LOCATION_PROPERTIES = (
    "location",
    "write.metadata.path",
    "write.data.path",
    "write.object-storage.path",
    "write.folder-storage.path",
)


def namespace_from_path(text: str) -> Namespace:
    """A namespace from its decoded path segment or ``parent`` query value (levels split at 0x1F)."""
    if not text:
        raise ValidationError("empty namespace")
    levels = tuple(text.split(NAMESPACE_SEPARATOR))
    return parse_namespace(levels)


def namespace_from_json(value: object) -> Namespace:
    """A namespace from a JSON array of strings."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValidationError("a namespace must be a JSON array of strings")
    return parse_namespace(tuple(value))


def table_from_path(namespace: Namespace, name: str) -> tuple[Namespace, str]:
    """A validated (namespace, table name); ``name`` is already decoded (path or JSON body)."""
    return parse_table_identifier((*namespace, name))


def table_from_json(value: object) -> tuple[Namespace, str]:
    """A table identifier from ``{"namespace": [...], "name": "..."}``."""
    if not isinstance(value, Mapping) or not isinstance(value.get("name"), str):
        raise ValidationError("a table identifier must be an object with 'namespace' and 'name'")
    return parse_table_identifier((*namespace_from_json(value.get("namespace")), value["name"]))


def rename_from_json(body: object) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The full source and destination identifiers of a ``RenameTableRequest`` (tables and views)."""
    if not isinstance(body, Mapping):
        raise ValidationError("the request body must be a JSON object")
    source = table_from_json(body.get("source"))
    destination = table_from_json(body.get("destination"))
    return (*source[0], source[1]), (*destination[0], destination[1])


def _normalised(location: str) -> str:
    if "\x00" in location:
        raise ValidationError("locations may not contain NUL")
    if any(part in ("..", ".") for part in location.replace("\\", "/").split("/")):
        raise ValidationError(f"location {location!r} contains '.' or '..' segments")
    return normalize_location(warehouse_location(location))


def check_inside(location: str, warehouse: str | None) -> None:
    """Refuse ``location`` unless it is the warehouse or below it (no warehouse: refuse nothing)."""
    if not isinstance(location, str) or not location:
        raise ValidationError("a location must be a non-empty string")
    path = _normalised(location)
    if warehouse is None:
        return
    root = _normalised(warehouse)
    if not (path == root or path.startswith(root.rstrip("/") + "/")):
        raise ValidationError(f"location {location!r} is outside the catalog's warehouse")


def check_location_properties(properties: Mapping[str, str], warehouse: str | None) -> None:
    """Refuse table or namespace properties that point outside the warehouse."""
    for key in LOCATION_PROPERTIES:
        value = properties.get(key)
        if value:
            check_inside(value, warehouse)
