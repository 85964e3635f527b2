"""Driver-side DataFrames of row-level changes: the target rows, validated assignments, the change frame.

The change frame has the table's columns (new values, in the table's Spark types), the target
row's ``_file`` / ``_pos`` and lineage columns (v3+), and ``ACTION`` per row; it is clustered by
``_file`` (inserted rows, with no file, are spread by a hash of their values) and sorted by
``_file`` / ``_pos`` within partitions, which is what ``row_writer.write_changes`` expects.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from icefloe.dml.row_io import LINEAGE_COLUMNS, POS_COLUMN
from icefloe.errors import ValidationError
from icefloe.expressions.ast import AlwaysTrue
from icefloe.scan.tasks import FileScanTask
from icefloe.spark.read import ReadPlan, dataframe_for_plan
from icefloe.spark.row_writer import ACTION, FILE_COLUMN
from icefloe.spark.schema import write_projection
from icefloe.spec.schema import Schema
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import NestedField

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

Assignments = Mapping[str, "str | Column"]


def quote(name: str) -> str:
    """A column name quoted for Spark (backticks)."""
    return "`" + name.replace("`", "``") + "`"


def metadata_columns(md: TableMetadata) -> tuple[str, ...]:
    """``_file``, ``_pos`` and, on v3+, the lineage columns."""
    lineage = LINEAGE_COLUMNS if md.format_version >= 3 else ()
    return (FILE_COLUMN, POS_COLUMN, *lineage)


def target_frame(
    spark: SparkSession,
    md: TableMetadata,
    io_properties: dict[str, str],
    tasks: Sequence[FileScanTask],
    case_sensitive: bool = True,
) -> DataFrame:
    """Every live row of the tasks' files (deletes applied) with the metadata columns."""
    schema = md.schema()
    plan = ReadPlan(
        table_schema=schema,
        projected=schema,
        metadata_columns=metadata_columns(md),
        row_filter=AlwaysTrue(),
        case_sensitive=case_sensitive,
        python=[replace(t, residual=AlwaysTrue()) for t in tasks],
        io_properties=dict(io_properties),
        location=md.location,
    )
    return dataframe_for_plan(spark, plan)


@dataclass(frozen=True)
class SubqueryCondition:
    """A Spark SQL condition on the target rows that may hold subqueries (``EXISTS``, ``IN (SELECT
    ...)``, scalar, correlated or not), which a Column cannot: Spark evaluates it in a query over the
    target rows, whose columns the condition names bare or qualified with ``alias``."""

    text: str
    alias: str

    def mark(self, target: DataFrame, name: str) -> DataFrame:
        """``target`` with a boolean column ``name``: whether the condition holds (null: no)."""
        from pyspark.errors import AnalysisException, ParseException

        spark = target.sparkSession
        view = f"__icefloe_target_{uuid.uuid4().hex}"
        target.createOrReplaceTempView(view)
        matched = f"coalesce(({self.text}), false) AS {quote(name)}"
        try:
            return spark.sql(f"SELECT *, {matched} FROM {view} AS {quote(self.alias)}")
        except (AnalysisException, ParseException) as exc:
            raise ValidationError(f"the condition {self.text!r}: {_first_line(exc)}") from None
        finally:
            spark.catalog.dropTempView(view)


def resolve_columns(
    schema: Schema, names: Sequence[str], case_sensitive: bool, what: str
) -> list[NestedField]:
    """Top-level table columns by name; ValidationError naming an unknown or nested one."""
    out = []
    for name in names:
        found = _top_level(schema, name, case_sensitive)
        if found is None:
            columns = ", ".join(f.name for f in schema.fields)
            raise ValidationError(f"{what}: column {name!r} is not in the table (columns: {columns})")
        out.append(found)
    return out


def _top_level(schema: Schema, name: str, case_sensitive: bool) -> NestedField | None:
    for f in schema.fields:
        if f.name == name or (not case_sensitive and f.name.lower() == name.lower()):
            return f
    return None


