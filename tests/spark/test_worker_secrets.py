"""What Spark ships to its Python workers carries no catalog login (``icefloe.spark.worker_catalog``).

Two sessions' catalogs: a REST catalog with a client ``credential``, a fixed ``token``, an
``oauth2-server-uri`` and a ``header.*``, and a PostgreSQL catalog whose URI has a password (the
test server trusts every local login, so the password is carried but never checked). For each
route the bytes Spark would ship are made the way PySpark makes them: the registered class with
``CloudPickleSerializer`` (``_wrap_function``), a reader's read function and partitions with the
planning worker's own ``write_read_func_and_partitions``, a writer as its write function's closure
pickles it, and every ``mapInArrow`` function of the driver-side paths by recording
``CloudPickleSerializer.dumps`` while the path runs. Each login string must be absent from them.
The one documented exception, a SQL catalog's URI in the ``task_catalog`` of a batch read of the
table's current state, is checked as exactly that; a batch read of one snapshot id carries no
catalog, neither a SQL password nor a REST token. Every route also still returns or commits the exact rows.
"""

from __future__ import annotations

import io
import os
import stat
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import ValidationError
from icefloe.server import RunningServer, ServerConfig, start_server
from icefloe.server.auth import Grants, OAuthClient
from icefloe.spark.datasource import IcefloeDataSource, PinnedSnapshotReader, datasource_class
from icefloe.spark.runtime import catalog_from_properties
from icefloe.spark.worker_catalog import CatalogRef
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType

CLIENT_ID = "spark-client"
CLIENT_SECRET = "client-s3cret-7f3a"
TOKEN = "fixed-t0ken-91bd"
HEADER_KEY = "header.X-Api-Key-5e2c"
HEADER_VALUE = "header-s3cret-c40e"
PASSWORD = "pg-passw0rd-58d1"
SCHEMA = Schema(NestedField(1, "id", LongType()), NestedField(2, "s", StringType()))


@dataclass(frozen=True)
class Login:
    """A session's catalog properties, the strings of its login, and a table with rows 0, 1, 2."""

    properties: dict[str, str]
    secrets: tuple[str, ...]
    identifier: str


def _rows(ids: range) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "s": [f"v{i}" for i in ids]})


def _table_rows(login: Login) -> list[tuple[int, str]]:
    table = catalog_from_properties(login.properties).load_table(login.identifier).scan().to_arrow()
    return sorted(zip(table.column("id").to_pylist(), table.column("s").to_pylist(), strict=True))


@pytest.fixture
def rest_server(tmp_path: Path) -> Iterator[RunningServer]:
    backing = SqlCatalog("backing", f"sqlite:///{tmp_path / 'catalog.db'}", str(tmp_path / "wh"))
    backing.create_namespace("db")
    clients = {CLIENT_ID: OAuthClient(CLIENT_SECRET, Grants())}
    with start_server(ServerConfig(backing, tokens={TOKEN: Grants()}, clients=clients)) as running:
        yield running
    backing.close()


@pytest.fixture
def rest_login(rest_server: RunningServer) -> Login:
    uri = rest_server.uri.rstrip("/")
    props = {
        "type": "rest",
        "uri": uri,
        "credential": f"{CLIENT_ID}:{CLIENT_SECRET}",
        "token": TOKEN,
        "oauth2-server-uri": f"{uri}/v1/oauth/tokens",
        HEADER_KEY: HEADER_VALUE,
    }
    catalog_from_properties(props).create_table("db.t", SCHEMA).append(_rows(range(3)))
    # the token URI is the catalog's own address, so its key stands for it
    return Login(props, (CLIENT_SECRET, TOKEN, HEADER_KEY, HEADER_VALUE, "oauth2-server-uri"), "db.t")


@pytest.fixture
def sql_login(postgres_uri: str, tmp_path: Path) -> Login:
    uri = postgres_uri.replace("postgres@", f"postgres:{PASSWORD}@", 1)
    assert PASSWORD in uri, "the test server's URI names its user: postgres@"
    props = {"uri": uri, "warehouse": str(tmp_path / "wh"), "name": f"secrets_{uuid.uuid4().hex[:8]}"}
    catalog = catalog_from_properties(props)
    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA).append(_rows(range(3)))
    return Login(props, (PASSWORD,), "db.t")


@pytest.fixture(params=["rest", pytest.param("sql", marks=pytest.mark.postgres)])
def login(request: pytest.FixtureRequest) -> Login:
    return request.getfixturevalue(f"{request.param}_login")  # type: ignore[no-any-return]


