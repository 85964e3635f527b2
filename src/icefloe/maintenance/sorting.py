"""Rows in a sort order, for compaction's ``sort`` strategy (Iceberg's ``strategy => 'sort'``).

Each sort field orders by a top-level column (identity transform) in its direction, with nulls first
or last as the field says: an ``is null`` key before each column gives every field its own null
placement (Arrow's sort places nulls the same way for all keys). A ``ZOrder`` (``zorder(c1, c2)``)
orders rows by the interleaved bits of its columns instead (``maintenance.zorder``).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.errors import Unsupported
from icefloe.maintenance.zorder import ZOrder, check_zorderable, zorder_rows
from icefloe.spec.schema import Schema
from icefloe.spec.sort_order import NullOrder, SortDirection, SortOrder
from icefloe.spec.transforms import IdentityTransform

RowOrder = SortOrder | ZOrder  # how compaction's ``sort`` strategy orders the rows of a group


def check_sortable(schema: Schema, order: RowOrder) -> None:
    """Unsupported unless every field of ``order`` sorts by a top-level column as it is."""
    if isinstance(order, ZOrder):
        check_zorderable(schema, order)
        return
    top_level = {f.field_id for f in schema.fields}
    for f in order.fields:
        if not isinstance(f.transform, IdentityTransform) or f.source_id not in top_level:
            name = schema.find_column_name(f.source_id) or str(f.source_id)
            raise Unsupported(
                f"sorting rewritten files by {f.transform}({name}): only top-level columns as they are"
            )


def sort_rows(rows: pa.Table, schema: Schema, order: RowOrder) -> pa.Table:
    """``rows`` (named by the table's columns) in ``order``."""
    if isinstance(order, ZOrder):
        return zorder_rows(rows, schema, order)
    check_sortable(schema, order)
    if order.is_unsorted or rows.num_rows < 2:
        return rows
    keys: list[tuple[str, str]] = []
    extra: dict[str, pa.Array] = {}
    for i, f in enumerate(order.fields):
        column = schema.find_field(f.source_id).name
        nulls = f"__icefloe_sort_nulls_{i}"
        extra[nulls] = pc.is_null(rows.column(column), nan_is_null=True)
        keys.append((nulls, "descending" if f.null_order is NullOrder.NULLS_FIRST else "ascending"))
        keys.append((column, "ascending" if f.direction is SortDirection.ASC else "descending"))
    keyed = rows
    for name, values in extra.items():
        keyed = keyed.append_column(name, values)
    return rows.take(pc.sort_indices(keyed, sort_keys=keys))
