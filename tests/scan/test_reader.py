"""The reader fills identity-partitioned columns a file lacks (imported Hive-style files)
from its partition tuple."""

from __future__ import annotations

import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.catalog.base import Catalog
from icefloe.spark.footer import data_files_from_footers
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import DateType, LongType, NestedField, StringType
from icefloe.txn.producers import AppendFiles

pytestmark = [pytest.mark.catalog_namespaces("db")]

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "k", StringType(), False),
    NestedField(3, "d", DateType(), False),
)


def test_identity_partition_columns_come_from_the_partition_tuple(catalog: Catalog, tmp_path: Path) -> None:
    spec = PartitionSpec(
        PartitionField(2, 1000, IdentityTransform(), "k"), PartitionField(3, 1001, IdentityTransform(), "d")
    )
    table = catalog.create_table("db.t", SCHEMA, spec, properties={"format-version": "2"})
    files = []
    for i, (k, days) in enumerate([("a", 0), ("b", 365)]):
        path = tmp_path / f"k={k}" / f"part-{i}.parquet"  # no field ids, no partition columns
        path.parent.mkdir()
        pq.write_table(pa.table({"id": pa.array([2 * i, 2 * i + 1], pa.int64())}), path)
        files.append((str(path), (k, days)))
    data = data_files_from_footers(table.io, files, table.schema(), 0, table.properties)
    with table.transaction() as tx:
        tx.add_action(AppendFiles(files=data))
    got = table.refresh().scan().to_arrow().sort_by("id").to_pylist()
    epoch = datetime.date(1970, 1, 1)
    assert got == [
        {"id": 0, "k": "a", "d": epoch},
        {"id": 1, "k": "a", "d": epoch},
        {"id": 2, "k": "b", "d": datetime.date(1971, 1, 1)},
        {"id": 3, "k": "b", "d": datetime.date(1971, 1, 1)},
    ]
    assert table.scan(filter="k = 'b'").to_arrow().num_rows == 2
