"""ManageSnapshots: branches, tags, retention, rollback and the current snapshot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.errors import CommitConflict, ValidationError
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import RefType, Snapshot, SnapshotLogEntry, SnapshotRef
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import LongType, NestedField
from icefloe.spec.updates import AddSnapshot, RemoveSnapshotRef, SetSnapshotRef, apply_updates
from icefloe.txn.refs import ManageSnapshots, ancestor_ids, is_ancestor
from tests.support.interop import read_with_pyiceberg
from tests.txn.test_schema_evolution import NOW, commit, ctx, evolve, make_md, new_table


def snapshot(sid: int, parent: int | None, seq: int) -> Snapshot:
    """A snapshot without files (ref handling never reads them)."""
    return Snapshot(sid, NOW - 1000 + seq, {"operation": "append"}, parent, seq, f"/tmp/t/snap-{sid}.avro")


@pytest.fixture
def md() -> TableMetadata:
    """main: 1 <- 2 <- 3; snapshot 4 (child of 2) is on branch 'dev'; tag 'v1' at 1."""
    md = make_md()
    for sid, parent, seq in ((1, None, 1), (2, 1, 2), (3, 2, 3)):
        md = apply_updates(md, [AddSnapshot(snapshot(sid, parent, seq)), SetSnapshotRef("main", sid)], NOW)
    return apply_updates(
        md,
        [AddSnapshot(snapshot(4, 2, 4)), SetSnapshotRef("dev", 4), SetSnapshotRef("v1", 1, RefType.TAG)],
        NOW,
    )


def test_ancestry_helpers(md: TableMetadata) -> None:
    assert list(ancestor_ids(md, 4)) == [4, 2, 1]
    assert is_ancestor(md, 2, 3) and is_ancestor(md, 3, 3) and not is_ancestor(md, 4, 3)


def test_create_branch_at_current_snapshot_with_retention(md: TableMetadata) -> None:
    update = ManageSnapshots(md).create_branch(
        "audit", min_snapshots_to_keep=2, max_snapshot_age_ms=60_000, max_ref_age_ms=3_600_000
    )
    assert update.apply(ctx(md), md) == [SetSnapshotRef("audit", 3, RefType.BRANCH, 2, 60_000, 3_600_000)]
    new = commit(md, update)
    assert new.refs["audit"] == SnapshotRef(3, RefType.BRANCH, 2, 60_000, 3_600_000)
    assert new.current_snapshot_id == 3 and new.snapshot_log == md.snapshot_log


def test_create_tag_and_branch_errors_name_the_ref_and_snapshot(md: TableMetadata) -> None:
    new = commit(md, ManageSnapshots(md).create_tag("release", 2, max_ref_age_ms=10).create_branch("b", 4))
    assert new.refs["release"] == SnapshotRef(2, RefType.TAG, max_ref_age_ms=10)
    assert new.refs["b"] == SnapshotRef(4, RefType.BRANCH)
    with pytest.raises(ValidationError, match=r"a branch named 'dev' already exists"):
        ManageSnapshots(md).create_branch("dev")
    with pytest.raises(ValidationError, match=r"a tag named 'v1' already exists"):
        ManageSnapshots(md).create_tag("v1", 2)
    with pytest.raises(ValidationError, match=r"tag 'x'.*snapshot 99 does not exist"):
        ManageSnapshots(md).create_tag("x", 99)
    with pytest.raises(ValidationError, match=r"'main' must be a branch"):
        ManageSnapshots(md).create_tag("main", 1)
    with pytest.raises(ValidationError, match=r"max_ref_age_ms must be positive"):
        ManageSnapshots(md).create_tag("t", 1, max_ref_age_ms=0)
    empty = make_md()
    with pytest.raises(ValidationError, match=r"cannot create branch 'b': the table has no snapshot"):
        ManageSnapshots(empty).create_branch("b")


def test_replace_branch_keeps_retention_and_replace_tag(md: TableMetadata) -> None:
    md = commit(md, ManageSnapshots(md).set_min_snapshots_to_keep("dev", 5))
    new = commit(md, ManageSnapshots(md).replace_branch("dev", 1).replace_tag("v1", 3))
    assert new.refs["dev"] == SnapshotRef(1, RefType.BRANCH, 5)
    assert new.refs["v1"] == SnapshotRef(3, RefType.TAG)
    with pytest.raises(ValidationError, match=r"'v1' is a tag, not a branch"):
        ManageSnapshots(md).replace_branch("v1", 2)
    with pytest.raises(ValidationError, match=r"no tag named 'nope'"):
        ManageSnapshots(md).replace_tag("nope", 2)


def test_replacing_main_moves_the_current_snapshot_and_logs_it(md: TableMetadata) -> None:
    new = commit(md, ManageSnapshots(md).replace_branch("main", 4))
    assert new.current_snapshot_id == 4
    assert new.snapshot_log[-1] == SnapshotLogEntry(NOW, 4)


def test_fast_forward(md: TableMetadata) -> None:
    behind = commit(md, ManageSnapshots(md).create_branch("old", 1))
    new = commit(behind, ManageSnapshots(behind).fast_forward("old", "main"))
    assert new.refs["old"].snapshot_id == 3
    with pytest.raises(
        ValidationError,
        match=r"cannot fast-forward 'dev' to 'main': snapshot 4 \(dev\) is not an "
        r"ancestor of snapshot 3 \(main\)",
    ):
        ManageSnapshots(md).fast_forward("dev", "main")
    created = commit(md, ManageSnapshots(md).fast_forward("fresh", "dev"))
    assert created.refs["fresh"] == SnapshotRef(4, RefType.BRANCH)
    with pytest.raises(ValidationError, match=r"no branch or tag named 'nope'"):
        ManageSnapshots(md).fast_forward("dev", "nope")
    with pytest.raises(ValidationError, match=r"'v1': it is a tag"):
        ManageSnapshots(md).fast_forward("v1", "main")


def test_remove_and_rename(md: TableMetadata) -> None:
    update = ManageSnapshots(md).remove_tag("v1").rename_branch("dev", "feature")
    assert update.apply(ctx(md), md) == [
        RemoveSnapshotRef("dev"),
        RemoveSnapshotRef("v1"),
        SetSnapshotRef("feature", 4, RefType.BRANCH),
    ]
    new = commit(md, ManageSnapshots(md).remove_branch("dev"))
    assert set(new.refs) == {"main", "v1"}
    with pytest.raises(ValidationError, match=r"cannot remove the main branch"):
        ManageSnapshots(md).remove_branch("main")
    with pytest.raises(ValidationError, match=r"'v1' is a tag, not a branch"):
        ManageSnapshots(md).remove_branch("v1")
    with pytest.raises(ValidationError, match=r"no tag named 'dev'|'dev' is a branch, not a tag"):
        ManageSnapshots(md).remove_tag("dev")
    with pytest.raises(ValidationError, match=r"cannot rename the main branch"):
        ManageSnapshots(md).rename_branch("main", "trunk")


def test_retention_setters(md: TableMetadata) -> None:
    new = commit(
        md,
        ManageSnapshots(md)
        .set_min_snapshots_to_keep("main", 3)
        .set_max_snapshot_age_ms("main", 86_400_000)
        .set_max_ref_age_ms("v1", 1000)
        .set_max_ref_age_ms("dev", 2000),
    )
    assert new.refs["main"] == SnapshotRef(3, RefType.BRANCH, 3, 86_400_000)
    assert new.refs["v1"] == SnapshotRef(1, RefType.TAG, max_ref_age_ms=1000)
    assert new.refs["dev"] == SnapshotRef(4, RefType.BRANCH, max_ref_age_ms=2000)
    cleared = commit(new, ManageSnapshots(new).set_min_snapshots_to_keep("main", None))
    assert cleared.refs["main"].min_snapshots_to_keep is None
    with pytest.raises(ValidationError, match=r"'v1' is a tag, not a branch"):
        ManageSnapshots(md).set_min_snapshots_to_keep("v1", 2)
    with pytest.raises(ValidationError, match=r"main branch never expires"):
        ManageSnapshots(md).set_max_ref_age_ms("main", 10)


def test_rollback_and_set_current(md: TableMetadata) -> None:
    rolled = commit(md, ManageSnapshots(md).rollback_to_snapshot(1))
    assert rolled.current_snapshot_id == 1 and rolled.refs["main"].snapshot_id == 1
    assert rolled.snapshot_log[-1] == SnapshotLogEntry(NOW, 1)
    with pytest.raises(
        ValidationError,
        match=r"cannot roll back to snapshot 4: it is not an ancestor of main's current snapshot 3",
    ):
        ManageSnapshots(md).rollback_to_snapshot(4)
    with pytest.raises(ValidationError, match=r"snapshot 99 does not exist"):
        ManageSnapshots(md).rollback_to_snapshot(99)
    current = commit(md, ManageSnapshots(md).set_current_snapshot(4))
    assert current.current_snapshot_id == 4
    by_time = commit(md, ManageSnapshots(md).rollback_to_timestamp(NOW - 1000 + 3))
    assert by_time.current_snapshot_id == 2
    with pytest.raises(ValidationError, match=r"no snapshot older than"):
        ManageSnapshots(md).rollback_to_timestamp(0)


def test_operations_see_each_other_in_order(md: TableMetadata) -> None:
    update = ManageSnapshots(md).create_branch("b", 1).fast_forward("b", "dev").create_tag("t", 4)
    new = commit(md, update)
    assert new.refs["b"].snapshot_id == 4 and new.refs["t"].snapshot_id == 4
    assert ManageSnapshots(md).create_branch("x", 1).remove_branch("x").apply(ctx(md), md) == []


def test_preview_and_failed_call(md: TableMetadata) -> None:
    update = ManageSnapshots(md).create_branch("b", 1)
    with pytest.raises(ValidationError):
        update.create_branch("b", 2)
    assert update.preview()["b"] == SnapshotRef(1, RefType.BRANCH)


def test_concurrent_ref_changes(md: TableMetadata) -> None:
    ours = ManageSnapshots(md).create_branch("b", 2)
    theirs = commit(md, ManageSnapshots(md).create_branch("b", 1))
    with pytest.raises(CommitConflict, match=r"changed concurrently.*'b' already exists") as info:
        ours.apply(ctx(theirs), theirs)
    assert info.value.retryable is False
    # an explicit snapshot stays; fast-forward resolves its target at commit time
    moved = apply_updates(md, [AddSnapshot(snapshot(5, 3, 5)), SetSnapshotRef("main", 5)], NOW)
    assert commit(moved, ManageSnapshots(md).create_branch("c", 3)).refs["c"].snapshot_id == 3
    follow = ManageSnapshots(md).create_branch("d", 1).fast_forward("d", "main")
    assert commit(moved, follow).refs["d"].snapshot_id == 5


def test_metadata_without_a_main_ref() -> None:
    md = make_md()
    md = apply_updates(md, [AddSnapshot(snapshot(1, None, 1)), SetSnapshotRef("main", 1)], NOW)
    legacy = md.with_changes(refs={})
    new = commit(legacy, ManageSnapshots(legacy).create_branch("b"))
    assert new.refs == {"b": SnapshotRef(1, RefType.BRANCH)}


# ---- end to end through a SQL catalog table -------------------------------------------------


@pytest.mark.parametrize("format_version", [2, 3, 4])
def test_end_to_end_branches_tags_and_rollback(tmp_path: Path, format_version: int) -> None:
    table = new_table(tmp_path, Schema(NestedField(1, "id", LongType(), True)), format_version=format_version)
    independent = format_version < 4  # PyIceberg cannot read v4 (root manifest) tables
    for batch in ([1], [2], [3]):
        table.append(pa.table({"id": pa.array(batch, pa.int64())}))
    s1, s2, s3 = (s.snapshot_id for s in table.snapshots())
    evolve(table, ManageSnapshots(table.metadata).create_tag("first", s1).create_branch("audit", s2))
    table.append(pa.table({"id": pa.array([20], pa.int64())}), branch="audit")
    audit_head = table.refs()["audit"].snapshot_id
    assert table.commit_target.catalog.load_table("db.t").current_snapshot().snapshot_id == s3  # type: ignore[union-attr]

    def ids(**scan: Any) -> list[int]:
        return sorted(r["id"] for r in table.scan(**scan).to_arrow().to_pylist())

    assert ids(ref="first") == [1]
    assert ids(ref="audit") == [1, 2, 20]
    assert ids() == [1, 2, 3]
    if independent:
        audit = read_with_pyiceberg(table.metadata_location, ref="audit")
        assert sorted(audit.column("id").to_pylist()) == [1, 2, 20]

    evolve(table, ManageSnapshots(table.metadata).rollback_to_snapshot(s2))
    fresh = table.commit_target.catalog.load_table("db.t")
    assert fresh.current_snapshot().snapshot_id == s2  # type: ignore[union-attr]
    assert [e.snapshot_id for e in fresh.history()] == [s1, s2, s3, s2]
    assert ids() == [1, 2]
    with pytest.raises(ValidationError, match=rf"cannot fast-forward 'main' to 'first': snapshot {s2}"):
        ManageSnapshots(fresh.metadata).fast_forward("main", "first")
    evolve(
        table,
        ManageSnapshots(table.metadata)
        .fast_forward("main", "audit")
        .remove_tag("first")
        .set_max_ref_age_ms("audit", 86_400_000),
    )
    fresh = table.commit_target.catalog.load_table("db.t")
    assert fresh.current_snapshot().snapshot_id == audit_head  # type: ignore[union-attr]
    assert set(fresh.refs()) == {"main", "audit"}
    assert fresh.refs()["audit"].max_ref_age_ms == 86_400_000
    assert sorted(r["id"] for r in fresh.scan().to_arrow().to_pylist()) == [1, 2, 20]
    # main continues from the audit head; the abandoned s3 stays readable by id
    fresh.append(pa.table({"id": pa.array([30], pa.int64())}))
    assert sorted(r["id"] for r in fresh.scan().to_arrow().to_pylist()) == [1, 2, 20, 30]
    assert sorted(r["id"] for r in fresh.scan(snapshot_id=s3).to_arrow().to_pylist()) == [1, 2, 3]
    if independent:
        assert sorted(read_with_pyiceberg(fresh.metadata_location).column("id").to_pylist()) == [1, 2, 20, 30]


@pytest.mark.parametrize("format_version", [2, 4])
def test_end_to_end_commit_to_a_branch_keeps_its_retention(tmp_path: Path, format_version: int) -> None:
    table = new_table(tmp_path, Schema(NestedField(1, "id", LongType(), True)), format_version=format_version)
    table.append(pa.table({"id": pa.array([1], pa.int64())}))
    evolve(
        table,
        ManageSnapshots(table.metadata).create_branch(
            "audit", min_snapshots_to_keep=3, max_ref_age_ms=86_400_000
        ),
    )
    table.append(pa.table({"id": pa.array([2], pa.int64())}), branch="audit")
    ref = table.commit_target.catalog.load_table("db.t").refs()["audit"]
    assert (ref.min_snapshots_to_keep, ref.max_ref_age_ms) == (3, 86_400_000)
