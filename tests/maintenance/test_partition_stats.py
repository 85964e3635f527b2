"""compute_partition_stats: the spec's partition statistics file (Parquet, field ids 1-13) for a
snapshot, registered through set-partition-statistics."""

from __future__ import annotations

import os

import pyarrow.parquet as pq
import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.io.fileio import local_path
from icefloe.maintenance.partition_stats import compute_partition_stats
from icefloe.spec.commit_json import update_from_dict, update_to_dict
from icefloe.spec.metadata_diff import metadata_changes
from icefloe.spec.updates import RemovePartitionStatistics, SetPartitionStatistics
from tests.maintenance.helpers import delete_ids, make_table

pytestmark = [pytest.mark.catalog_namespaces("db")]


@pytest.mark.parametrize("fv", [2, 3, 4])
def test_partition_statistics_file(catalog: Catalog, fv: int) -> None:
    table = make_table(catalog, "db.t", fv, batches=2, rows=6)  # ids 0..11, cat = "abc"[id % 3]
    delete_ids(table, {0, 3, 4})  # two rows of partition a, one of b
    table = table.refresh()
    snap = table.current_snapshot()
    appends = [s.snapshot_id for s in table.snapshots()][:2]
    path = compute_partition_stats(table)
    assert path is not None and f"partition-stats-{snap.snapshot_id}-" in path and path.endswith(".parquet")
    table = catalog.load_table("db.t")
    assert table.metadata.partition_statistics == (
        {
            "snapshot-id": snap.snapshot_id,
            "statistics-path": path,
            "file-size-in-bytes": os.path.getsize(local_path(path) or ""),
        },
    )
    data = pq.read_table(local_path(path))
    ids = [int(f.metadata[b"PARQUET:field_id"]) for f in data.schema]
    assert ids == list(range(1, 14 if fv >= 3 else 13))
    assert (
        data.schema.field("partition").nullable is False
        and data.schema.field("dv_count" if fv >= 3 else "spec_id").nullable is False
    )
    rows = data.to_pylist()
    assert [r["partition"] for r in rows] == [{"cat": "a"}, {"cat": "b"}, {"cat": "c"}]
    for r in rows:
        assert (r["spec_id"], r["data_record_count"], r["data_file_count"]) == (0, 4, 2)
        assert r["total_record_count"] is None
        assert r["equality_delete_record_count"] == r["equality_delete_file_count"] == 0
    deleted = {"a": 2, "b": 1, "c": 0}
    for r in rows:
        cat = r["partition"]["cat"]
        assert r["position_delete_record_count"] == deleted[cat]
        if fv == 2:
            assert r["position_delete_file_count"] == (1 if deleted[cat] else 0)
        else:  # deletion vectors: counted apart from position delete files
            assert r["position_delete_file_count"] == 0
            assert r["dv_count"] == (1 if deleted[cat] else 0)  # ids 0 and 3 share a file
        expected_snapshot = snap.snapshot_id if deleted[cat] else appends[1]
        assert r["last_updated_snapshot_id"] == expected_snapshot
        assert r["last_updated_at"] == table.snapshot_by_id(expected_snapshot).timestamp_ms


def test_unpartitioned_tables_are_refused_and_updates_travel(catalog: Catalog) -> None:
    flat = make_table(catalog, "db.flat", 2, batches=1, rows=3, partitioned=False)
    with pytest.raises(ValidationError, match="not partitioned"):
        compute_partition_stats(flat)
    assert catalog.load_table("db.flat").metadata.partition_statistics == ()
    table = make_table(catalog, "db.t", 2, batches=1, rows=3)
    base = table.metadata
    compute_partition_stats(table)
    new = catalog.load_table("db.t").metadata
    (update,) = [u for u in metadata_changes(base, new).updates if isinstance(u, SetPartitionStatistics)]
    assert update.partition_statistics == new.partition_statistics[0]
    assert update_to_dict(update)["action"] == "set-partition-statistics"
    assert update_from_dict(update_to_dict(update)) == update
    removal = RemovePartitionStatistics(new.partition_statistics[0]["snapshot-id"])
    assert update_from_dict(update_to_dict(removal)) == removal
    assert metadata_changes(new, base).updates[-1] == removal
