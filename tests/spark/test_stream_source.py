"""The streaming source and incremental batch reads from Spark.

The restart test: another process commits 50 snapshots (appends, merge-on-read deletes, one
compaction) while a query streams the table into another icefloe table; the query dies twice (once
after its sink committed a micro-batch but before Spark recorded it, once before the sink write)
and restarts from its checkpoint. The sink must hold every appended row exactly once. No timing is
assumed: the only waits are for conditions (enough snapshots committed, the writer exited), and
every run is ``Trigger.AvailableNow``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.base import Catalog
from icefloe.spark import create_changelog_view, read_changes, read_table, stream_writer
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField
from tests.spark.conftest import CI

SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "k", LongType(), True))
SNAPSHOTS = 30 if CI else 50
ROOT = Path(__file__).resolve().parents[2]


def _wait_for(condition: Any, what: str, limit_s: float = 300) -> None:
    """Poll a condition (a sync point, not a timing assumption: the limit only stops a hung test)."""
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.2)


def _ids(spark: Any, name: str) -> list[int]:
    return sorted(r["id"] for r in read_table(spark, name, columns=["id"]).collect())


@pytest.mark.slow
def test_restarted_stream_delivers_every_append_exactly_once(  # type: ignore[no-untyped-def]
    spark, catalog: Catalog, spark_home: Path, table_name: str, tmp_path: Path
) -> None:
    source = catalog.create_table(table_name, SCHEMA, properties={"format-version": "3"})
    sink = f"{table_name}_sink"
    catalog.create_table(sink, SCHEMA, properties={"format-version": "3"})
    uri, warehouse = f"sqlite:///{spark_home}/catalog.db", str(spark_home / "warehouse")
    writer = subprocess.Popen(
        [sys.executable, "-m", "tests.spark.history_writer", uri, warehouse, table_name, str(SNAPSHOTS)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    write = stream_writer(sink)
    checkpoint = tmp_path / "checkpoint"
    crashes = {"after-commit": 1, "before-commit": 3}

    def sink_batch(df, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        if crashes.get("before-commit") == batch_id:
            del crashes["before-commit"]
            raise RuntimeError("killed before the sink write")
        write(df, batch_id)
        if crashes.get("after-commit") == batch_id:
            del crashes["after-commit"]
            raise RuntimeError("killed after the sink commit, before Spark recorded the batch")

    def run() -> None:
        query = (
            spark.readStream.format("icefloe")
            .option("skip-delete-snapshots", "true")
            .option("max-files-per-trigger", "2")
            .load(table_name)
            .writeStream.foreachBatch(sink_batch)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()

    try:
        _wait_for(lambda: len(source.refresh().snapshots()) >= 8, "the writer's first snapshots")
        with pytest.raises(Exception, match="killed after the sink commit"):
            run()
        _wait_for(lambda: len(source.refresh().snapshots()) >= 16, "more snapshots")
        with pytest.raises(Exception, match="killed before the sink write"):
            run()
        out, _ = writer.communicate(timeout=600)
    finally:
        if writer.poll() is None:
            writer.kill()
    assert writer.returncode == 0
    appended = json.loads(out.strip().splitlines()[-1])
    run()  # the third start drains everything the writer committed
    assert crashes == {}
    got = _ids(spark, sink)
    assert len(got) == len(appended)
    assert got == sorted(appended)


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "k": pa.array([0] * len(ids), pa.int64())})


def test_stream_fails_clearly_then_streams_the_changelog(  # type: ignore[no-untyped-def]
    spark, catalog: Catalog, table_name: str, tmp_path: Path
) -> None:
    t = catalog.create_table(table_name, SCHEMA, properties={"format-version": "3"})
    t.append(_rows([1, 2, 3]))
    t.delete("id = 2", mode="merge-on-read")
    t.update({"k": 9}, "id = 3", mode="merge-on-read")

    def collect(**options: str) -> list[dict[str, Any]]:
        name = f"mem_{abs(hash(tuple(options.items())))}"
        reader = spark.readStream.format("icefloe")
        for key, value in options.items():
            reader = reader.option(key, value)
        query = reader.load(table_name).writeStream.format("memory").queryName(name)
        query = query.option("checkpointLocation", str(tmp_path / name)).trigger(availableNow=True).start()
        query.awaitTermination()
        return [r.asDict() for r in spark.sql(f"select * from {name}").collect()]

    with pytest.raises(Exception, match="skip-delete-snapshots"):
        collect()
    assert sorted(
        r["id"] for r in collect(**{"skip-delete-snapshots": "true", "skip-overwrite-snapshots": "true"})
    ) == [1, 2, 3]
    changes = collect(**{"read-changelog": "true"})
    got = sorted((r["_change_type"], r["id"], r["k"]) for r in changes)
    assert got == [
        ("DELETE", 2, 0),
        ("INSERT", 1, 0),
        ("INSERT", 2, 0),
        ("INSERT", 3, 0),
        ("UPDATE_AFTER", 3, 9),
        ("UPDATE_BEFORE", 3, 0),
    ]


def test_incremental_batch_reads_and_changelog_view(  # type: ignore[no-untyped-def]
    spark, catalog: Catalog, table_name: str
) -> None:
    t = catalog.create_table(table_name, SCHEMA, properties={"format-version": "2"})
    t.append(_rows([1, 2]))
    first = t.snapshots()[-1].snapshot_id
    t.append(_rows([3, 4]))
    t.delete("id = 1", mode="merge-on-read")
    appended = spark.read.format("icefloe").option("start-snapshot-id", str(first)).load(table_name)
    assert sorted(r["id"] for r in appended.collect()) == [3, 4]
    assert sorted(r["id"] for r in read_table(spark, table_name, start_snapshot_id=first).collect()) == [3, 4]
    changes = read_changes(spark, table_name, first)
    assert sorted((r["_change_type"], r["_change_ordinal"], r["id"]) for r in changes.collect()) == [
        ("DELETE", 1, 1),
        ("INSERT", 0, 3),
        ("INSERT", 0, 4),
    ]
    t.update({"k": 5}, "id = 3", mode="copy-on-write")
    view = create_changelog_view(
        spark,
        table_name,
        options={"start-snapshot-id": first},
        compute_updates=True,
        identifier_columns=["id"],
        net_changes=True,
    )
    assert view == f"{table_name.split('.')[-1]}_changes"
    net = spark.sql(f"select _change_type, id, k from {view}").collect()
    assert sorted(tuple(r) for r in net) == [("DELETE", 1, 0), ("INSERT", 3, 5), ("INSERT", 4, 0)]
