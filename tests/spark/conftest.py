"""Spark test fixtures: the catalog the shared SparkSession (``tests/conftest.py``) is configured with."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from icefloe.catalog import load_catalog
from icefloe.catalog.base import Catalog

CI = bool(os.environ.get("CI"))


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
