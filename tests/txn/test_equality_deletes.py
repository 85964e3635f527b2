"""write_equality_delete_files: file layout, manifest entries, validation, partition scoping, key types."""

from __future__ import annotations

import datetime
import decimal
import uuid
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.transforms import BucketTransform as PyIcebergBucket
from pyiceberg.types import LongType as PyIcebergLong

from icefloe.catalog import load_catalog
from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.spec.content import FileContent
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import BucketTransform, IdentityTransform
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from icefloe.table.table import Table
from icefloe.txn.equality_deletes import write_equality_delete_files
from icefloe.txn.producers import RowDelta
from tests.support.interop import read_with_duckdb, read_with_iceberg_rust
from tests.tree.v4_helpers import field_ids as content_field_ids
from tests.tree.v4_helpers import raw_rows

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "cat", StringType(), False),
    NestedField(3, "v", StringType(), False),
    NestedField(
        4,
        "info",
        StructType(NestedField(5, "code", IntegerType(), False), NestedField(6, "x", DoubleType(), False)),
    ),
    NestedField(7, "tags", ListType(8, StringType(), False), False),
    NestedField(9, "attrs", MapType(10, StringType(), 11, IntegerType(), False), False),
    NestedField(12, "score", FloatType(), False),
    NestedField(13, "ratio", DoubleType(), False),
)


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = load_catalog(uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace(("db",))
    return cat


def _rows(ids: list[int], cats: list[str | None] | None = None) -> pa.Table:
    cats = cats if cats is not None else ["a" if i % 2 else "b" for i in ids]
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "cat": pa.array(cats, pa.string()),
            "v": pa.array([f"v{i}" for i in ids], pa.string()),
            "info": pa.array(
                [{"code": i % 3 if i % 5 else None, "x": float(i)} for i in ids],
                pa.struct([("code", pa.int32()), ("x", pa.float64())]),
            ),
        }
    )


def _table(catalog: Catalog, fv: int, spec: PartitionSpec | None = None, name: str = "t") -> Table:
    t = catalog.create_table(
        f"db.{name}", SCHEMA, partition_spec=spec, properties={"format-version": str(fv)}
    )
    t.append(_rows(list(range(10))))
    return t


def _commit_deletes(table: Table, deletes: list[Any]) -> None:
    with table.transaction() as tx:
        tx.add_action(RowDelta(added_deletes=deletes))


def _fid(table: Table, name: str) -> int:
    """Field id of a column in the table's schema (ids are assigned when the table is created)."""
    return table.schema().find_field(name).field_id


def _ids(table: Table) -> list[int]:
    return sorted(table.to_arrow()["id"].to_pylist())


def _local(path: str) -> str:
    return path.removeprefix("file://").removeprefix("file:")


def _data_dir_files(table: Table) -> set[str]:
    root = Path(_local(table.location())) / "data"
    return {str(p) for p in root.rglob("*") if p.is_file()} if root.exists() else set()


# ---------------------------------------------------------------------------------------------
# file layout and manifest entries


