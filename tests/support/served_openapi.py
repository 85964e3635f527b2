"""The Iceberg REST OpenAPI document as the fuzzers check icefloe's server against it.

Two changes to the shipped document, both about what the document says rather than what the
server does:

- only the operations the server advertises in ``GET /v1/config`` (``server.app.ENDPOINTS``, plus
  config and the OAuth2 token endpoint) are kept. The others (remote signing, functions,
  register-view, unregister) answer 404 by design, a status the document does not list for them;
- every error response's schema is the wrapped ``IcebergErrorResponse``. The document declares a
  few answers as a bare ``ErrorModel`` (404/409/502 of view operations, the shared 406
  ``UnsupportedOperationResponse``), while its own examples there, every other error response
  and Iceberg Java's ``ErrorResponseParser`` use ``{"error": {...}}``; the server answers every
  error that way;
- ``TableMetadata``'s ``format-version`` goes to 4 and its ``current-snapshot-id`` may be
  ``null``: the server serves v4 tables, and for a table without a current snapshot Iceberg Java
  (``TableMetadataParser``, format version 3 on) and icefloe write ``null`` where v1 and v2 wrote
  ``-1``; the document still says 1 to 3 and an integer.

One addition, which changes no request or response the document allows: OpenAPI ``links``
(``LINKS``) on the success responses, saying which later request can reuse what an answer (or its
request) named: a created namespace is where tables and views are created, listed and dropped; a
created, loaded or committed table is what is committed, planned, renamed, dropped or reported
on; a plan's id is what is fetched or cancelled; a page's ``next-page-token`` asks for the next
page. The shipped document has no links, and without them schemathesis' stateful phase only
guesses at dependencies from names and rarely gets past its first request. A link that builds a
request body (rename, multi-table transaction, scan tasks) carries schemathesis' ``x-schemathesis:
{merge_body: false}`` extension, which OpenAPI tools ignore. To put the links on one operation
only, a response shared through ``components/responses`` is copied inline first.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from icefloe.server.app import ENDPOINTS

SPEC = Path(__file__).resolve().parents[2] / "src" / "icefloe" / "server" / "rest-catalog-open-api.yaml"
METHODS = ("get", "put", "post", "delete", "head", "patch", "options")
UNPREFIXED = {("GET", "/v1/config"), ("POST", "/v1/oauth/tokens")}
ERROR_MODEL = "#/components/schemas/ErrorModel"
ERROR_RESPONSE = "#/components/schemas/IcebergErrorResponse"

PREFIX = "$request.path.prefix"
# schemathesis' link extension: the link's body is the whole request body, given to the generator
# (and so to ``deep_requests.steer``) rather than merged over a generated one afterwards
WHOLE_BODY = "x-schemathesis"
# where a namespace, a table or a view was named, by the kind of request that named it
CREATED_NAMESPACE = {"prefix": PREFIX, "namespace": "$response.body#/namespace/0"}
SAME_NAMESPACE = {"prefix": PREFIX, "namespace": "$request.path.namespace"}
CREATED_TABLE = {**SAME_NAMESPACE, "table": "$request.body#/name"}
SAME_TABLE = {**SAME_NAMESPACE, "table": "$request.path.table"}
CREATED_VIEW = {**SAME_NAMESPACE, "view": "$request.body#/name"}
SAME_VIEW = {**SAME_NAMESPACE, "view": "$request.path.view"}
RENAMED_TABLE = {
    "prefix": PREFIX,
    "namespace": "$request.body#/destination/namespace/0",
    "table": "$request.body#/destination/name",
}

# what can follow a table being there, with the parameters that name it
_TABLE_FOLLOWERS = (
    "loadTable",
    "tableExists",
    "updateTable",
    "planTableScan",
    "loadCredentials",
    "reportMetrics",
    "dropTable",
)
_TABLE_BODIES = {
    # the source is the table; the destination name and the transaction's updates are generated
    "renameTable": {"source": {"namespace": ["$request.path.namespace"], "name": "{table}"}},
    "commitTransaction": {
        "table-changes": [{"identifier": {"namespace": ["$request.path.namespace"], "name": "{table}"}}]
    },
}


def _table_links(names: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Links from an answer that names a table (``names`` says where its parts are)."""
    links: dict[str, dict[str, Any]] = {
        op: {"operationId": op, "parameters": dict(names)} for op in _TABLE_FOLLOWERS
    }
    table = names["table"]
    for op, body in _TABLE_BODIES.items():
        links[op] = {
            "operationId": op,
            "parameters": {"prefix": PREFIX},
            "requestBody": _fill(body, names["namespace"], table),
            WHOLE_BODY: {"merge_body": False},
        }
    return links


