"""Fuzzing the readers: every mutant of every file kind reads like the original or fails cleanly.

Four real tables are written with the public API (see ``harness.build_tables``): v2 with position
deletes, v2 with gzip metadata, v3 with deletion vectors, v4 with leaves, manifest DVs and
colocated DVs; a fifth table holds Avro and ORC data and position-delete files. For each kind of
file (metadata JSON plain and gzip, manifest lists, manifests, delete manifests, v4 roots, leaves
and manifest DVs, Puffin files, Parquet, Avro and ORC position-delete and data files) a fixed seed
produces mutants (bit flips, boundary bytes, truncation, length/count fields set to 0, -1 or huge:
``tests/support/mutation.py``). Reading the table after each mutant must either give exactly the
original rows or raise an ``IcefloeError`` whose message (or ``location``) names the mutated file,
within ``harness.MUTANT_TIMEOUT_S`` per mutant (a hang fails the test; the limit never decides
a passing case).

Size: ``ICEFLOE_FUZZ_MUTANTS`` mutants per kind (default 400, 150 when ``CI`` is set: the whole
suite then takes about 3 minutes on 2 cores); ``ICEFLOE_FUZZ_SEED`` changes the seed. A long run:

    ICEFLOE_FUZZ_MUTANTS=20000 ICEFLOE_FUZZ_SEED=7 .venv/bin/python -m pytest tests/fuzz -q -n 2

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
from pathlib import Path

import pytest

from tests.fuzz.harness import PLAIN_JSON_KINDS, Target, build_tables, run_mutants

SEED = int(os.environ.get("ICEFLOE_FUZZ_SEED", "20261125"))
COUNT = int(os.environ.get("ICEFLOE_FUZZ_MUTANTS", "150" if os.environ.get("CI") else "400"))
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
def targets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Target]:
    root: Path = tmp_path_factory.mktemp("fuzz")
    return {t.kind: t for t in build_tables(root)}


def test_every_kind_has_a_target(targets: dict[str, Target]) -> None:
    assert set(KINDS) <= set(targets), sorted(set(KINDS) - set(targets))


@pytest.mark.parametrize("kind", KINDS)
def test_mutants_read_like_the_original_or_fail_naming_the_file(
    targets: dict[str, Target], kind: str
) -> None:
    target = targets[kind]
    outcome = run_mutants(target, SEED, COUNT)
    assert outcome.hung is None, outcome.hung
    assert not outcome.failures, f"{len(outcome.failures)} of {COUNT} mutants of {kind}:\n" + "\n".join(
        outcome.failures[:8]
    )
    # plain JSON (no checksum) may describe another valid table; such mutants must stay rare
    if kind in PLAIN_JSON_KINDS:
        assert len(outcome.changed) <= COUNT // 25, "\n".join(outcome.changed[:8])
    assert outcome.same + outcome.errors + len(outcome.changed) == COUNT
