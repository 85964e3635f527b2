"""The IAM session policy that scopes vended S3 credentials to one table.

STS intersects the role's own policy with this one, so the credentials can do no more than both
allow. A table's objects are those under each location it writes to (its location, and the
``write.*.path`` directories its properties name): the bucket and the key prefix of each location
*ending in* ``/``, so ``db/t/`` never matches the objects of ``db/t2/``. Listing a bucket is allowed
only with an ``s3:prefix`` under one of those prefixes (the bucket root and other tables stay
unlisted). A READ grant gets the read actions; WRITE adds put, delete and the multipart-upload
actions a large write needs.

IAM refuses a session policy over ``MAX_POLICY_CHARS`` (its plain text, without whitespace), and
each location adds its prefix three times; ``packed_session_policy`` refuses such a policy itself,
naming the locations, instead of passing STS's bare ``PackedPolicyTooLarge`` on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from icefloe.errors import ValidationError

READ_OBJECT_ACTIONS = ("s3:GetObject", "s3:GetObjectVersion")
WRITE_OBJECT_ACTIONS = (
    "s3:PutObject",
    "s3:DeleteObject",
    "s3:AbortMultipartUpload",
    "s3:ListMultipartUploadParts",
)
READ_BUCKET_ACTIONS = ("s3:GetBucketLocation",)
WRITE_BUCKET_ACTIONS = ("s3:ListBucketMultipartUploads",)
MAX_POLICY_CHARS = 2048
"""IAM's bound on an AssumeRole session policy's plain text."""


class PolicyTooLarge(ValidationError):
    """The table writes to more (or longer) locations than one session policy can name."""


def split_s3_location(location: str) -> tuple[str, str]:
    """(bucket, key prefix ending in ``/``) of an ``s3://``/``s3a://``/``s3n://`` table location."""
    scheme, sep, rest = location.partition("://")
    if not sep or scheme not in ("s3", "s3a", "s3n"):
        raise ValidationError(f"not an S3 location: {location!r}")
    bucket, _, key = rest.partition("/")
    key = key.strip("/")
    if not bucket or not key:  # a table at a bucket's root could not be told from its neighbours
        raise ValidationError(f"vended credentials need an s3://bucket/key location, not {location!r}")
    return bucket, key + "/"


def covering_prefixes(locations: Iterable[str]) -> list[tuple[str, str]]:
    """The (bucket, key prefix) pairs that cover ``locations``, in their order, without a prefix
    that lies inside another (a ``write.metadata.path`` under the table location adds nothing)."""
    found = list(dict.fromkeys(split_s3_location(location) for location in locations))
    return [
        (bucket, prefix)
        for bucket, prefix in found
        if not any(b == bucket and p != prefix and prefix.startswith(p) for b, p in found)
    ]


def session_policy(locations: Iterable[str], write: bool) -> dict[str, Any]:
    """The policy document for credentials on a table writing to ``locations`` (``write``: WRITE
    grant)."""
    prefixes = covering_prefixes(locations)
    if not prefixes:
        raise ValidationError("a session policy needs at least one location")
    buckets = list(dict.fromkeys(bucket for bucket, _ in prefixes))
    object_actions = READ_OBJECT_ACTIONS + (WRITE_OBJECT_ACTIONS if write else ())
    bucket_actions = READ_BUCKET_ACTIONS + (WRITE_BUCKET_ACTIONS if write else ())
    listing = [
        {
            "Sid": "ListTablePrefix" + (str(i) if i else ""),
            "Effect": "Allow",
            "Action": ["s3:ListBucket"],
            "Resource": [f"arn:aws:s3:::{bucket}"],
            "Condition": {
                "StringLike": {"s3:prefix": [k for b, p in prefixes if b == bucket for k in (p, p + "*")]}
            },
        }
        for i, bucket in enumerate(buckets)
    ]
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "TableObjects",
                "Effect": "Allow",
                "Action": list(object_actions),
                "Resource": [f"arn:aws:s3:::{bucket}/{prefix}*" for bucket, prefix in prefixes],
            },
            *listing,
            {
                "Sid": "TableBucket",
                "Effect": "Allow",
                "Action": list(bucket_actions),
                "Resource": [f"arn:aws:s3:::{bucket}" for bucket in buckets],
            },
        ],
    }


def packed_session_policy(locations: Iterable[str], write: bool) -> str:
    """``session_policy`` as the compact text STS is sent; ``PolicyTooLarge`` beyond IAM's bound."""
    locations = tuple(locations)
    text = json.dumps(session_policy(locations, write), separators=(",", ":"))
    if len(text) > MAX_POLICY_CHARS:
        raise PolicyTooLarge(
            f"the session policy for the table's locations {', '.join(map(repr, locations))} would be "
            f"{len(text)} characters, over IAM's {MAX_POLICY_CHARS}: no credentials can cover them all. "
            "Keep write.data.path and write.metadata.path under the table location, or shorter"
        )
    return text
