"""What a REST catalog server serves and how: the catalog, authentication, limits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from icefloe.catalog.base import Catalog
from icefloe.server.auth import Grants, OAuthClient

DEFAULT_MAX_REQUEST_BYTES = 16 * 1024 * 1024
DEFAULT_PAGE_SIZE_LIMIT = 1000


@dataclass
class ServerConfig:
    """Settings of ``create_app``.

    ``tokens`` / ``clients`` switch authentication on (see ``server.auth``); ``prefix`` is the
    optional ``/v1/{prefix}/`` path segment advertised by ``GET /v1/config``; requests larger than
    ``max_request_bytes`` are refused with 413; ``commit_retries`` bounds how often the server
    re-applies a commit whose compare-and-swap lost to another server process.
    """

    catalog: Catalog
    tokens: Mapping[str, Grants] = field(default_factory=dict)
    clients: Mapping[str, OAuthClient] = field(default_factory=dict)
    prefix: str | None = None
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    token_lifetime_s: int = 3600
    commit_retries: int = 8
    idempotency_entries: int = 10_000
    defaults: Mapping[str, str] = field(default_factory=dict)
