"""Several processes committing to one table: every commit lands exactly once, none is lost."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import CommitConflict
from icefloe.io.fileio import local_path
from icefloe.spec.schema import Schema

pytestmark = pytest.mark.all_catalogs

PROCESSES = 4
COMMITS_EACH = 25


def commit_worker(uri: str, warehouse: str, catalog_name: str, worker: int, commits: int) -> tuple[int, int]:
    """Commit ``commits`` property changes, reloading and retrying after each lost race."""
    catalog = SqlCatalog(catalog_name, uri=uri, warehouse=warehouse)
    done = conflicts = 0
    try:
        while done < commits:
            table = catalog.load_table("ns.t")
            md = table.metadata
            new_md = md.with_changes(
                properties={**md.properties, f"w{worker}-{done}": str(time.time())},
                last_updated_ms=max(int(time.time() * 1000), md.last_updated_ms + 1),
            )
            try:
                catalog.commit_table("ns.t", table.metadata_location, new_md, base_metadata=md)
            except CommitConflict:
                conflicts += 1
                continue
            done += 1
    finally:
        catalog.close()
    return done, conflicts


@pytest.mark.parametrize("catalog", ["sql"], indirect=True)  # SQL layout / outside-warehouse paths
def test_concurrent_commits(catalog: SqlCatalog, schema: Schema, warehouse: Path) -> None:
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema, properties={"write.metadata.previous-versions-max": "1000"})
    uri = str(catalog.properties["uri"])
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(PROCESSES) as pool:
        results = pool.starmap(
            commit_worker,
            [(uri, str(warehouse), catalog.name, w, COMMITS_EACH) for w in range(PROCESSES)],
        )
    assert [done for done, _ in results] == [COMMITS_EACH] * PROCESSES

    final = catalog.load_table("ns.t")
    expected_keys = {f"w{w}-{i}" for w in range(PROCESSES) for i in range(COMMITS_EACH)}
    assert set(final.metadata.properties) - {"write.metadata.previous-versions-max"} == expected_keys
    total = PROCESSES * COMMITS_EACH
    # One metadata file per successful commit plus the first; losers deleted theirs.
    files = sorted((Path(local_path(table.metadata.location)) / "metadata").glob("*.metadata.json"))
    assert len(files) == total + 1
    # The log is a single unbroken chain from the first file to the one before the current.
    log = [e.metadata_file for e in final.metadata.metadata_log]
    assert len(log) == total
    assert log[0] == table.metadata_location
    assert sorted({int(Path(p).name[:5]) for p in log}) == list(range(total))
    assert final.metadata_location.rsplit("/", 1)[1].startswith(f"{total:05d}-")


@pytest.mark.parametrize("catalog", ["sql"], indirect=True)  # SQL layout / outside-warehouse paths
@pytest.mark.parametrize("processes", [PROCESSES])
def test_concurrent_namespace_creation_is_exclusive(catalog: SqlCatalog, processes: int) -> None:
    uri = str(catalog.properties["uri"])
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(processes) as pool:
        outcomes = pool.starmap(create_namespace_worker, [(uri, catalog.name)] * processes)
    assert sorted(outcomes) == ["created"] + ["exists"] * (processes - 1)


def create_namespace_worker(uri: str, catalog_name: str) -> str:
    """Try to create the same namespace as the other workers."""
    from icefloe.errors import AlreadyExists

    catalog = SqlCatalog(catalog_name, uri=uri)
    try:
        catalog.create_namespace("shared")
        return "created"
    except AlreadyExists:
        return "exists"
    finally:
        catalog.close()
