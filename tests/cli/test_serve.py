"""``icefloe serve``: a real server process over a SQLite catalog, and its authentication options."""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from icefloe.catalog.sql import SqlCatalog
from icefloe.cli.main import build_parser
from icefloe.cli.serve import server_config
from icefloe.errors import ValidationError


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
