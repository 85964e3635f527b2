"""PyIceberg's RestCatalog, an independent client, against ``icefloe serve`` (SQLite and PostgreSQL)."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.types import LongType

from icefloe.catalog.sql import SqlCatalog
from icefloe.server import RunningServer

ARROW_SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])


def _client(server: RunningServer) -> RestCatalog:
    return RestCatalog("rest", uri=server.uri)


def test_create_append_evolve_read(rest_server: RunningServer, backing_catalog: SqlCatalog) -> None:
    """PyIceberg creates, appends twice, adds a column and appends again; icefloe reads it all."""
    client = _client(rest_server)
    client.create_namespace("db", {"owner": "me"})
    table = client.create_table("db.t", schema=ARROW_SCHEMA, properties={"format-version": "2"})
    table.append(pa.table({"id": [1, 2], "s": ["a", "b"]}, schema=ARROW_SCHEMA))
    table.append(pa.table({"id": [3], "s": ["c"]}, schema=ARROW_SCHEMA))
    with table.update_schema() as update:
        update.add_column("x", LongType())
    table = client.load_table("db.t")
    table.append(pa.table({"id": [4], "s": ["d"], "x": [40]}, schema=table.schema().as_arrow()))

    rows = sorted(client.load_table("db.t").scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert rows == [
        {"id": 1, "s": "a", "x": None},
        {"id": 2, "s": "b", "x": None},
        {"id": 3, "s": "c", "x": None},
        {"id": 4, "s": "d", "x": 40},
    ]
    direct = backing_catalog.load_table("db.t")
    assert len(direct.snapshots()) == 3
    assert [f.name for f in direct.schema().fields] == ["id", "s", "x"]
    assert sorted(direct.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3, 4]
    assert backing_catalog.load_namespace_properties("db") == {"owner": "me"}


def test_icefloe_writes_pyiceberg_reads(rest_server: RunningServer, backing_catalog: SqlCatalog) -> None:
    """A table icefloe wrote directly is read through the server by PyIceberg."""
    from icefloe.spec.schema import Schema
    from icefloe.spec.types import LongType as IceLong
    from icefloe.spec.types import NestedField

    backing_catalog.create_namespace("db")
    table = backing_catalog.create_table(
        "db.direct", Schema(NestedField(1, "id", IceLong())), properties={"format-version": "3"}
    )
    table.append(pa.table({"id": [5, 6, 7]}))
    read = _client(rest_server).load_table("db.direct").scan().to_arrow()
    assert sorted(read.column("id").to_pylist()) == [5, 6, 7]


def test_namespace_and_table_management(rest_server: RunningServer) -> None:
    """Namespaces and tables: exists, list under a parent, properties, rename, drop, PyIceberg's errors."""
    client = _client(rest_server)
    client.create_namespace(("a",))
    client.create_namespace(("a", "b"))
    with pytest.raises(NamespaceAlreadyExistsError):
        client.create_namespace("a")
    assert client.list_namespaces() == [("a",)]
    assert client.list_namespaces(("a",)) == [("a", "b")]
    assert client.namespace_exists("a") and not client.namespace_exists("zz")
    summary = client.update_namespace_properties("a", removals={"nope"}, updates={"k": "v"})
    assert summary.updated == ["k"] and summary.missing == ["nope"]
    assert client.load_namespace_properties("a") == {"k": "v"}

    client.create_table(("a", "b", "t1"), schema=ARROW_SCHEMA)
    with pytest.raises(TableAlreadyExistsError):
        client.create_table(("a", "b", "t1"), schema=ARROW_SCHEMA)
    assert client.table_exists(("a", "b", "t1"))
    client.rename_table(("a", "b", "t1"), ("a", "t2"))
    assert client.list_tables("a") == [("a", "t2")]
    assert client.list_tables(("a", "b")) == []
    with pytest.raises(NamespaceNotEmptyError):
        client.drop_namespace("a")
    with pytest.raises(NoSuchTableError):
        client.load_table(("a", "missing"))
    with pytest.raises(NoSuchNamespaceError):
        client.list_tables("missing")
    client.drop_table(("a", "t2"))
    assert not client.table_exists(("a", "t2"))
    client.drop_namespace(("a", "b"))
    client.drop_namespace("a")
    assert client.list_namespaces() == []


def test_register_table(rest_server: RunningServer, backing_catalog: SqlCatalog) -> None:
    """A table dropped from the catalog (files kept) is registered again by its metadata file."""
    client = _client(rest_server)
    client.create_namespace("db")
    table = client.create_table("db.t", schema=ARROW_SCHEMA)
    table.append(pa.table({"id": [1], "s": ["a"]}, schema=ARROW_SCHEMA))
    location = client.load_table("db.t").metadata_location
    client.drop_table("db.t")
    registered = client.register_table(("db", "again"), location)
    assert registered.scan().to_arrow().num_rows == 1
    assert backing_catalog.load_table("db.again").metadata_location == location


def test_staged_create_transaction(rest_server: RunningServer) -> None:
    """PyIceberg's create-table transaction: a staged create committed with assert-create."""
    client = _client(rest_server)
    client.create_namespace("db")
    with client.create_table_transaction("db.staged", schema=ARROW_SCHEMA) as txn:
        txn.append(pa.table({"id": [1, 2], "s": ["a", "b"]}, schema=ARROW_SCHEMA))
    table = client.load_table("db.staged")
    assert table.scan().to_arrow().num_rows == 2
    assert len(table.snapshots()) == 1


def test_concurrent_commits_lose_nothing(rest_server: RunningServer, backing_catalog: SqlCatalog) -> None:
    """Four PyIceberg writers append three times each; conflicts are 409s they retry; no append is lost."""
    client = _client(rest_server)
    client.create_namespace("db")
    client.create_table("db.c", schema=ARROW_SCHEMA)
    writers, appends = 4, 3
    conflicts: list[int] = []
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        own = _client(rest_server)
        try:
            for i in range(appends):
                while True:
                    table = own.load_table("db.c")
                    try:
                        row = {"id": [worker * 100 + i], "s": [f"w{worker}"]}
                        table.append(pa.table(row, schema=ARROW_SCHEMA))
                        break
                    except CommitFailedException:
                        conflicts.append(worker)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    ids = sorted(client.load_table("db.c").scan().to_arrow().column("id").to_pylist())
    assert ids == sorted(w * 100 + i for w in range(writers) for i in range(appends))
    assert len(backing_catalog.load_table("db.c").snapshots()) == writers * appends
