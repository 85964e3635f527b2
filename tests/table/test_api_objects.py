"""The object API: MERGE builder clauses in order, CommitOptions, inspect/maintenance, Arrow schemas,
static tables, the package-root facade and the deprecated keyword names."""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import icefloe
from icefloe.catalog.sql import SqlCatalog
from icefloe.dml.merge_clauses import MergeSpec, WhenMatched, spec_from_flags
from icefloe.errors import Unsupported, ValidationError
from icefloe.spec.types import IntegerType, ListType, LongType, MapType, NestedField, StringType, StructType
from icefloe.table import Table
from icefloe.table.table_transaction import TableTransaction

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    cat = SqlCatalog("api", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat


def _rows(table: Table) -> list[tuple[int, str | None]]:
    return sorted((r["id"], r["v"]) for r in table.to_arrow().to_pylist())


def _table(catalog: SqlCatalog, version: int, mode: str = "merge-on-read") -> Table:
    t = catalog.create_table(
        f"db.t{version}", SCHEMA, properties={"format-version": str(version), "write.merge.mode": mode}
    )
    t.append(pa.table({"id": pa.array([1, 2, 3, 5], pa.int64()), "v": ["a", "b", "c", "e"]}))
    return t


@pytest.mark.parametrize("version", [2, 3, 4])
@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_merge_clauses_apply_in_order_first_match_wins(catalog: SqlCatalog, version: int, mode: str) -> None:
    table = _table(catalog, version, mode)
    source = pa.table({"id": pa.array([2, 3, 4, 6], pa.int64()), "v": ["B", "del", "D", "F"]})
    result = (
        table.merge(source, on="id")
        .when_matched_delete(condition=pc.field("source.v") == "del")
        .when_matched_update()
        .when_not_matched_insert(condition=pc.field("source.id") == 4)
        .when_not_matched_insert(values={"id": pc.field("source.id") * 10, "v": "ins"})
        .when_not_matched_by_source_update(set={"v": "one"}, condition=pc.field("id") == 1)
        .when_not_matched_by_source_delete()
        .execute()
    )
    assert (result.deleted_rows, result.updated_rows, result.inserted_rows) == (2, 2, 2)
    assert _rows(table) == [(1, "one"), (2, "B"), (4, "D"), (60, "ins")]
    assert len(table.snapshots()) == 2


def test_merge_rows_no_clause_applies_to_stay(catalog: SqlCatalog) -> None:
    table = _table(catalog, 3)
    result = (
        table.merge(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["x", "y"]}), on="id")
        .when_matched_update(set={"v": pc.field("source.v")}, condition=pc.field("id") == 2)
        .execute()
    )
    assert (result.updated_rows, result.inserted_rows, result.deleted_rows) == (1, 0, 0)
    assert _rows(table) == [(1, "a"), (2, "y"), (3, "c"), (5, "e")]


def test_merge_builder_refuses_unreachable_clauses_and_reuse(catalog: SqlCatalog) -> None:
    table = _table(catalog, 3)
    source = pa.table({"id": pa.array([1], pa.int64()), "v": ["x"]})
    with pytest.raises(ValidationError, match="must be the last"):
        table.merge(source, on="id").when_matched_update().when_matched_delete().execute()
    with pytest.raises(ValidationError, match="at least one clause"):
        table.merge(source, on="id").execute()
    builder = table.merge(source, on="id").when_matched_delete()
    builder.execute()
    with pytest.raises(ValidationError, match="already executed"):
        builder.execute()
    assert _rows(table) == [(2, "b"), (3, "c"), (5, "e")]


def test_merge_builder_dropped_without_execute_warns(catalog: SqlCatalog) -> None:
    table = _table(catalog, 3)
    with pytest.warns(ResourceWarning, match="without execute"):
        builder = table.merge(pa.table({"id": pa.array([1], pa.int64()), "v": ["x"]}), on="id")
        builder.when_matched_delete()
        del builder
    assert len(table.snapshots()) == 1


