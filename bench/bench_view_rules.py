"""What keeping views and tables apart costs the catalog calls that check locations.

One SQLite catalog with ``--tables`` tables and ``--views`` views; each operation is timed in turns
with the others (``time_interleaved``):

- ``create view``: create a view, then drop its row (the drop is timed too, alike on every code);
- ``replace view in place``: a property change that keeps the view's location (reads no table);
- ``create table``: create a table, then drop it (now also lists the views' rows);
- ``other_tables``: the catalog's list of other owners itself.

Run it once against the old code and once against the new, in turns (only pairs taken side by
side mean anything on a shared machine): ``PYTHONPATH=<old or new src>:. python -m
bench.bench_view_rules``.
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Sequence

import icefloe
from bench._common import (
    command_line,
    fmt_ms,
    icefloe_catalog,
    print_environment,
    print_table,
    time_interleaved,
    workspace,
)
from icefloe.catalog.sql_views import SqlViews
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField
from icefloe.spec.view_metadata import SqlRepresentation, ViewMetadata, ViewVersion

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def _view(location: str, properties: dict[str, str]) -> ViewMetadata:
    version = ViewVersion(0, 1000, 0, (SqlRepresentation("SELECT 1", "spark"),), ("bench",), {})
    return ViewMetadata.new(location, version, SCHEMA, properties)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--views", type=int, default=50)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args(argv)
    settings = {"tables": args.tables, "views": args.views, "runs": args.runs, "icefloe": icefloe.__file__}
    print_environment("view location rules", command_line("bench.bench_view_rules", argv), settings)
    with workspace(args.workdir, "icefloe-view-rules-") as work:
        catalog = icefloe_catalog(work)
        views = SqlViews(catalog)
        warehouse = f"{work}/warehouse"
        for i in range(args.tables):
            catalog.create_table(("bench", f"t{i}"), SCHEMA)
        for i in range(args.views):
            views.create(("bench", f"v{i}"), _view(f"{warehouse}/bench/v{i}", {}))
        counter = itertools.count()
        held = {"location": views.load(("bench", "v0"))[1]}

        def create_view() -> None:
            n = next(counter)
            views.create(("bench", f"new_v{n}"), _view(f"{warehouse}/bench/new_v{n}", {}))
            views.drop(("bench", f"new_v{n}"))

        def replace_view() -> None:
            md = _view(f"{warehouse}/bench/v0", {"n": str(next(counter))})
            held["location"] = views.replace(("bench", "v0"), held["location"], md)

        def create_table() -> None:
            n = next(counter)
            catalog.create_table(("bench", f"new_t{n}"), SCHEMA)
            catalog.drop_table(("bench", f"new_t{n}"))

        def other_tables() -> None:
            catalog.other_tables(("bench", "t0"))

        ops = {
            "create view": create_view,
            "replace view in place": replace_view,
            "create table": create_table,
            "other_tables": other_tables,
        }
        timings = time_interleaved(list(ops.values()), args.runs)
        print_table(
            f"{args.tables} tables, {args.views} views",
            ["operation", "median", "p90"],
            [(name, fmt_ms(t.median), fmt_ms(t.p90)) for name, t in zip(ops, timings, strict=True)],
        )
        catalog.close()


if __name__ == "__main__":
    main()
