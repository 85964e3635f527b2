"""The session policy of vended credentials, checked with moto's IAM policy evaluator.

moto enforces a role's policies but not an AssumeRole session policy, so the end-to-end tests
cannot show what the policy refuses. Here moto's own evaluator (``moto.iam.access_control``)
decides each request. It knows only ``StringEquals`` conditions and passes any other, so the test
registers IAM's ``StringLike`` (``*`` and ``?`` wildcards) for its duration.
"""

from __future__ import annotations

import json
import re

import pytest
from moto.iam import policy_conditions
from moto.iam.access_control import IAMPolicy, PermissionResult

from icefloe.errors import ValidationError
from icefloe.server.vending_policy import session_policy, split_s3_location

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
    policy = session_policy(TABLE, write)
    for key in ("wh/db/t/metadata/00001-x.metadata.json", "wh/db/t/data/a=1/f.parquet"):
        assert _allowed(policy, "s3:GetObject", _object(key))
    for prefix in ("wh/db/t/", "wh/db/t/metadata/", "wh/db/t/data/a=1/f"):
        assert _allowed(policy, "s3:ListBucket", "arn:aws:s3:::lake", prefix)


@pytest.mark.parametrize("write", [False, True])
def test_neighbours_the_bucket_root_and_other_buckets_are_refused(write: bool) -> None:
    policy = session_policy(TABLE, write)
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
    read, write = session_policy(TABLE, False), session_policy(TABLE, True)
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
    assert session_policy("s3://lake/wh/db/t/", False) == {
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
