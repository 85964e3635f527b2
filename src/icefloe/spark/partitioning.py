"""Iceberg partition transforms as Spark column expressions, and partition directories parsed back.

The native write path adds one string column per partition field (``__icefloe_p0`` ...) holding
``"v" + <exact text of the Iceberg partition value>`` and hands them to ``partitionBy``. The prefix
keeps empty strings apart from nulls (Spark writes both as ``__HIVE_DEFAULT_PARTITION__``). After the
job the driver parses the directory names back into partition tuples, so the values in the
manifests are exactly the ones the data was grouped by.

Values follow Iceberg, not Spark: ``years/months/days/hours`` count from 1970 in UTC whatever the
session time zone; ``bucket[N]`` is ``(murmur3_x86_32(hash input) & INT_MAX) % N`` (computed with
Spark's own Murmur3_x86_32 via ``reflect`` for integer-like sources and with icefloe's
``bucket_hash`` in an Arrow UDF for strings, binary, decimals and uuids).
"""

from __future__ import annotations

import re
import warnings
from decimal import Decimal
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from icefloe.errors import Unsupported, ValidationError
from icefloe.expressions.wrap_zones import wrap_zones
from icefloe.spec.conversions import decimal_to_unscaled, unscaled_to_decimal
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    VoidTransform,
    YearTransform,
)
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
    UUIDType,
)

PARTITION_COLUMN_PREFIX = "__icefloe_p"
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
MICROS_PER_DAY = 86_400_000_000
MICROS_PER_HOUR = 3_600_000_000
INT_MAX = 0x7FFFFFFF
_MURMUR = "org.apache.spark.unsafe.hash.Murmur3_x86_32"
_ESCAPED = re.compile(r"%([0-9A-Fa-f]{2})")


def partition_column_name(index: int) -> str:
    """Name of the helper column holding partition field ``index``."""
    return f"{PARTITION_COLUMN_PREFIX}{index}"


def source_column(schema: Schema, source_id: int) -> Column:
    """The (possibly nested) column a partition field reads."""
    name = schema.find_column_name(source_id)
    if name is None:
        raise ValidationError(f"partition source field {source_id} is not in the schema")
    parts = name.split(".")
    col = F.col("`" + parts[0].replace("`", "``") + "`")
    for part in parts[1:]:
        col = col.getField(part)
    return col


def partition_key_columns(schema: Schema, spec: PartitionSpec) -> list[Column]:
    """One string column per partition field, named ``__icefloe_p<i>``: the encoded Iceberg value."""
    out = []
    for i, pf in enumerate(spec.fields):
        source_type = schema.find_type(pf.source_id)
        value = transform_column(pf, source_type, source_column(schema, pf.source_id))
        result_type = pf.transform.result_type(source_type)
        out.append(F.concat(F.lit("v"), encode_value(value, result_type, pf)).alias(partition_column_name(i)))
    return out


def transform_column(pf: PartitionField, source_type: IcebergType, col: Column) -> Column:
    """The Iceberg partition value of one field as a Spark column (time parts and buckets as int)."""
    t = pf.transform
    if isinstance(t, IdentityTransform):
        return col
    if isinstance(t, VoidTransform):
        return F.lit(None)
    if isinstance(t, BucketTransform):
        return _bucket(col, source_type, t.num_buckets)
    if isinstance(t, TruncateTransform):
        return _truncate(col, source_type, t.width)
    if isinstance(t, YearTransform):
        return (F.year(_as_date(col, source_type)) - F.lit(1970)).cast("int")
    if isinstance(t, MonthTransform):
        d = _as_date(col, source_type)
        return ((F.year(d) - F.lit(1970)) * F.lit(12) + F.month(d) - F.lit(1)).cast("int")
    if isinstance(t, DayTransform):
        return _days(col, source_type)
    if isinstance(t, HourTransform):
        return _floor_div(_micros(col, source_type), MICROS_PER_HOUR).cast("int")
    raise Unsupported(f"partition transform {t} cannot be computed in Spark")