@pytest.mark.parametrize("fv", [2, 3])
def test_parquet_layout_metrics_and_avro_manifest_entry(catalog: Catalog, fv: int) -> None:
    table = _table(catalog, fv)
    keys = pa.table({"id": pa.array([7, 3, 7, 3, 5], pa.int64()), "v": ["x"] * 5})  # v is dropped
    files = write_equality_delete_files(table.io, table.metadata, keys, [1])
    assert len(files) == 1
    f = files[0]
    assert f.content == FileContent.EQUALITY_DELETES and f.equality_ids == (1,)
    assert f.record_count == 3 and f.spec_id == 0 and f.partition == ()
    assert f.value_counts == {1: 3} and f.null_value_counts == {1: 0}
    assert f.lower_bounds == {1: (3).to_bytes(8, "little")} and f.upper_bounds == {
        1: (7).to_bytes(8, "little")
    }
    stored = pq.read_table(_local(f.file_path))
    assert stored.column_names == ["id"]
    assert stored.schema.field("id").metadata[b"PARQUET:field_id"] == b"1"
    assert stored["id"].to_pylist() == [7, 3, 5]  # distinct, first occurrence order

    _commit_deletes(table, files)
    assert _ids(table) == [0, 1, 2, 4, 6, 8, 9]
    snap = table.current_snapshot()
    assert snap is not None and snap.operation == "delete" and snap.manifest_list is not None
    with open(_local(snap.manifest_list), "rb") as fh:
        listed: list[Any] = list(fastavro.reader(fh))
    delete_manifests = [m for m in listed if m["content"] == 1]
    assert len(delete_manifests) == 1 and delete_manifests[0]["added_files_count"] == 1
    with open(_local(delete_manifests[0]["manifest_path"]), "rb") as fh:
        reader = fastavro.reader(fh)
        schema: Any = reader.writer_schema
        entries: list[Any] = list(reader)
    assert len(entries) == 1
    df = entries[0]["data_file"]
    assert df["content"] == 2 and df["equality_ids"] == [1] and df["record_count"] == 3
    data_file_fields = {
        f["name"]: f for f in next(f for f in schema["fields"] if f["name"] == "data_file")["type"]["fields"]
    }
    assert data_file_fields["equality_ids"]["field-id"] == 135
    assert read_with_duckdb(table.metadata_location)["id"].to_pylist() == _ids(table)


def test_v4_equality_deletes_go_to_a_leaf_delete_manifest(catalog: Catalog) -> None:
    table = _table(catalog, 4)
    files = write_equality_delete_files(
        table.io, table.metadata, pa.table({"id": pa.array([1, 2], pa.int64())}), [1]
    )
    _commit_deletes(table, files)
    assert _ids(table) == [0, 3, 4, 5, 6, 7, 8, 9]
    snap = table.current_snapshot()
    assert snap is not None and snap.root_manifest is not None and snap.manifest_list is None
    root = raw_rows(snap.root_manifest)
    assert all(r["content_type"] != 2 for r in root)  # facts Q17: no inline equality deletes
    delete_refs = [r for r in root if r["content_type"] == 4]
    assert len(delete_refs) == 1
    ref = delete_refs[0]
    assert ref["format_version"] == 4 and ref["tracking"]["status"] == 1
    leaf_path = (
        str(Path(_local(table.location())) / ref["location"])
        if not ref["location"].startswith(("/", "file:"))
        else _local(ref["location"])
    )
    leaf = raw_rows(leaf_path)
    assert [r["content_type"] for r in leaf] == [2]
    assert leaf[0]["equality_ids"] == [1] and leaf[0]["record_count"] == 2
    assert leaf[0]["location"].endswith(Path(files[0].file_path).name)
    ids = content_field_ids(leaf_path)
    assert ids["content_type"] == 134 and ids["equality_ids"] == 135 and ids["equality_ids.element"] == 136


# ---------------------------------------------------------------------------------------------
# validation: bad ids or keys raise, name the column, and write nothing


