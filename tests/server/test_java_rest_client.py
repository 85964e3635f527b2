"""Iceberg Java 1.5.2's real ``RESTCatalog`` against ``icefloe serve`` (SQLite and PostgreSQL).

One JVM per backend runs the scripted scenario of ``tests/support/java/JavaRestDriver.java``
(namespaces, tables, commits, refs, multi-table transactions, concurrent commits, views, scans,
OAuth2) against a server that requires OAuth2 client credentials; each test asserts the outcome of
some of its steps exactly, and icefloe reads back what Java committed. The replay tests
(``test_java_client_*.py``) check the same requests field by field without a JVM.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.server import Grants, OAuthClient, ServerConfig, start_server
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField
from tests.support.java_rest_client import run_driver

CLIENT_ID, SECRET, TOKEN = "java", "s3cret", "static-token"
PREFIX = "wh"
THREADS, COMMITS_PER_THREAD = 4, 3
POS_FIELD_IDS = {"file_path": 2147483546, "pos": 2147483545}


def _field(name: str, kind: pa.DataType, field_id: int, nullable: bool = True) -> pa.Field:
    return pa.field(name, kind, nullable=nullable, metadata={"PARQUET:field_id": str(field_id)})


EVENTS_ARROW = pa.schema(
    [
        _field("id", pa.int64(), 1, nullable=False),
        _field("name", pa.string(), 2),
        _field("qty", pa.int32(), 3),
        _field("flag", pa.bool_(), 4),
    ]
)
PARTED_ARROW = pa.schema([_field("id", pa.int64(), 1, nullable=False), _field("cat", pa.string(), 2)])
EVENT_IDS = {"A": [1, 2, 3], "B": [4, 5], "C": [6, 7], "D": [8], "S": [20]}
PARTED_FILES = {"P": ([10, 11], "a"), "Q": ([30, 31], "b"), "Q2": ([30, 31], "b"), "P2": ([12], "a")}


def _write(path: Path, table: pa.Table) -> dict[str, Any]:
    pq.write_table(table, path)
    ids = table.column("id").to_pylist() if "id" in table.column_names else [0]
    return {
        "path": str(path),
        "size": path.stat().st_size,
        "records": table.num_rows,
        "lower_id": min(ids),
        "upper_id": max(ids),
    }


def _event_rows(ids: list[int]) -> pa.Table:
    return pa.table(
        {
            "id": ids,
            "name": [f"n{i}" for i in ids],
            "qty": [i * 10 for i in ids],
            "flag": [i % 2 == 0 for i in ids],
        },
        schema=EVENTS_ARROW,
    )


@dataclass(frozen=True)
class JavaRun:
    """The steps Java reported, the catalog behind the server and the files Java was given."""

    steps: dict[str, dict[str, Any]]
    catalog: SqlCatalog
    files: dict[str, dict[str, Any]]
    icefloe_files: dict[str, int]


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def java(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaRun]:
    """Write the Parquet inputs and an icefloe table, serve the catalog, run the Java scenario once."""
    home = tmp_path_factory.mktemp(f"java-rest-{request.param}")
    if request.param == "postgres":
        catalog_uri = str(request.getfixturevalue("postgres_uri"))
    else:
        catalog_uri = f"sqlite:///{home / 'catalog.db'}"
    (home / "warehouse").mkdir()
    data = home / "inputs"
    data.mkdir()
    files = {key: _write(data / f"{key}.parquet", _event_rows(ids)) for key, ids in EVENT_IDS.items()}
    for key, (ids, cat) in PARTED_FILES.items():
        rows = pa.table({"id": ids, "cat": [cat] * len(ids)}, schema=PARTED_ARROW)
        files[key] = {**_write(data / f"{key}.parquet", rows), "partition": f"cat={cat}"}
    deletes_schema = pa.schema(
        [
            _field(n, pa.string() if n == "file_path" else pa.int64(), i, False)
            for n, i in POS_FIELD_IDS.items()
        ]
    )
    deletes = _write(
        data / "pos-deletes.parquet",
        pa.table({"file_path": [files["A"]["path"]], "pos": [1]}, schema=deletes_schema),
    )

    equality_schema = pa.schema([_field("id", pa.int64(), 1, nullable=False)])
    equality = _write(data / "eq-deletes.parquet", pa.table({"id": [11, 30]}, schema=equality_schema))

    catalog = SqlCatalog(f"java_{uuid.uuid4().hex[:10]}", uri=catalog_uri, warehouse=str(home / "warehouse"))
    catalog.create_namespace("ice")
    written = catalog.create_table(
        "ice.written", Schema(NestedField(1, "id", LongType())), properties={"format-version": "2"}
    )
    written.append(pa.table({"id": [1, 2, 3]}))
    written.append(pa.table({"id": [4, 5]}))
    icefloe_files = {
        task.data_file.file_path: task.data_file.record_count
        for task in catalog.load_table("ice.written").scan().plan_files()
    }
    clients = {CLIENT_ID: OAuthClient(SECRET, Grants())}
    tokens = {TOKEN: Grants()}
    try:
        with (
            start_server(ServerConfig(catalog, tokens=tokens, clients=clients)) as server,
            start_server(ServerConfig(catalog, tokens=tokens, clients=clients, prefix=PREFIX)) as prefixed,
        ):
            steps = run_driver(
                {
                    "uri": server.uri,
                    "prefixed_uri": prefixed.uri,
                    "warehouse": str(home / "warehouse"),
                    "credential": f"{CLIENT_ID}:{SECRET}",
                    "bad_credential": f"{CLIENT_ID}:wrong",
                    "token": TOKEN,
                    "files": files,
                    "position_deletes": deletes,
                    "equality_deletes": equality,
                    "icefloe_table": "ice.written",
                    "threads": THREADS,
                    "commits_per_thread": COMMITS_PER_THREAD,
                },
                home,
            )
        yield JavaRun(steps, catalog, files, icefloe_files)
    finally:
        catalog.close()


def _rows(catalog: SqlCatalog, name: str, ref: str | None = None) -> list[dict[str, Any]]:
    scan = catalog.load_table(name).scan()
    if ref is not None:
        scan = scan.use_ref(ref)
    return sorted(scan.to_arrow().to_pylist(), key=lambda row: row["id"])


def test_namespaces(java: JavaRun) -> None:
    """Create (with properties, nested, twice), list, load, update, remove, exists, drop."""
    steps = java.steps
    assert steps["config"] == {"value": True}
    assert steps["create_namespace"] == {}
    assert steps["create_namespace_again"] == {"error": "AlreadyExistsException"}
    assert steps["list_top"] == {"value": ["gone", "ice", "jns"]}
    assert steps["list_nested"] == {"value": ["jns.inner"]}
    assert steps["load_namespace"] == {"value": {"k": "v", "owner": "java"}}
    assert steps["set_properties"] == {"value": True}
    # Java 1.5.2's removeProperties answers "!response.updated().isEmpty()" (a client bug fixed
    # later), so it says false although the server removed the key, as the reload shows.
    assert steps["remove_properties"] == {"value": False}
    assert steps["load_namespace_after"] == {"value": {"k": "v2", "team": "ice"}}
    assert steps["namespace_exists"] == {"value": [True, False]}
    assert steps["load_missing_namespace"] == {"error": "NoSuchNamespaceException"}
    assert steps["drop_empty_namespace"] == {"value": True}
    assert steps["drop_missing_namespace"] == {"value": False}
    # The server answers 409 NamespaceNotEmptyException; Java 1.5.2's namespace error handler maps
    # every 409 to AlreadyExistsException (newer Java has a drop handler that keeps the type).
    assert steps["drop_non_empty_namespace"] == {"error": "AlreadyExistsException"}
    assert java.catalog.namespace_exists("jns")


def test_table_lifecycle(java: JavaRun) -> None:
    """v1 and v2 creates, partitioned and sorted, staged create, replace, rename, drop, register."""
    steps = java.steps
    assert steps["create_v1"] == {"value": 1}
    assert steps["create_existing"] == {"error": "AlreadyExistsException"}
    assert steps["create_partitioned_sorted"] == {
        "spec": "[ 1000: cat: identity(2) 1001: id_bucket_4: bucket[4](1) ]",
        "sort": "[ identity(2) DESC NULLS LAST identity(1) ASC NULLS FIRST ]",
    }
    assert steps["staged_create"] == {"visible_before": False, "snapshots": 1}
    assert steps["replace_transaction"] == {
        "columns": ["id", "extra"],
        "current": "some",
        "snapshots": 2,
        "replaced": "true",
    }
    assert steps["create_or_replace_new"] == {"value": True}
    assert steps["list_tables"] == {"value": ["jns.parted", "jns.staged", "jns.tmp", "jns.v1t"]}
    assert steps["rename_table"] == {"value": [False, True]}
    assert steps["load_missing_table"] == {"error": "NoSuchTableException"}
    assert steps["drop_table"] == {"value": [True, False]}
    assert steps["register_table"] == {"snapshots": 1, "records": "3"}
    # icefloe refuses to register metadata a live table owns (two tables would delete each other's files)
    assert steps["register_live_metadata"] == {"error": "BadRequestException"}
    assert steps["drop_purge"] == {"dropped": True, "exists": False}
    assert not Path(java.files["S"]["path"]).exists()
    assert Path(java.files["A"]["path"]).exists()

    assert _rows(java.catalog, "jns.v1t") == _rows(java.catalog, "jns.registered")
    assert [row["id"] for row in _rows(java.catalog, "jns.v1t")] == [1, 2, 3]
    assert java.catalog.load_table("jns.v1t").metadata.format_version == 1
    assert _rows(java.catalog, "jns.parted") == [{"id": 10, "cat": "a"}, {"id": 11, "cat": "a"}]


def test_commits_icefloe_reads_back(java: JavaRun) -> None:
    """Appends, a row delta with position deletes, overwrite, delete, schema evolution, properties."""
    steps = java.steps
    assert steps["events_create"] == {"value": 2}
    assert steps["row_delta"] == {"value": "overwrite"}
    assert steps["overwrite"] == {
        "operation": "overwrite",
        "total_records": "5",
        "total_data_files": "2",
        "total_delete_files": "1",
    }
    assert steps["delete_file"] == {"operation": "delete", "total_records": "5"}
    assert steps["schema_evolution"] == {
        "schema_id": 3,
        "schemas": 4,
        "columns": ["id:long", "label:string", "qty:long", "note:string"],
    }
    assert steps["properties"] == {"owner": "java", "has_drop_me": False}
    # A's second row (id 2) is deleted by position; B was overwritten by C; D was added then
    # deleted; "late" is the column the stale multi-table transaction step added first.
    assert _rows(java.catalog, "jns.events") == [
        {"id": i, "label": f"n{i}", "qty": i * 10, "note": None, "late": None} for i in (1, 3, 6, 7)
    ]
    events = java.catalog.load_table("jns.events")
    assert events.properties["owner"] == "java" and "drop-me" not in events.properties


def test_refs_cherry_pick_rollback_expire(java: JavaRun) -> None:
    """Tag and branch via manageSnapshots, a branch commit, WAP cherry-pick, rollback, expiry."""
    steps = java.steps
    assert steps["refs"] == {"refs": ["audit", "first", "main"], "audit_parent_is_main": True}
    assert steps["cherry_pick_rollback"] == {
        "staged_not_current": True,
        "fast_forward": True,
        "rolled_back": True,
    }
    assert steps["expire_snapshots"] == {"before": 8, "after": 7, "staged_gone": True}
    snaps = steps["snapshot_ids"]["value"]
    events = java.catalog.load_table("jns.events")
    refs = events.refs()
    assert refs["first"].snapshot_id == snaps["a"]
    assert refs["main"].snapshot_id == snaps["deleted"]
    assert snaps["staged"] not in {s.snapshot_id for s in events.snapshots()}
    assert [row["id"] for row in _rows(java.catalog, "jns.events", ref="audit")] == [1, 3, 6, 7, 8]
    assert [row["id"] for row in _rows(java.catalog, "jns.events", ref="first")] == [1, 2, 3]
    # the cherry-picked file is still referenced by the audit branch, so expiry kept it
    assert Path(java.files["D"]["path"]).exists()


def test_multi_table_transaction(java: JavaRun) -> None:
    """commitTransaction over two tables lands both; a stale requirement on one lands neither."""
    assert java.steps["multi_table_commit"] == {"value": ["1", "1"]}
    assert java.steps["multi_table_commit_stale"] == {"error": "CommitFailedException"}
    assert java.steps["multi_table_commit_stale_after"] == {"value": "1"}
    assert java.catalog.load_table("jns.v1t").properties["txn"] == "1"


def test_concurrent_commits_all_land(java: JavaRun) -> None:
    """Several Java threads append to one table; Java retries on 409 until every commit lands."""
    total = THREADS * COMMITS_PER_THREAD
    assert java.steps["concurrent_appends"] == {
        "committed": total,
        "snapshots": total,
        "total_records": str(total * len(EVENT_IDS["A"])),
    }
    # (test_maintenance: the expire_incremental step later keeps only the last two snapshots)
    assert java.catalog.load_table("jns.hot").scan().count() == total * len(EVENT_IDS["A"])


def test_views(java: JavaRun) -> None:
    """ViewCatalog: create, create again refused, replace with a second dialect, load, list, rename, drop."""
    steps = java.steps
    assert steps["create_view"] == {"version": 1, "sql": "SELECT id FROM events"}
    assert steps["create_view_again"] == {"error": "AlreadyExistsException"}
    assert steps["replace_view"] == {"version": 2, "versions": 2, "dialects": 2}
    assert steps["load_view"] == {"sql": "SELECT id FROM events WHERE id > 1", "comment": "by java"}
    assert steps["list_views"] == {"value": ["jns.v_events"]}
    assert steps["view_is_not_table"] == {"value": [True, False]}
    assert steps["rename_view"] == {"value": ["jns.v_renamed"]}
    assert steps["drop_view"] == {"value": [True, False]}


def test_java_plans_icefloe_table(java: JavaRun) -> None:
    """Java's planFiles over manifests icefloe wrote: the same data files and record counts."""
    planned = java.steps["scan_icefloe_table"]["value"]
    assert planned == {_file_uri(path): count for path, count in java.icefloe_files.items()}
    assert sorted(planned.values()) == [2, 3]


