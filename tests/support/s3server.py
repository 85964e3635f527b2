"""A real S3-compatible server for the tests: moto's S3 on 127.0.0.1, with request counting and faults.

``start_s3_server()`` serves moto's S3 implementation (the same WSGI application as the ``moto_server``
command) with werkzeug on a free loopback port, in a thread of the test process, and creates a
bucket. Clients talk to it over real HTTP with SigV4 signatures, exactly as they would to AWS.

Between the HTTP server and moto sits ``_CountingFaultyApp``, a WSGI middleware (a real hook in the
request path, not a mock): it counts every request by S3 operation (``PUT``, ``GET``, ``HEAD``,
``LIST``, ``DELETE``, ``POST``), records which key each one names (``requests``), and can answer
the next N PUTs with an error (503 ``SlowDown`` by default, what S3 answers when it throttles),
delay the next N requests, or hold the next N PUTs until all N are in flight at once
(``gather_next_puts``: a client that sends them one after another never gathers them).

``start_s3_server_process()`` runs the same server in a child process (``python -m
tests.support.s3server``), so that a benchmark's client and server do not share one GIL; it counts
requests too, and answers ``counts``, ``reset`` and ``slow`` over its stdin and stdout.
"""

from __future__ import annotations

import collections
import json
import logging
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

BUCKET = "icefloe-test"
ACCESS_KEY = "icefloe-test-key"
SECRET_KEY = "icefloe-test-secret-do-not-log"
REGION = "us-east-1"

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

_SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message><RequestId>icefloe-fault</RequestId></Error>"
)


def s3_operation(method: str, path: str, query: str) -> str:
    """The operation a request performs: PUT, GET, HEAD, LIST, DELETE or POST.

    Path-style addressing: ``/bucket`` or ``/bucket/`` names the bucket (a GET there lists), and
    ``/bucket/key`` names an object.
    """
    method = method.upper()
    key = path.lstrip("/").partition("/")[2]
    if method == "GET" and (not key or "list-type" in parse_qs(query)):
        return "LIST"
    return method


@dataclass
class _Faults:
    failing_puts: int = 0
    put_status: int = 503
    slow_requests: int = 0
    slow_seconds: float = 0.0


@dataclass
class S3Server:
    """A running S3-compatible server; ``properties`` are the Iceberg ``s3.*`` settings to reach it."""

    host: str
    port: int
    bucket: str = BUCKET
    _app: _CountingFaultyApp | None = field(default=None, repr=False)
    _stop: Callable[[], None] | None = field(default=None, repr=False)

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def properties(self) -> dict[str, str]:
        return {
            "s3.endpoint": self.endpoint,
            "s3.region": REGION,
            "s3.access-key-id": ACCESS_KEY,
            "s3.secret-access-key": SECRET_KEY,
            "s3.path-style-access": "true",
        }

    def filesystem(self) -> Any:
        """A ``pyarrow.fs.S3FileSystem`` on this server (may create and delete buckets)."""
        import pyarrow.fs as pafs

        return pafs.S3FileSystem(
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            region=REGION,
            endpoint_override=f"{self.host}:{self.port}",
            scheme="http",
            allow_bucket_creation=True,
            allow_bucket_deletion=True,
        )

    def counts(self) -> dict[str, int]:
        """Requests served since the last ``reset_counts``, by operation (operations seen only)."""
        assert self._app is not None
        with self._app.lock:
            return dict(self._app.counts)

    def requests(self) -> list[tuple[str, str]]:
        """``(operation, key)`` of every request since the last ``reset_counts``, in the order
        served (the key without the bucket; empty for a bucket-level request)."""
        assert self._app is not None
        with self._app.lock:
            return list(self._app.requests)

    def reset_counts(self) -> None:
        assert self._app is not None
        with self._app.lock:
            self._app.counts.clear()
            self._app.requests.clear()

    def fail_next_puts(self, n: int, status: int = 503) -> None:
        """Answer the next ``n`` PUT requests with ``status`` (503 SlowDown: S3's throttling answer)."""
        assert self._app is not None
        with self._app.lock:
            self._app.faults.failing_puts = n
            self._app.faults.put_status = status

    def slow_next(self, n: int, seconds: float) -> None:
        """Delay the next ``n`` requests by ``seconds`` each before serving them."""
        assert self._app is not None
        with self._app.lock:
            self._app.faults.slow_requests = n
            self._app.faults.slow_seconds = seconds

    def gather_next_puts(self, n: int, timeout_s: float = 10.0) -> None:
        """Hold each of the next ``n`` PUTs until all ``n`` are being served at once, then serve them.

        ``gathered_puts`` then says how many were in flight together; a PUT still alone after
        ``timeout_s`` (a client that waits for each PUT before sending the next) gives up waiting
        and is served, uncounted.
        """
        assert self._app is not None
        with self._app.lock:
            self._app.gather = threading.Barrier(n, timeout=timeout_s)
            self._app.gather_left = n
            self._app.gathered = 0

    def gathered_puts(self) -> int:
        """PUTs of the last ``gather_next_puts`` that were in flight together."""
        assert self._app is not None
        with self._app.lock:
            return self._app.gathered

    def clear_faults(self) -> None:
        assert self._app is not None
        with self._app.lock:
            self._app.faults = _Faults()
            self._app.gather = None
            self._app.gather_left = 0

    def stop(self) -> None:
        if self._stop is not None:
            self._stop()
            self._stop = None