def _cloudpickle(obj: Any) -> bytes:
    from pyspark.serializers import CloudPickleSerializer

    return CloudPickleSerializer().dumps(obj)


def _leaked(shipped: bytes, login: Login) -> list[str]:
    return [s for s in login.secrets if s.encode() in shipped]


def _source(login: Login) -> IcefloeDataSource:
    cls = datasource_class(login.properties, pushdown=True)
    return cls(options={"table": login.identifier})


def _read_function_bytes(source: IcefloeDataSource, reader: Any, schema: Any) -> bytes:
    """What the planning worker sends the JVM for a read: the read function (reader and data
    source in its closure) and, for a batch read, the pickled input partitions."""
    from pyspark.sql.worker.plan_data_source_read import write_read_func_and_partitions

    out = io.BytesIO()
    options = {"max_arrow_batch_size": 10_000, "binary_as_bytes": True}
    write_read_func_and_partitions(out, reader=reader, data_source=source, schema=schema, **options)
    return out.getvalue()


def test_the_registered_class_holds_no_login(login: Login) -> None:
    cls = datasource_class(login.properties, pushdown=True)
    assert _leaked(_cloudpickle(cls), login) == []
    kept = cls.catalog.kept_at
    assert kept and stat.S_IMODE(os.stat(kept).st_mode) == 0o600
    assert cls.catalog.session_properties() == login.properties


def test_a_catalog_without_a_login_is_carried_inline() -> None:
    cls = datasource_class({"uri": "sqlite:///c.db", "warehouse": "/wh"}, pushdown=False)
    assert cls.catalog.kept_at == ""
    assert cls.catalog.properties() == {"uri": "sqlite:///c.db", "warehouse": "/wh"}


def test_a_kept_login_read_away_from_the_driver_names_its_file(tmp_path: Path) -> None:
    missing = str(tmp_path / "kept.json")
    with pytest.raises(ValidationError, match="kept on the Spark driver's host") as caught:
        CatalogRef(kept_at=missing).properties()
    assert missing in str(caught.value)


def test_batch_read_tasks_get_an_access_token_at_most(rest_login: Login) -> None:
    source = _source(rest_login)
    schema = source.schema()
    reader = source.reader(schema)
    assert _leaked(_read_function_bytes(source, reader, schema), rest_login) == []
    access = reader.task_catalog.pop("token")
    assert access not in (TOKEN, CLIENT_SECRET)
    assert reader.task_catalog == {"type": "rest", "uri": rest_login.properties["uri"]}
    reader.task_catalog["token"] = access
    ids = [i for p in reader.partitions() for b in reader.read(p) for i in b.column(0).to_pylist()]
    assert sorted(ids) == [0, 1, 2]


@pytest.mark.postgres
def test_batch_read_tasks_of_a_sql_catalog_carry_its_uri_and_nothing_else(sql_login: Login) -> None:
    """The documented exception: only the database login reads a SQL catalog's table pointer."""
    source = _source(sql_login)
    schema = source.schema()
    reader = source.reader(schema)
    assert reader.task_catalog == sql_login.properties
    ids = [i for p in reader.partitions() for b in reader.read(p) for i in b.column(0).to_pylist()]
    assert sorted(ids) == [0, 1, 2]
    reader.task_catalog = {}
    assert _leaked(_read_function_bytes(source, reader, schema), sql_login) == []


