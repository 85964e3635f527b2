"""A Spark read whose executors renew vended credentials themselves, against ``icefloe serve``.

The executors' clock is not moved (they run in other processes): the test ships them properties
whose ``s3.session-token-expires-at-ms`` says the credentials expire in 30 s, inside the renewal
margin, and moves only the server's vendor clock so that the service answers a renewal with new
credentials from STS. One AssumeRole after planning is then the executors' renewal: the driver has
nothing to renew, and the executors that ask after the first get the server's cached answer.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.rest.executor_renewal import CREDENTIALS_URI
from icefloe.catalog.rest.vended import EXPIRES_AT_MS
from icefloe.server import Grants, RunningServer, ServerConfig, start_server
from icefloe.server.vending import StsVendor
from icefloe.spark.read import dataframe_for_plan, plan_read
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from tests.support.sts_server import StsServer

TOKEN = "spark-job-token"
SCHEMA = Schema(NestedField(1, "id", LongType()), NestedField(2, "s", StringType()))


@pytest.fixture
def server(tmp_path: Path, sts: StsServer) -> Iterator[RunningServer]:
    catalog = sts.vending_catalog("executors", f"sqlite:///{tmp_path / 'catalog.db'}")
    catalog.create_namespace("db")
    with start_server(ServerConfig(catalog, tokens={TOKEN: Grants()})) as running:
        yield running
    catalog.close()


def test_executors_renew_credentials_about_to_expire(
    spark: Any, server: RunningServer, sts: StsServer
) -> None:
    client = RestCatalog("driver", uri=server.uri, token=TOKEN)
    table = client.create_table("db.t", SCHEMA)
    for start in (0, 3):  # two files, so both local executor slots get work
        ids = list(range(start, start + 3))
        table.append(pa.table({"id": pa.array(ids, pa.int64()), "s": [str(i) for i in ids]}))
    plan = plan_read(client.load_table("db.t"))
    assert CREDENTIALS_URI in plan.io_properties
    real_expiry_s = int(plan.io_properties[EXPIRES_AT_MS]) / 1000
    about_to_expire = {**plan.io_properties, EXPIRES_AT_MS: str(int((time.time() + 30) * 1000))}
    plan = dataclasses.replace(
        plan, io_properties=about_to_expire, python=[*plan.native, *plan.python], native=[]
    )
    vendor = server.app.state.icefloe.vendor
    assert isinstance(vendor, StsVendor)
    sts.reset()
    vendor.clock = lambda: real_expiry_s - 30  # the service renews what it vended, too
    rows = dataframe_for_plan(spark, plan).orderBy("id").collect()
    assert [(r["id"], r["s"]) for r in rows] == [(i, str(i)) for i in range(6)]
    assert sts.assume_role_count() == 1
    client.close()
