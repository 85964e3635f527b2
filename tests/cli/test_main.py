"""The ``icefloe`` command, run in-process against a real SQLite catalog: exact output, exit statuses."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from icefloe.catalog import ENV_CATALOG_URI, ENV_WAREHOUSE, load_catalog
from icefloe.catalog.base import Catalog
from icefloe.cli.describe import relative_path
from icefloe.cli.main import main, point_in_time
from icefloe.io.fileio import local_path, normalize_location
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
)
from icefloe.table.table import Table
from icefloe.tree.read_seam import manifest_refs
from icefloe.tree.v4_read import read_root
from tests.maintenance.helpers import BY_CAT, SCHEMA, batch, delete_ids, make_table, rows_by_id

pytestmark = pytest.mark.catalog_namespaces("db")

LEAVES_ONLY = {"format-version": "4", "write.v4.root.max-inline-entries": "0"}


@dataclass(frozen=True)
class Run:
    """One in-process run of the command: exit status and what it printed."""

    status: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        """Stdout lines."""
        return self.out.splitlines()

    @property
    def words(self) -> list[list[str]]:
        """Stdout lines split on whitespace (column alignment ignored)."""
        return [line.split() for line in self.lines]


Icefloe = Callable[..., Run]


@pytest.fixture
def catalog_name() -> str:
    """The command opens the catalog named ``default``: the shared ``catalog`` fixture uses it too."""
    return "default"


@pytest.fixture
def catalog_args(catalog_uri: str, warehouse: Path) -> list[str]:
    """The command-line options naming the test's catalog database and warehouse."""
    return ["--uri", catalog_uri, "--warehouse", str(warehouse)]


@pytest.fixture
def icefloe(catalog_args: list[str], capsys: pytest.CaptureFixture[str]) -> Icefloe:
    """``icefloe(*args)``: run the command on the test catalog and capture its output."""

    def run(*args: str) -> Run:
        capsys.readouterr()
        status = main([*catalog_args, *args])
        captured = capsys.readouterr()
        return Run(status, captured.out, captured.err)

    return run


def _rel(table: Table, path: str) -> str:
    return relative_path(table.location(), path)


# -- tables / info / snapshots ----------------------------------------------------------------------


def test_tables_lists_every_namespace_with_its_tables(catalog: Catalog, icefloe: Icefloe) -> None:
    catalog.create_namespace(("db", "eu"))
    catalog.create_namespace(("other",))
    catalog.create_table("db.trips", SCHEMA)
    catalog.create_table("db.eu.orders", SCHEMA)

    everything = icefloe("tables")
    only_eu = icefloe("tables", "db.eu")

    assert everything.status == 0
    assert everything.lines == [
        "namespace  db",
        "table      db.trips",
        "namespace  db.eu",
        "table      db.eu.orders",
        "namespace  other",
    ]
    assert only_eu.lines == ["namespace  db.eu", "table      db.eu.orders"]


def test_catalog_option_selects_one_of_the_catalogs_sharing_the_database(
    catalog: Catalog, catalog_args: list[str], icefloe: Icefloe
) -> None:
    other = load_catalog("bench", uri=catalog_args[1], warehouse=catalog_args[3])
    other.create_namespace(("bench",))
    other.create_table("bench.t", SCHEMA)

    assert icefloe("tables").lines == ["namespace  db"]
    assert icefloe("--catalog", "bench", "tables").lines == ["namespace  bench", "table      bench.t"]


