"""Executor-side hook of the Spark cluster test: pause one write task after its first data file.

Only Python processes that have this directory on ``PYTHONPATH`` import it (the cluster test sets
``spark.executorEnv.PYTHONPATH`` for the job's executors), and it does nothing unless
``ICEFLOE_TEST_PAUSE_MARKER`` names a file. Then every data file icefloe's Parquet writer writes
is logged to ``<marker>.files`` (``pid path``), and the first task anywhere that has written one
file claims the marker (exclusive create): it writes ``pid path`` into the marker and waits until
its process is killed (it exits by itself if its parent goes away). The test waits for the marker,
then kills the worker that task runs under: the task dies in the middle of a write stage with a
file already in the job's staging directory, at the same point on every run. Retries of the
task find the marker claimed and write normally.
"""

from __future__ import annotations

import os
import time
from typing import Any


def _install(marker: str) -> None:
    import icefloe.formats.parquet.data_files as data_files

    original = data_files.write_parquet_data_file

    def write_then_maybe_pause(io: Any, path: str, *args: Any, **kwargs: Any) -> Any:
        result = original(io, path, *args, **kwargs)
        line = f"{os.getpid()} {path}\n".encode()
        fd = os.open(marker + ".files", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
        try:
            os.close(os.open(marker + ".claim", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except FileExistsError:
            return result
        with open(marker + ".tmp", "wb") as out:
            out.write(line)
        os.replace(marker + ".tmp", marker)
        parent = os.getppid()
        while os.getppid() == parent:  # killed with the worker; never returns normally
            time.sleep(0.1)
        os._exit(1)

    data_files.write_parquet_data_file = write_then_maybe_pause


if os.environ.get("ICEFLOE_TEST_PAUSE_MARKER"):
    _install(os.environ["ICEFLOE_TEST_PAUSE_MARKER"])
