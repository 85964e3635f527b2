"""A Spark standalone cluster for the tests: a master and workers in their own JVMs on 127.0.0.1.

``start_cluster()`` runs ``spark-class org.apache.spark.deploy.master.Master`` and
``...worker.Worker`` from the pyspark distribution installed in the environment, each in a new
session (process group) with its log in a directory of the test. Ports are chosen by the JVMs
(``--port 0``, ``--webui-port 0``) and read back from their logs; the master's JSON status page
(``/json/``) tells when every worker has registered. Waiting is polling with a deadline, never a
fixed sleep. ``SparkCluster.stop()`` SIGKILLs every process group it started (workers take their
executors with them); ``kill_worker_of(pid)`` kills the worker (JVM, executors, everything in its
group) that a given executor-side process runs under, as a machine failure would.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyspark

STARTUP_TIMEOUT_S = 180.0
"""Upper bound for a JVM to come up on a loaded machine (the normal case takes a few seconds)."""

_MASTER_URL = re.compile(r"Starting Spark master at (spark://\S+)")
_MASTER_UI = re.compile(r"MasterWebUI.* started at (http://\S+)")
_WORKER_REGISTERED = re.compile(r"Successfully registered with master")


class ClusterError(RuntimeError):
    """A cluster process did not come up (its log is in the message)."""


@dataclass
class ClusterProcess:
    """One JVM of the cluster: its process (leader of its own process group) and its log."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def kill(self) -> None:
        """SIGKILL the whole process group (the JVM and whatever it started) and reap the JVM."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=60)


@dataclass
class SparkCluster:
    """A running standalone cluster."""

    master_url: str
    ui_url: str
    master: ClusterProcess
    workers: list[ClusterProcess] = field(default_factory=list)

    def status(self) -> dict[str, Any]:
        """The master's JSON status (workers, applications)."""
        no_proxy = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, never a proxy
        with no_proxy.open(self.ui_url.rstrip("/") + "/json/", timeout=30) as response:
            return dict(json.load(response))

    def alive_workers(self) -> int:
        return sum(1 for w in self.status().get("workers", []) if w.get("state") == "ALIVE")

    def worker_of(self, pid: int) -> ClusterProcess:
        """The worker whose process tree holds ``pid`` (an executor or one of its Python workers)."""
        leaders = {w.process.pid: w for w in self.workers}
        current = pid
        while current > 1:
            if current in leaders:
                return leaders[current]
            current = _parent_pid(current)
        raise ClusterError(f"process {pid} does not run under any worker of the cluster")

    def kill_worker_of(self, pid: int) -> ClusterProcess:
        """SIGKILL the worker JVM that ``pid`` runs under, with its executors (its process group)."""
        worker = self.worker_of(pid)
        worker.kill()
        return worker

    def stop(self) -> None:
        for proc in [*self.workers, self.master]:
            proc.kill()

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.log_text()[-4000:]}" for p in [self.master, *self.workers])


def _parent_pid(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])


def spark_class() -> Path:
    """``bin/spark-class`` of the installed pyspark distribution."""
    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def cluster_env() -> dict[str, str]:
    """Environment of the cluster JVMs: loopback only, small daemon heaps, UTC."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env.update(
        SPARK_HOME=str(spark_class().parent.parent),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_DAEMON_MEMORY="384m",
        TZ="UTC",
    )
    env.pop("PYTHONPATH", None)
    return env


def _launch(name: str, args: list[str], log: Path, env: dict[str, str]) -> ClusterProcess:
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(spark_class()), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    return ClusterProcess(name, process, log)


def wait_for(what: str, check: Callable[[], Any], procs: list[ClusterProcess], timeout: float) -> Any:
    """Poll ``check`` until it returns something truthy; fail if a process exits or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        for proc in procs:
            if proc.process.poll() is not None:
                raise ClusterError(
                    f"{proc.name} exited ({proc.process.returncode}) waiting for {what}:\n"
                    f"{proc.log_text()[-4000:]}"
                )
        if time.monotonic() > deadline:
            raise ClusterError(
                f"timed out waiting for {what}:\n" + "\n".join(p.log_text()[-4000:] for p in procs)
            )
        time.sleep(0.2)


def _search(pattern: re.Pattern[str], proc: ClusterProcess) -> str | None:
    found = pattern.search(proc.log_text())
    return found.group(1) if found else None


