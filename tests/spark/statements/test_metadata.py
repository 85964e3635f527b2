"""``db.t.position_deletes`` and ``db.t.changes`` through icefloe.spark.sql, on v2, v3 and v4 tables.

Data files are written by the Python API (one file per partition per append, rows in the order
given), so every deleted position is known: ids 1, 2, 3 sit at positions 0, 1, 2 of the ``a``
file, ids 4, 5, 6 at 0, 1, 2 of the ``b`` file.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.base import Catalog
from icefloe.scan.metadata_tables import snapshot_entries
from icefloe.spark import sql
from icefloe.spark.statements import UnsupportedStatement
from icefloe.spec.content import FileContent
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import LongType, NestedField, StringType

Row = tuple[Any, ...]
MOR = {"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"}


def rows(df: Any) -> list[Row]:
    return sorted((tuple(r) for r in df.collect()), key=lambda r: [(v is not None, v) for v in r])


def make_events(catalog: Catalog, table_name: str, version: int) -> None:
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "category", StringType(), False))
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "category"))
    t = catalog.create_table(table_name, schema, spec, properties={"format-version": str(version), **MOR})
    t.append(pa.table({"id": pa.array([1, 2, 3, 4, 5, 6], pa.int64()), "category": ["a"] * 3 + ["b"] * 3}))


def data_paths(catalog: Catalog, table_name: str) -> dict[str, str]:
    """category -> path of its data file."""
    t = catalog.load_table(table_name)
    live = [e.data_file for e in snapshot_entries(t.io, t.metadata, t.current_snapshot()) if e.is_live]
    return {f.partition[0]: f.file_path for f in live if f.content == FileContent.DATA}


def delete_blobs(catalog: Catalog, table_name: str) -> dict[str, tuple[str, int | None, int | None]]:
    """data file path -> (delete file path, content offset, content size) of its live deletes."""
    t = catalog.load_table(table_name)
    out = {}
    for e in snapshot_entries(t.io, t.metadata, t.current_snapshot()):
        f = e.data_file
        if not e.is_live:
            continue
        if f.deletion_vector is not None:  # v4: colocated with the data entry
            dv = f.deletion_vector
            out[f.file_path] = (dv.location, dv.offset, dv.size_in_bytes)
        elif f.content == FileContent.POSITION_DELETES:
            assert f.referenced_data_file is not None
            out[f.referenced_data_file] = (f.file_path, f.content_offset, f.content_size_in_bytes)
    return out


@pytest.mark.parametrize("version", [2, 3, 4])
def test_position_deletes_lists_every_deleted_position(
    spark: Any, catalog: Catalog, table_name: str, version: int
) -> None:
    make_events(catalog, table_name, version)
    t = f"icefloe.{table_name}"
    first = catalog.load_table(table_name).current_snapshot()
    assert first is not None
    assert rows(sql(spark, f"SELECT * FROM {t}.position_deletes")) == []
    sql(spark, f"DELETE FROM {t} WHERE id IN (2, 4, 6)")
    sql(spark, f"DELETE FROM {t} WHERE id = 3")
    paths, blobs = data_paths(catalog, table_name), delete_blobs(catalog, table_name)
    frame = sql(spark, f"SELECT * FROM {t}.position_deletes")
    dv_columns = ["content_offset", "content_size_in_bytes"] if version >= 3 else []
    assert frame.columns == [
        "file_path",
        "pos",
        "row",
        "partition",
        "spec_id",
        "delete_file_path",
        *dv_columns,
    ]

    def expected(category: str, pos: int) -> Row:
        path = paths[category]
        delete_path, offset, size = blobs[path]
        return (path, pos, None, (category,), 0, delete_path, *((offset, size) if version >= 3 else ()))

    found = rows(frame)
    if version == 2:  # the second DELETE adds a second position delete file for the `a` file
        second = {r[5] for r in found if r[1] == 2 and r[0] == paths["a"]}
        assert [r[:5] for r in found] == [
            (paths["a"], 1, None, ("a",), 0),
            (paths["a"], 2, None, ("a",), 0),
            (paths["b"], 0, None, ("b",), 0),
            (paths["b"], 2, None, ("b",), 0),
        ]
        assert len(second) == 1 and second != {r[5] for r in found if r[1] == 1 and r[0] == paths["a"]}
    else:  # one deletion vector per data file, the `a` one rewritten with both positions
        assert found == sorted(
            [expected("a", 1), expected("a", 2), expected("b", 0), expected("b", 2)],
            key=lambda r: [(v is not None, v) for v in r],
        )
        if version == 3:
            assert all(r[6] is not None and r[7] is not None for r in found)
    # time travel: the first snapshot had no deletes
    assert rows(sql(spark, f"SELECT * FROM {t}.position_deletes VERSION AS OF {first.snapshot_id}")) == []
    # a projection and a filter, as on any table
    picked = sql(spark, f"SELECT pos FROM {t}.position_deletes WHERE partition.category = 'b' ORDER BY pos")
    assert [r[0] for r in picked.collect()] == [0, 2]


def test_position_deletes_of_an_unpartitioned_v2_table_has_no_partition_column(
    spark: Any, table_name: str
) -> None:
    t = f"icefloe.{table_name}"
    sql(
        spark,
        f"""CREATE TABLE {t} (id bigint, data string) USING iceberg
            TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'merge-on-read')""",
    )
    sql(spark, f"INSERT INTO {t} VALUES (1, 'x')")
    sql(spark, f"DELETE FROM {t} WHERE id = 1")
    frame = sql(spark, f"SELECT * FROM {t}.position_deletes")
    assert frame.columns == ["file_path", "pos", "row", "spec_id", "delete_file_path"]
    data_file = rows(sql(spark, f"SELECT file_path FROM {t}.data_files"))[0][0]
    delete_file = rows(sql(spark, f"SELECT file_path FROM {t}.delete_files"))[0][0]
    assert rows(frame) == [(data_file, 0, None, 0, delete_file)]


@pytest.mark.parametrize("version", [2, 3, 4])
def test_changes_table(spark: Any, catalog: Catalog, table_name: str, version: int) -> None:
    t = f"icefloe.{table_name}"
    make_events(catalog, table_name, version)
    sql(spark, f"DELETE FROM {t} WHERE id = 2")
    sql(spark, f"UPDATE {t} SET category = 'c' WHERE id = 5")
    sql(spark, f"INSERT INTO {t} VALUES (7, 'a')")
    ids = [s.snapshot_id for s in catalog.load_table(table_name).snapshots()]
    frame = sql(spark, f"SELECT * FROM {t}.changes")
    assert frame.columns == ["id", "category", "_change_type", "_change_ordinal", "_commit_snapshot_id"]
    inserted = [
        (i, c, "INSERT", 0, ids[0]) for i, c in [(1, "a"), (2, "a"), (3, "a"), (4, "b"), (5, "b"), (6, "b")]
    ]
    assert rows(frame) == sorted(
        [
            *inserted,
            (2, "a", "DELETE", 1, ids[1]),
            (5, "b", "DELETE", 2, ids[2]),  # an update is a DELETE and an INSERT, as in Iceberg's table
            (5, "c", "INSERT", 2, ids[2]),
            (7, "a", "INSERT", 3, ids[3]),
        ],
        key=lambda r: [(v is not None, v) for v in r],
    )
    latest = sql(spark, f"SELECT id, _change_type FROM {t}.changes WHERE _change_ordinal = 3")
    assert rows(latest) == [(7, "INSERT")]
    with pytest.raises(UnsupportedStatement, match="AS OF clause is not supported for changelogs"):
        sql(spark, f"SELECT * FROM {t}.changes VERSION AS OF {ids[0]}")
