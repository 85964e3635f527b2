"""What the SQL front-end's reading of a statement costs before Spark sees it (no Spark needed).

    .venv/bin/python -m bench.bench_sql_parse [--runs 200]

Per statement: ``parse_statement`` (tokens, keyword names, sqlglot's parse; a checkout that
refuses the statement shows ``refused`` and the cost of finding that out) and the relations found
in its tree (``relation_tables`` where the module exists, else every ``exp.Table`` as the
front-end took them before), medians of ``runs`` calls after one warm-up. Run it against two
checkouts in turns (``PYTHONPATH=<checkout>/src``) to compare them: absolute figures swing with
the machine's load, the pairs do not.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench._common import command_line

STATEMENTS = {
    "point select": "SELECT id, name FROM icefloe.db.events WHERE id = 42",
    "join + cte": (
        "WITH recent AS (SELECT * FROM icefloe.db.events WHERE day > '2024-01-01') "
        "SELECT r.id, count(*) FROM recent r JOIN icefloe.db.users u ON r.user_id = u.id "
        "LEFT JOIN icefloe.db.orders o ON o.user_id = u.id WHERE u.country IN ('NL', 'DE') "
        "GROUP BY r.id ORDER BY 2 DESC LIMIT 10"
    ),
    "merge": (
        "MERGE INTO icefloe.db.events t USING (SELECT * FROM icefloe.db.staged) s ON t.id = s.id "
        "WHEN MATCHED AND s.op = 'd' THEN DELETE WHEN MATCHED THEN UPDATE SET * "
        "WHEN NOT MATCHED THEN INSERT *"
    ),
    # sqlglot refuses table options: the statement is read a second time with them blanked out
    "table options": "SELECT e.id FROM icefloe.db.events WITH ('split-size' = '1024') e WHERE e.id = 42",
    "insert 1000 rows": "INSERT INTO icefloe.db.events VALUES "
    + ", ".join(f"({i}, 'name {i}', NULL, TIMESTAMP '2024-01-01 00:00:00')" for i in range(1000)),
}


def _median_us(fn: Callable[[], Any], runs: int) -> float:
    fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main(argv: list[str] | None = None) -> int:
    """Print the median cost of reading each statement, in microseconds."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args(argv)

    from sqlglot import exp

    import icefloe
    from icefloe.spark.statements.parse import parse_statement

    try:
        from icefloe.spark.statements.relations import relation_tables
    except ImportError:  # a checkout from before relations.py

        def relation_tables(tree: exp.Expr) -> list[exp.Table]:
            return list(tree.find_all(exp.Table))

    print(f"command:  {command_line('bench.bench_sql_parse', argv)}")
    print(f"icefloe:  {icefloe.__file__}")
    print(f"{'statement':<20} {'parse µs':>10} {'relations µs':>13}")
    for name, text in STATEMENTS.items():
        tree = parse_statement(text).tree
        parse_us = _median_us(lambda text=text: parse_statement(text), args.runs)
        if tree is None:
            print(f"{name:<20} {parse_us:>10.0f} {'refused':>13}")
            continue
        rel_us = _median_us(lambda tree=tree: relation_tables(tree), args.runs)
        print(f"{name:<20} {parse_us:>10.0f} {rel_us:>13.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