def _micros(col: Column, source_type: IcebergType) -> Column:
    if isinstance(source_type, TimestamptzType):
        return F.unix_micros(col)
    if isinstance(source_type, TimestampType):
        # timestampdiff on TIMESTAMP_NTZ does not depend on the session time zone
        epoch = F.lit("1970-01-01 00:00:00").cast("timestamp_ntz")
        return F.timestamp_diff("MICROSECOND", epoch, col)
    raise Unsupported(f"cannot take microseconds of {source_type}")


def _days(col: Column, source_type: IcebergType) -> Column:
    if isinstance(source_type, DateType):
        return F.unix_date(col)
    return _floor_div(_micros(col, source_type), MICROS_PER_DAY).cast("int")


def _as_date(col: Column, source_type: IcebergType) -> Column:
    """A DATE in UTC for date/time transforms (independent of the session time zone)."""
    if isinstance(source_type, DateType):
        return col
    return F.date_from_unix_date(_days(col, source_type))


def _floor_div(x: Column, d: int) -> Column:
    """Exact floor division of a long column: ``(x - pmod(x, d)) div d``."""
    divisor = F.lit(d).cast("long")
    return F.call_function("div", x - F.pmod(x, divisor), divisor)


def _bucket(col: Column, source_type: IcebergType, n: int) -> Column:
    if isinstance(source_type, IntegerType | LongType | DateType | TimestampType | TimestamptzType):
        if isinstance(source_type, DateType):
            value = F.unix_date(col).cast("long")
        elif isinstance(source_type, TimestampType | TimestamptzType):
            value = _micros(col, source_type)
        else:
            value = col.cast("long")
        hashed = F.call_function("reflect", F.lit(_MURMUR), F.lit("hashLong"), value, F.lit(0)).cast("int")
        return (
            F.when(col.isNull(), F.lit(None))
            .otherwise(F.pmod(hashed.bitwiseAND(F.lit(INT_MAX)), F.lit(n)))
            .cast("int")
        )
    if isinstance(source_type, StringType | BinaryType | DecimalType | UUIDType | FixedType):
        return _bucket_udf(source_type, n)(col)
    raise Unsupported(f"bucket transform on {source_type} is not supported in Spark writes")


def _bucket_udf(source_type: IcebergType, n: int) -> Any:
    """An Arrow UDF computing Iceberg buckets with icefloe's own hash (strings, binary, decimals)."""
    from pyspark.sql import SparkSession
    from pyspark.sql.pandas.functions import arrow_udf
    from pyspark.util import PythonEvalType

    from icefloe.spark.workers import require_icefloe_on_workers

    require_icefloe_on_workers(SparkSession.getActiveSession())

    def bucket(values: Any) -> Any:
        import pyarrow as pa

        if isinstance(source_type, StringType | BinaryType):
            from icefloe.spark.murmur import bucket_strings

            return bucket_strings(values, n)
        from icefloe.spec.transforms import bucket_hash

        out = [None if v is None else (bucket_hash(source_type, v) & INT_MAX) % n for v in values.to_pylist()]
        return pa.array(out, pa.int32())

    with warnings.catch_warnings():  # "prefer type hints": hints cannot name pyarrow types lazily
        warnings.simplefilter("ignore", UserWarning)
        return arrow_udf(bucket, "int", PythonEvalType.SQL_SCALAR_ARROW_UDF)


