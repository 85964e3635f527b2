"""The main job (``icefloe.cli.spark_pipeline``) through a REST catalog over object storage.

Where many users live: a Spark job whose only catalog setting is the URI of an Iceberg REST
service (here ``icefloe serve`` over a PostgreSQL catalog whose warehouse is on the test S3
server), run as its own driver process (``--master local[2]``, ``--catalog-property type=rest``),
exactly as the README runs it against a cluster. Every stage of the job checks its own counts and
exits non-zero on a mismatch; this test then reads what the job left through the service with
PyIceberg's ``RestCatalog``.

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
from icefloe.io.fileio import S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY
from icefloe.server import Grants, RunningServer, ServerConfig, start_server
from tests.support.s3server import ACCESS_KEY, SECRET_KEY, S3Server
from tests.support.spark_cluster import main_job_command, main_job_env, parse_report

ROWS = 4_000
BATCHES = 2
JOB_TIMEOUT_S = 900  # a hang fails the test; the job takes about a minute
TOKEN = "main-job-token"


@pytest.fixture
def served(s3: S3Server, s3_warehouse: str, postgres_uri: str) -> Iterator[RunningServer]:
    """``icefloe serve`` (in this process) over a PostgreSQL catalog with an S3 warehouse."""
    backing = SqlCatalog(
        f"rest_{uuid.uuid4().hex[:8]}", uri=postgres_uri, warehouse=s3_warehouse, **s3.properties
    )
    with start_server(ServerConfig(backing, tokens={TOKEN: Grants()})) as running:
        yield running
    backing.close()


def test_main_job_through_a_rest_catalog_on_object_storage(
    served: RunningServer, s3: S3Server, s3_warehouse: str, tmp_path: Path
) -> None:
    storage = {k: v for k, v in s3.properties.items() if k not in (S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY)}
    catalog = {"uri": served.uri, "warehouse": s3_warehouse, "type": "rest", "token": TOKEN, **storage}
    conf = {"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "2"}
    command = main_job_command("local[2]", ROWS, BATCHES, catalog, conf)
    job = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env=main_job_env(ACCESS_KEY, SECRET_KEY),
        cwd=tmp_path,
        timeout=JOB_TIMEOUT_S,
        check=False,
    )
    assert job.returncode == 0, job.stdout[-3000:] + "\n" + job.stderr[-6000:]

    report = parse_report(job.stdout)
    assert report["  ingest"] == f"{ROWS:,} rows in {BATCHES} snapshots"
    assert report["operations"] == "append x5, overwrite x3, delete x1, replace x1"
    assert report["  merge"].endswith(f", {ROWS // 100:,} inserted")
    assert report["  bronze"].startswith("128 events in 3 snapshots")
    rows_now = int(report["rows now"].replace(",", ""))

    from pyiceberg.catalog.rest import RestCatalog as PyIcebergRest

    theirs = PyIcebergRest("py", uri=served.uri, token=TOKEN, **s3.properties).load_table(IDENT)
    data = theirs.scan().to_arrow()
    assert data.num_rows == rows_now
    assert len(set(data.column("trip_id").to_pylist())) == rows_now  # each trip once
    assert len(theirs.snapshots()) == 3  # the job's expiry kept the last three
    assert str(theirs.location()).startswith(s3_warehouse + "/")
