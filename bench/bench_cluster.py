"""The main job on a Spark standalone cluster vs ``local[2]``: same data, same S3 server and catalog.

    python -m bench.bench_cluster                 # 40,000 rows
    python -m bench.bench_cluster --rows 4000     # smoke size

Starts the tests' S3-compatible server (moto on 127.0.0.1), a throwaway PostgreSQL server and a
standalone cluster (a master and two 1-core workers, ``tests/support/spark_cluster.py``), then runs
the main job (``icefloe.cli.spark_pipeline``) twice in a subprocess with the same settings and
sizes into fresh ``s3://`` warehouses: once with ``--master local[2]``, once on the cluster. Prints
each stage's time side by side. On one machine the cluster is expected to be slower (separate
JVMs and Python workers, task results over the network, no shared cache); this says by how much.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from tests.support.postgres import start_postgres
from tests.support.s3server import ACCESS_KEY, SECRET_KEY, S3Server, start_s3_server
from tests.support.spark_cluster import (
    CLUSTER_JOB_CONF,
    main_job_command,
    main_job_env,
    parse_report,
    start_cluster,
)

from bench._common import command_line
from icefloe.io.fileio import S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY


def run_job(
    master: str, rows: int, batches: int, s3: S3Server, catalog_uri: str, work: Path
) -> dict[str, str]:
    """Run the main job on ``master``; its report (plus the wall time of the whole subprocess)."""
    tag = uuid.uuid4().hex[:8]
    storage = {k: v for k, v in s3.properties.items() if k not in (S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY)}
    catalog = {
        "uri": catalog_uri,
        "warehouse": f"s3://{s3.bucket}/bench-{tag}",
        "name": f"bench_{tag}",
        **storage,
    }
    command = main_job_command(master, rows, batches, catalog, CLUSTER_JOB_CONF)
    t0 = time.perf_counter()
    done = subprocess.run(
        command,
        env=main_job_env(ACCESS_KEY, SECRET_KEY),
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"the main job on {master} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    report = parse_report(done.stdout)
    report["wall time (process)"] = f"{wall:.2f} s"
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=40_000)
    parser.add_argument("--batches", type=int, default=2)
    args = parser.parse_args(argv)
    print(f"command:  {command_line('bench.bench_cluster', argv)}")
    work = Path(tempfile.mkdtemp(prefix="icefloe-bench-cluster-"))
    s3 = start_s3_server()
    postgres = start_postgres()
    try:
        cluster = start_cluster(work / "cluster")
        try:
            local = run_job("local[2]", args.rows, args.batches, s3, postgres.uri, work)
            remote = run_job(cluster.master_url, args.rows, args.batches, s3, postgres.uri, work)
        finally:
            cluster.stop()
    finally:
        postgres.stop()
        s3.stop()
    stages = [k for k in remote if k.startswith("time: ") and not k.startswith("time: start Spark")]
    rows = [("start Spark", _start(local), _start(remote))]
    rows += [(k[len("time: ") :], local.get(k, "?"), remote[k]) for k in stages]
    rows += [(k, local[k], remote[k]) for k in ("total time", "wall time (process)")]
    title = f"main job, {args.rows:,} rows, {args.batches} ingest jobs"
    print(f"{title}: local[2] vs a standalone cluster (2 workers x 1 core)")
    width = max(len(name) for name, _, _ in rows)
    for name, a, b in rows:
        print(f"  {name.ljust(width)}  {a:>10}  {b:>10}  {_ratio(a, b)}")
    print(f"  rows now: local[2] {local['rows now']}, cluster {remote['rows now']}")
    return 0


def _start(report: dict[str, str]) -> str:
    return next(v for k, v in report.items() if k.startswith("time: start Spark"))


def _ratio(local: str, cluster: str) -> str:
    try:
        a, b = float(local.split()[0]), float(cluster.split()[0])
    except ValueError:
        return ""
    return f"cluster/local {b / a:.2f}x" if a > 0 else ""


if __name__ == "__main__":
    sys.exit(main())