@pytest.mark.parametrize(
    ("columns", "keys", "message"),
    [
        ([], {"id": [1]}, "at least one delete column"),
        ([99], {"id": [1]}, "id 99 is not in the current schema"),
        (["id", "id"], {"id": [1]}, "listed more than once"),
        (["score"], {"score": [1.0]}, "'score' has type float: the spec forbids float and double"),
        (["ratio"], {"ratio": [1.0]}, "'ratio' has type double"),
        (["info.x"], {"info": [{"x": 1.0}]}, "'info.x' has type double"),
        (["info"], {"info": [{"code": 1}]}, "'info' has type struct"),
        (["tags"], {"id": [1]}, "'tags' has type list"),
        (["tags.element"], {"id": [1]}, "'tags.element' is inside the list 'tags'"),
        (["attrs.key"], {"id": [1]}, "'attrs.key' is inside the map 'attrs'"),
        (["id", "cat"], {"id": [1]}, "delete column 'cat' is missing from the keys"),
        (["info.code"], {"id": [1]}, "delete column 'info.code' is missing from the keys"),
        (["info.code"], {"info": [{"x": 1.0}]}, "delete column 'info.code' is missing from the keys"),
        (["info.code"], {"info": [1]}, "key column 'info' must be a struct"),
        (["id"], {"id": [1], "nope": [2]}, "key column 'nope' is not in the table schema"),
        (["id"], {"id": [None, 1]}, "column 'id' is required but has 1 null value"),
        (["id"], {"id": ["x"]}, "column 'id': cannot write Arrow type string"),
    ],
)
def test_bad_ids_or_keys_are_refused_and_write_nothing(
    catalog: Catalog, columns: list[str | int], keys: dict[str, Any], message: str
) -> None:
    table = _table(catalog, 2)
    ids = [c if isinstance(c, int) else _fid(table, c) for c in columns]
    before = _data_dir_files(table)
    with pytest.raises(ValidationError, match=message):
        write_equality_delete_files(table.io, table.metadata, pa.table(keys), ids)
    assert _data_dir_files(table) == before


def test_v1_tables_and_tags_are_refused(catalog: Catalog) -> None:
    v1 = _table(catalog, 1, name="v1")
    with pytest.raises(ValidationError, match="format version 1 tables cannot hold delete files"):
        write_equality_delete_files(v1.io, v1.metadata, pa.table({"id": pa.array([1], pa.int64())}), [1])
    v2 = _table(catalog, 2, name="v2")
    v2.manage_snapshots().create_tag("release", v2.current_snapshot().snapshot_id).commit()  # type: ignore[union-attr]
    with pytest.raises(ValidationError, match="'release' is a tag"):
        write_equality_delete_files(
            v2.io, v2.metadata, pa.table({"id": pa.array([1], pa.int64())}), [1], branch="release"
        )


def test_empty_keys_write_nothing(catalog: Catalog) -> None:
    table = _table(catalog, 2)
    assert (
        write_equality_delete_files(table.io, table.metadata, pa.table({"id": pa.array([], pa.int64())}), [1])
        == []
    )


def test_nested_key_keeps_only_the_key_field_and_matches_null_parents(catalog: Catalog) -> None:
    table = _table(catalog, 2)
    # rows: info.code = id % 3, except null when id % 5 == 0 (ids 0 and 5)
    info_type = pa.struct([("code", pa.int32()), ("x", pa.float64())])
    keys = pa.table({"info": pa.array([{"code": 1, "x": 99.0}, {"code": None, "x": 0.0}], info_type)})
    files = write_equality_delete_files(table.io, table.metadata, keys, [_fid(table, "info.code")])
    stored = pq.read_table(_local(files[0].file_path))
    assert stored.schema.names == ["info"] and [f.name for f in stored.schema.field("info").type] == ["code"]
    code_id = str(_fid(table, "info.code")).encode()
    assert stored.schema.field("info").type.field("code").metadata[b"PARQUET:field_id"] == code_id
    _commit_deletes(table, files)
    deleted = {i for i in range(10) if i % 5 == 0 or i % 3 == 1}
    assert _ids(table) == sorted(set(range(10)) - deleted)
    # No cross-read: with a struct-nested delete column DuckDB 1.5.5 crashes (segfault) and
    # iceberg-rust (pyiceberg-core 0.11) fails with "field not found"; the file has the layout
    # Java writes (the struct keeps only the selected child, by field id).


# ---------------------------------------------------------------------------------------------
# partition scoping


