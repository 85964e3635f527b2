"""``fast_constructor`` builds the very objects a frozen dataclass's ``__init__`` builds."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass, field

import pytest

from icefloe.formats.frozen_builders import fast_constructor
from icefloe.spec.content import DataFile, EntryStatus, FileContent, ManifestEntry


def test_data_files_and_entries_equal_the_ordinary_ones() -> None:
    new_file, new_entry = fast_constructor(DataFile), fast_constructor(ManifestEntry)
    args = ("s3://b/f.parquet", "parquet", 5, 100, FileContent.EQUALITY_DELETES, 2, (7,))
    fast, slow = new_file(*args, equality_ids=(1,)), DataFile(*args, equality_ids=(1,))
    assert type(fast) is DataFile and fast == slow and hash(fast) == hash(slow)
    assert fast.deletion_vector is None and fast.spec_id == 2  # defaults as in the dataclass
    entry = new_entry(EntryStatus.ADDED, 1, 2, 3, fast)
    assert type(entry) is ManifestEntry and entry == ManifestEntry(EntryStatus.ADDED, 1, 2, 3, slow)
    assert entry.dv_snapshot_id is None
    assert pickle.loads(pickle.dumps(entry)) == entry
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.record_count = 6  # type: ignore[misc]
    with pytest.raises(TypeError):
        new_file("only a path")


@dataclass(frozen=True, slots=True)
class WithFactory:
    name: str
    tags: tuple[str, ...] = field(default_factory=tuple)
    size: int = 0


@dataclass(frozen=True, slots=True)
class Checked:
    value: int

    def __post_init__(self) -> None:
        if self.value < 0:
            raise ValueError("negative")


def test_factories_become_required_and_post_init_classes_are_refused() -> None:
    build = fast_constructor(WithFactory)
    assert build("a", ("t",)) == WithFactory("a", ("t",), 0)
    with pytest.raises(TypeError):
        build("a")  # the factory is not run: the value must be given
    with pytest.raises(TypeError, match="__post_init__"):
        fast_constructor(Checked)
    with pytest.raises(TypeError, match="slotted"):
        fast_constructor(int)
