"""Every read through the data source plans afresh: a view or a DataFrame queried many times in a
row never replays an earlier query's files, snapshot or filters (issue 13, item 10a)."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable

import pandas as pd
import pytest
from pyspark.sql import functions as F

from icefloe.catalog.base import Catalog
from icefloe.spark import create_table, read_table, write_table
from icefloe.spark.views import create_view

Predicate = tuple[str, Callable[[pd.DataFrame], pd.Series]]
EPOCH = dt.date(2024, 1, 1)


def _batch(spark, start: int, n: int):  # type: ignore[no-untyped-def]
    """Rows ``start..start+n`` with nulls in ``s`` and ``x`` (a long, int, string, double and date)."""
    return spark.range(start, start + n, 1, 2).select(
        F.col("id"),
        (F.col("id") % 5).cast("int").alias("grp"),
        F.when(F.col("id") % 7 == 0, F.lit(None))
        .otherwise(F.concat(F.lit("v"), F.col("id").cast("string")))
        .alias("s"),
        F.when(F.col("id") % 11 == 0, F.lit(None)).otherwise(F.col("id") / 10.0).alias("x"),
        F.date_add(F.lit(EPOCH), (F.col("id") % 30).cast("int")).alias("d"),
    )


@pytest.fixture
def table(spark, catalog: Catalog, table_name: str) -> str:  # type: ignore[no-untyped-def]
    create_table(
        spark, table_name, "id BIGINT NOT NULL, grp INT, s STRING, x DOUBLE, d DATE", partitioned_by=["grp"]
    )
    for start in (0, 60, 120):
        write_table(_batch(spark, start, 60), table_name)
    return table_name


def _atom(rng: random.Random) -> Predicate:
    """One comparison, IN, or IS [NOT] NULL predicate as SQL text and as a pandas (Kleene) mask."""
    op = rng.choice(["<", "<=", ">", ">=", "=", "!="])
    ops: dict[str, Callable[[pd.Series, object], pd.Series]] = {
        "<": lambda c, v: c < v,
        "<=": lambda c, v: c <= v,
        ">": lambda c, v: c > v,
        ">=": lambda c, v: c >= v,
        "=": lambda c, v: c == v,
        "!=": lambda c, v: c != v,
    }
    kind = rng.randrange(8)
    if kind == 0:
        k = rng.randrange(-5, 185)
        return f"id {op} {k}", lambda p: ops[op](p["id"], k)
    if kind == 1:
        vals = sorted(rng.sample(range(6), rng.randrange(1, 4)))
        return f"grp IN ({', '.join(map(str, vals))})", lambda p: p["grp"].isin(vals).astype("boolean")
    if kind == 2:
        return "s IS NULL", lambda p: p["s"].isna().astype("boolean")
    if kind == 3:
        return "s IS NOT NULL", lambda p: p["s"].notna().astype("boolean")
    if kind == 4:
        text = f"v{rng.randrange(0, 200)}"
        return f"s {op} '{text}'", lambda p: ops[op](p["s"], text)
    if kind == 5:
        v = rng.randrange(0, 190) / 10.0
        return f"x {op} {v}", lambda p: ops[op](p["x"], v)
    if kind == 6:
        return "x IS NULL", lambda p: p["x"].isna().astype("boolean")
    day = rng.randrange(0, 31)
    text = (EPOCH + dt.timedelta(days=day)).isoformat()
    return f"d {op} DATE'{text}'", lambda p: ops[op](p["day"], day)


def _predicate(rng: random.Random, depth: int = 0) -> Predicate:
    """A random filter: atoms combined with AND / OR / NOT (SQL three-valued logic in pandas)."""
    shape = rng.randrange(4) if depth < 2 else 0
    if shape == 0:
        return _atom(rng)
    if shape == 3:
        text, fn = _predicate(rng, depth + 1)
        return f"NOT ({text})", lambda p: ~fn(p)
    (lt, lf), (rt, rf) = _predicate(rng, depth + 1), _predicate(rng, depth + 1)
    if shape == 1:
        return f"({lt}) AND ({rt})", lambda p: lf(p) & rf(p)
    return f"({lt}) OR ({rt})", lambda p: lf(p) | rf(p)


def _model(spark, table: str) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    """A fresh unfiltered read as pandas with nullable dtypes (NA propagates like SQL NULL)."""
    frame = read_table(spark, table).toPandas()
    return pd.DataFrame(
        {
            "id": frame["id"].astype("Int64"),
            "grp": frame["grp"].astype("Int64"),
            "s": frame["s"].astype("string"),
            "x": frame["x"].astype("Float64"),
            "day": pd.array([(d - EPOCH).days for d in frame["d"]], dtype="Int64"),
        }
    )


def _count(mask: pd.Series) -> int:
    return int(mask.fillna(False).astype(bool).sum())


def test_fifty_filters_in_a_row_on_a_view_and_a_dataframe(spark, table: str) -> None:  # type: ignore[no-untyped-def]
    create_view(spark, "replan_view", table)
    df = spark.read.format("icefloe").load(table)
    model = _model(spark, table)
    assert len(model) == 180
    rng = random.Random(13)
    for i in range(50):
        text, fn = _predicate(rng)
        want = _count(fn(model))
        assert spark.sql(f"SELECT count(*) FROM replan_view WHERE {text}").collect()[0][0] == want, text
        assert df.filter(F.expr(text)).count() == want, text
        if i % 5 == 0:  # an unfiltered query right after a filtered one reads every row
            assert spark.sql("SELECT count(*) FROM replan_view").collect()[0][0] == 180
            assert df.count() == 180


def test_issue_sequence_and_inserts_through_the_view(spark, table: str) -> None:  # type: ignore[no-untyped-def]
    create_view(spark, "replan_view2", table)
    df = spark.read.format("icefloe").load(table)

    def count(where: str = "") -> int:
        return int(spark.sql(f"SELECT count(*) FROM replan_view2 {where}").collect()[0][0])

    assert count("WHERE id > 5") == 174
    assert count() == 180
    assert count("WHERE id = 3 OR id = 8") == 2
    assert df.filter("id > 5").count() == 174
    assert df.count() == 180
    spark.sql("INSERT INTO replan_view2 VALUES (1000, 1, 'new', 1.0, DATE'2024-02-01')")
    assert count() == 181
    assert df.count() == 181  # the DataFrame reads the snapshot current when it runs
    spark.sql("INSERT INTO replan_view2 SELECT id + 2000, grp, s, x, d FROM replan_view2")
    assert count() == 362
    assert count("WHERE id >= 2000") == 181
