"""Iceberg Java's table commits on the wire: staged creates, appends, schema and partition
evolution, replace, expiry, statistics, ``snapshots=refs``, v1 and v3 tables.

Each commit carries the updates Java's ``TableMetadata.Builder`` records and the requirements
``UpdateRequirements`` derives from them (``-1`` for "the one just added", ``add-schema`` with its
deprecated ``last-column-id``, ``assert-ref-snapshot-id`` ``null`` while a branch does not exist);
bodies come from ``tests.support.java_rest_wire``.
"""

from __future__ import annotations

import uuid

from icefloe.catalog.sql import SqlCatalog
from tests.support.java_rest_wire import (
    BUCKET_SPEC,
    ID_ORDER,
    JSON,
    SCHEMA,
    JavaWire,
    add_column,
    append,
    assert_error,
    assert_java_readable_table,
    create_changes,
    java_snapshot,
)


def test_staged_create_then_the_create_commit_java_sends(wire: JavaWire, backing_catalog: SqlCatalog) -> None:
    staged = wire.create_table(
        "db",
        "staged",
        **{
            "partition-spec": BUCKET_SPEC,
            "write-order": ID_ORDER,
            "stage-create": True,
            "properties": {"format-version": "2"},
        },
    )
    assert staged["metadata-location"] is None
    assert_java_readable_table(staged, 2)
    assert not backing_catalog.table_exists("db.staged")
    md = staged["metadata"]
    # RESTSessionCatalog.createChanges(metadata) plus the transaction's own append
    updates = create_changes(md)
    snapshot = java_snapshot(md, 4242, None, 1, 3)
    updates += [
        {"action": "add-snapshot", "snapshot": snapshot},
        {"action": "set-snapshot-ref", "ref-name": "main", "snapshot-id": 4242, "type": "branch"},
    ]
    reply = wire.commit("namespaces/db/tables/staged", [{"type": "assert-create"}], updates)
    assert reply.status_code == 200, reply.text
    committed = reply.json()
    assert_java_readable_table(committed, 2)
    cmd = committed["metadata"]
    assert cmd["table-uuid"] == md["table-uuid"]
    assert cmd["current-snapshot-id"] == 4242
    assert cmd["refs"] == {"main": {"snapshot-id": 4242, "type": "branch"}}
    assert cmd["last-sequence-number"] == 1
    assert cmd["partition-specs"] == [BUCKET_SPEC]
    assert [o["fields"] for o in cmd["sort-orders"] if o["order-id"] == cmd["default-sort-order-id"]] == [
        ID_ORDER["fields"]
    ]
    assert backing_catalog.load_table("db.staged").metadata.current_snapshot_id == 4242
    # staging or creating over an existing table is AlreadyExists, as Java's own server answers
    again = {"name": "staged", "schema": SCHEMA, "stage-create": True}
    assert_error(wire.send("POST", "namespaces/db/tables", again), 409, "AlreadyExistsException")
    assert_error(
        wire.commit("namespaces/db/tables/staged", [{"type": "assert-create"}], updates),
        409,
        "CommitFailedException",
    )


def test_staged_unpartitioned_v3_create_commits_without_a_snapshot(
    wire: JavaWire, backing_catalog: SqlCatalog
) -> None:
    """Java's createTransaction with no spec, no order and nothing appended: the bare create."""
    staged = wire.create_table("db", "bare", **{"stage-create": True, "properties": {"format-version": "3"}})
    md = staged["metadata"]
    assert_java_readable_table(staged, 3)
    updates = create_changes(md)
    assert updates[4] == {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}}
    assert updates[6] == {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}}
    reply = wire.commit("namespaces/db/tables/bare", [{"type": "assert-create"}], updates)
    assert reply.status_code == 200, reply.text
    assert_java_readable_table(reply.json(), 3)
    committed = reply.json()["metadata"]
    assert committed["table-uuid"] == md["table-uuid"]
    assert committed["next-row-id"] == 0
    assert committed["partition-specs"] == [{"spec-id": 0, "fields": []}]
    assert committed["sort-orders"] == [{"order-id": 0, "fields": []}]
    assert committed.get("snapshots", []) == [] and committed.get("refs", {}) == {}
    assert backing_catalog.load_table("db.bare").metadata.format_version == 3


