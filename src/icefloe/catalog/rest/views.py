"""RestViews: the views of a ``RestCatalog``, with the method names and shapes of ``SqlViews``.

Create sends a ``CreateViewRequest`` (the service assigns the view's UUID, as Iceberg Java's
catalogs do); replace loads the view, checks it is still at the expected metadata file, rebuilds
the new metadata on it as Iceberg Java's client does with ``ViewMetadata.Builder``
(``spec.view_changes.rebuild_view``: a dialect dropped is refused before any request, an equal
schema or version is named by its id) and sends a ``CommitViewRequest``: ``assert-view-uuid`` plus
the updates from the loaded metadata to the rebuilt one; nothing when there are none.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from icefloe.catalog.identifiers import identifier_to_string, parse_namespace, parse_table_identifier
from icefloe.errors import CommitConflict, NoSuchView, NotFound
from icefloe.spec.json_structures import schema_to_dict
from icefloe.spec.view_changes import ASSERT_VIEW_UUID, check_new_view, rebuild_view, view_update_dicts
from icefloe.spec.view_metadata import ViewMetadata, view_metadata_from_dict, view_version_to_dict

if TYPE_CHECKING:
    from icefloe.catalog.rest.catalog import RestCatalog


class RestViews:
    """The views of one ``RestCatalog`` (``RestViews(catalog)``)."""

    def __init__(self, catalog: RestCatalog) -> None:
        self._catalog = catalog
        self._http = catalog.http
        self._routes = catalog.routes

    def _path(self, identifier: str | Iterable[str]) -> tuple[tuple[str, ...], str, str]:
        namespace, name = parse_table_identifier(identifier)
        return tuple(namespace), name, self._routes.view(namespace, name)

    def exists(self, identifier: str | Iterable[str]) -> bool:
        """Whether a view of that name exists (HEAD)."""
        try:
            self._http.request("HEAD", self._path(identifier)[2])
        except NotFound:
            return False
        return True

    def load(self, identifier: str | Iterable[str]) -> tuple[ViewMetadata, str]:
        """The view's metadata and the location of its metadata file."""
        namespace, name, path = self._path(identifier)
        try:
            result = self._http.request("GET", path).json()
        except NotFound as exc:
            raise NoSuchView(
                f"view {identifier_to_string((*namespace, name))!r} does not exist: {exc}"
            ) from None
        return _from_result(result)

    def names(self, namespace: str | Iterable[str]) -> list[tuple[str, ...]]:
        """The views of a namespace, sorted, following page tokens."""
        found = self._catalog._paged(self._routes.views(parse_namespace(namespace)), {}, "identifiers")
        return sorted((*item["namespace"], item["name"]) for item in found)

    def create(self, identifier: str | Iterable[str], metadata: ViewMetadata) -> str:
        """Create the view from its first version (an empty ``metadata.location`` lets the service
        choose); returns the metadata location."""
        namespace, name = parse_table_identifier(identifier)
        check_new_view(metadata)
        body: dict[str, Any] = {
            "name": name,
            "schema": schema_to_dict(metadata.schema()),
            "view-version": view_version_to_dict(metadata.current_version()),
            "properties": dict(metadata.properties),
        }
        if metadata.location:  # else the service chooses, as for a table created without one
            body["location"] = metadata.location
        result = self._http.request("POST", self._routes.views(namespace), body=body, mutation=True).json()
        return _from_result(result)[1]

    def replace(self, identifier: str | Iterable[str], expected_location: str, metadata: ViewMetadata) -> str:
        """Commit the changes from the view's current metadata to ``metadata`` (rebuilt on it as
        Java's builder builds it; ValidationError when it refuses); CommitConflict when the view is no
        longer at ``expected_location``."""
        namespace, name, path = self._path(identifier)
        base, location = self.load(identifier)
        if location != expected_location:
            raise CommitConflict(
                f"view {identifier_to_string((*namespace, name))!r} was changed meanwhile "
                f"(now at {location}, expected {expected_location})"
            )
        updates = view_update_dicts(base, rebuild_view(base, metadata))
        if not updates:
            return location
        body = {
            "identifier": {"namespace": list(namespace), "name": name},
            "requirements": [{"type": ASSERT_VIEW_UUID, "uuid": base.view_uuid}],
            "updates": updates,
        }
        return _from_result(self._http.request("POST", path, body=body, mutation=True).json())[1]

    def drop(self, identifier: str | Iterable[str]) -> None:
        """Drop the view (its metadata files stay)."""
        self._http.request("DELETE", self._path(identifier)[2], mutation=True)

    def rename(self, source: str | Iterable[str], target: str | Iterable[str]) -> None:
        """Rename or move the view."""
        src = parse_table_identifier(source)
        dst = parse_table_identifier(target)
        body = {
            "source": {"namespace": list(src[0]), "name": src[1]},
            "destination": {"namespace": list(dst[0]), "name": dst[1]},
        }
        self._http.request("POST", self._routes.view_rename(), body=body, mutation=True)


def _from_result(result: dict[str, Any]) -> tuple[ViewMetadata, str]:
    return view_metadata_from_dict(result["metadata"]), str(result["metadata-location"])
