"""icefloe.spark.merge: the builder of the Python API on DataFrames, and the shapes Spark refuses."""

from __future__ import annotations

import pyarrow.compute as pc
import pytest

from icefloe.catalog.base import Catalog
from icefloe.dml.merge_clauses import MergeSpecBuilder
from icefloe.errors import Unsupported
from icefloe.spark import merge
from icefloe.spark.merge_builder import spark_flags
from tests.maintenance.helpers import make_table, rows_by_id


@pytest.mark.parametrize("fv", [3, 4])
def test_spark_merge_builder_runs_delete_update_insert(spark: object, catalog: Catalog, fv: int) -> None:
    table = make_table(catalog, f"db.merge_builder_v{fv}", fv)  # ids 0..89, cat a/b/c, val = 10 * id
    before = rows_by_id(table)
    source = spark.createDataFrame(  # type: ignore[attr-defined]
        [(1, "a", -1), (2, "b", 999), (500, "c", 5000)], "id long, cat string, val long"
    )
    result = (
        merge(source, table.name, on="id")
        .when_matched_delete("source.val < 0")
        .when_matched_update()
        .when_not_matched_insert()
        .execute()
    )
    assert (result.deleted_rows, result.updated_rows, result.inserted_rows) == (1, 1, 1)
    table.refresh()
    after = rows_by_id(table)
    want = {i: (r["cat"], r["val"]) for i, r in before.items() if i != 1}
    want[2] = ("b", 999)
    want[500] = ("c", 5000)
    assert {i: (r["cat"], r["val"]) for i, r in after.items()} == want


def test_spark_flags_refuse_what_the_spark_engine_cannot_run_yet() -> None:
    with pytest.raises(Unsupported, match="WHEN NOT MATCHED clauses"):
        spark_flags(MergeSpecBuilder("id").when_not_matched_insert(condition="source.x > 1").spec())
    with pytest.raises(Unsupported, match="BY SOURCE"):
        spark_flags(MergeSpecBuilder("id").when_not_matched_by_source_update({"v": "1"}).spec())
    spec = MergeSpecBuilder("id").when_matched_delete(pc.field("x")).when_matched_update({"v": "1"}).spec()
    assert spark_flags(spec)[:2] == ({"v": "1"}, spec.matched[0].condition)
