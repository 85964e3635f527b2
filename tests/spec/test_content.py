"""``LazyMap``: a metric map built on first use must behave like the dict it stands for."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import threading
from typing import Any

import pytest

from icefloe.spec.content import DataFile, LazyMap


class CountingLoader:
    """Builds ``{field id: row * 10 + field id}`` for a row, counting how often it was asked."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, row: int) -> dict[int, int]:
        self.calls += 1
        return {1: row * 10 + 1, 2: row * 10 + 2}


def test_it_loads_once_on_first_use_and_reads_like_a_dict() -> None:
    load = CountingLoader()
    m = LazyMap(load, 3)
    assert load.calls == 0
    assert m[1] == 31 and m.get(2) == 32 and m.get(9) is None and m.get(9, "x") == "x"
    assert 1 in m and 9 not in m and len(m) == 2
    assert list(m) == [1, 2] and list(m.keys()) == [1, 2]
    assert list(m.items()) == [(1, 31), (2, 32)] and list(m.values()) == [31, 32]
    assert repr(m) == "{1: 31, 2: 32}"
    assert load.calls == 1
    with pytest.raises(KeyError):
        m[9]


def test_equality_with_dicts_and_other_lazy_maps() -> None:
    m = LazyMap(CountingLoader(), 0)
    same, other = {1: 1, 2: 2}, {1: 1, 2: 3}
    assert m == same and same == m  # the dict on the left asks the lazy map (reflected ==)
    assert m != {1: 1} and other != m
    assert m == LazyMap(CountingLoader(), 0) and m != LazyMap(CountingLoader(), 1)
    assert m != [1, 2] and m != "12"
    empty: LazyMap[int, int] = LazyMap(lambda _: {})
    assert not empty and (empty or {"fallback": 1}) == {"fallback": 1}
    with pytest.raises(TypeError):
        hash(m)


def test_data_files_with_lazy_maps_equal_eager_ones_and_pickle_to_plain_dicts() -> None:
    def lazy(values: dict[int, Any]) -> LazyMap[int, Any]:
        return LazyMap(lambda _: dict(values))

    eager = DataFile("s3://b/f.parquet", "parquet", 5, 100, lower_bounds={1: b"\x01"}, value_counts={1: 5})
    lazy_file = eager.with_changes(lower_bounds=lazy({1: b"\x01"}), value_counts=lazy({1: 5}))
    assert lazy_file == eager and eager == lazy_file
    assert lazy_file != eager.with_changes(value_counts={1: 6})
    for copied in (pickle.loads(pickle.dumps(lazy_file)), copy.deepcopy(lazy_file)):
        assert copied == eager
        assert type(copied.lower_bounds) is dict and copied.lower_bounds == {1: b"\x01"}
    assert dataclasses.asdict(lazy_file)["value_counts"] == {1: 5}
    assert copy.copy(lazy_file).value_counts is lazy_file.value_counts


def test_threads_reading_at_once_all_see_the_same_dict() -> None:
    gate = threading.Barrier(8)

    def slow(row: int) -> dict[int, int]:
        return {k: row for k in range(1000)}

    maps = [LazyMap(slow, r) for r in range(50)]
    seen: list[list[int]] = []

    def read() -> None:
        gate.wait()
        seen.append([sum(m.values()) for m in maps])

    threads = [threading.Thread(target=read) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [[1000 * r for r in range(50)]] * 8


# -- a deletion vector as a delete file: one builder, used by every place that needs one ---------


def test_a_deletion_vector_is_one_puffin_delete_file_wherever_it_is_built() -> None:
    from icefloe.formats.puffin.files import DVBlobRef
    from icefloe.scan.delete_index import _colocated_dv
    from icefloe.spec.content import (
        DeletionVectorRef,
        EntryStatus,
        FileContent,
        ManifestEntry,
        deletion_vector_file,
    )
    from icefloe.txn.delete_writer import PuffinDVs

    data = DataFile("s3://b/t/data/a.parquet", "parquet", 100, 4096, spec_id=2, partition=(7, "x"))
    dv = DeletionVectorRef("s3://b/t/data/d.puffin", 4, 38, 3, key_metadata=b"\x01\x02")
    expected = {
        "file_path": "s3://b/t/data/d.puffin",
        "file_format": "puffin",
        "record_count": 3,
        "file_size_in_bytes": 38,
        "content": FileContent.POSITION_DELETES,
        "spec_id": 2,
        "partition": (7, "x"),
        "column_sizes": None,
        "value_counts": None,
        "null_value_counts": None,
        "nan_value_counts": None,
        "lower_bounds": None,
        "upper_bounds": None,
        "key_metadata": b"\x01\x02",
        "split_offsets": None,
        "equality_ids": None,
        "sort_order_id": None,
        "first_row_id": None,
        "referenced_data_file": "s3://b/t/data/a.parquet",
        "content_offset": 4,
        "content_size_in_bytes": 38,
        "deletion_vector": None,
        "column_files": None,
    }
    built = deletion_vector_file(data, dv)
    assert {f.name: getattr(built, f.name) for f in dataclasses.fields(DataFile)} == expected
    # the known Puffin file size replaces the blob's; nothing else changes
    sized = deletion_vector_file(data, dv, puffin_size=900)
    assert sized == dataclasses.replace(built, file_size_in_bytes=900)

    # v3: the writer's delete-file entry (no key metadata: it writes plaintext Puffin files)
    written = PuffinDVs(dv.location, 900, {data.file_path: DVBlobRef(data.file_path, 4, 38, 3)})
    assert written.delete_file(data) == dataclasses.replace(sized, key_metadata=None)
    # v4: planning sees a colocated DV as the same file, key metadata included
    entry = ManifestEntry(EntryStatus.ADDED, 1, 5, 5, data.with_changes(deletion_vector=dv))
    assert _colocated_dv(entry).delete_file == built
