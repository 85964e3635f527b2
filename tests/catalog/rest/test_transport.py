"""The REST client's HTTP layer against real sockets: TLS checks and their catalog properties,
timeouts, netrc logins and the headers every request carries.

The servers here are the standard library's (plain and TLS), recording what they receive, so the
client's behaviour is observed on the wire; the icefloe server's own tests are in
``test_rest_catalog.py``.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.rest.http import ServiceError
from icefloe.catalog.rest.transport import USER_AGENT
from icefloe.errors import ValidationError
from tests.support.certificates import self_signed_certificate


@dataclass
class Recorder:
    """What a test server received: (method, path, lower-cased headers) per request."""

    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)


def _handler(recorder: Recorder) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            recorder.requests.append(("GET", self.path, {k.lower(): v for k, v in self.headers.items()}))
            body = json.dumps({"defaults": {}, "overrides": {}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


@contextmanager
def _config_server(tls: ssl.SSLContext | None = None) -> Iterator[tuple[str, Recorder]]:
    """A server answering every GET with an empty catalog config; yields (uri, recorder)."""
    recorder = Recorder()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(recorder))
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    scheme = "https" if tls is not None else "http"
    try:
        yield f"{scheme}://127.0.0.1:{server.server_address[1]}", recorder
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (PEM files)."""
    return self_signed_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def tls_server(certificate: tuple[Path, Path]) -> Iterator[tuple[str, Recorder]]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(certificate[0]), str(certificate[1]))
    with _config_server(context) as served:
        yield served


@pytest.fixture
def no_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No proxies, CA bundles or netrc file from the environment running the tests."""
    names = ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
    for name in names:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))


@pytest.mark.usefixtures("no_environment")
def test_an_unknown_certificate_is_refused(tls_server: tuple[str, Recorder]) -> None:
    uri, recorder = tls_server
    with pytest.raises(ServiceError, match=r"(?i)certificate"):
        RestCatalog("c", uri=uri, **{"rest.retry.attempts": "1"})
    assert recorder.requests == []


@pytest.mark.usefixtures("no_environment")
def test_a_ca_bundle_property_makes_the_certificate_trusted(
    tls_server: tuple[str, Recorder], certificate: tuple[Path, Path]
) -> None:
    uri, recorder = tls_server
    catalog = RestCatalog("c", uri=uri, **{"ssl.cabundle": str(certificate[0])})
    catalog.close()
    assert [(m, p) for m, p, _ in recorder.requests] == [("GET", "/v1/config")]


@pytest.mark.usefixtures("no_environment")
def test_the_environments_ca_bundle_is_honoured(
    tls_server: tuple[str, Recorder], certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(certificate[0]))
    uri, recorder = tls_server
    RestCatalog("c", uri=uri).close()
    assert len(recorder.requests) == 1


@pytest.mark.usefixtures("no_environment")
def test_verification_can_be_turned_off(tls_server: tuple[str, Recorder]) -> None:
    uri, recorder = tls_server
    with pytest.warns(Warning, match=r"(?i)unverified|insecure"):
        RestCatalog("c", uri=uri, **{"ssl.verify": "false"}).close()
    assert len(recorder.requests) == 1


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"ssl.verify": "sometimes"}, "ssl.verify"),
        ({"ssl.cabundle": "/no/such/bundle.pem"}, "does not exist"),
    ],
)
def test_malformed_tls_properties_are_refused(properties: dict[str, str], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        RestCatalog("c", uri="https://127.0.0.1:1", **properties)


@pytest.mark.usefixtures("no_environment")
def test_requests_carry_the_agent_and_token_and_query() -> None:
    with _config_server() as (uri, recorder):
        RestCatalog("c", uri=uri, token="t0k", warehouse="wh 1").close()
    [(method, path, headers)] = recorder.requests
    assert (method, path) == ("GET", "/v1/config?warehouse=wh+1")
    assert headers["user-agent"] == USER_AGENT
    assert headers["authorization"] == "Bearer t0k"


@pytest.mark.usefixtures("no_environment")
def test_a_netrc_login_is_sent_when_there_is_no_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    netrc_file = tmp_path / "netrc"
    netrc_file.write_text("machine 127.0.0.1 login ann password s3cret\n")
    netrc_file.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc_file))
    with _config_server() as (uri, recorder):
        RestCatalog("c", uri=uri).close()
        RestCatalog("c", uri=uri, token="t0k").close()
    assert recorder.requests[0][2]["authorization"] == "Basic YW5uOnMzY3JldA=="  # ann:s3cret
    assert recorder.requests[1][2]["authorization"] == "Bearer t0k"


@pytest.mark.usefixtures("no_environment")
def test_a_server_that_never_answers_times_out_after_the_retries() -> None:
    """A listening socket that accepts and never replies: each attempt times out, a read is
    retried, then ServiceError names the timeout."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        uri = f"http://127.0.0.1:{listener.getsockname()[1]}"
        properties = {"rest.request-timeout-s": "0.2", "rest.retry.attempts": "2"}
        with pytest.raises(ServiceError, match=r"(?i)timed out"):
            RestCatalog("c", uri=uri, **properties)
        accepted = []
        listener.settimeout(0)
        while True:
            try:
                accepted.append(listener.accept()[0])
            except BlockingIOError:
                break
        for conn in accepted:
            conn.close()
    assert len(accepted) == 2  # the first attempt and one retry, each on a new connection
