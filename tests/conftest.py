"""Fixtures every test directory shares: the catalog family over SQLite and PostgreSQL.

``catalog`` is a fresh ``SqlCatalog`` with its own warehouse. It runs on SQLite; a test, class or
module marked ``all_catalogs`` runs once on SQLite and once on the session's throwaway PostgreSQL
server (one server per test run; tests share its database, so every catalog gets a unique name).
``catalog_namespaces("db", ...)`` makes ``catalog`` create those namespaces first:

    pytestmark = [pytest.mark.all_catalogs, pytest.mark.catalog_namespaces("db")]

    def test_x(catalog: Catalog) -> None:
        table = catalog.create_table("db.t", ...)

``spark`` is the one SparkSession of the test run (``local[2,4]``: 2 cores, tasks retried up to 4
times), over a catalog database and warehouse of its own (``spark_home``).

``s3_server`` is the session's S3-compatible server (moto on 127.0.0.1, see ``tests/support/s3server.py``);
``s3`` is the same server with its request counts and faults cleared for the test, and
``s3_warehouse`` a fresh ``s3://bucket/wh/<unique>`` location on it.
``sts`` is a second store, with STS and IAM and authentication enforced, for credential vending.

``catalog_uri`` / ``catalog_backend`` give the same database to tests that open catalogs of their
own (in other processes, say); ``postgres_uri`` and ``sqlite_uri`` name one backend explicitly.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from icefloe.catalog.sql import SqlCatalog
from tests.support.postgres import PostgresServer, PostgresUnavailable, postgres_required, start_postgres
from tests.support.s3server import S3Server, running_s3_server
from tests.support.sts_server import StsServer, start_sts_server

SQLITE = "sqlite"
POSTGRES = "postgres"
ALL_CATALOG_BACKENDS = (pytest.param(SQLITE), pytest.param(POSTGRES, marks=pytest.mark.postgres))


def pytest_configure(config: pytest.Config) -> None:
    """Register the catalog family's markers."""
    config.addinivalue_line(
        "markers", "all_catalogs: run the catalog fixtures on every backend (SQLite and PostgreSQL)"
    )
    config.addinivalue_line(
        "markers", "catalog_namespaces(*names): namespaces the catalog fixture creates first"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run tests marked ``all_catalogs`` that use the catalog family on every backend."""
    if "catalog_backend" in metafunc.fixturenames and metafunc.definition.get_closest_marker("all_catalogs"):
        metafunc.parametrize("catalog_backend", ALL_CATALOG_BACKENDS, indirect=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the whole session (skips, or fails in CI, when unavailable)."""
    try:
        server = start_postgres()
    except PostgresUnavailable as exc:
        if postgres_required():
            pytest.fail(f"PostgreSQL is required but unavailable: {exc}")
        pytest.skip(f"PostgreSQL unavailable: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_uri(postgres_server: PostgresServer) -> str:
    """SQLAlchemy URI (postgresql+psycopg://) of the session's test database."""
    return postgres_server.uri


@pytest.fixture
def sqlite_uri(tmp_path: Path) -> str:
    """A fresh SQLite catalog file."""
    return f"sqlite:///{tmp_path / 'catalog.db'}"


@pytest.fixture
def catalog_backend(request: pytest.FixtureRequest) -> str:
    """``sqlite``, or the backend this test was parametrised with (see ``all_catalogs``)."""
    return str(getattr(request, "param", SQLITE))


@pytest.fixture
def catalog_uri(catalog_backend: str, request: pytest.FixtureRequest) -> str:
    """The catalog database URI of the test's backend."""
    if catalog_backend == POSTGRES:
        return str(request.getfixturevalue("postgres_uri"))
    return str(request.getfixturevalue("sqlite_uri"))


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """An empty warehouse directory."""
    path = tmp_path / "warehouse"
    path.mkdir()
    return path


@pytest.fixture
def catalog_name() -> str:
    """A catalog name unique to the test, so tests can share one PostgreSQL database."""
    return f"cat_{uuid.uuid4().hex[:12]}"


@pytest.fixture
def catalog(
    catalog_uri: str, warehouse: Path, catalog_name: str, request: pytest.FixtureRequest
) -> Iterator[SqlCatalog]:
    """A fresh SqlCatalog on the test's backend, with the namespaces ``catalog_namespaces`` names."""
    cat = SqlCatalog(catalog_name, uri=catalog_uri, warehouse=str(warehouse))
    try:
        marker = request.node.get_closest_marker("catalog_namespaces")
        for namespace in marker.args if marker else ():
            cat.create_namespace(namespace)
        yield cat
    finally:
        cat.close()


# ---------------------------------------------------------------- the shared SparkSession


@pytest.fixture(scope="session")
def spark_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Directory holding the session's catalog database and warehouse."""
    return tmp_path_factory.mktemp("spark-icefloe")


@pytest.fixture(scope="session")
def spark(spark_home: Path) -> Iterator[object]:
    """The shared SparkSession, configured by ``icefloe.spark.runtime``."""
    from icefloe.spark.session_setup import session  # the package attribute may be the submodule

    uri = f"sqlite:///{spark_home}/catalog.db"
    warehouse = str(spark_home / "warehouse")
    s = session(
        app_name="icefloe-tests",
        master="local[2,4]",
        catalog_uri=uri,
        warehouse=warehouse,
        **{
            "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
            "spark.sql.shuffle.partitions": "4",
            # Python workers (and streaming source runners) connecting back to a JVM on a machine
            # loaded far beyond its cores exceeded the default 15 s and failed the query
            "spark.python.authenticate.socketTimeout": "120s",
            # the Iceberg Java corpus tables that tests register live outside the warehouse
            "spark.icefloe.catalog.allow-external-locations": "true",
            "spark.default.parallelism": "2",
            "spark.python.worker.reuse": "true",
            "spark.sql.adaptive.enabled": "true",
            "spark.driver.memory": "2g",
        },
    )
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """The S3-compatible server of the test run (moto's S3 over HTTP on a free loopback port)."""
    yield from running_s3_server()


@pytest.fixture
def s3(s3_server: S3Server) -> Iterator[S3Server]:
    """The session's S3 server with request counts and faults cleared before and after the test."""
    s3_server.clear_faults()
    s3_server.reset_counts()
    yield s3_server
    s3_server.clear_faults()


@pytest.fixture(scope="session")
def sts() -> Iterator[StsServer]:
    """moto's S3, STS and IAM with authentication enforced, in a child process: the store behind
    credential vending (``tests/support/sts_server.py``), started by the first test that asks.
    Tests that count AssumeRole requests ``reset()`` it first."""
    server = start_sts_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_warehouse(s3: S3Server) -> str:
    """A warehouse location of this test's own on the S3 server."""
    return f"s3://{s3.bucket}/wh/{uuid.uuid4().hex[:12]}"
