"""Shared helpers for the Spark tests."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa

from icefloe.catalog.sql import SqlCatalog
from icefloe.catalog.sql_views import SqlViews
from icefloe.table.table import Table


def sorted_rows(table: pa.Table, columns: list[str] | None = None) -> list[tuple[Any, ...]]:
    """Rows of an Arrow table as sorted tuples (None sorts first)."""
    cols = columns or table.column_names
    data = [table.column(c).to_pylist() for c in cols]
    rows = list(zip(*data, strict=True)) if data else []
    return sorted(rows, key=lambda r: tuple((v is not None, _key(v)) for v in r))


def _key(v: Any) -> Any:
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v.astimezone(dt.UTC).replace(tzinfo=None)
    if isinstance(v, dict | list):
        return repr(v)
    return v


def df_rows(df: Any, columns: list[str] | None = None) -> list[tuple[Any, ...]]:
    """Rows of a Spark DataFrame (via Arrow), sorted like ``sorted_rows``."""
    table = df.toArrow()
    return sorted_rows(_utc(table), columns)


def _utc(table: pa.Table) -> pa.Table:
    cols = []
    for field in table.schema:
        col = table.column(field.name)
        if pa.types.is_timestamp(field.type) and field.type.tz is not None:
            col = col.cast(pa.timestamp("us", tz="UTC"))
        cols.append(col)
    return pa.Table.from_arrays(cols, names=table.column_names)


def icefloe_rows(table: Table, columns: list[str] | None = None) -> list[tuple[Any, ...]]:
    """Rows of the table's current snapshot read by icefloe's own Arrow reader."""
    table.refresh()
    return sorted_rows(_utc(table.scan().to_arrow()), columns)


def data_files(table: Table) -> list[str]:
    """Data file paths of the current snapshot."""
    table.refresh()
    return sorted(t.file_path for t in table.scan().plan_files())


def dec(text: str) -> Decimal:
    """A Decimal literal."""
    return Decimal(text)


def drop_namespace_with_contents(catalog: SqlCatalog, namespace: str) -> None:
    """Drop a test's namespace after dropping its views and tables (without purge)."""
    views = SqlViews(catalog)
    for ident in views.names(namespace):
        views.drop(ident)
    for ident in catalog.list_tables(namespace):
        catalog.drop_table(ident)
    catalog.drop_namespace(namespace)
