"""The main job (``icefloe.cli.spark_pipeline``) on a Spark standalone cluster, with a worker killed.

A master and two workers (1 core each) run in their own JVMs on 127.0.0.1
(``tests/support/spark_cluster.py``); the job's driver runs in a subprocess with
``--master spark://...``, against the test S3 server (an ``s3://`` warehouse, credentials from the
AWS environment variables) and a PostgreSQL catalog. Every stage of the job checks its own counts
and exits non-zero on a mismatch.

In the middle of the first ingest job (a write stage) one task pauses right after writing its first
data file (``tests/support/executor_pause/sitecustomize.py``, on the executors' ``PYTHONPATH``);
the test waits for that marker and SIGKILLs the worker the task runs under, JVM, executor and all.
Spark reruns the task on the surviving worker, icefloe's job staging drops the dead attempt's
file, and the job commits each write exactly once. Nothing here waits for a fixed time.

Size: ``CI`` set: 4,000 rows; otherwise 40,000; ``ICEFLOE_CLUSTER_ROWS`` sets it (the full size:
``ICEFLOE_CLUSTER_ROWS=4000000 .venv/bin/python -m pytest tests/cli/test_spark_pipeline_cluster.py``).
On an existing cluster the job is the README's command (``scripts/main-job.sh --master ...``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow.compute as pc
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.cli.spark_pipeline import IDENT
from icefloe.io.fileio import S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY
from tests.support.s3server import ACCESS_KEY, SECRET_KEY, S3Server
from tests.support.spark_cluster import (
    CLUSTER_JOB_CONF,
    ClusterProcess,
    SparkCluster,
    main_job_command,
    main_job_env,
    parse_report,
    running_cluster,
    wait_for,
)

CI = bool(os.environ.get("CI"))
ROWS = int(os.environ.get("ICEFLOE_CLUSTER_ROWS", "4000" if CI else "40000"))
BATCHES = 2
# What the same job leaves on local[2] without any failure (rows, sum of trip_id, sum of fare):
# the job's data is deterministic, so the killed-worker run on the cluster must match exactly.
LOCAL_RESULT = {4_000: (4_396, 16_029_499, "143087.80"), 40_000: (43_949, None, None)}
JOB_TIMEOUT_S = 3600.0
"""Only a bound for a hung job: the job normally takes a few minutes."""
HOOK_DIR = Path(__file__).parents[1] / "support" / "executor_pause"

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[SparkCluster]:
    yield from running_cluster(tmp_path / "cluster")


def test_main_job_on_a_cluster_commits_once_despite_a_killed_worker(
    cluster: SparkCluster, s3: S3Server, s3_warehouse: str, postgres_uri: str, tmp_path: Path
) -> None:
    marker = tmp_path / "paused-task"
    catalog_name = f"cluster_{uuid.uuid4().hex[:8]}"
    storage = {k: v for k, v in s3.properties.items() if k not in (S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY)}
    catalog_props = {"uri": postgres_uri, "warehouse": s3_warehouse, "name": catalog_name, **storage}
    pause = {
        "spark.executorEnv.PYTHONPATH": str(HOOK_DIR),
        "spark.executorEnv.ICEFLOE_TEST_PAUSE_MARKER": str(marker),
    }
    command = main_job_command(
        cluster.master_url, ROWS, BATCHES, catalog_props, {**CLUSTER_JOB_CONF, **pause}
    )
    env = main_job_env(ACCESS_KEY, SECRET_KEY)
    out, err = tmp_path / "driver.out", tmp_path / "driver.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        driver = subprocess.Popen(
            command, stdout=stdout, stderr=stderr, env=env, cwd=tmp_path, start_new_session=True
        )
    try:
        # fails at once if the driver exits before any task paused
        wait_for(
            "a write task to pause", marker.exists, [ClusterProcess("driver", driver, err)], JOB_TIMEOUT_S
        )
        paused_pid, staged_file = marker.read_text().split()
        victim = cluster.kill_worker_of(int(paused_pid))
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(paused_pid), signal.SIGKILL)  # the task's Python worker is in its own group
        returncode = driver.wait(timeout=JOB_TIMEOUT_S)
    finally:
        if driver.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(timeout=60)
    stdout_text, stderr_text = out.read_text(), err.read_text()
    assert returncode == 0, stderr_text[-6000:] + "\n" + cluster.logs()
    assert victim.process.poll() is not None
    assert [w for w in cluster.workers if w.process.poll() is None] != []  # the survivor ran the rest
    assert "/spark-" in staged_file and s3_warehouse in staged_file  # paused inside the first ingest job

    report = parse_report(stdout_text)
    assert report["  ingest"] == f"{ROWS:,} rows in {BATCHES} snapshots"  # committed once, no duplicates
    first = next(v for k, v in report.items() if k.startswith("rows in the first snapshot"))
    assert first == f"{ROWS // BATCHES:,}"
    assert report["operations"] == "append x5, overwrite x3, delete x1, replace x1"
    assert report["  merge"].endswith(f", {ROWS // 100:,} inserted")
    rows_now = int(report["rows now"].replace(",", ""))

    catalog = SqlCatalog(catalog_name, uri=postgres_uri, warehouse=s3_warehouse, **s3.properties)
    try:
        table = catalog.load_table(IDENT)
        data = table.scan().to_arrow()
        assert data.num_rows == rows_now
        assert pc.count_distinct(data["trip_id"]).as_py() == rows_now  # no duplicate rows
        if ROWS in LOCAL_RESULT:
            local_rows, trip_id_sum, fare_sum = LOCAL_RESULT[ROWS]
            assert rows_now == local_rows
            if trip_id_sum is not None:
                assert pc.sum(data["trip_id"]).as_py() == trip_id_sum
                assert str(pc.sum(data["fare"]).as_py()) == fare_sum
        late = pc.and_(
            pc.greater_equal(data["trip_id"], ROWS), pc.less(data["trip_id"], ROWS + 3 * (ROWS // 20))
        )
        assert 0 < pc.sum(late).as_py() <= 3 * (ROWS // 20)
        # every file under the table's data directory belongs to a retained snapshot: the killed
        # attempt's file (and any other staging leftover) is gone
        referenced = set()
        for snapshot in table.snapshots():
            referenced.update(table.inspect.files(snapshot_id=snapshot.snapshot_id)["file_path"].to_pylist())
        stored = set(table.io.list_prefix(table.location() + "/data"))
        assert staged_file not in stored
        assert stored == referenced
        metadata = [
            table.io.new_input(p).read() for p in table.io.list_prefix(table.location() + "/metadata")
        ]
    finally:
        catalog.close()

    # the secret key reached the executors but no log and no metadata file
    logs = [stdout_text, stderr_text, cluster.logs()]
    logs += [p.read_text(errors="replace") for p in (tmp_path / "cluster").rglob("std*") if p.is_file()]
    assert all(SECRET_KEY not in text for text in logs)
    assert metadata and all(SECRET_KEY.encode() not in blob for blob in metadata)
