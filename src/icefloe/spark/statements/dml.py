"""placeholder"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def handle(ctx: Any, stmt: Any, tree: Any) -> DataFrame | None:
    """Not handled yet."""
    return None
