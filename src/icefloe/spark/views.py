"""Tables for Spark SQL: create an icefloe table from a Spark schema, expose it as a temporary view.

Python data sources cannot back persistent catalog tables (``CREATE TABLE ... USING icefloe``,
``saveAsTable`` and ``writeTo`` hand the source empty options), so the SQL route is:

    icefloe.spark.create_table(spark, "ns.t", "id BIGINT NOT NULL, ts TIMESTAMP", partitioned_by=["days(ts)"])
    spark.sql("CREATE TEMPORARY VIEW t USING icefloe OPTIONS (table 'ns.t')")
    spark.sql("INSERT INTO t SELECT ...")          # append
    spark.sql("INSERT OVERWRITE t SELECT ...")     # replace the table's rows
    spark.sql("SELECT ... FROM t WHERE ...")       # reads the snapshot current when the view's plan was made

(``create_view`` runs the CREATE TEMPORARY VIEW statement.)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from icefloe.errors import ValidationError
from icefloe.spark.schema import to_iceberg_schema
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    VoidTransform,
    YearTransform,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql import types as T

    from icefloe.catalog.base import Catalog
    from icefloe.table.table import Table

_CALL = re.compile(r"^\s*(\w+)\s*\((.*)\)\s*$")
_UNARY: dict[str, tuple[type[Transform], str]] = {
    "identity": (IdentityTransform, ""),
    "year": (YearTransform, "_year"),
    "years": (YearTransform, "_year"),
    "month": (MonthTransform, "_month"),
    "months": (MonthTransform, "_month"),
    "day": (DayTransform, "_day"),
    "days": (DayTransform, "_day"),
    "date": (DayTransform, "_day"),
    "hour": (HourTransform, "_hour"),
    "hours": (HourTransform, "_hour"),
    "void": (VoidTransform, "_null"),
}


def parse_partitioning(schema: Schema, partitioned_by: list[str] | tuple[str, ...]) -> PartitionSpec:
    """A spec from Spark-style partition expressions: ``col``, ``days(ts)``, ``bucket(16, id)``,
    ``truncate(4, s)``, ``years/months/hours(ts)``, ``identity(col)``."""
    fields = []
    for i, text in enumerate(partitioned_by):
        m = _CALL.match(text)
        if m is None:
            transform: Transform = IdentityTransform()
            column, suffix = text.strip().strip("`"), ""
        else:
            fn, args = m.group(1).lower(), [a.strip().strip("`") for a in m.group(2).split(",")]
            if fn in _UNARY and len(args) == 1:
                cls, suffix = _UNARY[fn]
                transform, column = cls(), args[0]
            elif fn == "bucket" and len(args) == 2:
                transform, column, suffix = BucketTransform(int(args[0])), args[1], "_bucket"
            elif fn == "truncate" and len(args) == 2:
                transform, column, suffix = TruncateTransform(int(args[0])), args[1], "_trunc"
            else:
                raise ValidationError(f"cannot parse partition expression {text!r}")
        source = schema.find_field(column)
        if not transform.can_transform(source.field_type):
            raise ValidationError(
                f"partition transform {transform} cannot apply to {column!r} ({source.field_type})"
            )
        fields.append(PartitionField(source.field_id, 1000 + i, transform, column.replace(".", "_") + suffix))
    return PartitionSpec(*fields)


def create_table(
    spark: SparkSession,
    identifier: str | tuple[str, ...],
    schema: T.StructType | str | DataFrame | Schema,
    partitioned_by: list[str] | tuple[str, ...] = (),
    properties: dict[str, str] | None = None,
    location: str | None = None,
    catalog: Catalog | dict[str, str] | None = None,
    if_not_exists: bool = False,
) -> Table:
    """Create an icefloe table from a Spark schema (StructType, DDL text or a DataFrame's schema)."""
    from pyspark.sql import DataFrame
    from pyspark.sql import types as T

    from icefloe.spark.runtime import resolve_catalog

    cat = resolve_catalog(spark, catalog)
    if if_not_exists and cat.table_exists(identifier):
        return cat.load_table(identifier)
    if isinstance(schema, Schema):
        ice = schema
    else:
        struct: T.DataType
        if isinstance(schema, DataFrame):
            struct = schema.schema
        elif isinstance(schema, str):
            struct = T._parse_datatype_string(schema)
        else:
            struct = schema
        if not isinstance(struct, T.StructType):
            raise ValidationError(f"expected a struct schema, got {struct}")
        ice = to_iceberg_schema(struct)
    spec = parse_partitioning(ice, list(partitioned_by))
    return cat.create_table(identifier, ice, partition_spec=spec, location=location, properties=properties)


def create_view(spark: SparkSession, view: str, identifier: str, **options: str) -> None:
    """``CREATE OR REPLACE TEMPORARY VIEW <view> USING icefloe OPTIONS (table '<identifier>', ...)``."""
    opts = {"table": identifier, **{k.replace("_", "-"): str(v) for k, v in options.items()}}
    text = ", ".join(f"`{k}` '{_sql_string(v)}'" for k, v in opts.items())
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW `{view}` USING icefloe OPTIONS ({text})")


def _sql_string(value: str) -> str:
    return value.replace("\\", "\\\\").replace("'", "\\'")
