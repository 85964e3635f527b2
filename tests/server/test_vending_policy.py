"""The session policy of vended credentials, checked with moto's IAM policy evaluator.

The end-to-end tests (``test_vending_locations``) see the store refuse what the policy leaves out,
through the STS child's session-policy check; these ones look at the document itself, request by
request, with moto's own evaluator (``moto.iam.access_control``), including what no client
sends. The evaluator knows only ``StringEquals`` conditions and passes any other, so the test
registers IAM's ``StringLike`` (``*`` and ``?`` wildcards) for its duration.
"""

from __future__ import annotations

import json
import re

import pytest
from moto.iam import policy_conditions
from moto.iam.access_control import IAMPolicy, PermissionResult

from icefloe.errors import ValidationError
from icefloe.server.vending_policy import (
    MAX_POLICY_CHARS,
    PolicyTooLarge,
    covering_prefixes,
    packed_session_policy,
    session_policy,
    split_s3_location,
)

TABLE = "s3://lake/wh/db/t"


def _string_like(expected: list[str] | str, actual: str) -> bool:
    """IAM's ``StringLike``: any pattern matches the whole value, ``*`` any run, ``?`` one character."""
    patterns = [expected] if isinstance(expected, str) else expected
    wildcards = (re.escape(p).replace(r"\*", ".*").replace(r"\?", ".") for p in patterns)
    return any(re.fullmatch(w, actual, re.DOTALL) for w in wildcards)


@pytest.fixture(autouse=True)
def string_like(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(policy_conditions.CONDITION_OPERATIONS, "StringLike", _string_like)


def _allowed(policy: dict[str, object], action: str, resource: str, prefix: str | None = None) -> bool:
    """Whether the policy allows ``action`` on ``resource`` (ListBucket: with ``s3:prefix``)."""
    evaluator = IAMPolicy(json.dumps(policy))
    conditions = {"s3:prefix": prefix} if prefix is not None else None
    return evaluator.is_action_permitted(action, resource, None, conditions) == PermissionResult.PERMITTED


def _object(key: str) -> str:
    return f"arn:aws:s3:::lake/{key}"


@pytest.mark.parametrize("write", [False, True])
def test_the_tables_objects_and_listing_are_allowed(write: bool) -> None:
    policy = session_policy([TABLE], write)
    for key in ("wh/db/t/metadata/00001-x.metadata.json", "wh/db/t/data/a=1/f.parquet"):
        assert _allowed(policy, "s3:GetObject", _object(key))
    for prefix in ("wh/db/t/", "wh/db/t/metadata/", "wh/db/t/data/a=1/f"):
        assert _allowed(policy, "s3:ListBucket", "arn:aws:s3:::lake", prefix)


@pytest.mark.parametrize("write", [False, True])
def test_neighbours_the_bucket_root_and_other_buckets_are_refused(write: bool) -> None:
    policy = session_policy([TABLE], write)
    for action in ("s3:GetObject", "s3:PutObject", "s3:DeleteObject"):
        assert not _allowed(policy, action, _object("wh/db/t2/data/f.parquet"))  # sibling t2
        assert not _allowed(policy, action, _object("wh/other/t/data/f.parquet"))  # other namespace
        assert not _allowed(policy, action, _object("wh/db/t"))  # the prefix without its slash
        assert not _allowed(policy, action, "arn:aws:s3:::other-bucket/wh/db/t/data/f.parquet")
    for prefix in ("", "wh/", "wh/db/", "wh/db/t", "wh/db/t2/", "wh/other/t/"):
        assert not _allowed(policy, "s3:ListBucket", "arn:aws:s3:::lake", prefix)
    assert not _allowed(policy, "s3:ListBucket", "arn:aws:s3:::other-bucket", "wh/db/t/")


def test_read_grant_cannot_write_and_write_grant_can() -> None:
    data = _object("wh/db/t/data/f.parquet")
    read, write = session_policy([TABLE], False), session_policy([TABLE], True)
    for action in (
        "s3:PutObject",
        "s3:DeleteObject",
        "s3:AbortMultipartUpload",
        "s3:ListMultipartUploadParts",
    ):
        assert not _allowed(read, action, data)
        assert _allowed(write, action, data)
    assert not _allowed(read, "s3:ListBucketMultipartUploads", "arn:aws:s3:::lake")
    assert _allowed(write, "s3:ListBucketMultipartUploads", "arn:aws:s3:::lake")


def test_policy_document_exactly() -> None:
    assert session_policy(["s3://lake/wh/db/t/"], False) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "TableObjects",
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:GetObjectVersion"],
                "Resource": ["arn:aws:s3:::lake/wh/db/t/*"],
            },
            {
                "Sid": "ListTablePrefix",
                "Effect": "Allow",
                "Action": ["s3:ListBucket"],
                "Resource": ["arn:aws:s3:::lake"],
                "Condition": {"StringLike": {"s3:prefix": ["wh/db/t/", "wh/db/t/*"]}},
            },
            {
                "Sid": "TableBucket",
                "Effect": "Allow",
                "Action": ["s3:GetBucketLocation"],
                "Resource": ["arn:aws:s3:::lake"],
            },
        ],
    }


