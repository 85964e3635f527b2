"""Retention rules of snapshot expiry (``txn.expire_snapshots.select_expired``) on hand-built histories."""

from __future__ import annotations

import pytest

from icefloe.errors import ValidationError
from icefloe.spec.partitioning import UNPARTITIONED
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import MAIN_BRANCH, RefType, Snapshot, SnapshotRef
from icefloe.spec.sort_order import UNSORTED
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import LongType, NestedField
from icefloe.spec.updates import new_table_metadata
from icefloe.txn.snapshot_retention import (
    MAX_REF_AGE_MS,
    MAX_SNAPSHOT_AGE_MS,
    MIN_SNAPSHOTS_TO_KEEP,
    RetentionRequest,
    select_expired,
)

DAY = 24 * 3600 * 1000
NOW = 100 * DAY


def _metadata(
    snapshots: list[tuple[int, int | None, int]],
    refs: dict[str, SnapshotRef],
    properties: dict[str, str] | None = None,
) -> TableMetadata:
    """Metadata with snapshots ``(id, parent, age in days)`` and the given refs."""
    schema = Schema(NestedField(1, "id", LongType(), True))
    base = new_table_metadata(schema, UNPARTITIONED, UNSORTED, "file:///t", properties or {})
    snaps = tuple(
        Snapshot(sid, NOW - age * DAY, {"operation": "append"}, parent, n + 1, manifest_list=f"/t/{sid}.avro")
        for n, (sid, parent, age) in enumerate(snapshots)
    )
    main = refs.get(MAIN_BRANCH)
    return base.with_changes(
        snapshots=snaps, refs=refs, current_snapshot_id=None if main is None else main.snapshot_id
    )


# main: 1 <- 2 <- 3 <- 4 <- 5, aged 10, 8, 6, 4, 2 days
LINE = [(1, None, 10), (2, 1, 8), (3, 2, 6), (4, 3, 4), (5, 4, 2)]


def _expired(md: TableMetadata, **request: object) -> list[int]:
    return list(select_expired(md, NOW, RetentionRequest(**request)).snapshot_ids)  # type: ignore[arg-type]


def test_default_age_is_five_days_and_keeps_the_head() -> None:
    md = _metadata(LINE, {MAIN_BRANCH: SnapshotRef(5)})
    assert _expired(md) == [1, 2, 3]
    assert _expired(md, older_than_ms=NOW) == [1, 2, 3, 4]  # the head always stays
    assert _expired(md, older_than_ms=NOW - 7 * DAY) == [1, 2]


def test_table_properties_set_the_defaults() -> None:
    props = {MAX_SNAPSHOT_AGE_MS: str(3 * DAY), MIN_SNAPSHOTS_TO_KEEP: "3"}
    md = _metadata(LINE, {MAIN_BRANCH: SnapshotRef(5)}, props)
    assert _expired(md) == [1, 2]  # 4 is older than 3 days, but the newest three stay
    assert _expired(md, retain_last=1) == [1, 2, 3, 4]


def test_retain_last_keeps_the_newest_ancestors_whatever_their_age() -> None:
    md = _metadata(LINE, {MAIN_BRANCH: SnapshotRef(5)})
    assert _expired(md, older_than_ms=NOW, retain_last=2) == [1, 2, 3]
    assert _expired(md, older_than_ms=NOW, retain_last=10) == []


def test_branch_settings_override_the_call() -> None:
    # branch b: 6 <- 7 on top of 2; it keeps snapshots newer than 9 days and at least 3 of them
    history = [*LINE, (6, 2, 5), (7, 6, 1)]
    refs = {
        MAIN_BRANCH: SnapshotRef(5),
        "b": SnapshotRef(7, RefType.BRANCH, min_snapshots_to_keep=3, max_snapshot_age_ms=9 * DAY),
    }
    md = _metadata(history, refs)
    # main keeps 5 only; b keeps 7, 6, 2 (count 3) and 2 is also younger than 9 days
    assert _expired(md, older_than_ms=NOW) == [1, 3, 4]


def test_tags_keep_their_snapshot_and_age_out_with_max_ref_age() -> None:
    refs = {MAIN_BRANCH: SnapshotRef(5), "v1": SnapshotRef(2, RefType.TAG)}
    md = _metadata(LINE, refs)
    assert _expired(md, older_than_ms=NOW) == [1, 3, 4]
    aged = {**refs, "v1": SnapshotRef(2, RefType.TAG, max_ref_age_ms=7 * DAY)}
    expiry = select_expired(_metadata(LINE, aged), NOW, RetentionRequest(older_than_ms=NOW))
    assert expiry.removed_refs == ("v1",)
    assert list(expiry.snapshot_ids) == [1, 2, 3, 4]


def test_table_max_ref_age_never_removes_main() -> None:
    refs = {
        MAIN_BRANCH: SnapshotRef(5),
        "old": SnapshotRef(3, RefType.TAG),
        "new": SnapshotRef(4, RefType.TAG),
    }
    md = _metadata(LINE, refs, {MAX_REF_AGE_MS: str(5 * DAY)})
    expiry = select_expired(md, NOW, RetentionRequest(older_than_ms=NOW))
    assert expiry.removed_refs == ("old",)
    assert list(expiry.snapshot_ids) == [1, 2, 3]


def test_unreferenced_snapshots_expire_by_age_only() -> None:
    # 6 and 7 were rolled back: no ref reaches them
    history = [*LINE, (6, 5, 3), (7, 6, 1)]
    md = _metadata(history, {MAIN_BRANCH: SnapshotRef(5)})
    assert _expired(md, older_than_ms=NOW - 2 * DAY) == [1, 2, 3, 4, 6]
    assert _expired(md) == [1, 2, 3]  # 5 days: 6 and 7 are younger


def test_explicit_ids_alone_expire_only_those() -> None:
    md = _metadata(LINE, {MAIN_BRANCH: SnapshotRef(5)})
    assert _expired(md, snapshot_ids=(3,)) == [3]
    assert _expired(md, snapshot_ids=(4,), older_than_ms=NOW - 7 * DAY) == [1, 2, 4]


def test_refused_requests_name_the_problem() -> None:
    md = _metadata(LINE, {MAIN_BRANCH: SnapshotRef(5), "t": SnapshotRef(3, RefType.TAG)})
    with pytest.raises(ValidationError, match="head of branch 'main'"):
        _expired(md, snapshot_ids=(5,))
    with pytest.raises(ValidationError, match="head of tag 't'"):
        _expired(md, snapshot_ids=(3,), older_than_ms=NOW)
    with pytest.raises(ValidationError, match="no such snapshot"):
        _expired(md, snapshot_ids=(99,))
    with pytest.raises(ValidationError, match="retain_last"):
        _expired(md, retain_last=0)
    bad = _metadata(LINE, {MAIN_BRANCH: SnapshotRef(5)}, {MIN_SNAPSHOTS_TO_KEEP: "many"})
    with pytest.raises(ValidationError, match=MIN_SNAPSHOTS_TO_KEEP):
        _expired(bad)
