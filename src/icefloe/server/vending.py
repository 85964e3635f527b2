"""Storage credentials the server vends to clients of tables on S3 (``X-Iceberg-Access-Delegation``).

A client holding only a catalog token asks for ``vended-credentials``; the server answers a table
result with ``storage-credentials`` good for that table alone, so the store's own keys stay with
the server. Configured by catalog properties under ``rest.vended-credentials.``:

- ``role-arn``: the role the server assumes through STS AssumeRole, with the inline session policy
  of ``vending_policy`` (every location the table writes to, ``table_write_locations``; read, or
  read and write, as the caller's grant says).
  ``sts-endpoint`` (default: the catalog's ``s3.endpoint``, else AWS), ``region`` (default
  ``s3.region``), ``duration-s`` (3600; STS allows 900 to 43200), ``external-id``,
  ``renew-before-s`` (300: cached credentials are renewed this long before they expire),
  ``cache-entries`` (1024 (locations, access) pairs);
- ``static-unscoped-keys=true``: for stores without STS (a development MinIO or moto), vend the
  server's own ``s3.*`` keys. They are NOT scoped: every client with a catalog token can then do
  whatever those keys can, on every table. Off by default, and ignored when ``role-arn`` is set.

boto3 is imported only when a role is configured (the ``rest`` extra installs it).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icefloe.errors import ValidationError
from icefloe.io.fileio import (
    S3_ACCESS_KEY_ID,
    S3_ENDPOINT,
    S3_PATH_STYLE_ACCESS,
    S3_REGION,
    S3_SECRET_ACCESS_KEY,
    S3_SESSION_TOKEN,
)
from icefloe.lru import LockedLruCache
from icefloe.server.errors import HttpError
from icefloe.server.vending_policy import packed_session_policy, split_s3_location
from icefloe.tree.location_rules import WRITE_PATH_PROPERTIES

PREFIX = "rest.vended-credentials."
ROLE_ARN = PREFIX + "role-arn"
STS_ENDPOINT = PREFIX + "sts-endpoint"
STS_REGION = PREFIX + "region"
DURATION_S = PREFIX + "duration-s"
EXTERNAL_ID = PREFIX + "external-id"
RENEW_BEFORE_S = PREFIX + "renew-before-s"
CACHE_ENTRIES = PREFIX + "cache-entries"
STATIC_UNSCOPED_KEYS = PREFIX + "static-unscoped-keys"

OBJECT_STORAGE_PATH = "write.object-storage.path"
"""Where Iceberg Java writes data files of a table with ``write.object-storage.enabled`` and no
``write.data.path`` (icefloe itself does not write there)."""
EXPIRES_AT_MS = "s3.session-token-expires-at-ms"
DELEGATION_HEADER = "x-iceberg-access-delegation"
VENDED_CREDENTIALS = "vended-credentials"
# what a client needs besides the keys to reach the store the server writes to
_PASSED_ON = (S3_ENDPOINT, S3_REGION, S3_PATH_STYLE_ACCESS)


def wants_vended_credentials(headers: Mapping[str, str]) -> bool:
    """Whether the request's ``X-Iceberg-Access-Delegation`` (a comma-separated list) names
    ``vended-credentials``."""
    value = headers.get(DELEGATION_HEADER, "")
    return any(mode.strip().lower() == VENDED_CREDENTIALS for mode in value.split(","))


def is_s3_location(location: str) -> bool:
    """Tables on S3 are the ones credentials are vended for."""
    return location.partition("://")[0] in ("s3", "s3a", "s3n")


def table_write_locations(location: str, properties: Mapping[str, str]) -> tuple[str, ...]:
    """Every location a table's files may be written to, its own first: its ``location`` and the
    directories its ``write.data.path``, ``write.metadata.path``, ``write.folder-storage.path`` and
    ``write.object-storage.path`` properties name (the server keeps each inside the warehouse)."""
    named = (properties.get(key) for key in (*WRITE_PATH_PROPERTIES, OBJECT_STORAGE_PATH))
    return tuple(dict.fromkeys([location.rstrip("/"), *(path.rstrip("/") for path in named if path)]))


@dataclass(frozen=True)
class VendedCredentials:
    """A ``StorageCredential``'s ``config`` and when it expires (epoch seconds; None: never)."""

    config: Mapping[str, str]
    expires_at_s: float | None


