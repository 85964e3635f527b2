"""Table routes of the REST server: a staged create answers the new table's metadata, creates nothing."""

from __future__ import annotations

import requests

from icefloe.catalog.sql import SqlCatalog
from icefloe.server import RunningServer
from icefloe.spec.json_structures import schema_to_dict
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField


def test_stage_create_answers_default_metadata_without_creating(
    rest_server: RunningServer, backing_catalog: SqlCatalog
) -> None:
    backing_catalog.create_namespace("db")
    body = {
        "name": "staged",
        "schema": schema_to_dict(Schema(NestedField(1, "id", LongType(), required=True))),
        "stage-create": True,
    }
    reply = requests.post(rest_server.uri + "/v1/namespaces/db/tables", json=body, timeout=30)
    assert reply.status_code == 200, reply.text
    result = reply.json()
    metadata = result["metadata"]
    assert result["metadata-location"] is None
    assert metadata["format-version"] == 2  # the default when no format-version property is given
    assert metadata["default-spec-id"] == 0
    assert [spec["fields"] for spec in metadata["partition-specs"]] == [[]]  # unpartitioned
    assert metadata["default-sort-order-id"] == 0
    assert [order["fields"] for order in metadata["sort-orders"]] == [[]]  # unsorted
    assert metadata["location"].endswith("/db/staged")
    assert not backing_catalog.table_exists("db.staged")