def start_cluster(directory: Path, workers: int = 2, worker_memory: str = "1g") -> SparkCluster:
    """Start a master and ``workers`` workers (1 core each) on 127.0.0.1; stop them if one fails."""
    directory.mkdir(parents=True, exist_ok=True)
    env = cluster_env()
    master = _launch(
        "master",
        ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "0", "--webui-port", "0"],
        directory / "master.log",
        env,
    )
    cluster = SparkCluster(master_url="", ui_url="", master=master)
    try:
        cluster.master_url = wait_for(
            "the master's URL", lambda: _search(_MASTER_URL, master), [master], STARTUP_TIMEOUT_S
        )
        cluster.ui_url = wait_for(
            "the master's web UI", lambda: _search(_MASTER_UI, master), [master], STARTUP_TIMEOUT_S
        )
        for i in range(workers):
            work_dir = directory / f"worker-{i}"
            work_dir.mkdir()
            args = [
                "org.apache.spark.deploy.worker.Worker",
                *("--host", "127.0.0.1", "--port", "0", "--webui-port", "0"),
                *("--cores", "1", "--memory", worker_memory, "--work-dir", str(work_dir)),
                cluster.master_url,
            ]
            cluster.workers.append(_launch(f"worker-{i}", args, directory / f"worker-{i}.log", env))
        for worker in cluster.workers:
            wait_for(
                f"{worker.name} to register",
                lambda w=worker: _WORKER_REGISTERED.search(w.log_text()),  # type: ignore[misc]
                [master, *cluster.workers],
                STARTUP_TIMEOUT_S,
            )
        wait_for(
            "every worker ALIVE at the master",
            lambda: cluster.alive_workers() == workers,
            [master, *cluster.workers],
            STARTUP_TIMEOUT_S,
        )
    except BaseException:
        cluster.stop()
        raise
    return cluster


SRC_DIR = Path(__file__).parents[2] / "src"

CLUSTER_JOB_CONF = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.memory": "1g",
    "spark.executor.memory": "512m",
    "spark.executor.cores": "1",
    "spark.cores.max": "2",
    # both executors take part from the first job on (no scheduling before they registered)
    "spark.scheduler.minRegisteredResourcesRatio": "1.0",
    "spark.scheduler.maxRegisteredResourcesWaitingTime": "600s",
    "spark.default.parallelism": "2",
    "spark.sql.shuffle.partitions": "4",
    "spark.python.authenticate.socketTimeout": "120s",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}
"""Spark settings of the main job on the test cluster: two 1-core executors, small heaps, loopback."""


def main_job_command(
    master: str,
    rows: int,
    batches: int,
    catalog: dict[str, str],
    conf: dict[str, str],
) -> list[str]:
    """``python -m icefloe.cli.spark_pipeline`` with ``--master``, catalog properties and Spark confs.

    ``catalog`` holds ``uri``, ``warehouse`` and the other catalog properties (``name``, ``s3.*``
    without credentials: those go in the environment, see ``main_job_env``).
    """
    props = dict(catalog)
    command = [
        sys.executable,
        "-m",
        "icefloe.cli.spark_pipeline",
        "--rows",
        str(rows),
        "--batches",
        str(batches),
    ]
    command += ["--master", master, "--catalog-uri", props.pop("uri"), "--warehouse", props.pop("warehouse")]
    command += [f"--catalog-property={key}={value}" for key, value in props.items()]
    command += [f"--conf={key}={value}" for key, value in conf.items()]
    return command


def main_job_env(access_key: str, secret_key: str) -> dict[str, str]:
    """The job's environment: S3 credentials as AWS variables, loopback, icefloe's sources first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_", "AWS_"))}
    env.update(
        AWS_ACCESS_KEY_ID=access_key,
        AWS_SECRET_ACCESS_KEY=secret_key,
        SPARK_LOCAL_IP="127.0.0.1",
        PYTHONPATH=os.pathsep.join([str(SRC_DIR), *filter(None, [os.environ.get("PYTHONPATH")])]),
    )
    return env


def parse_report(stdout: str) -> dict[str, str]:
    """The main job's printed report as {label: value} (labels keep their indentation)."""
    lines = stdout.split("icefloe Spark pipeline report\n", 1)[1].splitlines()
    pairs = [re.match(r"  ( *\S.*?) {2,}(\S.*)$", line) for line in lines]
    return {m.group(1): m.group(2) for m in pairs if m}


def running_cluster(directory: Path, workers: int = 2) -> Iterator[SparkCluster]:
    """Generator for a pytest fixture: the cluster, every JVM killed afterwards (also on failure)."""
    cluster = start_cluster(directory, workers)
    try:
        yield cluster
    finally:
        cluster.stop()