def test_info_shows_schema_partitioning_sort_order_properties_and_refs(
    catalog: Catalog, icefloe: Icefloe
) -> None:
    table = make_table(catalog, "db.t", 3, batches=2, rows=6)
    table.manage_snapshots().create_tag("first", table.snapshots()[0].snapshot_id).commit()
    table.set_properties(owner="ops")
    table.refresh()
    current = table.current_snapshot()
    assert current is not None

    result = icefloe("info", "db.t")

    assert result.status == 0
    words = result.words
    assert ["table", "db.t"] in words
    assert ["format", "version", "3"] in words
    assert ["location", table.location()] in words
    assert ["metadata", "file", table.metadata_location] in words
    assert ["current", "snapshot", str(current.snapshot_id), "(sequence", "2,", "append,"] == words[6][:6]
    schema_at = result.lines.index("schema 0")
    assert words[schema_at + 1 : schema_at + 5] == [
        ["id", "name", "type", "required"],
        ["1", "id", "long", "required"],
        ["2", "cat", "string", "optional"],
        ["3", "val", "long", "optional"],
    ]
    spec_at = result.lines.index("partition spec 0 (default)")
    assert words[spec_at + 1 : spec_at + 3] == [
        ["field", "id", "name", "transform", "source"],
        ["1000", "cat", "identity", "cat", "(2)"],
    ]
    assert result.lines[result.lines.index("sort order 0") + 1] == "  unsorted"
    assert result.lines[result.lines.index("properties") + 1] == "  owner  ops"
    refs_at = result.lines.index("refs")
    assert words[refs_at + 1 :] == [
        ["first", "tag", str(table.snapshots()[0].snapshot_id)],
        ["main", "branch", str(current.snapshot_id)],
    ]


def test_info_flattens_nested_fields_under_dotted_names(catalog: Catalog, icefloe: Icefloe) -> None:
    nested = Schema(
        NestedField(1, "id", LongType(), True),
        NestedField(2, "point", StructType(NestedField(3, "x", IntegerType(), True)), False),
        NestedField(4, "tags", ListType(5, StringType(), True), False),
        NestedField(6, "attrs", MapType(7, StringType(), 8, LongType(), False), False),
    )
    schema = catalog.create_table("db.nested", nested).schema()  # field ids are reassigned

    result = icefloe("info", "db.nested")

    at = result.lines.index("schema 0")
    expected = [
        ("id", "long", "required"),
        ("point", "struct", "optional"),
        ("point.x", "int", "required"),
        ("tags", "list", "optional"),
        ("tags.element", "string", "required"),
        ("attrs", "map", "optional"),
        ("attrs.key", "string", "required"),
        ("attrs.value", "long", "optional"),
    ]
    assert result.words[at + 1 : at + 10] == [
        ["id", "name", "type", "required"],
        *([str(schema.find_field(name).field_id), name, kind, req] for name, kind, req in expected),
    ]
    assert result.lines[result.lines.index("partition spec 0 (default)") + 1] == "  unpartitioned"
    assert "current snapshot  none" in result.lines


def test_snapshots_prints_one_line_per_snapshot_with_counts_and_refs(
    catalog: Catalog, icefloe: Icefloe
) -> None:
    table = make_table(catalog, "db.t", 2, batches=2, rows=6)  # 2 appends of 3 files
    table.delete("cat = 'a'")  # drops the 2 'a' files (4 rows)
    table.refresh()
    snaps = table.snapshots()
    table.manage_snapshots().create_tag("first", snaps[0].snapshot_id).commit()

    result = icefloe("snapshots", "db.t")

    assert result.status == 0
    header, *rows = result.lines
    assert header.split() == [
        "snapshot", "id", "parent", "seq", "timestamp", "(UTC)", "operation",
        "added", "data", "files", "deleted", "data", "files", "total", "records", "refs",
    ]  # fmt: skip
    assert len(rows) == 3
    stamps = [
        datetime.fromtimestamp(s.timestamp_ms / 1000, UTC).isoformat(timespec="milliseconds")[:-6] + "Z"
        for s in snaps
    ]
    ids = [str(s.snapshot_id) for s in snaps]
    assert [r.split() for r in rows] == [
        [ids[0], "-", "1", stamps[0], "append", "3", "0", "6", "first"],
        [ids[1], ids[0], "2", stamps[1], "append", "3", "0", "12"],
        [ids[2], ids[1], "3", stamps[2], "delete", "0", "2", "8", "main"],
    ]


# -- tree -------------------------------------------------------------------------------------------


