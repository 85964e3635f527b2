"""spark/jvm_stream.py: streaming reads on the JVM route (icefloe.DefaultSource, Spark's Parquet reader).

The session of the tests has icefloe's jar (``scripts/build_jar.py``, run by bootstrap); the
existing streaming tests (``test_stream_source.py``, ``test_streaming.py``) run on this route too.
Here: the route is the one the query used (its progress names the JVM stream), the Python route
is still reachable per read, batch reads and writes of the format keep working, and positions
deleted before the stream reads a file are not returned.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.base import Catalog
from icefloe.maintenance.expire_snapshots import expire_snapshots
from icefloe.spark import jvm_stream
from icefloe.spec.schema import Schema
from icefloe.spec.types import DecimalType, LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "name", StringType(), False),
    NestedField(3, "amount", DecimalType(10, 2), False),
)

pytestmark = pytest.mark.skipif(shutil.which("javac") is None, reason="no JDK: bootstrap builds no jar")


def _rows(ids: range) -> pa.Table:
    from decimal import Decimal

    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "name": pa.array([f"n{i}" for i in ids], pa.string()),
            "amount": pa.array([Decimal(i) / 100 for i in ids], pa.decimal128(10, 2)),
        }
    )


def _stream(spark: Any, name: str, checkpoint: Path, **options: str) -> tuple[list[tuple[Any, ...]], str]:
    """Stream the table with Trigger.AvailableNow into memory: (sorted rows, the source's name)."""
    reader = spark.readStream.format("icefloe")
    for key, value in options.items():
        reader = reader.option(key, value)
    view = f"jvm_stream_{checkpoint.name}"
    query = (
        reader.load(name)
        .writeStream.format("memory")
        .queryName(view)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    sources = {s["description"] for p in query.recentProgress for s in p["sources"]}
    rows = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {view}").collect())
    spark.catalog.dropTempView(view)
    return rows, ",".join(sorted(sources))


def _expected(ids: list[int]) -> list[tuple[Any, ...]]:
    from decimal import Decimal

    return [(i, f"n{i}", Decimal(i) / 100) for i in sorted(ids)]


def test_stream_runs_on_the_jvm_route_and_python_stays_reachable(  # type: ignore[no-untyped-def]
    spark, catalog: Catalog, table_name: str, tmp_path: Path
) -> None:
    table = catalog.create_table(table_name, SCHEMA, properties={"format-version": "2"})
    for start in (0, 100, 200):
        table.append(_rows(range(start, start + 50)))

    rows, source = _stream(spark, table_name, tmp_path / "native", **{"max-files-per-trigger": "1"})
    assert source == jvm_stream.NATIVE_STREAM
    assert rows == _expected([*range(0, 50), *range(100, 150), *range(200, 250)])

    python = {"stream-reader": "python"}
    python_rows, python_source = _stream(spark, table_name, tmp_path / "python", **python)
    assert jvm_stream.NATIVE_STREAM not in python_source
    assert python_rows == rows

    # batch reads and writes of the format go through the Python data source, as before
    assert spark.read.format("icefloe").load(table_name).count() == 150
    spark.createDataFrame([(7, "n7", None)], "id bigint, name string, amount decimal(10,2)").write.format(
        "icefloe"
    ).mode("append").save(table_name)
    assert spark.read.format("icefloe").load(table_name).filter("id = 7").count() == 2


def test_changelog_mode_stays_on_the_python_source(  # type: ignore[no-untyped-def]
    spark, catalog: Catalog, table_name: str, tmp_path: Path
) -> None:
    table = catalog.create_table(table_name, SCHEMA, properties={"format-version": "2"})
    table.append(_rows(range(3)))
    rows, source = _stream(spark, table_name, tmp_path / "changes", **{"read-changelog": "true"})
    assert jvm_stream.NATIVE_STREAM not in source
    assert [(r[0], r[3]) for r in rows] == [(0, "INSERT"), (1, "INSERT"), (2, "INSERT")]


@pytest.mark.parametrize("version", [2, 3])
def test_rows_deleted_before_the_stream_reads_a_file_are_not_returned(  # type: ignore[no-untyped-def]
    spark, catalog: Catalog, table_name: str, tmp_path: Path, version: int
) -> None:
    """The stream starts at a snapshot whose history was expired: it reads every live file of that
    snapshot with the position deletes (v2) or deletion vectors (v3) committed after the file."""
    table = catalog.create_table(table_name, SCHEMA, properties={"format-version": str(version)})
    table.append(_rows(range(0, 40)))
    table.append(_rows(range(100, 120)))
    table.delete("id IN (3, 17, 39, 105)", mode="merge-on-read")
    table.append(_rows(range(200, 210)))
    expire_snapshots(table, older_than=2**62, retain_last=2)  # the delete is now the oldest snapshot
    deletes = table.refresh().current_snapshot().summary
    assert int(deletes.get("total-position-deletes", 0)) == 4  # the files still carry their deletes

    rows, source = _stream(spark, table_name, tmp_path / f"v{version}")
    assert source == jvm_stream.NATIVE_STREAM
    kept = [i for i in [*range(0, 40), *range(100, 120), *range(200, 210)] if i not in (3, 17, 39, 105)]
    assert rows == _expected(kept)


def test_tables_with_equality_deletes_stream_through_python(  # type: ignore[no-untyped-def]
    spark, catalog: Catalog, table_name: str, tmp_path: Path
) -> None:
    """Equality deletes cannot become row positions without reading the data: such tables (the
    head snapshot counts equality deletes) stream on the Python source, rows as before."""
    table = catalog.create_table(table_name, SCHEMA, properties={"format-version": "2"})
    table.append(_rows(range(0, 10)))
    table.upsert_with_equality_deletes(_rows(range(3, 5)), on=["id"])
    assert int(table.refresh().current_snapshot().summary["total-equality-deletes"]) > 0

    options = {"skip-overwrite-snapshots": "true"}
    rows, source = _stream(spark, table_name, tmp_path / "eq", **options)
    assert jvm_stream.NATIVE_STREAM not in source
    assert rows == _expected(list(range(0, 10)))  # the upsert's snapshot is skipped, as on any route


def test_classpath_settings_add_the_jar_once() -> None:
    jar = str(jvm_stream.jar_path())
    added = jvm_stream.classpath_settings({"spark.jars": "/x/other.jar"})
    assert added == {"spark.jars": f"/x/other.jar,{jar}", "spark.driver.extraClassPath": jar}
    assert jvm_stream.classpath_settings({**added}) == {}


def test_a_checkpoint_of_the_python_source_continues_on_the_jvm_route(  # type: ignore[no-untyped-def]
    spark, catalog: Catalog, table_name: str, tmp_path: Path
) -> None:
    """Both routes store the same offset JSON: a query moved to the JVM continues where it stopped."""
    table = catalog.create_table(table_name, SCHEMA, properties={"format-version": "2"})
    table.append(_rows(range(0, 10)))
    checkpoint = tmp_path / "shared"
    seen: list[tuple[str, list[int]]] = []

    def run(route: str) -> set[str]:
        def collect(df, batch_id: int) -> None:  # type: ignore[no-untyped-def]
            seen.append((route, sorted(r["id"] for r in df.collect())))

        query = (
            spark.readStream.format("icefloe")
            .option("stream-reader", route)
            .load(table_name)
            .writeStream.foreachBatch(collect)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        return {s["description"] for p in query.recentProgress for s in p["sources"]}

    assert jvm_stream.NATIVE_STREAM not in run("python")
    table.append(_rows(range(10, 15)))
    assert run("native") == {jvm_stream.NATIVE_STREAM}
    assert [(route, ids) for route, ids in seen if ids] == [
        ("python", list(range(0, 10))),
        ("native", list(range(10, 15))),
    ]


WITHOUT_JAR = r"""
import json, sys
import pyarrow as pa
from icefloe.spark import jvm_stream
from icefloe.spark.runtime import resolve_catalog
from icefloe.spark.session_setup import session

home = sys.argv[1]
spark = session(
    master="local[2]", catalog_uri=f"sqlite:///{home}/c.db", warehouse=f"{home}/wh",
    **{"spark.icefloe.jvm.enabled": "false", "spark.ui.enabled": "false",
       "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"},
)
spark.sparkContext.setLogLevel("ERROR")
catalog = resolve_catalog(spark, None)
catalog.create_namespace(("db",))
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField
table = catalog.create_table("db.t", Schema(NestedField(1, "id", LongType(), True)))
table.append(pa.table({"id": pa.array(range(5), pa.int64())}))
query = (
    spark.readStream.format("icefloe").load("db.t").writeStream.format("memory").queryName("out")
    .option("checkpointLocation", f"{home}/cp").trigger(availableNow=True).start()
)
query.awaitTermination()
print(json.dumps({
    "loaded": jvm_stream.loaded(spark),
    "sources": sorted({s["description"] for p in query.recentProgress for s in p["sources"]}),
    "streamed": sorted(r["id"] for r in spark.sql("SELECT id FROM out").collect()),
    "batch": spark.read.format("icefloe").load("db.t").count(),
}))
"""


@pytest.mark.slow
def test_without_the_jar_the_python_source_streams(tmp_path: Path) -> None:
    """A session left without the jar (``spark.icefloe.jvm.enabled=false``) works as before: the
    Python data source serves the format and streams (own process: one SparkSession per JVM)."""
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_JAR, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["loaded"] is False
    assert result["sources"] and all(jvm_stream.NATIVE_STREAM not in s for s in result["sources"])
    assert result["streamed"] == [0, 1, 2, 3, 4]
    assert result["batch"] == 5
