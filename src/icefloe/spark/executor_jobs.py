"""Run icefloe work on Spark executors: ship pickled inputs out, bring pickled results back.

- ``JobStaging``: a job-unique directory under the table's data location. Executors get table
  metadata whose ``write.data.path`` points there, so every file any task attempt writes (data
  files, position deletes, Puffin DVs) lands in it. After the job, files no result mentions
  (failed or retried attempts) are deleted; a failed job deletes the whole directory.
- ``run_chunks``: one Spark task per chunk of inputs (``spark.range`` + ``mapInArrow``); each
  task calls ``work(chunk)`` and its pickled results are collected on the driver.
- ``collect_results``: the same for a DataFrame already shaped for the executors.
- ``executor_errors``: an icefloe error raised on an executor (or a Spark ``raise_error`` from a
  required-column check) surfaces on the driver as the same icefloe error class, and a job that
  failed on a value of its input (a Spark error whose SQLSTATE is a data exception, class 22, or
  an integrity constraint violation, class 23: a cast or decimal overflow, a malformed number,
  a division by zero, a null where none may be) as a ``ValidationError`` naming the Spark error,
  which stays the ``__cause__``. Other failures (a lost executor, a bug) are not bad input and
  pass through unchanged.
"""

from __future__ import annotations

import pickle
import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from icefloe import errors
from icefloe.io.fileio import FileIO
from icefloe.spark.compat import map_in_arrow
from icefloe.spark.runtime import delete_tree
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.locations import WRITE_DATA_PATH, LocationProvider

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

T = TypeVar("T")
R = TypeVar("R")

RESULT_COLUMN = "result"


@dataclass(frozen=True)
class JobStaging:
    """Where the files of one Spark job go until the commit: ``<data>/spark-<uuid>/``."""

    io: FileIO
    location: str
    metadata: TableMetadata  # the table metadata executors write with (data path redirected)

    @classmethod
    def create(cls, io: FileIO, md: TableMetadata) -> JobStaging:
        """A fresh staging directory for ``md``'s table (nothing is created until files are written)."""
        location = f"{LocationProvider(md).data_location}/spark-{uuid.uuid4().hex}"
        staged_md = md.with_changes(properties={**md.properties, WRITE_DATA_PATH: location})
        return cls(io, location, staged_md)

    def tidy(self, keep: set[str]) -> None:
        """Delete files under the staging directory that are not in ``keep`` (failed attempts)."""
        for path in self.io.list_prefix(self.location):
            if path not in keep:
                self.io.delete(path, missing_ok=True)

    def discard(self) -> None:
        """Delete the whole staging directory (the job or its commit failed)."""
        delete_tree(self.io, self.location)


def run_chunks(
    spark: SparkSession,
    chunks: Sequence[Sequence[T]],
    work: Callable[[Sequence[T]], Iterator[R]],
) -> list[R]:
    """Run ``work`` on each chunk as one Spark task; return every result (any order)."""
    from pyspark.sql import types as T_

    if not chunks:
        return []
    payload = spark.sparkContext.broadcast(pickle.dumps([list(c) for c in chunks]))

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        mine: list[list[T]] = pickle.loads(payload.value)
        for batch in batches:
            for index in batch.column(0).to_pylist():
                for result in work(mine[index]):
                    yield result_batch(result)

    n = len(chunks)
    schema = T_.StructType([T_.StructField(RESULT_COLUMN, T_.BinaryType(), False)])
    try:
        frame = map_in_arrow(spark.range(0, n, 1, n), run, schema)
        return collect_results(frame)
    finally:
        payload.destroy()


def result_batch(result: Any) -> Any:
    """One pickled result as the one-row Arrow batch an executor yields."""
    import pyarrow as pa

    return pa.RecordBatch.from_arrays(
        [pa.array([pickle.dumps(result)], pa.binary())],
        schema=pa.schema([pa.field(RESULT_COLUMN, pa.binary(), nullable=False)]),
    )


def result_schema() -> Any:
    """The Spark schema of a frame of pickled results."""
    from pyspark.sql import types as T_

    return T_.StructType([T_.StructField(RESULT_COLUMN, T_.BinaryType(), False)])


def collect_results(frame: DataFrame, what: str = "the Spark job") -> list[Any]:
    """Collect a frame of pickled results (see ``result_batch``) and unpickle them (``what``: the
    job, for the message of an ``executor_errors`` error)."""
    with executor_errors(what):
        rows = frame.collect()
    return [pickle.loads(r[RESULT_COLUMN]) for r in rows]


def chunked(items: Sequence[T], parts: int) -> list[list[T]]:
    """Split ``items`` into at most ``parts`` chunks of near-equal size (order kept)."""
    if not items:
        return []
    parts = max(1, min(parts, len(items)))
    size, extra = divmod(len(items), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        out.append(list(items[start:end]))
        start = end
    return out


_ICEFLOE_ERROR = re.compile(r"icefloe\.errors\.(\w+): (.+)")
_REQUIRED_NULL = re.compile(r"(column '[^']*' is required but the input has a null value)")
_SQL_STATE = re.compile(r"SQLSTATE: (\w{5})")
BAD_VALUE_SQL_STATE_CLASSES = ("22", "23")
"""SQLSTATE classes of errors caused by a value of the data: data exception, integrity constraint."""


@contextmanager
def executor_errors(what: str = "the Spark job") -> Iterator[None]:
    """Re-raise icefloe errors from executors (wrapped by Spark) as themselves, and a job that
    failed on a value of its input as a ``ValidationError`` (``what`` says which job)."""
    try:
        yield
    except errors.IcefloeError:
        raise
    except Exception as exc:
        text = str(exc)
        found = _ICEFLOE_ERROR.search(text)
        if found is not None:
            cls = getattr(errors, found.group(1), None)
            if isinstance(cls, type) and _plain_error(cls):
                raise cls(found.group(2).strip()) from exc
        required = _REQUIRED_NULL.search(text)
        if required is not None:
            raise errors.ValidationError(required.group(1)) from exc
        if _caused_by_a_value(exc):
            first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
            raise errors.ValidationError(
                f"{what} failed on a value of the input, nothing was committed: {first}"
            ) from exc
        raise


def _caused_by_a_value(exc: Exception) -> bool:
    """Whether a Spark error says a value of the data caused it (its SQLSTATE class is 22 or 23)."""
    state: object = None
    get_state = getattr(exc, "getSqlState", None)
    if callable(get_state):
        try:
            state = get_state()
        except Exception:  # a Py4J error whose JVM side is gone: fall back to the message
            state = None
    if not isinstance(state, str):
        found = _SQL_STATE.search(str(exc))
        state = found.group(1) if found else None
    return isinstance(state, str) and state.startswith(BAD_VALUE_SQL_STATE_CLASSES)


def _plain_error(cls: type) -> bool:
    """An icefloe error class built from a message alone (CommitConflict takes more)."""
    return issubclass(cls, errors.IcefloeError) and cls is not errors.CommitConflict
