"""The main job on Spark: an end-to-end pipeline on the embedded defaults.

Local Spark (``local[2]``), the SQLite catalog and the local warehouse under ``./.icefloe``.
Spark generates a few million taxi-trip-like rows and writes them through icefloe into a table
partitioned by ``day(pickup_at)`` and ``bucket(4, vendor)``; then incremental appends, an
overwrite of one day, a row delete, a MERGE and a DELETE from Spark writing deletion vectors,
compaction of the files carrying them, Spark SQL queries with file pruning, time travel,
snapshot expiry deleting the files only old snapshots read, and a streaming stage (a bronze table
fed by a stream, a silver table kept by a streaming read of bronze with a MERGE per micro-batch,
its changelog printed for one interval: ``icefloe.cli.streaming_stage``).
Run it with ``bash scripts/main-job.sh`` (``--rows N`` to resize); ``--master``, ``--catalog-uri``,
``--warehouse``, ``--catalog-property`` and ``--conf`` run it on a cluster against object storage
(``icefloe.cli.job_options``).
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from icefloe.cli.job_options import JobTarget, add_target_arguments, target_from_arguments
from icefloe.cli.pipeline import DAYS, START, TRIPS_SCHEMA, TRIPS_SPEC, Report, progress, stage
from icefloe.maintenance.expire_snapshots import expire_snapshots

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from icefloe.dml.change_builder import RowLevelResult
    from icefloe.table.table import Table

NAMESPACE = "demo"
DAY_5 = "pickup_at >= '2026-01-06T00:00:00+00:00' and pickup_at < '2026-01-07T00:00:00+00:00'"
IDENT = f"{NAMESPACE}.trips_spark"
# A deterministic uniform [0, 1) per row id (Spark's rand() needs a constant seed).
_UNIFORM = "(pmod(hash(id, {0}), 1000003) / 1000003.0)"


def generate(spark: SparkSession, first_id: int, rows: int, day_from: int, days: int) -> DataFrame:
    """Synthetic, deterministic trips computed by Spark executors (no data passes through the driver)."""
    start_s = int(START.timestamp()) + day_from * 86_400
    return spark.range(first_id, first_id + rows).selectExpr(
        "id AS trip_id",
        f"timestamp_seconds({start_s} + CAST({_UNIFORM.format(1)} * {days * 86_400} AS BIGINT)) AS pickup_at",
        "element_at(array('acme','blue','cab co','dash','east','fleet'), CAST(id % 6 AS INT) + 1) AS vendor",
        "CAST(1 + id % 6 AS INT) AS passengers",
        f"CAST(round({_UNIFORM.format(7)} * 20, 3) AS DOUBLE) AS distance_km",
        f"CAST(round(2.5 + {_UNIFORM.format(11)} * 60, 2) AS DECIMAL(10,2)) AS fare",
        "CASE WHEN id % 4 = 3 THEN NULL ELSE element_at(array('card','cash','app'), CAST(id % 4 AS INT) + 1) "
        "END AS payment",
    )


def merge_trip_corrections(spark: SparkSession, rows: int) -> RowLevelResult:
    """MERGE corrected fares for existing trips (every 100th id of one day) and brand-new trips.

    The expected counts come from Spark independently of the merge: the corrections are read from
    the table itself, the new trips have ids no earlier stage used.
    """
    from pyspark.sql import functions as F

    from icefloe.spark import merge_into, read_table

    corrections = (
        read_table(spark, IDENT, filter=DAY_5)
        .where("trip_id % 100 = 7")
        .withColumn("fare", (F.col("fare") + F.lit(1)).cast("decimal(10,2)"))
    )
    fresh = generate(spark, 20 * rows, max(rows // 100, 1), 5, 1)
    source = corrections.unionByName(fresh).cache()
    expected_updates, expected_inserts = corrections.count(), fresh.count()
    result = merge_into(source, IDENT, on="trip_id", mode="merge-on-read")
    source.unpersist()
    if (result.updated_rows, result.inserted_rows) != (expected_updates, expected_inserts):
        raise SystemExit(
            f"merge: {result.updated_rows} updated / {result.inserted_rows} inserted, expected "
            f"{expected_updates} / {expected_inserts}"
        )
    return result


def start_session(target: JobTarget) -> SparkSession:
    """A session on ``target``'s master, remembering its catalog (properties included) in the conf."""
    from icefloe.spark import session
    from icefloe.spark.runtime import CATALOG_CONF_PREFIX

    catalog_conf = {CATALOG_CONF_PREFIX + k: v for k, v in target.catalog_properties.items()}
    return session(
        "icefloe-main-job",
        master=target.master,
        catalog_uri=target.catalog_uri,
        warehouse=target.warehouse,
        **{**catalog_conf, **target.spark_conf},
    )


