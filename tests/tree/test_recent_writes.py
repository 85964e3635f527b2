"""RecentWrites: bytes of just-written remote tree files, handed back once, bounded in count and size."""

from __future__ import annotations

from icefloe.tree.recent_writes import RecentWrites

ROOT = "s3://bucket/t/metadata/snap-1-root.parquet"


def test_bytes_are_handed_back_once() -> None:
    recent = RecentWrites()
    recent.remember(ROOT, b"root")
    assert recent.take(ROOT) == b"root"
    assert recent.take(ROOT) is None
    assert recent.take("s3://bucket/t/metadata/never-written.parquet") is None


def test_only_the_latest_files_are_kept() -> None:
    recent = RecentWrites(max_files=2)
    for name in ("a", "b", "c"):
        recent.remember(f"s3://bucket/{name}", name.encode())
    assert recent.take("s3://bucket/a") is None
    assert recent.take("s3://bucket/b") == b"b"
    assert recent.take("s3://bucket/c") == b"c"


def test_large_files_are_not_kept() -> None:
    recent = RecentWrites(max_file_bytes=4)
    recent.remember("s3://bucket/small", b"1234")
    recent.remember("s3://bucket/large", b"12345")
    assert recent.take("s3://bucket/small") == b"1234"
    assert recent.take("s3://bucket/large") is None


def test_local_files_are_not_kept() -> None:
    recent = RecentWrites()
    for location in ("/tmp/t/metadata/a.avro", "file:///tmp/t/metadata/a.avro"):
        recent.remember(location, b"a")
        assert recent.take(location) is None


def test_clear_forgets_everything() -> None:
    recent = RecentWrites()
    recent.remember(ROOT, b"root")
    recent.clear()
    assert recent.take(ROOT) is None
