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
  error that way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from icefloe.server.app import ENDPOINTS

SPEC = Path(__file__).resolve().parents[2] / "src" / "icefloe" / "server" / "rest-catalog-open-api.yaml"
METHODS = ("get", "put", "post", "delete", "head", "patch", "options")
UNPREFIXED = {("GET", "/v1/config"), ("POST", "/v1/oauth/tokens")}
ERROR_MODEL = "#/components/schemas/ErrorModel"
ERROR_RESPONSE = "#/components/schemas/IcebergErrorResponse"


def served_document() -> dict[str, Any]:
    """The OpenAPI document (as a dict) restricted to served operations, errors always wrapped."""
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
    return document


def _wrap_error_models(node: object) -> None:
    if isinstance(node, dict):
        if node.get("$ref") == ERROR_MODEL:
            node["$ref"] = ERROR_RESPONSE
        for value in node.values():
            _wrap_error_models(value)
    elif isinstance(node, list):
        for value in node:
            _wrap_error_models(value)