def test_tree_of_a_v3_table_lists_the_manifest_list_and_its_manifests(
    catalog: Catalog, icefloe: Icefloe
) -> None:
    table = make_table(catalog, "db.t", 3, batches=2, rows=6)
    delete_ids(table, {0})  # one deletion vector -> a delete manifest
    table.refresh()
    snap = table.current_snapshot()
    assert snap is not None and snap.manifest_list is not None
    paths = [_rel(table, m.manifest_path) for m in manifest_refs(table.io, table.metadata, snap)]

    result = icefloe("tree", "db.t")

    assert result.status == 0
    assert result.lines[0].startswith(f"snapshot {snap.snapshot_id} (sequence 3, delete, ")
    assert result.lines[1] == f"manifest list {_rel(table, snap.manifest_list)}  (3 manifests)"
    assert result.words[2:] == [
        ["|--", "DELETES", "seq=3", "added=1", "(1", "row)", "existing=0", "(0", "rows)", "deleted=0", "(0",
         "rows)", paths[0]],
        ["|--", "DATA", "seq=2", "added=3", "(6", "rows)", "existing=0", "(0", "rows)", "deleted=0", "(0",
         "rows)", paths[1]],
        ["`--", "DATA", "seq=1", "added=3", "(6", "rows)", "existing=0", "(0", "rows)", "deleted=0", "(0",
         "rows)", paths[2]],
    ]  # fmt: skip
    assert all(p.startswith("metadata/") and p.endswith(".avro") for p in paths)


def test_tree_of_a_small_v4_table_shows_inline_entries_and_their_dv(
    catalog: Catalog, icefloe: Icefloe
) -> None:
    table = make_table(catalog, "db.t", 4, batches=1, rows=6)  # 3 files, inline in the root
    before = icefloe("tree", "db.t")
    delete_ids(table, {0})  # id 0 is in the 'a' file: its inline row gets a colocated DV
    table.refresh()
    snap = table.current_snapshot()
    assert snap is not None and snap.root_manifest is not None
    root = read_root(table.io, table.metadata, snap.root_manifest)
    (dv_row,) = [e for e in root.inline if e.data_file.deletion_vector is not None]
    dv = dv_row.data_file.deletion_vector
    assert dv is not None

    after = icefloe("tree", "db.t")

    assert before.lines[1].endswith("(0 manifest references, 3 inline entries)")
    assert [w[:5] for w in before.words[2:]] == [[b, "DATA", "ADDED", "inline", "records=2"] for b in
                                                 ("|--", "|--", "`--")]  # fmt: skip
    assert after.lines[1] == (
        f"root manifest {_rel(table, snap.root_manifest)}  (0 manifest references, 4 inline entries)"
    )
    expected = []
    for e in root.inline:
        df = e.data_file
        extra = [] if df.deletion_vector is None else ["dv=1"]
        dv_file = [] if df.deletion_vector is None else ["dv", "in", _rel(table, dv.location)]
        path = _rel(table, df.file_path)
        expected.append(["DATA", e.status.name, "inline", "records=2", *extra, path, *dv_file])
    assert [w[1:] for w in after.words[2:]] == expected
    statuses = sorted(w[2] for w in after.words[2:])
    assert statuses == ["EXISTING", "EXISTING", "MODIFIED", "REPLACED"]


def test_tree_of_a_v4_table_shows_column_files_of_inline_entries(catalog: Catalog, icefloe: Icefloe) -> None:
    table = make_table(catalog, "db.t", 4, batches=1, rows=6)  # 3 files, inline in the root
    with table.transaction() as tx:
        tx.set_properties({"write.update.mode": "merge-on-read", "write.v4.column-updates.enabled": "true"})
    table.update({"val": -1}, "id = 0")  # val is no partition source: a column file on the 'a' file
    table.refresh()
    snap = table.current_snapshot()
    assert snap is not None and snap.root_manifest is not None
    root = read_root(table.io, table.metadata, snap.root_manifest)
    (updated,) = [e for e in root.inline if e.data_file.column_files]
    (cf,) = updated.data_file.column_files
    out = icefloe("tree", "db.t")
    rows = [w for w in out.words[2:] if "MODIFIED" in w]
    assert rows == [
        [
            rows[0][0],
            "DATA",
            "MODIFIED",
            "inline",
            "records=2",
            "columns=3",
            _rel(table, updated.data_file.file_path),
            "column",
            "file",
            _rel(table, cf.location),
        ]
    ]


