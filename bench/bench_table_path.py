"""rewrite_table_path: what a copy of a table with many manifests costs, per manifest.

    python -m bench.bench_table_path             # 1,000 manifests, 3 runs
    python -m bench.bench_table_path --quick     # 200 manifests, 1 run

The table has ``--manifests`` one-file append snapshots committed without manifest merging, so its
current manifest list names that many manifests and the history holds as many manifest lists (the
i-th naming i manifests: a full copy rewrites about n²/2 manifest-list records). Data files are
synthetic: a copy never opens them. Timed in turns on the same table:

- **full copy**: ``rewrite_table_path`` of every version;
- **incremental copy**: ``start_version`` = the version before the last append (one new snapshot);
  its new manifest list names every old manifest, whose new length is needed, so each old manifest
  is read and rewritten in memory again (not staged);
- **read floor**: reading every metadata file the full copy reads (metadata JSON, manifest lists,
  manifests) once, bytes only: no copy can do less I/O.

v4 runs too (roots and leaves instead of manifest lists and manifests; ``--manifests`` appends).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import uuid
from collections.abc import Sequence
from typing import Any

from bench._common import (
    NAMESPACE,
    command_line,
    fmt_ms,
    icefloe_catalog,
    load_average,
    log,
    print_environment,
    print_table,
    ratio,
    time_interleaved,
    workspace,
)
from bench.bench_maintenance import SCHEMA, synthetic_file
from icefloe.maintenance.rewrite_table_path import rewrite_table_path
from icefloe.tree.reachable import tree_views
from icefloe.txn.producers import AppendFiles


def many_manifests(catalog: Any, version: int, manifests: int) -> Any:
    """A table of ``manifests`` one-file appends, none merged."""
    ident = f"{NAMESPACE}.t_v{version}_{manifests}"
    if catalog.table_exists(ident):  # --dir keeps the work directory: build afresh
        catalog.drop_table(ident, purge=True)
    table = catalog.create_table(
        ident,
        SCHEMA,
        properties={"format-version": str(version), "commit.manifest-merge.enabled": "false"},
    )
    with table.transaction() as tx:
        for k in range(manifests - 1):
            tx.add_action(AppendFiles(files=[synthetic_file(table.location(), k)], merge_manifests=False))
    table = table.refresh()
    before = table.metadata_location.rsplit("/", 1)[-1]
    with table.transaction() as tx:
        tx.add_action(AppendFiles(files=[synthetic_file(table.location(), manifests)], merge_manifests=False))
    return table.refresh(), before


def metadata_files(table: Any) -> list[str]:
    """Every metadata file a full copy reads: metadata JSON files and each snapshot's tree."""
    tree = tree_views(table.io, table.metadata, table.metadata.snapshots).tree
    return [e.metadata_file for e in table.metadata.metadata_log] + [table.metadata_location, *sorted(tree)]


def time_copies(work: str, table: Any, before: str, runs: int) -> tuple[list[float], ...]:
    """Full copy, incremental copy and the read floor of one table, timed in turns."""
    source, target, files = table.location(), f"file://{work}/copy", metadata_files(table)

    def staging() -> str:
        return f"file://{work}/staging/{uuid.uuid4().hex}"

    def full() -> None:
        rewrite_table_path(table, source, target, staging_location=staging())

    def incremental() -> None:
        rewrite_table_path(table, source, target, start_version=before, staging_location=staging())

    def floor() -> None:
        for location in files:
            table.io.new_input(location).read()

    return tuple(list(t.samples) for t in time_interleaved([full, incremental, floor], runs))


def bench(work: str, versions: Sequence[int], manifests: int, runs: int) -> list[list[str]]:
    catalog = icefloe_catalog(work)
    rows = []
    for version in versions:
        table, before = many_manifests(catalog, version, manifests)
        t_full, t_incr, t_floor = time_copies(work, table, before, runs)
        log(f"  v{version}: full {t_full}, incremental {t_incr}, floor {t_floor}")
        f, i, r = (statistics.median(t) for t in (t_full, t_incr, t_floor))
        rows.append(
            [
                f"v{version}",
                f"{manifests:,}",
                f"{len(metadata_files(table)):,}",
                fmt_ms(f),
                f"{f / manifests * 1000:.2f} ms",
                fmt_ms(i),
                fmt_ms(r),
                ratio(f, r),
                ratio(i, r),
            ]
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--manifests", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--versions", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--dir", help="keep the work directory here")
    args = parser.parse_args(argv)
    if args.quick:
        args.manifests, args.runs = 200, 1
    settings = {"manifests": args.manifests, "runs": args.runs, "versions": args.versions}
    print_environment("rewrite_table_path", command_line("bench.bench_table_path", argv), settings)
    print(f"load average before: {load_average()}")
    with workspace(args.dir, "bench-table-path-") as work:
        rows = bench(work, args.versions, args.manifests, args.runs)
    print_table(
        "copy of a table with n unmerged manifests (median; full / incremental / read floor in turns)",
        [
            "format",
            "manifests",
            "metadata files",
            "full copy",
            "per manifest",
            "incremental (1 snapshot)",
            "read floor",
            "full / floor",
            "incremental / floor",
        ],
        rows,
    )
    print(f"load average after: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
