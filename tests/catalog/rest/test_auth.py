"""OAuth2 client credentials of the REST client: refresh before expiry, and the token shipped to
Spark executors (which cannot fetch one of their own) with at least half its lifetime left."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from icefloe.catalog.rest.auth import REFRESH_MARGIN_S, ClientCredentialsAuth
from icefloe.catalog.sql import SqlCatalog
from icefloe.server import Grants, OAuthClient, RunningServer, ServerConfig, start_server

LIFETIME_S = 3600


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def server(sqlite_uri: str, warehouse: Path) -> Iterator[RunningServer]:
    catalog = SqlCatalog("auth", uri=sqlite_uri, warehouse=str(warehouse))
    config = ServerConfig(catalog, clients={"etl": OAuthClient("pw", Grants())}, token_lifetime_s=LIFETIME_S)
    with start_server(config) as running:
        yield running
    catalog.close()


def _auth(server: RunningServer, clock: Clock) -> ClientCredentialsAuth:
    return ClientCredentialsAuth(server.uri + "/v1/oauth/tokens", "etl", "pw", clock=clock)


def test_requests_refetch_only_near_expiry(server: RunningServer) -> None:
    clock = Clock()
    auth = _auth(server, clock)
    first = auth.headers()
    clock.now += LIFETIME_S - REFRESH_MARGIN_S - 1
    assert auth.headers() == first and auth.fetches == 1
    clock.now += 2  # inside the margin
    assert auth.headers() != first and auth.fetches == 2


def test_executors_are_shipped_a_token_with_half_its_lifetime_left(server: RunningServer) -> None:
    clock = Clock()
    auth = _auth(server, clock)
    first = auth.headers()
    clock.now += LIFETIME_S / 2 - 1
    assert auth.shipping_headers() == first and auth.fetches == 1  # more than half left: shipped as is
    clock.now += 2  # less than half left: requests still use it, a job is shipped a new one
    assert auth.headers() == first
    shipped = auth.shipping_headers()
    assert shipped != first and auth.fetches == 2
    assert auth.headers() == shipped  # and the driver goes on with the new one
    token = shipped["Authorization"].removeprefix("Bearer ")
    assert server.app.state.icefloe.tokens.principal(f"Bearer {token}").name == "client etl"