def test_tree_of_a_v4_table_with_leaves_shows_references_and_manifest_dvs(
    catalog: Catalog, icefloe: Icefloe
) -> None:
    table = catalog.create_table("db.t", SCHEMA, partition_spec=BY_CAT, properties=LEAVES_ONLY)
    table.append(batch(0, 9))  # one leaf of 3 files
    table.append(batch(10, 9))  # a second leaf
    first = table.snapshots()[0]
    assert first.root_manifest is not None
    (first_leaf,) = read_root(table.io, table.metadata, first.root_manifest).refs
    table.delete("cat = 'a'")  # one file out of each leaf: a manifest DV of cardinality 1 on both
    table.refresh()
    snap = table.current_snapshot()
    assert snap is not None and snap.root_manifest is not None
    refs = read_root(table.io, table.metadata, snap.root_manifest).refs

    now = icefloe("tree", "db.t")
    then = icefloe("tree", "db.t", "--snapshot", str(first.snapshot_id))

    assert now.status == 0
    assert now.lines[1] == (
        f"root manifest {_rel(table, snap.root_manifest)}  (2 manifest references, 0 inline entries)"
    )
    assert now.words[2:] == [
        ["|--", "DATA_MANIFEST", "MODIFIED", "format=4", "leaf", "files=3", "rows=9", "mdv=1",
         _rel(table, refs[0].manifest_path)],
        ["`--", "DATA_MANIFEST", "MODIFIED", "format=4", "leaf", "files=3", "rows=9", "mdv=1",
         _rel(table, refs[1].manifest_path)],
    ]  # fmt: skip
    assert then.lines[0].startswith(f"snapshot {first.snapshot_id} (sequence 1, append, ")
    assert then.words[2:] == [
        ["`--", "DATA_MANIFEST", "ADDED", "format=4", "leaf", "files=3", "rows=9",
         _rel(table, first_leaf.manifest_path)],
    ]  # fmt: skip
    assert first_leaf.manifest_path in {r.manifest_path for r in refs}


def test_tree_shows_the_deleted_reference_of_a_leaf_whose_only_file_was_deleted(
    catalog: Catalog, icefloe: Icefloe
) -> None:
    table = catalog.create_table("db.t", SCHEMA, properties=LEAVES_ONLY)  # unpartitioned
    table.append(batch(0, 10))  # leaf 1: one file
    table.append(batch(10, 10))  # leaf 2: one file
    table.delete("id < 10")  # the whole file of leaf 1: its reference goes, marked by a manifest DV
    table.refresh()
    snap = table.current_snapshot()
    assert snap is not None and snap.root_manifest is not None
    refs = read_root(table.io, table.metadata, snap.root_manifest).refs

    result = icefloe("tree", "db.t")

    assert [r.status.name for r in refs] == ["EXISTING", "DELETED"]
    assert result.words[2:] == [
        ["|--", "DATA_MANIFEST", "EXISTING", "format=4", "leaf", "files=1", "rows=10",
         _rel(table, refs[0].manifest_path)],
        ["`--", "DATA_MANIFEST", "DELETED", "format=4", "leaf", "files=1", "rows=10", "mdv=1",
         _rel(table, refs[1].manifest_path)],
    ]  # fmt: skip


def test_tree_of_an_upgraded_table_shows_legacy_manifests_as_format_0(
    catalog: Catalog, icefloe: Icefloe
) -> None:
    table = make_table(catalog, "db.t", 3, batches=1, rows=6)
    table.upgrade_format_version(4)
    table.append(batch(100, 3))

    result = icefloe("tree", "db.t")

    table.refresh()
    snap = table.current_snapshot()
    assert snap is not None and snap.root_manifest is not None
    root = read_root(table.io, table.metadata, snap.root_manifest)
    (legacy,) = root.refs
    assert result.lines[1].endswith("(1 manifest reference, 3 inline entries)")
    assert result.words[2] == [
        "|--", "DATA_MANIFEST", "EXISTING", "format=0", "legacy", "avro", "files=3", "rows=6",
        _rel(table, legacy.manifest_path),
    ]  # fmt: skip
    assert [w[:5] for w in result.words[3:]] == [
        ["|--", "DATA", "ADDED", "inline", "records=1"],
        ["|--", "DATA", "ADDED", "inline", "records=1"],
        ["`--", "DATA", "ADDED", "inline", "records=1"],
    ]


def test_tree_of_an_empty_table_says_so(catalog: Catalog, icefloe: Icefloe) -> None:
    catalog.create_table("db.empty", SCHEMA)
    result = icefloe("tree", "db.empty")
    assert (result.status, result.lines) == (0, ["db.empty has no snapshots"])


