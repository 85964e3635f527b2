"""Loading a table whose metadata file is cached, on object storage: milliseconds and requests per load.

    python -m bench.bench_metadata_load_s3                     # latencies 0 and 20 ms, 100 loads each
    python -m bench.bench_metadata_load_s3 --latency-ms 0 --loads 200

A metadata file named with a fresh UUID is written once (``formats/metadata/files.py``), so a load
whose file this process has parsed before needs nothing from the store. This measures that load
two ways against moto's S3 in its **own process** (``tests/support/s3server.py``), answering each
request ``--latency-ms`` late (a model of the round trip to a real store; 0 is loopback as is):

- ``SqlCatalog.load_table`` in this process (a client's ``load_table`` or refresh of another
  handle);
- icefloe's REST client loading through ``icefloe serve`` in a child process (the server reads the
  metadata file for every load; the client reads nothing from the store).

Both take turns (``time_interleaved``) after one warm-up load each. Printed per latency: median
and p90 ms per load, loads per second, and the storage requests of one more load of each. To
compare two versions of icefloe, run this with each one's ``src`` first on ``PYTHONPATH``, in turns.
"""

from __future__ import annotations

import argparse
import uuid
from collections.abc import Callable, Sequence

import pyarrow as pa
from tests.support.s3server import S3Server

from bench._common import (
    command_line,
    fmt_ms,
    log,
    print_environment,
    print_table,
    time_interleaved,
    workspace,
)
from bench.bench_rest import serve
from bench.bench_rest_s3 import s3_store


def _requests_of(store: S3Server, fn: Callable[[], object]) -> str:
    store.reset_counts()
    fn()
    counts = store.counts()
    return ", ".join(f"{n} {op}" for op, n in sorted(counts.items())) or "none"


def measure(work: str, store: S3Server, uri: str, loads: int) -> list[tuple[str, float, float, str]]:
    """(engine, median s, p90 s, requests of one load) for the in-process and the REST load."""
    from icefloe.catalog.rest import RestCatalog
    from icefloe.catalog.sql import SqlCatalog
    from icefloe.spec.schema import Schema
    from icefloe.spec.types import LongType, NestedField

    schema = Schema(NestedField(1, "id", LongType(), True))
    rows = pa.table({"id": pa.array(range(10), pa.int64())})
    warehouse = f"s3://{store.bucket}/local-{uuid.uuid4().hex[:8]}"
    local = SqlCatalog("bench", uri=f"sqlite:///{work}/local.db", warehouse=warehouse, **store.properties)
    local.create_namespace("bench")
    local.create_table("bench.t", schema, properties={"format-version": "2"}).append(rows)
    remote = RestCatalog("bench", uri=uri, **store.properties)
    remote.create_namespace("bench")
    remote.create_table("bench.t", schema, properties={"format-version": "2"}).append(rows)

    fns: list[Callable[[], object]] = [
        lambda: local.load_table("bench.t"),
        lambda: remote.load_table("bench.t"),
    ]
    timings = time_interleaved(fns, loads)
    requests = [_requests_of(store, fn) for fn in fns]
    local.close()
    remote.close()
    names = ["SqlCatalog.load_table", "REST load (icefloe serve)"]
    return [(n, t.median, t.p90, r) for n, t, r in zip(names, timings, requests, strict=True)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", default="0,20", help="storage round trips to model, comma-separated")
    parser.add_argument("--loads", type=int, default=100, help="timed loads per engine and latency")
    parser.add_argument("--dir", help="work directory (kept; default: a temporary one)")
    args = parser.parse_args(argv)
    import icefloe

    print_environment(
        "Loading a table with a cached metadata file, on object storage",
        command_line("bench.bench_metadata_load_s3", argv),
        {"latency-ms": args.latency_ms, "loads": args.loads, "icefloe": icefloe.__file__},
    )
    rows = []
    for latency_ms in (float(x) for x in args.latency_ms.split(",") if x.strip()):
        log(f"latency {latency_ms:g} ms ...")
        with workspace(args.dir, "bench-metadata-load-s3-") as work, s3_store(latency_ms / 1000) as store:
            warehouse = f"s3://{store.bucket}/served"
            with serve(work, warehouse=warehouse, properties=store.properties) as served:
                for name, median, p90, requests in measure(work, store, served.uri, args.loads):
                    rows.append(
                        (f"{latency_ms:g}", name, fmt_ms(median), fmt_ms(p90), f"{1 / median:.0f}", requests)
                    )
    print_table(
        "ms per load (median, p90), loads per second, storage requests of one load",
        ["latency ms", "load", "median ms", "p90 ms", "loads/s", "requests"],
        rows,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
