"""Engines for the row-level conformance suite: one vocabulary, one adapter per front-end.

A conformance test says *what* to change with the neutral values below (``Literal``, ``Scaled``,
``PlusSource``, ``SourceBelow``, ``MergeSpec``) and hands them to an engine, which translates them
to its own API: ``PythonEngine`` to ``Table.delete / update / merge / upsert`` (pyarrow compute
expressions), ``SparkEngine`` to ``icefloe.spark.delete_rows / update_rows / merge_into`` (Spark
SQL text). Filters are icefloe filter text, which every engine accepts.

An engine that lacks an operation raises ``NotImplementedError`` from it; the suite marks those
combinations ``xfail(strict=True, reason="not implemented: ...")`` (``NOT_IMPLEMENTED``), so the
test fails, and the mark must go, as soon as the operation appears. The SQL front-end has a slot
(``SqlEngine``) to be filled in.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.catalog.base import Catalog
from icefloe.catalog.table import Table

# ---------------------------------------------------------------- the neutral vocabulary


@dataclass(frozen=True)
class Literal:
    """A constant value."""

    value: Any


@dataclass(frozen=True)
class Scaled:
    """The target row's ``column`` times ``factor``."""

    column: str
    factor: int


@dataclass(frozen=True)
class PlusSource:
    """In a MERGE: the target row's ``column`` plus the source row's ``column``."""

    column: str


Value = Literal | Scaled | PlusSource


@dataclass(frozen=True)
class SourceBelow:
    """In a MERGE: the matched source row's ``column`` is below ``bound``."""

    column: str
    bound: int


@dataclass(frozen=True)
class MergeSpec:
    """``MERGE INTO target USING source ON on`` with the clauses that are set."""

    on: str
    matched_update: bool | Mapping[str, Value] = False
    matched_delete: bool | SourceBelow = False
    not_matched_insert: bool = False
    not_matched_by_source_delete: bool = False


class RowLevelEngine(Protocol):
    """What a front-end must offer the suite."""

    name: str

    def catalog(self) -> Catalog:
        """The catalog the engine's tables live in (namespace ``db`` exists)."""
        ...

    def delete(self, table: Table, where: str, mode: str) -> None:
        """``DELETE FROM table WHERE where``."""
        ...

    def update(self, table: Table, values: Mapping[str, Value], where: str, mode: str) -> None:
        """``UPDATE table SET values WHERE where``."""
        ...

    def merge(self, table: Table, source: pa.Table, spec: MergeSpec, mode: str) -> None:
        """``MERGE INTO table USING source`` as ``spec`` says."""
        ...

    def upsert(self, table: Table, source: pa.Table, on: str, mode: str) -> None:
        """Replace the rows whose key is in ``source`` by ``source``'s rows, insert the others."""
        ...


# ---------------------------------------------------------------- Python Table API


def _arrow_value(value: Value) -> Any:
    if isinstance(value, Literal):
        return value.value
    if isinstance(value, Scaled):
        return pc.multiply(pc.field(value.column), value.factor)
    return pc.add(pc.field(value.column), pc.field(f"source.{value.column}"))


class PythonEngine:
    """``icefloe`` tables from Python on Arrow data."""

    name = "python"

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog

    def catalog(self) -> Catalog:
        """The test's catalog."""
        return self._catalog

    def delete(self, table: Table, where: str, mode: str) -> None:
        """``Table.delete``."""
        table.delete(where, mode=mode)

    def update(self, table: Table, values: Mapping[str, Value], where: str, mode: str) -> None:
        """``Table.update`` with pyarrow compute expressions."""
        table.update({column: _arrow_value(v) for column, v in values.items()}, where, mode=mode)

    def merge(self, table: Table, source: pa.Table, spec: MergeSpec, mode: str) -> None:
        """``Table.merge`` with pyarrow compute expressions (``source.x`` names the source's x)."""
        update: bool | dict[str, Any] = (
            spec.matched_update
            if isinstance(spec.matched_update, bool)
            else {column: _arrow_value(v) for column, v in spec.matched_update.items()}
        )
        delete: bool | pc.Expression = (
            spec.matched_delete
            if isinstance(spec.matched_delete, bool)
            else pc.field(f"source.{spec.matched_delete.column}") < spec.matched_delete.bound
        )
        table.merge(
            source,
            on=spec.on,
            when_matched_update=update,
            when_matched_delete=delete,
            when_not_matched_insert=spec.not_matched_insert,
            when_not_matched_by_source_delete=spec.not_matched_by_source_delete,
            mode=mode,
        )

    def upsert(self, table: Table, source: pa.Table, on: str, mode: str) -> None:
        """``Table.upsert``."""
        table.upsert(source, on=on, mode=mode)


# ---------------------------------------------------------------- PySpark


