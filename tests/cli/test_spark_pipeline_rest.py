"""The main job (``icefloe.cli.spark_pipeline``) through a REST catalog over object storage.

Where many users live: a Spark job whose only catalog settings are the URI of an Iceberg REST
service and a token (here ``icefloe serve`` over a PostgreSQL catalog whose warehouse is on an S3
store with STS and authentication enforced), run as its own driver process (``--master local[2]``,
``--catalog-property type=rest``), exactly as the README runs it against a cluster. The job holds
no storage keys: the driver and its executors read and write with the credentials the service
vends per table (the executors carry the token to renew them themselves). Every stage of the job
checks its own counts and exits non-zero on a mismatch; this test then reads what the job left
through the service with PyIceberg's ``RestCatalog``, also on vended credentials only.

Size: 4,000 rows in 2 ingest jobs (a REST-only regression shows at any size; the row-level stages
are the SQL catalog's tests' business at scale).
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.cli.spark_pipeline import IDENT
from icefloe.server import Grants, RunningServer, ServerConfig, start_server
from icefloe.server.vending import ROLE_ARN
from tests.support.spark_cluster import main_job_command, main_job_env, parse_report
from tests.support.sts_server import StsServer

ROWS = 4_000
BATCHES = 2
JOB_TIMEOUT_S = 900  # a hang fails the test; the job takes about a minute
TOKEN = "main-job-token"


@pytest.fixture
def warehouse_on_s3(sts: StsServer) -> str:
    return f"s3://{sts.bucket}/main-job-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def served(sts: StsServer, warehouse_on_s3: str, postgres_uri: str) -> Iterator[RunningServer]:
    """``icefloe serve`` (in this process) over a PostgreSQL catalog with an S3 warehouse, vending
    credentials through STS."""
    sts.reset()
    properties = {**sts.server_properties, ROLE_ARN: sts.role_arn}
    backing = SqlCatalog(
        f"rest_{uuid.uuid4().hex[:8]}", uri=postgres_uri, warehouse=warehouse_on_s3, **properties
    )
    with start_server(ServerConfig(backing, tokens={TOKEN: Grants()})) as running:
        yield running
    backing.close()


def test_main_job_through_a_rest_catalog_on_object_storage(
    served: RunningServer, sts: StsServer, warehouse_on_s3: str, tmp_path: Path
) -> None:
    catalog = {"uri": served.uri, "warehouse": warehouse_on_s3, "type": "rest", "token": TOKEN}
    conf = {"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "2"}
    command = main_job_command("local[2]", ROWS, BATCHES, catalog, conf)
    env = {k: v for k, v in main_job_env("", "").items() if not k.startswith("AWS_")}  # no keys at all
    job = subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=JOB_TIMEOUT_S, check=False
    )
    assert job.returncode == 0, job.stdout[-3000:] + "\n" + job.stderr[-6000:]

    report = parse_report(job.stdout)
    assert report["  ingest"] == f"{ROWS:,} rows in {BATCHES} snapshots"
    assert report["operations"] == "append x5, overwrite x3, delete x1, replace x1"
    assert report["  merge"].endswith(f", {ROWS // 100:,} inserted")
    assert report["  bronze"].startswith("128 events in 3 snapshots")
    rows_now = int(report["rows now"].replace(",", ""))

    from pyiceberg.catalog.rest import RestCatalog as PyIcebergRest

    theirs = PyIcebergRest("py", uri=served.uri, token=TOKEN).load_table(IDENT)
    data = theirs.scan().to_arrow()
    assert data.num_rows == rows_now
    assert len(set(data.column("trip_id").to_pylist())) == rows_now  # each trip once
    assert len(theirs.snapshots()) == 3  # the job's expiry kept the last three
    assert str(theirs.location()).startswith(warehouse_on_s3 + "/")
    assert sts.assume_role_count() >= 1  # the keys came from STS
    # the token went to the executors (they renew credentials with it) but into no log or metadata file
    assert TOKEN not in job.stdout and TOKEN not in job.stderr
    locations = [theirs.metadata_location, *(entry.metadata_file for entry in theirs.metadata.metadata_log)]
    assert len(locations) > 1
    assert all(TOKEN.encode() not in theirs.io.new_input(loc).open().read() for loc in locations)