def _fill(node: Any, namespace: str, table: str) -> Any:
    if isinstance(node, dict):
        return {k: _fill(v, namespace, table) for k, v in node.items()}
    if isinstance(node, list):
        return [_fill(v, namespace, table) for v in node]
    if node == "{table}":
        return table
    if node == "$request.path.namespace":
        return namespace
    return node


def _simple(names: dict[str, str], *ops: str) -> dict[str, dict[str, Any]]:
    return {op: {"operationId": op, "parameters": dict(names)} for op in ops}


LINKS: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = {
    ("post", "/v1/{prefix}/namespaces", "200"): _simple(
        CREATED_NAMESPACE,
        "createTable",
        "createView",
        "listTables",
        "listViews",
        "loadNamespaceMetadata",
        "namespaceExists",
        "updateProperties",
        "dropNamespace",
    ),
    ("post", "/v1/{prefix}/namespaces/{namespace}/tables", "200"): _table_links(CREATED_TABLE),
    ("get", "/v1/{prefix}/namespaces/{namespace}/tables/{table}", "200"): _table_links(SAME_TABLE),
    ("post", "/v1/{prefix}/namespaces/{namespace}/tables/{table}", "200"): _table_links(SAME_TABLE),
    ("post", "/v1/{prefix}/tables/rename", "204"): _simple(
        RENAMED_TABLE, "loadTable", "updateTable", "dropTable"
    ),
    ("post", "/v1/{prefix}/namespaces/{namespace}/tables/{table}/plan", "200"): {
        op: {"operationId": op, "parameters": {**SAME_TABLE, "plan-id": "$response.body#/plan-id"}}
        for op in ("fetchPlanningResult", "cancelPlanning")
    }
    | {
        "fetchScanTasks": {
            "operationId": "fetchScanTasks",
            "parameters": dict(SAME_TABLE),
            "requestBody": {"plan-task": "$response.body#/plan-tasks/0"},
            WHOLE_BODY: {"merge_body": False},
        }
    },
    ("post", "/v1/{prefix}/namespaces/{namespace}/views", "200"): _simple(
        CREATED_VIEW, "loadView", "viewExists", "replaceView", "dropView"
    ),
    ("post", "/v1/{prefix}/namespaces/{namespace}/views/{view}", "200"): _simple(
        SAME_VIEW, "loadView", "replaceView", "dropView"
    ),
    ("get", "/v1/{prefix}/namespaces/{namespace}/tables", "200"): {
        "listTables": {
            "operationId": "listTables",
            "parameters": {**SAME_NAMESPACE, "pageToken": "$response.body#/next-page-token"},
        }
    },
    ("get", "/v1/{prefix}/namespaces", "200"): {
        "listNamespaces": {
            "operationId": "listNamespaces",
            "parameters": {"prefix": PREFIX, "pageToken": "$response.body#/next-page-token"},
        }
    },
}


def served_document() -> dict[str, Any]:
    """The OpenAPI document (as a dict) restricted to served operations, errors always wrapped,
    with the links that let a stateful run chain requests."""
    document: dict[str, Any] = yaml.safe_load(SPEC.read_text())
    served = {tuple(endpoint.split(" ", 1)) for endpoint in ENDPOINTS} | UNPREFIXED
    paths: dict[str, Any] = document["paths"]
    for path, item in list(paths.items()):
        for method in [m for m in item if m in METHODS and (m.upper(), path) not in served]:
            del item[method]
        if not any(m in item for m in METHODS):
            del paths[path]
    _wrap_error_models(paths)
    _wrap_error_models(document["components"]["responses"])
    metadata = document["components"]["schemas"]["TableMetadata"]["properties"]
    metadata["format-version"]["maximum"] = 4
    metadata["current-snapshot-id"]["type"] = ["integer", "null"]
    _add_links(paths, document["components"]["responses"])
    return document


def _add_links(paths: dict[str, Any], shared: dict[str, Any]) -> None:
    """Put ``LINKS`` on their responses; a shared response (a ``$ref``) is copied inline first, so
    the links stay on the one operation they are about."""
    for (method, path, status), links in LINKS.items():
        responses = paths[path][method]["responses"]
        key = status if status in responses else int(status)
        response = responses[key]
        if "$ref" in response:
            response = copy.deepcopy(shared[response["$ref"].rsplit("/", 1)[1]])
            responses[key] = response
        assert "links" not in response, "the shipped document has links now: merge, do not replace"
        response["links"] = links


def _wrap_error_models(node: object) -> None:
    if isinstance(node, dict):
        if node.get("$ref") == ERROR_MODEL:
            node["$ref"] = ERROR_RESPONSE
        for value in node.values():
            _wrap_error_models(value)
    elif isinstance(node, list):
        for value in node:
            _wrap_error_models(value)
