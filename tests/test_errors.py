"""The error hierarchy: structured context on every error, kept through pickling."""

from __future__ import annotations

import pickle

import pytest

from icefloe.errors import CommitConflict, CorruptMetadata, IcefloeError, NotFound


def test_errors_carry_optional_context() -> None:
    plain = NotFound("no such file")
    assert (plain.location, plain.snapshot_id, plain.table) == (None, None, None)
    assert plain.context == {}
    err = CorruptMetadata("bad manifest", location="s3://b/m.avro", snapshot_id=7, table="db.t")
    assert str(err) == "bad manifest"
    assert err.context == {"location": "s3://b/m.avro", "snapshot_id": 7, "table": "db.t"}


def test_context_added_on_the_way_up_never_overwrites() -> None:
    err = CorruptMetadata("bad", location="s3://b/leaf.parquet")
    assert err.with_context(location="s3://b/root.parquet", snapshot_id=3) is err
    assert err.context == {"location": "s3://b/leaf.parquet", "snapshot_id": 3}


def test_context_and_retryable_survive_pickling() -> None:
    err = CommitConflict("moved", retryable=False, table="db.t", snapshot_id=9)
    back = pickle.loads(pickle.dumps(err))
    assert isinstance(back, CommitConflict) and str(back) == "moved"
    assert (back.retryable, back.table, back.snapshot_id, back.location) == (False, "db.t", 9, None)


def test_raise_and_catch_as_the_base_class() -> None:
    with pytest.raises(IcefloeError) as caught:
        raise CorruptMetadata("x", location="/tmp/x")
    assert caught.value.location == "/tmp/x"
