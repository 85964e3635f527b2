"""The REST server over HTTPS (``TlsFiles``): icefloe's and PyIceberg's clients commit and read
through it when they trust its certificate, and are refused when they do not; plain HTTP to the
TLS port gets no answer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog as PyIcebergRestCatalog

from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.rest.http import ServiceError
from icefloe.catalog.sql import SqlCatalog
from icefloe.server import RunningServer, ServerConfig, TlsFiles, start_server
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from tests.support.certificates import self_signed_certificate

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType()))


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    return self_signed_certificate(tmp_path)


@pytest.fixture
def https_server(backing_catalog: SqlCatalog, certificate: tuple[Path, Path]) -> Iterator[RunningServer]:
    cert, key = certificate
    with start_server(ServerConfig(backing_catalog), tls=TlsFiles(str(cert), str(key))) as server:
        yield server


def test_both_clients_commit_and_read_over_https(
    https_server: RunningServer,
    backing_catalog: SqlCatalog,
    certificate: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # requests lets these variables override a session's own CA bundle (PyIceberg's ssl.cabundle);
    # icefloe's client gives its property precedence, so only PyIceberg needs them gone
    for variable in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(variable, raising=False)
    assert https_server.uri.startswith("https://127.0.0.1:")
    ours = RestCatalog("tls", uri=https_server.uri, **{"ssl.cabundle": str(certificate[0])})
    try:
        ours.create_namespace("db")
        table = ours.create_table("db.t", SCHEMA, properties={"format-version": "2"})
        table.append(pa.table({"id": pa.array([1, 2], pa.int64()), "s": ["a", "b"]}))
        theirs = PyIcebergRestCatalog("py", uri=https_server.uri, ssl={"cabundle": str(certificate[0])})
        py_table = theirs.load_table("db.t")
        assert sorted(py_table.scan().to_arrow().column("id").to_pylist()) == [1, 2]
        py_table.append(pa.table({"id": [3], "s": ["c"]}, schema=py_table.schema().as_arrow()))
        rows = ours.load_table("db.t").scan().to_arrow().sort_by("id").to_pylist()
        assert rows == [{"id": 1, "s": "a"}, {"id": 2, "s": "b"}, {"id": 3, "s": "c"}]
    finally:
        ours.close()
    assert len(backing_catalog.load_table("db.t").snapshots()) == 2


def test_a_client_that_does_not_trust_the_certificate_is_refused(https_server: RunningServer) -> None:
    with pytest.raises(ServiceError, match=r"(?i)certificate"):
        RestCatalog("untrusting", uri=https_server.uri).list_namespaces()


def test_plain_http_to_the_tls_port_gets_no_answer(https_server: RunningServer) -> None:
    with pytest.raises(requests.ConnectionError):
        requests.get(https_server.uri.replace("https://", "http://") + "/v1/config", timeout=10)


def test_a_missing_certificate_file_is_named_before_serving(
    backing_catalog: SqlCatalog, certificate: tuple[Path, Path], tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-key.pem"
    with pytest.raises(ValueError, match=r"no-such-key\.pem"):
        start_server(ServerConfig(backing_catalog), tls=TlsFiles(str(certificate[0]), str(missing)))
