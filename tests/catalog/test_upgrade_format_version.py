"""``Table.upgrade_format_version``: v1 -> v2 -> v3 -> v4 (step by step and at once), refusals,
races, and tables written by Iceberg Java upgraded to v4.

Expected rows are kept by a plain Python model of the table (independent of icefloe's scan);
before v4, every state is also read through PyIceberg, and a table born v3 through DuckDB
(independent readers cannot read v4 roots).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog import load_catalog
from icefloe.catalog.base import Catalog
from icefloe.errors import Unsupported, ValidationError
from icefloe.spec.content import FileContent
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.table.table import Table
from icefloe.tree.read_seam import manifest_refs
from tests.scan.test_acceptance_fixtures import IcefloeBuilder
from tests.support.filter_expr import convert
from tests.support.fixtures import (
    case_by_name,
    expected_result,
    expected_table,
    fingerprint,
    install_acceptance_fixtures,
)
from tests.support.interop import read_with_duckdb, read_with_pyiceberg

pytestmark = pytest.mark.catalog_namespaces("db")

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "cat", StringType(), False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"))


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    # The Iceberg Java corpus tables registered below live outside the warehouse.
    cat = load_catalog(
        "up",
        uri=f"sqlite:///{tmp_path}/c.db",
        warehouse=str(tmp_path / "wh"),
        **{"allow-external-locations": "true"},
    )
    cat.create_namespace("db")
    return cat


def batch(ids: range) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "cat": [("a", "b", "c")[i % 3] for i in ids]})


def rows_of(table: Table, **scan: Any) -> list[tuple[int, str]]:
    got = table.scan(columns=("id", "cat"), **scan).to_arrow()
    return sorted(zip(got["id"].to_pylist(), got["cat"].to_pylist(), strict=True))


def model(ids: set[int]) -> list[tuple[int, str]]:
    return sorted((i, ("a", "b", "c")[i % 3]) for i in ids)


def independent_rows(table: Table) -> list[tuple[int, str]]:
    """The rows as PyIceberg reads them (DuckDB 1.5.5 refuses the v1 manifests of an upgraded
    table: it wants explicit sequence numbers on their EXISTING entries, which v1 cannot hold and
    the spec says to read as 0)."""
    got = read_with_pyiceberg(table.metadata_location, columns=["id", "cat"])
    return sorted(zip(got["id"].to_pylist(), got["cat"].to_pylist(), strict=True))


def check_history(table: Table, history: list[tuple[int, set[int]]]) -> None:
    """Every recorded snapshot still reads as it did (time travel across the upgrades)."""
    for snapshot_id, ids in history:
        assert rows_of(table, snapshot_id=snapshot_id) == model(ids), snapshot_id


def test_v1_to_v4_step_by_step(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, partition_spec=SPEC, properties={"format-version": "1"})
    live: set[int] = set()
    history: list[tuple[int, set[int]]] = []

    def commit_and_record(action: str, ids: range | None = None, where: str | None = None) -> None:
        if action == "append":
            assert ids is not None
            table.append(batch(ids))
            live.update(ids)
        elif action == "delete":
            assert where is not None
            table.delete(where)
            column, value = (part.strip().strip("'") for part in where.split("="))
            live.difference_update(
                {i for i in live if (str(i) if column == "id" else ("a", "b", "c")[i % 3]) == value}
            )
        snap = table.current_snapshot()
        assert snap is not None
        history.append((snap.snapshot_id, set(live)))
        assert rows_of(table) == model(live)
        if table.format_version < 4:
            assert independent_rows(table) == model(live)

    commit_and_record("append", range(0, 30))
    commit_and_record("delete", where="id = 4")

    table.upgrade_format_version(2)
    assert table.format_version == 2 and catalog.load_table("db.t").format_version == 2
    check_history(table, history)
    commit_and_record("append", range(30, 40))
    table.overwrite(batch(range(100, 103)), overwrite_filter="cat = 'b'")
    live.difference_update({i for i in live if i % 3 == 1})
    live.update(range(100, 103))
    commit_and_record("recorded")
    commit_and_record("delete", where="id = 6")

    table.upgrade_format_version(3)
    assert table.metadata.next_row_id == 0
    check_history(table, history)
    commit_and_record("append", range(40, 45))
    commit_and_record("delete", where="id = 9")
    # every live row has a distinct row id once the v3 commits assigned them
    lineage = table.scan(columns=("id", "_row_id")).to_arrow()
    row_ids = lineage["_row_id"].to_pylist()
    assert None not in row_ids and len(set(row_ids)) == len(row_ids)

    before = table.metadata_location
    table.upgrade_format_version(4)
    assert table.format_version == 4 and table.metadata_location != before
    assert table.current_snapshot().snapshot_id == history[-1][0]  # type: ignore[union-attr]
    check_history(table, history)
    same_ids = table.scan(columns=("id", "_row_id")).to_arrow()
    assert sorted(same_ids.to_pylist(), key=lambda r: r["id"]) == sorted(
        lineage.to_pylist(), key=lambda r: r["id"]
    )

    commit_and_record("append", range(45, 50))
    first_v4 = table.current_snapshot()
    assert first_v4 is not None and first_v4.root_manifest is not None and first_v4.manifest_list is None
    legacy = [m for m in manifest_refs(table.io, table.metadata, first_v4) if m.format_version < 4]
    assert legacy, "the first v4 root references the v1-v3 manifests"
    commit_and_record("delete", where="id = 12")
    commit_and_record("delete", where="cat = 'c'")
    check_history(table, history)
    fresh = catalog.load_table("db.t")
    assert rows_of(fresh) == model(live) and fresh.format_version == 4


def test_v1_straight_to_v4(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, partition_spec=SPEC, properties={"format-version": "1"})
    table.append(batch(range(0, 12)))
    table.upgrade_format_version(4)
    assert table.metadata.next_row_id == 0
    table.append(batch(range(12, 15)))
    table.delete("id = 3")
    assert rows_of(table) == model(set(range(15)) - {3})
    ids = table.scan(columns=("_row_id",)).to_arrow()["_row_id"].to_pylist()
    assert None not in ids and len(set(ids)) == 14


@pytest.mark.parametrize(
    ("start", "requested", "error", "message"),
    [
        (3, 2, ValidationError, "cannot downgrade table db.t from format version 3 to 2"),
        (2, 1, ValidationError, "downgrade"),
        (2, 5, Unsupported, "supports format versions 1 to 4"),
        (2, 0, ValidationError, "no format version 0"),
        (2, "four", ValidationError, "'four' is not an integer"),
    ],
)
def test_refusals_change_nothing(
    catalog: Catalog, start: int, requested: Any, error: type[Exception], message: str
) -> None:
    table = catalog.create_table("db.t", SCHEMA, properties={"format-version": str(start)})
    table.append(batch(range(3)))
    location = table.metadata_location
    metadata_dir = Path(location.removeprefix("file://")).parent
    files = set(metadata_dir.iterdir())
    with pytest.raises(error, match=message):
        table.upgrade_format_version(requested)
    assert table.metadata_location == location == catalog.load_table("db.t").metadata_location
    assert set(metadata_dir.iterdir()) == files


def test_same_version_commits_nothing_and_strings_are_accepted(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, properties={"format-version": "3"})
    location = table.metadata_location
    table.upgrade_format_version(3)
    assert table.metadata_location == location
    table.upgrade_format_version("4")  # type: ignore[arg-type]  # e.g. from a config file
    assert catalog.load_table("db.t").format_version == 4


def test_upgrade_racing_an_append_keeps_both(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = catalog.create_table("db.t", SCHEMA, partition_spec=SPEC, properties={"format-version": "3"})
    writer.append(batch(range(0, 6)))
    upgrader = catalog.load_table("db.t")
    stale = [(upgrader.metadata, upgrader.metadata_location)]
    fresh_load = upgrader.load_for_commit
    # the first commit attempt starts from the state before the writer's append: it must conflict,
    # reload and re-apply the upgrade on top of the append
    monkeypatch.setattr(upgrader, "load_for_commit", lambda: stale.pop() if stale else fresh_load())
    monkeypatch.setattr(upgrader, "refresh", lambda: upgrader)
    writer.append(batch(range(6, 9)))
    duck = read_with_duckdb(writer.metadata_location, columns=["id", "cat"])
    assert sorted(zip(duck["id"].to_pylist(), duck["cat"].to_pylist(), strict=True)) == model(set(range(9)))
    upgrader.upgrade_format_version(4)
    assert not stale  # the stale attempt happened
    final = catalog.load_table("db.t")
    assert final.format_version == 4
    assert final.metadata.snapshots == writer.metadata.snapshots
    assert rows_of(final) == model(set(range(9)))
    # the writer's own metadata still says v3: the request is checked against the table's latest
    assert writer.format_version == 3
    with pytest.raises(ValidationError, match="downgrade"):
        writer.upgrade_format_version(3)


# ---------------------------------------------------------------- tables written by Iceberg Java


def fixture_table(catalog: Catalog, tmp_path: Path, name: str) -> tuple[Table, dict[str, Any]]:
    """A corpus table registered in ``catalog``, its new files directed to ``tmp_path``."""
    install_acceptance_fixtures()
    case = case_by_name(name)
    case = {**case, "files": _files_under(case["table_location"])}
    table = catalog.register_table(("db", name), case["metadata_location"])
    table.set_properties(
        **{
            "write.metadata.path": f"file://{tmp_path}/{name}/metadata",
            "write.data.path": f"file://{tmp_path}/{name}/data",
        }
    )
    return table, case


def run_checks(table: Table, case: dict[str, Any], main_head: int | None = None) -> None:
    """Every check of the case (snapshots, refs, filters, row lineage) still gives its fingerprint.

    ``main_head``: the snapshot the checks of the current state were written for (once the test
    has committed on top of it).
    """
    for check in case["checks"]:
        snapshot_id, ref = check.get("snapshot_id"), check.get("ref")
        if main_head is not None and snapshot_id is None and ref in (None, "main"):
            snapshot_id, ref = main_head, None
        result = table.scan(
            filter=convert(check.get("filter_expr"), IcefloeBuilder()),
            columns=tuple(check["columns"]),
            snapshot_id=snapshot_id,
            ref=ref,
        ).to_arrow()
        assert fingerprint(result, columns=check["columns"]) == expected_result(check), check["id"]


@pytest.mark.parametrize("name", ["p04_v3_deletion_vectors", "p11_upgrade_v2_to_v3"])
def test_java_v3_table_upgraded_to_v4(catalog: Catalog, tmp_path: Path, name: str) -> None:
    table, case = fixture_table(catalog, tmp_path, name)
    assert table.format_version == 3
    run_checks(table, case)
    table.upgrade_format_version(4)
    assert catalog.load_table(("db", name)).format_version == 4
    run_checks(table, case)
    head = table.current_snapshot().snapshot_id  # type: ignore[union-attr]

    current = next(c for c in case["checks"] if c["snapshot_id"] is None and c["ref"] is None)
    columns = [c for c in current["columns"] if not c.startswith("_")]
    expected = expected_table(case, current).select(columns).to_pylist()
    expected_ids = sorted(r["id"] for r in expected)
    lineage_before = {
        r["id"]: r["_row_id"] for r in table.scan(columns=("id", "_row_id")).to_arrow().to_pylist()
    }
    next_row_id = table.metadata.next_row_id or 0

    # an append: the first v4 root keeps the Java manifests (and their DVs) as legacy references
    new_rows = pa.table({c: expected_table(case, current).select([c]).column(0)[:3] for c in columns})
    new_rows = new_rows.set_column(0, "id", pa.array([10_000, 10_001, 10_002], pa.int64()))
    table.append(new_rows)
    snap = table.current_snapshot()
    assert snap is not None and snap.root_manifest is not None
    refs = manifest_refs(table.io, table.metadata, snap)
    assert any(m.format_version < 4 for m in refs)
    ids = sorted(table.scan(columns=("id",)).to_arrow()["id"].to_pylist())
    assert ids == sorted([*expected_ids, 10_000, 10_001, 10_002])
    got = {r["id"]: r["_row_id"] for r in table.scan(columns=("id", "_row_id")).to_arrow().to_pylist()}
    assert {i: got[i] for i in lineage_before} == lineage_before  # row ids survive the upgrade
    assert sorted(got[i] for i in (10_000, 10_001, 10_002)) == [next_row_id, next_row_id + 1, next_row_id + 2]

    # deletes through both modes, on files that already carry Java deletion vectors
    victims = expected_ids[:: max(1, len(expected_ids) // 5)][:4]
    for mode, victim in zip(
        ["merge-on-read", "copy-on-write", "merge-on-read", "copy-on-write"], victims, strict=False
    ):
        table.delete(f"id = {victim}", mode=mode)
    remaining = [*sorted(set(expected_ids) - set(victims)), 10_000, 10_001, 10_002]
    assert sorted(table.scan(columns=("id",)).to_arrow()["id"].to_pylist()) == sorted(remaining)
    # no v4 position-delete files: deletion vectors are colocated with their data file
    for m in manifest_refs(table.io, table.metadata, table.current_snapshot()):  # type: ignore[arg-type]
        assert m.format_version < 4 or m.content != FileContent.POSITION_DELETES
    fresh = catalog.load_table(("db", name))
    assert sorted(fresh.scan(columns=("id",)).to_arrow()["id"].to_pylist()) == sorted(remaining)
    run_checks(fresh, case, main_head=head)  # the old snapshots are untouched by the new commits
    assert _files_under(case["table_location"]) == case["files"]  # the shared fixture is untouched


def _files_under(location: str) -> set[str]:
    root = Path(location.removeprefix("file://"))
    return {str(p) for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("rewritten", ["a", "b", "c", None])
def test_compaction_after_upgrade_retires_each_v3_dv_of_a_shared_puffin_file(
    catalog: Catalog, rewritten: str | None
) -> None:
    """One v3 delete writes the DVs of three data files into one Puffin file; after the upgrade to
    v4, compacting some or all of those files retires exactly their DVs. The v4 write seam once
    matched removals by path, so it took another file's DV for the one asked for and the commit
    failed as a false conflict (found by tests/txn/test_table_model.py)."""
    table = catalog.create_table(
        "db.shared_puffin", SCHEMA, partition_spec=SPEC, properties={"format-version": "3"}
    )
    table.append(batch(range(9)))
    table.delete("id in (0, 1, 2)", mode="merge-on-read")  # one DV per partition, one Puffin file
    dv_files = {d.delete_file.file_path for t in table.scan().plan_files() for d in t.deletes}
    assert len(dv_files) == 1
    table.upgrade_format_version(4)
    result = table.maintenance.rewrite_data_files(
        filter=None if rewritten is None else f"cat = '{rewritten}'", min_input_files=1
    )
    assert (result.rewritten_data_files, result.removed_delete_files) == (
        (3, 3) if rewritten is None else (1, 1)
    )
    assert rows_of(table) == model(set(range(3, 9)))
    assert rows_of(table.refresh()) == model(set(range(3, 9)))
