"""HTTP for the REST catalog client: pooled connections (``transport``), retries with backoff,
idempotency keys, and the spec's ``IcebergErrorResponse`` turned into icefloe errors.

- 429 and 503 are retried with exponential backoff and jitter (``Retry-After`` is honoured);
- a connection error or timeout is retried for reads, and for mutations when the server
  advertised idempotency keys (the retry carries the same key, so it cannot apply twice);
- every mutation carries an ``Idempotency-Key`` (a UUIDv7-style value, one per logical call).
"""

from __future__ import annotations

import json
import os
import random
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlencode

from icefloe.catalog.rest.transport import Reply, TlsOptions, Transport, TransportError, shared_transport
from icefloe.errors import (
    AccessDenied,
    AlreadyExists,
    CommitConflict,
    CommitStateUnknown,
    IcefloeError,
    NamespaceNotEmpty,
    NoSuchNamespace,
    NoSuchTable,
    NoSuchView,
    NotFound,
    Unsupported,
    ValidationError,
)
from icefloe.io.durability import sync_pending

RETRYABLE_STATUS = (429, 503)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry throttled or failed requests."""

    attempts: int = 5
    base_delay_s: float = 0.05
    max_delay_s: float = 5.0
    timeout_s: float = 60.0

    def delay(self, attempt: int, retry_after: str | None) -> float:
        """Seconds to wait before attempt ``attempt + 1``."""
        if retry_after:
            try:
                return min(float(retry_after), self.max_delay_s)
            except ValueError:
                pass
        ceiling = min(self.max_delay_s, self.base_delay_s * (2**attempt))
        return random.uniform(ceiling / 2, ceiling)


def idempotency_key() -> str:
    """A fresh UUIDv7-layout key: 48-bit millisecond time, version 7, random rest."""
    millis = int(time.time() * 1000) & ((1 << 48) - 1)
    rand = int.from_bytes(os.urandom(10), "big")
    rand_a, rand_b = (rand >> 68) & 0xFFF, rand & ((1 << 62) - 1)
    value = (millis << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
    return str(uuid.UUID(int=value))


class ServiceError(IcefloeError):
    """The catalog service failed (5xx) or could not be reached."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


_BY_TYPE: dict[str, type[IcefloeError]] = {
    "NoSuchTableException": NoSuchTable,
    "NoSuchNamespaceException": NoSuchNamespace,
    "NoSuchViewException": NoSuchView,
    "NotFoundException": NotFound,
    "NoSuchWarehouseException": NotFound,
    "AlreadyExistsException": AlreadyExists,
    "NamespaceAlreadyExistsException": AlreadyExists,
    "TableAlreadyExistsException": AlreadyExists,
    "NamespaceNotEmptyException": NamespaceNotEmpty,
    "CommitFailedException": CommitConflict,
    "CommitStateUnknownException": CommitStateUnknown,
}


def error_for(response: Reply) -> IcefloeError:
    """The icefloe error of a non-2xx response."""
    status = response.status
    error_type, message = "", response.reason or ""
    try:
        body = response.json()
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict):
            error_type = str(error.get("type", ""))
            message = str(error.get("message", message))
        elif isinstance(body, dict) and "error" in body:  # OAuth2 error shape
            message = f"{body.get('error')}: {body.get('error_description', '')}"
    except ValueError:
        message = response.text[:500] or message
    text = f"{message} (HTTP {status}{', ' + error_type if error_type else ''})"
    cls = _BY_TYPE.get(error_type)
    if cls is not None and not (cls is CommitStateUnknown and status < 500):
        return cls(text)
    if status in (401, 403, 419):
        return AccessDenied(text)
    if status == 404:
        return NotFound(text)
    if status == 409:
        return CommitConflict(text)
    if status == 406:
        return Unsupported(text)
    if 400 <= status < 500:
        return ValidationError(text)
    return ServiceError(text, status)


class Auth(Protocol):
    """Where request credentials come from (``catalog.rest.auth``)."""

    def headers(self) -> dict[str, str]:
        """Authorization headers for the next request."""
        ...

    def invalidate(self) -> bool:
        """Drop a refused token; True when a new one can be obtained."""
        ...


class RestSession:
    """Pooled HTTP connections to one catalog base URI, with its credentials and retry policy."""

    def __init__(
        self,
        base_uri: str,
        auth: Auth,
        policy: RetryPolicy | None = None,
        tls: TlsOptions | None = None,
    ) -> None:
        self.base_uri = base_uri.rstrip("/")
        self.auth = auth
        self.policy = policy or RetryPolicy()
        self.idempotent_retries = False
        self._transport = Transport(self.base_uri, tls, self.policy.timeout_s)

    def close(self) -> None:
        """Close pooled connections."""
        self._transport.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        form: Mapping[str, str] | None = None,
        mutation: bool = False,
        extra_headers: Mapping[str, str] | None = None,
    ) -> Reply:
        """Send a request (retrying as the module doc says); non-2xx raises the mapped error."""
        url = path if path.startswith("http") else self.base_uri + path
        if params:
            url += ("&" if "?" in url else "?") + urlencode(params)
        headers = self.auth.headers()
        if extra_headers:
            headers.update(extra_headers)
        data: bytes | None = None
        if form is not None:
            data = urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if mutation:
            headers["Idempotency-Key"] = idempotency_key()
            sync_pending()  # the service may make what this mutation names visible at once
        may_resend = not mutation or self.idempotent_retries
        attempt = 0
        renewed = False
        while True:
            try:
                response = self._transport.send(method, url, data, headers)
            except TransportError as exc:
                if may_resend and attempt + 1 < self.policy.attempts:
                    time.sleep(self.policy.delay(attempt, None))
                    attempt += 1
                    continue
                raise ServiceError(f"{method} {url} failed: {exc}") from exc
            if response.status in RETRYABLE_STATUS and attempt + 1 < self.policy.attempts:
                time.sleep(self.policy.delay(attempt, response.headers.get("Retry-After")))
                attempt += 1
                continue
            if response.status == 401 and not renewed and self.auth.invalidate():
                renewed = True
                headers.update(self.auth.headers())
                continue
            if response.status >= 400:
                raise error_for(response)
            return response


def post_form(url: str, form: Mapping[str, str], tls: TlsOptions | None = None) -> Reply:
    """One POST of a form (an OAuth2 token request) to any URL: no retries, no credentials, the
    environment's proxies; ServiceError when no reply came."""
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    try:
        return shared_transport(tls).send("POST", url, urlencode(form).encode(), headers)
    except TransportError as exc:
        raise ServiceError(f"POST {url} failed: {exc}") from exc
