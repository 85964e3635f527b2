"""Engines for the row-level conformance suite: one vocabulary, one adapter per front-end.

A conformance test says *what* to change with the neutral values below (``Literal``, ``Scaled``,
``PlusSource``, ``FromSource``, ``SourceBelow``, ``Compare``, ``When``, ``MergeSpec``) and hands
them to an engine, which translates them to its own API: ``PythonEngine`` to ``Table.delete /
update / merge / upsert`` (pyarrow compute expressions), ``SparkEngine`` to
``icefloe.spark.delete_rows / update_rows / merge_into`` (the keyword form of MERGE) or ``merge``
(ordered clauses), with Spark SQL text, ``SqlEngine`` to SQL statements. Filters are icefloe
filter text, which every engine accepts.

An engine that lacks an operation raises ``NotImplementedError`` from it; the suite marks those
combinations ``xfail(strict=True, reason="not implemented: ...")`` (``NOT_IMPLEMENTED``), so the
test fails, and the mark must go, as soon as the operation appears.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.catalog.base import Catalog
from icefloe.table.table import Table

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


@dataclass(frozen=True)
class FromSource:
    """In a MERGE: the source row's ``column``."""

    column: str


Value = Literal | Scaled | PlusSource | FromSource


@dataclass(frozen=True)
class SourceBelow:
    """In a MERGE: the matched source row's ``column`` is below ``bound``."""

    column: str
    bound: int


@dataclass(frozen=True)
class Compare:
    """In a MERGE clause: ``<side>.<column> <op> <value>`` (side ``source`` or ``target``, op ``<``,
    ``>=`` or ``=``)."""

    side: str
    column: str
    op: str
    value: Any


@dataclass(frozen=True)
class When:
    """One ordered MERGE clause: ``kind`` ``matched`` / ``not_matched`` / ``by_source``, ``action``
    ``update`` / ``delete`` / ``insert``; ``values`` None is ``UPDATE SET *`` / ``INSERT *``."""

    kind: str
    action: str
    condition: Compare | None = None
    values: Mapping[str, Value] | None = None


@dataclass(frozen=True)
class MergeSpec:
    """``MERGE INTO target USING source ON on``: the keyword form (the flags that are set), or
    ordered ``clauses`` (then the flags are unused)."""

    on: str
    matched_update: bool | Mapping[str, Value] = False
    matched_delete: bool | SourceBelow = False
    not_matched_insert: bool = False
    not_matched_by_source_delete: bool = False
    clauses: tuple[When, ...] = ()

    def ordered(self) -> tuple[When, ...]:
        """The clauses in order (the keyword form's: matched delete, matched update, insert, by-source
        delete)."""
        if self.clauses:
            return self.clauses
        out: list[When] = []
        if isinstance(self.matched_delete, SourceBelow):
            below = self.matched_delete
            out.append(When("matched", "delete", Compare("source", below.column, "<", below.bound)))
        elif self.matched_delete:
            out.append(When("matched", "delete"))
        if self.matched_update:
            values = None if self.matched_update is True else self.matched_update
            out.append(When("matched", "update", values=values))
        if self.not_matched_insert:
            out.append(When("not_matched", "insert"))
        if self.not_matched_by_source_delete:
            out.append(When("by_source", "delete"))
        return tuple(out)


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


def add_clauses(builder: Any, clauses: tuple[When, ...], condition: Any, value: Any) -> Any:
    """Add the ordered clauses to a MERGE builder (``Table.merge`` or ``icefloe.spark.merge``),
    with ``condition`` / ``value`` translating the neutral conditions and values; then execute."""
    for clause in clauses:
        cond = None if clause.condition is None else condition(clause.condition)
        values = None if clause.values is None else {c: value(v) for c, v in clause.values.items()}
        if clause.action == "insert":
            builder.when_not_matched_insert(values, condition=cond)
        elif clause.kind == "matched" and clause.action == "update":
            builder.when_matched_update(values, condition=cond)
        elif clause.kind == "matched":
            builder.when_matched_delete(cond)
        elif clause.action == "update":
            assert values is not None
            builder.when_not_matched_by_source_update(values, condition=cond)
        else:
            builder.when_not_matched_by_source_delete(cond)
    return builder.execute()


_ARROW_OPS = {"<": operator.lt, ">=": operator.ge, "=": operator.eq}


def _arrow_condition(condition: Compare) -> pc.Expression:
    column = condition.column if condition.side == "target" else f"source.{condition.column}"
    return _ARROW_OPS[condition.op](pc.field(column), condition.value)


