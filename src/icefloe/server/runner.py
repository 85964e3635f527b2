"""Run the REST catalog server: in the foreground (``icefloe serve``) or in a background thread
of the current process (tests, benchmarks) on a free port of 127.0.0.1; over plain HTTP, or over
TLS when given a certificate and its key (``TlsFiles``)."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import uvicorn

from icefloe.server.app import create_app
from icefloe.server.config import ServerConfig
from icefloe.server.header_case import http_protocol

STARTUP_TIMEOUT_S = 30.0
GRACEFUL_SHUTDOWN_S = 5
"""How long a stopping server waits for its connections to close. Requests in flight finish well
within it (a commit takes milliseconds); what it bounds is an idle HTTPS keep-alive connection whose
client never answers the TLS close (an HTTP client's pooled connection does not), which asyncio
would otherwise wait 30 s for. A commit cut off by the stop is atomic: it lands or not, and the
client reconciles (CommitStateUnknown)."""


HTTP_AUTO = "auto"
"""uvicorn's choice: httptools and uvloop when installed (the ``rest`` extra), else h11 and asyncio."""


@dataclass(frozen=True)
class TlsFiles:
    """The server's certificate chain and private key (PEM files) for serving HTTPS. ``key`` may be
    None when the certificate file holds the key too; ``key_password`` decrypts an encrypted key."""

    certificate: str
    key: str | None = None
    key_password: str | None = None

    def check(self) -> None:
        """ValueError naming the file that cannot be read, before the server starts listening."""
        for path in (self.certificate, self.key):
            if path is not None and not os.path.isfile(path):
                raise ValueError(f"TLS file {path!r} does not exist")


def _uvicorn_config(
    config: ServerConfig,
    host: str,
    port: int,
    wrap: Callable[[Any], Any] | None = None,
    http: str = HTTP_AUTO,
    loop: str = HTTP_AUTO,
    tls: TlsFiles | None = None,
) -> uvicorn.Config:
    app: Any = create_app(config)
    if tls is not None:
        tls.check()
    return uvicorn.Config(
        wrap(app) if wrap is not None else app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_keep_alive=30,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        http=http_protocol(http),
        loop=loop,
        ssl_certfile=tls.certificate if tls is not None else None,
        ssl_keyfile=tls.key if tls is not None else None,
        ssl_keyfile_password=tls.key_password if tls is not None else None,
    )


def serve_forever(
    config: ServerConfig, host: str = "127.0.0.1", port: int = 8181, tls: TlsFiles | None = None
) -> None:
    """Serve until interrupted (Ctrl-C, or SIGTERM); over HTTPS when ``tls`` is given. uvicorn
    raises the interrupt again once it has shut down; it ends the serving quietly."""
    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.Server(_uvicorn_config(config, host, port, tls=tls)).run()


@dataclass
class RunningServer:
    """A server running in a background thread; ``stop()`` (or leaving ``with``) shuts it down."""

    server: uvicorn.Server
    thread: threading.Thread
    host: str
    port: int
    tls: bool = False

    @property
    def app(self) -> Any:
        """The Starlette application (``app.state.icefloe`` is the server state)."""
        return self.server.config.app

    @property
    def uri(self) -> str:
        """Base URI for REST clients, e.g. ``http://127.0.0.1:54321`` (``https://`` over TLS)."""
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    def stop(self) -> None:
        """Ask the server to exit and wait for its thread."""
        self.server.should_exit = True
        self.thread.join(timeout=30)

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def start_server(
    config: ServerConfig,
    host: str = "127.0.0.1",
    port: int = 0,
    wrap: Callable[[Any], Any] | None = None,
    http: str = HTTP_AUTO,
    loop: str = HTTP_AUTO,
    tls: TlsFiles | None = None,
) -> RunningServer:
    """Start serving in a daemon thread; ``port=0`` picks a free port. Returns once it accepts.

    ``wrap`` may wrap the ASGI application (middleware, fault injection in tests). ``http`` and
    ``loop`` pick uvicorn's HTTP implementation and event loop (``h11`` / ``asyncio`` are the
    pure-Python fallbacks used when httptools / uvloop are not installed). ``tls`` serves HTTPS.
    """
    uvicorn_config = _uvicorn_config(config, host, 0, wrap, http, loop, tls)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound_port = sock.getsockname()[1]
    uvicorn_config.port = bound_port
    server = uvicorn.Server(uvicorn_config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=f"icefloe-rest-{bound_port}", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"the REST server on port {bound_port} did not start")
        time.sleep(0.01)
    return RunningServer(server, thread, host, bound_port, tls=tls is not None)
