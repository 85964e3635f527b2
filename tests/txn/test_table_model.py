"""Model-based test: random sequences of table operations against a plain Python model of the rows.

A hypothesis state machine drives a real table (SQLite catalog, local warehouse) through appends,
overwrites, deletes and updates (copy-on-write and merge-on-read), equality deletes, schema
evolution (add with and without an initial default, drop, rename, widen), partition evolution,
maintenance (compaction, manifest and position-delete rewrites, snapshot expiry) and, for the v3
table, an upgrade to v4 midway. After every step the table must read exactly as the model
(``tests.support.table_model``) says; reads with random filters must return the model's rows
that the filter holds for (this is where partition, metrics and v4 statistics pruning would drop
or keep the wrong files); every snapshot still alive must read as it did when it was committed,
and an expired one must be refused with an icefloe error. v2 and v3 tables are also read by
PyIceberg and DuckDB, which must agree.

Derandomised so CI runs the same sequences each time; ``ICEFLOE_PROPERTY_EXAMPLES`` (sequences
per format version) and ``ICEFLOE_PROPERTY_STEPS`` (steps per sequence) search further locally,
``ICEFLOE_PROPERTY_RANDOM=1`` with ``pytest --hypothesis-seed=N`` searches other sequences, and
``ICEFLOE_PROPERTY_SHRINK=0`` reports a failure without spending minutes shrinking it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from decimal import Decimal
from typing import Any

import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import IcefloeError
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import DecimalType, FloatType, IntegerType, LongType, NestedField, StringType
from icefloe.table.table import Table
from tests.support.interop import read_with_duckdb, read_with_pyiceberg
from tests.support.table_model import (
    STRINGS,
    WIDER,
    Both,
    Column,
    Compare,
    Filter,
    InList,
    IsNull,
    Not,
    TableModel,
    kept,
)

EXAMPLES = int(os.environ.get("ICEFLOE_PROPERTY_EXAMPLES", "3"))
STEPS = int(os.environ.get("ICEFLOE_PROPERTY_STEPS", "12"))
# hunting locally with many examples: ICEFLOE_PROPERTY_SHRINK=0 reports the first failing sequence as is
PHASES = tuple(p for p in Phase if p is not Phase.shrink or os.environ.get("ICEFLOE_PROPERTY_SHRINK") != "0")
MODES = st.sampled_from(["copy-on-write", "merge-on-read"])

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "grp", IntegerType(), False),
    NestedField(3, "val", IntegerType(), False),
    NestedField(4, "score", FloatType(), False),
    NestedField(5, "amount", DecimalType(9, 2), False),
    NestedField(6, "name", StringType(), False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "grp"))
START_COLUMNS = [
    Column(1, "id", "long", required=True),
    Column(2, "grp", "int"),
    Column(3, "val", "int"),
    Column(4, "score", "float"),
    Column(5, "amount", "decimal(9,2)"),
    Column(6, "name", "string"),
]

# values every float32 holds exactly, so a read (and a widening to double) returns them unchanged
FLOATS = (-1.5, 0.0, 0.5, 2.25, 7.0)
DECIMALS = (Decimal("-1.25"), Decimal("0.00"), Decimal("3.50"), Decimal("99.99"))


def _values(kind: str) -> st.SearchStrategy[Any]:
    if kind in ("int", "long"):
        return st.integers(-3, 12)
    if kind in ("float", "double"):
        return st.sampled_from(FLOATS)
    if kind.startswith("decimal"):
        return st.sampled_from(DECIMALS)
    return st.sampled_from(STRINGS)


def _maybe_null(kind: str) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), _values(kind))


def _predicate(model: TableModel, data: st.DataObject, depth: int = 0) -> Filter:
    """A random filter over the model's current columns."""
    shape = data.draw(
        st.sampled_from(["cmp", "cmp", "in", "null"] + (["not", "and", "or"] if depth < 2 else []))
    )
    if shape == "not":
        return Not(_predicate(model, data, depth + 1))
    if shape in ("and", "or"):
        return Both(_predicate(model, data, depth + 1), _predicate(model, data, depth + 1), shape == "or")
    column = data.draw(st.sampled_from(model.columns))
    if shape == "null":
        return IsNull(column.name)
    if shape == "in":
        values = data.draw(st.lists(_values(column.kind), min_size=1, max_size=3, unique=True))
        return InList(column.name, tuple(values))
    op = data.draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
    return Compare(column.name, op, data.draw(_values(column.kind)))


