"""icefloe.server layer: the Iceberg REST catalog server over an icefloe catalog.

Above ``spark`` and below ``cli``: it may import catalog, table, txn and scan code; only the CLI
imports it. ``start_server(ServerConfig(catalog))`` runs it in a background thread (tests,
benchmarks); ``icefloe serve`` runs it in the foreground.
"""

from __future__ import annotations

from icefloe.server.auth import Grants, OAuthClient
from icefloe.server.config import ServerConfig
from icefloe.server.runner import RunningServer, TlsFiles, serve_forever, start_server

__all__ = [
    "Grants",
    "OAuthClient",
    "RunningServer",
    "ServerConfig",
    "TlsFiles",
    "serve_forever",
    "start_server",
]