def _file_uri(path: str) -> str:
    return path if path.startswith("file:") else Path(path).as_uri()


def test_oauth2_client_credentials(java: JavaRun) -> None:
    """The whole scenario ran with credential=id:secret; a wrong secret is refused."""
    assert java.steps["bad_secret"] == {"error": "NotAuthorizedException"}


def test_maintenance(java: JavaRun) -> None:
    """Dynamic overwrite, compaction, manifest rewrite, branch management, statistics, expiry."""
    steps = java.steps
    assert steps["daily_replace_partitions"] == {"operation": "overwrite", "total_records": "3"}
    assert steps["daily_rewrite_files"] == {"operation": "replace", "snapshots": 4}
    assert steps["daily_branches"] == {
        "refs": ["keep", "main"],
        "main_moved": True,
        "min_snapshots": 3,
        "keep_age": 86_400_000,
    }
    assert steps["filtered_scan"] == {"value": 2}
    assert steps["statistics"] == {"before": 2, "after": 1, "ndv": "4"}
    # partition a: P2 replaced P, then the dev branch's P append was fast-forwarded into main;
    # partition b: Q compacted into Q2 (same rows)
    assert [row["id"] for row in _rows(java.catalog, "jns.daily")] == [10, 11, 12, 30, 31]
    daily = java.catalog.load_table("jns.daily")
    assert daily.refs()["main"].min_snapshots_to_keep == 3
    assert len(daily.metadata.statistics) == 1 and daily.metadata.partition_statistics == ()
    assert steps["expire_incremental"] == {
        "snapshots": 2,
        "total_records": str(3 * THREADS * COMMITS_PER_THREAD),
    }
    assert len(java.catalog.load_table("jns.hot").snapshots()) == 2
    assert java.catalog.load_table("jns.hot").scan().count() == 3 * THREADS * COMMITS_PER_THREAD


