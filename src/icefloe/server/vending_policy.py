"""The IAM session policy that scopes vended S3 credentials to one table.

STS intersects the role's own policy with this one, so the credentials can do no more than both
allow. The table's objects are its bucket and the key prefix of its location *ending in* ``/``:
``db/t/`` never matches the objects of ``db/t2/``. Listing the bucket is allowed only with an
``s3:prefix`` under that prefix (the bucket root and other tables stay unlisted). A READ grant gets
the read actions; WRITE adds put, delete and the multipart-upload actions a large write needs.
"""

from __future__ import annotations

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


def session_policy(location: str, write: bool) -> dict[str, Any]:
    """The policy document for credentials on the table at ``location`` (``write``: WRITE grant)."""
    bucket, prefix = split_s3_location(location)
    objects = f"arn:aws:s3:::{bucket}/{prefix}*"
    bucket_arn = f"arn:aws:s3:::{bucket}"
    object_actions = READ_OBJECT_ACTIONS + (WRITE_OBJECT_ACTIONS if write else ())
    bucket_actions = READ_BUCKET_ACTIONS + (WRITE_BUCKET_ACTIONS if write else ())
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "TableObjects", "Effect": "Allow", "Action": list(object_actions), "Resource": [objects]},
            {
                "Sid": "ListTablePrefix",
                "Effect": "Allow",
                "Action": ["s3:ListBucket"],
                "Resource": [bucket_arn],
                "Condition": {"StringLike": {"s3:prefix": [prefix, prefix + "*"]}},
            },
            {
                "Sid": "TableBucket",
                "Effect": "Allow",
                "Action": list(bucket_actions),
                "Resource": [bucket_arn],
            },
        ],
    }