@pytest.mark.parametrize("option", ["snapshot-id", "as-of-timestamp"])
def test_batch_reads_of_a_fixed_snapshot_ship_no_catalog(
    login: Login, monkeypatch: pytest.MonkeyPatch, option: str
) -> None:
    """Planned in the planning worker: the read function and partitions hold no login and no
    access token (a REST table's FileIO properties name the server's address, as on every route),
    and the tasks read the snapshot's rows, later rows left out, without opening a catalog. A
    timestamp followed by a commit names a fixed snapshot as an id does."""
    catalog = catalog_from_properties(login.properties)
    metadata = catalog.load_table(login.identifier).metadata
    pinned = metadata.current_snapshot_id
    assert pinned is not None
    catalog.load_table(login.identifier).append(_rows(range(3, 5)))
    value = str(pinned if option == "snapshot-id" else metadata.snapshot_by_id(pinned).timestamp_ms)
    source = datasource_class(login.properties, pushdown=True)(
        options={"table": login.identifier, option: value}
    )
    schema = source.schema()
    reader = source.reader(schema)
    assert isinstance(reader, PinnedSnapshotReader)
    shipped = _read_function_bytes(source, reader, schema)
    assert _leaked(shipped, login) == []
    access = catalog.shipping_token() if isinstance(catalog, RestCatalog) else None
    assert access is None or access.encode() not in shipped
    assert not hasattr(reader, "task_catalog")
    partitions = reader.partitions()
    catalog.load_table(login.identifier).append(_rows(range(5, 7)))

    def no_catalog(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a read task opened the catalog")

    monkeypatch.setattr("icefloe.spark.runtime.catalog_from_properties", no_catalog)
    ids = [i for p in partitions for b in reader.read(p) for i in b.column(0).to_pylist()]
    assert sorted(ids) == [0, 1, 2]


def test_write_tasks_get_no_login_and_the_commit_finds_it(login: Login) -> None:
    source = _source(login)
    writer = source.writer(source.schema(), overwrite=False)
    assert _leaked(_cloudpickle(writer), login) == []
    message = writer.write(iter(_rows(range(3, 5)).to_batches()))
    writer.commit([message])
    assert _table_rows(login) == [(i, f"v{i}") for i in range(5)]


def test_streaming_tasks_get_no_login(login: Login) -> None:
    source = _source(login)
    schema = source.schema()
    stream_reader = source.streamReader(schema)
    assert _leaked(_read_function_bytes(source, stream_reader, schema), login) == []
    assert _leaked(_cloudpickle(source.streamWriter(schema, overwrite=False)), login) == []


@pytest.fixture
def shipped(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every command the driver pickles for Python workers while the test runs."""
    from pyspark.serializers import CloudPickleSerializer

    recorded: list[bytes] = []
    original = CloudPickleSerializer.dumps

    def record(self: CloudPickleSerializer, obj: Any) -> bytes:
        data = original(self, obj)
        recorded.append(data)
        return data

    monkeypatch.setattr(CloudPickleSerializer, "dumps", record)
    return recorded


def test_driver_planned_routes_ship_no_login(spark: Any, login: Login, shipped: list[bytes]) -> None:
    """``write_table``, ``delete_rows``, ``update_rows``, ``merge_into``, ``read_table`` (through
    the Python route, deletes applied), ``rewrite_data_files`` and ``read_changes`` with a
    catalog holding the login: their executor functions carry FileIO properties, not the login."""
    from icefloe.spark import (
        delete_rows,
        merge_into,
        read_changes,
        read_table,
        rewrite_data_files,
        update_rows,
        write_table,
    )

    catalog = catalog_from_properties(login.properties)
    ident = login.identifier
    write_table(spark.createDataFrame([(3, "v3"), (4, "v4")], "id long, s string"), ident, catalog=catalog)
    delete_rows(spark, ident, "id = 1", mode="merge-on-read", catalog=catalog)
    update_rows(spark, ident, {"s": "'u'"}, "id = 4", mode="merge-on-read", catalog=catalog)
    source = spark.createDataFrame([(2, "m"), (7, "v7")], "id long, s string")
    merge_into(source, ident, on="id", catalog=catalog)
    want = [(0, "v0"), (2, "m"), (3, "v3"), (4, "u"), (7, "v7")]
    assert sorted((r["id"], r["s"]) for r in read_table(spark, ident, catalog=catalog).collect()) == want
    rewrite_data_files(spark, ident, rewrite_all=True, catalog=catalog)
    assert sorted((r["id"], r["s"]) for r in read_table(spark, ident, catalog=catalog).collect()) == want
    first = catalog.load_table(ident).snapshots()[0].snapshot_id
    changes = read_changes(spark, ident, start_snapshot_id=first, catalog=catalog).collect()
    assert len(changes) > 0
    assert len(shipped) >= 5, "the routes shipped functions to Python workers"
    access = catalog.shipping_token() if isinstance(catalog, RestCatalog) else None
    assert [b for b in shipped if _leaked(b, login) or (access and access.encode() in b)] == []


def test_the_data_source_through_spark_with_a_login(spark: Any, rest_login: Login) -> None:
    """End to end: the planning worker finds the kept login, read tasks load the table with the
    access token, write tasks write, the commit commits (a source under a name of its own, so
    the session's ``icefloe`` stays as it is)."""
    cls = datasource_class(rest_login.properties, pushdown=True)
    name = f"icefloe_login_{uuid.uuid4().hex[:8]}"
    named = type("LoginTestSource", (cls,), {"name": classmethod(lambda _: name), "__module__": __name__})
    spark.dataSource.register(named)
    ident = rest_login.identifier
    spark.createDataFrame([(5, "v5")], "id long, s string").write.format(name).mode("append").save(ident)
    rows = spark.read.format(name).load(ident).collect()
    assert sorted((r["id"], r["s"]) for r in rows) == [(i, f"v{i}") for i in (0, 1, 2, 5)]
