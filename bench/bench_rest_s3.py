"""REST catalog over object storage: icefloe's REST client against PyIceberg's, where the anchor lives.

    python -m bench.bench_rest_s3                          # latencies 0, 20 and 50 ms, 20 appends each
    python -m bench.bench_rest_s3 --latency-ms 0,10,40 --appends 10

Issue 16's benchmark (b) compares icefloe's REST client with PyIceberg's ``RestCatalog`` on the
same server; its anchor is a PyIceberg append that took 2.95 s against Lakekeeper over cloud
object storage (iceberg-python#1806), where every storage request is a network round trip.
``bench.bench_rest`` measures (b) on a local warehouse; this measures it on an ``s3://`` one:

- an S3-compatible server (moto, ``tests/support/s3server.py``) runs in its **own process**, so
  its Python work does not share the clients' GIL, and answers every request after
  ``--latency-ms`` (a model of the round trip to a real store; 0 is loopback as it is; requests
  in flight at once wait concurrently, as on a network);
- ``icefloe serve`` runs in another process over a SQLite catalog whose warehouse is in that
  store (it writes each commit's metadata file there);
- the engines append 10 rows each, in turns, after one warm-up append: icefloe's REST client to a
  v2 table and to a v4 table, PyIceberg's ``RestCatalog`` to a v2 table (PyIceberg writes v2 at
  most). Both clients reach the store with the same ``s3.*`` properties; the catalog server is on
  loopback (one commit request per append for every engine, so the catalog's round trip would
  add the same time to each).

Printed per latency: median and p90 per engine, and PyIceberg / icefloe for both icefloe tables;
then the storage requests of one append per engine. Round trips to S3 for a small PUT are tens of
milliseconds (20 and 50 ms model a near and a farther store).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import pyarrow as pa
from tests.support.s3server import S3Server, start_s3_server_process

from bench._common import (
    command_line,
    fmt_ms,
    load_average,
    log,
    print_environment,
    print_table,
    ratio,
    time_interleaved,
    workspace,
)
from bench.bench_rest import serve


@contextmanager
def s3_store(latency_s: float) -> Iterator[S3Server]:
    """moto's S3 in a child process (``tests/support/s3server.py``), answering each request
    ``latency_s`` late."""
    server = start_s3_server_process()
    try:
        if latency_s:
            server.slow_next(2**62, latency_s)  # every request, for the life of the server
        yield server
    finally:
        server.stop()


def _take_counts(server: S3Server) -> dict[str, int]:
    """Requests the server answered since the last call, by operation (PUT, GET, HEAD, ...)."""
    counts = server.counts()
    server.reset_counts()
    return counts


def _rows(start: int) -> pa.Table:
    ids = range(start, start + 10)
    return pa.table({"id": pa.array(ids, pa.int64()), "s": [f"row {i}" for i in ids]})


def measure(uri: str, store: S3Server, appends: int) -> dict[str, tuple[float, float, dict[str, int]]]:
    """Median and p90 (s) of each engine's 10-row append, in turns, and the storage requests of one
    more append each (client and catalog server together); snapshot counts checked after."""
    from pyiceberg.catalog.rest import RestCatalog as PyIcebergRest

    from bench.bench_rest import _schema
    from icefloe.catalog.rest import RestCatalog
    from icefloe.table.table import Table

    ours = RestCatalog("bench", uri=uri, **store.properties)
    ours.create_namespace("bench")
    tables = {
        "icefloe v2": ours.create_table("bench.ice_v2", _schema(), properties={"format-version": "2"}),
        "icefloe v4": ours.create_table("bench.ice_v4", _schema(), properties={"format-version": "4"}),
    }
    ours.create_table("bench.py_v2", _schema(), properties={"format-version": "2"})
    theirs = PyIcebergRest("py", uri=uri, **store.properties).load_table("bench.py_v2")
    py_schema = theirs.schema().as_arrow()
    counter = iter(range(10**9))

    def icefloe_append(table: Table) -> Callable[[], None]:
        return lambda: table.append(_rows(next(counter) * 10))

    def pyiceberg_append() -> None:
        theirs.append(pa.table(_rows(next(counter) * 10).columns, schema=py_schema))

    fns = [icefloe_append(tables["icefloe v2"]), icefloe_append(tables["icefloe v4"]), pyiceberg_append]
    timings = time_interleaved(fns, appends)
    requests = []
    for fn in fns:
        _take_counts(store)
        fn()
        requests.append(_take_counts(store))
    for name, table in tables.items():
        assert len(table.refresh().snapshots()) == appends + 2, name
    assert len(theirs.refresh().snapshots()) == appends + 2
    ours.close()
    names = [*tables, "PyIceberg v2"]
    return {name: (t.median, t.p90, counts) for name, t, counts in zip(names, timings, requests, strict=True)}


def _requests_text(counts: dict[str, int]) -> tuple[str, str]:
    by_operation = ", ".join(f"{n} {op}" for op, n in sorted(counts.items()))
    return str(sum(counts.values())), by_operation


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--latency-ms", default="0,20,50", help="storage round trips to model, comma-separated (ms)"
    )
    parser.add_argument("--appends", type=int, default=20, help="timed appends per engine and latency")
    parser.add_argument("--dir", help="work directory (kept; default: a temporary one)")
    args = parser.parse_args(argv)
    latencies = [float(x) for x in args.latency_ms.split(",") if x.strip()]
    print_environment(
        "REST catalog over object storage: icefloe's REST client vs PyIceberg's",
        command_line("bench.bench_rest_s3", argv),
        {"latency-ms": args.latency_ms, "appends": args.appends},
    )
    rows = []
    requests: dict[str, tuple[str, str]] = {}
    for latency_ms in latencies:
        log(f"latency {latency_ms:g} ms ...")
        with (
            workspace(args.dir and f"{args.dir}/{latency_ms:g}", "icefloe-bench-rest-s3-") as work,
            s3_store(latency_ms / 1000) as store,
            serve(work, warehouse=f"s3://{store.bucket}/served", properties=store.properties) as served,
        ):
            result = measure(served.uri, store, args.appends)
        py = result["PyIceberg v2"][0]
        rows.append(
            [
                f"{latency_ms:g} ms",
                *(f"{fmt_ms(m)} / {fmt_ms(p)}" for m, p, _ in result.values()),
                ratio(py, result["icefloe v2"][0]),
                ratio(py, result["icefloe v4"][0]),
            ]
        )
        requests = {name: _requests_text(counts) for name, (_, _, counts) in result.items()}
    print_table(
        "10-row appends through icefloe serve, warehouse on S3 (median / p90)",
        ["storage latency", "icefloe v2", "icefloe v4", "PyIceberg v2", "PyIceberg / icefloe v2", "... / v4"],
        rows,
    )
    print_table(
        "storage requests of one append (client and catalog server together)",
        ["engine", "requests", "by operation"],
        [[name, text[0], text[1]] for name, text in requests.items()],
    )
    print("(b) target: PyIceberg / icefloe >= 5x on the same server")
    print(f"load avg: {load_average()} (1/5/15 min) at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