def _sql_literal(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


def _sql_value(value: Value, target: str = "") -> str:
    if isinstance(value, Literal):
        return _sql_literal(value.value)
    if isinstance(value, Scaled):
        return f"{target}{value.column} * {value.factor}"
    return f"target.{value.column} + source.{value.column}"


_SPARK_TYPES = {pa.int64(): "bigint", pa.string(): "string"}


class SparkEngine:
    """``icefloe.spark`` row-level functions on the shared SparkSession's catalog."""

    name = "spark"

    def __init__(self, spark: Any) -> None:
        from icefloe.spark.context import resolve_catalog

        self._spark = spark
        self._catalog = resolve_catalog(spark, None)
        if not self._catalog.namespace_exists(("db",)):
            self._catalog.create_namespace(("db",))

    def catalog(self) -> Catalog:
        """The catalog the Spark session is configured with."""
        return self._catalog

    def delete(self, table: Table, where: str, mode: str) -> None:
        """``delete_rows``."""
        from icefloe.spark import delete_rows

        delete_rows(self._spark, table.name, where, mode=mode)

    def update(self, table: Table, values: Mapping[str, Value], where: str, mode: str) -> None:
        """``update_rows`` with Spark SQL values."""
        from icefloe.spark import update_rows

        update_rows(self._spark, table.name, {c: _sql_value(v) for c, v in values.items()}, where, mode=mode)

    def _frame(self, source: pa.Table) -> Any:
        ddl = ", ".join(f"{field.name} {_SPARK_TYPES[field.type]}" for field in source.schema)
        rows = [tuple(row.values()) for row in source.to_pylist()]
        return self._spark.createDataFrame(rows, ddl)

    def merge(self, table: Table, source: pa.Table, spec: MergeSpec, mode: str) -> None:
        """``merge_into`` with Spark SQL over ``target.*`` / ``source.*``."""
        from icefloe.spark import merge_into

        update: bool | dict[str, str] = (
            spec.matched_update
            if isinstance(spec.matched_update, bool)
            else {c: _sql_value(v, "target.") for c, v in spec.matched_update.items()}
        )
        delete: bool | str = (
            spec.matched_delete
            if isinstance(spec.matched_delete, bool)
            else f"source.{spec.matched_delete.column} < {spec.matched_delete.bound}"
        )
        merge_into(
            self._frame(source),
            table.name,
            on=spec.on,
            when_matched_update=update,
            when_matched_delete=delete,
            when_not_matched_insert=spec.not_matched_insert,
            when_not_matched_by_source_delete=spec.not_matched_by_source_delete,
            mode=mode,
            catalog=self._catalog,
        )

    def upsert(self, table: Table, source: pa.Table, on: str, mode: str) -> None:
        """An upsert function of ``icefloe.spark``, once there is one."""
        import icefloe.spark

        upsert = next(
            (getattr(icefloe.spark, n) for n in ("upsert", "upsert_rows") if hasattr(icefloe.spark, n)), None
        )
        if upsert is None:
            raise NotImplementedError("icefloe.spark has no upsert")
        upsert(self._frame(source), table.name, on=on, mode=mode)


# ---------------------------------------------------------------- SQL (slot)


class SqlEngine:
    """The SQL front-end: every operation is to be written (DELETE / UPDATE / MERGE INTO text)."""

    name = "sql"

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog

    def catalog(self) -> Catalog:
        """The catalog the SQL session would run on (no tables are made until the engine exists)."""
        raise NotImplementedError("no SQL front-end yet")

    def delete(self, table: Table, where: str, mode: str) -> None:
        """``DELETE FROM``."""
        raise NotImplementedError("no SQL front-end yet")

    def update(self, table: Table, values: Mapping[str, Value], where: str, mode: str) -> None:
        """``UPDATE``."""
        raise NotImplementedError("no SQL front-end yet")

    def merge(self, table: Table, source: pa.Table, spec: MergeSpec, mode: str) -> None:
        """``MERGE INTO``."""
        raise NotImplementedError("no SQL front-end yet")

    def upsert(self, table: Table, source: pa.Table, on: str, mode: str) -> None:
        """``MERGE INTO`` with update and insert."""
        raise NotImplementedError("no SQL front-end yet")


ENGINES = ("python", "spark", "sql")
OPERATIONS = ("delete", "update", "merge", "upsert")

# (engine, operation) -> why it is not there yet. A test of a listed pair is a strict xfail.
NOT_IMPLEMENTED: dict[tuple[str, str], str] = {
    ("spark", "upsert"): "icefloe.spark has no upsert (merge_into with update + insert does it)",
    **{("sql", op): "the SQL front-end does not exist yet" for op in OPERATIONS},
}

_table_numbers = itertools.count(1)


def fresh_table_name(engine: RowLevelEngine) -> str:
    """A table name unused in the engine's catalog."""
    return f"db.conformance_{engine.name}_{next(_table_numbers)}"
