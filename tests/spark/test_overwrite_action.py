"""The driver's static overwrite commit (``spark.commit.build_action``), without a Spark session."""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import CommitConflict
from icefloe.spark.commit import build_action
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField
from icefloe.table.table import Table
from icefloe.txn.data_writer import prepare_arrow_table, write_data_files

SCHEMA = Schema(NestedField(1, "id", LongType(), True))


def _overwrite(table: Table, ids: list[int], row_filter: str) -> None:
    """What a Spark ``overwrite`` job commits once its files are staged."""
    md = table.metadata
    rows = prepare_arrow_table(md, pa.table({"id": pa.array(ids, pa.int64())}))
    action = build_action(table, write_data_files(table.io, md, rows), "overwrite", row_filter)
    assert action is not None
    with table.transaction() as tx:
        tx.add_action(action)


def test_overwrite_of_rows_the_base_lacks_fails_on_a_concurrent_matching_overwrite(tmp_path: Path) -> None:
    """Both jobs replace ``id >= 100`` (nothing yet): serially the second replaces the first's row."""
    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c-{uuid.uuid4().hex}.db", warehouse=str(tmp_path))
    catalog.create_namespace(("db",))
    catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"}).append(
        pa.table({"id": pa.array([1, 2], pa.int64())})
    )
    first, second = catalog.load_table("db.t"), catalog.load_table("db.t")
    _overwrite(first, [100], "id >= 100")
    with pytest.raises(CommitConflict, match="serializable"):
        _overwrite(second, [200], "id >= 100")
    second.refresh()
    assert sorted(second.to_arrow()["id"].to_pylist()) == [1, 2, 100]
    catalog.close()
