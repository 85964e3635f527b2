"""The ``sort`` strategy of compaction: rows of each rewritten group in the sort order, each field
with its own direction and null placement; rows and counts unchanged."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import Unsupported
from icefloe.io.fileio import local_path
from icefloe.maintenance.rewrite_data_files import rewrite_data_files
from icefloe.maintenance.sorting import sort_rows
from icefloe.spec.schema import Schema
from icefloe.spec.sort_order import NullOrder, SortDirection, SortField, SortOrder
from icefloe.spec.transforms import BucketTransform, IdentityTransform
from icefloe.spec.types import LongType, NestedField, StringType
from tests.maintenance.helpers import make_table, rows_by_id

pytestmark = [pytest.mark.catalog_namespaces("db")]

SCHEMA = Schema(NestedField(1, "id", LongType(), False), NestedField(2, "name", StringType(), False))


def test_each_field_has_its_own_direction_and_null_placement() -> None:
    rows = pa.table(
        {
            "id": pa.array([1, None, 3, 1, None], pa.int64()),
            "name": pa.array(["b", "a", None, None, "c"]),
        }
    )
    # the documentation's 'id DESC NULLS LAST, name ASC NULLS FIRST'
    order = SortOrder(
        SortField(1, IdentityTransform(), SortDirection.DESC, NullOrder.NULLS_LAST),
        SortField(2, IdentityTransform(), SortDirection.ASC, NullOrder.NULLS_FIRST),
    )
    assert sort_rows(rows, SCHEMA, order).to_pylist() == [
        {"id": 3, "name": None},
        {"id": 1, "name": None},
        {"id": 1, "name": "b"},
        {"id": None, "name": "a"},
        {"id": None, "name": "c"},
    ]
    with pytest.raises(Unsupported, match="only top-level columns"):
        sort_rows(rows, SCHEMA, SortOrder(SortField(1, BucketTransform(4))))


@pytest.mark.parametrize("fv", [2, 3, 4])
def test_rewrite_with_a_sort_order_writes_sorted_files(catalog: Catalog, fv: int) -> None:
    table = make_table(catalog, "db.t", fv, batches=3, rows=12, partitioned=False)
    before = rows_by_id(table)
    order = SortOrder(SortField(3, IdentityTransform(), SortDirection.DESC, NullOrder.NULLS_LAST))
    result = rewrite_data_files(table, sort_order=order)
    assert (result.rewritten_data_files, result.added_data_files) == (3, 1)
    table = table.refresh()
    assert rows_by_id(table) == before
    (task,) = table.scan().plan_files()
    written = pq.read_table(local_path(task.data_file.file_path) or "")
    assert written.column("val").to_pylist() == sorted((10 * i for i in range(36)), reverse=True)
