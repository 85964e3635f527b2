"""The main job's target options: master, catalog, warehouse, storage properties, Spark settings."""

from __future__ import annotations

import argparse

import pytest

from icefloe.cli.job_options import add_target_arguments, credentials_from_environment, target_from_arguments


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_target_arguments(parser)
    return parser.parse_args(list(argv))


def test_defaults_are_the_embedded_local_setup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ICEFLOE_CATALOG_URI", "sqlite:////tmp/x/catalog.db")
    monkeypatch.setenv("ICEFLOE_WAREHOUSE", "/tmp/x/warehouse")
    target = target_from_arguments(_parse(), environ={})
    assert target.master == "local[2]"
    assert (target.catalog_uri, target.warehouse) == ("sqlite:////tmp/x/catalog.db", "/tmp/x/warehouse")
    assert target.catalog_properties == {} and target.spark_conf == {}


def test_cluster_target_with_storage_properties_and_environment_credentials() -> None:
    args = _parse(
        "--master=spark://10.0.0.1:7077",
        "--catalog-uri=postgresql+psycopg://u@db/ice",
        "--warehouse=s3://bucket/wh",
        "--catalog-property=s3.endpoint=http://minio:9000",
        "--catalog-property",
        "s3.path-style-access=true",
        "--conf=spark.executor.memory=4g",
        "--conf=spark.executor.extraJavaOptions=-Da=b",
    )
    env = {"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK", "AWS_SESSION_TOKEN": "TK"}
    target = target_from_arguments(args, environ=env)
    assert target.master == "spark://10.0.0.1:7077"
    assert (target.catalog_uri, target.warehouse) == ("postgresql+psycopg://u@db/ice", "s3://bucket/wh")
    assert target.catalog_properties == {
        "s3.endpoint": "http://minio:9000",
        "s3.path-style-access": "true",
        "s3.access-key-id": "AK",
        "s3.secret-access-key": "SK",
        "s3.session-token": "TK",
    }
    assert target.spark_conf == {"spark.executor.memory": "4g", "spark.executor.extraJavaOptions": "-Da=b"}


def test_explicit_credentials_win_over_the_environment() -> None:
    env = {"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK"}
    assert credentials_from_environment({"s3.access-key-id": "mine"}, env) == {}
    assert credentials_from_environment({}, {"AWS_SECRET_ACCESS_KEY": "SK"}) == {}  # no key id: nothing
    assert credentials_from_environment({}, env) == {"s3.access-key-id": "AK", "s3.secret-access-key": "SK"}


def test_a_pair_without_equals_sign_is_rejected() -> None:
    with pytest.raises(SystemExit, match="--conf takes KEY=VALUE"):
        target_from_arguments(_parse("--conf=spark.executor.memory"), environ={})
