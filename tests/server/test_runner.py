"""Running the REST server: on uvicorn's compiled HTTP parser and event loop when installed, and on
the pure-Python fallbacks (h11, asyncio) that serve the same commits where they are not."""

from __future__ import annotations

import pyarrow as pa
import pytest
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.server import ServerConfig, start_server
from icefloe.server.header_case import http_protocol
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField


@pytest.mark.parametrize(("http", "loop"), [("auto", "auto"), ("h11", "asyncio")], ids=["auto", "fallback"])
def test_v4_appends_commit_through_either_http_stack(
    backing_catalog: SqlCatalog, http: str, loop: str
) -> None:
    backing_catalog.create_namespace("db")
    with start_server(ServerConfig(backing_catalog), http=http, loop=loop) as server:
        assert server.server.config.http == http_protocol(http) and server.server.config.loop == loop
        if http == "auto":  # httptools is installed here: its protocol, spelling the ETag as Java reads it
            assert issubclass(server.server.config.http, HttpToolsProtocol)
        client = RestCatalog("runner", uri=server.uri)
        try:
            schema = Schema(NestedField(1, "id", LongType(), required=True))
            table = client.create_table("db.t", schema, properties={"format-version": "4"})
            for start in (0, 10):
                table.append(pa.table({"id": pa.array(range(start, start + 3), pa.int64())}))
        finally:
            client.close()
    served = backing_catalog.load_table("db.t")
    assert len(served.snapshots()) == 2
    assert sorted(served.scan().to_arrow().column("id").to_pylist()) == [0, 1, 2, 10, 11, 12]
