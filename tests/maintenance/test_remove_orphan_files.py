"""Orphan-file removal: strays go, everything any snapshot names stays, recent files are left alone."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.io.fileio import local_path
from icefloe.maintenance.expire_snapshots import expire_snapshots
from icefloe.maintenance.remove_orphan_files import remove_orphan_files
from icefloe.table.table import Table
from tests.maintenance.helpers import batch, delete_ids, make_table

pytestmark = pytest.mark.catalog_namespaces("db")

HOUR_MS = 3600 * 1000


def _table_dir(table: Table) -> Path:
    return Path(local_path(table.location()) or "")


def _files(table: Table) -> set[str]:
    return {str(p) for p in _table_dir(table).rglob("*") if p.is_file()}


def _age(path: Path, hours: float) -> None:
    """Set a file's modification time ``hours`` into the past."""
    when = time.time() - hours * 3600
    os.utime(path, (when, when))


def _every_snapshot(table: Table) -> dict[int, list[tuple[object, ...]]]:
    table.refresh()
    out = {}
    for s in table.snapshots():
        got = table.scan(snapshot_id=s.snapshot_id, columns=("id", "cat", "val")).to_arrow()
        out[s.snapshot_id] = sorted(tuple(r.values()) for r in got.to_pylist())
    return out


def _strays(table: Table) -> list[Path]:
    """A data file, a manifest-like file and a metadata file no metadata names."""
    base = _table_dir(table)
    (base / "data" / "cat=a").mkdir(parents=True, exist_ok=True)
    stray_data = base / "data" / "cat=a" / "lost-task-output.parquet"
    pq.write_table(pa.table({"id": [1]}), stray_data)
    stray_manifest = base / "metadata" / "abandoned-attempt-m0.avro"
    stray_manifest.write_bytes(b"Obj\x01 not really")
    stray_meta = base / "metadata" / "99999-abandoned.metadata.json"
    stray_meta.write_text("{}")
    return [stray_data, stray_manifest, stray_meta]


@pytest.mark.parametrize("fv", [2, 3, 4])
def test_old_strays_are_deleted_and_every_snapshot_still_reads(catalog: Catalog, fv: int) -> None:
    table = make_table(catalog, "db.t", fv, batches=3)
    delete_ids(table, {1, 2, 50})
    table.overwrite(batch(700, 6), overwrite_filter="cat = 'c'")
    before = _every_snapshot(table)
    for path in map(Path, _files(table)):
        _age(path, 100)  # the table's own files are old too: age alone never makes an orphan
    strays = _strays(table)
    for path in strays:
        _age(path, 100)
    recent = _table_dir(table) / "data" / "in-flight-write.parquet"
    pq.write_table(pa.table({"id": [2]}), recent)
    on_disk = _files(table)

    dry = remove_orphan_files(table, dry_run=True)
    assert {local_path(p) for p in dry.orphan_files} == {str(p) for p in strays}
    assert not dry.deleted and _files(table) == on_disk

    result = remove_orphan_files(table)

    assert result.deleted and result.failed_deletes == ()
    assert _files(table) == on_disk - {str(p) for p in strays}
    assert recent.exists()  # younger than the 3-day default
    assert _every_snapshot(table) == before


def test_files_an_expiry_could_not_delete_are_found(catalog: Catalog) -> None:
    table = make_table(catalog, "db.t", 4, batches=3)
    table.overwrite(batch(0, 3))
    expire_snapshots(table, older_than=int(time.time() * 1000) + 1, delete_files=False)
    table.refresh()
    rows = _every_snapshot(table)
    assert len(rows) == 1

    result = remove_orphan_files(table, older_than=int(time.time() * 1000) + 1000)

    # the 9 replaced data files and the old roots / leaves of the 3 expired snapshots
    data_orphans = [p for p in result.orphan_files if "/data/" in p]
    assert len(data_orphans) == 9
    assert all(not p.endswith(".metadata.json") for p in result.orphan_files)  # all still in the log
    assert _every_snapshot(table) == rows
    assert remove_orphan_files(table, older_than=int(time.time() * 1000) + 1000).orphan_files == ()


def test_location_outside_the_table_is_refused(catalog: Catalog, tmp_path: Path) -> None:
    table = make_table(catalog, "db.t", 3, batches=1)
    on_disk = _files(table)
    with pytest.raises(ValidationError, match="not inside the table location"):
        remove_orphan_files(table, location=str(tmp_path), older_than=int(time.time() * 1000) + HOUR_MS)
    assert _files(table) == on_disk


def test_gc_disabled_allows_only_a_dry_run(catalog: Catalog) -> None:
    table = make_table(catalog, "db.t", 3, batches=1)
    table.set_properties(**{"gc.enabled": "false"})
    stray = _strays(table)[0]
    later = int(time.time() * 1000) + HOUR_MS
    assert remove_orphan_files(table, older_than=later, dry_run=True).orphan_files
    with pytest.raises(ValidationError, match=r"gc\.enabled=false"):
        remove_orphan_files(table, older_than=later)
    assert stray.exists()
