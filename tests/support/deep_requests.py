"""Request bodies the server accepts, so that the fuzzers' stateful phase reaches deep states.

Generated from the OpenAPI document alone, nearly every namespace name has a control or
invisible character the server refuses, nearly every schema has clashing field ids or unknown
types, and nearly every commit has actions that cannot apply; a scenario then stops at its first
request. ``steer`` is a schemathesis ``flatmap_case`` hook: in the stateful phase's *positive*
cases, three times in four, it replaces the body of a request that creates or changes something
with one drawn from a small grammar of valid Iceberg changes (names, schemas, partition specs,
sort orders, snapshots with branches and tags, schema evolution, format upgrades, staged
creates, renames, multi-table transactions, views and their versions, scan plans), and a path
that names no plausible object with one of the seeded objects. Names come from the links
(``served_openapi.LINKS``) and are left alone. Negative cases, the fourth positive case and every
other phase keep schemathesis' own hostile data.
"""

from __future__ import annotations

import itertools
import re
import uuid
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st
from schemathesis.generation import GenerationMode
from schemathesis.generation.case import Case
from schemathesis.generation.meta import TestPhase

# the seeded objects (scripts/fuzz_rest_server.py and tests/server/test_openapi_fuzz.py create them)
SEEDED_NAMESPACE = "accounting"
SEEDED_TABLES = ("sales", "t_v1", "t_v2", "t_v3", "t_v4")
SEEDED_VIEW = "v"
# what a drop or rename without a link names instead of a seeded object, so that they stay
MISSING = "missing"
# a path part that names something a steered request could have made
PLAIN = re.compile(r"[a-z][a-z0-9_]*\Z")

NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,9}", fullmatch=True)
PRIMITIVES = (
    "boolean",
    "int",
    "long",
    "float",
    "double",
    "date",
    "time",
    "timestamp",
    "timestamptz",
    "string",
    "uuid",
    "binary",
    "decimal(9,2)",
    "fixed[4]",
)
TRANSFORMS = ("identity", "bucket[4]", "truncate[10]", "void")
REFS = ("main", "b1", "t1")
PROPERTY_KEYS = ("owner", "comment", "write.format.default", "k")


def _field(field_id: int, name: str, type_: str, required: bool) -> dict[str, Any]:
    return {"id": field_id, "name": name, "type": type_, "required": required}


@st.composite
def schemas(draw: st.DrawFn, first_new_id: int = 2) -> dict[str, Any]:
    """A struct schema: ``id long`` (field 1, which specs and orders use) and a few more columns."""
    extra = draw(
        st.lists(
            st.tuples(NAMES.filter(lambda n: n != "id"), st.sampled_from(PRIMITIVES), st.booleans()),
            max_size=3,
            unique_by=lambda t: t[0],
        )
    )
    fields = [_field(1, "id", "long", True)]
    fields += [_field(first_new_id + i, n, t, r) for i, (n, t, r) in enumerate(extra)]
    return {"type": "struct", "schema-id": 0, "fields": fields}


@st.composite
def partition_specs(draw: st.DrawFn) -> dict[str, Any]:
    transform = draw(st.sampled_from(TRANSFORMS))
    field_id = draw(st.integers(1000, 1003))
    return {
        "fields": [{"source-id": 1, "field-id": field_id, "name": f"id_{field_id}", "transform": transform}]
    }


@st.composite
def sort_orders(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "order-id": draw(st.integers(1, 3)),
        "fields": [
            {
                "source-id": 1,
                "transform": draw(st.sampled_from(("identity", "bucket[4]"))),
                "direction": draw(st.sampled_from(("asc", "desc"))),
                "null-order": draw(st.sampled_from(("nulls-first", "nulls-last"))),
            }
        ],
    }


@st.composite
def create_table_bodies(draw: st.DrawFn) -> dict[str, Any]:
    body: dict[str, Any] = {"name": draw(NAMES), "schema": draw(schemas())}
    if draw(st.booleans()):
        body["partition-spec"] = draw(partition_specs())
    if draw(st.booleans()):
        body["write-order"] = draw(sort_orders())
    version = draw(st.sampled_from((None, "1", "2", "3", "4")))
    body["properties"] = {"format-version": version} if version else {}
    # a staged table exists only once a commit with assert-create makes it: one in five
    body["stage-create"] = draw(st.integers(0, 4)) == 0
    return body


