"""Who is calling and what they may touch: bearer tokens, OAuth2 client credentials, grants.

A ``Grants`` maps namespaces to an access level, ``"read"`` or ``"write"`` (write implies read).
A grant on ``("sales",)`` covers ``sales`` and every namespace below it; the key ``"*"`` covers the
whole catalog. Tokens come from the configuration (``ServerConfig.tokens``) or from the server's
own OAuth2 client-credentials endpoint (``ServerConfig.clients``), which issues random tokens
with an expiry. With neither configured the server is open (anonymous callers get ``"*": write``).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from icefloe.server.errors import forbidden, not_authorized

READ = "read"
WRITE = "write"
ALL_NAMESPACES = "*"
_LEVELS = {READ: 1, WRITE: 2}


@dataclass(frozen=True)
class Grants:
    """Access levels by namespace (dotted text or ``"*"``)."""

    levels: Mapping[str, str] = field(default_factory=lambda: {ALL_NAMESPACES: WRITE})

    def __post_init__(self) -> None:
        for key, level in self.levels.items():
            if level not in _LEVELS:
                raise ValueError(f"grant for {key!r} must be 'read' or 'write', not {level!r}")

    def level_for(self, namespace: tuple[str, ...]) -> int:
        """The strongest level granted on ``namespace`` or one of its ancestors (0 = none)."""
        best = _LEVELS.get(self.levels.get(ALL_NAMESPACES, ""), 0)
        for depth in range(1, len(namespace) + 1):
            best = max(best, _LEVELS.get(self.levels.get(".".join(namespace[:depth]), ""), 0))
        return best

    def can_see(self, namespace: tuple[str, ...]) -> bool:
        """Whether listing may show ``namespace``: readable itself, or an ancestor of a grant."""
        if self.level_for(namespace) >= 1:
            return True
        prefix = ".".join(namespace) + "."
        return any(key.startswith(prefix) for key in self.levels)


@dataclass(frozen=True)
class Principal:
    """An authenticated caller."""

    name: str
    grants: Grants

    def holds(self, namespace: tuple[str, ...], level: str) -> bool:
        """Whether the caller holds ``level`` on ``namespace``."""
        return self.grants.level_for(namespace) >= _LEVELS[level]

    def require(self, namespace: tuple[str, ...], level: str) -> None:
        """403 unless the caller holds ``level`` on ``namespace``."""
        if not self.holds(namespace, level):
            shown = ".".join(namespace) or "the catalog root"
            raise forbidden(f"{self.name} may not {level} namespace {shown!r}")


@dataclass(frozen=True)
class OAuthClient:
    """A client of the OAuth2 client-credentials endpoint."""

    secret: str
    grants: Grants


ANONYMOUS = Principal("anonymous", Grants())


def basic_credentials(authorization: str) -> tuple[str, str]:
    """(client id, secret) of an HTTP Basic ``Authorization`` header (credential ``id:secret``).

    Iceberg Java sends its ``credential`` this way when it exchanges an expired token.
    """
    try:
        text = base64.b64decode(authorization[6:].strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise not_authorized("malformed Basic credentials") from None
    client_id, _, secret = text.rpartition(":")
    return client_id, secret


class TokenStore:
    """Configured tokens plus the tokens this server issued (in memory, with expiry)."""

    def __init__(
        self,
        tokens: Mapping[str, Grants],
        clients: Mapping[str, OAuthClient],
        token_lifetime_s: int = 3600,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._static = dict(tokens)
        self._clients = dict(clients)
        self._issued: dict[str, tuple[Principal, float]] = {}
        self._lock = threading.Lock()
        self.token_lifetime_s = token_lifetime_s
        self.clock = clock  # issued tokens expire on it (monotonic seconds); tests move it

    @property
    def open(self) -> bool:
        """No authentication configured: every caller is anonymous with full access."""
        return not self._static and not self._clients

    def principal(self, authorization: str | None) -> Principal:
        """The caller behind an ``Authorization`` header; 401 when it is missing or invalid."""
        if self.open:
            return ANONYMOUS
        if not authorization or not authorization.lower().startswith("bearer "):
            raise not_authorized()
        token = authorization[7:].strip()
        for known, grants in self._static.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                return Principal("token", grants)
        with self._lock:
            found = self._issued.get(token)
            if found is not None and found[1] < self.clock():
                del self._issued[token]
                found = None
        if found is None:
            raise not_authorized("the bearer token is invalid or expired")
        return found[0]

    def issue(self, client_id: str, client_secret: str) -> tuple[str, int]:
        """A new token for valid client credentials; 401 otherwise."""
        client = self._clients.get(client_id)
        if client is None or not hmac.compare_digest(client.secret.encode(), client_secret.encode()):
            raise not_authorized("invalid client credentials")
        token = secrets.token_urlsafe(32)
        with self._lock:
            now = self.clock()
            self._issued = {t: v for t, v in self._issued.items() if v[1] >= now}
            principal = Principal(f"client {client_id}", client.grants)
            self._issued[token] = (principal, now + self.token_lifetime_s)
        return token, self.token_lifetime_s

    def refresh(self, principal: Principal) -> tuple[str, int]:
        """A fresh token for an authenticated caller (OAuth2 token exchange of its own token)."""
        if principal is ANONYMOUS:
            raise forbidden("anonymous callers get no tokens")
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._issued[token] = (principal, self.clock() + self.token_lifetime_s)
        return token, self.token_lifetime_s