class _CountingFaultyApp:
    """WSGI middleware in front of moto: counts requests by operation and injects faults."""

    def __init__(self, inner: WsgiApp) -> None:
        self.inner = inner
        self.lock = threading.Lock()
        self.counts: collections.Counter[str] = collections.Counter()
        self.requests: list[tuple[str, str]] = []
        self.faults = _Faults()
        self.gather: threading.Barrier | None = None
        self.gather_left = 0
        self.gathered = 0

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        op = s3_operation(environ["REQUEST_METHOD"], path, environ.get("QUERY_STRING", ""))
        delay = 0.0
        fail_status = 0
        gather: threading.Barrier | None = None
        with self.lock:
            self.counts[op] += 1
            self.requests.append((op, path.lstrip("/").partition("/")[2]))
            if op == "PUT" and self.gather_left > 0:
                self.gather_left -= 1
                gather = self.gather
            if self.faults.slow_requests > 0:
                self.faults.slow_requests -= 1
                delay = self.faults.slow_seconds
            if op == "PUT" and self.faults.failing_puts > 0:
                self.faults.failing_puts -= 1
                fail_status = self.faults.put_status
        if gather is not None:
            try:
                gather.wait()
            except threading.BrokenBarrierError:
                pass  # not all of them came: served anyway, not counted as gathered
            else:
                with self.lock:
                    self.gathered += 1
        if delay:
            time.sleep(delay)
        if fail_status:
            _drain(environ)
            start_response(
                f"{fail_status} Injected",
                [("Content-Type", "application/xml"), ("Content-Length", str(len(_SLOW_DOWN)))],
            )
            return [_SLOW_DOWN]
        return self.inner(environ, start_response)


def _drain(environ: dict[str, Any]) -> None:
    """Read the request body so the connection stays usable after an early answer."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    stream = environ.get("wsgi.input")
    if stream is not None and length:
        stream.read(length)


def start_s3_server(bucket: str = BUCKET) -> S3Server:
    """Start moto's S3 on a free 127.0.0.1 port in a daemon thread and create ``bucket``."""
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
    app = _CountingFaultyApp(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
    thread = threading.Thread(target=server.serve_forever, name="s3-test-server", daemon=True)
    thread.start()

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)

    host, port = server.server_address[:2]
    s3 = S3Server(host=str(host), port=int(port), bucket=bucket, _app=app, _stop=stop)
    _create_bucket(s3)
    s3.reset_counts()
    return s3


def _create_bucket(server: S3Server) -> None:
    server.filesystem().create_dir(server.bucket)


def running_s3_server() -> Iterator[S3Server]:
    """Generator for a pytest fixture: one server, stopped afterwards."""
    server = start_s3_server()
    try:
        yield server
    finally:
        server.stop()


class StdioChild:
    """A server in a child process that answers each command line on its stdin with one line on
    its stdout (``counts``, ``reset``, ``stop``, ...); see ``spawn_child``."""

    _process: subprocess.Popen[str] | None

    def _ask(self, command: str) -> str:
        assert self._process is not None and self._process.stdin and self._process.stdout
        self._process.stdin.write(command + "\n")
        self._process.stdin.flush()
        return self._process.stdout.readline()

    def stop(self) -> None:
        if self._process is not None:
            self._ask("stop")
            self._process.wait(timeout=30)
            self._process = None


def spawn_child(module: str, bucket: str) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """Start ``python -m <module> <bucket>`` (same interpreter) and read the JSON line it prints
    once it serves (where it listens, and whatever else it announces)."""
    process = subprocess.Popen(
        [sys.executable, "-m", module, bucket], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    return process, json.loads(process.stdout.readline())


@dataclass
class S3ServerProcess(StdioChild, S3Server):
    """The server in a child process: requests counted there, faults not available."""

    _process: subprocess.Popen[str] | None = field(default=None, repr=False)

    def counts(self) -> dict[str, int]:
        return {op: int(n) for op, n in json.loads(self._ask("counts")).items()}

    def reset_counts(self) -> None:
        self._ask("reset")

    def slow_next(self, n: int, seconds: float) -> None:
        self._ask(f"slow {n} {seconds}")


def start_s3_server_process(bucket: str = BUCKET) -> S3ServerProcess:
    """Start the server in a child process and wait until it serves."""
    process, ready = spawn_child("tests.support.s3server", bucket)
    return S3ServerProcess(host=ready["host"], port=ready["port"], bucket=bucket, _process=process)


def _serve_over_pipe(bucket: str) -> None:
    server = start_s3_server(bucket)
    print(json.dumps({"host": server.host, "port": server.port}), flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "counts":
            print(json.dumps(server.counts()), flush=True)
        elif command == "reset":
            server.reset_counts()
            print("{}", flush=True)
        elif command.startswith("slow "):
            _, n, seconds = command.split()
            server.slow_next(int(n), float(seconds))
            print("{}", flush=True)
        elif command == "stop":
            break
    server.stop()
    print("{}", flush=True)


if __name__ == "__main__":
    _serve_over_pipe(sys.argv[1] if len(sys.argv) > 1 else BUCKET)