class StsVendor:
    """Credentials from STS AssumeRole with a session policy per table, cached per (locations,
    access) until ``renew-before-s`` before they expire; ``clock`` (epoch seconds) is the seam
    tests drive expiry through."""

    def __init__(self, properties: Mapping[str, str], clock: Callable[[], float] = time.time) -> None:
        self.role_arn = properties[ROLE_ARN]
        self.duration_s = _int(properties, DURATION_S, 3600)
        if not 900 <= self.duration_s <= 43200:
            raise ValidationError(f"{DURATION_S} must be 900 to 43200 seconds (STS), not {self.duration_s}")
        self.renew_before_s = _int(properties, RENEW_BEFORE_S, 300)
        if not 0 <= self.renew_before_s < self.duration_s:
            raise ValidationError(f"{RENEW_BEFORE_S} must be at least 0 and below {DURATION_S}")
        self.external_id = properties.get(EXTERNAL_ID)
        self.endpoint = properties.get(STS_ENDPOINT) or properties.get(S3_ENDPOINT)
        self.region = properties.get(STS_REGION) or properties.get(S3_REGION) or "us-east-1"
        self._server_keys = {k: properties[k] for k in _SERVER_KEYS if properties.get(k)}
        self._passed_on = {k: properties[k] for k in _PASSED_ON if k in properties}
        self.clock = clock
        self._cache: LockedLruCache[_Key, VendedCredentials] = LockedLruCache(
            _int(properties, CACHE_ENTRIES, 1024)
        )
        self._client: Any = None
        self._client_lock = threading.Lock()
        self._lock = threading.Lock()  # guards _asking
        self._asking: dict[_Key, threading.Lock] = {}  # by key: one asks STS, the others wait

    def credentials(self, locations: Sequence[str], write: bool) -> VendedCredentials:
        """Credentials for a table writing to ``locations`` (``table_write_locations``): cached
        ones while they last, else new ones.

        Requests that miss the cache together wait for the first one's AssumeRole instead of
        each making their own (clients started together load the same tables).
        """
        key = (tuple(location.rstrip("/") for location in locations), write)
        found = self._cached(key)
        if found is not None:
            return found
        with self._lock:
            asking = self._asking.setdefault(key, threading.Lock())
        with asking:
            found = self._cached(key)
            if found is None:
                found = self._assume_role(key[0], write)
                self._cache.put(key, found)
            with self._lock:
                self._asking.pop(key, None)
        return found

    def _cached(self, key: _Key) -> VendedCredentials | None:
        """The cached credentials under ``key`` unless they are within the renewal margin."""
        cached = self._cache.get(key)
        if cached is not None and self.clock() < (cached.expires_at_s or 0.0) - self.renew_before_s:
            return cached
        return None

    def _assume_role(self, locations: tuple[str, ...], write: bool) -> VendedCredentials:
        arguments: dict[str, Any] = {
            "RoleArn": self.role_arn,
            "RoleSessionName": "icefloe-" + ("write" if write else "read"),
            "Policy": packed_session_policy(locations, write),  # PolicyTooLarge before STS is asked
            "DurationSeconds": self.duration_s,
        }
        if self.external_id:
            arguments["ExternalId"] = self.external_id
        asked_at_s = self.clock()
        try:
            answer = self._sts().assume_role(**arguments)
        except Exception as exc:  # botocore's ClientError, EndpointConnectionError, ...
            raise sts_failed(exc) from None
        found = answer["Credentials"]
        # The end in this server's clock, from before it asked: STS's own ``Expiration`` is in
        # STS's clock, and comparing it with ours would keep credentials past their end by any skew.
        expires_at_ms = int((asked_at_s + self.duration_s) * 1000)
        config = {
            **self._passed_on,
            S3_ACCESS_KEY_ID: found["AccessKeyId"],
            S3_SECRET_ACCESS_KEY: found["SecretAccessKey"],
            S3_SESSION_TOKEN: found["SessionToken"],
            EXPIRES_AT_MS: str(expires_at_ms),
        }
        return VendedCredentials(config, expires_at_ms / 1000)

    def _sts(self) -> Any:
        with self._client_lock:
            if self._client is None:
                import boto3  # the rest extra; only servers that vend through STS need it

                self._client = boto3.client(
                    "sts",
                    endpoint_url=self.endpoint,
                    region_name=self.region,
                    aws_access_key_id=self._server_keys.get(S3_ACCESS_KEY_ID),
                    aws_secret_access_key=self._server_keys.get(S3_SECRET_ACCESS_KEY),
                    aws_session_token=self._server_keys.get(S3_SESSION_TOKEN),
                )
            return self._client


