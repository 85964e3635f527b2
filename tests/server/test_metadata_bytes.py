"""The bytes the server writes after many commits are the metadata encoded from scratch.

The server keeps each table's encoded JSON arrays (snapshots, logs, schemas) between commits and
extends them (``spec.json_fragments``), keeps gzip compressors between commits
(``formats.metadata.incremental_gzip``), and answers a commit with the bytes it has just written.
A kept piece that went stale (an array missing its newest item, another table's text, a log not
trimmed) would still be valid JSON: so every file written here is compared with a from-scratch
encoding of what it says, and what it says with what the test itself knows was committed.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.rest import RestCatalog
from icefloe.io.fileio import local_path
from icefloe.server import RunningServer
from icefloe.spec.json_codec import table_metadata_from_json, table_metadata_to_dict
from icefloe.spec.schema import Schema
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.table.table import Table

KEPT_VERSIONS = 4  # a short metadata-log, so it is trimmed at its start again and again


def from_scratch(md: TableMetadata) -> bytes:
    """The encoding without any kept state (``table_metadata_to_json``'s contract)."""
    return json.dumps(table_metadata_to_dict(md), separators=(",", ":"), ensure_ascii=False).encode()


def file_text(location: str) -> bytes:
    path = local_path(location)
    assert path is not None
    data = Path(path).read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def check_written(table: Table, snapshot_ids: list[int], earlier_files: list[str]) -> None:
    """The table's current file is its metadata encoded from scratch, holds exactly the snapshots
    committed so far, the last ``KEPT_VERSIONS`` earlier files in its log, and is what the
    client was answered."""
    text = file_text(table.metadata_location)
    md = table_metadata_from_json(text)
    assert text == from_scratch(md)
    assert [s.snapshot_id for s in md.snapshots] == snapshot_ids
    assert [e.snapshot_id for e in md.snapshot_log] == snapshot_ids
    assert [e.metadata_file for e in md.metadata_log] == earlier_files[-KEPT_VERSIONS:]
    assert from_scratch(table.metadata) == text


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_files_after_many_commits_equal_a_fresh_encode(rest_server: RunningServer, codec: str) -> None:
    client = RestCatalog("bytes", uri=rest_server.uri)
    client.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType()))
    properties = {
        "write.metadata.compression-codec": codec,
        "write.metadata.previous-versions-max": str(KEPT_VERSIONS),
    }
    # two tables committed in turns: each one's kept text must stay its own
    tables = {name: client.create_table(f"db.{name}", schema, properties=properties) for name in "ab"}
    committed: dict[str, list[int]] = {name: [] for name in tables}
    files: dict[str, list[str]] = {name: [] for name in tables}
    for i in range(12):
        for name, table in tables.items():
            files[name].append(table.metadata_location)
            table.append(pa.table({"id": pa.array([i], pa.int64()), "s": [f"ü{i}"]}))
            snapshot = table.current_snapshot()
            assert snapshot is not None
            committed[name].append(snapshot.snapshot_id)
            check_written(table, committed[name], files[name])
    # a change that is not an append: the kept arrays are not extended but rebuilt
    table = tables["a"]
    files["a"].append(table.metadata_location)
    table.maintenance.expire_snapshots(snapshot_ids=committed["a"][:3], delete_files=False)
    del committed["a"][:3]
    check_written(table, committed["a"], files["a"])
    files["a"].append(table.metadata_location)
    table.append(pa.table({"id": pa.array([99], pa.int64()), "s": ["after expiry"]}))
    snapshot = table.current_snapshot()
    assert snapshot is not None
    committed["a"].append(snapshot.snapshot_id)
    check_written(table, committed["a"], files["a"])
    client.close()
