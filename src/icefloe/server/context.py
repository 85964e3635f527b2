"""The state one server shares between requests, and what a handler receives about one request."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from icefloe.catalog.base import Catalog
from icefloe.lru import LockedLruCache
from icefloe.server.auth import Principal, TokenStore
from icefloe.server.coalescer import CommitCoalescer
from icefloe.server.commits import LocationRules, TableLocks
from icefloe.server.config import ServerConfig
from icefloe.server.plan_results import CompletedPlans
from icefloe.server.vending import StsVendor, Vendor, credential_vendor, credentials_etag


@dataclass(frozen=True)
class VendingScope:
    """What a table result's storage credentials were vended for: a table of ``namespace``
    writing to ``locations``. Kept with a reply so that a replayed create vends anew."""

    namespace: tuple[str, ...]
    locations: tuple[str, ...]
    refresh_endpoint: str | None = None
    """The table's credentials endpoint relative to the catalog URI; a result carrying credentials
    names it in its ``config`` as ``client.refresh-credentials-endpoint``, where Iceberg Java's
    S3FileIO (1.7 on) renews them before they expire (without it, it never does)."""


@dataclass
class Reply:
    """A handler's answer: status, a JSON payload (or pre-encoded JSON text or its UTF-8 bytes),
    extra headers.

    A table result's vended ``credentials`` stay apart from its text until it is sent
    (``sendable``): they belong to one caller at one moment, so the idempotency cache keeps the
    reply without them and only its ``vending`` scope, to vend afresh for a replay.
    """

    status: int = 200
    payload: Any = None
    json_text: str | bytes | None = None
    headers: Mapping[str, str] | None = None
    credentials: list[dict[str, Any]] | None = None
    vending: VendingScope | None = None

    def without_credentials(self) -> Reply:
        """This reply as the idempotency cache keeps it."""
        return replace(self, credentials=None)

    def sendable(self) -> Reply:
        """This reply with its credentials as the text's last member ``storage-credentials``, in
        its ``config`` too, and its ``ETag`` naming them (``vending.credentials_etag``)."""
        if not self.credentials or self.json_text is None:
            return self
        member = ', "storage-credentials": ' + json.dumps(self.credentials) + "}"
        text = self.json_text
        text = text[:-1] + member.encode("utf-8") if isinstance(text, bytes) else text[:-1] + member
        # The credentials' config (one for every prefix: one AssumeRole covers them all) is also
        # the result's config: Iceberg Java before 1.7 and DuckDB read only that.
        config = dict(self.credentials[0].get("config") or {})
        if self.vending is not None and self.vending.refresh_endpoint:
            config[REFRESH_CREDENTIALS_ENDPOINT] = self.vending.refresh_endpoint
        text = _with_config(text, config)
        headers = dict(self.headers or {})
        if "ETag" in headers:
            headers["ETag"] = credentials_etag(headers["ETag"], self.credentials)
        return replace(self, json_text=text, headers=headers, credentials=None)


REFRESH_CREDENTIALS_ENDPOINT = "client.refresh-credentials-endpoint"
_NO_CONFIG = '"config": {}'


def _with_config(text: str | bytes, config: dict[str, str]) -> str | bytes:
    """A table result's text with ``config`` for its empty one. The result's first member after
    ``metadata-location`` is the config (``tables.table_result``), and no JSON string holds the
    unescaped quotes of ``"config": {}``, so its first occurrence is the member itself."""
    filled = '"config": ' + json.dumps(config)
    if isinstance(text, bytes):
        return text.replace(_NO_CONFIG.encode(), filled.encode("utf-8"), 1)
    return text.replace(_NO_CONFIG, filled, 1)


class IdempotencyCache:
    """Final replies by (caller, Idempotency-Key): a retried mutation is answered, not re-run.

    The oldest key goes first: being asked again (a retry) or answered again does not refresh it.
    """

    def __init__(self, max_entries: int) -> None:
        self._entries: LockedLruCache[tuple[str, str], Reply] = LockedLruCache(max_entries)

    def get(self, key: tuple[str, str]) -> Reply | None:
        """A stored reply."""
        return self._entries.peek(key)

    def put(self, key: tuple[str, str], reply: Reply) -> None:
        """Remember a final reply (callers never store 5xx)."""
        self._entries.put(key, reply, refresh=False)


@dataclass
class ServerState:
    """Everything handlers share."""

    config: ServerConfig
    tokens: TokenStore
    locks: TableLocks = field(default_factory=TableLocks)
    idempotency: IdempotencyCache = field(default_factory=lambda: IdempotencyCache(10_000))
    plans: CompletedPlans = field(default_factory=CompletedPlans)
    coalescer: CommitCoalescer = field(init=False)
    vendor: Vendor | None = field(init=False)
    """Who vends storage credentials (``server.vending``); None when the catalog configures none."""
    rules: LocationRules = field(init=False)
    """Where tables may write; with STS vending, only where one session policy reaches."""

    def __post_init__(self) -> None:
        catalog = self.config.catalog
        self.vendor = credential_vendor(catalog.properties)
        self.rules = LocationRules(catalog.warehouse, scoped_credentials=isinstance(self.vendor, StsVendor))
        self.coalescer = CommitCoalescer(catalog, self.locks.lock, self.config.commit_retries, self.rules)

    @property
    def catalog(self) -> Catalog:
        """The catalog served."""
        return self.config.catalog


@dataclass(frozen=True)
class Call:
    """One request as a handler sees it."""

    principal: Principal
    path: Mapping[str, str]
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: Any
