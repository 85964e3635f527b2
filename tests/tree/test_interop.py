"""PyIceberg, an independent reader, plans the trees the write seam produces."""

from __future__ import annotations

from pathlib import Path

import pytest

from icefloe.formats.metadata.files import write_table_metadata
from icefloe.io import FileIO
from icefloe.spec.content import FileContent
from icefloe.tree.changes import TreeChange
from icefloe.tree.read_seam import live_entries
from tests.tree.helpers import commit, data_file, delete_file, new_metadata


@pytest.mark.parametrize("format_version", [1, 2, 3])
def test_pyiceberg_plans_what_the_write_seam_wrote(tmp_path: Path, format_version: int) -> None:
    from pyiceberg.table import StaticTable

    io = FileIO()
    md = new_metadata(tmp_path, format_version, {"commit.manifest.min-count-to-merge": "2"})
    a1, a2, b1 = data_file("a", 10), data_file("a", 20), data_file("b", 30)
    md, _ = commit(io, md, TreeChange(added_data_files=[a1, a2]))
    md, _ = commit(io, md, TreeChange(added_data_files=[b1]))
    snap = md.current_snapshot()
    assert snap is not None
    victim = next(e for e in live_entries(io, md, snap) if e.data_file.file_path == a1.file_path)
    md, _ = commit(
        io, md, TreeChange(removed_entries=[victim], added_data_files=[data_file(None, 5, spec_id=1)])
    )
    md, _ = commit(io, md, TreeChange(added_data_files=[data_file("c", 1)]), merge=True)
    if format_version >= 2:
        md, _ = commit(io, md, TreeChange(added_delete_files=[delete_file(b1, dv=format_version >= 3)]))
    location = write_table_metadata(io, md.location, md)
    table = StaticTable.from_metadata(location)
    tasks = list(table.scan().plan_files())
    snap = md.current_snapshot()
    assert snap is not None
    ours = [e for e in live_entries(io, md, snap)]
    ours_data = {e.data_file.file_path: e for e in ours if e.data_file.content == FileContent.DATA}
    assert {t.file.file_path for t in tasks} == set(ours_data)
    for t in tasks:
        mine = ours_data[t.file.file_path]
        assert t.file.record_count == mine.data_file.record_count
        assert list(t.file.partition) == list(mine.data_file.partition)
        expected_deletes = 1 if (format_version >= 2 and t.file.file_path == b1.file_path) else 0
        assert len(t.delete_files) == expected_deletes
    manifests = table.current_snapshot().manifests(table.io)  # type: ignore[union-attr]
    py_seqs = sorted(m.sequence_number for m in manifests)
    assert py_seqs == sorted(m.sequence_number for m in _refs(io, md))


def _refs(io: FileIO, md):  # type: ignore[no-untyped-def]
    from icefloe.tree.read_seam import manifest_refs

    return manifest_refs(io, md, md.current_snapshot())
