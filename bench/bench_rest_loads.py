"""Table loads over HTTP against an in-process ``icefloe serve``: full answers and 304s.

    .venv/bin/python -m bench.bench_rest_loads [--loads 2000] [--snapshots 50] [--http auto]

Times ``--loads`` sequential ``GET .../tables/t`` on one keep-alive connection, then as many
carrying the ``If-None-Match`` of the answer (Iceberg Java 1.11's freshness-aware load: 304, no
body), against a table of ``--snapshots`` snapshots on local disk. Prints microseconds per
request. Old and new code are compared by running this module under each ``PYTHONPATH`` in turns.
"""

from __future__ import annotations

import argparse
import http.client
import json
import time

from bench._common import command_line, load_average, print_environment, print_table, workspace


def _time_loads(host: str, port: int, loads: int, headers: dict[str, str]) -> tuple[float, int]:
    """(seconds per request, status of the last one) over one connection."""
    connection = http.client.HTTPConnection(host, port, timeout=60)
    try:
        status = 0
        started = time.perf_counter()
        for _ in range(loads):
            connection.request("GET", "/v1/namespaces/db/tables/t", headers=headers)
            answer = connection.getresponse()
            answer.read()
            status = answer.status
        return (time.perf_counter() - started) / loads, status
    finally:
        connection.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=2000)
    parser.add_argument("--snapshots", type=int, default=50)
    parser.add_argument("--http", default="auto", help="uvicorn HTTP implementation")
    args = parser.parse_args(argv)
    import pyarrow as pa

    from icefloe.catalog.sql import SqlCatalog
    from icefloe.server import ServerConfig, start_server
    from icefloe.spec.schema import Schema
    from icefloe.spec.types import LongType, NestedField

    print_environment("REST table loads", command_line("bench.bench_rest_loads", argv), vars(args))
    with workspace(None, "bench-rest-loads") as work:
        catalog = SqlCatalog("bench", uri=f"sqlite:///{work}/c.db", warehouse=f"{work}/wh")
        catalog.create_namespace("db")
        table = catalog.create_table("db.t", Schema(NestedField(1, "id", LongType())))
        for i in range(args.snapshots):
            table.append(pa.table({"id": pa.array([i], pa.int64())}))
        with start_server(ServerConfig(catalog), http=args.http) as server:
            connection = http.client.HTTPConnection(server.host, server.port, timeout=60)
            connection.request("GET", "/v1/namespaces/db/tables/t")
            first = connection.getresponse()
            size = len(first.read())
            etag = next(value for name, value in first.getheaders() if name.lower() == "etag")
            connection.close()
            full_s, full_status = _time_loads(server.host, server.port, args.loads, {})
            fresh_s, fresh_status = _time_loads(server.host, server.port, args.loads, {"If-None-Match": etag})
        catalog.close()
    print_table(
        f"{args.loads} loads each, answer {size} bytes, load average {load_average()}",
        ["load", "status", "us per request"],
        [
            ("full answer", full_status, f"{full_s * 1e6:.0f}"),
            ("If-None-Match", fresh_status, f"{fresh_s * 1e6:.0f}"),
        ],
    )
    print(json.dumps({"full_us": round(full_s * 1e6), "not_modified_us": round(fresh_s * 1e6)}))


if __name__ == "__main__":
    main()
