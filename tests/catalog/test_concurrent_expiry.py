"""Snapshot expiry racing appenders and a row-level writer: no row is lost, every kept snapshot reads.

Three processes append one-row batches while a fourth expires everything but the newest three
snapshots, again and again, and deletes the files it frees. Expiry re-selects on every commit
attempt and deletes only what no snapshot of the metadata it committed still reads; appends
that raced it either retried on top of it or were already in it. Runs on SQLite and on the
throwaway PostgreSQL server, for v3 and v4 tables.

Nothing depends on timing: the processes meet at two events. The expirer starts only once every
appender has committed ``HALFWAY`` batches (so its first expiry has snapshots to expire whatever
the machine's load), and the appenders write their second half only after that first expiry
committed (so expiries and appends do overlap). Every wait has a generous timeout that fails the
test instead of hanging it.
"""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog import load_catalog
from icefloe.io.fileio import local_path
from icefloe.maintenance.expire_snapshots import expire_snapshots
from icefloe.spec.schema import Schema
from icefloe.spec.types import IntegerType, LongType, NestedField
from icefloe.tree.reachable import reachable_files

pytestmark = pytest.mark.all_catalogs

APPENDERS = 3
APPENDS_EACH = 15
HALFWAY = 5  # batches each appender commits before the first expiry
EXPIRIES = 12
RETAIN_LAST = 3
DAY_MS = 86_400_000
WAIT_S = 600  # a wait that long means a peer died: fail instead of hanging
SCHEMA = Schema(NestedField(1, "writer", IntegerType(), True), NestedField(2, "seq", LongType(), True))


def _wait(event: Any, what: str) -> None:
    if not event.wait(WAIT_S):
        raise AssertionError(f"gave up waiting for {what}")


def append_worker(uri: str, warehouse: str, ident: str, worker: int, halfway: Any, first_expiry: Any) -> int:
    """Append ``APPENDS_EACH`` one-row batches through fresh loads of the table.

    After ``HALFWAY`` batches: report (``halfway`` is a barrier of all appenders and the expirer)
    and wait until the first expiry has committed.
    """
    catalog = load_catalog(uri=uri, warehouse=warehouse)
    for i in range(APPENDS_EACH):
        if i == HALFWAY:
            halfway.wait(WAIT_S)
            _wait(first_expiry, "the first expiry")
        batch = pa.table({"writer": pa.array([worker], pa.int32()), "seq": pa.array([i], pa.int64())})
        catalog.load_table(ident).append(batch)
    return APPENDS_EACH


def expire_worker(uri: str, warehouse: str, ident: str, halfway: Any, first_expiry: Any) -> list[int]:
    """Expire all but the newest three snapshots ``EXPIRIES`` times; the snapshots expired by each."""
    catalog = load_catalog(uri=uri, warehouse=warehouse)
    halfway.wait(WAIT_S)  # every appender has committed HALFWAY batches
    expired = []
    for _ in range(EXPIRIES):
        table = catalog.load_table(ident)
        # a day ahead: commits stamp max(now, parent + 1 ms), so a burst can run ahead of the clock
        result = expire_snapshots(table, older_than=int(time.time() * 1000) + DAY_MS, retain_last=RETAIN_LAST)
        expired.append(len(result.expired_snapshot_ids))
        first_expiry.set()
    return expired


@pytest.mark.parametrize("format_version", [3, 4])
def test_expiry_racing_appends_loses_nothing(catalog_uri: str, tmp_path: Path, format_version: int) -> None:
    warehouse = str(tmp_path / "wh")
    catalog = load_catalog(uri=catalog_uri, warehouse=warehouse)
    namespace = f"expiry_v{format_version}"
    ident = f"{namespace}.events"
    catalog.create_namespace((namespace,))
    table = catalog.create_table(
        ident,
        SCHEMA,
        properties={
            "format-version": str(format_version),
            "commit.retry.num-retries": "100",
            "commit.retry.min-wait-ms": "5",
            "commit.retry.max-wait-ms": "200",
            "commit.manifest.min-count-to-merge": "5",
            "write.v4.root.max-inline-entries": "4",
        },
    )
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(APPENDERS + 1) as pool:
        halfway = manager.Barrier(APPENDERS + 1)
        first_expiry = manager.Event()
        expiring = pool.apply_async(expire_worker, (catalog_uri, warehouse, ident, halfway, first_expiry))
        appends = [
            pool.apply_async(append_worker, (catalog_uri, warehouse, ident, w, halfway, first_expiry))
            for w in range(APPENDERS)
        ]
        assert [a.get(timeout=WAIT_S) for a in appends] == [APPENDS_EACH] * APPENDERS
        expired = expiring.get(timeout=WAIT_S)
    # The first expiry saw exactly APPENDERS * HALFWAY snapshots (the appenders were waiting).
    assert expired[0] == APPENDERS * HALFWAY - RETAIN_LAST

    table.refresh()
    rows = sorted((r["writer"], r["seq"]) for r in table.to_arrow().to_pylist())
    assert rows == [(w, i) for w in range(APPENDERS) for i in range(APPENDS_EACH)]
    assert 1 <= len(table.snapshots()) <= APPENDERS * APPENDS_EACH
    needed = reachable_files(table.io, table.metadata, table.snapshots())
    missing = [p for p in needed.tree | needed.live if not Path(local_path(p) or p).exists()]
    assert missing == []
    for snapshot in table.snapshots():  # every kept snapshot still reads
        got = table.scan(snapshot_id=snapshot.snapshot_id).to_arrow()
        assert got.num_rows == int(snapshot.summary["total-records"])
