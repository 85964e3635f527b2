"""``icefloe serve``: the Iceberg REST catalog server over the configured catalog.

Authentication: ``--token T`` (repeatable) accepts bearer token T with full access;
``--auth-file FILE`` reads JSON ``{"tokens": {"T": {"ns": "read"|"write", "*": ...}},
"clients": {"id": {"secret": "...", "grants": {...}}}}`` for per-namespace grants and OAuth2
client credentials; ``$ICEFLOE_REST_TOKENS`` (comma-separated) adds full-access tokens. Without
any of them the server is open, which it only allows on a loopback address.

TLS: ``--tls-cert FILE`` (with ``--tls-key FILE`` unless the certificate file holds the key) serves
HTTPS, so tokens and table credentials do not cross the network in clear text. Serving tokens over
plain HTTP on a non-loopback address is allowed (a TLS-terminating proxy in front is a common
deployment) but warned about.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError

ENV_TOKENS = "ICEFLOE_REST_TOKENS"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def add_serve(commands: Any, handler: Any) -> None:
    """Register the ``serve`` subcommand."""
    summary = "serve the catalog over the Iceberg REST protocol"
    sub = commands.add_parser("serve", help=summary, description=summary)
    sub.set_defaults(handler=handler)
    sub.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    sub.add_argument("--port", type=int, default=8181, help="port (default 8181; 0 picks a free one)")
    sub.add_argument("--token", action="append", default=[], help="a bearer token with full access")
    sub.add_argument("--auth-file", metavar="FILE", help="JSON file of tokens, grants and OAuth2 clients")
    sub.add_argument("--prefix", help="catalog prefix advertised by /v1/config (default: none)")
    sub.add_argument(
        "--max-request-bytes", type=int, default=16 * 1024 * 1024, help="refuse larger requests (413)"
    )
    sub.add_argument(
        "--token-lifetime-s",
        type=int,
        default=3600,
        metavar="SECONDS",
        help="lifetime of the tokens /v1/oauth/tokens issues (default 3600; Spark executors renew "
        "vended credentials with the token their job shipped, so jobs longer than this need more)",
    )
    sub.add_argument("--tls-cert", metavar="FILE", help="serve HTTPS with this PEM certificate (chain)")
    sub.add_argument(
        "--tls-key", metavar="FILE", help="the certificate's PEM private key (when not in --tls-cert)"
    )


def tls_files(args: argparse.Namespace) -> Any:
    """The TlsFiles the arguments name, None for plain HTTP (ValidationError for a key without a
    certificate or a file that does not exist)."""
    from icefloe.server import TlsFiles

    if args.tls_cert is None:
        if args.tls_key is not None:
            raise ValidationError("--tls-key needs --tls-cert")
        return None
    tls = TlsFiles(args.tls_cert, args.tls_key)
    try:
        tls.check()
    except ValueError as exc:
        raise ValidationError(str(exc)) from None
    return tls


def server_config(catalog: Catalog, args: argparse.Namespace) -> Any:
    """The ServerConfig the arguments describe."""
    from icefloe.server import Grants, OAuthClient, ServerConfig

    tokens: dict[str, Grants] = {t: Grants() for t in args.token}
    tokens.update({t: Grants() for t in os.environ.get(ENV_TOKENS, "").split(",") if t.strip()})
    clients: dict[str, OAuthClient] = {}
    if args.auth_file:
        try:
            with open(args.auth_file, encoding="utf-8") as f:
                spec = json.load(f)
            for token, grants in (spec.get("tokens") or {}).items():
                tokens[token] = Grants(dict(grants))
            for client_id, client in (spec.get("clients") or {}).items():
                clients[client_id] = OAuthClient(
                    str(client["secret"]), Grants(dict(client.get("grants") or {}))
                )
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValidationError(f"cannot read the auth file {args.auth_file}: {exc}") from None
    if not tokens and not clients and args.host not in LOOPBACK:
        raise ValidationError("refusing to serve without authentication on a non-loopback address")
    if args.token_lifetime_s < 60:
        raise ValidationError(f"--token-lifetime-s must be at least 60 seconds, not {args.token_lifetime_s}")
    return ServerConfig(
        catalog,
        tokens=tokens,
        clients=clients,
        prefix=args.prefix,
        max_request_bytes=args.max_request_bytes,
        token_lifetime_s=args.token_lifetime_s,
    )


def cmd_serve(catalog: Catalog, args: argparse.Namespace) -> list[str]:
    """Serve until interrupted."""
    from icefloe.server import serve_forever

    config = server_config(catalog, args)
    tls = tls_files(args)
    open_access = not config.tokens and not config.clients
    auth = "open (no authentication)" if open_access else "bearer tokens"
    scheme = "https" if tls is not None else "http"
    if tls is None and not open_access and args.host not in LOOPBACK:
        print(
            "warning: bearer tokens over plain HTTP on a non-loopback address; serve behind a TLS "
            "proxy or pass --tls-cert/--tls-key",
            file=sys.stderr,
        )
    where = f"{scheme}://{args.host}:{args.port}"
    print(f"icefloe REST catalog on {where} ({auth}); Ctrl-C stops", file=sys.stderr)
    serve_forever(config, args.host, args.port, tls)
    return []
