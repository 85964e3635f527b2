"""RecentWrites: bytes of just-written tree files, handed back once, bounded in count and size."""

from __future__ import annotations

from icefloe.tree.recent_writes import RecentWrites


def test_bytes_are_handed_back_once() -> None:
    recent = RecentWrites()
    recent.remember("s3://b/t/metadata/snap-1-root.parquet", b"root")
    assert recent.take("s3://b/t/metadata/snap-1-root.parquet") == b"root"
    assert recent.take("s3://b/t/metadata/snap-1-root.parquet") is None
    assert recent.take("s3://b/t/metadata/never-written.parquet") is None


def test_only_the_latest_files_are_kept() -> None:
    recent = RecentWrites(max_files=2)
    for name in ("a", "b", "c"):
        recent.remember(name, name.encode())
    assert recent.take("a") is None
    assert recent.take("b") == b"b"
    assert recent.take("c") == b"c"


def test_large_files_are_not_kept() -> None:
    recent = RecentWrites(max_file_bytes=4)
    recent.remember("small", b"1234")
    recent.remember("large", b"12345")
    assert recent.take("small") == b"1234"
    assert recent.take("large") is None


def test_clear_forgets_everything() -> None:
    recent = RecentWrites()
    recent.remember("a", b"a")
    recent.clear()
    assert recent.take("a") is None
