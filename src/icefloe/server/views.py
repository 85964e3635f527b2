"""View endpoints: list (paged), create, register, load, exists, replace (``CommitViewRequest``), drop,
rename.

Views are kept by ``SqlViews`` in the served SQL catalog (SQLite or PostgreSQL), in the name space
tables use: creating a view where a table or view of that name exists is ``AlreadyExistsException``.
Identifiers, grants and locations are checked as for tables (``SqlViews`` keeps views and tables out
of each other's directories, and refuses registering a metadata file another view or table owns,
so a principal cannot register, then read and change, a view of a namespace it has no grant on);
a failed ``assert-view-uuid`` or a concurrent change is ``CommitFailedException``. A replace
applies its updates as Iceberg Java's ``ViewMetadata.Builder`` does (``spec.view_changes``: a
commit the builder refuses is ``BadRequestException``) and, as Java's ``CatalogHandlers``, writes
no new file when they change nothing and, when another commit lands first, checks the
requirements and applies the updates again on the new metadata (up to ``COMMIT_ATTEMPTS`` times)
before answering ``CommitFailedException``.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from icefloe.catalog.sql_views import SqlViews
from icefloe.errors import AlreadyExists, CommitConflict, Unsupported, ValidationError
from icefloe.server.auth import READ, WRITE
from icefloe.server.checks import (
    check_inside,
    check_location_properties,
    namespace_from_path,
    rename_from_json,
    table_from_json,
    table_from_path,
)
from icefloe.server.context import Call, Reply, ServerState
from icefloe.server.errors import bad_request
from icefloe.server.paging import identifiers_page
from icefloe.server.tables import register_request
from icefloe.spec.json_structures import schema_from_dict
from icefloe.spec.view_changes import apply_view_updates, check_view_requirements
from icefloe.spec.view_metadata import ViewMetadata, view_metadata_to_dict, view_version_from_dict

COMMIT_ATTEMPTS = 5  # Java's CatalogHandlers: the first try and COMMIT_NUM_RETRIES_DEFAULT (4) retries


def _views(state: ServerState) -> SqlViews:
    from icefloe.catalog.sql import SqlCatalog

    if not isinstance(state.catalog, SqlCatalog):
        raise Unsupported("this server's catalog cannot hold views")
    return SqlViews(state.catalog)


def _body(call: Call) -> dict[str, Any]:
    if not isinstance(call.body, dict):
        raise bad_request("the request body must be a JSON object")
    return call.body


def _view(call: Call, level: str) -> tuple[str, ...]:
    namespace = namespace_from_path(call.path["namespace"])
    namespace, name = table_from_path(namespace, call.path["view"])
    call.principal.require(namespace, level)
    return (*namespace, name)


def _parsed(parse: Any, value: Any, what: str) -> Any:
    try:
        return parse(value)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise ValidationError(f"invalid {what}: {exc}") from None


def view_result(location: str, md: ViewMetadata) -> Reply:
    """A ``LoadViewResult``."""
    text = json.dumps({"metadata-location": location, "metadata": view_metadata_to_dict(md), "config": {}})
    return Reply(json_text=text)


def _check_locations(state: ServerState, md: ViewMetadata) -> None:
    check_inside(md.location, state.catalog.warehouse)
    check_location_properties(md.properties, state.catalog.warehouse)


def list_views(state: ServerState, call: Call) -> Reply:
    """GET /namespaces/{namespace}/views"""
    namespace = namespace_from_path(call.path["namespace"])
    call.principal.require(namespace, READ)
    state.catalog._require_namespace(namespace)
    return Reply(payload=identifiers_page(_views(state).names(namespace), call.query))


def create_view(state: ServerState, call: Call) -> Reply:
    """POST /namespaces/{namespace}/views (``CreateViewRequest``)"""
    namespace = namespace_from_path(call.path["namespace"])
    call.principal.require(namespace, WRITE)
    body = _body(call)
    name = body.get("name")
    if not isinstance(name, str):
        raise bad_request("create view needs a 'name' string")
    namespace, name = table_from_path(namespace, name)
    schema = _parsed(schema_from_dict, body.get("schema"), "schema")
    version = _parsed(view_version_from_dict, body.get("view-version"), "view-version")
    properties = body.get("properties") or {}
    if not isinstance(properties, dict):
        raise bad_request("'properties' must be an object")
    location = body.get("location") or state.catalog.default_table_location(namespace, name)
    md = ViewMetadata.new(location, version, schema, {str(k): str(v) for k, v in properties.items()})
    _check_locations(state, md)
    if state.catalog.table_exists((*namespace, name)):
        raise AlreadyExists(f"a table {'.'.join((*namespace, name))!r} already exists")
    created = _views(state).create((*namespace, name), md)
    return view_result(created, md)


def register_view(state: ServerState, call: Call) -> Reply:
    """POST /namespaces/{namespace}/register-view (``RegisterViewRequest``, Iceberg Java 1.11):
    name an existing view metadata file, inside the warehouse, as a view."""
    namespace, name, location = register_request(state, call, "register-view")
    views = _views(state)
    md = _parsed(views.read, location, "view metadata")  # a missing file: 404
    _check_locations(state, md)
    if state.catalog.table_exists((*namespace, name)):
        raise AlreadyExists(f"a table {'.'.join((*namespace, name))!r} already exists")
    views.register((*namespace, name), location, md)
    return view_result(location, md)


def load_view(state: ServerState, call: Call) -> Reply:
    """GET /namespaces/{namespace}/views/{view}"""
    md, location = _views(state).load(_view(call, READ))
    return view_result(location, md)


def view_exists(state: ServerState, call: Call) -> Reply:
    """HEAD /namespaces/{namespace}/views/{view}"""
    _views(state).load(_view(call, READ))
    return Reply(status=204)


def replace_view(state: ServerState, call: Call) -> Reply:
    """POST /namespaces/{namespace}/views/{view} (``CommitViewRequest``)"""
    ident = _view(call, WRITE)
    body = _body(call)
    if body.get("identifier") is not None and table_from_json(body["identifier"]) != (ident[:-1], ident[-1]):
        raise bad_request("the identifier in the body does not match the path")
    requirements, updates = body.get("requirements") or [], body.get("updates")
    if not isinstance(requirements, list) or not isinstance(updates, list):
        raise bad_request("'requirements' and 'updates' must be lists")
    views = _views(state)
    attempt = 1
    while True:
        base, location = views.load(ident)
        check_view_requirements(base, requirements)
        md = _parsed(partial(apply_view_updates, base), updates, "view updates")
        if md == base:
            return view_result(location, base)
        _check_locations(state, md)
        try:
            return view_result(views.swap(ident, location, md, base=base), md)
        except CommitConflict:  # another commit landed first: apply the request on it
            if attempt == COMMIT_ATTEMPTS:
                raise
            attempt += 1


def drop_view(state: ServerState, call: Call) -> Reply:
    """DELETE /namespaces/{namespace}/views/{view}"""
    _views(state).drop(_view(call, WRITE))
    return Reply(status=204)


def rename_view(state: ServerState, call: Call) -> Reply:
    """POST /views/rename (``RenameTableRequest``)"""
    source, destination = rename_from_json(call.body)
    call.principal.require(source[:-1], WRITE)
    call.principal.require(destination[:-1], WRITE)
    _views(state).rename(source, destination)
    return Reply(status=204)
