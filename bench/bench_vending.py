"""Vended storage credentials: what a table load costs with them, cached and not.

    python -m bench.bench_vending                 # vending: plain / cached / STS each time
    python -m bench.bench_vending --mode plain    # only loads without the header (runs on old code)

A server (in this process's threads, over a SQLite catalog) serves a table of ``--snapshots``
appends; loads are sent one after another on one keep-alive connection, timed in rounds that
alternate the kinds so machine drift hits all alike:

- ``plain``: no ``X-Iceberg-Access-Delegation`` (what every load cost before vending);
- ``cached``: the header, answered from the credential cache (every load after the first);
- ``sts``: the header with the cache's margin set to the whole lifetime, so every load calls STS
  AssumeRole (moto's, in a child process, with authentication on: ``tests/support/sts_server``).

``--mode plain`` uses a local warehouse and no vending, so the same script measures the old code
(``PYTHONPATH=<old>/src``) and the new, side by side. Printed: median microseconds per load per
round kind, and the ratios.
"""

from __future__ import annotations

import argparse
import http.client
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from icefloe.catalog.sql import SqlCatalog
from icefloe.server import ServerConfig, start_server


def _timer(host: str, port: int, path: str, headers: dict[str, str]) -> Callable[[int], float]:
    connection = http.client.HTTPConnection(host, port, timeout=60)

    def run(n: int) -> float:
        started = time.perf_counter()
        for _ in range(n):
            connection.request("GET", path, headers=headers)
            answer = connection.getresponse()
            answer.read()
            assert answer.status == 200, answer.status
        return (time.perf_counter() - started) / n * 1e6

    return run


def _table(catalog: SqlCatalog, snapshots: int) -> None:
    catalog.create_namespace("db")
    from icefloe.spec.schema import Schema
    from icefloe.spec.types import LongType, NestedField

    table = catalog.create_table("db.t", Schema(NestedField(1, "id", LongType())))
    for i in range(snapshots):
        table.append(pa.table({"id": pa.array([i], pa.int64())}))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mode", choices=["vending", "plain"], default="vending")
    parser.add_argument("--snapshots", type=int, default=20)
    parser.add_argument("--loads", type=int, default=200, help="loads per round")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-vending-"))
    sts = None
    properties: dict[str, str] = {}
    warehouse = str(tmp / "wh")
    if args.mode == "vending":
        from tests.support.sts_server import start_sts_server

        sts = start_sts_server()
        properties = {**sts.server_properties, "rest.vended-credentials.role-arn": sts.role_arn}
        warehouse = f"s3://{sts.bucket}/bench-{int(time.time())}"
    else:
        Path(warehouse).mkdir()
    catalog = SqlCatalog("bench", uri=f"sqlite:///{tmp / 'c.db'}", warehouse=warehouse, **properties)
    try:
        _table(catalog, args.snapshots)
        with start_server(ServerConfig(catalog)) as server:
            path = "/v1/namespaces/db/tables/t"
            kinds = {"plain": _timer(server.host, server.port, path, {})}
            if args.mode == "vending":
                vend = {"X-Iceberg-Access-Delegation": "vended-credentials"}
                vendor = server.app.state.icefloe.vendor
                cached = _timer(server.host, server.port, path, vend)
                kinds["cached"] = cached

                def every_load_calls_sts(n: int) -> float:
                    vendor.renew_before_s = vendor.duration_s  # every entry stale at once
                    try:
                        return cached(n)
                    finally:
                        vendor.renew_before_s = 300

                kinds["sts"] = every_load_calls_sts
            for run in kinds.values():
                run(20)  # warm-up
            figures: dict[str, list[float]] = {kind: [] for kind in kinds}
            for _ in range(args.rounds):
                for kind, run in kinds.items():
                    n = args.loads if kind != "sts" else max(10, args.loads // 10)
                    figures[kind].append(run(n))
        medians = {kind: statistics.median(values) for kind, values in figures.items()}
        for kind, value in medians.items():
            spread = f"{min(figures[kind]):.0f}-{max(figures[kind]):.0f}"
            print(f"{kind:7s} {value:8.0f} us/load (rounds {spread})")
        for kind in kinds:
            if kind != "plain":
                print(f"{kind} / plain = {medians[kind] / medians['plain']:.2f}")
    finally:
        catalog.close()
        if sts is not None:
            sts.stop()


if __name__ == "__main__":
    main()
