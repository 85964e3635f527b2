"""The main job's streaming stage: bronze fed by a stream, silver kept by a stream of bronze.

Each round lands one Parquet file of trip events (new trips, and fare corrections of the previous
round's trips) in a landing directory. A Structured Streaming query reads the landing directory
and appends every event to the **bronze** table (``foreachBatch`` with icefloe's idempotent
``stream_writer``: one snapshot per micro-batch). A second query streams bronze with
``spark.readStream.format("icefloe")`` and MERGEs each micro-batch into the **silver** table by
trip id (new trips inserted, corrections update the trip: deletion vectors). Both run with
``Trigger.AvailableNow`` after each landing, so every round is one micro-batch of each query.

Finally the silver table's changelog for the last round (one snapshot interval) is printed, and
the stage checks its own counts: bronze holds every event, silver one row per trip, and the
changelog's inserts and update pairs are the round's new trips and corrections.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from icefloe.cli.pipeline import Report, stage
from icefloe.spec.schema import Schema
from icefloe.spec.types import DecimalType, IntegerType, LongType, NestedField, StringType

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from icefloe.catalog.base import Catalog

EVENTS_SCHEMA = Schema(
    NestedField(1, "trip_id", LongType(), True),
    NestedField(2, "vendor", StringType(), False),
    NestedField(3, "fare", DecimalType(10, 2), False),
    NestedField(4, "revision", IntegerType(), False),
)
EVENTS_DDL = "trip_id BIGINT, vendor STRING, fare DECIMAL(10,2), revision INT"
ROUNDS = 3
CORRECTION_EVERY = 10


def _land(spark: SparkSession, landing: Path, round_no: int, per_round: int) -> tuple[int, int]:
    """Write one round of events; returns (new trips, corrections)."""
    first = round_no * per_round
    new = spark.range(first, first + per_round).selectExpr(
        "id AS trip_id",
        "element_at(array('acme','blue','cab co'), CAST(id % 3 AS INT) + 1) AS vendor",
        "CAST(2.5 + (id % 97) AS DECIMAL(10,2)) AS fare",
        "0 AS revision",
    )
    events = new
    corrections = 0
    if round_no > 0:
        previous = first - per_round
        fixed = (
            spark.range(previous, first)
            .where(f"id % {CORRECTION_EVERY} = 0")
            .selectExpr(
                "id AS trip_id",
                "element_at(array('acme','blue','cab co'), CAST(id % 3 AS INT) + 1) AS vendor",
                "CAST(3.5 + (id % 97) AS DECIMAL(10,2)) AS fare",
                f"{round_no} AS revision",
            )
        )
        corrections = sum(1 for i in range(previous, first) if i % CORRECTION_EVERY == 0)
        events = new.unionByName(fixed)
    events.coalesce(1).write.mode("append").parquet(str(landing))
    return per_round, corrections


def _run_available_now(query_builder: Any, checkpoint: Path) -> None:
    query = query_builder.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    query.awaitTermination()


def run_streaming_stage(
    spark: SparkSession, catalog: Catalog, namespace: str, per_round: int, report: Report
) -> None:
    """Bronze and silver maintained by streams over ``ROUNDS`` landings; report and self-check."""
    from icefloe.spark import merge_into, stream_writer

    bronze, silver = f"{namespace}.trips_bronze", f"{namespace}.trips_silver"
    for ident in (bronze, silver):
        if catalog.table_exists(ident):
            catalog.drop_table(ident, purge=True)
        catalog.create_table(ident, EVENTS_SCHEMA, properties={"format-version": "3"})
    work = Path(tempfile.mkdtemp(prefix="icefloe-stream-"))
    landing = work / "landing"
    to_bronze = stream_writer(bronze)

    def merge_batch(df: Any, batch_id: int) -> None:
        merge_into(df, silver, on="trip_id", mode="merge-on-read")

    landed = last_corrections = last_new = 0
    try:
        with stage(f"streaming: {ROUNDS} landings -> bronze (stream) -> silver (stream + MERGE)", report):
            for round_no in range(ROUNDS):
                last_new, last_corrections = _land(spark, landing, round_no, per_round)
                landed += last_new + last_corrections
                events = spark.readStream.schema(EVENTS_DDL).parquet(str(landing))
                _run_available_now(events.writeStream.foreachBatch(to_bronze), work / "cp-bronze")
                bronze_stream = spark.readStream.format("icefloe").load(bronze)
                _run_available_now(bronze_stream.writeStream.foreachBatch(merge_batch), work / "cp-silver")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    bronze_table, silver_table = catalog.load_table(bronze), catalog.load_table(silver)
    bronze_rows = bronze_table.scan().count()
    silver_rows = silver_table.scan().count()
    trips = ROUNDS * per_round
    report.add("  bronze", f"{bronze_rows:,} events in {len(bronze_table.snapshots())} snapshots")
    report.add("  silver", f"{silver_rows:,} trips in {len(silver_table.snapshots())} snapshots")
    if bronze_rows != landed:
        raise SystemExit(f"bronze holds {bronze_rows} events, {landed} landed")
    if silver_rows != trips:
        raise SystemExit(f"silver holds {silver_rows} trips, expected {trips}")

    snapshots = silver_table.snapshots()
    start, end = snapshots[-2].snapshot_id, snapshots[-1].snapshot_id
    changes = silver_table.changelog(start_snapshot_id=start, end_snapshot_id=end).to_arrow()
    kinds = Counter(changes.column("_change_type").to_pylist())
    report.add(
        f"  silver changelog {start} -> {end}",
        ", ".join(f"{kinds.get(k, 0):,} {k}" for k in ("INSERT", "UPDATE_BEFORE", "UPDATE_AFTER", "DELETE")),
    )
    for row in changes.slice(0, 4).to_pylist():
        report.add(
            f"    {row['_change_type']}",
            f"trip {row['trip_id']} fare {row['fare']} revision {row['revision']}",
        )
    expected = {"INSERT": last_new, "UPDATE_BEFORE": last_corrections, "UPDATE_AFTER": last_corrections}
    if {k: kinds.get(k, 0) for k in expected} != expected or kinds.get("DELETE", 0):
        raise SystemExit(f"silver changelog {dict(kinds)} does not match the last round {expected}")