def assignment_exprs(
    schema: Schema, values: Assignments, case_sensitive: bool, what: str, prefix: str
) -> tuple[list[NestedField], list[Column]]:
    """The assigned table columns and their raw value columns, aliased ``<prefix><i>``.

    A value is a Spark SQL expression string, a Column, or a Python literal.
    """
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    fields = resolve_columns(schema, list(values), case_sensitive, what)
    if len({f.field_id for f in fields}) != len(fields):
        raise ValidationError(f"{what}: a column is assigned twice")
    exprs: list[Column] = []
    for i, (f, value) in enumerate(zip(fields, values.values(), strict=True)):
        try:
            if isinstance(value, str):
                col = F.expr(value)
            elif isinstance(value, Column):
                col = value
            else:
                col = F.lit(value)
        except Exception as exc:
            raise ValidationError(
                f"{what}: cannot parse the value for column {f.name!r}: {_first_line(exc)}"
            ) from None
        exprs.append(col.alias(f"{prefix}{i}"))
    return fields, exprs


def conform_assignments(
    stage_schema: Any, fields: Sequence[NestedField], what: str, prefix: str
) -> dict[str, Column]:
    """Per assigned column, its value conformed to the column's type (``write_projection``'s rules).

    ``stage_schema`` is the schema of a frame holding the raw values as ``<prefix><i>``; a value
    whose type the column cannot take without loss is a ValidationError naming the column; a null
    for a required column fails the job at run time.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    conformed: dict[str, Column] = {}
    for i, f in enumerate(fields):
        tmp = f"{prefix}{i}"
        source = stage_schema[tmp]
        single = Schema(NestedField(f.field_id, tmp, f.field_type, False))  # nullness checked below
        try:
            projection = write_projection(single, T.StructType([source]), field_ids=False)
        except ValidationError as exc:
            raise ValidationError(f"{what}: " + str(exc).replace(repr(tmp), repr(f.name))) from None
        value = projection.columns[0]
        if f.required and source.nullable:
            if isinstance(source.dataType, T.NullType):
                raise ValidationError(f"{what}: column {f.name!r} is required and cannot be set to null")
            message = f"column {f.name!r} is required but the input has a null value"
            value = F.when(value.isNull(), F.raise_error(F.lit(message))).otherwise(value)
        conformed[f.name] = value
    return conformed


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def change_frame_columns(
    md: TableMetadata,
    old: Mapping[str, Column],
    new_values: Mapping[str, Column],
    action: Column,
    meta: Mapping[str, Column],
    insert_values: Mapping[str, Column] | None = None,
) -> list[Column]:
    """The change frame's columns: per table column the old value, or the new one for updated /
    inserted rows; metadata columns (``_last_updated_sequence_number`` null for updated rows); the action.

    With ``insert_values``, a column it does not set gets its write default (else null; a
    required column without one is a ValidationError).
    """
    from pyspark.sql import functions as F

    from icefloe.spark.row_writer import INSERT, UPDATE
    from icefloe.spark.schema import to_spark_type

    columns: list[Column] = []
    for f in md.schema().fields:
        value = old[f.name]
        if insert_values is not None:
            inserted = insert_values[f.name] if f.name in insert_values else insert_default(f)
            value = F.when(action == F.lit(INSERT), inserted).otherwise(value)
        if f.name in new_values:
            value = F.when(action == F.lit(UPDATE), new_values[f.name]).otherwise(value)
        columns.append(value.cast(to_spark_type(f.field_type, field_ids=False)).alias(f.name))
    for name in metadata_columns(md):
        col = meta[name]
        if name == LINEAGE_COLUMNS[1]:
            col = F.when(action == F.lit(UPDATE), F.lit(None).cast("long")).otherwise(col)
        columns.append(col.alias(name))
    columns.append(action.alias(ACTION))
    return columns


def insert_default(f: NestedField) -> Column:
    """An inserted row's value for a column the insert does not set: write default, else null."""
    from pyspark.sql import functions as F

    from icefloe.spark.schema import spark_literal, to_spark_type

    if f.write_default is not None:
        return F.lit(spark_literal(f.field_type, f.write_default)).cast(to_spark_type(f.field_type, False))
    if f.required:
        raise ValidationError(f"merge: the insert does not set required column {f.name!r}")
    return F.lit(None).cast(to_spark_type(f.field_type, False))