def test_merge_in_a_transaction_commits_with_the_other_changes(catalog: SqlCatalog) -> None:
    table = _table(catalog, 3)
    with table.transaction() as tx:
        tx.merge(
            pa.table({"id": pa.array([9], pa.int64()), "v": ["n"]}), on="id"
        ).when_not_matched_insert().execute()
        tx.set_properties({"owner": "ops"})
    assert _rows(table)[-1] == (9, "n")
    assert table.properties["owner"] == "ops"
    assert len(table.snapshots()) == 2


def test_spec_from_flags_matches_the_keyword_form() -> None:
    spec = spec_from_flags("id", True, pc.field("source.gone"), True, False)
    assert [c.action for c in spec.matched] == ["delete", "update"]
    assert spec.matched[1] == WhenMatched("update", None, None)
    assert len(spec.not_matched) == 1 and spec.not_matched_by_source == ()
    with pytest.raises(ValidationError, match="both updated and deleted"):
        spec_from_flags("id", True, True)
    with pytest.raises(ValidationError, match="at least one key"):
        MergeSpec(())


def test_commit_options_branch_properties_and_isolation(catalog: SqlCatalog) -> None:
    table = _table(catalog, 3)
    opts = icefloe.CommitOptions(branch="audit", snapshot_properties={"job": "n1"})
    table.manage_snapshots().create_branch("audit", table.current_snapshot().snapshot_id).commit()
    table.append(pa.table({"id": pa.array([7], pa.int64()), "v": ["g"]}), options=opts)
    head = table.snapshot_by_id(table.refs()["audit"].snapshot_id)
    assert head.summary["job"] == "n1"
    assert _rows(table) == [(1, "a"), (2, "b"), (3, "c"), (5, "e")]  # main unchanged
    assert table.scan(ref="audit").to_arrow().num_rows == 5
    with pytest.raises(ValidationError, match="isolation_level"):
        icefloe.CommitOptions(isolation_level="linearizable")
    snapshot = icefloe.CommitOptions(isolation_level="SNAPSHOT")
    assert snapshot.isolation_for(table.metadata, "delete").value == "snapshot"
    assert icefloe.CommitOptions().isolation_for(table.metadata, "delete").value == "serializable"


def test_deprecated_keywords_still_work_with_a_warning(catalog: SqlCatalog) -> None:
    table = _table(catalog, 3)
    with pytest.warns(DeprecationWarning, match="delete_filter"):
        table.delete(delete_filter="id = 1")
    with pytest.warns(DeprecationWarning, match="selected_fields"):
        got = table.scan(row_filter=None, selected_fields=("id",)).to_arrow()
    assert got.column_names == ["id"] and got.num_rows == 3
    with pytest.warns(DeprecationWarning, match="CommitOptions"):
        table.append(pa.table({"id": pa.array([8], pa.int64()), "v": ["h"]}), snapshot_properties={"k": "v"})
    assert table.current_snapshot().summary["k"] == "v"
    with pytest.warns(DeprecationWarning, match="merge\\(..., when_matched_update"):
        result = table.merge(
            pa.table({"id": pa.array([2], pa.int64()), "v": ["z"]}), on="id", when_matched_update=True
        )
    assert result.updated_rows == 1
    with pytest.raises(ValidationError, match="either options"):
        table.append(
            pa.table({"id": pa.array([9], pa.int64()), "v": ["i"]}),
            options=icefloe.CommitOptions(),
            branch="main",
        )


