"""Metadata tables over a real SQL-catalog table, checked value by value and against PyIceberg."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog import load_catalog
from icefloe.errors import ValidationError
from icefloe.scan import metadata_tables as mt
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import BucketTransform, IdentityTransform
from icefloe.spec.types import DoubleType, LongType, NestedField, StringType
from icefloe.table.table import Table
from icefloe.txn.partition_evolution import UpdateSpec
from icefloe.txn.refs import ManageSnapshots

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "cat", StringType()),
    NestedField(3, "x", DoubleType()),
)
BY_CAT = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"))
UTC = dt.UTC


def rows(ids: list[int], cats: list[str], xs: list[float]) -> pa.Table:
    """A batch of rows."""
    return pa.table({"id": pa.array(ids, pa.int64()), "cat": cats, "x": pa.array(xs, pa.float64())})


def evolve(table: Table, action: Any) -> None:
    """Commit one action."""
    with table.transaction() as tx:
        tx.add_action(action)


@dataclass
class History:
    """The table and its snapshot ids, in commit order."""

    table: Table
    s1: int
    s2: int
    s3: int
    s4: int

    @property
    def independent(self) -> bool:
        """Whether PyIceberg can read the table (not v4: root manifests)."""
        return self.table.format_version < 4


@pytest.fixture(params=[2, 4], ids=["v2", "v4"])
def hist(tmp_path: Path, request: pytest.FixtureRequest) -> History:
    """append x,x,y | append x | delete cat=y | add bucket[2](id) to the spec | append z."""
    catalog = load_catalog(uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t", SCHEMA, partition_spec=BY_CAT, properties={"format-version": str(request.param)}
    )
    table.append(rows([1, 2, 3], ["x", "x", "y"], [1.0, float("nan"), 3.0]))
    s1 = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    table.append(rows([4], ["x"], [4.0]))
    s2 = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    table.delete("cat = 'y'")
    s3 = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    evolve(table, UpdateSpec(table.metadata).add_field("id", "bucket[2]"))
    table.append(rows([5], ["z"], [5.0]))
    s4 = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    evolve(table, ManageSnapshots(table.metadata).create_tag("v1", s1, max_ref_age_ms=1000))
    return History(table, s1, s2, s3, s4)


def static(table: Table) -> Any:
    """The same table through PyIceberg."""
    from pyiceberg.table import StaticTable

    return StaticTable.from_metadata(table.metadata_location)


def test_snapshots(hist: History) -> None:
    md = hist.table.metadata
    out = mt.snapshots_table(md)
    assert out.schema == mt.SNAPSHOTS_SCHEMA
    got = out.to_pylist()
    assert [r["snapshot_id"] for r in got] == [hist.s1, hist.s2, hist.s3, hist.s4]
    assert [r["parent_id"] for r in got] == [None, hist.s1, hist.s2, hist.s3]
    assert [r["operation"] for r in got] == ["append", "append", "delete", "append"]
    assert [r["committed_at"] for r in got] == [
        dt.datetime.fromtimestamp(s.timestamp_ms / 1000, UTC) for s in md.snapshots
    ]
    # v4 snapshots have a root manifest where v1-v3 snapshots have a manifest list
    assert [r["manifest_list"] for r in got] == [s.manifest_list or s.root_manifest for s in md.snapshots]
    summary = dict(got[0]["summary"])
    assert summary["added-records"] == "3" and summary["added-data-files"] == "2"
    assert dict(got[2]["summary"])["deleted-records"] == "1"
    if not hist.independent:
        return
    theirs = static(hist.table).inspect.snapshots().to_pylist()
    assert [(r["snapshot_id"], r["parent_id"], r["operation"], r["manifest_list"]) for r in theirs] == [
        (r["snapshot_id"], r["parent_id"], r["operation"], r["manifest_list"]) for r in got
    ]
    assert [dict(r["summary"]) for r in theirs] == [dict(r["summary"]) for r in got]


def test_history_and_refs(hist: History) -> None:
    table = hist.table
    history = mt.history_table(table.metadata).to_pylist()
    assert [(r["snapshot_id"], r["parent_id"], r["is_current_ancestor"]) for r in history] == [
        (hist.s1, None, True),
        (hist.s2, hist.s1, True),
        (hist.s3, hist.s2, True),
        (hist.s4, hist.s3, True),
    ]
    evolve(table, ManageSnapshots(table.metadata).rollback_to_snapshot(hist.s2))
    history = mt.history_table(table.metadata).to_pylist()
    assert [(r["snapshot_id"], r["is_current_ancestor"]) for r in history] == [
        (hist.s1, True),
        (hist.s2, True),
        (hist.s3, False),
        (hist.s4, False),
        (hist.s2, True),
    ]
    if hist.independent:
        theirs = static(table).inspect.history().to_pylist()
        assert [(r["snapshot_id"], r["parent_id"], r["is_current_ancestor"]) for r in theirs] == [
            (r["snapshot_id"], r["parent_id"], r["is_current_ancestor"]) for r in history
        ]
    refs = mt.refs_table(table.metadata)
    assert refs.schema == mt.REFS_SCHEMA
    assert refs.to_pylist() == [
        {
            "name": "main",
            "type": "BRANCH",
            "snapshot_id": hist.s2,
            "max_reference_age_in_ms": None,
            "min_snapshots_to_keep": None,
            "max_snapshot_age_in_ms": None,
        },
        {
            "name": "v1",
            "type": "TAG",
            "snapshot_id": hist.s1,
            "max_reference_age_in_ms": 1000,
            "min_snapshots_to_keep": None,
            "max_snapshot_age_in_ms": None,
        },
    ]
    if not hist.independent:
        return
    theirs_refs = sorted(static(table).inspect.refs().to_pylist(), key=lambda r: r["name"])
    assert [(r["name"], r["type"], r["snapshot_id"], r["max_reference_age_in_ms"]) for r in theirs_refs] == [
        ("main", "BRANCH", hist.s2, None),
        ("v1", "TAG", hist.s1, 1000),
    ]


def test_manifests_match_pyiceberg(hist: History) -> None:
    table = hist.table
    ours = mt.manifests_table(table.io, table.metadata)
    assert ours.schema == mt.MANIFESTS_SCHEMA
    got = ours.to_pylist()
    if not hist.independent:
        # v4: the small appends stayed inline in the root, shown as one synthetic reference (the
        # root itself, no single spec, no partition summaries); s4's file is ADDED, the rest carried
        root = table.current_snapshot().root_manifest  # type: ignore[union-attr]
        assert [
            (r["path"], r["partition_spec_id"], r["added_data_files_count"], r["existing_data_files_count"])
            for r in got
        ] == [(root, -1, 1, 2)]
        assert got[0]["partition_summaries"] is None and got[0]["reference_snapshot_id"] == hist.s4
        return
    assert {r["partition_spec_id"] for r in got} == {0, 1}
    assert sum(r["added_data_files_count"] + r["existing_data_files_count"] for r in got) == 3
    assert all(r["reference_snapshot_id"] == hist.s4 for r in got)
    newest = next(r for r in got if r["partition_spec_id"] == 1)
    assert newest["added_snapshot_id"] == hist.s4 and newest["added_data_files_count"] == 1
    assert newest["partition_summaries"] == [
        {"contains_null": False, "contains_nan": False, "lower_bound": "z", "upper_bound": "z"},
        {"contains_null": False, "contains_nan": False, "lower_bound": "1", "upper_bound": "1"},
    ]
    keys = [
        "content",
        "path",
        "length",
        "partition_spec_id",
        "added_snapshot_id",
        "added_data_files_count",
        "existing_data_files_count",
        "deleted_data_files_count",
        "added_delete_files_count",
        "existing_delete_files_count",
        "deleted_delete_files_count",
        "partition_summaries",
    ]
    theirs = static(table).inspect.manifests().to_pylist()
    assert sorted([{k: r[k] for k in keys} for r in theirs], key=lambda r: r["path"]) == sorted(
        [{k: r[k] for k in keys} for r in got], key=lambda r: r["path"]
    )


def test_files(hist: History) -> None:
    table = hist.table
    files = mt.files_table(table.io, table.metadata)
    assert files.column_names == [
        "content",
        "file_path",
        "file_format",
        "spec_id",
        "partition",
        "record_count",
        "file_size_in_bytes",
        "column_sizes",
        "value_counts",
        "null_value_counts",
        "nan_value_counts",
        "lower_bounds",
        "upper_bounds",
        "key_metadata",
        "split_offsets",
        "equality_ids",
        "sort_order_id",
        "first_row_id",
        "referenced_data_file",
        "content_offset",
        "content_size_in_bytes",
        "readable_metrics",
    ]
    assert files.schema.field("partition").type == pa.struct(
        [pa.field("cat", pa.string()), pa.field("id_bucket_2", pa.int32())]
    )
    got = sorted(files.to_pylist(), key=lambda r: r["readable_metrics"]["id"]["lower_bound"])
    bucket_5 = BucketTransform(2).apply(LongType(), 5)
    assert [
        (r["content"], r["file_format"], r["spec_id"], r["partition"], r["record_count"]) for r in got
    ] == [
        (0, "PARQUET", 0, {"cat": "x", "id_bucket_2": None}, 2),
        (0, "PARQUET", 0, {"cat": "x", "id_bucket_2": None}, 1),
        (0, "PARQUET", 1, {"cat": "z", "id_bucket_2": bucket_5}, 1),
    ]
    first = got[0]
    # v4 content stats carry no column sizes (format/spec.md "Content Stats")
    column_size = dict(first["column_sizes"])[1] if hist.independent else None
    assert (first["column_sizes"] is None) == (not hist.independent)
    assert dict(first["value_counts"]) == {1: 2, 2: 2, 3: 2}
    assert dict(first["null_value_counts"]) == {1: 0, 2: 0, 3: 0}
    assert dict(first["nan_value_counts"]) == {3: 1}
    assert dict(first["lower_bounds"])[1] == (1).to_bytes(8, "little")
    assert first["readable_metrics"]["id"] == {
        "column_size": column_size,
        "value_count": 2,
        "null_value_count": 0,
        "nan_value_count": None,
        "lower_bound": 1,
        "upper_bound": 2,
    }
    assert first["readable_metrics"]["x"]["nan_value_count"] == 1
    assert first["readable_metrics"]["cat"]["lower_bound"] == "x"
    assert list(first["readable_metrics"]) == ["cat", "id", "x"]
    # PyIceberg lists the same files with the same metrics
    theirs = (
        {r["file_path"]: r for r in static(table).inspect.files().to_pylist()} if hist.independent else {}
    )
    assert not hist.independent or set(theirs) == {r["file_path"] for r in got}
    for r in got if hist.independent else []:
        t = theirs[r["file_path"]]
        for key in (
            "content",
            "spec_id",
            "record_count",
            "file_size_in_bytes",
            "split_offsets",
            "sort_order_id",
        ):
            assert t[key] == r[key], key
        for key in ("column_sizes", "value_counts", "null_value_counts", "lower_bounds", "upper_bounds"):
            assert dict(t[key]) == dict(r[key]), key
    assert mt.data_files_table(table.io, table.metadata).num_rows == 3
    deletes = mt.delete_files_table(table.io, table.metadata)
    assert deletes.num_rows == 0 and deletes.schema == files.schema


def test_files_at_an_older_snapshot_and_of_an_empty_table(hist: History, tmp_path: Path) -> None:
    table = hist.table
    at_s1 = mt.files_table(table.io, table.metadata, snapshot_id=hist.s1)
    assert sorted((r["partition"]["cat"], r["record_count"]) for r in at_s1.to_pylist()) == [
        ("x", 2),
        ("y", 1),
    ]
    catalog = load_catalog(uri=f"sqlite:///{tmp_path / 'e.db'}", warehouse=str(tmp_path / "wh2"))
    catalog.create_namespace("db")
    empty = catalog.create_table("db.e", SCHEMA)
    for name in mt.METADATA_TABLES:
        assert mt.metadata_table(empty.io, empty.metadata, name).num_rows == 0, name
    assert "partition" not in mt.files_table(empty.io, empty.metadata).column_names
    assert mt.partitions_table(empty.io, empty.metadata).column_names[0] == "record_count"
    with pytest.raises(ValidationError, match=r"unknown metadata table 'nope'"):
        mt.metadata_table(empty.io, empty.metadata, "nope")


def test_entries_show_deleted_entries_with_inherited_values(hist: History) -> None:
    table = hist.table
    entries = mt.entries_table(table.io, table.metadata, snapshot_id=hist.s3)
    assert entries.column_names == [
        "status",
        "snapshot_id",
        "sequence_number",
        "file_sequence_number",
        "data_file",
        "readable_metrics",
    ]
    got = sorted(
        (
            r["status"],
            r["snapshot_id"],
            r["sequence_number"],
            r["file_sequence_number"],
            r["data_file"]["partition"]["cat"],
            r["data_file"]["record_count"],
        )
        for r in entries.to_pylist()
    )
    if not hist.independent:
        # v4: the files stayed inline in the root; the delete carried the others as EXISTING with
        # explicit tracking and wrote the removed one as a DELETED root row (facts §4.1 rule 8)
        assert got == sorted(
            [(0, hist.s2, 2, 2, "x", 1), (0, hist.s1, 1, 1, "x", 2), (2, hist.s3, 1, 1, "y", 1)]
        )
        return
    assert got == sorted(
        [
            (1, hist.s2, 2, 2, "x", 1),  # ADDED: the second append's manifest is kept as it was
            (0, hist.s1, 1, 1, "x", 2),  # EXISTING: rewritten with the first append's sequence number
            (2, hist.s3, 1, 1, "y", 1),  # DELETED by the delete snapshot, keeps its data sequence number
        ]
    )
    theirs = static(table).inspect.entries(snapshot_id=hist.s3).to_pylist()
    assert sorted(
        (
            r["status"],
            r["snapshot_id"],
            r["sequence_number"],
            r["file_sequence_number"],
            r["data_file"]["file_path"],
        )
        for r in theirs
    ) == sorted(
        (
            r["status"],
            r["snapshot_id"],
            r["sequence_number"],
            r["file_sequence_number"],
            r["data_file"]["file_path"],
        )
        for r in entries.to_pylist()
    )


def test_partitions(hist: History) -> None:
    table = hist.table
    out = mt.partitions_table(table.io, table.metadata)
    assert out.column_names == [
        "partition",
        "spec_id",
        "record_count",
        "file_count",
        "total_data_file_size_in_bytes",
        "position_delete_record_count",
        "position_delete_file_count",
        "equality_delete_record_count",
        "equality_delete_file_count",
        "last_updated_at",
        "last_updated_snapshot_id",
    ]
    files = {r["file_path"]: r for r in mt.files_table(table.io, table.metadata).to_pylist()}
    x_size = sum(r["file_size_in_bytes"] for r in files.values() if r["partition"]["cat"] == "x")
    snaps = {s.snapshot_id: s for s in table.metadata.snapshots}
    got = sorted(out.to_pylist(), key=lambda r: r["partition"]["cat"])
    assert [
        (r["partition"], r["spec_id"], r["record_count"], r["file_count"], r["last_updated_snapshot_id"])
        for r in got
    ] == [
        ({"cat": "x", "id_bucket_2": None}, 0, 3, 2, hist.s2),
        ({"cat": "z", "id_bucket_2": BucketTransform(2).apply(LongType(), 5)}, 1, 1, 1, hist.s4),
    ]
    assert got[0]["total_data_file_size_in_bytes"] == x_size
    assert got[0]["last_updated_at"] == dt.datetime.fromtimestamp(snaps[hist.s2].timestamp_ms / 1000, UTC)
    assert all(r["position_delete_record_count"] == 0 and r["equality_delete_file_count"] == 0 for r in got)
    theirs = (
        sorted(static(table).inspect.partitions().to_pylist(), key=lambda r: r["partition"]["cat"])
        if hist.independent
        else got
    )
    assert [
        (
            r["partition"],
            r["record_count"],
            r["file_count"],
            r["total_data_file_size_in_bytes"],
            r["last_updated_snapshot_id"],
        )
        for r in theirs
    ] == [
        (
            r["partition"],
            r["record_count"],
            r["file_count"],
            r["total_data_file_size_in_bytes"],
            r["last_updated_snapshot_id"],
        )
        for r in got
    ]
    at_s1 = sorted(
        mt.partitions_table(table.io, table.metadata, snapshot_id=hist.s1).to_pylist(),
        key=lambda r: r["partition"]["cat"],
    )
    assert [(r["partition"]["cat"], r["record_count"]) for r in at_s1] == [("x", 2), ("y", 1)]


# ---- tables written by other implementations ------------------------------------------------


def _norm(path: str) -> str:
    return path.replace("file:///", "/").replace("file:/", "/")


def _plain(value: Any) -> Any:
    """Map-typed columns as dicts, so entry order does not matter."""
    if isinstance(value, list) and value and isinstance(value[0], tuple):
        return dict(value)
    return value


def _by_key(table: list[dict[str, Any]], key: str, columns: list[str]) -> dict[Any, dict[str, Any]]:
    return {_norm(r[key]): {c: _plain(r.get(c)) if r.get(c) != {} else None for c in columns} for r in table}


def _summaries(rows: list[dict[str, Any]]) -> None:
    """PyIceberg reports an empty-string bound as null; do the same before comparing."""
    for r in rows:
        for s in r["partition_summaries"] or []:
            for k in ("lower_bound", "upper_bound"):
                s[k] = s[k] or None


@pytest.fixture(scope="module")
def corpus() -> list[dict[str, Any]]:
    """The acceptance tables, installed under /tmp/iceberg-acceptance."""
    from tests.support.fixtures import install_acceptance_fixtures, load_cases

    install_acceptance_fixtures()
    return load_cases()


CASES = [
    "p01_v1_appends",
    "p02_v2_mor_partitioned",
    "p03_v2_cow",
    "p04_v3_deletion_vectors",
    "p05_schema_evolution",
    "p06_partition_evolution",
    "p07_primitive_types",
    "p08_nested_types",
    "p09_branches_tags_maintenance",
    "p10a_pyiceberg_v2",
    "p10b_chdb_v2_position_deletes",
    "p10c_sail_v3",
    "p11_upgrade_v2_to_v3",
]


@pytest.mark.parametrize("case_name", CASES)
def test_metadata_tables_of_other_writers_match_pyiceberg(
    corpus: list[dict[str, Any]], case_name: str
) -> None:
    from pyiceberg.table import StaticTable

    from icefloe.formats.metadata.files import read_table_metadata
    from icefloe.io.fileio import load_file_io

    case = next(c for c in corpus if c["case"] == case_name)
    io = load_file_io({}, None)
    md = read_table_metadata(io, case["metadata_location"])
    theirs = StaticTable.from_metadata(case["metadata_location"]).inspect

    snaps = mt.snapshots_table(md).to_pylist()
    assert [(r["snapshot_id"], r["parent_id"], r["operation"]) for r in snaps] == [
        (r["snapshot_id"], r["parent_id"], r["operation"]) for r in theirs.snapshots().to_pylist()
    ]
    assert sorted((r["name"], r["type"], r["snapshot_id"]) for r in mt.refs_table(md).to_pylist()) == sorted(
        (r["name"], r["type"], r["snapshot_id"]) for r in theirs.refs().to_pylist()
    )
    history = [(r["snapshot_id"], r["is_current_ancestor"]) for r in mt.history_table(md).to_pylist()]
    assert history == [(r["snapshot_id"], r["is_current_ancestor"]) for r in theirs.history().to_pylist()]

    manifest_cols = [
        "content",
        "length",
        "partition_spec_id",
        "added_snapshot_id",
        "added_data_files_count",
        "existing_data_files_count",
        "deleted_data_files_count",
        "added_delete_files_count",
        "existing_delete_files_count",
        "deleted_delete_files_count",
        "partition_summaries",
    ]
    ours_manifests = mt.manifests_table(io, md).to_pylist()
    _summaries(ours_manifests)
    assert _by_key(ours_manifests, "path", manifest_cols) == _by_key(
        theirs.manifests().to_pylist(), "path", manifest_cols
    )

    partition_cols = [
        "record_count",
        "file_count",
        "total_data_file_size_in_bytes",
        "position_delete_record_count",
        "position_delete_file_count",
        "equality_delete_record_count",
        "equality_delete_file_count",
        "last_updated_snapshot_id",
    ]
    ours_parts = {
        repr(r.get("partition")): {c: r[c] for c in partition_cols}
        for r in mt.partitions_table(io, md).to_pylist()
    }
    their_parts = {
        repr(r.get("partition")): {c: r[c] for c in partition_cols} for r in theirs.partitions().to_pylist()
    }
    assert ours_parts == their_parts

    file_cols = [
        "content",
        "file_format",
        "spec_id",
        "record_count",
        "file_size_in_bytes",
        "column_sizes",
        "value_counts",
        "null_value_counts",
        "nan_value_counts",
        "lower_bounds",
        "upper_bounds",
        "split_offsets",
        "equality_ids",
        "sort_order_id",
        "partition",
    ]
    files = mt.files_table(io, md).to_pylist()
    entries = mt.entries_table(io, md).to_pylist()
    assert len(files) == sum(1 for e in entries if e["status"] != 2)
    try:
        their_files = theirs.files().to_pylist()
        their_entries = theirs.entries().to_pylist()
    except Exception as exc:
        pytest.skip(f"PyIceberg cannot list the files of {case_name}: {type(exc).__name__}")
    assert _by_key(files, "file_path", file_cols) == _by_key(their_files, "file_path", file_cols)

    def entry_key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (
            r["status"],
            r["snapshot_id"],
            r["sequence_number"],
            r["file_sequence_number"],
            _norm(r["data_file"]["file_path"]),
        )

    assert sorted(map(entry_key, entries)) == sorted(map(entry_key, their_entries))


def test_v3_deletion_vectors_and_row_lineage_fields(corpus: list[dict[str, Any]]) -> None:
    from icefloe.formats.metadata.files import read_table_metadata
    from icefloe.io.fileio import load_file_io

    case = next(c for c in corpus if c["case"] == "p04_v3_deletion_vectors")
    io = load_file_io({}, None)
    md = read_table_metadata(io, case["metadata_location"])
    deletes = mt.delete_files_table(io, md).to_pylist()
    assert sorted((r["partition"]["grp"], r["record_count"]) for r in deletes) == [
        ("g1", 25),
        ("g1", 75),
        ("g2", 13),
        ("g2", 40),
    ]
    for r in deletes:
        assert (r["content"], r["file_format"]) == (1, "PUFFIN")
        assert r["referenced_data_file"].endswith(".parquet")
        assert r["content_offset"] >= 4 and r["content_size_in_bytes"] > 0
    data = mt.data_files_table(io, md).to_pylist()
    assert sorted(r["first_row_id"] for r in data) == [0, 200, 300, 366, 400, 416, 425, 427, 428]
    parts = {r["partition"]["grp"]: r for r in mt.partitions_table(io, md).to_pylist()}
    assert {
        g: (
            p["record_count"],
            p["file_count"],
            p["position_delete_record_count"],
            p["position_delete_file_count"],
        )
        for g, p in parts.items()
    } == {"g1": (284, 4, 100, 2), "g2": (144, 4, 53, 2), "g3": (1, 1, 0, 0)}


def _entry_keys(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(
        (
            r["status"],
            r["snapshot_id"],
            r["sequence_number"],
            r["data_file"]["partition"]["cat"],
            r["data_file"]["record_count"],
        )
        for r in table.to_pylist()
    )


def test_all_entries_show_each_distinct_entry_once(hist: History) -> None:
    table = hist.table
    got = _entry_keys(mt.metadata_table(table.io, table.metadata, "all_entries"))
    s1, s2, s3, s4 = hist.s1, hist.s2, hist.s3, hist.s4
    common = [
        (1, s1, 1, "x", 2),  # ADDED by the first append
        (1, s1, 1, "y", 1),
        (1, s2, 2, "x", 1),
        (0, s1, 1, "x", 2),  # carried as EXISTING
        (2, s3, 1, "y", 1),  # DELETED by the delete, once, with its data sequence number
        (1, s4, 4, "z", 1),
    ]
    if hist.independent:
        assert got == sorted(common)
    else:  # v4 carries inline entries as EXISTING rows of each new root
        assert got == sorted([*common, (0, s1, 1, "y", 1), (0, s2, 2, "x", 1)])
    assert (
        mt.all_entries_table(table.io, table.metadata).schema
        == mt.entries_table(table.io, table.metadata).schema
    )


def test_v4_entries_show_deleted_rows_of_leaves_in_the_deleting_snapshot(tmp_path: Path) -> None:
    catalog = load_catalog(uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    props = {"format-version": "4", "write.v4.root.max-inline-entries": "0"}
    table = catalog.create_table("db.t", SCHEMA, partition_spec=BY_CAT, properties=props)
    table.append(rows([1, 2, 3], ["x", "x", "y"], [1.0, 2.0, 3.0]))  # one leaf: x (2 rows), y (1 row)
    s1 = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    table.delete("cat = 'y'")  # the leaf stays, y is marked in its manifest DV
    s2 = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    table.delete("cat = 'x'")  # the leaf's last live file: the leaf is dropped (DELETED reference)
    s3 = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    md = table.metadata
    assert _entry_keys(mt.entries_table(table.io, md, snapshot_id=s2)) == sorted(
        [(1, s1, 1, "x", 2), (2, s2, 1, "y", 1)]
    )
    assert _entry_keys(mt.entries_table(table.io, md, snapshot_id=s3)) == [(2, s3, 1, "x", 2)]
    assert mt.files_table(table.io, md, snapshot_id=s3).num_rows == 0
    assert _entry_keys(mt.all_entries_table(table.io, md)) == sorted(
        [(1, s1, 1, "x", 2), (1, s1, 1, "y", 1), (2, s2, 1, "y", 1), (2, s3, 1, "x", 2)]
    )
    summary = table.current_snapshot().summary  # type: ignore[union-attr]
    assert (summary["deleted-data-files"], summary["total-data-files"]) == ("1", "0")
