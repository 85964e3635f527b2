"""Which catalog properties are a login: whatever opens the catalog for whoever holds it.

A login stays with the process it was given to. Spark ships many objects from the driver to
Python workers and executors (``icefloe.spark.worker_catalog`` maps them); FileIO properties and
the properties a Spark task loads a table with are built without these. The login is:

- ``token`` (a bearer token), ``credential`` (an OAuth2 ``client_id:client_secret``),
  ``oauth2-server-uri`` (where the credential is exchanged, which may itself carry a secret);
- every ``header.*`` (extra HTTP headers: a tenant or API key header is as good as a token);
- the password of a ``uri`` (``postgresql://user:pw@host/db``): a SQL catalog's only login.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

LOGIN_KEYS = frozenset({"token", "credential", "oauth2-server-uri"})
HEADER_PREFIX = "header."


def is_login_key(key: str) -> bool:
    """Whether the property ``key`` is (part of) a login by its name alone."""
    return key in LOGIN_KEYS or key.startswith(HEADER_PREFIX)


def uri_password(uri: str | None) -> str | None:
    """The password written into a catalog URI, if any (``scheme://user:password@host/...``)."""
    if not uri or "@" not in uri:
        return None
    try:
        return urlsplit(uri).password or None
    except ValueError:  # not a URL at all: nothing a parser can take a password from
        return None


def has_login(properties: Mapping[str, str]) -> bool:
    """Whether the properties hold any login: a login key or a password in the ``uri``."""
    return any(is_login_key(k) for k in properties) or uri_password(properties.get("uri")) is not None


def without_login(properties: Mapping[str, str]) -> dict[str, str]:
    """The properties without a login: no ``token``, ``credential``, ``oauth2-server-uri``,
    ``header.*``, and no ``uri`` that holds a password (FileIO properties need none of them)."""
    kept = {k: v for k, v in properties.items() if not is_login_key(k)}
    if uri_password(kept.get("uri")) is not None:
        del kept["uri"]
    return kept