def test_identity_partition_keys_are_scoped_to_their_partitions(catalog: Catalog) -> None:
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"))
    table = _table(catalog, 2, spec)
    # id 3 lives in cat 'a'; (4, 'a') matches nothing (id 4 is in 'b'); (6, 'b') deletes id 6
    keys = pa.table({"id": pa.array([3, 4, 6], pa.int64()), "cat": ["a", "a", "b"]})
    files = write_equality_delete_files(table.io, table.metadata, keys, [1, 2])
    by_partition = {f.partition: f for f in files}
    assert set(by_partition) == {("a",), ("b",)}
    assert all(f.spec_id == 0 and f.equality_ids == (1, 2) for f in files)
    assert by_partition[("a",)].record_count == 2 and "/cat=a/" in by_partition[("a",)].file_path
    assert pq.read_table(_local(by_partition[("b",)].file_path)).to_pylist() == [{"id": 6, "cat": "b"}]
    _commit_deletes(table, files)
    assert _ids(table) == [0, 1, 2, 4, 5, 7, 8, 9]
    assert sorted(read_with_duckdb(table.metadata_location)["id"].to_pylist()) == _ids(table)


def test_bucket_partition_of_the_key_column(catalog: Catalog) -> None:
    spec = PartitionSpec(PartitionField(1, 1000, BucketTransform(4), "id_bucket"))
    table = _table(catalog, 3, spec)
    wanted = [0, 2, 3, 5, 8]
    files = write_equality_delete_files(
        table.io, table.metadata, pa.table({"id": pa.array(wanted, pa.int64())}), [1]
    )
    bucket = PyIcebergBucket(4).transform(PyIcebergLong())  # independent murmur3 implementation
    expected: dict[tuple[Any, ...], list[int]] = {}
    for i in wanted:
        expected.setdefault((bucket(i),), []).append(i)
    got = {f.partition: sorted(pq.read_table(_local(f.file_path))["id"].to_pylist()) for f in files}
    assert got == expected
    _commit_deletes(table, files)
    assert _ids(table) == [1, 4, 6, 7, 9]
    assert sorted(read_with_duckdb(table.metadata_location)["id"].to_pylist()) == _ids(table)


def test_key_without_the_partition_source_is_refused_without_an_unpartitioned_spec(catalog: Catalog) -> None:
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"))
    table = _table(catalog, 2, spec)
    before = _data_dir_files(table)
    with pytest.raises(ValidationError, match=r"partition source column\(s\) 'cat' are not delete columns"):
        write_equality_delete_files(
            table.io, table.metadata, pa.table({"id": pa.array([1], pa.int64())}), [1]
        )
    assert _data_dir_files(table) == before


def test_live_unpartitioned_files_make_one_global_delete_file(catalog: Catalog) -> None:
    table = _table(catalog, 2)  # spec 0 unpartitioned, 10 rows
    table.update_spec().add_identity("cat").commit()
    table.append(_rows([10, 11, 12]))  # spec 1, partitioned by cat
    keys = pa.table({"id": pa.array([1, 11, 12], pa.int64())})
    files = write_equality_delete_files(table.io, table.metadata, keys, [1])
    assert [(f.spec_id, f.partition) for f in files] == [(0, ())]
    _commit_deletes(table, files)
    assert _ids(table) == [0, 2, 3, 4, 5, 6, 7, 8, 9, 10]


def test_old_unpartitioned_spec_is_the_fallback_for_keys_without_partition_sources(catalog: Catalog) -> None:
    table = _table(catalog, 2)
    table.update_spec().add_identity("cat").commit()
    table.overwrite(_rows([20, 21, 22, 23]))  # every live file is now in spec 1
    files = write_equality_delete_files(
        table.io, table.metadata, pa.table({"id": pa.array([21, 22], pa.int64())}), [1]
    )
    assert [(f.spec_id, f.partition) for f in files] == [(0, ())]  # unscoped: keys in any partition
    _commit_deletes(table, files)
    assert _ids(table) == [20, 23]


