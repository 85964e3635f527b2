"""Structured Streaming into icefloe: one snapshot per micro-batch, replays never duplicate rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icefloe.catalog.base import Catalog
from icefloe.spark import create_table, stream_writer
from icefloe.spark.streaming import BATCH_ID_PROPERTY, QUERY_ID_PROPERTY
from tests.spark.conftest import CI
from tests.spark.helpers import icefloe_rows

BATCHES = 20
ROWS_PER_BATCH = 5 if CI else 25


def _write_inputs(directory: Path, batches: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for b in range(batches):
        lines = [json.dumps({"id": b * 1000 + i, "batch": b}) for i in range(ROWS_PER_BATCH)]
        (directory / f"part-{b:03d}.json").write_text("\n".join(lines) + "\n")


def _stream(spark, source: Path):  # type: ignore[no-untyped-def]
    return spark.readStream.schema("id BIGINT, batch INT").option("maxFilesPerTrigger", 1).json(str(source))


@pytest.mark.slow
def test_foreach_batch_commits_once_per_batch_even_when_replayed(  # type: ignore[no-untyped-def]
    spark, catalog: Catalog, table_name: str, tmp_path: Path
) -> None:
    create_table(spark, table_name, "id BIGINT NOT NULL, batch INT", partitioned_by=["bucket(2, id)"])
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    _write_inputs(source, BATCHES)
    write = stream_writer(table_name)
    crashed = []

    def crash_after_commit(df, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        write(df, batch_id)
        if batch_id == 10 and not crashed:
            crashed.append(batch_id)
            raise RuntimeError("crash after the table commit, before Spark records the batch")

    def run(fn) -> None:  # type: ignore[no-untyped-def]
        query = (
            _stream(spark, source)
            .writeStream.foreachBatch(fn)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()

    with pytest.raises(Exception, match="crash after the table commit"):
        run(crash_after_commit)
    run(crash_after_commit)  # restarts from the checkpoint: batch 10 is replayed, then 11..19

    table = catalog.load_table(table_name)
    snapshots = table.snapshots()
    assert len(snapshots) == BATCHES
    batch_ids = sorted(int(s.summary[BATCH_ID_PROPERTY]) for s in snapshots)
    assert batch_ids == list(range(BATCHES))
    assert len({s.summary[QUERY_ID_PROPERTY] for s in snapshots}) == 1
    rows = icefloe_rows(table)
    assert len(rows) == BATCHES * ROWS_PER_BATCH == len(set(rows))


def test_replayed_batch_is_skipped(spark, catalog: Catalog, table_name: str) -> None:  # type: ignore[no-untyped-def]
    create_table(spark, table_name, "id BIGINT NOT NULL, batch INT")
    write = stream_writer(table_name, query_id="q-1")
    first = spark.createDataFrame([(1, 0), (2, 0)], "id BIGINT, batch INT")
    write(first, 0)
    write(first, 0)  # replay
    write(spark.createDataFrame([(3, 1)], "id BIGINT, batch INT"), 1)
    write(first, 0)  # a stale replay after a later batch
    table = catalog.load_table(table_name)
    assert len(table.snapshots()) == 2
    assert icefloe_rows(table) == [(1, 0), (2, 0), (3, 1)]
    # another query id writes independently
    stream_writer(table_name, query_id="q-2")(first, 0)
    assert len(catalog.load_table(table_name).snapshots()) == 3


def test_datasource_stream_writer(spark, catalog: Catalog, table_name: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    create_table(spark, table_name, "id BIGINT NOT NULL, batch INT")
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    _write_inputs(source, 3)
    query = (
        _stream(spark, source)
        .writeStream.format("icefloe")
        .option("table", table_name)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    table = catalog.load_table(table_name)
    assert len(table.snapshots()) == 3
    assert sorted(int(s.summary[BATCH_ID_PROPERTY]) for s in table.snapshots()) == [0, 1, 2]
    assert len(icefloe_rows(table)) == 3 * ROWS_PER_BATCH