@st.composite
def snapshot_updates(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A snapshot (its manifest list is never read by a commit) and a branch or tag on it."""
    snapshot_id = draw(st.integers(1, 2**62))
    snapshot = {
        "snapshot-id": snapshot_id,
        "timestamp-ms": draw(st.integers(1_700_000_000_000, 1_800_000_000_000)),
        "manifest-list": f"snap-{snapshot_id}.avro",
        "sequence-number": draw(st.integers(1, 1000)),
        "summary": {"operation": "append"},
    }
    ref = draw(st.sampled_from(REFS))
    ref_type = "branch" if ref != "t1" else "tag"
    return [
        {"action": "add-snapshot", "snapshot": snapshot},
        {"action": "set-snapshot-ref", "ref-name": ref, "type": ref_type, "snapshot-id": snapshot_id},
    ]


@st.composite
def update_groups(draw: st.DrawFn) -> list[dict[str, Any]]:
    """One change a client would send, as the list of update actions that make it."""
    kind = draw(
        st.sampled_from(
            ("set-properties", "remove-properties", "schema", "spec", "order", "snapshot", "unref", "upgrade")
        )
    )
    key = draw(st.sampled_from(PROPERTY_KEYS))
    if kind == "set-properties":
        return [{"action": "set-properties", "updates": {key: draw(NAMES)}}]
    if kind == "remove-properties":
        return [{"action": "remove-properties", "removals": [key]}]
    if kind == "schema":
        schema = draw(schemas(first_new_id=draw(st.integers(2, 12))))
        return [{"action": "add-schema", "schema": schema}, {"action": "set-current-schema", "schema-id": -1}]
    if kind == "spec":
        return [
            {"action": "add-spec", "spec": draw(partition_specs())},
            {"action": "set-default-spec", "spec-id": -1},
        ]
    if kind == "order":
        return [
            {"action": "add-sort-order", "sort-order": draw(sort_orders())},
            {"action": "set-default-sort-order", "sort-order-id": -1},
        ]
    if kind == "snapshot":
        return draw(snapshot_updates())
    if kind == "unref":
        return [{"action": "remove-snapshot-ref", "ref-name": draw(st.sampled_from(REFS))}]
    return [{"action": "upgrade-format-version", "format-version": draw(st.integers(1, 4))}]


UPDATES = st.lists(update_groups(), min_size=1, max_size=3).map(lambda groups: [u for g in groups for u in g])


@st.composite
def commit_bodies(draw: st.DrawFn) -> dict[str, Any]:
    return {"requirements": [], "updates": draw(UPDATES)}


def _view_version(version_id: int, namespace: str, sql: str) -> dict[str, Any]:
    return {
        "version-id": version_id,
        "schema-id": 0,
        "timestamp-ms": 1_700_000_000_000,
        "summary": {"engine-name": "fuzz"},
        "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}],
        "default-namespace": [namespace],
    }


SQL = st.sampled_from(("SELECT id FROM sales", "SELECT 1 AS id", "SELECT id FROM t_v2 WHERE id > 3"))
VIEW_SCHEMA = {"type": "struct", "schema-id": 0, "fields": [_field(1, "id", "long", False)]}


@st.composite
def create_view_bodies(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "name": draw(NAMES),
        "schema": VIEW_SCHEMA,
        "view-version": _view_version(1, SEEDED_NAMESPACE, draw(SQL)),
        "properties": draw(st.dictionaries(st.sampled_from(PROPERTY_KEYS), NAMES, max_size=2)),
    }


@st.composite
def replace_view_bodies(draw: st.DrawFn) -> dict[str, Any]:
    updates: list[dict[str, Any]]
    if draw(st.booleans()):
        updates = [
            {"action": "set-properties", "updates": {draw(st.sampled_from(PROPERTY_KEYS)): draw(NAMES)}}
        ]
    else:
        version = _view_version(draw(st.integers(2, 5)), SEEDED_NAMESPACE, draw(SQL))
        updates = [
            {"action": "add-view-version", "view-version": version},
            {"action": "set-current-view-version", "view-version-id": -1},
        ]
    return {"requirements": [], "updates": updates}


PLAN_BODIES = st.sampled_from(
    (
        {},
        {"select": ["id"]},
        {"filter": {"type": "gt", "term": "id", "value": 3}},
        {"case-sensitive": False, "use-snapshot-schema": True},
        {"start-snapshot-id": 1, "end-snapshot-id": 2},
    )
)


def _plain_identifier(identifier: Any) -> bool:
    """Whether ``identifier`` (a TableIdentifier) could name a table a steered request made."""
    if not isinstance(identifier, dict) or not isinstance(identifier.get("namespace"), list):
        return False
    parts = [*identifier["namespace"], identifier.get("name")]
    return len(parts) > 1 and all(isinstance(p, str) and PLAIN.match(p) for p in parts)


SEEDED_IDENTIFIERS = st.builds(
    lambda name: {"namespace": [SEEDED_NAMESPACE], "name": name}, st.sampled_from(SEEDED_TABLES)
)


@st.composite
def rename_bodies(draw: st.DrawFn, source: Any) -> dict[str, Any]:
    if not _plain_identifier(source):  # a seeded table renamed away would end many later commits
        source = {"namespace": [SEEDED_NAMESPACE], "name": MISSING}
    return {"source": source, "destination": {"namespace": source["namespace"], "name": draw(NAMES)}}


@st.composite
def transaction_bodies(draw: st.DrawFn, changes: Any) -> dict[str, Any]:
    listed = changes if isinstance(changes, list) else []
    identifiers = [
        c["identifier"] for c in listed if isinstance(c, dict) and _plain_identifier(c.get("identifier"))
    ]
    if not identifiers or draw(st.booleans()):  # a second table in the same transaction
        identifiers.append(draw(SEEDED_IDENTIFIERS))
    return {
        "table-changes": [
            {"identifier": i, "requirements": [], "updates": draw(UPDATES)} for i in identifiers
        ]
    }


def _body_for(label: str, body: Any) -> st.SearchStrategy[Any] | None:
    """The steered body of an operation (None: the operation's body is left as generated)."""
    fixed: dict[str, Callable[[], st.SearchStrategy[Any]]] = {
        "POST /v1/{prefix}/namespaces": lambda: st.builds(
            lambda name, props: {"namespace": [name], "properties": props},
            NAMES,
            st.dictionaries(st.sampled_from(PROPERTY_KEYS), NAMES, max_size=2),
        ),
        "POST /v1/{prefix}/namespaces/{namespace}/tables": create_table_bodies,
        "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}": commit_bodies,
        "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan": lambda: PLAN_BODIES,
        "POST /v1/{prefix}/namespaces/{namespace}/views": create_view_bodies,
        "POST /v1/{prefix}/namespaces/{namespace}/views/{view}": replace_view_bodies,
        "POST /v1/{prefix}/tables/rename": lambda: rename_bodies(
            body.get("source") if isinstance(body, dict) else None
        ),
        "POST /v1/{prefix}/transactions/commit": lambda: transaction_bodies(
            body.get("table-changes") if isinstance(body, dict) else None
        ),
    }
    make = fixed.get(label)
    return make() if make is not None else None


_SERIAL = itertools.count()


def _made_unique(body: Any) -> Any:
    """``body`` with the name it creates made unique in this process.

    A name drawn twice would make the second create answer 409; worse, Hypothesis replays the
    prefix of a scenario it ran before, and a step that succeeded then and fails now (the object
    is there already) empties a bundle and fails the run as a ``FlakyStrategyDefinition``. Fresh
    names make every replay meet the catalog the first run met.
    """
    if not isinstance(body, dict):
        return body
    serial = next(_SERIAL)
    if isinstance(body.get("name"), str):  # a table or view
        return {**body, "name": f"{body['name']}_{serial}"}
    if isinstance(body.get("namespace"), list) and body["namespace"]:
        return {**body, "namespace": [f"{body['namespace'][0]}_{serial}", *body["namespace"][1:]]}
    destination = body.get("destination")
    if isinstance(destination, dict) and isinstance(destination.get("name"), str):
        return {**body, "destination": {**destination, "name": f"{destination['name']}_{serial}"}}
    return body


def _steered(case: Case, seeded: bool) -> st.SearchStrategy[Case]:
    body = _body_for(case.operation.label, case.body)
    path: dict[str, Any] = {k: st.just(v) for k, v in (case.path_parameters or {}).items()}
    dropping = case.method == "DELETE" or not seeded
    for name, fallback in (
        ("namespace", st.just(SEEDED_NAMESPACE if seeded else MISSING)),
        ("table", st.just(MISSING) if dropping else st.sampled_from(SEEDED_TABLES)),
        ("view", st.just(MISSING if dropping else SEEDED_VIEW)),
    ):
        if name in (case.path_parameters or {}) and not PLAIN.match(str(case.path_parameters[name])):
            path[name] = fallback

    def build(values: tuple[dict[str, Any], Any]) -> Case:
        new_path, new_body = values
        steered = case.derive(keep_auth=True)
        steered.path_parameters = new_path
        if body is not None:
            steered.body = _made_unique(new_body)
        if "Idempotency-Key" in steered.headers:
            # schemathesis draws keys from a small space and Hypothesis favours the simplest: a
            # reused key is (rightly) refused. A fresh one changes no answer but that refusal.
            steered.headers["Idempotency-Key"] = str(uuid.uuid4())
        return steered

    return st.tuples(st.fixed_dictionaries(path), body if body is not None else st.none()).map(build)


def steer(context: Any, case: Case) -> st.SearchStrategy[Case]:
    """``flatmap_case`` hook: a positive stateful case, three times in four, made one the server
    should accept (see the module docstring); every other case as it was generated."""
    return _steer(case, seeded=True)


def steer_fresh(context: Any, case: Case) -> st.SearchStrategy[Case]:
    """``steer`` without the seeded objects: a path that names nothing plausible names a missing
    object instead. For a run that must replay exactly (the suite's), where a change to a shared
    seeded table by one scenario would change the answers a later replay gets."""
    return _steer(case, seeded=False)


def _steer(case: Case, seeded: bool) -> st.SearchStrategy[Case]:
    meta = case.meta
    if (
        meta is None
        or meta.phase.name != TestPhase.STATEFUL
        or meta.generation.mode != GenerationMode.POSITIVE
    ):
        return st.just(case)
    return st.integers(0, 3).flatmap(lambda k: st.just(case) if k == 0 else _steered(case, seeded))
