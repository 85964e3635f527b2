"""Crash safety of column updates: a writer killed at every point of a column-file commit leaves
the table in a committed state.

A child process runs one column update (a second one, so it also carries rows of an earlier
column file over) and SIGKILLs itself when it starts writing its k-th file, for k = 1, 2, ...
until the update gets through all its files; a last run dies right after the catalog commit.
The kill points are counted, not timed, so every run hits the same points. After each kill the
table must load and read as the state before the update or the state after it, and a further
update must work.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.catalog import load_catalog
from icefloe.spec.schema import Schema
from icefloe.spec.types import DoubleType, LongType, NestedField

SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "price", DoubleType(), False))
PROPS = {
    "format-version": "4",
    "write.update.mode": "merge-on-read",
    "write.v4.column-updates.enabled": "true",
}

CHILD = """
import os, signal, sys
from icefloe.catalog import load_catalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.io.fileio import OutputFile
import pyarrow.compute as pc

uri, warehouse, name, kill_at = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
table = load_catalog(uri=uri, warehouse=warehouse).load_table(name)
count = [0]
create = OutputFile.create
def dying_create(self, overwrite=False):
    count[0] += 1
    if kill_at != "commit" and count[0] == int(kill_at):
        os.kill(os.getpid(), signal.SIGKILL)
    return create(self, overwrite)
OutputFile.create = dying_create
commit = SqlCatalog._commit_transaction
def dying_commit(self, conn):
    commit(self, conn)
    if kill_at == "commit":
        os.kill(os.getpid(), signal.SIGKILL)
SqlCatalog._commit_transaction = dying_commit
table.update({"price": pc.add(pc.field("price"), 1000.0)}, "id in (2, 7)")
print("files", count[0], flush=True)
"""


def _table_with_a_column_file(catalog: Any, name: str) -> Any:
    table = catalog.create_table(name, SCHEMA, properties=PROPS)
    table.append(pa.table({"id": pa.array(range(10), pa.int64()), "price": [float(i) for i in range(10)]}))
    table.update({"price": pc.add(pc.field("price"), 100.0)}, "id in (1, 2)")
    return table


def _prices(catalog: Any, name: str) -> dict[int, float]:
    rows = catalog.load_table(name).scan().to_arrow().to_pylist()
    return {r["id"]: r["price"] for r in rows}


def _run_child(uri: str, warehouse: str, name: str, kill_at: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2] / "src"), *sys.path])}
    return subprocess.run(
        [sys.executable, "-c", CHILD, uri, warehouse, name, kill_at],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_killed_column_updates_leave_a_committed_state(tmp_path: Path) -> None:
    uri, warehouse = f"sqlite:///{tmp_path}/catalog.db", str(tmp_path / "warehouse")
    catalog = load_catalog(uri=uri, warehouse=warehouse)
    catalog.create_namespace(("db",))
    before = {i: float(i) + (100.0 if i in (1, 2) else 0.0) for i in range(10)}
    after = {i: p + (1000.0 if i in (2, 7) else 0.0) for i, p in before.items()}
    outcomes: list[str] = []
    for kill_at in (str(k) for k in range(1, 20)):
        name = f"db.t_{kill_at}"
        table = _table_with_a_column_file(catalog, name)
        child = _run_child(uri, warehouse, name, kill_at)
        state = _prices(catalog, name)
        if child.returncode == 0:  # the update wrote fewer files than kill_at: it went through
            assert state == after
            outcomes.append("completed")
            break
        assert child.returncode == -signal.SIGKILL, child.stderr
        assert state in (before, after), kill_at
        outcomes.append("after" if state == after else "before")
        table = catalog.load_table(name)
        table.update({"price": pc.add(pc.field("price"), 0.5)}, "id = 7")  # the table keeps working
        assert _prices(catalog, name)[7] == state[7] + 0.5
    # every file is written before the catalog commit: each kill leaves the old state; the update
    # writes at least a column file, a root manifest and a metadata file
    assert outcomes[-1] == "completed" and set(outcomes[:-1]) == {"before"} and len(outcomes) >= 4
    # dying right after the catalog commit leaves the new state
    _table_with_a_column_file(catalog, "db.t_commit")
    last = _run_child(uri, warehouse, "db.t_commit", "commit")
    assert last.returncode == -signal.SIGKILL, last.stderr
    assert _prices(catalog, "db.t_commit") == after
