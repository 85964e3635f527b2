"""A long schemathesis campaign against ``icefloe serve``, then a check of what it left behind.

``tests/server/test_openapi_fuzz.py`` is the suite's smoke test (a few examples per operation and a
short seeded stateful run). This script is the search: it starts the server in this process over a
fresh SQL catalog (SQLite, or a throwaway PostgreSQL from ``tests/support/postgres.py``) seeded with
namespaces, v1..v4 tables, a view and a namespace only some tokens may see, then runs the
schemathesis command line against it with hundreds of examples per operation and the phases asked
for (examples, coverage, fuzzing and the stateful phase). The stateful phase follows the links of
``tests/support/served_openapi.py`` (create namespace -> create table -> commit -> load, plan ->
fetch, ...) and, through the ``SCHEMATHESIS_HOOKS`` module ``tests/support/deep_requests_hooks``,
sends valid Iceberg changes in most of its positive cases, so scenarios get past their first step;
``--no-steer`` leaves schemathesis' own data. Checks: no 5xx, every response (errors included, as
the spec's ``IcebergErrorResponse``) conforms to the spec, no request hangs past
``--request-timeout``. Afterwards it checks the catalog itself: every listed table loads and its
metadata file exists and parses, nothing was written outside the warehouse, and the token without a
grant on ``vault`` sees nothing of it; and it prints how deep the stateful scenarios got
(``scripts/fuzz_depth.py``). Exit status 0 only when both parts pass.

It lives in ``scripts/`` because it is a tool that searches for bugs, not a measurement; a failure
it finds becomes a regression test under ``tests/server/``. Run from the repository root::

    PYTHONPATH=src:. .venv/bin/python scripts/fuzz_rest_server.py --backend sqlite \\
        --max-examples 300 --phases examples,fuzzing,stateful --max-time 600

``--report-dir`` keeps schemathesis' ndjson/junit reports; ``--seed`` makes a run repeatable.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import requests
from fuzz_depth import stateful_depths
from tests.support.served_openapi import served_document

from icefloe.catalog.sql import SqlCatalog
from icefloe.server import Grants, RunningServer, ServerConfig, start_server
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
ROOT = Path(__file__).resolve().parent.parent
PREFIX = "fuzz"
ADMIN_TOKEN = "fuzz-admin"
LIMITED_TOKEN = "fuzz-limited"
LIMITED_GRANTS = Grants({"accounting": "write"})
HIDDEN_NAMESPACE = "vault"
# valid bodies for the stateful phase's positive cases (tests/support/deep_requests.py)
STEERING_HOOKS = "tests.support.deep_requests_hooks"
CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"


def _schema() -> Schema:
    return Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "name", StringType()))


def seed(catalog: SqlCatalog, server: RunningServer) -> None:
    """Objects the spec's own examples name (``accounting``, ``accounting.tax``, ``sales``), one
    table per format version, a view (created through the server, as a client would) and a table
    in a namespace the limited token has no grant on."""
    catalog.create_namespace("accounting")
    catalog.create_namespace(("accounting", "tax"))
    catalog.create_namespace(HIDDEN_NAMESPACE)
    catalog.create_table("accounting.sales", _schema())
    for version in (1, 2, 3, 4):
        catalog.create_table(
            f"accounting.t_v{version}", _schema(), properties={"format-version": str(version)}
        )
    catalog.create_table(f"{HIDDEN_NAMESPACE}.secret", _schema())
    view = {
        "name": "v",
        "schema": {
            "type": "struct",
            "schema-id": 0,
            "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}],
        },
        "view-version": {
            "version-id": 1,
            "schema-id": 0,
            "timestamp-ms": 1_700_000_000_000,
            "summary": {"engine-name": "fuzz"},
            "representations": [{"type": "sql", "sql": "SELECT id FROM sales", "dialect": "spark"}],
            "default-namespace": ["accounting"],
        },
        "properties": {},
    }
    reply = requests.post(
        f"{server.uri}/v1/{PREFIX}/namespaces/accounting/views",
        json=view,
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        timeout=30,
    )
    reply.raise_for_status()


def _write_served_spec(target: Path) -> Path:
    target.write_text(json.dumps(served_document()))
    return target


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()} if root.exists() else set()


def check_catalog(
    catalog: SqlCatalog, server: RunningServer, root: Path, warehouse: Path, reports: Path
) -> list[str]:
    """What must hold after any sequence of requests; the problems found (empty when none)."""
    problems: list[str] = []
    pending: list[tuple[str, ...]] = list(catalog.list_namespaces())
    namespaces: list[tuple[str, ...]] = []
    while pending:
        ns = pending.pop()
        namespaces.append(ns)
        pending.extend(catalog.list_namespaces(ns))
    tables = 0
    for ns in namespaces:
        for ident in catalog.list_tables(ns):
            tables += 1
            try:
                table = catalog.load_table(ident)
            except Exception as exc:  # the check reports every kind of failure
                problems.append(f"table {ident} does not load: {type(exc).__name__}: {exc}")
                continue
            path = Path(table.metadata_location.removeprefix("file://").removeprefix("file:"))
            if not path.is_file():
                problems.append(f"table {ident}: metadata file {path} is missing")
            if not str(path).startswith(str(warehouse) + "/"):
                problems.append(f"table {ident}: metadata file {path} is outside the warehouse")
    allowed = (warehouse, reports)
    for path in _files(root):
        if not (any(path.is_relative_to(a) for a in allowed) or path.name.startswith("catalog.db")):
            problems.append(f"file written outside the warehouse: {path}")
    problems.extend(_hidden_checks(server, namespaces))
    print(f"invariants: {len(namespaces)} namespaces, {tables} tables checked, {len(problems)} problems")
    return problems


def _hidden_checks(server: RunningServer, namespaces: list[tuple[str, ...]]) -> list[str]:
    """The limited token sees no namespace outside its grant, and cannot load ``vault.secret``."""
    problems: list[str] = []
    limited = {"Authorization": f"Bearer {LIMITED_TOKEN}"}
    base = f"{server.uri}/v1/{PREFIX}"
    listed = requests.get(f"{base}/namespaces", headers=limited, timeout=30).json()["namespaces"]
    if listed != [["accounting"]]:
        problems.append(f"the limited token lists {listed}, not only accounting")
    for ns in namespaces:
        if ns[0] == "accounting":
            continue
        path = requests.utils.quote("\x1f".join(ns), safe="")
        for url in (f"{base}/namespaces/{path}", f"{base}/namespaces/{path}/tables"):
            status = requests.get(url, headers=limited, timeout=30).status_code
            if status != 403:
                problems.append(f"the limited token got {status} from {url}")
    status = requests.get(
        f"{base}/namespaces/{HIDDEN_NAMESPACE}/tables/secret", headers=limited, timeout=30
    ).status_code
    if status != 403:
        problems.append(f"the limited token got {status} loading {HIDDEN_NAMESPACE}.secret")
    return problems


@contextlib.contextmanager
def catalog_for(backend: str, root: Path) -> Iterator[SqlCatalog]:
    """A fresh SQL catalog on ``backend``, its warehouse under ``root``."""
    warehouse = root / "warehouse"
    warehouse.mkdir()
    if backend == "postgres":
        from tests.support.postgres import start_postgres

        pg = start_postgres()
        try:
            catalog = SqlCatalog("fuzz", uri=pg.uri, warehouse=str(warehouse))
            try:
                yield catalog
            finally:
                catalog.close()
        finally:
            pg.stop()
    else:
        catalog = SqlCatalog("fuzz", uri=f"sqlite:///{root / 'catalog.db'}", warehouse=str(warehouse))
        try:
            yield catalog
        finally:
            catalog.close()


def run_schemathesis(server: RunningServer, args: argparse.Namespace, report_dir: Path) -> int:
    """The schemathesis command line against ``server``; its exit status."""
    config = report_dir / "schemathesis.toml"
    # the served document's links are curated; the ones schemathesis infers from names join
    # operations that share a word (a new namespace -> load a table) and dilute the scenarios
    inference = "" if args.inferred_links else "[phases.stateful.inference]\nalgorithms = []\n"
    config.write_text(
        f'[parameters]\nprefix = "{PREFIX}"\n[phases.stateful]\nmax-steps = {args.max_steps}\n{inference}'
    )
    command = [
        str(SCHEMATHESIS),
        "--config-file",
        str(config),
        "run",
        str(_write_served_spec(report_dir / "served-openapi.json")),
        "--url",
        server.uri,
        "--header",
        f"Authorization: Bearer {args.token}",
        "--phases",
        args.phases,
        "--checks",
        CHECKS,
        "--max-examples",
        str(args.max_examples),
        "--workers",
        "1",
        "--request-timeout",
        str(args.request_timeout),
        "--suppress-health-check",
        "all",
        "--report",
        "junit,ndjson",
        "--report-dir",
        str(report_dir),
        "--output-truncate",
        "true",
    ]
    if args.max_time:
        command += ["--max-time", str(args.max_time)]
    if args.seed is not None:
        command += ["--seed", str(args.seed)]
    command += args.extra
    env = dict(os.environ)
    if args.steer:
        env["SCHEMATHESIS_HOOKS"] = STEERING_HOOKS
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    print("$", f"SCHEMATHESIS_HOOKS={STEERING_HOOKS}" if args.steer else "", " ".join(command), flush=True)
    return subprocess.run(command, check=False, cwd=report_dir, env=env).returncode


def phase_counts(report_dir: Path) -> dict[str, collections.Counter[str]]:
    """Requests per phase and status class (``2xx``, ``4xx``, ``5xx``, ``none`` for no answer),
    read back from schemathesis' NDJSON event report."""
    counts: dict[str, collections.Counter[str]] = {}
    phase = "?"
    for report in sorted(report_dir.glob("ndjson-*.ndjson")):
        with report.open() as lines:
            for line in lines:
                event = json.loads(line)
                (kind, body), *_ = event.items()
                if kind == "PhaseStarted":
                    phase = str(body["phase"]["name"])
                elif kind == "ScenarioFinished":
                    for interaction in ((body.get("recorder") or {}).get("interactions") or {}).values():
                        status = ((interaction or {}).get("response") or {}).get("status_code")
                        label = f"{status // 100}xx" if status else "none"
                        counts.setdefault(phase, collections.Counter())[label] += 1
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--max-examples", type=int, default=300)
    parser.add_argument("--phases", default="examples,coverage,fuzzing,stateful")
    parser.add_argument(
        "--max-time", type=int, default=0, help="seconds for the whole schemathesis run (0: none)"
    )
    parser.add_argument("--request-timeout", type=float, default=30.0, help="a slower reply counts as a hang")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--max-steps", type=int, default=12, help="steps per stateful scenario")
    parser.add_argument(
        "--inferred-links", action="store_true", help="also the links schemathesis infers from names"
    )
    parser.add_argument(
        "--no-steer",
        dest="steer",
        action="store_false",
        help="stateful phase without deep_requests' valid bodies (schemathesis' data only)",
    )
    parser.add_argument("--token", default=ADMIN_TOKEN, help=f"{ADMIN_TOKEN} (all grants) or {LIMITED_TOKEN}")
    parser.add_argument("--report-dir", type=Path, help="keep schemathesis' reports here")
    parser.add_argument("extra", nargs="*", help="more schemathesis options, after --")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="icefloe-fuzz-"))
    report_dir = (args.report_dir or root / "reports").resolve()
    report_dir.mkdir(parents=True, exist_ok=True)
    # the server runs in an empty directory under root: a file a relative path put there is caught
    (root / "cwd").mkdir()
    os.chdir(root / "cwd")
    tokens = {ADMIN_TOKEN: Grants(), LIMITED_TOKEN: LIMITED_GRANTS}
    started = time.monotonic()
    try:
        with catalog_for(args.backend, root) as catalog:
            config = ServerConfig(catalog, tokens=tokens, prefix=PREFIX, max_request_bytes=256 * 1024)
            with start_server(config) as server:
                seed(catalog, server)
                status = run_schemathesis(server, args, report_dir)
                problems = check_catalog(catalog, server, root, root / "warehouse", report_dir)
        counts = phase_counts(report_dir)  # before a report directory under root goes
        depths = stateful_depths(report_dir)
    finally:
        os.chdir(ROOT)
        shutil.rmtree(root, ignore_errors=True)
    for phase, counted in counts.items():
        print(f"requests in phase {phase}: {sum(counted.values())} ({dict(sorted(counted.items()))})")
    if depths.scenarios:
        print("stateful depth (scripts/fuzz_depth.py):")
        print(depths.markdown())
    for problem in problems:
        print("INVARIANT:", problem)
    elapsed = time.monotonic() - started
    print(f"backend {args.backend}: schemathesis exit {status}, {elapsed:.0f} s, load {os.getloadavg()}")
    return 0 if status == 0 and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
