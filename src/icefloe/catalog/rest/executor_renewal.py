"""Vended storage credentials that Spark executors renew themselves.

Spark jobs ship ``table.io.properties`` to their executors, which build their own FileIO from them
(``spark.runtime.executor_io``). A snapshot of vended credentials would fail a job on its executors
once the job outlives them, so a driver FileIO that can renew also ships what an executor needs to
ask the service itself, under ``RENEWAL_PREFIX``:

- ``credentials-uri``: the absolute URL of the table's ``GET .../credentials``;
- ``table-location``: the table location, to choose the credential with the longest prefix;
- ``token``: the bearer token the driver's catalog session sends when the job is planned;
- ``ssl.verify``, ``ssl.cabundle``, ``ssl.client.cert``, ``ssl.client.key``: how the driver's
  client checks the service (the files must exist at the same paths on the executors' hosts).

**OAuth2.** Executors get the driver's current access token, never the client secret, so they
cannot fetch a new token. A token from client credentials expires (``icefloe serve`` issues them for
1 h); once it has, the service answers an executor's renewal with 401 and the executor fails with
``CatalogTokenExpired``, saying so and how to lengthen the lifetimes. A job therefore keeps its
storage access until its executors need new credentials after the shipped token has expired: past
the token's expiry by up to one credential lifetime. Executors do not exchange their token for a new one (the
service could), so a token copied from an executor stays bounded by the lifetime the service gave
it.

These properties live only in FileIO properties, which icefloe writes into no metadata file and no
log message: the same path the vended secret key already travels.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from urllib3.util import parse_url

from icefloe.catalog.rest.http import RestSession, RetryPolicy
from icefloe.catalog.rest.transport import (
    SSL_CA_BUNDLE,
    SSL_CLIENT_CERT,
    SSL_CLIENT_KEY,
    SSL_VERIFY,
    tls_from_properties,
)
from icefloe.catalog.rest.vended import (
    CREDENTIALS_URI,
    RENEWAL_PREFIX,
    Refresh,
    VendedFileIO,
    best_credential,
)
from icefloe.errors import AccessDenied

TABLE_LOCATION = RENEWAL_PREFIX + "table-location"
TOKEN = RENEWAL_PREFIX + "token"
TLS_KEYS = (SSL_VERIFY, SSL_CA_BUNDLE, SSL_CLIENT_CERT, SSL_CLIENT_KEY)
BEARER = "Bearer "


class CatalogTokenExpired(AccessDenied):
    """The catalog refused the token an executor renews its storage credentials with."""


def renewal_properties(
    credentials_uri: str, location: str, auth_headers: Mapping[str, str], client_properties: Mapping[str, str]
) -> dict[str, str]:
    """What an executor needs to renew a table's credentials: ``auth_headers`` are the ones the
    driver's session sends now, ``client_properties`` the catalog's (only TLS settings are taken)."""
    shipped = {CREDENTIALS_URI: credentials_uri, TABLE_LOCATION: location}
    authorization = auth_headers.get("Authorization", "")
    if authorization.startswith(BEARER):
        shipped[TOKEN] = authorization[len(BEARER) :]
    for key in TLS_KEYS:
        if client_properties.get(key):
            shipped[RENEWAL_PREFIX + key] = client_properties[key]
    return shipped


class ShippedToken:
    """The driver's bearer token on an executor, which cannot get another one: the service
    refusing it (401, the only time ``invalidate`` is called) ends the renewal with
    ``CatalogTokenExpired``."""

    def __init__(self, token: str | None, credentials_uri: str) -> None:
        self.token = token
        self.credentials_uri = credentials_uri

    def headers(self) -> dict[str, str]:
        """The Authorization header, if the driver had a token."""
        return {"Authorization": BEARER + self.token} if self.token else {}

    def invalidate(self) -> bool:
        """Raise ``CatalogTokenExpired``: an executor holds no client secret to fetch a new token."""
        raise CatalogTokenExpired(
            f"the catalog refused (HTTP 401) the token this Spark executor renews its storage "
            f"credentials with ({self.credentials_uri}): the token the driver shipped has expired "
            "or was revoked, and executors cannot fetch a new one. For jobs this long, give the "
            "catalog a longer-lived token (a fixed 'token', or a longer OAuth2 token lifetime on "
            "the service: icefloe serve --token-lifetime-s) or ask the service for "
            "longer-lived credentials (rest.vended-credentials.duration-s, up to 43200 s)"
        )


def executor_refresh(properties: Mapping[str, str]) -> Refresh:
    """How an executor renews the credentials in ``properties``: ``GET`` the shipped credentials
    URI through the REST client's session, retries on 429 and 503 included."""
    uri = properties[CREDENTIALS_URI]
    location = properties.get(TABLE_LOCATION, "")
    shipped_tls = {
        key: properties[RENEWAL_PREFIX + key] for key in TLS_KEYS if RENEWAL_PREFIX + key in properties
    }
    parsed = parse_url(uri)
    session = RestSession(
        f"{parsed.scheme}://{parsed.netloc}",
        ShippedToken(properties.get(TOKEN), uri),
        RetryPolicy(),
        tls_from_properties(shipped_tls),
    )

    def refresh() -> dict[str, str]:
        answer = session.request("GET", uri).json()
        return best_credential(answer.get("storage-credentials"), location)

    return refresh


def executor_file_io(properties: Mapping[str, str], clock: Callable[[], float] = time.time) -> VendedFileIO:
    """A FileIO that renews the shipped credentials itself (``properties`` name ``CREDENTIALS_URI``;
    ``clock``: the tests' seam, as on ``VendedFileIO``)."""
    return VendedFileIO(properties, executor_refresh(properties), clock)
