"""Choosing among a table result's ``storage-credentials``."""

from __future__ import annotations

from icefloe.catalog.rest.vended import best_credential

CREDENTIALS = [
    {"prefix": "s3://b/", "config": {"s3.access-key-id": "bucket"}},
    {"prefix": "s3://b/wh/db/t", "config": {"s3.access-key-id": "table"}},
    {"prefix": "s3://b/wh/db/", "config": {"s3.access-key-id": "namespace", "s3.region": "eu-west-1"}},
    {"prefix": "s3://other/wh/db/t/", "config": {"s3.access-key-id": "other"}},
]


def test_the_longest_matching_prefix_wins_and_nothing_is_merged() -> None:
    assert best_credential(CREDENTIALS, "s3://b/wh/db/t") == {"s3.access-key-id": "table"}
    assert best_credential(CREDENTIALS, "s3://b/wh/db/t/") == {"s3.access-key-id": "table"}
    assert best_credential(CREDENTIALS, "s3://b/wh/db/u") == {
        "s3.access-key-id": "namespace",
        "s3.region": "eu-west-1",
    }
    assert best_credential(CREDENTIALS, "s3://b/elsewhere/t") == {"s3.access-key-id": "bucket"}


def test_a_prefix_that_only_starts_the_name_does_not_cover_a_sibling() -> None:
    slash = [{"prefix": "s3://b/wh/db/t/", "config": {"k": "t"}}]
    assert best_credential(slash, "s3://b/wh/db/t2") == {}
    assert best_credential(slash, "s3://b/wh/db/t") == {"k": "t"}
    bare = [
        {"prefix": "s3://b/wh/db/t", "config": {"k": "t"}},
        {"prefix": "s3://b/wh/", "config": {"k": "wh"}},
    ]
    assert best_credential(bare, "s3://b/wh/db/t2") == {"k": "wh"}
    assert best_credential(bare, "s3://b/wh/db/t/") == {"k": "t"}
    assert best_credential([{"prefix": "s3://b/wh/d", "config": {"k": "d"}}], "s3://b/wh/data/t") == {}


def test_no_credentials() -> None:
    assert best_credential(None, "s3://b/t") == {}
    assert best_credential([], "s3://b/t") == {}
    assert best_credential(CREDENTIALS, "s3://third/t") == {}