def _arrow_value(value: Value) -> Any:
    if isinstance(value, Literal):
        return value.value
    if isinstance(value, Scaled):
        return pc.multiply(pc.field(value.column), value.factor)
    if isinstance(value, FromSource):
        return pc.field(f"source.{value.column}")
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
        add_clauses(
            table.merge(source, on=spec.on, mode=mode), spec.ordered(), _arrow_condition, _arrow_value
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
    if isinstance(value, FromSource):
        return f"source.{value.column}"
    return f"target.{value.column} + source.{value.column}"


def _sql_condition(condition: Compare) -> str:
    return f"{condition.side}.{condition.column} {condition.op} {_sql_literal(condition.value)}"


def _merge_value(value: Value) -> str:
    return _sql_value(value, "target.")


_SPARK_TYPES = {pa.int64(): "bigint", pa.string(): "string"}


class SparkEngine:
    """``icefloe.spark`` row-level functions on the shared SparkSession's catalog."""

    name = "spark"

    def __init__(self, spark: Any) -> None:
        from icefloe.spark.runtime import resolve_catalog

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
        """The keyword form through ``merge_into``, ordered clauses through the ``merge()`` builder,
        with Spark SQL over ``target.*`` / ``source.*``."""
        from icefloe.spark import merge, merge_into

        frame = self._frame(source)
        if spec.clauses:
            builder = merge(frame, table.name, on=spec.on, mode=mode, catalog=self._catalog)
            add_clauses(builder, spec.clauses, _sql_condition, _merge_value)
            return
        update: bool | dict[str, str] = (
            spec.matched_update
            if isinstance(spec.matched_update, bool)
            else {c: _merge_value(v) for c, v in spec.matched_update.items()}
        )
        delete: bool | str = (
            spec.matched_delete
            if isinstance(spec.matched_delete, bool)
            else f"source.{spec.matched_delete.column} < {spec.matched_delete.bound}"
        )
        merge_into(
            frame,
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


# ---------------------------------------------------------------- SQL


class SqlEngine:
    """``icefloe.spark.sql``: DELETE / UPDATE / MERGE INTO text on the shared SparkSession.

    SQL has no per-statement write mode: the table's ``write.<op>.mode`` property is set first
    (a metadata change, no snapshot).
    """

    name = "sql"

    def __init__(self, spark: Any) -> None:
        from icefloe.spark.runtime import resolve_catalog

        self._spark = spark
        self._catalog = resolve_catalog(spark, None)
        if not self._catalog.namespace_exists(("db",)):
            self._catalog.create_namespace(("db",))

    def catalog(self) -> Catalog:
        """The catalog the Spark session is configured with."""
        return self._catalog

    def _run(self, table: Table, operation: str, mode: str, text: str) -> None:
        from icefloe.spark import sql

        table.set_properties(**{f"write.{operation}.mode": mode})
        sql(self._spark, text).collect()
        table.refresh()

    def delete(self, table: Table, where: str, mode: str) -> None:
        """``DELETE FROM t WHERE ...``."""
        self._run(table, "delete", mode, f"DELETE FROM icefloe.{table.name} WHERE {where}")

    def update(self, table: Table, values: Mapping[str, Value], where: str, mode: str) -> None:
        """``UPDATE t SET ... WHERE ...``."""
        sets = ", ".join(f"{c} = {_sql_value(v)}" for c, v in values.items())
        self._run(table, "update", mode, f"UPDATE icefloe.{table.name} SET {sets} WHERE {where}")

    def _source_view(self, source: pa.Table) -> str:
        ddl = ", ".join(f"{field.name} {_SPARK_TYPES[field.type]}" for field in source.schema)
        rows = [tuple(row.values()) for row in source.to_pylist()]
        name = f"conformance_source_{next(_table_numbers)}"
        self._spark.createDataFrame(rows, ddl).createOrReplaceTempView(name)
        return name

    def merge(self, table: Table, source: pa.Table, spec: MergeSpec, mode: str) -> None:
        """``MERGE INTO t AS target USING ... AS source`` with the clauses of ``spec`` in order."""
        clauses = [_sql_clause(c) for c in spec.ordered()]
        view = self._source_view(source)
        text = (
            f"MERGE INTO icefloe.{table.name} AS target USING {view} AS source "
            f"ON target.{spec.on} = source.{spec.on} " + " ".join(clauses)
        )
        self._run(table, "merge", mode, text)

    def upsert(self, table: Table, source: pa.Table, on: str, mode: str) -> None:
        """``MERGE INTO`` with ``UPDATE SET *`` and ``INSERT *``."""
        view = self._source_view(source)
        text = (
            f"MERGE INTO icefloe.{table.name} AS target USING {view} AS source ON target.{on} = source.{on} "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )
        self._run(table, "merge", mode, text)


def _sql_clause(clause: When) -> str:
    """``WHEN ... [AND cond] THEN ...`` of one neutral clause."""
    kind = {"matched": "MATCHED", "not_matched": "NOT MATCHED", "by_source": "NOT MATCHED BY SOURCE"}
    head = f"WHEN {kind[clause.kind]}"
    if clause.condition is not None:
        head += f" AND {_sql_condition(clause.condition)}"
    if clause.action == "delete":
        return f"{head} THEN DELETE"
    if clause.action == "update":
        if clause.values is None:
            return f"{head} THEN UPDATE SET *"
        sets = ", ".join(f"{c} = {_merge_value(v)}" for c, v in clause.values.items())
        return f"{head} THEN UPDATE SET {sets}"
    if clause.values is None:
        return f"{head} THEN INSERT *"
    columns = ", ".join(clause.values)
    values = ", ".join(_merge_value(v) for v in clause.values.values())
    return f"{head} THEN INSERT ({columns}) VALUES ({values})"


ENGINES = ("python", "spark", "sql")
OPERATIONS = ("delete", "update", "merge", "upsert")

# (engine, operation) -> why it is not there yet. A test of a listed pair is a strict xfail.
NOT_IMPLEMENTED: dict[tuple[str, str], str] = {
    ("spark", "upsert"): "icefloe.spark has no upsert (merge_into with update + insert does it)",
}

_table_numbers = itertools.count(1)


def fresh_table_name(engine: RowLevelEngine) -> str:
    """A table name unused in the engine's catalog."""
    return f"db.conformance_{engine.name}_{next(_table_numbers)}"
