"""The vectorised murmur3 used for bucket[N] on strings and binary equals icefloe's bucket transform."""

from __future__ import annotations

import random

import pyarrow as pa

from icefloe.spark.murmur import bucket_strings, murmur3_bytes
from icefloe.spec.transforms import BucketTransform, bucket_hash
from icefloe.spec.types import BinaryType, StringType


def test_string_hashes_match_bucket_hash() -> None:
    rng = random.Random(7)
    alphabet = "abcü€𝄞xyz0123 "
    values = ["", "a", "ab", "abc", "abcd", "iceberg"] + [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 50))) for _ in range(2000)
    ]
    got = murmur3_bytes(pa.array(values)).astype("int64")
    want = [bucket_hash(StringType(), v) & 0xFFFFFFFF for v in values]
    assert got.tolist() == want
    assert murmur3_bytes(pa.array(values).slice(3, 50)).astype("int64").tolist() == want[3:53]
    assert murmur3_bytes(pa.array(values, pa.large_string())).astype("int64").tolist() == want


def test_buckets_keep_nulls_and_match_the_transform() -> None:
    values = [b"\x00\xff", None, b"", b"\x01\x02\x03\x04\x05"]
    got = bucket_strings(pa.array(values, pa.binary()), 16).to_pylist()
    t = BucketTransform(16)
    assert got == [t.apply(BinaryType(), v) for v in values]
    assert bucket_strings(pa.array(["iceberg"]), 2**31 - 1).to_pylist() == [1210000089]
