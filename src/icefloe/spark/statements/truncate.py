"""``TRUNCATE TABLE t``: one metadata-only ``delete`` snapshot removing every live file.

Spark runs ``TRUNCATE TABLE`` on an Iceberg table as ``deleteWhere(alwaysTrue)``: Iceberg's
``DeleteFiles`` drops every live data and delete file without reading or writing data, on the
branch the name selects (``t.branch_x``, or ``spark.wap.branch`` on a table with
``write.wap.enabled``). icefloe commits the same snapshot (``txn.truncate.TruncateFiles``), also on
an empty table, as Java does. ``PARTITION (...)`` is refused: Iceberg tables do not implement
Spark's partition management, so Spark refuses it too; ``DELETE FROM t WHERE ...`` is the way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from icefloe.errors import ValidationError
from icefloe.spark.statements.errors import UnsupportedStatement
from icefloe.spark.statements.names import SqlContext
from icefloe.spark.statements.results import empty, write_options, write_target
from icefloe.spark.statements.view_expansion import load_view, view_identifier
from icefloe.txn.truncate import TruncateFiles

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def truncate(ctx: SqlContext, tree: exp.TruncateTable) -> DataFrame | None:
    """TRUNCATE TABLE t on an icefloe table (None for Spark's tables)."""
    targets = tree.expressions
    if tree.args.get("is_database") or len(targets) != 1 or not isinstance(targets[0], exp.Table):
        return None
    node = targets[0]
    ident = view_identifier(ctx, node)
    if ident is not None and ctx.load(ident) is None and load_view(ctx, ident) is not None:
        raise ValidationError(f"'TRUNCATE TABLE' expects a table but {'.'.join(ident)} is a view")
    ref = write_target(ctx, node)
    if ref is None:
        return None
    if tree.args.get("partition") is not None:
        raise UnsupportedStatement(
            "TRUNCATE TABLE ... PARTITION",
            f"table {ref.name} does not support partition management; use DELETE FROM ... WHERE",
        )
    with write_options(ctx, ref) as options, ref.table.transaction() as tx:
        tx.add_action(TruncateFiles(branch=options.branch, snapshot_properties=options.properties))
    ctx.forget(ref.identifier)
    return empty(ctx)
