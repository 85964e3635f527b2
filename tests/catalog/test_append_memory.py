"""What a small append keeps from the commit before it (directly and through the REST server).

A commit's parent is usually the same process's previous commit: its manifest list is taken as
written instead of decoded again. Another writer committing in between changes the parent (its
list has another location), so nothing remembered is used for it and no row is lost. Through
REST, the metadata the server answers a commit with takes the snapshots the client proposed
unchanged from its proposal; the table the client holds afterwards is the one a fresh load gives.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.base import Catalog
from icefloe.spec.schema import Schema
from icefloe.tree import v3_read

pytestmark = pytest.mark.catalog_namespaces("db")


def _rows(start: int, n: int = 3) -> pa.Table:
    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table({"id": ids, "name": [f"r{i}" for i in range(n)]})


def _ids(catalog: Catalog) -> list[int]:
    return sorted(catalog.load_table("db.t").scan().to_arrow().column("id").to_pylist())


@pytest.fixture
def decoded_lists(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every manifest list decoded from its bytes from now on (the real decoder runs)."""
    seen: list[Any] = []
    real = v3_read.read_manifest_list

    def counting(source: Any) -> Any:
        seen.append(source)
        return real(source)

    monkeypatch.setattr(v3_read, "read_manifest_list", counting)
    return seen


@pytest.mark.parametrize("format_version", [1, 2, 3])
def test_the_next_append_takes_its_parent_list_as_written(
    catalog: Catalog, schema: Schema, decoded_lists: list[Any], format_version: int
) -> None:
    table = catalog.create_table("db.t", schema, properties={"format-version": str(format_version)})
    for start in range(0, 12, 3):
        table.append(_rows(start))
    assert decoded_lists == []
    assert _ids(catalog) == list(range(12))
    manifests = v3_read.manifest_refs(table.io, table.metadata, table.current_snapshot())  # type: ignore[arg-type]
    assert len(manifests) == 4
    assert table.metadata == catalog.load_table("db.t").metadata


@pytest.mark.parametrize("format_version", [2, 3])
def test_a_commit_by_another_writer_in_between_is_read(
    catalog: Catalog, schema: Schema, decoded_lists: list[Any], format_version: int
) -> None:
    mine = catalog.create_table("db.t", schema, properties={"format-version": str(format_version)})
    mine.append(_rows(0))
    other = catalog.load_table("db.t")
    other.append(_rows(100))  # this table's head is no longer the list `mine` wrote
    v3_read.clear_manifest_list_cache()  # as a writer in another process: nothing of it in memory
    mine.append(_rows(200))
    assert decoded_lists  # the other writer's list (or the server's rebase of it) was read
    assert _ids(catalog) == [0, 1, 2, 100, 101, 102, 200, 201, 202]
    fresh = catalog.load_table("db.t")
    assert len(fresh.snapshots()) == 3
    assert mine.metadata == fresh.metadata  # through REST: the server rebased `mine`'s snapshot
    if format_version >= 3:
        assert fresh.metadata.next_row_id == 9
