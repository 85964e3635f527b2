"""Replacing a table's definition in place: field ids reused by name path, history kept, main removed."""

from __future__ import annotations

import pyarrow as pa
import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import CommitConflict, ValidationError
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import ListType, LongType, NestedField, StringType, StructType
from icefloe.txn.producers import AppendFiles
from icefloe.txn.replace_table import ReplacementAppend, ReplaceTable, reuse_field_ids

pytestmark = [pytest.mark.catalog_namespaces("db")]

BASE = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "tags", ListType(4, StringType(), False), False),
    NestedField(3, "s", StructType(NestedField(5, "a", LongType(), False)), False),
)


def test_reuse_field_ids_by_name_path() -> None:
    new = Schema(
        NestedField(
            1, "s", StructType(NestedField(2, "a", LongType(), False), NestedField(3, "b", LongType())), False
        ),
        NestedField(4, "tags", ListType(5, StringType(), False), False),
        NestedField(6, "n", StringType(), False),
    )
    fresh, mapping = reuse_field_ids(new, BASE, 5)
    s, tags, n = fresh.fields
    assert (s.field_id, tags.field_id, n.field_id) == (3, 2, 6)
    assert [f.field_id for f in s.field_type.fields] == [5, 7]  # type: ignore[union-attr]
    assert tags.field_type.element_id == 4  # type: ignore[union-attr]
    assert mapping == {1: 3, 2: 5, 3: 7, 4: 2, 5: 4, 6: 6}


@pytest.mark.parametrize("fv", [2, 3, 4])
def test_replace_keeps_history_and_removes_main(catalog: Catalog, fv: int) -> None:
    spec = PartitionSpec(PartitionField(1, 1000, IdentityTransform(), "id"))
    table = catalog.create_table("db.t", BASE, spec, properties={"format-version": str(fv), "a": "1"})
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    old = table.refresh().current_snapshot()
    assert old is not None
    new_schema = Schema(NestedField(10, "id", LongType(), True), NestedField(11, "v", StringType(), False))
    new_spec = PartitionSpec(PartitionField(10, 1000, IdentityTransform(), "id"))
    with table.transaction() as tx:
        tx.add_action(ReplaceTable(new_schema, new_spec, {"b": "2"}))
    t = table.refresh()
    assert t.current_snapshot() is None and [s.snapshot_id for s in t.snapshots()] == [old.snapshot_id]
    assert [(f.field_id, f.name) for f in t.schema().fields] == [(1, "id"), (6, "v")]
    assert t.spec().fields[0].field_id == 1000 and t.spec().spec_id == 0  # the same spec, reused
    assert (t.properties["a"], t.properties["b"]) == ("1", "2")
    assert t.to_arrow().num_rows == 0
    assert t.scan(snapshot_id=old.snapshot_id).to_arrow().column("id").to_pylist() == [1, 2]
    # replacement and an append in one transaction (REPLACE ... AS SELECT): a snapshot without parent
    with t.transaction() as tx:
        tx.add_action(ReplaceTable(new_schema, PartitionSpec(), {}))
        tx.add_action(AppendFiles(files=[]))
    t = t.refresh()
    current = t.current_snapshot()
    assert current is not None and current.parent_snapshot_id is None and len(t.snapshots()) == 2
    assert t.spec().fields == ()
    # the rows were written for another spec than the replacement ends up with: refused
    with pytest.raises(CommitConflict, match="concurrent commit"), t.transaction() as tx:
        tx.add_action(ReplaceTable(new_schema, PartitionSpec(), {}))
        tx.add_action(ReplacementAppend(files=[], schema=t.schema(), spec_id=t.spec().spec_id + 5))
    assert len(t.refresh().snapshots()) == 2
    with pytest.raises(ValidationError, match="format version"), t.transaction() as tx:
        tx.add_action(ReplaceTable(new_schema, PartitionSpec(), {"format-version": "1"}))