def test_every_live_spec_gets_scoped_files_after_partition_evolution(catalog: Catalog) -> None:
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"))
    table = _table(catalog, 2, spec)  # ids 0..9 in spec 0 (cat)
    table.update_spec().add_field("id", BucketTransform(2)).commit()
    table.append(_rows([10, 11, 12, 13]))  # spec 1 (cat, bucket(2, id))
    keys = pa.table({"id": pa.array([3, 4, 11, 12], pa.int64()), "cat": ["a", "b", "a", "b"]})
    files = write_equality_delete_files(table.io, table.metadata, keys, [1, 2])
    assert {f.spec_id for f in files} == {0, 1}
    for spec_id in (0, 1):
        assert sum(f.record_count for f in files if f.spec_id == spec_id) == 4  # every key, once per spec
    _commit_deletes(table, files)
    assert _ids(table) == [0, 1, 2, 5, 6, 7, 8, 9, 10, 13]
    # DuckDB 1.5.5 fails here ("INTERNAL Error: Comparison on NULL values"): it pairs partition
    # values of two specs by position (duckdb/duckdb-iceberg#1274, fixed by #1276); iceberg-rust agrees.
    assert sorted(read_with_iceberg_rust(table.metadata_location)["id"].to_pylist()) == _ids(table)


# ---------------------------------------------------------------------------------------------
# key types: equality (null = null) applied by icefloe and DuckDB


KEY_TYPES: dict[str, tuple[IcebergType, pa.Array]] = {
    "int": (IntegerType(), pa.array([1, 2, None], pa.int32())),
    "boolean": (BooleanType(), pa.array([True, False, None])),
    "date": (DateType(), pa.array([datetime.date(2024, 1, 1), datetime.date(2024, 1, 2), None])),
    "time": (TimeType(), pa.array([1, 2, None], pa.time64("us"))),
    "timestamp": (TimestampType(), pa.array([1, 2, None], pa.timestamp("us"))),
    "timestamptz": (TimestamptzType(), pa.array([1, 2, None], pa.timestamp("us", tz="UTC"))),
    "decimal": (DecimalType(10, 2), pa.array([decimal.Decimal("1.10"), decimal.Decimal("2.20"), None])),
    "uuid": (UUIDType(), pa.array([uuid.UUID(int=1).bytes, uuid.UUID(int=2).bytes, None], pa.binary(16))),
    "fixed": (FixedType(3), pa.array([b"abc", b"abd", None], pa.binary(3))),
    "binary": (BinaryType(), pa.array([b"a", b"bb", None], pa.binary())),
    "string": (StringType(), pa.array(["a", "b", None])),
}


@pytest.mark.parametrize("type_name", sorted(KEY_TYPES))
def test_key_types_delete_equal_values_and_nulls(catalog: Catalog, type_name: str) -> None:
    iceberg_type, values = KEY_TYPES[type_name]
    schema = Schema(NestedField(1, "k", iceberg_type, False), NestedField(2, "n", LongType(), False))
    table = catalog.create_table("db.types", schema, properties={"format-version": "2"})
    table.append(pa.table({"k": values, "n": pa.array([1, 2, 3], pa.int64())}))
    files = write_equality_delete_files(table.io, table.metadata, pa.table({"k": values.take([0, 2])}), [1])
    assert files[0].record_count == 2 and files[0].null_value_counts == {1: 1}
    _commit_deletes(table, files)
    assert table.to_arrow()["n"].to_pylist() == [2]  # the first value and the null are deleted
    assert read_with_duckdb(table.metadata_location)["n"].to_pylist() == [2]


def test_large_key_sets_roll_into_several_files(catalog: Catalog) -> None:
    table = _table(catalog, 2)
    table.set_properties(**{"write.delete.target-file-size-bytes": "2000"})
    keys = pa.table({"id": pa.array(range(0, 20_000, 2), pa.int64())})
    files = write_equality_delete_files(table.io, table.metadata, keys, [1])
    assert len(files) > 1
    stored = sorted(i for f in files for i in pq.read_table(_local(f.file_path))["id"].to_pylist())
    assert stored == list(range(0, 20_000, 2)) and sum(f.record_count for f in files) == 10_000
    _commit_deletes(table, files)
    assert _ids(table) == [1, 3, 5, 7, 9]