class TableMachine(RuleBasedStateMachine):
    """One table and its model; subclasses choose the format version."""

    format_version = 2

    def __init__(self) -> None:
        super().__init__()
        self.root = tempfile.mkdtemp(prefix="icefloe-model-")
        catalog = SqlCatalog("model", uri=f"sqlite:///{self.root}/catalog.db", warehouse=f"{self.root}/wh")
        catalog.create_namespace(("db",))
        self.table: Table = catalog.create_table(
            ("db", f"t_{uuid.uuid4().hex[:8]}"),
            SCHEMA,
            partition_spec=SPEC,
            properties={"format-version": str(self.format_version)},
        )
        self.model = TableModel(columns=list(START_COLUMNS))
        self.partition_sources = {2}  # field ids any partition spec used: never dropped
        self.partitioned_by = {
            (2, "identity"): "grp"
        }  # current partition fields: (source, transform) -> name
        self.snapshots: dict[int, tuple[list[str], list[dict[str, Any]]]] = {}
        self.upgraded = False

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    # ---- helpers ---------------------------------------------------------------------------
    def _remember_snapshot(self) -> None:
        snapshot = self.table.current_snapshot()
        if snapshot is not None and snapshot.snapshot_id not in self.snapshots:
            columns = [c.name for c in self.model.columns]
            self.snapshots[snapshot.snapshot_id] = (columns, self.model.visible())

    def _new_rows(self, data: st.DataObject, count: int) -> dict[int, dict[int, Any]]:
        rows: dict[int, dict[int, Any]] = {}
        for _ in range(count):
            row = {1: self.model.next_id}
            for column in self.model.columns[1:]:
                values = st.integers(0, 3) if column.field_id == 2 else _values(column.kind)
                row[column.field_id] = data.draw(st.one_of(st.none(), values))
            rows[self.model.next_id] = row
            self.model.next_id += 1
        return rows

    def _filter_text(self, predicate: Filter) -> str:
        return predicate.text()

    def _matching_ids(self, predicate: Filter) -> set[int]:
        return {row["id"] for row in kept(self.model.visible(), predicate)}

    # ---- data changes ------------------------------------------------------------------------
    @initialize(data=st.data())
    def start_with_rows(self, data: st.DataObject) -> None:
        rows = self._new_rows(data, 8)
        self.table.append(self.model.arrow_rows(rows))
        self.model.rows.update(rows)
        self._remember_snapshot()

    @rule(data=st.data(), count=st.integers(1, 10), files=st.integers(1, 3))
    def append(self, data: st.DataObject, count: int, files: int) -> None:
        """Appends in one snapshot of up to three files (each split by partition too)."""
        rows = self._new_rows(data, count)
        ids = list(rows)
        with self.table.transaction() as tx:
            for part in range(files):
                chunk = {i: rows[i] for i in ids[part::files]}
                if chunk:
                    tx.append(self.model.arrow_rows(chunk))
        self.model.rows.update(rows)
        self._remember_snapshot()

    @rule(data=st.data(), count=st.integers(0, 6))
    def overwrite(self, data: st.DataObject, count: int) -> None:
        predicate = _predicate(self.model, data)
        rows = self._new_rows(data, count)
        self.table.overwrite(self.model.arrow_rows(rows), predicate.text())
        for i in self._matching_ids(predicate):
            del self.model.rows[i]
        self.model.rows.update(rows)
        self._remember_snapshot()

    @rule(data=st.data(), mode=MODES)
    def delete(self, data: st.DataObject, mode: str) -> None:
        predicate = _predicate(self.model, data)
        self.table.delete(predicate.text(), mode=mode)
        for i in self._matching_ids(predicate):
            del self.model.rows[i]
        self._remember_snapshot()

    @rule(data=st.data(), mode=MODES)
    def update(self, data: st.DataObject, mode: str) -> None:
        """Increment ``val`` (whatever it is called now) and set a string column, where the filter holds."""
        predicate = _predicate(self.model, data)
        targets: dict[str, Any] = {}
        counter = self.model.column(3)
        text = next((c for c in self.model.columns if c.kind == "string"), None)
        if counter is not None:
            targets[counter.name] = pc.field(counter.name) + 1
        if text is not None:
            targets[text.name] = "u"
        if not targets:
            return
        self.table.update(targets, predicate.text(), mode=mode)
        for i in self._matching_ids(predicate):
            row = self.model.rows[i]
            if counter is not None and row[3] is not None:
                row[3] += 1
            if text is not None:
                row[text.field_id] = "u"
        self._remember_snapshot()

    @rule(picks=st.lists(st.integers(0, 10_000), min_size=1, max_size=4))
    def delete_by_key(self, picks: list[int]) -> None:
        """Equality deletes keyed on ``id`` and every partition source column (icefloe scopes
        equality deletes to partitions, so the key must cover them); a null key matches null."""
        keys = [c for c in self.model.columns if c.field_id == 1 or c.field_id in self.partition_sources]
        live = sorted(self.model.rows)
        chosen: dict[int, dict[int, Any]] = {}
        for p in picks:
            if live and p % 3:
                row = self.model.rows[live[p % len(live)]]
                chosen[row[1]] = {c.field_id: row[c.field_id] for c in keys}
            else:  # a key no row has
                chosen[10_000 + p] = {1: 10_000 + p}
        names = [c.name for c in keys]
        self.table.delete_by_key(self.model.arrow_rows(chosen).select(names), on=names)
        for key in chosen.values():
            hit = self.model.rows.get(key[1])
            if hit is not None and all(hit[f] == key.get(f) for f in key):
                del self.model.rows[key[1]]
        self._remember_snapshot()

    # ---- schema evolution --------------------------------------------------------------------
    @rule(kind=st.sampled_from(["int", "string", "decimal(9,2)"]), data=st.data())
    def add_column(self, kind: str, data: st.DataObject) -> None:
        default = data.draw(_maybe_null(kind)) if self.table.format_version >= 3 else None
        name = f"c{self.table.metadata.last_column_id + 1}"
        with self.table.update_schema() as update:
            update.add_column(name, kind, initial_default=default)
        field_id = self.table.schema().find_field(name).field_id
        self.model.add_column(Column(field_id, name, kind, default=default))

    @rule(data=st.data())
    def drop_column(self, data: st.DataObject) -> None:
        droppable = [c for c in self.model.columns[1:] if c.field_id not in self.partition_sources]
        if not droppable:
            return
        column = data.draw(st.sampled_from(droppable))
        with self.table.update_schema() as update:
            update.delete_column(column.name)
        self.model.drop_column(column.name)

    @rule(data=st.data())
    def rename_column(self, data: st.DataObject) -> None:
        column = data.draw(st.sampled_from(self.model.columns[1:]))
        new_name = f"{column.name.split('_r')[0]}_r{len(self.snapshots)}"
        if any(c.name == new_name for c in self.model.columns):
            return
        with self.table.update_schema() as update:
            update.rename_column(column.name, new_name)
        self.model.rename_column(column.name, new_name)

    @rule(data=st.data())
    def widen_column(self, data: st.DataObject) -> None:
        widenable = [c for c in self.model.columns if c.kind in WIDER]
        if not widenable:
            return
        column = data.draw(st.sampled_from(widenable))
        with self.table.update_schema() as update:
            update.update_column(column.name, WIDER[column.kind])
        self.model.widen_column(column.name)

    # ---- partition evolution -----------------------------------------------------------------
    @rule(data=st.data())
    def evolve_partitioning(self, data: st.DataObject) -> None:
        """Add a bucket / truncate / identity field, or remove one (the data reads the same)."""
        choices: list[tuple[Column, str]] = [(self.model.named("id"), "bucket[4]")]
        choices += [(c, "truncate[1]") for c in self.model.columns if c.kind == "string"][:1]
        choices += [(c, "identity") for c in self.model.columns if c.field_id == 2]
        addable = [c for c in choices if (c[0].field_id, c[1]) not in self.partitioned_by]
        remove = bool(self.partitioned_by) and (not addable or data.draw(st.booleans()))
        with self.table.update_spec() as update:
            if remove:
                key = data.draw(st.sampled_from(sorted(self.partitioned_by)))
                update.remove_field(self.partitioned_by.pop(key))
            else:
                column, transform = data.draw(st.sampled_from(addable))
                name = f"p{column.field_id}_{transform[:5]}_{len(self.snapshots)}"
                update.add_field(column.name, transform, name)
                self.partitioned_by[(column.field_id, transform)] = name
                self.partition_sources.add(column.field_id)

    # ---- maintenance -------------------------------------------------------------------------
    @rule(rewrite_all=st.booleans())
    def compact(self, rewrite_all: bool) -> None:
        self.table.maintenance.rewrite_data_files(rewrite_all=rewrite_all, min_input_files=1)
        self._remember_snapshot()

    @rule()
    def rewrite_manifests(self) -> None:
        from icefloe.maintenance.rewrite_manifests import rewrite_manifests

        rewrite_manifests(self.table)
        self._remember_snapshot()

    @precondition(lambda self: self.table.format_version == 2)
    @rule()
    def rewrite_position_deletes(self) -> None:
        from icefloe.maintenance.rewrite_position_deletes import rewrite_position_delete_files

        rewrite_position_delete_files(self.table, min_delete_files=1)
        self._remember_snapshot()

    @rule(keep=st.integers(1, 4))
    def expire_snapshots(self, keep: int) -> None:
        self.table.maintenance.expire_snapshots(older_than=int(time.time() * 1000) + 60_000, retain_last=keep)

    @precondition(lambda self: self.format_version == 3 and not self.upgraded)
    @rule()
    def upgrade_to_v4(self) -> None:
        self.table.upgrade_format_version(4)
        self.upgraded = True

    # ---- reads -------------------------------------------------------------------------------
    @invariant()
    def reads_as_the_model(self) -> None:
        self.table.refresh()
        result = self.table.scan().to_arrow()
        assert result.column_names == [c.name for c in self.model.columns]
        assert sorted(result.to_pylist(), key=lambda r: r["id"]) == self.model.visible()

    @rule(data=st.data())
    def read_with_filter(self, data: st.DataObject) -> None:
        for _ in range(3):
            predicate = _predicate(self.model, data)
            result = self.table.scan(filter=predicate.text()).to_arrow().to_pylist()
            expected = kept(self.model.visible(), predicate)
            assert sorted(result, key=lambda r: r["id"]) == expected, predicate.text()

    @rule(data=st.data())
    def time_travel(self, data: st.DataObject) -> None:
        """A live snapshot reads as it did when committed; an expired one is refused cleanly."""
        if not self.snapshots:
            return
        snapshot_id = data.draw(st.sampled_from(sorted(self.snapshots)))
        columns, rows = self.snapshots[snapshot_id]
        if snapshot_id not in {s.snapshot_id for s in self.table.snapshots()}:
            with pytest.raises(IcefloeError):
                self.table.scan(snapshot_id=snapshot_id).to_arrow()
            return
        result = self.table.scan(snapshot_id=snapshot_id).to_arrow()
        assert result.column_names == columns
        assert sorted(result.to_pylist(), key=lambda r: r["id"]) == rows

    @precondition(lambda self: self.table.format_version <= 3)
    @rule()
    def other_readers_agree(self) -> None:
        """PyIceberg and DuckDB read the newest snapshot without equality deletes as the model did.

        Neither can check equality deletes: PyIceberg 0.12 refuses them (pointing to
        apache/iceberg#6568), and DuckDB 1.5.5 fails on the (id, grp) keys this test writes with
        "INTERNAL Error: Expected unified vector format of type INT32, but found type INT64" (or
        "Comparison on NULL values" when a key column holds nulls in the data) and then
        invalidates its connection; no upstream issue found. Their snapshots are skipped.
        """
        location = self.table.metadata_location
        assert location is not None
        readable = [
            s.snapshot_id
            for s in self.table.snapshots()
            if s.snapshot_id in self.snapshots and s.summary.get("total-equality-deletes", "0") == "0"
        ]
        if not readable:
            return
        snapshot_id = readable[-1]
        columns, rows = self.snapshots[snapshot_id]
        for reader in (read_with_pyiceberg, read_with_duckdb):
            result = reader(location, snapshot_id=snapshot_id)
            assert result.column_names == columns, reader.__name__
            assert sorted(result.to_pylist(), key=lambda r: r["id"]) == rows, reader.__name__


def _case(version: int) -> Any:
    machine = type(f"TableMachineV{version}", (TableMachine,), {"format_version": version})
    case = machine.TestCase
    case.settings = settings(
        max_examples=EXAMPLES,
        stateful_step_count=STEPS,
        deadline=None,
        derandomize=os.environ.get("ICEFLOE_PROPERTY_RANDOM") != "1",  # 1: pytest --hypothesis-seed=N
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        report_multiple_bugs=False,
        phases=PHASES,
    )
    return case


TestTableModelV2 = _case(2)
TestTableModelV3 = _case(3)  # upgraded to v4 midway when the sequence draws it
TestTableModelV4 = _case(4)