# -- maintenance ------------------------------------------------------------------------------------


def _files_under(table: Table) -> set[Path]:
    return {p for p in Path(local_path(table.location()) or "").rglob("*") if p.is_file()}


@pytest.mark.parametrize("fv", [2, 4])
def test_expire_snapshots_older_than_now_keeps_only_the_current_snapshot(
    catalog: Catalog, icefloe: Icefloe, fv: int
) -> None:
    table = make_table(catalog, "db.t", fv, batches=3, rows=6)
    delete_ids(table, {0, 7})
    rows = rows_by_id(table)
    old_ids = [s.snapshot_id for s in table.snapshots()[:-1]]
    current = table.current_snapshot()
    assert current is not None

    result = icefloe("expire-snapshots", "db.t", "--older-than", "0s")

    assert result.status == 0, result.err
    assert result.words[0][:3] == ["expired", "snapshots", "3"]
    assert {int(i.rstrip(",")) for i in result.words[0][3:]} == set(old_ids)
    assert result.words[1] == ["removed", "refs", "0"]
    assert result.words[2][:2] == ["deleted", "files"] and int(result.words[2][2]) > 0
    assert len(result.lines) == 3
    table.refresh()
    assert [s.snapshot_id for s in table.snapshots()] == [current.snapshot_id]
    assert rows_by_id(table) == rows


def test_expire_snapshots_keep_files_retain_last_and_by_id(catalog: Catalog, icefloe: Icefloe) -> None:
    table = make_table(catalog, "db.t", 3, batches=4, rows=6)
    ids = [s.snapshot_id for s in table.snapshots()]
    files_before = _files_under(table)

    by_id = icefloe("expire-snapshots", "db.t", "--snapshot-id", str(ids[1]), "--keep-files")
    retained = icefloe("expire-snapshots", "db.t", "--older-than", "0s", "--retain-last", "2", "--keep-files")

    assert by_id.words == [
        ["expired", "snapshots", "1", str(ids[1])],
        ["removed", "refs", "0"],
        ["deleted", "files", "0", "(--keep-files)"],
    ]
    assert retained.words[0] == ["expired", "snapshots", "1", str(ids[0])]
    table.refresh()
    assert [s.snapshot_id for s in table.snapshots()] == ids[2:]
    assert files_before <= _files_under(table)  # nothing deleted (new metadata files only)


def test_remove_orphan_files_dry_run_reports_then_deletes(catalog: Catalog, icefloe: Icefloe) -> None:
    table = make_table(catalog, "db.t", 3, batches=1, rows=6)
    stray = Path(local_path(table.location()) or "") / "data" / "lost-task-output.parquet"
    stray.write_bytes(b"not committed")
    an_hour_ago = time.time() - 3600
    os.utime(stray, (an_hour_ago, an_hour_ago))
    stray_location = normalize_location(str(stray))
    rows = rows_by_id(table)

    dry = icefloe("remove-orphan-files", "db.t", "--dry-run", "--older-than", "0s")
    assert stray.exists()
    too_young = icefloe("remove-orphan-files", "db.t", "--older-than", "2h")
    assert stray.exists()
    real = icefloe("remove-orphan-files", "db.t", "--older-than", "0s")

    assert dry.status == 0
    assert dry.words[0] == ["orphan", "files", "1", "(dry", "run:", "nothing", "deleted)"]
    assert [normalize_location(w) for w in dry.words[1]] == [stray_location]
    assert too_young.lines == ["orphan files  0"]
    assert real.words[0] == ["orphan", "files", "1", "(deleted", "1)"]
    assert not stray.exists()
    assert rows_by_id(table) == rows