_Key = tuple[tuple[str, ...], bool]
_SERVER_KEYS = (S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_SESSION_TOKEN)


class StaticVendor:
    """The server's own ``s3.*`` keys, unscoped (``static-unscoped-keys=true``, development only)."""

    def __init__(self, properties: Mapping[str, str]) -> None:
        keys = _SERVER_KEYS + _PASSED_ON
        self._found = VendedCredentials({k: properties[k] for k in keys if k in properties}, None)

    def credentials(self, locations: Sequence[str], write: bool) -> VendedCredentials:
        """The same keys for every table and access level."""
        return self._found


Vendor = StsVendor | StaticVendor


def credential_vendor(properties: Mapping[str, str], clock: Callable[[], float] = time.time) -> Vendor | None:
    """The vendor the catalog properties configure, or None (the server vends nothing)."""
    if properties.get(ROLE_ARN):
        return StsVendor(properties, clock)
    if properties.get(STATIC_UNSCOPED_KEYS, "").strip().lower() == "true":
        return StaticVendor(properties)
    return None


def storage_credentials(vendor: Vendor, locations: Sequence[str], write: bool) -> list[dict[str, Any]]:
    """The ``storage-credentials`` of a table result: the same credentials (their policy covers
    all ``locations``) under each location as its prefix, so a client choosing by the longest
    prefix of a file's path finds them for every file the table writes, wherever it goes."""
    for location in locations:
        split_s3_location(location)  # refuses a location no policy could scope
    found = vendor.credentials(locations, write)
    return [{"prefix": location, "config": dict(found.config)} for location in locations]


def credentials_etag(etag: str, credentials: Sequence[Mapping[str, Any]]) -> str:
    """The ETag of a table result carrying ``credentials``: the table's own ``etag`` and which
    credentials (keys and expiry) it vends.

    A client sending it back in ``If-None-Match`` gets ``304 Not Modified`` only while the server
    would vend it the very credentials it holds, which the server never does within
    ``renew-before-s`` of their expiry: once they are renewed, the tag changes and the answer is
    the table again, with the new ones. So a client that keeps its copy on 304s never keeps
    credentials past that margin, whether or not it renews them on its own.
    """
    configs = [(c.get("prefix"), c.get("config") or {}) for c in credentials]
    held = [(prefix, config.get(S3_ACCESS_KEY_ID), config.get(EXPIRES_AT_MS)) for prefix, config in configs]
    digest = hashlib.sha256(f"{etag},{held!r}".encode()).hexdigest()[:32]
    return f'"{digest}"'


def sts_failed(exc: BaseException) -> HttpError:
    """503 ServiceUnavailable: the catalog is fine but STS, which this answer needs, failed.

    The spec lists 503 for every table-result operation and clients retry it with backoff, which
    is right for throttling and outages; a misconfigured role fails the same way, and the message
    names STS's own error code so the operator sees which it is.
    """
    answer = getattr(exc, "response", None)  # botocore's ClientError carries STS's error
    error = answer.get("Error", {}) if isinstance(answer, dict) else {}
    code = error.get("Code") or type(exc).__name__
    message = error.get("Message") or str(exc)
    return HttpError(
        503, "ServiceUnavailableException", f"could not vend storage credentials: STS {code}: {message}"
    )


def _int(properties: Mapping[str, str], key: str, default: int) -> int:
    try:
        return int(properties.get(key, default))
    except ValueError:
        raise ValidationError(f"{key} must be a whole number, not {properties[key]!r}") from None