def test_appends_assert_the_branch_head_and_a_stale_one_is_commit_failed(wire: JavaWire) -> None:
    table = wire.create_table("db", "t")["metadata"]
    path = "namespaces/db/tables/t"
    first = append(wire, path, table, java_snapshot(table, 1001, None, 1, 3), branch_head=None)
    assert first.status_code == 200, first.text
    assert_java_readable_table(first.json(), 2)
    second = append(wire, path, table, java_snapshot(table, 1002, 1001, 2, 5), branch_head=1001)
    assert second.status_code == 200, second.text
    md = second.json()["metadata"]
    assert md["current-snapshot-id"] == 1002
    assert md["last-sequence-number"] == 2
    assert [(s["snapshot-id"], s.get("parent-snapshot-id")) for s in md["snapshots"]] == [
        (1001, None),
        (1002, 1001),
    ]
    assert [entry["snapshot-id"] for entry in md["snapshot-log"]] == [1001, 1002]
    stale = append(wire, path, table, java_snapshot(table, 1003, 1001, 2, 1), branch_head=1001)
    assert_error(stale, 409, "CommitFailedException")
    wrong_uuid = dict(table, **{"table-uuid": str(uuid.uuid4())})
    assert_error(
        append(wire, path, wrong_uuid, java_snapshot(table, 1004, 1002, 3, 1), 1002),
        409,
        "CommitFailedException",
    )
    assert_error(
        append(wire, "namespaces/db/tables/missing", table, java_snapshot(table, 1, None, 1, 1), None),
        404,
        "NoSuchTableException",
    )


def applied_once(wire: JavaWire, path: str, requirements: list[JSON], updates: list[JSON]) -> JSON:
    """Commit; the new metadata. The same commit again fails its requirements (409)."""
    reply = wire.commit(path, requirements, updates)
    assert reply.status_code == 200, reply.text
    assert_error(wire.commit(path, requirements, updates), 409, "CommitFailedException")
    md: JSON = reply.json()["metadata"]
    return md


def test_schema_update_and_property_removal(wire: JavaWire) -> None:
    table = wire.create_table("db", "t", properties={"a": "1", "b": "2"})["metadata"]
    requirements, updates = add_column(
        table, {"id": 3, "name": "ts", "required": False, "type": "timestamptz"}
    )
    updates.append({"action": "remove-properties", "removals": ["a"]})
    md = applied_once(wire, "namespaces/db/tables/t", requirements, updates)
    assert md["current-schema-id"] == 1
    assert md["last-column-id"] == 3
    assert [f["name"] for f in md["schemas"][-1]["fields"]] == ["id", "data", "ts"]
    assert "a" not in md["properties"] and md["properties"]["b"] == "2"


def test_replace_table_as_java_builds_the_replacement(wire: JavaWire) -> None:
    table = wire.create_table("db", "t")["metadata"]
    path = "namespaces/db/tables/t"
    assert append(wire, path, table, java_snapshot(table, 7, None, 1, 3), None).status_code == 200
    replacement: JSON = {
        "type": "struct",
        "schema-id": 1,
        "fields": [{"id": 3, "name": "key", "required": True, "type": "string"}],
    }
    spec: JSON = {
        "spec-id": 1,
        "fields": [{"name": "key", "transform": "identity", "source-id": 3, "field-id": 1000}],
    }
    # UpdateRequirements.forReplaceTable: no current-schema / default-spec / ref assertions
    requirements: list[JSON] = [
        {"type": "assert-table-uuid", "uuid": table["table-uuid"]},
        {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 2},
        {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 999},
    ]
    updates: list[JSON] = [
        {"action": "remove-snapshot-ref", "ref-name": "main"},
        {"action": "add-schema", "schema": replacement, "last-column-id": 3},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": spec},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "set-default-sort-order", "sort-order-id": 0},
        {"action": "set-location", "location": table["location"]},
        {"action": "set-properties", "updates": {"replaced": "true"}},
    ]
    reply = wire.commit(path, requirements, updates)
    assert reply.status_code == 200, reply.text
    md = reply.json()["metadata"]
    assert_java_readable_table(reply.json(), 2)
    assert md["current-schema-id"] == 1 and md["default-spec-id"] == 1
    assert md["last-partition-id"] == 1000
    assert md.get("refs", {}) == {} and md.get("current-snapshot-id") in (None, -1)
    assert [s["snapshot-id"] for s in md["snapshots"]] == [7]  # history stays
    assert md["properties"]["replaced"] == "true"


