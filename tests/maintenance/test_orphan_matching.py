"""Matching listed files with the files a table names across schemes and authorities (Iceberg's
``equal_schemes``, ``equal_authorities``, ``prefix_mismatch_mode``)."""

from __future__ import annotations

import pytest

from icefloe.errors import ValidationError
from icefloe.maintenance.orphan_matching import PrefixMatching, PrefixMismatchMode, classify_orphans

NAMED = ["s3://bucket/t/data/a.parquet", "file:///wh/t/data/b.parquet"]


def test_same_spelling_is_kept_and_unknown_paths_are_orphans() -> None:
    listed = [
        "s3a://bucket/t/data/a.parquet",
        "file:/wh/t/data/b.parquet",
        "s3://bucket/t/data/stray.parquet",
    ]
    assert classify_orphans(listed, NAMED, PrefixMatching()) == ["s3://bucket/t/data/stray.parquet"]


def test_a_path_under_another_authority_is_a_mismatch() -> None:
    listed = ["s3://other/t/data/a.parquet", "s3://bucket/t/data/stray.parquet"]
    with pytest.raises(ValidationError, match="under another scheme or authority"):
        classify_orphans(listed, NAMED, PrefixMatching())
    assert classify_orphans(listed, NAMED, PrefixMatching(PrefixMismatchMode.IGNORE)) == [listed[1]]
    assert classify_orphans(listed, NAMED, PrefixMatching(PrefixMismatchMode.DELETE)) == listed
    equal = PrefixMatching.parse(None, None, {"other,bucket": "bucket"})
    assert classify_orphans(listed, NAMED, equal) == [listed[1]]


def test_equal_schemes_and_the_mode_are_parsed_as_iceberg_spells_them() -> None:
    matching = PrefixMatching.parse("ignore", {"file1, file": "file"}, None)
    assert matching.mode is PrefixMismatchMode.IGNORE
    assert matching.split("file1:///wh/t/data/b.parquet") == ("file", "", "/wh/t/data/b.parquet")
    assert classify_orphans(["file1:///wh/t/data/b.parquet"], NAMED, matching) == []
    with pytest.raises(ValidationError, match="ERROR, IGNORE or DELETE"):
        PrefixMatching.parse("sometimes")
