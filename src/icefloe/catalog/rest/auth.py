"""Credentials of the REST catalog client: a fixed bearer token, or OAuth2 client credentials.

Catalog properties (the names Iceberg Java and PyIceberg use):

- ``token``: a bearer token sent as is;
- ``credential``: ``client_id:client_secret`` exchanged at ``oauth2-server-uri`` (default
  ``<uri>/v1/oauth/tokens``) for a token, with ``scope`` (default ``catalog``). The token is
  fetched again shortly before ``expires_in`` runs out, and once more when the server answers 401.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

from icefloe.catalog.rest.http import post_form
from icefloe.catalog.rest.transport import TlsOptions
from icefloe.errors import AccessDenied

TOKEN = "token"
CREDENTIAL = "credential"
OAUTH2_SERVER_URI = "oauth2-server-uri"
SCOPE = "scope"
DEFAULT_SCOPE = "catalog"
REFRESH_MARGIN_S = 60.0


class BearerAuth:
    """Headers for a fixed token (or none)."""

    def __init__(self, token: str | None) -> None:
        self.token = token

    def headers(self) -> dict[str, str]:
        """The Authorization header, if there is a token."""
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def shipping_headers(self) -> dict[str, str]:
        """The header to ship to Spark executors (a fixed token lasts as long as it lasts)."""
        return self.headers()

    def invalidate(self) -> bool:
        """A fixed token cannot be renewed."""
        return False


class ClientCredentialsAuth:
    """OAuth2 client credentials with refresh before expiry."""

    def __init__(
        self,
        token_uri: str,
        client_id: str,
        client_secret: str,
        scope: str = DEFAULT_SCOPE,
        clock: Callable[[], float] = time.monotonic,
        tls: TlsOptions | None = None,
    ) -> None:
        self._token_uri = token_uri
        self._client_id = client_id
        self._client_secret = client_secret
        self._scope = scope
        self._clock = clock
        self._tls = tls
        self._token: str | None = None
        self._expires_at = 0.0
        self._lifetime_s = float("inf")
        self._lock = threading.Lock()
        self.fetches = 0

    def _fetch(self) -> None:
        form = {
            "grant_type": "client_credentials",
            "client_id": self._client_id,
            "client_secret": self._client_secret,
            "scope": self._scope,
        }
        response = post_form(self._token_uri, form, self._tls)
        if response.status != 200:
            raise AccessDenied(f"OAuth2 token request failed (HTTP {response.status}): {response.text[:300]}")
        body = response.json()
        self._token = str(body["access_token"])
        expires_in = body.get("expires_in")
        self._lifetime_s = float(expires_in) if expires_in else float("inf")
        self._expires_at = self._clock() + self._lifetime_s
        self.fetches += 1

    def headers(self) -> dict[str, str]:
        """The Authorization header with a token valid for at least the refresh margin."""
        with self._lock:
            if self._token is None or self._clock() > self._expires_at - REFRESH_MARGIN_S:
                self._fetch()
            return {"Authorization": f"Bearer {self._token}"}

    def shipping_headers(self) -> dict[str, str]:
        """The Authorization header to ship to Spark executors, which cannot fetch a token of their
        own: one with at least half its lifetime left (fetched anew otherwise), so a job planned
        just before the driver's refresh does not start with a token about to expire."""
        with self._lock:
            if self._token is None or self._clock() > self._expires_at - self._lifetime_s / 2:
                self._fetch()
            return {"Authorization": f"Bearer {self._token}"}

    def invalidate(self) -> bool:
        """Forget the token (the server refused it); the next request fetches a new one."""
        with self._lock:
            self._token = None
        return True


def auth_from_properties(
    uri: str, properties: Mapping[str, str], tls: TlsOptions | None = None
) -> BearerAuth | ClientCredentialsAuth:
    """The credentials the catalog properties describe (``tls``: how the token endpoint is checked)."""
    credential = properties.get(CREDENTIAL)
    if credential:
        client_id, sep, secret = credential.partition(":")
        if not sep:
            client_id, secret = "", credential
        token_uri = properties.get(OAUTH2_SERVER_URI) or uri.rstrip("/") + "/v1/oauth/tokens"
        scope = properties.get(SCOPE, DEFAULT_SCOPE)
        return ClientCredentialsAuth(token_uri, client_id, secret, scope, tls=tls)
    return BearerAuth(properties.get(TOKEN))