def test_deprecation_warnings_point_at_the_users_call(catalog: SqlCatalog) -> None:
    """However many icefloe frames lie between (Table forwards to TableTransaction), the warning names
    the line that used the old keyword, so the user knows what to change."""
    table = _table(catalog, 3)
    row = pa.table({"id": pa.array([8], pa.int64()), "v": ["h"]})
    calls = [
        lambda: table.delete(delete_filter="id = 1"),
        lambda: table.update({"v": "x"}, update_filter="id = 2"),
        lambda: table.overwrite(row, overwrite_filter="id = 8"),
        lambda: table.append(pa.table({"id": pa.array([9], pa.int64()), "v": ["i"]}), branch="main"),
        lambda: table.upsert(row, on="id", snapshot_properties={"k": "v"}),
        lambda: table.scan(selected_fields=("id",)),
        lambda: table.merge(row, on="id", when_matched_update=True),
        lambda: table.maintenance.rewrite_data_files(rewrite_all=True, branch="main"),
    ]
    for call in calls:
        with pytest.warns(DeprecationWarning) as caught:
            call()
        assert [w.filename for w in caught] == [__file__], [str(w.message) for w in caught]
    with table.transaction() as tx, pytest.warns(DeprecationWarning) as caught:
        tx.delete(delete_filter="id = 3")
    assert [w.filename for w in caught] == [__file__]
    assert _rows(table) == [(2, "x"), (5, "e"), (8, "h"), (9, "i")]


def test_table_writes_share_the_transaction_signatures() -> None:
    """``Table.<verb>`` is ``TableTransaction.<verb>`` committed at once: one signature for both."""
    for verb in ("append", "overwrite", "delete", "update", "upsert"):
        table_method, queue_method = getattr(Table, verb), getattr(TableTransaction, verb)
        assert inspect.signature(table_method) == inspect.signature(queue_method), verb
        assert table_method.__qualname__ == f"Table.{verb}"
        assert table_method.__doc__ != queue_method.__doc__, verb  # says "commits", not "queues"


def test_inspect_and_maintenance_accessors(catalog: SqlCatalog) -> None:
    table = _table(catalog, 3)
    table.delete("id = 5", mode="merge-on-read")
    assert table.inspect.snapshots().num_rows == 2
    assert table.inspect.data_files().num_rows == 1
    assert table.inspect.delete_files().num_rows == 1
    assert table.inspect.table("history").num_rows == 2
    result = table.maintenance.rewrite_data_files(rewrite_all=True)
    assert result.rewritten_data_files == 1 and table.inspect.delete_files().num_rows == 0
    expired = table.maintenance.expire_snapshots(
        older_than=table.current_snapshot().timestamp_ms, retain_last=1
    )
    assert len(expired.expired_snapshot_ids) == 2
    assert _rows(table) == [(1, "a"), (2, "b"), (3, "c")]
    assert table.maintenance.remove_orphan_files(dry_run=True).orphan_files == ()


def test_create_table_from_an_arrow_schema_assigns_fresh_ids(catalog: SqlCatalog) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"99"}),
            pa.field("tags", pa.list_(pa.string())),
            pa.field("m", pa.map_(pa.string(), pa.int32())),
            pa.field("s", pa.struct([pa.field("a", pa.int32())])),
        ]
    )
    table = catalog.create_table("db.arrow", schema)
    assert table.schema().fields == (
        NestedField(1, "id", LongType(), True),
        NestedField(2, "tags", ListType(5, StringType(), False)),
        NestedField(3, "m", MapType(6, StringType(), 7, IntegerType(), False)),
        NestedField(4, "s", StructType(NestedField(8, "a", IntegerType()))),
    )


def test_static_table_reads_and_refuses_writes(catalog: SqlCatalog) -> None:
    table = _table(catalog, 3)
    static = icefloe.open_static_table(table.metadata_location)
    assert _rows(static) == _rows(table)
    with pytest.raises(Unsupported, match="read-only"):
        static.append(pa.table({"id": pa.array([1], pa.int64()), "v": ["x"]}))
    assert len(table.refresh().snapshots()) == 1
    assert static.inspect.snapshots().num_rows == 1


def test_package_root_exports_load_lazily() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert icefloe.load_catalog is not None and icefloe.Table is Table
    with pytest.raises(AttributeError):
        icefloe.nothing  # noqa: B018