def test_locations_and_format_upgrade(java: JavaRun) -> None:
    """updateLocation inside the warehouse, refused outside it, an explicit location, v1 -> v2."""
    warehouse = Path(java.files["A"]["path"]).parent.parent / "warehouse"
    assert java.steps["update_location"] == {"value": True}
    assert java.catalog.load_table("jns.daily").location() == f"{warehouse}/moved/daily"
    assert java.steps["location_outside_warehouse"] == {"error": "BadRequestException"}
    # the server stores a plain path given at create time as a file: URI
    assert java.steps["explicit_location"] == {"value": (warehouse / "placed-here").as_uri()}
    assert java.steps["upgrade_format_version"] == {"value": 2}
    assert java.catalog.load_table("jns.upgraded").metadata.format_version == 2


def test_client_options(java: JavaRun) -> None:
    """A prefix from /v1/config, a static token, oauth2-server-uri, warehouse, snapshots=refs."""
    steps = java.steps
    assert steps["prefixed_server"] == {"namespaces": ["ice", "jns"], "via": "prefix"}
    assert java.catalog.load_table("jns.events").properties["via"] == "prefix"
    assert steps["bearer_token"] == {"value": ["ice.written"]}
    assert steps["oauth2_server_uri"] == {"value": True}
    assert steps["warehouse_config"] == {"value": True}
    # refs mode loads the current snapshot; snapshots() then lazily loads them all
    assert steps["snapshot_loading_refs"] == {"current": True, "snapshots": 7, "all": 7}


