"""Metrics of files written by Spark's Parquet writer: NaN and infinities in float/double columns
(issue 13, item 10b), and NaN filter semantics of each route."""

from __future__ import annotations

import math
import struct
from decimal import Decimal

import pyarrow as pa
from pyspark.sql import functions as F

from icefloe.catalog.base import Catalog
from icefloe.spark import create_table, read_table, write_table
from icefloe.spark.views import create_view

NAN, INF = float("nan"), float("inf")
# (id, d double, f float): NaN, +-inf, nulls and ordinary values
ROWS = [
    (0, NAN, NAN),
    (1, INF, 1.5),
    (2, -INF, -2.5),
    (3, 0.5, NAN),
    (4, None, None),
    (5, 2.0, INF),
    (6, NAN, -INF),
]


def _frame(spark):  # type: ignore[no-untyped-def]
    return spark.createDataFrame(ROWS, "id BIGINT, d DOUBLE, f FLOAT").repartition(1)


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return a == b


def test_nan_and_infinities_round_trip_with_spec_metrics(spark, catalog: Catalog, table_name: str) -> None:  # type: ignore[no-untyped-def]
    create_table(spark, table_name, "id BIGINT, d DOUBLE, f FLOAT")
    write_table(_frame(spark), table_name)
    table = catalog.load_table(table_name)
    got = sorted(read_table(spark, table_name).collect(), key=lambda r: r["id"])
    assert len(got) == len(ROWS)
    for row, want in zip(got, ROWS, strict=True):
        assert all(_same(a, b) for a, b in zip(tuple(row), want, strict=True)), (row, want)
    arrow = table.scan().to_arrow().sort_by("id")
    assert [_same(a, b) for a, b in zip(arrow.column("d").to_pylist(), [r[1] for r in ROWS], strict=True)]

    (data_file,) = [t.data_file for t in table.scan().plan_files()]
    d_id, f_id = table.schema().find_field("d").field_id, table.schema().find_field("f").field_id
    assert data_file.nan_value_counts == {d_id: 2, f_id: 2}
    assert data_file.null_value_counts[d_id] == 1
    # bounds exclude NaN: infinities are real values
    assert struct.unpack("<d", data_file.lower_bounds[d_id])[0] == -INF
    assert struct.unpack("<d", data_file.upper_bounds[d_id])[0] == INF
    assert struct.unpack("<f", data_file.lower_bounds[f_id])[0] == -INF
    assert struct.unpack("<f", data_file.upper_bounds[f_id])[0] == INF


def test_nan_only_column_has_no_bounds(spark, catalog: Catalog, table_name: str) -> None:  # type: ignore[no-untyped-def]
    create_table(spark, table_name, "id BIGINT, d DOUBLE")
    write_table(spark.createDataFrame([(1, NAN), (2, NAN)], "id BIGINT, d DOUBLE").repartition(1), table_name)
    table = catalog.load_table(table_name)
    (data_file,) = [t.data_file for t in table.scan().plan_files()]
    d_id = table.schema().find_field("d").field_id
    assert data_file.nan_value_counts == {d_id: 2}
    assert d_id not in data_file.lower_bounds and d_id not in data_file.upper_bounds
    assert table.scan(filter="d is nan").to_arrow().num_rows == 2  # not pruned


def test_nan_filters_per_route(spark, catalog: Catalog, table_name: str) -> None:  # type: ignore[no-untyped-def]
    """icefloe filters follow Iceberg (a comparison never matches NaN) on every route; SQL on a view
    follows Spark (NaN = NaN, NaN above every value) because Spark applies its own filters."""
    create_table(spark, table_name, "id BIGINT, d DOUBLE, f FLOAT")
    write_table(_frame(spark), table_name)
    table = catalog.load_table(table_name)
    for text, want in (
        ("d > 1.0", [1, 5]),
        ("d >= 0.5", [1, 3, 5]),
        ("d < 1.0", [2, 3]),
        ("not (d > 1.0)", [2, 3]),
        ("d is nan", [0, 6]),
        ("d is not nan", [1, 2, 3, 4, 5]),
        ("f > 0", [1, 5]),
    ):
        python = sorted(table.scan(filter=text).to_arrow().column("id").to_pylist())
        spark_route = sorted(r["id"] for r in read_table(spark, table_name, filter=text).collect())
        assert python == want, text
        assert spark_route == want, text
    create_view(spark, "nan_view", table_name)

    def ids(where: str) -> list[int]:
        return sorted(r[0] for r in spark.sql(f"SELECT id FROM nan_view WHERE {where}").collect())

    assert ids("d > 1.0") == [0, 1, 5, 6]  # Spark: NaN is greater than any other value
    assert ids("d = double('NaN')") == [0, 6]  # Spark: NaN = NaN
    assert ids("isnan(f)") == [0, 3]
    assert ids("d < 1.0") == [2, 3]
    assert _frame(spark).filter(F.col("d") > 1.0).count() == 4  # the same semantics as plain Spark


def test_arrow_table_with_nan_from_python(catalog: Catalog, table_name: str, spark) -> None:  # type: ignore[no-untyped-def]
    """The Python writer and the Spark route agree on NaN counts (same table, two writers)."""
    create_table(spark, table_name, "id BIGINT, d DOUBLE, f FLOAT")
    table = catalog.load_table(table_name)
    table.append(
        pa.table(
            {
                "id": pa.array([r[0] for r in ROWS], pa.int64()),
                "d": pa.array([r[1] for r in ROWS], pa.float64()),
                "f": pa.array([r[2] for r in ROWS], pa.float32()),
            }
        )
    )
    write_table(_frame(spark), table_name)
    table = catalog.load_table(table_name)
    python_file, spark_file = sorted(
        (t.data_file for t in table.scan().plan_files()), key=lambda f: "spark-" in f.file_path
    )
    assert python_file.nan_value_counts == spark_file.nan_value_counts
    assert python_file.lower_bounds == spark_file.lower_bounds
    assert python_file.upper_bounds == spark_file.upper_bounds


def test_decimal_bounds_of_38_digits_are_exact(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Bounds of a decimal(38, 2) column keep every digit (Decimal's context rounds to 28)."""
    import pyarrow.parquet as pq

    from icefloe.formats.arrow_schema import schema_to_arrow
    from icefloe.io.fileio import load_file_io
    from icefloe.spark.footer import data_files_from_footers
    from icefloe.spec.conversions import to_bytes
    from icefloe.spec.schema import Schema
    from icefloe.spec.types import DecimalType, NestedField

    schema = Schema(NestedField(1, "d", DecimalType(38, 2), False))
    low, high = Decimal("-" + "9" * 36 + ".99"), Decimal("9" * 36 + ".98")
    path = str(tmp_path / "d.parquet")
    pq.write_table(
        pa.table({"d": pa.array([high, low, None], pa.decimal128(38, 2))}, schema_to_arrow(schema)), path
    )
    (data_file,) = data_files_from_footers(load_file_io({}, str(tmp_path)), [(path, ())], schema, 0, {})
    assert data_file.lower_bounds == {1: to_bytes(DecimalType(38, 2), low)}
    assert data_file.upper_bounds == {1: to_bytes(DecimalType(38, 2), high)}
