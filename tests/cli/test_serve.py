"""``icefloe serve``: a real server process over a SQLite catalog, and its authentication options."""

from __future__ import annotations

import argparse
import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from icefloe.catalog.sql import SqlCatalog
from icefloe.cli.main import build_parser
from icefloe.cli.serve import server_config, tls_files
from icefloe.errors import ValidationError
from tests.support.certificates import self_signed_certificate


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_process_answers_rest_requests(tmp_path: Path) -> None:
    port = _free_port()
    uri = f"sqlite:///{tmp_path / 'c.db'}"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "icefloe.cli",
            "--uri",
            uri,
            "--warehouse",
            str(tmp_path / "wh"),
            "serve",
            "--port",
            str(port),
            "--token",
            "t0k",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        headers = {"Authorization": "Bearer t0k"}
        deadline = time.monotonic() + 60
        while True:
            try:
                config = requests.get(base + "/v1/config", headers=headers, timeout=5)
                break
            except requests.ConnectionError:
                assert process.poll() is None, process.stderr.read() if process.stderr else ""
                assert time.monotonic() < deadline, "server did not start"
                time.sleep(0.1)
        assert config.status_code == 200
        assert "POST /v1/{prefix}/transactions/commit" in config.json()["endpoints"]
        assert requests.get(base + "/v1/namespaces", timeout=5).status_code == 401
        created = requests.post(
            base + "/v1/namespaces", json={"namespace": ["db"]}, headers=headers, timeout=5
        )
        assert created.status_code == 200
    finally:
        process.terminate()
        process.wait(timeout=30)
    catalog = SqlCatalog("default", uri=uri)
    assert catalog.list_namespaces() == [("db",)]
    catalog.close()


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["serve", *argv])


def test_auth_file_grants_and_clients(tmp_path: Path) -> None:
    auth = tmp_path / "auth.json"
    auth.write_text(
        json.dumps(
            {
                "tokens": {"r": {"sales": "read"}},
                "clients": {"etl": {"secret": "pw", "grants": {"*": "write"}}},
            }
        )
    )
    catalog = SqlCatalog("default", uri=f"sqlite:///{tmp_path / 'c.db'}")
    config = server_config(catalog, _args("--auth-file", str(auth), "--token", "admin"))
    assert config.tokens["r"].level_for(("sales", "eu")) == 1
    assert config.tokens["r"].level_for(("hr",)) == 0
    assert config.tokens["admin"].level_for(("anything",)) == 2
    assert config.clients["etl"].secret == "pw"
    with pytest.raises(ValidationError):
        server_config(catalog, _args("--host", "0.0.0.0"))  # open server off loopback
    catalog.close()


def test_token_lifetime_reaches_the_tokens_issued(tmp_path: Path) -> None:
    """``--token-lifetime-s``: what ``/v1/oauth/tokens`` answers as ``expires_in`` (jobs whose
    executors renew vended credentials with a shipped token need it longer than the default)."""
    from icefloe.server import start_server

    auth = tmp_path / "auth.json"
    auth.write_text(json.dumps({"clients": {"etl": {"secret": "pw"}}}))
    catalog = SqlCatalog("default", uri=f"sqlite:///{tmp_path / 'c.db'}")
    assert server_config(catalog, _args("--auth-file", str(auth))).token_lifetime_s == 3600
    config = server_config(catalog, _args("--auth-file", str(auth), "--token-lifetime-s", "43200"))
    form = {"grant_type": "client_credentials", "client_id": "etl", "client_secret": "pw", "scope": "catalog"}
    with start_server(config) as server:
        answer = requests.post(server.uri + "/v1/oauth/tokens", data=form, timeout=30).json()
    assert answer["expires_in"] == 43200
    with pytest.raises(ValidationError, match="at least 60 seconds"):
        server_config(catalog, _args("--auth-file", str(auth), "--token-lifetime-s", "0"))
    catalog.close()


def test_tls_arguments(tmp_path: Path) -> None:
    cert, key = self_signed_certificate(tmp_path)
    assert tls_files(_args()) is None
    tls = tls_files(_args("--tls-cert", str(cert), "--tls-key", str(key)))
    assert (tls.certificate, tls.key) == (str(cert), str(key))
    with pytest.raises(ValidationError, match="--tls-key needs --tls-cert"):
        tls_files(_args("--tls-key", str(key)))
    with pytest.raises(ValidationError, match=r"missing\.pem"):
        tls_files(_args("--tls-cert", str(tmp_path / "missing.pem")))


def test_serve_process_answers_over_https(tmp_path: Path) -> None:
    cert, key = self_signed_certificate(tmp_path)
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable, "-m", "icefloe.cli",
            "--uri", f"sqlite:///{tmp_path / 'c.db'}", "--warehouse", str(tmp_path / "wh"),
            "serve", "--port", str(port), "--token", "t0k", "--tls-cert", str(cert), "--tls-key", str(key),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        url = f"https://127.0.0.1:{port}/v1/config"
        deadline = time.monotonic() + 60
        while (config := _https_json(url, "t0k", str(cert))) is None:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.1)
        assert "POST /v1/{prefix}/transactions/commit" in config["endpoints"]
        assert _https_json(url, "t0k", True) == "untrusted"  # the system's CAs do not know it
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C
        _, stderr = process.communicate(timeout=30)
    assert f"icefloe REST catalog on https://127.0.0.1:{port} (bearer tokens)" in stderr.decode()
    assert process.returncode == 0 and "Traceback" not in stderr.decode()  # Ctrl-C ends it quietly


def _https_json(url: str, token: str, verify: str | bool) -> Any:
    """The JSON answer of a GET, "untrusted" when the client refuses the server's certificate, None
    when nothing listens yet. Nothing of the exchange outlives the call: a response or error kept
    alive keeps its TLS connection open, and the server's shutdown would wait for its close."""
    try:
        with requests.Session() as session:
            answer = session.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=5, verify=verify)
            answer.raise_for_status()
            return answer.json()
    except requests.exceptions.SSLError as exc:
        return "untrusted" if "CERTIFICATE_VERIFY_FAILED" in str(exc) else None
    except requests.ConnectionError:
        return None
