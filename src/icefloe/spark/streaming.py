"""Structured Streaming into icefloe: one snapshot per micro-batch, idempotent on replay.

``df.writeStream.foreachBatch(stream_writer("ns.t")).option("checkpointLocation", ...).start()``
writes every micro-batch through the fast native path and commits it as one snapshot whose summary
records ``spark.streaming.query-id`` and ``spark.streaming.batch-id``. When Spark replays a batch
(it committed to the table, then failed before recording the batch in its checkpoint), the writer
finds the batch in the branch's snapshot ancestry and skips it, so no row is written twice. The
check runs again inside the commit (on freshly loaded metadata), so a concurrent replay cannot slip
through either. The check needs the query's last batch snapshot in the ancestry: snapshot expiry
must not remove it while the query is stopped (the default retention of 5 days does not).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from icefloe.errors import IcefloeError
from icefloe.spec.snapshots import MAIN_BRANCH, Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.txn.producers import SnapshotProducer, branch_head
from icefloe.txn.transaction import AttemptContext

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from icefloe.catalog.base import Catalog
    from icefloe.spec.updates import TableUpdate
    from icefloe.table.table import Table

QUERY_ID_PROPERTY = "spark.streaming.query-id"
BATCH_ID_PROPERTY = "spark.streaming.batch-id"
QUERY_ID_LOCAL_PROPERTY = "sql.streaming.queryId"


class _BatchAlreadyCommitted(Exception):
    """Signal from ``IdempotentCommit`` to ``commit_batch``: the micro-batch is already in the table
    (a replay), so nothing is committed. Internal control flow, never seen by a caller."""


def last_committed_batch(md: TableMetadata, branch: str, query_id: str) -> int | None:
    """The newest batch id the query committed on ``branch`` (walking the snapshot ancestry)."""
    snap: Snapshot | None = branch_head(md, branch) if branch in md.refs or branch == MAIN_BRANCH else None
    seen: set[int] = set()
    while snap is not None and snap.snapshot_id not in seen:
        seen.add(snap.snapshot_id)
        summary = snap.summary or {}
        if summary.get(QUERY_ID_PROPERTY) == query_id and BATCH_ID_PROPERTY in summary:
            return int(summary[BATCH_ID_PROPERTY])
        parent = snap.parent_snapshot_id
        if parent is None:
            return None
        try:
            snap = md.snapshot_by_id(parent)
        except IcefloeError:  # expired ancestor
            return None
    return None


def already_committed(table: Table, branch: str, query_id: str, batch_id: str | int) -> bool:
    """True when this query already committed batch ``batch_id`` (or a later one) on ``branch``."""
    last = last_committed_batch(table.metadata, branch, query_id)
    return last is not None and last >= int(batch_id)


@dataclass
class IdempotentCommit:
    """Wraps a snapshot producer: refuses to commit a batch the table already holds."""

    inner: SnapshotProducer
    branch: str
    query_id: str
    batch_id: int

    def apply(self, ctx: AttemptContext, current: TableMetadata) -> list[TableUpdate]:
        """Re-check on the fresh metadata of every commit attempt, then apply the producer."""
        last = last_committed_batch(current, self.branch, self.query_id)
        if last is not None and last >= self.batch_id:
            raise _BatchAlreadyCommitted(
                f"batch {self.batch_id} of query {self.query_id} is already committed"
            )
        return self.inner.apply(ctx, current)

    def committed_files(self) -> list[str]:
        """The wrapped producer's files."""
        return self.inner.committed_files()


def commit_batch(
    df: DataFrame,
    table: Table,
    batch_id: int,
    query_id: str,
    mode: str = "append",
    branch: str = MAIN_BRANCH,
    partition_overwrite: str = "static",
) -> Snapshot | None:
    """Write one micro-batch and commit it as one snapshot, unless it was committed before."""
    from icefloe.spark.commit import build_action
    from icefloe.spark.write import stage_dataframe

    if already_committed(table, branch, query_id, batch_id):
        return None
    staged = stage_dataframe(df, table)
    props = {QUERY_ID_PROPERTY: query_id, BATCH_ID_PROPERTY: str(batch_id)}
    try:
        action = build_action(table, staged.files, mode, None, partition_overwrite, branch, props)
    except BaseException:
        staged.discard()
        raise
    if action is None:
        staged.discard()
        return None
    try:
        with table.transaction() as tx:
            tx.add_action(IdempotentCommit(action, branch, query_id, batch_id))
    except _BatchAlreadyCommitted:
        staged.discard()
        return None
    return table.metadata.snapshot_for_ref(branch)


def stream_writer(
    identifier: str | tuple[str, ...],
    query_id: str | None = None,
    mode: str = "append",
    branch: str = MAIN_BRANCH,
    partition_overwrite: str = "static",
    catalog: Catalog | dict[str, str] | None = None,
) -> Callable[[DataFrame, int], None]:
    """A ``foreachBatch`` function committing each micro-batch once (``query_id`` defaults to Spark's
    query id, which survives restarts from the same checkpoint)."""
    from icefloe.spark.runtime import resolve_catalog

    def write_batch(df: DataFrame, batch_id: int) -> None:
        spark = df.sparkSession
        qid = query_id or spark.sparkContext.getLocalProperty(QUERY_ID_LOCAL_PROPERTY)
        if not qid:
            raise IcefloeError("no streaming query id: pass query_id= to stream_writer")
        table = resolve_catalog(spark, catalog).load_table(identifier)
        commit_batch(df, table, batch_id, qid, mode, branch, partition_overwrite)

    return write_batch
