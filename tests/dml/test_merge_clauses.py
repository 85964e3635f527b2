"""MergeSpec's match condition: keys may then be empty; the Python engine, which matches on key
columns only, refuses it before writing anything."""

from __future__ import annotations

import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.dml.merge import plan_merge
from icefloe.dml.merge_clauses import MergeSpec, WhenMatched
from icefloe.errors import Unsupported, ValidationError
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField

pytestmark = pytest.mark.catalog_namespaces("db")


def test_a_match_condition_stands_in_for_keys() -> None:
    spec = MergeSpec((), (WhenMatched("delete"),), condition="target.id BETWEEN source.lo AND source.hi")
    assert spec.on == () and spec.condition is not None
    with pytest.raises(ValidationError, match="at least one key column"):
        MergeSpec((), (WhenMatched("delete"),))


def test_the_python_engine_refuses_a_match_condition(catalog: SqlCatalog) -> None:
    table = catalog.create_table("db.t", Schema(NestedField(1, "id", LongType(), False)))
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    before = table.metadata_location
    spec = MergeSpec(("id",), (WhenMatched("delete"),), condition="target.id > 1")
    source = pa.table({"id": pa.array([2], pa.int64())})
    with pytest.raises(Unsupported, match="key columns only"):
        plan_merge(table.io, table.metadata, table.current_snapshot(), source, spec)
    assert catalog.load_table("db.t").metadata_location == before