def test_rewrite_table_path_prints_the_version_and_the_file_list(
    catalog: Catalog, icefloe: Icefloe, tmp_path: Path
) -> None:
    table = make_table(catalog, "db.t", 2, batches=2, rows=3)  # 2 appends of 3 files each
    staging = f"file://{tmp_path}/staging"
    result = icefloe(
        "rewrite-table-path",
        "db.t",
        "--source-prefix",
        table.location(),
        "--target-prefix",
        f"file://{tmp_path}/copy",
        "--staging-location",
        staging,
    )
    latest = table.metadata_location.rsplit("/", 1)[-1]
    assert result.status == 0, result.err
    # staged: 3 metadata files, 2 manifest lists, 2 manifests; copied: 6 data files
    assert result.words == [
        ["latest", "version", latest],
        ["file", "list", f"{staging}/file-list"],
        ["staged", "files", "7", "(paths", "rewritten)"],
        ["copied", "files", "6", "(as", "they", "are)"],
    ]
    outside = icefloe("rewrite-table-path", "db.t", "--source-prefix", "/nowhere", "--target-prefix", "/x")
    assert outside.status == 1 and "does not start with the source prefix /nowhere" in outside.err


# -- errors, parsing, entry points ------------------------------------------------------------------


def test_unknown_table_is_an_error_without_traceback(catalog: Catalog, icefloe: Icefloe) -> None:
    result = icefloe("snapshots", "db.missing")
    assert (result.status, result.out) == (1, "")
    assert result.err == "error: table 'db.missing' does not exist\n"


def test_unknown_snapshot_and_bad_identifier_are_errors(catalog: Catalog, icefloe: Icefloe) -> None:
    make_table(catalog, "db.t", 2, batches=1, rows=3)
    missing = icefloe("tree", "db.t", "--snapshot", "12345")
    bad = icefloe("info", "just-a-name")
    assert missing.status == 1
    assert missing.err == "error: snapshot 12345 not found (it may have been expired)\n"
    assert bad.status == 1 and bad.err.startswith("error: invalid table identifier 'just-a-name'")


def test_bad_older_than_is_a_usage_error(catalog: Catalog, icefloe: Icefloe) -> None:
    make_table(catalog, "db.t", 2, batches=2, rows=3)
    result = icefloe("expire-snapshots", "db.t", "--older-than", "5x")
    assert result.status == 2 and result.out == ""
    assert result.err.startswith("usage: icefloe expire-snapshots")
    assert "argument --older-than: '5x' is not an ISO-8601 timestamp" in result.err
    assert icefloe("tables", "db", "surplus").status == 2
    assert main([]) == 2


def test_point_in_time_accepts_durations_and_iso_timestamps() -> None:
    before = datetime.now(UTC)
    three_days = point_in_time("3d")
    assert before - timedelta(days=3, seconds=5) < three_days <= datetime.now(UTC) - timedelta(days=3)
    twelve_hours = point_in_time("12h")
    assert datetime.now(UTC) - twelve_hours >= timedelta(hours=12)
    assert point_in_time("2026-01-02T03:04:05") == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert point_in_time("2026-01-02T05:04:05+02:00") == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert point_in_time("2026-01-02T03:04:05Z") == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_catalog_defaults_come_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(ENV_CATALOG_URI, f"sqlite:///{tmp_path}/env.db")
    monkeypatch.setenv(ENV_WAREHOUSE, str(tmp_path / "env-wh"))
    load_catalog().create_namespace(("from_env",))
    assert main(["tables"]) == 0
    assert capsys.readouterr().out == "namespace  from_env\n"


def test_pipeline_subcommand_runs_the_pipeline_on_the_given_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(ENV_CATALOG_URI, raising=False)
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path}/pipe.db"

    assert main(["pipeline", "--help"]) == 0
    assert "--rows ROWS" in capsys.readouterr().out
    assert main(["--uri", uri, "--warehouse", str(tmp_path / "wh"), "pipeline", "--rows", "300",
                 "--batches", "1"]) == 0  # fmt: skip
    assert "icefloe pipeline report" in capsys.readouterr().out
    assert ENV_CATALOG_URI not in os.environ
    assert load_catalog(uri=uri).list_tables(("demo",)) == [("demo", "trips")]
    assert not (tmp_path / ".icefloe").exists()


@pytest.mark.parametrize(
    "command",
    [
        [str(Path(sys.executable).parent / "icefloe"), "--help"],
        [sys.executable, "-m", "icefloe.cli", "--help"],
    ],
    ids=["console-script", "python-m"],
)
def test_entry_points_print_the_help(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: icefloe ")
    for name in ("tables", "info", "snapshots", "tree", "expire-snapshots", "remove-orphan-files"):
        assert f"    {name}" in done.stdout
