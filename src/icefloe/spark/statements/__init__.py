"""``icefloe.spark.sql(spark, text)``: Spark SQL on icefloe tables.

Spark has no Python table-catalog API, so icefloe reads the statements itself (sqlglot's Spark
dialect), runs those that touch icefloe tables through icefloe's own machinery (planned reads,
``write_table``, the row-level writers, schema/partition/ref evolution, maintenance) and hands
everything else to ``spark.sql`` unchanged. Modules: ``parse`` (statements, tokens),
``keyword_names`` (keywords Spark reads as names), ``table_options`` (``t WITH ('k' = 'v')``),
``identifier_calls`` (``IDENTIFIER(<expression>)``), ``relations`` (which table nodes name
relations: CTE scopes, hints, table functions), ``names`` (catalog / namespace / ref /
metadata-table names; how a statement's names are found), ``query`` (SELECT), ``metadata`` (metadata
tables, ``changes``), ``functions`` (Iceberg's ``system.*`` functions), ``views`` and
``view_expansion`` (Iceberg views), ``ddl``, ``drop_namespace``, ``alter``, ``dml``, ``truncate``,
``show``, ``procedures``, ``errors``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from icefloe.spark.statements.errors import SqlSyntaxError, UnsupportedStatement

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from icefloe.catalog.base import Catalog

__all__ = ["SqlSyntaxError", "UnsupportedStatement", "sql"]


def sql(spark: SparkSession, text: str, catalog: Catalog | None = None) -> DataFrame:
    """Run one statement or a ``;``-separated script; returns the last statement's result."""
    from icefloe.spark.statements.names import SqlContext
    from icefloe.spark.statements.parse import split_statements
    from icefloe.spark.statements.results import empty
    from icefloe.spark.statements.run import run_statement

    ctx = SqlContext.for_session(spark, catalog)
    statements = split_statements(text)
    result = None
    for stmt in statements:
        ctx._tables.clear()
        result = run_statement(ctx, stmt)
    return result if result is not None else empty(ctx)