def test_expiry_statistics_and_unused_spec_and_schema_removal(wire: JavaWire) -> None:
    table = wire.create_table("db", "t")["metadata"]
    path = "namespaces/db/tables/t"
    assert append(wire, path, table, java_snapshot(table, 1, None, 1, 1), None).status_code == 200
    assert append(wire, path, table, java_snapshot(table, 2, 1, 2, 2), 1).status_code == 200
    uuid_req: list[JSON] = [{"type": "assert-table-uuid", "uuid": table["table-uuid"]}]
    statistics: JSON = {  # StatisticsFileParser.toJson
        "snapshot-id": 2,
        "statistics-path": f"{table['location']}/metadata/stats-2.puffin",
        "file-size-in-bytes": 100,
        "file-footer-size-in-bytes": 20,
        "blob-metadata": [
            {
                "type": "apache-datasketches-theta-v1",
                "snapshot-id": 2,
                "sequence-number": 2,
                "fields": [1],
                "properties": {"ndv": "2"},
            }
        ],
    }
    partition_statistics: JSON = {
        "snapshot-id": 2,
        "statistics-path": f"{table['location']}/metadata/pstats-2.parquet",
        "file-size-in-bytes": 50,
    }
    reply = wire.commit(
        path,
        uuid_req,
        [
            {"action": "set-statistics", "snapshot-id": 2, "statistics": statistics},
            {"action": "set-partition-statistics", "partition-statistics": partition_statistics},
        ],
    )
    assert reply.status_code == 200, reply.text
    md = reply.json()["metadata"]
    assert md["statistics"] == [statistics]
    assert md["partition-statistics"] == [partition_statistics]

    # a schema and a spec change, then ExpireSnapshots(cleanExpiredMetadata) drops what no one uses
    evolved = dict(SCHEMA, **{"schema-id": 1, "fields": SCHEMA["fields"][:1]})
    spec: JSON = {
        "spec-id": 1,
        "fields": [{"name": "id", "transform": "identity", "source-id": 1, "field-id": 1000}],
    }
    reply = wire.commit(
        path,
        uuid_req,
        [
            {"action": "add-schema", "schema": evolved, "last-column-id": 2},
            {"action": "set-current-schema", "schema-id": -1},
            {"action": "add-spec", "spec": spec},
            {"action": "set-default-spec", "spec-id": -1},
        ],
    )
    assert reply.status_code == 200, reply.text
    expire: list[JSON] = [
        {"action": "remove-snapshots", "snapshot-ids": [1]},
        {"action": "remove-statistics", "snapshot-id": 2},
        {"action": "remove-partition-statistics", "snapshot-id": 2},
        {"action": "remove-partition-specs", "spec-ids": [0]},
        {"action": "remove-schemas", "schema-ids": [0]},
    ]
    requirements: list[JSON] = [
        *uuid_req,
        {"type": "assert-default-spec-id", "default-spec-id": 1},
        {"type": "assert-current-schema-id", "current-schema-id": 1},
    ]
    reply = wire.commit(path, requirements, expire)
    assert reply.status_code == 200, reply.text
    md = reply.json()["metadata"]
    assert_java_readable_table(reply.json(), 2)
    assert [s["snapshot-id"] for s in md["snapshots"]] == [2]
    assert md.get("statistics", []) == [] and md.get("partition-statistics", []) == []
    assert [s["spec-id"] for s in md["partition-specs"]] == [1]
    assert [s["schema-id"] for s in md["schemas"]] == [1]
    current = [{"action": "remove-schemas", "schema-ids": [1]}]
    assert_error(wire.commit(path, uuid_req, current), 400, "BadRequestException")


def test_load_with_snapshots_refs_keeps_only_referenced_snapshots(wire: JavaWire) -> None:
    table = wire.create_table("db", "t")["metadata"]
    path = "namespaces/db/tables/t"
    assert append(wire, path, table, java_snapshot(table, 1, None, 1, 1), None).status_code == 200
    assert append(wire, path, table, java_snapshot(table, 2, 1, 2, 2), 1).status_code == 200
    tag: JSON = {
        "action": "set-snapshot-ref",
        "ref-name": "v1",
        "snapshot-id": 1,
        "type": "tag",
        "max-ref-age-ms": 86400000,
    }
    assert wire.commit(path, [], [tag]).status_code == 200
    assert append(wire, path, table, java_snapshot(table, 3, 2, 3, 3), 2).status_code == 200
    full = wire.ok("GET", path, snapshots="all")
    assert [s["snapshot-id"] for s in full["metadata"]["snapshots"]] == [1, 2, 3]
    refs_only = wire.ok("GET", path, snapshots="refs")
    assert_java_readable_table(refs_only, 2)
    assert refs_only["metadata-location"] == full["metadata-location"]
    assert [s["snapshot-id"] for s in refs_only["metadata"]["snapshots"]] == [1, 3]
    assert refs_only["metadata"]["refs"] == {
        "main": {"snapshot-id": 3, "type": "branch"},
        "v1": {"snapshot-id": 1, "type": "tag", "max-ref-age-ms": 86400000},
    }
    assert_error(wire.send("GET", path, snapshots="some"), 400, "BadRequestException")


