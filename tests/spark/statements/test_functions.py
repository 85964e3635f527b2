"""Iceberg's Spark SQL functions through icefloe.spark.sql: values equal the spec's transforms.

Expected values are the spec's test vectors (Appendix B: hash of 34 is 2017239379, so bucket[N]
is ``(2017239379 & INT_MAX) % N``) and the transforms worked out by hand; the same values icefloe
writes as partition values are cross-checked on a partitioned table's ``partitions`` table.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

import icefloe
from icefloe.errors import ValidationError
from icefloe.spark import sql

INT_MAX = 0x7FFFFFFF

# (Spark literal, spec hash) from the spec's Appendix B
HASH_VECTORS = [
    ("CAST(34 AS INT)", 2017239379),
    ("CAST(34 AS BIGINT)", 2017239379),
    ("CAST(14.20 AS DECIMAL(9, 2))", -500754589),
    ("DATE '2017-11-16'", -653330422),
    ("TIMESTAMP_NTZ '2017-11-16 22:31:08'", -2047944441),
    ("TIMESTAMP '2017-11-16 14:31:08-08:00'", -2047944441),
    ("'iceberg'", 1210000089),
    ("unhex('f79c3e09677c4bbda4793f349cb785e7')", 1488055340),  # the uuid vector, as its 16 bytes
    ("unhex('00010203')", -188683207),
]


def one(spark: Any, query: str) -> tuple[Any, ...]:
    found = [tuple(r) for r in sql(spark, query).collect()]
    assert len(found) == 1
    return found[0]


@pytest.mark.parametrize(("literal", "spec_hash"), HASH_VECTORS)
def test_bucket_matches_the_spec_hash_vectors(spark: Any, literal: str, spec_hash: int) -> None:
    expected = tuple((spec_hash & INT_MAX) % n for n in (16, 1000, INT_MAX))
    got = one(
        spark,
        f"SELECT system.bucket(16, x), system.bucket(1000, x), icefloe.system.bucket({INT_MAX}, x) "
        f"FROM (SELECT {literal} AS x)",
    )
    assert got == expected


def test_truncate_keeps_the_argument_type(spark: Any) -> None:
    got = one(
        spark,
        """SELECT system.truncate(10, 1), system.truncate(10, -1), system.truncate(10, CAST(-1 AS BIGINT)),
                  system.truncate(50, CAST(10.65 AS DECIMAL(9, 2))), system.truncate(3, 'iceberg'),
                  system.truncate(2, 'äöü'), system.truncate(2, unhex('010203')),
                  system.truncate(10, CAST(NULL AS INT))""",
    )
    assert got == (0, -10, -10, Decimal("10.50"), "ice", "äö", b"\x01\x02", None)
    frame = sql(
        spark, "SELECT system.truncate(10, CAST(7 AS BIGINT)) AS l, system.truncate(4, 'abcdef') AS s"
    )
    assert [f.dataType.simpleString() for f in frame.schema.fields] == ["bigint", "string"]


def test_time_functions(spark: Any) -> None:
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        got = one(
            spark,
            """SELECT system.years(DATE '2017-11-16'), system.months(DATE '2017-11-16'),
                      system.days(DATE '2017-11-16'),
                      system.years(ts), system.months(ts), system.days(ts), system.hours(ts),
                      system.hours(TIMESTAMP_NTZ '1969-12-31 23:59:59'),
                      system.days(TIMESTAMP_NTZ '1969-12-31 23:00:00')
               FROM (SELECT TIMESTAMP '2017-12-31 20:00:00' AS ts)""",  # 2018-01-01 04:00 UTC
        )
    finally:
        spark.conf.unset("spark.sql.session.timeZone")
    hours = (dt.datetime(2018, 1, 1, 4) - dt.datetime(1970, 1, 1)) // dt.timedelta(hours=1)
    assert got == (
        47,
        574,
        dt.date(2017, 11, 16),
        48,
        576,
        dt.date(2018, 1, 1),
        hours,
        -1,
        dt.date(1969, 12, 31),
    )


def test_iceberg_version(spark: Any) -> None:
    assert one(spark, "SELECT system.iceberg_version()") == (icefloe.__version__,)
    assert sql(spark, "SELECT icefloe.system.iceberg_version()").columns == [
        "icefloe.system.iceberg_version()"
    ]


def test_functions_in_where_and_group_by_on_icefloe_and_spark_tables(spark: Any, table_name: str) -> None:
    t = f"icefloe.{table_name}"
    sql(spark, f"CREATE TABLE {t} (id bigint, name string) USING iceberg PARTITIONED BY (bucket(4, id))")
    sql(spark, f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (34, 'e')")
    by_bucket = sql(
        spark,
        f"""SELECT system.bucket(4, id) AS b, count(*) AS n FROM {t}
            WHERE system.bucket(4, id) <> 3 GROUP BY system.bucket(4, id) ORDER BY b""",
    )
    # the values icefloe wrote as partition values are what the function gives
    partitions = sql(
        spark, f"SELECT partition.id_bucket, record_count FROM {t}.partitions WHERE partition.id_bucket <> 3"
    )
    assert sorted(tuple(r) for r in by_bucket.collect()) == sorted(tuple(r) for r in partitions.collect())
    assert one(spark, f"SELECT system.bucket(4, id) FROM {t} WHERE id = 34") == ((2017239379 & INT_MAX) % 4,)
    # truncate's result type comes from its argument, here a column of a CTE over an icefloe table
    prefixes = sql(
        spark,
        f"""WITH named AS (SELECT id, name || name AS twice FROM {t})
            SELECT system.truncate(3, twice) AS p, system.truncate(2, n.id) AS i FROM named n
            JOIN {t} o ON o.id = n.id WHERE n.id >= 4""",
    )
    assert [f.dataType.simpleString() for f in prefixes.schema.fields] == ["string", "bigint"]
    assert sorted(tuple(r) for r in prefixes.collect()) == [("dd", 4), ("ee", 34)]
    spark.createDataFrame([(34,), (35,)], "id bigint").createOrReplaceTempView("fn_plain")
    try:
        got = sorted(tuple(r) for r in sql(spark, "SELECT id, system.bucket(16, id) FROM fn_plain").collect())
    finally:
        spark.catalog.dropTempView("fn_plain")
    assert got[0] == (34, 3)


def test_bad_arguments_are_refused(spark: Any) -> None:
    with pytest.raises(ValidationError, match="number of buckets must be a positive integer literal"):
        sql(spark, "SELECT system.bucket(0, 1)")
    with pytest.raises(ValidationError, match="takes 2 argument"):
        sql(spark, "SELECT system.truncate(1)")
