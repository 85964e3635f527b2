"""Namespace endpoints: list (paged), create, load, exists, update properties, drop."""

from __future__ import annotations

from icefloe.errors import NoSuchNamespace
from icefloe.server.auth import READ, WRITE
from icefloe.server.checks import check_location_properties, namespace_from_json, namespace_from_path
from icefloe.server.context import Call, Reply, ServerState
from icefloe.server.errors import HttpError, bad_request
from icefloe.server.paging import page


def _properties(value: object, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise bad_request(f"{what} must be an object of strings")
    return dict(value)


def _body(call: Call) -> dict[str, object]:
    if not isinstance(call.body, dict):
        raise bad_request("the request body must be a JSON object")
    return call.body


def list_namespaces(state: ServerState, call: Call) -> Reply:
    """GET /namespaces?parent=..."""
    parent_text = call.query.get("parent", "")
    parent = namespace_from_path(parent_text) if parent_text else ()
    if parent and not call.principal.grants.can_see(parent):
        call.principal.require(parent, READ)
    found = [ns for ns in state.catalog.list_namespaces(parent) if call.principal.grants.can_see(ns)]
    items, token = page(found, call.query)
    payload: dict[str, object] = {"namespaces": [list(ns) for ns in items]}
    if token is not None:
        payload["next-page-token"] = token
    return Reply(payload=payload)


def create_namespace(state: ServerState, call: Call) -> Reply:
    """POST /namespaces"""
    body = _body(call)
    namespace = namespace_from_json(body.get("namespace"))
    call.principal.require(namespace, WRITE)
    properties = _properties(body.get("properties"), "properties")
    check_location_properties(properties, state.catalog.warehouse)
    state.catalog.create_namespace(namespace, properties)
    return Reply(payload={"namespace": list(namespace), "properties": properties})


def load_namespace(state: ServerState, call: Call) -> Reply:
    """GET /namespaces/{namespace}"""
    namespace = namespace_from_path(call.path["namespace"])
    call.principal.require(namespace, READ)
    properties = state.catalog.load_namespace_properties(namespace)
    return Reply(payload={"namespace": list(namespace), "properties": properties})


def namespace_exists(state: ServerState, call: Call) -> Reply:
    """HEAD /namespaces/{namespace}"""
    namespace = namespace_from_path(call.path["namespace"])
    call.principal.require(namespace, READ)
    if not state.catalog.namespace_exists(namespace):
        raise NoSuchNamespace(f"namespace {'.'.join(namespace)!r} does not exist")
    return Reply(status=204)


def drop_namespace(state: ServerState, call: Call) -> Reply:
    """DELETE /namespaces/{namespace}"""
    namespace = namespace_from_path(call.path["namespace"])
    call.principal.require(namespace, WRITE)
    state.catalog.drop_namespace(namespace)
    return Reply(status=204)


def update_properties(state: ServerState, call: Call) -> Reply:
    """POST /namespaces/{namespace}/properties"""
    namespace = namespace_from_path(call.path["namespace"])
    call.principal.require(namespace, WRITE)
    body = _body(call)
    removals = body.get("removals") or []
    if not isinstance(removals, list) or not all(isinstance(k, str) for k in removals):
        raise bad_request("removals must be a list of strings")
    updates = _properties(body.get("updates"), "updates")
    both = sorted(set(removals) & set(updates))
    if both:  # the spec's 422, as Iceberg Java's UpdateNamespacePropertiesRequest.validate
        raise HttpError(422, "UnprocessableEntityException", f"properties both removed and updated: {both}")
    check_location_properties(updates, state.catalog.warehouse)
    summary = state.catalog.update_namespace_properties(namespace, removals, updates)
    return Reply(payload={"updated": summary.updated, "removed": summary.removed, "missing": summary.missing})