def _truncate(col: Column, source_type: IcebergType, width: int) -> Column:
    if isinstance(source_type, IntegerType | LongType):
        spark_type = "int" if isinstance(source_type, IntegerType) else "long"
        truncated = col - F.pmod(col, F.lit(width).cast(spark_type))
        zones = wrap_zones(TruncateTransform(width), source_type)
        if zones is not None and zones.low_end is not None and zones.low_wrapped is not None:
            # Java's arithmetic wraps below the minimum (and Spark's ANSI mode would raise there):
            # every value of that zone has the same wrapped partition value
            wrapped = F.lit(zones.low_wrapped[0]).cast(spark_type)
            return F.when(col <= F.lit(zones.low_end).cast(spark_type), wrapped).otherwise(truncated)
        return truncated
    if isinstance(source_type, DecimalType):
        step = Decimal(width).scaleb(-source_type.scale)
        spark_type = f"decimal(38,{source_type.scale})"  # truncating down may need one more digit
        truncated = (col - F.pmod(col, F.lit(step))).cast(spark_type)
        if source_type.precision < 38:
            return truncated
        # the lowest decimal(38, S) values truncate to -10^38 (Java writes it; Spark's decimal(38)
        # cannot hold it and would raise, or write null without ANSI mode): refuse them clearly
        first = unscaled_to_decimal(-((10**38 - 1) // width) * width, source_type.scale)
        message = (
            f"truncate[{width}] of a decimal(38, {source_type.scale}) value below {first} is -10^38, "
            "which Spark's decimal(38) cannot hold: write such rows with the Python API"
        )
        return F.when(col < F.lit(first), F.raise_error(F.lit(message))).otherwise(truncated)
    if isinstance(source_type, StringType | BinaryType):
        return F.substring(col, 1, width)
    raise Unsupported(f"truncate transform on {source_type} is not supported in Spark writes")


# ---------------------------------------------------------------------------------------------
# encoding values into directory names and back


def encode_value(value: Column, result_type: IcebergType, pf: PartitionField) -> Column:
    """Exact text of a partition value (integers for dates and timestamps, hex for bytes)."""
    if isinstance(pf.transform, VoidTransform):
        return F.lit(None).cast("string")
    if isinstance(result_type, DateType) and isinstance(pf.transform, IdentityTransform):
        return F.unix_date(value).cast("string")
    if isinstance(result_type, TimestampType | TimestamptzType):
        return _micros(value, result_type).cast("string")
    if isinstance(result_type, BinaryType | FixedType):
        return F.hex(value)
    return value.cast("string")


def unescape_path_name(text: str) -> str:
    """Undo Spark's partition directory escaping (``%XX`` for reserved ASCII characters)."""
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), text)


def decode_value(text: str | None, result_type: IcebergType) -> Any:
    """An internal Iceberg value from its encoded directory text (None for null)."""
    if text is None:
        return None
    if not text.startswith("v"):
        raise ValidationError(f"unexpected partition directory value {text!r}")
    s = text[1:]
    if isinstance(result_type, IntegerType | LongType | DateType | TimestampType | TimestamptzType):
        return int(s)
    if isinstance(result_type, BooleanType):
        return s.lower() == "true"
    if isinstance(result_type, FloatType | DoubleType):
        return float(s)
    if isinstance(result_type, DecimalType):
        return unscaled_to_decimal(decimal_to_unscaled(Decimal(s), result_type.scale), result_type.scale)
    if isinstance(result_type, BinaryType | FixedType):
        return bytes.fromhex(s)
    if isinstance(result_type, StringType):
        return s
    raise Unsupported(f"cannot decode partition values of type {result_type}")


def parse_partition_dirs(relative_dir: str, schema: Schema, spec: PartitionSpec) -> tuple[Any, ...]:
    """The partition tuple of a file from its directory below the staging root."""
    values: dict[int, str | None] = {}
    for segment in relative_dir.strip("/").split("/"):
        if not segment:
            continue
        name, sep, raw = segment.partition("=")
        name = unescape_path_name(name)
        if not sep or not name.startswith(PARTITION_COLUMN_PREFIX):
            raise ValidationError(f"unexpected directory {segment!r} in the write staging area")
        index = int(name[len(PARTITION_COLUMN_PREFIX) :])
        values[index] = None if raw == HIVE_NULL else unescape_path_name(raw)
    out = []
    for i, pf in enumerate(spec.fields):
        if i not in values:
            raise ValidationError(f"partition field {pf.name!r} missing from staged path {relative_dir!r}")
        result_type = pf.transform.result_type(schema.find_type(pf.source_id))
        out.append(decode_value(values[i], result_type))
    return tuple(out)
