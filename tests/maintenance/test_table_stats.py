"""compute_table_stats: a Puffin file of theta sketches with each column's NDV, registered for a
snapshot through set-statistics (which also travels to REST catalogs)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import Unsupported, ValidationError
from icefloe.formats.puffin.files import read_blob, read_puffin_footer
from icefloe.maintenance.table_stats import THETA_BLOB_TYPE, compute_table_stats
from icefloe.spec.commit_json import update_from_dict, update_to_dict
from icefloe.spec.metadata_diff import metadata_changes
from icefloe.spec.schema import Schema
from icefloe.spec.types import DateType, ListType, LongType, NestedField, StringType
from icefloe.spec.updates import RemoveStatistics, SetStatistics

pytestmark = [pytest.mark.catalog_namespaces("db")]

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "name", StringType(), False),
    NestedField(3, "day", DateType(), False),
    NestedField(4, "tags", ListType(5, StringType(), True), False),
)


def _rows(start: int, n: int) -> pa.Table:
    ids = [start + i for i in range(n)]
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([f"n{i % 7}" if i % 5 else None for i in ids]),
            "day": pa.array([i % 3 for i in ids], pa.int32()).cast(pa.date32()),
            "tags": pa.array([["a"] for _ in ids], pa.list_(pa.string())),
        }
    )


@pytest.mark.parametrize("fv", [2, 3, 4])
def test_theta_sketches_with_ndv_registered_for_the_snapshot(catalog: Catalog, fv: int) -> None:
    from datasketches import compact_theta_sketch

    table = catalog.create_table("db.t", SCHEMA, properties={"format-version": str(fv)})
    table.append(_rows(0, 60))
    table.append(_rows(30, 60))  # ids 30..59 twice: 90 distinct
    table = table.refresh()
    snap = table.current_snapshot()
    path = compute_table_stats(table)
    assert path is not None and path.endswith(".stats") and f"/{snap.snapshot_id}-" in path
    table = catalog.load_table("db.t")  # from the catalog: the entry is in the metadata file
    ((stats,),) = [table.metadata.statistics]
    assert stats["snapshot-id"] == snap.snapshot_id and stats["statistics-path"] == path
    with table.io.new_input(path).open() as f:
        data = f.read()
    assert stats["file-size-in-bytes"] == len(data)
    footer = read_puffin_footer(data)
    assert [(b.type, b.fields) for b in footer.blobs] == [
        (THETA_BLOB_TYPE, (1,)),
        (THETA_BLOB_TYPE, (2,)),
        (THETA_BLOB_TYPE, (3,)),
    ]
    expected = {1: 90, 2: 7, 3: 3}  # the list column has no sketch; nulls are not values
    for blob in footer.blobs:
        assert blob.snapshot_id == snap.snapshot_id and blob.sequence_number == snap.sequence_number
        assert blob.properties["ndv"] == str(expected[blob.fields[0]])
        assert (
            round(compact_theta_sketch.deserialize(read_blob(data, blob)).get_estimate())
            == expected[blob.fields[0]]
        )
    assert [b["properties"]["ndv"] for b in stats["blob-metadata"]] == ["90", "7", "3"]
    # again, for some columns: the snapshot's entry is replaced, not added
    second = compute_table_stats(table, columns=["NAME"])
    table = catalog.load_table("db.t")
    assert [s["statistics-path"] for s in table.metadata.statistics] == [second]
    assert [b["fields"] for b in table.metadata.statistics[0]["blob-metadata"]] == [[2]]


def test_refusals_write_and_register_nothing(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    assert compute_table_stats(table) is None  # no snapshot yet
    table.append(_rows(0, 3))
    table = table.refresh()
    with pytest.raises(ValidationError, match="no top-level column 'nope'"):
        compute_table_stats(table, columns=["nope"])
    with pytest.raises(Unsupported, match="tags"):
        compute_table_stats(table, columns=["tags"])
    assert catalog.load_table("db.t").metadata.statistics == ()


def test_statistics_updates_travel_as_rest_updates(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    table.append(_rows(0, 3))
    base = table.refresh().metadata
    compute_table_stats(table.refresh(), columns=["id"])
    new = catalog.load_table("db.t").metadata
    (update,) = [u for u in metadata_changes(base, new).updates if isinstance(u, SetStatistics)]
    assert update.statistics == new.statistics[0]
    assert update_from_dict(update_to_dict(update)) == update
    assert update_to_dict(update)["action"] == "set-statistics"
    removal = RemoveStatistics(new.statistics[0]["snapshot-id"])
    assert update_from_dict(update_to_dict(removal)) == removal
    assert metadata_changes(new, base).updates[-1] == removal


def test_a_refused_registration_deletes_the_written_file(catalog: Catalog) -> None:
    from icefloe.maintenance.table_stats import publish_statistics_file

    table = catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    table.append(_rows(0, 3))
    path = f"{table.location()}/metadata/12345-x.stats"
    entry = {"snapshot-id": 12345, "statistics-path": path, "file-size-in-bytes": 4, "blob-metadata": []}
    with pytest.raises(ValidationError, match="no snapshot 12345"):
        publish_statistics_file(table.refresh(), b"PFA1", SetStatistics(entry))
    assert not table.io.exists(path)
    assert catalog.load_table("db.t").metadata.statistics == ()
