"""Small shims over PySpark APIs whose public form needs more than icefloe does."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType


def map_in_arrow(
    df: DataFrame, func: Callable[[Iterator[Any]], Iterator[Any]], schema: StructType
) -> DataFrame:
    """``df.mapInArrow(func, schema)``, also when pandas is not installed.

    PySpark's ``mapInArrow`` builds its UDF through ``pandas_udf``, which refuses to run without
    pandas although Arrow map functions never touch it. Without pandas the same UDF is built one
    level down (``vectorized_udf``) and handed to the JVM's ``mapInArrow`` directly.
    Fails with a ValidationError naming the fix when the workers cannot import icefloe.
    """
    from icefloe.spark.workers import require_icefloe_on_workers

    require_icefloe_on_workers(df.sparkSession)
    if importlib.util.find_spec("pandas") is not None:
        return df.mapInArrow(func, schema)
    from pyspark.sql import DataFrame
    from pyspark.sql.pandas.functions import vectorized_udf  # type: ignore[attr-defined]
    from pyspark.util import PythonEvalType

    udf = vectorized_udf(func, schema, PythonEvalType.SQL_MAP_ARROW_ITER_UDF, "pandas")
    column = udf(*[df[c] for c in df.columns])
    return DataFrame(df._jdf.mapInArrow(column._jc, False, None), df.sparkSession)