def test_locations_no_policy_can_scope_are_refused() -> None:
    assert split_s3_location("s3a://lake/wh/db/t") == ("lake", "wh/db/t/")
    for location in ("s3://lake", "s3://lake/", "file:///tmp/wh/db/t", "/tmp/wh/db/t"):
        with pytest.raises(ValidationError):
            split_s3_location(location)


def test_locations_outside_the_table_are_covered_and_nested_ones_add_nothing() -> None:
    locations = ["s3://lake/wh/db/t", "s3://lake/wh/data/t/", "s3://lake/wh/db/t/meta", "s3://lake/wh/data/t"]
    assert covering_prefixes(locations) == [("lake", "wh/db/t/"), ("lake", "wh/data/t/")]
    policy = session_policy(locations, True)
    assert policy["Statement"][0]["Resource"] == [
        "arn:aws:s3:::lake/wh/db/t/*",
        "arn:aws:s3:::lake/wh/data/t/*",
    ]
    assert policy["Statement"][1]["Condition"] == {
        "StringLike": {"s3:prefix": ["wh/db/t/", "wh/db/t/*", "wh/data/t/", "wh/data/t/*"]}
    }
    for key in ("wh/db/t/data/f.parquet", "wh/data/t/a=1/f.parquet", "wh/db/t/meta/m.avro"):
        assert _allowed(policy, "s3:PutObject", _object(key))
    for key in ("wh/data/t2/f.parquet", "wh/data/f.parquet", "wh/db/u/f.parquet"):
        assert not _allowed(policy, "s3:PutObject", _object(key))
    for prefix in ("wh/data/t/", "wh/data/t/a=1/"):
        assert _allowed(policy, "s3:ListBucket", "arn:aws:s3:::lake", prefix)
    assert not _allowed(policy, "s3:ListBucket", "arn:aws:s3:::lake", "wh/data/")


def test_locations_in_two_buckets_list_each_under_its_own_prefixes() -> None:
    policy = session_policy(["s3://lake/wh/t", "s3://pond/wh/t"], False)
    listing = [s for s in policy["Statement"] if s["Action"] == ["s3:ListBucket"]]
    assert [(s["Sid"], s["Resource"], s["Condition"]["StringLike"]["s3:prefix"]) for s in listing] == [
        ("ListTablePrefix", ["arn:aws:s3:::lake"], ["wh/t/", "wh/t/*"]),
        ("ListTablePrefix1", ["arn:aws:s3:::pond"], ["wh/t/", "wh/t/*"]),
    ]
    assert policy["Statement"][-1]["Resource"] == ["arn:aws:s3:::lake", "arn:aws:s3:::pond"]


def _sized(bucket_chars: int, path_chars: int) -> list[str]:
    return [f"s3://{'b' * bucket_chars}/wh/t", f"s3://{'b' * bucket_chars}/wh/d/{'p' * path_chars}"]


def test_the_policy_size_limit_is_exact() -> None:
    """Each path character counts three times and each bucket character four, so some sizes hit
    the limit exactly: 2048 characters pass, 2049 are refused with the locations named."""
    sizes = {
        len(json.dumps(session_policy(_sized(b, p), True), separators=(",", ":"))): (b, p)
        for b in range(3, 12)
        for p in range(400, 520)
    }
    at_limit, over = _sized(*sizes[MAX_POLICY_CHARS]), _sized(*sizes[MAX_POLICY_CHARS + 1])
    assert len(packed_session_policy(at_limit, True)) == MAX_POLICY_CHARS
    with pytest.raises(PolicyTooLarge) as refused:
        packed_session_policy(over, True)
    assert str(refused.value).startswith(
        f"the session policy for the table's locations {over[0]!r}, {over[1]!r} would be 2049 characters, "
        "over IAM's 2048"
    )
    assert json.loads(packed_session_policy(at_limit, True)) == session_policy(at_limit, True)
