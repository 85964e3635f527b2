"""The Starlette application of the REST catalog server.

Every route goes through ``_endpoint``: read the body (refusing more than ``max_request_bytes``),
authenticate, answer a retried mutation from the idempotency cache, run the synchronous handler
in the thread pool, and turn errors into the spec's ``IcebergErrorResponse``. Routes are served
both without a prefix (``/v1/namespaces``) and under the configured one (``/v1/{prefix}/...``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote_to_bytes

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from icefloe.errors import Unsupported
from icefloe.server import namespaces, planning, tables, views
from icefloe.server.auth import Principal, TokenStore, basic_credentials
from icefloe.server.config import ServerConfig
from icefloe.server.context import Call, IdempotencyCache, Reply, ServerState
from icefloe.server.errors import HttpError, bad_request, error_body, error_response, not_found
from icefloe.server.header_case import CANONICAL_HEADER_NAMES

Handler = Callable[[ServerState, Call], Reply]

# (method, spec path below /v1/{prefix}, handler, mutation)
ROUTES: tuple[tuple[str, str, Handler, bool], ...] = (
    ("GET", "/namespaces", namespaces.list_namespaces, False),
    ("POST", "/namespaces", namespaces.create_namespace, True),
    ("GET", "/namespaces/{namespace}", namespaces.load_namespace, False),
    ("HEAD", "/namespaces/{namespace}", namespaces.namespace_exists, False),
    ("DELETE", "/namespaces/{namespace}", namespaces.drop_namespace, True),
    ("POST", "/namespaces/{namespace}/properties", namespaces.update_properties, True),
    ("GET", "/namespaces/{namespace}/tables", tables.list_tables, False),
    ("POST", "/namespaces/{namespace}/tables", tables.create_table, True),
    ("POST", "/namespaces/{namespace}/register", tables.register_table, True),
    ("GET", "/namespaces/{namespace}/tables/{table}", tables.load_table, False),
    ("HEAD", "/namespaces/{namespace}/tables/{table}", tables.table_exists, False),
    ("POST", "/namespaces/{namespace}/tables/{table}", tables.commit, True),
    ("DELETE", "/namespaces/{namespace}/tables/{table}", tables.drop_table, True),
    ("GET", "/namespaces/{namespace}/tables/{table}/credentials", tables.load_credentials, False),
    ("POST", "/namespaces/{namespace}/tables/{table}/metrics", tables.report_metrics, False),
    ("POST", "/namespaces/{namespace}/tables/{table}/plan", planning.plan_table_scan, False),
    ("GET", "/namespaces/{namespace}/tables/{table}/plan/{plan_id}", planning.fetch_plan, False),
    ("DELETE", "/namespaces/{namespace}/tables/{table}/plan/{plan_id}", planning.cancel_plan, False),
    ("POST", "/namespaces/{namespace}/tables/{table}/tasks", planning.unknown_plan_task, False),
    ("GET", "/namespaces/{namespace}/views", views.list_views, False),
    ("POST", "/namespaces/{namespace}/views", views.create_view, True),
    ("POST", "/namespaces/{namespace}/register-view", views.register_view, True),
    ("GET", "/namespaces/{namespace}/views/{view}", views.load_view, False),
    ("HEAD", "/namespaces/{namespace}/views/{view}", views.view_exists, False),
    ("POST", "/namespaces/{namespace}/views/{view}", views.replace_view, True),
    ("DELETE", "/namespaces/{namespace}/views/{view}", views.drop_view, True),
    ("POST", "/tables/rename", tables.rename_table, True),
    ("POST", "/views/rename", views.rename_view, True),
    ("POST", "/transactions/commit", tables.commit_many, True),
)
# The operations whose spec lists 406 (UnsupportedOperationException). Another mutation asking
# for something this server cannot do (an upgrade to format version 9, say) is answered 400
# BadRequest, the status Iceberg Java's server gives such requests and one the spec documents for
# every operation. Reads keep 406: there the request is fine and the stored metadata is what the
# server cannot read (a format version from the future), which icefloe's client maps back to
# Unsupported.
ANSWER_406: frozenset[Handler] = frozenset(
    (
        namespaces.create_namespace,
        namespaces.update_properties,
        planning.plan_table_scan,
        tables.rename_table,
        views.rename_view,
    )
)
ENDPOINTS = [
    f"{method} /v1/{{prefix}}{path.replace('{plan_id}', '{plan-id}')}" for method, path, _, _ in ROUTES
]
IDEMPOTENCY_HEADER = "idempotency-key"


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                raise HttpError(413, "RequestTooLargeException", f"request body larger than {limit} bytes")
        except ValueError:
            raise bad_request("invalid Content-Length") from None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise HttpError(413, "RequestTooLargeException", f"request body larger than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _decode_json(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad_request(f"the request body is not valid JSON: {exc}") from None


def _response(reply: Reply, head: bool = False) -> Response:
    headers = dict(reply.headers) if reply.headers else None
    response: Response
    if reply.status in (204, 304) or head:
        status = 204 if head and reply.status < 300 else reply.status
        response = Response(status_code=status, headers=headers)
    elif reply.json_text is not None:
        response = Response(
            reply.json_text, status_code=reply.status, media_type="application/json", headers=headers
        )
    else:
        response = JSONResponse(reply.payload, status_code=reply.status, headers=headers)
    if headers:  # Starlette lowercases every name (see ``header_case``)
        response.raw_headers = [(CANONICAL_HEADER_NAMES.get(k, k), v) for k, v in response.raw_headers]
    return response


def _path_params(template: str, request: Request) -> dict[str, str]:
    """The path parameters, each decoded once from the raw path as form-encoded text.

    Iceberg Java encodes identifiers with ``URLEncoder`` (a space becomes ``+``, a ``+`` becomes
    ``%2B``) and decodes them with ``URLDecoder`` on its own server; PyIceberg and icefloe send
    ``%20`` / ``%2B``, which this decodes the same way. The router's already-decoded parameters
    would keep a ``+`` as a plus sign.
    """
    raw = request.scope.get("raw_path")
    names = template.split("/")
    segments = raw.split(b"/") if isinstance(raw, bytes) else []
    if len(segments) != len(names):
        return dict(request.path_params)
    params: dict[str, str] = {}
    for name, segment in zip(names, segments, strict=True):
        if name.startswith("{") and name.endswith("}"):
            try:
                params[name[1:-1]] = unquote_to_bytes(segment.replace(b"+", b" ")).decode("utf-8")
            except UnicodeDecodeError:
                raise bad_request("a path parameter is not valid UTF-8") from None
    return params


@dataclass
class FinalReply(Reply):
    """A reply kept for an Idempotency-Key, with the operation (method and raw path) it answered."""

    operation: str = ""


def _operation(request: Request) -> str:
    raw = request.scope.get("raw_path")
    return f"{request.method} {raw.decode('latin-1') if isinstance(raw, bytes) else request.url.path}"


async def _replay(
    state: ServerState, cached: Reply, operation: str, request: Request, principal: Principal
) -> Response:
    """The stored answer of a retried mutation; 400 when the key answered a different operation.

    The spec forbids reusing a key across operations. Replaying another operation's answer would
    tell a client its DELETE "already exists" while nothing was deleted, and running the request
    would break the promise that a key has no further effects; refusing it says what went wrong.
    A replayed table result carries credentials vended now, as the retry asks for them (the
    original ones may have expired since, and the retry may not have asked at all).
    """
    if isinstance(cached, FinalReply) and cached.operation != operation:
        raise bad_request(f"the Idempotency-Key was already used for another operation ({cached.operation})")
    if cached.vending is not None:
        vend = tables.vended_credentials
        headers = dict(request.headers)
        credentials = await run_in_threadpool(vend, state, principal, headers, cached.vending)
        cached = replace(cached, credentials=credentials)
    return _response(cached.sendable())


def _endpoint(state: ServerState, handler: Handler, mutation: bool, template: str) -> Any:
    prefixed = template.startswith("/v1/{prefix}/")
    unsupported_is_406 = handler in ANSWER_406 or not mutation

    async def run(request: Request) -> Response:
        try:
            path = _path_params(template, request)
            if prefixed and path.pop("prefix", None) != state.config.prefix:
                raise not_found("unknown catalog prefix", "NoSuchWarehouseException")
            raw = await _read_body(request, state.config.max_request_bytes)
            principal = state.tokens.principal(request.headers.get("authorization"))
            key_text = request.headers.get(IDEMPOTENCY_HEADER) if mutation else None
            key = (principal.name, key_text) if key_text else None
            operation = _operation(request)
            if key is not None:
                cached = state.idempotency.get(key)
                if cached is not None:
                    return await _replay(state, cached, operation, request, principal)
            call = Call(principal, path, dict(request.query_params), dict(request.headers), _decode_json(raw))
            try:
                reply = await run_in_threadpool(handler, state, call)
            except Exception as exc:
                if isinstance(exc, Unsupported) and not unsupported_is_406:
                    exc = bad_request(str(exc))
                response = error_response(exc)
                if key is not None and response.status_code < 500:
                    body = json.loads(bytes(response.body))
                    state.idempotency.put(key, FinalReply(response.status_code, body, operation=operation))
                return response
            if key is not None:
                kept = reply.without_credentials()
                state.idempotency.put(key, FinalReply(**vars(kept), operation=operation))
            return _response(reply.sendable(), head=request.method == "HEAD")
        except Exception as exc:
            return error_response(exc)

    return run


def _config_endpoint(state: ServerState) -> Any:
    async def run(request: Request) -> Response:
        try:
            state.tokens.principal(request.headers.get("authorization"))
        except HttpError as exc:
            return error_response(exc)
        overrides: dict[str, str] = {}
        if state.config.prefix:
            overrides["prefix"] = state.config.prefix
        defaults = dict(state.config.defaults)
        return JSONResponse(
            {
                "defaults": defaults,
                "overrides": overrides,
                "endpoints": ENDPOINTS,
                "idempotency-key-lifetime": "PT30M",
            }
        )

    return run


def _exchange(state: ServerState, authorization: str | None, form: dict[str, str]) -> tuple[str, int]:
    """A token exchange as Iceberg Java's OAuth2 session sends it.

    A live token refreshes itself (``Authorization: Bearer`` the token, also the
    ``subject_token``); an expired one is exchanged under the client's credentials sent as HTTP
    Basic, so those credentials decide; with no header the ``subject_token`` must be valid.
    """
    if authorization and authorization.lower().startswith("basic "):
        return state.tokens.issue(*basic_credentials(authorization))
    if not authorization and form.get("subject_token"):
        authorization = "Bearer " + form["subject_token"]
    return state.tokens.refresh(state.tokens.principal(authorization))


def _token_endpoint(state: ServerState) -> Any:
    async def run(request: Request) -> Response:
        try:
            raw = await _read_body(request, 64 * 1024)
            form = {k: v[0] for k, v in parse_qs(raw.decode("utf-8", "replace")).items()}
            grant = form.get("grant_type")
            if grant == "client_credentials":
                token, lifetime = state.tokens.issue(form.get("client_id", ""), form.get("client_secret", ""))
            elif grant == "urn:ietf:params:oauth:grant-type:token-exchange":
                token, lifetime = _exchange(state, request.headers.get("authorization"), form)
            else:
                return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
        except HttpError as exc:
            error = "invalid_client" if exc.status == 401 else "invalid_request"
            return JSONResponse({"error": error, "error_description": str(exc)}, status_code=exc.status)
        return JSONResponse(
            {
                "access_token": token,
                "token_type": "bearer",
                "expires_in": lifetime,
                "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
            }
        )

    return run


OPENAPI_DOCUMENT = Path(__file__).with_name("rest-catalog-open-api.yaml")


async def _openapi(request: Request) -> Response:
    """The Iceberg REST OpenAPI document (apache/iceberg open-api/rest-catalog-open-api.yaml)."""
    return Response(OPENAPI_DOCUMENT.read_bytes(), media_type="application/yaml")


async def _not_found(request: Request, exc: Exception) -> Response:
    return JSONResponse(error_body(404, "NotFoundException", f"no route for {request.url.path}"), 404)


async def _method_not_allowed(request: Request, exc: Exception) -> Response:
    return JSONResponse(error_body(405, "MethodNotAllowedException", "method not allowed"), 405)


class RefuseEncodedSlashes:
    """ASGI middleware answering 400 to a path with an encoded slash (``%2F``) in a segment.

    Starlette routes on the decoded path, so ``tables/a%2Fcredentials`` would reach the
    credentials route (405 for a POST) and ``namespaces/db%2Ftables`` would list the tables of
    ``db``. No identifier may contain ``/`` (``catalog.identifiers``), so such a request can only
    be refused, before routing, with the spec's error body.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        raw = scope.get("raw_path") if scope["type"] == "http" else None
        if isinstance(raw, bytes) and b"%2f" in raw.lower():
            error = bad_request("a path segment holds an encoded '/', which no identifier may contain")
            await error_response(error)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def create_app(config: ServerConfig) -> Starlette:
    """The ASGI application serving ``config.catalog`` over the Iceberg REST protocol."""
    state = ServerState(
        config,
        TokenStore(config.tokens, config.clients, config.token_lifetime_s),
        idempotency=IdempotencyCache(config.idempotency_entries),
    )
    routes: list[Route] = [
        Route("/v1/config", _config_endpoint(state), methods=["GET"]),
        Route("/v1/oauth/tokens", _token_endpoint(state), methods=["POST"]),
        Route("/openapi.yaml", _openapi, methods=["GET"]),
    ]
    by_path: dict[str, list[tuple[str, Handler, bool]]] = {}
    for method, path, handler, mutation in ROUTES:
        by_path.setdefault(path, []).append((method, handler, mutation))
    for prefixed in (False, True):
        for path, handlers in by_path.items():
            full = ("/v1/{prefix}" if prefixed else "/v1") + path
            # HEAD first: a GET route answers HEAD too in Starlette
            for method, handler, mutation in sorted(handlers, key=lambda h: h[0] != "HEAD"):
                routes.append(
                    Route(full, _endpoint(state, handler, mutation, full), methods=[method], name=None)
                )
    app = Starlette(
        routes=routes,
        middleware=[Middleware(RefuseEncodedSlashes)],
        exception_handlers={404: _not_found, 405: _method_not_allowed},
    )
    app.state.icefloe = state
    return app