def test_names_and_metadata_tables(java: JavaRun) -> None:
    """Names that need URL encoding round-trip; a '.' inside a level is refused; metadata tables load."""
    assert java.steps["encoded_names"] == {
        "namespaces": ["odd ns.a+b%c"],
        "properties": {"p q": "r/s"},
        "tables": ["odd ns.a+b%c.t 2 ü"],
        "loaded": "icefloe.odd ns.a+b%c.t 2 ü",
    }
    assert not java.catalog.namespace_exists(("odd ns",))
    assert java.steps["dotted_namespace_level"] == {"error": "BadRequestException"}
    assert java.steps["metadata_table"] == {"snapshots": "icefloe.jns.events.snapshots", "files_schema": True}


def test_view_updates(java: JavaRun) -> None:
    """A view's properties, a replaced version and a new location committed through the view API."""
    assert java.steps["view_updates"] == {
        "owner": "java",
        "sql": "SELECT 2 AS id",
        "version": 2,
        "location": True,
    }


def test_equality_deletes_and_metadata_retention(java: JavaRun) -> None:
    """An equality delete file Java committed is applied by icefloe; old metadata files are pruned."""
    assert java.steps["equality_deletes"] == {"delete_files_per_task": 2, "metadata_log": 1}
    # the deletes remove ids 11 (from P) and 30 (from Q)
    assert _rows(java.catalog, "jns.eqdel") == [{"id": 10, "cat": "a"}, {"id": 31, "cat": "b"}]
    # write.metadata.previous-versions-max=1 with delete-after-commit: the current file and one more
    table = java.catalog.load_table("jns.eqdel")
    metadata_dir = Path(table.location().removeprefix("file://")) / "metadata"
    assert len(list(metadata_dir.glob("*.metadata.json"))) == 2


def test_stale_commits_are_refused_for_java_to_revalidate(java: JavaRun) -> None:
    """A stale rewrite or row delta gets a 409, so Java re-validates and refuses the conflict itself."""
    steps = java.steps
    # another writer deleted P: Java's retry finds the file to rewrite missing
    assert steps["stale_rewrite_of_deleted_file"] == {"error": "ValidationException"}
    # another writer appended Q2 after the row delta's base: Java's conflict check finds it
    assert steps["stale_row_delta_conflict"] == {"error": "ValidationException"}
    # Java never re-applies a schema change on a newer base: only the first stale copy commits
    assert steps["stale_schema_updates"] == {
        "outcomes": ["committed", "CommitFailedException", "CommitFailedException"],
        "columns": ["id", "cat", "c0"],
    }
    assert steps["stale_property_updates"] == {"value": ["p0", "p1", "p2"]}
    # P deleted, the rewrite and the row delta never landed, Q and Q2 (the same rows) stay
    assert [row["id"] for row in _rows(java.catalog, "jns.conflicts")] == [30, 30, 31, 31]
