"""Table routes of the REST server: a staged create answers the new table's metadata, creates nothing;
a commit's relative v4 root manifest resolves against the table's location; a result's JSON is
encoded once per metadata; a commit made beside the server is seen by its next commits."""

from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path

import pyarrow as pa
import requests

from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.server import RunningServer
from icefloe.server.tables import table_result
from icefloe.spec.json_codec import snapshot_to_dict, table_metadata_to_json
from icefloe.spec.json_structures import schema_to_dict
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField
from icefloe.spec.updates import new_table_metadata


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


def test_a_relative_v4_root_manifest_is_committed_under_the_tables_location(
    rest_server: RunningServer, backing_catalog: SqlCatalog
) -> None:
    backing_catalog.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), required=True))
    table = backing_catalog.create_table("db.t", schema, properties={"format-version": "4"})
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    md = table.metadata
    parent = md.current_snapshot()
    assert parent is not None and parent.root_manifest is not None
    child = dataclasses.replace(
        parent,
        snapshot_id=parent.snapshot_id + 1,
        parent_snapshot_id=parent.snapshot_id,
        sequence_number=md.last_sequence_number + 1,
        first_row_id=md.next_row_id,
        added_rows=0,
    )
    sent = snapshot_to_dict(child, 4, md.location)
    assert not sent["root-manifest"].startswith(("file:", "/"))  # sent relative to the table
    body = {
        "requirements": [
            {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": parent.snapshot_id}
        ],
        "updates": [
            {"action": "add-snapshot", "snapshot": sent},
            {
                "action": "set-snapshot-ref",
                "ref-name": "main",
                "type": "branch",
                "snapshot-id": child.snapshot_id,
            },
        ],
    }
    reply = requests.post(rest_server.uri + "/v1/namespaces/db/tables/t", json=body, timeout=30)
    assert reply.status_code == 200, reply.text
    stored = backing_catalog.load_table("db.t").metadata.snapshot_by_id(child.snapshot_id)
    assert stored is not None and stored.root_manifest == parent.root_manifest


def test_a_table_result_is_encoded_once_per_metadata_not_once_per_reply() -> None:
    """Every commit of a coalesced batch is answered with the same metadata: one encoding serves all;
    other metadata under the same location (a reused name) is encoded afresh."""
    schema = Schema(NestedField(1, "id", LongType(), required=True))
    md = new_table_metadata(schema, None, None, "file:/warehouse/db/t", {})
    location = "file:/warehouse/db/t/metadata/v1.metadata.json"
    first = table_result(location, md)
    assert first.json_text is not None
    assert table_result(location, md).json_text is first.json_text
    changed = dataclasses.replace(md, properties={"owner": "me"})
    other = table_result(location, changed)
    assert other.json_text is not None
    assert json.loads(other.json_text)["metadata"]["properties"] == {"owner": "me"}
    assert json.loads(first.json_text) == {
        "metadata-location": location,
        "config": {},
        "metadata": json.loads(table_metadata_to_json(md)),
    }
    assert json.loads(table_result(None, md).json_text or "")["metadata-location"] is None


def test_the_answers_of_the_last_four_metadata_files_are_kept_oldest_first_out() -> None:
    """A fifth metadata file's answer evicts the first one's, although that one was just asked
    for again (a hit does not refresh it): it is encoded afresh, the others are reused."""
    schema = Schema(NestedField(1, "id", LongType(), required=True))
    md = new_table_metadata(schema, None, None, "file:/warehouse/db/lru", {})
    locations = [f"file:/warehouse/db/lru/metadata/v{i}.metadata.json" for i in range(5)]
    texts = [table_result(location, md).json_text for location in locations[:4]]
    assert table_result(locations[0], md).json_text is texts[0]
    fifth = table_result(locations[4], md).json_text
    assert table_result(locations[4], md).json_text is fifth
    assert [
        table_result(location, md).json_text is text
        for location, text in zip(locations[1:4], texts[1:], strict=True)
    ] == [True, True, True]
    again = table_result(locations[0], md).json_text
    assert again is not texts[0] and again == texts[0]


def test_a_commit_made_beside_the_server_is_seen_by_its_next_commits(
    rest_server: RunningServer, backing_catalog: SqlCatalog
) -> None:
    """Another catalog client moves the pointer in the SQL catalog between two REST commits: the
    server checks requirements against that commit and answers metadata that includes it."""
    backing_catalog.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), required=True))
    backing_catalog.create_table("db.t", schema, properties={"format-version": "4"})
    client = RestCatalog("c", uri=rest_server.uri)
    try:
        table = client.load_table("db.t")
        table.append(pa.table({"id": pa.array([1], pa.int64())}))
        served_head = table.metadata.current_snapshot()
        assert served_head is not None
        beside = backing_catalog.load_table("db.t")
        beside.append(pa.table({"id": pa.array([2], pa.int64())}))
        beside_head = beside.metadata.current_snapshot()
        assert beside_head is not None and beside_head.parent_snapshot_id == served_head.snapshot_id

        stale = {
            "requirements": [
                {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": served_head.snapshot_id}
            ],
            "updates": [{"action": "set-properties", "updates": {"k": "v"}}],
        }
        reply = requests.post(rest_server.uri + "/v1/namespaces/db/tables/t", json=stale, timeout=30)
        assert reply.status_code == 409, reply.text

        table.append(pa.table({"id": pa.array([3], pa.int64())}))  # from a stale head: lands on top
        head = table.metadata.current_snapshot()
        assert head is not None and head.parent_snapshot_id == beside_head.snapshot_id
        loaded = requests.get(rest_server.uri + "/v1/namespaces/db/tables/t", timeout=30).json()
        assert loaded["metadata-location"] == backing_catalog.load_table("db.t").metadata_location
        assert loaded["metadata"]["current-snapshot-id"] == head.snapshot_id
    finally:
        client.close()
    assert sorted(backing_catalog.load_table("db.t").scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]


def test_the_replies_of_one_batch_share_one_answer_holding_the_file_as_written(
    rest_server: RunningServer, backing_catalog: SqlCatalog
) -> None:
    """Concurrent replies for one committed metadata get one encoded answer (built by the first,
    awaited by the others), whose metadata is the metadata file's own text."""
    backing_catalog.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), required=True))
    table = backing_catalog.create_table("db.t", schema, properties={"format-version": "2"})
    table.append(pa.table({"id": pa.array([1], pa.int64())}))
    reply = requests.post(
        rest_server.uri + "/v1/namespaces/db/tables/t",
        json={"updates": [{"action": "set-properties", "updates": {"k": "v"}}]},
        timeout=30,
    )
    assert reply.status_code == 200, reply.text
    location = reply.json()["metadata-location"]
    written = Path(location.removeprefix("file:")).read_bytes()
    assert reply.content == b'{"metadata-location": ' + json.dumps(location).encode() + (
        b', "config": {}, "metadata": ' + written + b"}"
    )

    md = backing_catalog.load_table("db.t").metadata
    answers: list[str | bytes | None] = []
    barrier = threading.Barrier(8)

    def answer() -> None:
        barrier.wait()
        answers.append(table_result("file:/elsewhere/v9.metadata.json", md).json_text)

    threads = [threading.Thread(target=answer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(answers) == 8 and all(a is answers[0] for a in answers)
