"""Compaction on Spark: executors rewrite the file groups, the driver commits one ``replace`` snapshot."""

from __future__ import annotations

from pathlib import Path

import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.io.fileio import local_path
from icefloe.spark import rewrite_data_files
from icefloe.tree.locations import LocationProvider
from tests.maintenance.helpers import data_paths, delete_file_count, delete_ids, make_table, rows_by_id
from tests.support.interop import read_with_pyiceberg


def _staged_files(table) -> set[str]:  # type: ignore[no-untyped-def]
    """Files under the Spark staging directories of the table's data location."""
    root = Path(local_path(LocationProvider(table.metadata).data_location))
    return {"file://" + str(p) for d in root.glob("spark-*") for p in d.rglob("*") if p.is_file()}


@pytest.mark.parametrize("fv", [2, 3, 4])
def test_spark_rewrite_applies_deletes_keeps_rows_and_lineage(
    spark, catalog: Catalog, table_name: str, fv: int
) -> None:
    table = make_table(catalog, table_name, fv)  # 9 files, ids 0..89
    deleted = {2, 5, 30, 61, 62}
    delete_ids(table, deleted)
    before = rows_by_id(table)
    assert sorted(before) == sorted(set(range(90)) - deleted)
    base = table.current_snapshot()
    assert base is not None and delete_file_count(table) > 0
    n_snapshots = len(table.snapshots())

    result = rewrite_data_files(spark, table_name)

    assert result.snapshot is not None and result.snapshot.operation == "replace"
    assert result.rewritten_data_files == 9 and result.added_data_files == 3
    table.refresh()
    assert len(table.snapshots()) == n_snapshots + 1
    assert rows_by_id(table) == before  # _row_id / _last_updated_sequence_number unchanged on v3+
    assert delete_file_count(table) == 0
    live = data_paths(table)
    assert len(live) == 3
    assert _staged_files(table) == live  # nothing left behind by the job
    if fv < 4:
        assert sorted(read_with_pyiceberg(table.metadata_location)["id"].to_pylist()) == sorted(before)


def test_spark_rewrite_with_filter_and_bad_input(spark, catalog: Catalog, table_name: str) -> None:
    table = make_table(catalog, table_name, 3)
    delete_ids(table, {0, 1})  # partitions a and b
    before = rows_by_id(table)
    untouched = {p for p in data_paths(table) if "cat=c" in p}
    location = table.metadata_location
    with pytest.raises(ValidationError, match="nope"):
        rewrite_data_files(spark, table_name, filter="nope > 1")
    assert table.refresh().metadata_location == location

    result = rewrite_data_files(spark, table_name, filter="cat in ('a', 'b')")

    assert result.rewritten_data_files == 6 and result.added_data_files == 2
    assert result.removed_delete_files == 2  # one DV per touched file
    assert untouched <= data_paths(table)
    assert rows_by_id(table) == before
    assert delete_file_count(table) == 0
