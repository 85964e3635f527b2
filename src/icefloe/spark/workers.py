"""Check that Spark's Python workers can import icefloe before a job ships icefloe code to them.

Paths that run icefloe on the executors (``mapInArrow`` reads, writes and row-level changes, the
bucket UDF) pickle functions that import ``icefloe`` on the worker. Spark starts workers with
``PYSPARK_PYTHON`` / ``spark.pyspark.python`` (default: ``python3`` on the PATH), not with the
driver's interpreter; ``icefloe.spark.session()`` points it at the driver's interpreter, a session
built otherwise may not. Without this check such a job fails deep inside Spark with
``ModuleNotFoundError: No module named 'icefloe'``; with it, the first such job raises a
ValidationError that names the fix. The probe runs once per SparkContext and worker interpreter.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any

from icefloe.errors import ValidationError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_PROBED: dict[tuple[int, str], tuple[bool, str]] = {}
_LOCK = threading.Lock()
# Compiled outside any icefloe module, so cloudpickle ships it by value: the worker can load it
# even when it cannot import icefloe (which is what it reports).
_PROBE_SOURCE = """
def probe(_):
    import importlib.util
    import sys
    return (importlib.util.find_spec("icefloe") is not None, sys.executable)
"""


def _probe() -> Any:
    namespace: dict[str, Any] = {"__name__": "icefloe_worker_probe"}
    exec(compile(_PROBE_SOURCE, "<icefloe worker probe>", "exec"), namespace)
    return namespace["probe"]


def workers_import_icefloe(spark: SparkSession | None) -> bool:
    """Whether the session's Python workers can import icefloe (probed once per SparkContext and
    worker interpreter; True without a SparkContext, e.g. on Spark Connect, where the server side
    decides)."""
    return _probe_workers(spark)[0]


def require_icefloe_on_workers(spark: SparkSession | None) -> None:
    """Raise ValidationError naming the fix when the session's Python workers cannot import icefloe."""
    found, worker_python = _probe_workers(spark)
    if not found:
        raise ValidationError(
            f"Spark's Python workers cannot import icefloe (they run {worker_python!r}, "
            f"from PYSPARK_PYTHON / spark.pyspark.python, default 'python3'). Build the session "
            f"with icefloe.spark.session(), or set PYSPARK_PYTHON (or the Spark conf "
            f"spark.pyspark.python) to an interpreter with icefloe installed, e.g. "
            f"{sys.executable!r}, before the SparkSession starts; on a cluster, install icefloe "
            f"on every executor."
        )


def _probe_workers(spark: SparkSession | None) -> tuple[bool, str]:
    """(whether the workers import icefloe, the interpreter they run), from a one-task job."""
    if spark is None:
        return True, sys.executable
    try:
        sc = spark.sparkContext
        key = (id(sc), str(sc.pythonExec))
    except Exception:  # Spark Connect: no SparkContext here, the server side decides
        return True, ""
    with _LOCK:
        if key not in _PROBED:
            found, worker_python = sc.parallelize([0], 1).map(_probe()).collect()[0]
            _PROBED[key] = (bool(found), str(worker_python))
        return _PROBED[key]