def run(
    rows: int, batches: int, spark: SparkSession | None = None, target: JobTarget | None = None
) -> Report:
    """Run the pipeline and return its report.

    Without ``spark`` a session on ``target`` (default: ``local[2]`` on the embedded defaults) is
    started and stopped at the end; a given session is used as it is configured, catalog
    included, and left running.
    """
    from icefloe.spark import delete_rows, read_table, rewrite_data_files, write_table
    from icefloe.spark.runtime import resolve_catalog

    report = Report()
    own_session = spark is None
    if spark is None:
        target = target or JobTarget()
        with stage(f"start Spark ({target.master})", report):
            spark = start_session(target)
    catalog = resolve_catalog(spark, None)
    if not catalog.namespace_exists((NAMESPACE,)):
        catalog.create_namespace((NAMESPACE,))
    if catalog.table_exists(IDENT):
        catalog.drop_table(IDENT, purge=True)
    table = catalog.create_table(
        IDENT, TRIPS_SCHEMA, partition_spec=TRIPS_SPEC, properties={"format-version": "3"}
    )
    report.add("table", f"{IDENT} (format v{table.format_version}) at {table.location()}")

    with stage(f"ingest {rows:,} rows in {batches} Spark jobs", report):
        per_batch = rows // batches
        for b in range(batches):
            n = per_batch if b < batches - 1 else rows - per_batch * (batches - 1)
            write_table(generate(spark, b * per_batch, n, 0, DAYS), IDENT, mode="append")
            progress(b + 1, batches, "jobs committed")
    expected_rows = _check_total(table, rows, "ingest")
    if len(table.snapshots()) != batches:
        raise SystemExit(f"ingest: {len(table.snapshots())} snapshots, expected {batches}")
    report.add("  ingest", f"{expected_rows:,} rows in {batches} snapshots")
    first_snapshot = table.snapshots()[0].snapshot_id

    increments = max(rows // 20, 1)
    with stage(f"3 incremental appends of {increments:,} late rows", report):
        for i in range(3):
            write_table(generate(spark, rows + i * increments, increments, DAYS - 1, 1), IDENT, mode="append")
    expected_rows = _check_total(table, expected_rows + 3 * increments, "incremental appends")

    with stage("overwrite day 0 with corrected data", report):
        day0 = "pickup_at >= '2026-01-01T00:00:00+00:00' and pickup_at < '2026-01-02T00:00:00+00:00'"
        replaced = read_table(spark, IDENT, filter=day0).count()
        corrected = max(rows // 50, 1)
        write_table(generate(spark, 10 * rows, corrected, 0, 1), IDENT, mode="overwrite", filter=day0)
    expected_rows = _check_total(table, expected_rows - replaced + corrected, "overwrite of day 0")

    with stage("delete trips shorter than 50 m (copy-on-write)", report):
        short = "distance_km < 0.05"
        short_trips = read_table(spark, IDENT, filter=short).count()
        table.refresh()
        table.delete(short)
    expected_rows = _check_total(table, expected_rows - short_trips, "copy-on-write delete")
    report.add("  overwrite, delete", f"{replaced:,} rows replaced by {corrected:,}, {short_trips:,} deleted")

    with stage("Spark MERGE: fare corrections and new trips (merge-on-read, deletion vectors)", report):
        merged = merge_trip_corrections(spark, rows)
    report.add("  merge", f"{merged.updated_rows:,} updated, {merged.inserted_rows:,} inserted")

    with stage("Spark DELETE of unpaid 2-passenger trips on one day (merge-on-read)", report):
        unpaid = f"payment is null and passengers = 2 and {DAY_5}"
        expected = read_table(spark, IDENT, filter=unpaid).count()
        deleted = delete_rows(spark, IDENT, unpaid, mode="merge-on-read")
        if deleted.deleted_rows != expected:
            raise SystemExit(f"delete removed {deleted.deleted_rows} rows, {expected} matched")
    report.add("  delete", f"{deleted.deleted_rows:,} rows, {deleted.delete_files_added} deletion vector(s)")

    with stage("compaction: rewrite the files carrying deletes (Spark executors)", report):
        before = read_table(spark, IDENT).count()
        compacted = rewrite_data_files(spark, IDENT, min_input_files=1)
        after = read_table(spark, IDENT).count()
        if after != before:
            raise SystemExit(f"compaction changed the row count: {before} -> {after}")
    report.add(
        "  compaction",
        f"{compacted.rewritten_data_files} files -> {compacted.added_data_files}, "
        f"{compacted.removed_delete_files} delete file(s) retired",
    )

    with stage("Spark SQL: trips and revenue per vendor over the last 3 days", report):
        recent = "pickup_at >= '2026-01-12T00:00:00+00:00'"
        read_table(spark, IDENT, filter=recent).createOrReplaceTempView("recent_trips")
        query = "SELECT vendor, count(*) AS trips, sum(fare) AS revenue FROM recent_trips GROUP BY vendor"
        by_vendor = spark.sql(query + " ORDER BY vendor").collect()
    table.refresh()
    files_read = len(table.scan(filter=recent).plan_files())
    report.add("files planned for the 3-day query", f"{files_read} of {len(table.scan().plan_files())}")
    for row in by_vendor:
        report.add(f"  vendor {row['vendor']}", f"{row['trips']:,} trips, {row['revenue']} revenue")

    with stage("time travel: count the first snapshot with Spark", report):
        first_rows = read_table(spark, IDENT, snapshot_id=first_snapshot).count()
    with stage("count the current table with Spark", report):
        now_rows = read_table(spark, IDENT).count()
    expected_rows += merged.inserted_rows - deleted.deleted_rows
    if now_rows != expected_rows:
        raise SystemExit(f"the table holds {now_rows} rows, the stages' counts add up to {expected_rows}")
    distinct = read_table(spark, IDENT, columns=["trip_id"]).distinct().count()
    if distinct != now_rows:
        raise SystemExit(f"duplicate trip ids: {now_rows} rows but {distinct} distinct ids")
    report.add("rows now", f"{now_rows:,}")
    report.add(f"rows in the first snapshot ({first_snapshot})", f"{first_rows:,}")
    report.add("snapshots", len(table.snapshots()))
    ops = [s.operation for s in table.snapshots()]
    report.add("operations", ", ".join(f"{op} x{ops.count(op)}" for op in dict.fromkeys(ops)))
    report.add("data files now", table.current_snapshot().summary.get("total-data-files", "?"))  # type: ignore[union-attr]

    with stage("maintenance: expire all but the last 3 snapshots, delete their files", report):
        expired = expire_snapshots(table, older_than=int(time.time() * 1000) + 1, retain_last=3)
        kept_rows = read_table(spark, IDENT).count()
        if kept_rows != now_rows:
            raise SystemExit(f"snapshot expiry changed the row count: {now_rows} -> {kept_rows}")
    report.add(
        "  expiry",
        f"{len(expired.expired_snapshot_ids)} snapshots, {len(expired.deleted_content_files)} data/delete "
        f"files and {len(expired.deleted_metadata_files)} metadata files deleted",
    )
    from icefloe.cli.streaming_stage import run_streaming_stage

    run_streaming_stage(spark, catalog, NAMESPACE, max(rows // 100, 20), report)
    if own_session:
        spark.stop()
    return report


def _check_total(table: Table, expected: int, what: str) -> int:
    """Stop the job unless the table's current snapshot holds ``expected`` rows (data files only)."""
    table.refresh()
    snapshot = table.current_snapshot()
    total = int(snapshot.summary.get("total-records", "-1")) if snapshot else 0
    if total != expected:
        raise SystemExit(f"{what}: the table holds {total} rows, expected {expected}")
    return total


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m icefloe.cli.spark_pipeline``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=4_000_000, help="rows in the initial ingest")
    parser.add_argument("--batches", type=int, default=4, help="Spark jobs (commits) for the initial ingest")
    add_target_arguments(parser)
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    report = run(args.rows, args.batches, target=target_from_arguments(args))
    report.add("total time", f"{time.perf_counter() - t0:.2f} s")
    print("\nicefloe Spark pipeline report\n" + report.render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
