"""Fuzzing the readers: every mutant of every file kind reads like the original or fails cleanly.

Four real tables are written with the public API (see ``harness.build_tables``): v2 with position
deletes, v2 with gzip metadata, v3 with deletion vectors, v4 with leaves, manifest DVs and
colocated DVs; a fifth table holds Avro and ORC data and position-delete files. For each kind of
file (metadata JSON plain and gzip, manifest lists, manifests, delete manifests, v4 roots, leaves
and manifest DVs, Puffin files, Parquet, Avro and ORC position-delete and data files) a fixed seed
produces mutants (bit flips, boundary bytes, truncation, length/count fields set to 0, -1 or huge:
``tests/support/mutation.py``). Reading the table after each mutant must either give exactly the
original rows or raise an ``IcefloeError`` whose message (or ``location``) names the mutated file,
within ``runner.MUTANT_TIMEOUT_S`` per mutant (a hang fails the test; the limit never decides
a passing case).

How a mutant is read (``tests/fuzz/runner.py``): a worker process writes it in place and resumes
the table read at the first step that opens the mutated file (metadata file, planning, or the
planned tasks that open it), with what the earlier steps gave for the original, since those
steps open only unchanged files; caches hold only decoded files the mutant did not change.
The first ``ICEFLOE_FUZZ_CROSS_CHECKS`` (default 40) distinct mutants of every kind are also read
from scratch and must give the same verdict and message. Identical mutant bytes are read once
(duplicates are counted). Outcomes come back in batches; the index of the mutant being read is in
shared memory, and a read making no progress for ``runner.MUTANT_TIMEOUT_S`` fails as a hang.
``ICEFLOE_FUZZ_WORKERS`` (default 2) kinds run at once, each lane on its own copy of the tables
(run the module without pytest-xdist's ``-n``: each xdist worker would start every kind's run).

Size: ``ICEFLOE_FUZZ_MUTANTS`` mutants per kind (default 400, 2,000 when ``CI`` is set);
``ICEFLOE_FUZZ_SEED`` changes the seed. A long run:

    ICEFLOE_FUZZ_MUTANTS=20000 ICEFLOE_FUZZ_SEED=7 .venv/bin/python -m pytest tests/fuzz -q

A failure names the mutant (index, mutation and seed); a hanging mutant's file is kept next to
the original (``.hang``) for replay, since table files hold random UUIDs and differ between runs.

Plain metadata JSON has no checksum: a mutant that is still valid metadata of another table
(a changed field or source id) may read differently; those are counted and must stay rare
(``harness.PLAIN_JSON_KINDS``). Avro and ORC files other writers produce carry no checksum over
their values either: a mutant that still decodes may read differently, and is counted
(``harness.UNCHECKSUMMED_KINDS``); it must still never escape as another exception, name another
file or hang. Every other kind is held to the strict rule.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.fuzz.harness import PLAIN_JSON_KINDS, Target, build_tables
from tests.fuzz.runner import MutantRuns

SEED = int(os.environ.get("ICEFLOE_FUZZ_SEED", "20261125"))
COUNT = int(os.environ.get("ICEFLOE_FUZZ_MUTANTS", "2000" if os.environ.get("CI") else "400"))
CROSS_CHECKS = min(COUNT, int(os.environ.get("ICEFLOE_FUZZ_CROSS_CHECKS", "40")))
MUTANT_TEST = "test_mutants_read_like_the_original_or_fail_naming_the_file"
WORKERS = max(1, int(os.environ.get("ICEFLOE_FUZZ_WORKERS", "2")))
KINDS = [
    "v2-metadata-json",
    "metadata-json-gzip",
    "v2-manifest-list",
    "v2-manifest",
    "v2-delete-manifest",
    "v2-parquet",
    "v2-data-file",
    "v3-puffin",
    "v4-metadata-json",
    "v4-root",
    "v4-leaf",
    "v4-manifest-dv",
    "v4-puffin",
    "v4-data-file",
    "avro-data-file",
    "orc-data-file",
    "avro-position-deletes",
    "orc-position-deletes",
]


@pytest.fixture(scope="module")
def lanes(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Target]]:
    """One copy of the fuzz tables per worker lane (targets by kind)."""
    return [{t.kind: t for t in build_tables(tmp_path_factory.mktemp("fuzz"))} for _ in range(WORKERS)]


@pytest.fixture(scope="module")
def runs(lanes: list[dict[str, Target]], request: pytest.FixtureRequest) -> Iterator[MutantRuns]:
    """The runs of the kinds this session selected, started in test order, ``WORKERS`` at a time."""
    selected = [
        item.callspec.params["kind"]
        for item in request.session.items
        if getattr(item, "originalname", None)
        == test_mutants_read_like_the_original_or_fail_naming_the_file.__name__
    ]
    queue = MutantRuns(lanes, selected, SEED, COUNT, CROSS_CHECKS)
    yield queue
    queue.close()


def test_every_kind_has_a_target(lanes: list[dict[str, Target]]) -> None:
    assert set(KINDS) <= set(lanes[0]), sorted(set(KINDS) - set(lanes[0]))


@pytest.mark.parametrize("kind", KINDS)
def test_mutants_read_like_the_original_or_fail_naming_the_file(runs: MutantRuns, kind: str) -> None:
    outcome = runs.outcome(kind)
    assert outcome.hung is None, outcome.hung
    assert not outcome.failures, f"{len(outcome.failures)} of {COUNT} mutants of {kind}:\n" + "\n".join(
        outcome.failures[:8]
    )
    # plain JSON (no checksum) may describe another valid table; such mutants must stay rare
    if kind in PLAIN_JSON_KINDS:
        assert len(outcome.changed) <= COUNT // 25, "\n".join(outcome.changed[:8])
    assert outcome.same + outcome.errors + len(outcome.changed) == COUNT
    # the resumed read was compared with a read from scratch (a mismatch is a failure above)
    assert outcome.cross_checked == min(CROSS_CHECKS, COUNT - outcome.duplicates)
