"""Spark redacts catalog logins wherever it shows its configuration (``runtime.REDACTION_REGEX``)."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.spark.runtime import REDACTION_REGEX

REDACTED = "*********(redacted)"


def _redacted_by_spark(spark: Any, pairs: list[tuple[str, str]]) -> dict[str, str]:
    """What Spark's own ``Utils.redact`` shows of these settings under the session's pattern."""
    jvm = spark.sparkContext._jvm
    array = spark.sparkContext._gateway.new_array(jvm.scala.Tuple2, len(pairs))
    for i, (key, value) in enumerate(pairs):
        array[i] = jvm.scala.Tuple2(key, value)
    conf = spark.sparkContext._jsc.sc().conf()
    shown = jvm.org.apache.spark.util.Utils.redact(
        conf, jvm.scala.collection.immutable.ArraySeq.unsafeWrapArray(array)
    )
    return {str(t._1()): str(t._2()) for t in [shown.apply(i) for i in range(shown.size())]}


def test_the_session_redacts_with_icefloes_pattern(spark: Any) -> None:
    assert spark.sparkContext.getConf().get("spark.redaction.regex") == REDACTION_REGEX


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("spark.icefloe.catalog.credential", "client:s3cr3t"),
        ("spark.icefloe.catalog.token", "eyJ.abc"),
        ("spark.icefloe.catalog.oauth2-server-uri", "https://idp/token"),
        ("spark.icefloe.catalog.header.X-Api-Key", "k-123"),
        ("spark.icefloe.catalog.uri", "postgresql://icefloe:pw@db:5432/catalog"),
        ("spark.hadoop.fs.s3a.secret.key", "abc"),
    ],
)
def test_a_login_is_redacted(spark: Any, key: str, value: str) -> None:
    assert _redacted_by_spark(spark, [(key, value)]) == {key: REDACTED}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("spark.icefloe.catalog.uri", "sqlite:////tmp/catalog.db"),
        ("spark.icefloe.catalog.uri", "http://127.0.0.1:8181"),
        ("spark.icefloe.catalog.warehouse", "s3://bucket/warehouse"),
        ("spark.icefloe.catalog.type", "rest"),
        ("spark.master", "spark://host:7077"),
    ],
)
def test_what_is_no_login_stays_readable(spark: Any, key: str, value: str) -> None:
    assert _redacted_by_spark(spark, [(key, value)]) == {key: value}
