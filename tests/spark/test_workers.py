"""Every Spark path works on a SparkSession not built by ``icefloe.spark.session()`` when its workers
can import icefloe, and says how to fix it when they cannot (issue 13, item 10d).

Each case runs in its own process: the shared test session cannot coexist with a second one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = r"""
import json, sys
from pyspark.sql import SparkSession

home, partitioning = sys.argv[1], sys.argv[2]
spark = (
    SparkSession.builder.master("local[2]")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
from icefloe.errors import IcefloeError
from icefloe.spark import create_table, delete_rows, merge_into, read_table, update_rows, write_table
from icefloe.spark.runtime import resolve_catalog

cat = {"uri": f"sqlite:///{home}/c.db", "warehouse": f"{home}/wh"}
resolve_catalog(None, cat).create_namespace(("db",))
create_table(spark, "db.t", "id BIGINT NOT NULL, v STRING", partitioned_by=[partitioning], catalog=cat)
out = {}
rows = spark.range(10).selectExpr("id", "cast(id as string) v")
steps = [
    ("write", lambda: write_table(rows, "db.t", catalog=cat)),
    ("delete", lambda: delete_rows(spark, "db.t", "id = 1", mode="merge-on-read", catalog=cat)),
    ("update", lambda: update_rows(spark, "db.t", {"v": "'x'"}, "id = 2", catalog=cat)),
    ("merge", lambda: merge_into(spark.range(8, 12).selectExpr("id", "'m' v"), "db.t", "id", catalog=cat)),
]
for name, step in steps:
    try:
        step()
        out[name] = "ok"
    except IcefloeError as exc:
        out[name] = f"{type(exc).__name__}: {exc}"
try:
    out["rows"] = sorted(tuple(r) for r in read_table(spark, "db.t", catalog=cat).collect())
except Exception as exc:
    out["rows"] = f"{type(exc).__name__}: {exc}"
print("RESULT " + json.dumps(out))
spark.stop()
"""


def _run(tmp_path: Path, worker_python: str, partitioning: str) -> dict[str, object]:
    script = tmp_path / "plain_session.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env.pop("PYTHONPATH", None)
    env["PYSPARK_PYTHON"] = worker_python
    env["TZ"] = "UTC"
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path), partitioning],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, done.stdout[-2000:] + done.stderr[-4000:]
    result: dict[str, object] = json.loads(lines[-1][len("RESULT ") :])
    return result


def test_plain_session_whose_workers_import_icefloe(tmp_path: Path) -> None:
    result = _run(tmp_path, sys.executable, "bucket(2, v)")  # bucket on strings: an Arrow UDF
    assert {k: result[k] for k in ("write", "delete", "update", "merge")} == dict.fromkeys(
        ("write", "delete", "update", "merge"), "ok"
    )
    want = [[0, "0"], [2, "x"], *[[i, str(i)] for i in range(3, 8)], *[[i, "m"] for i in range(8, 12)]]
    assert result["rows"] == want


def test_workers_without_icefloe_get_an_error_naming_the_fix(tmp_path: Path) -> None:
    # An interpreter that cannot import icefloe: this one without its site-packages (-S);
    # pyspark still reaches the worker through the PYTHONPATH Spark sets.
    wrapper = tmp_path / "bare-python"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    wrapper.chmod(0o755)
    result = _run(tmp_path, str(wrapper), "v")
    assert result["write"] == "ok"  # identity partitions: the native Parquet writer runs no Python
    for step in ("delete", "update", "merge"):
        message = str(result[step])
        assert message.startswith("ValidationError: Spark's Python workers cannot import icefloe"), message
        assert "icefloe.spark.session()" in message and "PYSPARK_PYTHON" in message
    assert result["rows"] == [[i, str(i)] for i in range(10)]  # nothing changed
