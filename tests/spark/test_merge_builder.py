"""icefloe.spark.merge: the builder of the Python API on DataFrames runs every MergeSpec shape
Table.merge runs, with the same rows; bad clauses are refused before anything is written."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql import functions as F

from icefloe.catalog.base import Catalog
from icefloe.dml.merge_clauses import MergeSpecBuilder
from icefloe.errors import ValidationError
from icefloe.spark import merge, merge_into
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


def _multi_clause(builder: MergeSpecBuilder, spark_sql: bool) -> MergeSpecBuilder:
    """Two conditional WHEN MATCHED (DELETE, UPDATE) then UPDATE SET *, two conditional inserts,
    two conditional NOT MATCHED BY SOURCE (DELETE, UPDATE): in Spark SQL or pyarrow expressions."""
    if spark_sql:
        return (
            builder.when_matched_delete("source.val < 0")
            .when_matched_update({"val": "target.val + source.val"}, condition="source.val < 10")
            .when_matched_update()
            .when_not_matched_insert(condition="source.val >= 1000")
            .when_not_matched_insert(
                {"id": "source.id", "cat": "'new'", "val": "source.val * 2"}, condition="source.cat = 'b'"
            )
            .when_not_matched_by_source_delete("target.val >= 100")
            .when_not_matched_by_source_update({"val": "target.val - 1000"}, condition="target.cat = 'a'")
        )
    src_val = pc.field("source.val")
    return (
        builder.when_matched_delete(src_val < 0)
        .when_matched_update({"val": pc.field("val") + src_val}, condition=src_val < 10)
        .when_matched_update()
        .when_not_matched_insert(condition=src_val >= 1000)
        .when_not_matched_insert(
            {"id": pc.field("source.id"), "cat": "new", "val": src_val * 2},
            condition=pc.field("source.cat") == "b",
        )
        .when_not_matched_by_source_delete(pc.field("val") >= 100)
        .when_not_matched_by_source_update({"val": pc.field("val") - 1000}, condition=pc.field("cat") == "a")
    )


@pytest.mark.parametrize(("fv", "mode"), [(2, "copy-on-write"), (3, "merge-on-read"), (4, "merge-on-read")])
def test_spark_merge_runs_every_clause_shape_like_table_merge(
    spark: object, catalog: Catalog, fv: int, mode: str
) -> None:
    """Ordered conditional clauses of each kind, first match wins, NOT MATCHED BY SOURCE update and
    delete: Spark leaves exactly the rows the Python engine leaves for the same clauses."""
    on_spark = make_table(catalog, f"db.merge_shapes_spark_v{fv}", fv, batches=2, rows=6)  # ids 0..11
    on_python = make_table(catalog, f"db.merge_shapes_python_v{fv}", fv, batches=2, rows=6)
    rows = [(1, "b", -1), (2, "c", 5), (4, "z", 400), (100, "a", 1000), (101, "b", 50), (102, "c", 7)]
    source = spark.createDataFrame(rows, "id long, cat string, val long")  # type: ignore[attr-defined]
    arrow = pa.table(
        {
            "id": pa.array([r[0] for r in rows], pa.int64()),
            "cat": [r[1] for r in rows],
            "val": pa.array([r[2] for r in rows], pa.int64()),
        }
    )
    got = _multi_clause(merge(source, on_spark.name, on="id", mode=mode), spark_sql=True).execute()
    want = _multi_clause(on_python.merge(arrow, on="id", mode=mode), spark_sql=False).execute()
    counts = (got.deleted_rows, got.updated_rows, got.inserted_rows)
    assert counts == (want.deleted_rows, want.updated_rows, want.inserted_rows) == (3, 6, 2)
    expected = {
        0: ("a", -1000),  # no source row, cat a: updated by the second BY SOURCE clause
        2: ("c", 25),  # source.val < 10: target.val + source.val
        3: ("a", -970),
        4: ("z", 400),  # UPDATE SET *, into another partition
        5: ("c", 50),
        6: ("a", -940),
        7: ("b", 70),
        8: ("c", 80),
        9: ("a", -910),
        100: ("a", 1000),  # INSERT * (source.val >= 1000)
        101: ("new", 100),  # the second insert (source.cat = 'b')
    }  # 1: deleted (source.val < 0); 10, 11: deleted (BY SOURCE, val >= 100); 102: no insert applies
    for table in (on_spark, on_python):
        assert {i: (r["cat"], r["val"]) for i, r in rows_by_id(table).items()} == expected
        assert len(table.snapshots()) == 3


def test_spark_merge_refuses_bad_clauses_before_writing(spark: object, catalog: Catalog) -> None:
    table = make_table(catalog, "db.merge_refusals", 3, batches=1, rows=3)
    source = spark.createDataFrame([(1, "b", 1)], "id long, cat string, val long")  # type: ignore[attr-defined]
    with pytest.raises(ValidationError, match="Spark SQL text or a Column"):
        merge(source, table.name, on="id").when_matched_delete(pc.field("source.val") > 0).execute()
    with pytest.raises(ValidationError, match="at least one clause"):
        merge(source, table.name, on="id").execute()
    with pytest.raises(ValidationError, match="merge update"):
        merge(source, table.name, on="id").when_matched_update({"nope": "1"}, "source.val > 0").execute()
    with pytest.warns(DeprecationWarning, match="action"):
        merge_into(source, table.name, on="id", action=F.lit("keep"))
    assert len(table.snapshots()) == 1
