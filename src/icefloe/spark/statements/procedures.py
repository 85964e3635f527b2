"""CALL catalog.system.<procedure>(...)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from icefloe.spark.statements.errors import UnsupportedStatement
from icefloe.spark.statements.names import SqlContext
from icefloe.spark.statements.parse import TokenCursor

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def call(ctx: SqlContext, cursor: TokenCursor) -> DataFrame | None:
    """Run a stored procedure."""
    raise UnsupportedStatement("CALL")
