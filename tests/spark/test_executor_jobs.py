"""Spark jobs that fail on a value of their input raise ValidationError and change nothing.

Real data provokes each failure: a null in a NOT NULL column, a value that overflows a decimal,
a string that is no number, a division by zero, in ``write_table`` (both write routes) and in the
row-level jobs (update, delete with a Spark condition, merge). Each must raise a
``ValidationError`` naming the Spark error (kept as ``__cause__``), leave the table's snapshot as
it was and leave no file behind under the table's location. A failure that is not caused by a
value (an exception in the user's Python code) is no icefloe error and passes through unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from icefloe.catalog.base import Catalog
from icefloe.errors import IcefloeError, ValidationError
from icefloe.io.fileio import local_path
from icefloe.spark import create_table, merge_into, update_rows, write_table
from icefloe.spark.row_operations import delete_where
from icefloe.table.table import Table

DDL = "id BIGINT NOT NULL, amount DECIMAL(10,2), n INT"
ARROW_DDL = f"{DDL}, xs ARRAY<INT>"  # a list column: written by the arrow route
WRITE_FAILED = "the write job failed on a value of the input, nothing was committed"


def _rows(spark: Any, start: int, count: int, with_list: bool = False) -> Any:
    df = spark.range(start, start + count).select(
        "id", (F.col("id") / 7).cast("decimal(10,2)").alias("amount"), F.col("id").cast("int").alias("n")
    )
    return df.withColumn("xs", F.array(F.col("n"))) if with_list else df


def _table(spark: Any, catalog: Catalog, name: str, ddl: str = DDL, mode: str = "copy-on-write") -> Table:
    modes = {f"write.{op}.mode": mode for op in ("update", "delete", "merge")}
    create_table(spark, name, ddl, properties={"format-version": "2", **modes})
    write_table(_rows(spark, 0, 20, with_list=ddl == ARROW_DDL), name)
    return catalog.load_table(name)


def _files(table: Table) -> list[str]:
    root = local_path(table.metadata.location)
    assert root is not None
    return sorted(os.path.join(d, n) for d, _, names in os.walk(root) for n in names)


def _fails_cleanly(table: Table, run: Callable[[], object], message: str) -> ValidationError:
    """Run ``run``: it must raise a ValidationError matching ``message`` and change nothing."""
    location, files = table.metadata_location, _files(table)
    with pytest.raises(ValidationError, match=message) as caught:
        run()
    assert caught.value.__cause__ is not None  # the Spark error is kept
    table.refresh()
    assert table.metadata_location == location
    assert _files(table) == files
    return caught.value


def _with_null_id(df: Any) -> Any:
    return df.withColumn("id", F.when(F.col("id") == 25, F.lit(None)).otherwise(F.col("id")))


def _overflowing_amount(df: Any) -> Any:
    return df.withColumn("amount", (F.col("id") * F.lit(10**9)).cast("decimal(10,2)"))


def _malformed_n(df: Any) -> Any:
    return df.withColumn("n", F.concat(F.lit("x"), F.col("id")).cast("int"))


@pytest.mark.parametrize(
    ("route_ddl", "spoil", "message"),
    [
        (DDL, _with_null_id, "column 'id' is required but the input has a null value"),
        (DDL, _overflowing_amount, rf"{WRITE_FAILED}.*NUMERIC_VALUE_OUT_OF_RANGE"),
        (DDL, _malformed_n, rf"{WRITE_FAILED}.*CAST_INVALID_INPUT"),
        (ARROW_DDL, _with_null_id, "column 'id' is required but the input has a null value"),
        (ARROW_DDL, _overflowing_amount, rf"{WRITE_FAILED}.*NUMERIC_VALUE_OUT_OF_RANGE"),
    ],
    ids=["native-null", "native-overflow", "native-malformed", "arrow-null", "arrow-overflow"],
)
def test_write_table_failing_on_a_value_is_a_validation_error(
    spark: Any, catalog: Catalog, table_name: str, route_ddl: str, spoil: Callable[[Any], Any], message: str
) -> None:
    table = _table(spark, catalog, table_name, route_ddl)
    bad = spoil(_rows(spark, 20, 10, with_list=route_ddl == ARROW_DDL))
    _fails_cleanly(table, lambda: write_table(bad, table_name), message)


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_update_failing_on_a_value_is_a_validation_error(
    spark: Any, catalog: Catalog, table_name: str, mode: str
) -> None:
    table = _table(spark, catalog, table_name, mode=mode)
    overflow = {"amount": "CAST(id * 1000000000 AS DECIMAL(10,2))"}
    error = _fails_cleanly(
        table,
        lambda: update_rows(spark, table_name, overflow, filter="id > 1"),
        r"the update failed on a value of the input.*NUMERIC_VALUE_OUT_OF_RANGE",
    )
    assert "22003" in str(error.__cause__)
    malformed = {"n": "CAST(concat('x', id) AS INT)"}
    _fails_cleanly(
        table, lambda: update_rows(spark, table_name, malformed, filter=True), "CAST_INVALID_INPUT"
    )


def test_delete_with_a_failing_condition_is_a_validation_error(
    spark: Any, catalog: Catalog, table_name: str
) -> None:
    table = _table(spark, catalog, table_name, mode="merge-on-read")
    _fails_cleanly(
        table,
        lambda: delete_where(spark, table_name, "id DIV (n - n) = 1"),
        r"the delete failed on a value of the input.*DIVIDE_BY_ZERO",
    )


def test_merge_failing_on_a_value_is_a_validation_error(
    spark: Any, catalog: Catalog, table_name: str
) -> None:
    table = _table(spark, catalog, table_name)
    # the source itself cannot be computed: the first job over it (key range) fails
    _fails_cleanly(
        table,
        lambda: merge_into(_overflowing_amount(_rows(spark, 10, 20)), table_name, on="id"),
        r"the merge failed on a value of the input.*NUMERIC_VALUE_OUT_OF_RANGE",
    )
    # the source is fine, the updated value is not: the job writing the changes fails
    _fails_cleanly(
        table,
        lambda: merge_into(
            _rows(spark, 10, 20),
            table_name,
            on="id",
            when_matched_update={"amount": "CAST(source.id * 1000000000 AS DECIMAL(10,2))"},
        ),
        r"the merge failed on a value of the input.*NUMERIC_VALUE_OUT_OF_RANGE",
    )


def _raise_bug(n: int) -> int:
    raise RuntimeError(f"a bug in the caller's code (n={n})")


def test_a_failure_not_caused_by_a_value_passes_through(
    spark: Any, catalog: Catalog, table_name: str
) -> None:
    table = _table(spark, catalog, table_name)
    location, files = table.metadata_location, _files(table)

    broken = F.udf(lambda n: _raise_bug(n), T.IntegerType())
    bad = _rows(spark, 20, 10).withColumn("n", broken(F.col("n")))
    with pytest.raises(Exception, match="a bug in the caller's code") as caught:
        write_table(bad, table_name)
    assert not isinstance(caught.value, IcefloeError)
    table.refresh()
    assert table.metadata_location == location
    assert _files(table) == files
