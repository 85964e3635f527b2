"""What statements return and where they write: empty DDL results, Delta-style counts, write targets."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from sqlglot import exp

from icefloe.errors import ValidationError
from icefloe.spark.statements.names import WAP_ENABLED, SqlContext, TableRef, wap_branch
from icefloe.spark.statements.query import table_parts
from icefloe.spark.statements.table_options import table_options, write_properties
from icefloe.spec.snapshots import MAIN_BRANCH
from icefloe.txn.commit_options import CommitOptions

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


WAP_ID_CONF = "spark.wap.id"
APP_ID_SUMMARY = "spark.app.id"  # a session setting and, as in Iceberg, a snapshot summary key
WAP_ID_SUMMARY = "wap.id"  # Iceberg's SnapshotSummary.STAGED_WAP_ID_PROP


def empty(ctx: SqlContext) -> DataFrame:
    """The empty result of a DDL statement (as ``spark.sql`` returns)."""
    from pyspark.sql import types as T

    return ctx.spark.createDataFrame([], T.StructType([]))


def write_target(ctx: SqlContext, node: exp.Expr) -> TableRef | None:
    """The icefloe table (or branch of it) a statement writes, None for Spark's tables."""
    if not isinstance(node, exp.Table):
        return None
    parts = table_parts(node)
    ref = ctx.resolve(parts) if parts else None
    if ref is None:
        return None
    if ref.metadata_table is not None:
        raise ValidationError(f"cannot write to the metadata table {ref.name}.{ref.metadata_table}")
    if ref.tag is not None:
        raise ValidationError(f"cannot write to tag {ref.tag!r} of {ref.name}: tags are read-only")
    if node.args.get("version") is not None:
        raise ValidationError(f"cannot write to {ref.name} AS OF a version")
    properties = write_properties(ref.name, table_options(node))
    return dataclasses.replace(ref, snapshot_properties=properties) if properties else ref


@contextmanager
def write_options(ctx: SqlContext, ref: TableRef) -> Iterator[CommitOptions]:
    """How a write to ``ref`` commits, as Iceberg's ``SparkWriteConf`` decides for a table with
    ``write.wap.enabled``: to the session's ``spark.wap.branch``, or staged under the session's
    ``spark.wap.id`` (a snapshot that no branch points at, for ``publish_changes``); else to the
    name's ``branch_x`` or main.

    A staged write commits to a throwaway branch which is removed once the write is done (Iceberg
    commits a staged snapshot without any ref in one step; icefloe's writers always move a branch).
    Every snapshot records the Spark application in its summary (``spark.app.id``), as Iceberg's.
    """
    summary = dict(ref.snapshot_properties)  # ``snapshot-property.<key>`` options, as Iceberg's writes
    if app_id := ctx.spark.conf.get(APP_ID_SUMMARY, None):
        summary[APP_ID_SUMMARY] = app_id
    branch = ref.branch or MAIN_BRANCH
    enabled = ref.table.metadata.properties.get(WAP_ENABLED, "false").lower() == "true"
    wap_id = (ctx.spark.conf.get(WAP_ID_CONF, None) or None) if enabled else None
    wap = wap_branch(ctx, ref)
    if wap_id is not None and wap is not None:
        raise ValidationError(f"Cannot set both WAP ID and branch, but got ID [{wap_id}] and branch [{wap}]")
    if wap is not None:
        if ref.branch is not None:
            raise ValidationError(
                f"Cannot write to both branch and WAP branch, but got branch [{ref.branch}] "
                f"and WAP branch [{wap}]"
            )
        branch = wap
    if wap_id is None:
        yield CommitOptions(branch=branch, snapshot_properties=summary)
        return
    staging = f"__icefloe_wap_{uuid.uuid4().hex}"
    if ref.branch is not None:
        raise ValidationError(f"a staged write (spark.wap.id) cannot go to branch {ref.branch!r}")
    try:
        yield CommitOptions(branch=staging, snapshot_properties={**summary, WAP_ID_SUMMARY: wap_id})
    finally:
        table = ctx.catalog.load_table(ref.identifier)
        if staging in table.metadata.refs:
            table.manage_snapshots().remove_branch(staging).commit()


def counts(ctx: SqlContext, **values: int) -> DataFrame:
    """A one-row frame of counts (``num_affected_rows`` ...), as Spark's Delta reports them."""
    names = ", ".join(f"{k} bigint" for k in values)
    return ctx.spark.createDataFrame([tuple(values.values())], names)


# ------------------------------------------------------------------------------------------ INSERT
