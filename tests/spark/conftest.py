"""One SparkSession for the whole test run (local[2,4]: 2 cores, tasks retried up to 4 times)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark")

from icefloe.catalog import load_catalog  # noqa: E402
from icefloe.catalog.base import Catalog  # noqa: E402

CI = bool(os.environ.get("CI"))


@pytest.fixture(scope="session")
def spark_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Directory holding the session's catalog database and warehouse."""
    return tmp_path_factory.mktemp("spark-icefloe")


@pytest.fixture(scope="session")
def spark(spark_home: Path) -> Iterator[object]:
    """The shared SparkSession, configured by ``icefloe.spark.runtime``."""
    from icefloe.spark import session

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
def catalog(spark: object, spark_home: Path) -> Catalog:
    """The icefloe catalog the Spark session is configured with."""
    from icefloe.spark.runtime import resolve_catalog

    cat = resolve_catalog(spark, None)  # type: ignore[arg-type]
    if not cat.namespace_exists(("db",)):
        cat.create_namespace(("db",))
    return cat


_counter = [0]


@pytest.fixture
def table_name(catalog: Catalog, request: pytest.FixtureRequest) -> str:
    """A fresh, unused table identifier in namespace ``db``."""
    _counter[0] += 1
    name = "".join(c if c.isalnum() else "_" for c in request.node.name)[:40]
    return f"db.{name}_{_counter[0]}"


__all__ = ["CI", "load_catalog"]
