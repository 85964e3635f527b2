"""What keeping the catalog login on the driver's host costs a planning worker, per plan.

    .venv/bin/python -m bench.bench_worker_catalog [--runs 200]

The registered data source class reaches the planning worker pickled on every plan. Before, it
held the catalog properties inline; now a catalog with a login holds a ``CatalogRef`` naming a
0600 file, which the worker reads (once per process: Spark reuses its Python workers). Timed in
turns, for REST catalog properties with a client credential: unpickling the class and resolving
its catalog properties with the inline dict (as before), with the kept file read cold (a fresh
worker) and warm (a reused worker). Also the pickled class's size. No Spark: the worker's own
steps, in this process.
"""

from __future__ import annotations

import argparse
import pickle
from collections.abc import Callable

from bench._common import command_line, fmt_ms, print_environment, print_table, ratio, time_interleaved
from icefloe.spark import worker_catalog
from icefloe.spark.datasource import IcefloeDataSource, datasource_class

PROPERTIES = {
    "type": "rest",
    "uri": "https://catalog.example:8181",
    "credential": "spark-client:client-secret-for-the-benchmark",
    "header.X-Tenant": "analytics",
    "warehouse": "analytics",
}


def _plan(shipped: bytes, cold: bool) -> Callable[[], None]:
    """What a planning worker does with the class before it opens the catalog."""

    def run() -> None:
        if cold:
            worker_catalog._KEPT.clear()
        cls: type[IcefloeDataSource] = pickle.loads(shipped)
        assert cls.catalog.properties() == PROPERTIES

    return run


def main(argv: list[str] | None = None) -> None:
    """Time the three ways side by side and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args(argv)
    from pyspark.serializers import CloudPickleSerializer

    dumps = CloudPickleSerializer().dumps
    inline = datasource_class({}, pushdown=True)
    inline.catalog = worker_catalog.CatalogRef(inline=dict(PROPERTIES))  # the old shape
    kept = datasource_class(PROPERTIES, pushdown=True)
    shipped_inline, shipped_kept = dumps(inline), dumps(kept)
    print_environment(
        "Planning worker: catalog inline vs kept on the driver's host",
        command_line("bench.bench_worker_catalog", argv),
        {"runs": args.runs},
    )
    runs = [_plan(shipped_inline, False), _plan(shipped_kept, True), _plan(shipped_kept, False)]
    t_inline, t_cold, t_warm = time_interleaved(runs, args.runs, warmup=20)
    print_table(
        "per plan (median; p90)",
        ["class carries", "pickled bytes", "time", "vs inline"],
        [
            [
                "properties inline (before)",
                len(shipped_inline),
                f"{fmt_ms(t_inline.median)}; {fmt_ms(t_inline.p90)}",
                "1.0x",
            ],
            [
                "CatalogRef, file read (fresh worker)",
                len(shipped_kept),
                f"{fmt_ms(t_cold.median)}; {fmt_ms(t_cold.p90)}",
                ratio(t_cold.median, t_inline.median),
            ],
            [
                "CatalogRef, file cached (reused worker)",
                len(shipped_kept),
                f"{fmt_ms(t_warm.median)}; {fmt_ms(t_warm.p90)}",
                ratio(t_warm.median, t_inline.median),
            ],
        ],
    )


if __name__ == "__main__":
    main()