def test_v3_create_and_append_carry_row_lineage(wire: JavaWire) -> None:
    created = wire.create_table("db", "v3", properties={"format-version": "3"})
    assert_java_readable_table(created, 3)
    table = created["metadata"]
    assert table["next-row-id"] == 0
    path = "namespaces/db/tables/v3"
    first = java_snapshot(table, 31, None, 1, 3) | {"first-row-id": 0, "added-rows": 3}
    reply = append(wire, path, table, first, None)
    assert reply.status_code == 200, reply.text
    assert_java_readable_table(reply.json(), 3)
    second = java_snapshot(table, 32, 31, 2, 2) | {"first-row-id": 3, "added-rows": 2}
    reply = append(wire, path, table, second, 31)
    assert reply.status_code == 200, reply.text
    md = reply.json()["metadata"]
    assert md["next-row-id"] == 5
    assert [(s["first-row-id"], s["added-rows"]) for s in md["snapshots"]] == [(0, 3), (3, 2)]
    # a v3 column with defaults and a doc, as SchemaParser writes it
    column: JSON = {"id": 3, "name": "n", "required": False, "type": "int", "doc": "a count"}
    column |= {"initial-default": 34, "write-default": 35}
    reply = wire.commit(path, *add_column(table, column))
    assert reply.status_code == 200, reply.text
    assert reply.json()["metadata"]["schemas"][-1]["fields"][-1] == column


def test_v1_table_carries_the_single_schema_and_spec_fields_and_appends(wire: JavaWire) -> None:
    created = wire.create_table(
        "db", "v1", **{"partition-spec": BUCKET_SPEC, "properties": {"format-version": "1"}}
    )
    assert_java_readable_table(created, 1)
    table = created["metadata"]
    # TableMetadataParser reads "schema" / "partition-spec" when a v1 file lacks the lists
    assert table["schema"] == table["schemas"][0]
    assert table["partition-spec"] == BUCKET_SPEC["fields"]
    snapshot = java_snapshot(table, 101, None, 1, 2)
    del snapshot["sequence-number"]  # SnapshotParser omits it in v1 (INITIAL_SEQUENCE_NUMBER)
    reply = append(wire, "namespaces/db/tables/v1", table, snapshot, None)
    assert reply.status_code == 200, reply.text
    assert_java_readable_table(reply.json(), 1)
    md = reply.json()["metadata"]
    assert md["current-snapshot-id"] == 101
    assert "sequence-number" not in md["snapshots"][0]


def test_partition_and_sort_order_evolution_as_java_commits_them(wire: JavaWire) -> None:
    table = wire.create_table("db", "evolving", **{"partition-spec": BUCKET_SPEC})["metadata"]
    path = "namespaces/db/tables/evolving"
    uuid_req: JSON = {"type": "assert-table-uuid", "uuid": table["table-uuid"]}
    # UpdatePartitionSpec: ALTER TABLE ... ADD PARTITION FIELD truncate(4, data)
    spec: JSON = {
        "spec-id": 1,
        "fields": [
            *BUCKET_SPEC["fields"],
            {"name": "data_trunc", "transform": "truncate[4]", "source-id": 2, "field-id": 1001},
        ],
    }
    spec_requirements: list[JSON] = [
        uuid_req,
        {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 1000},
        {"type": "assert-default-spec-id", "default-spec-id": 0},
    ]
    spec_updates: list[JSON] = [
        {"action": "add-spec", "spec": spec},
        {"action": "set-default-spec", "spec-id": -1},
    ]
    md = applied_once(wire, path, spec_requirements, spec_updates)
    assert (md["default-spec-id"], md["last-partition-id"]) == (1, 1001)
    assert md["partition-specs"] == [BUCKET_SPEC, spec]
    # ReplaceSortOrder: ALTER TABLE ... WRITE ORDERED BY id DESC NULLS LAST
    order: JSON = {
        "order-id": 1,
        "fields": [
            {"transform": "identity", "source-id": 1, "direction": "desc", "null-order": "nulls-last"}
        ],
    }
    order_requirements: list[JSON] = [
        uuid_req,
        {"type": "assert-default-sort-order-id", "default-sort-order-id": 0},
    ]
    order_updates: list[JSON] = [
        {"action": "add-sort-order", "sort-order": order},
        {"action": "set-default-sort-order", "sort-order-id": -1},
    ]
    md = applied_once(wire, path, order_requirements, order_updates)
    assert md["default-sort-order-id"] == 1
    assert md["sort-orders"] == [{"order-id": 0, "fields": []}, order]
