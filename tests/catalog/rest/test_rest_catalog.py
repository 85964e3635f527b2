"""icefloe's REST client against the real server: retries, conflicts, lost replies, OAuth2, v4 commits."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog import load_catalog
from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.rest import catalog as rest_catalog_module
from icefloe.catalog.rest.auth import ClientCredentialsAuth
from icefloe.catalog.rest.http import ServiceError
from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import AccessDenied, CommitStateUnknown
from icefloe.server import Grants, OAuthClient, RunningServer, ServerConfig, start_server
from icefloe.spec.json_reply import load_reply
from icefloe.spec.schema import Schema
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import LongType, NestedField, StringType
from tests.support.rest_faults import Fault, FaultInjector

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType()))
COMMIT_SUFFIX = "/tables/t"


def _rows(n: int, start: int = 0) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "s": [f"r{i}" for i in range(n)]})


@pytest.fixture
def backing(sqlite_uri: str, warehouse: Path) -> Iterator[SqlCatalog]:
    cat = SqlCatalog("backing", uri=sqlite_uri, warehouse=str(warehouse))
    yield cat
    cat.close()


@pytest.fixture
def faults() -> FaultInjector:
    return FaultInjector()


@pytest.fixture
def server(backing: SqlCatalog, faults: FaultInjector) -> Iterator[RunningServer]:
    with start_server(ServerConfig(backing), wrap=faults.wrap) as running:
        yield running


@pytest.fixture
def client(server: RunningServer) -> Iterator[RestCatalog]:
    cat = load_catalog("c", type="rest", uri=server.uri)
    assert isinstance(cat, RestCatalog)
    yield cat
    cat.close()


def _table(client: RestCatalog, version: int = 2) -> None:
    client.create_namespace("db")
    client.create_table("db.t", SCHEMA, properties={"format-version": str(version)})


def test_throttled_requests_are_retried(client: RestCatalog, faults: FaultInjector) -> None:
    """503 twice then 429 once on a load: the client backs off and the fourth try succeeds."""
    _table(client)
    rule_503 = faults.add(Fault("GET", COMMIT_SUFFIX, times=2, status=503))
    rule_429 = faults.add(Fault("GET", COMMIT_SUFFIX, times=1, status=429))
    table = client.load_table("db.t")
    assert table.identifier == ("db", "t")
    assert (rule_503.fired, rule_429.fired) == (2, 1)


def test_a_throttled_commit_is_sent_again_and_lands_once(
    client: RestCatalog, backing: SqlCatalog, faults: FaultInjector
) -> None:
    """429 then 503 on the commit itself (refused before the server applied it): the same request
    is sent again after the backoff and the append lands exactly once."""
    _table(client)
    table = client.load_table("db.t")
    rule_429 = faults.add(Fault("POST", COMMIT_SUFFIX, times=1, status=429))
    rule_503 = faults.add(Fault("POST", COMMIT_SUFFIX, times=1, status=503))
    table.append(_rows(3))
    assert (rule_429.fired, rule_503.fired) == (1, 1)
    direct = backing.load_table("db.t")
    assert len(direct.snapshots()) == 1
    assert direct.scan().to_arrow().num_rows == 3


def test_conflict_is_retried_on_fresh_metadata(
    client: RestCatalog, backing: SqlCatalog, faults: FaultInjector
) -> None:
    """Another writer commits just before our delete reaches the server: 409, reload, re-apply."""
    _table(client)
    client.load_table("db.t").append(_rows(3))
    race = faults.add(
        Fault("POST", COMMIT_SUFFIX, before_call=lambda: backing.load_table("db.t").append(_rows(2, 100)))
    )
    client.load_table("db.t").delete("id = 1")
    assert race.fired == 1
    posts = [p for m, p in faults.seen if m == "POST" and p.endswith(COMMIT_SUFFIX)]
    assert len(posts) == 3  # the append, the conflicting delete and its retry
    ids = sorted(backing.load_table("db.t").scan().to_arrow().column("id").to_pylist())
    assert ids == [0, 2, 100, 101]


def test_lost_reply_after_commit_is_reconciled(
    client: RestCatalog, backing: SqlCatalog, faults: FaultInjector
) -> None:
    """The commit lands but the reply is a 500: the client finds its snapshot and reports success once."""
    _table(client)
    faults.add(Fault("POST", COMMIT_SUFFIX, after=500))
    table = client.load_table("db.t")
    table.append(_rows(4))
    direct = backing.load_table("db.t")
    assert len(direct.snapshots()) == 1
    assert direct.scan().to_arrow().num_rows == 4
    assert table.current_snapshot() is not None
    assert table.current_snapshot().snapshot_id == direct.current_snapshot().snapshot_id  # type: ignore[union-attr]


def test_failure_before_commit_is_unknown(
    client: RestCatalog, backing: SqlCatalog, faults: FaultInjector
) -> None:
    """A 502 for a commit that never reached the catalog: CommitStateUnknown, nothing committed."""
    _table(client)
    faults.add(Fault("POST", COMMIT_SUFFIX, status=502))
    with pytest.raises(CommitStateUnknown):
        client.load_table("db.t").append(_rows(1))
    assert backing.load_table("db.t").snapshots() == []


def test_v4_append_writes_one_metadata_file_on_the_client(
    client: RestCatalog, backing: SqlCatalog, warehouse: Path
) -> None:
    """A small v4 append through REST: the client writes the data file and one root manifest; the
    server writes the metadata file."""
    _table(client, version=4)
    table = client.load_table("db.t")
    table_dir = Path(table.location().removeprefix("file://"))
    before = {p for p in table_dir.rglob("*") if p.is_file()}
    table.append(_rows(5))
    new = sorted(
        p.relative_to(table_dir).as_posix() for p in table_dir.rglob("*") if p.is_file() and p not in before
    )
    data = [p for p in new if p.startswith("data/")]
    metadata_json = [p for p in new if p.endswith(".metadata.json")]
    others = [p for p in new if p not in data and p not in metadata_json]
    assert len(data) == 1 and len(metadata_json) == 1
    assert len(others) == 1 and others[0].startswith("metadata/"), new  # the root manifest only
    direct = backing.load_table("db.t")
    assert direct.format_version == 4
    assert direct.current_snapshot().root_manifest.endswith(others[0])  # type: ignore[union-attr]
    assert direct.scan().to_arrow().num_rows == 5


def test_oauth2_client_credentials_and_refresh(backing: SqlCatalog) -> None:
    """Client credentials give a token; when the server forgets it (401) the client fetches another."""
    config = ServerConfig(backing, clients={"app": OAuthClient("s3cret", Grants())})
    with start_server(config) as running:
        with pytest.raises(AccessDenied):
            RestCatalog("bad", uri=running.uri, credential="app:wrong")
        client = RestCatalog("c", uri=running.uri, credential="app:s3cret")
        client.create_namespace("db")
        auth = client.http.auth
        assert isinstance(auth, ClientCredentialsAuth) and auth.fetches == 1
        running.app.state.icefloe.tokens._issued.clear()  # the server restarts and forgets tokens
        assert client.list_namespaces() == [("db",)]
        assert auth.fetches == 2
        client.close()


@pytest.mark.parametrize("version", [2, 3, 4])
def test_stale_append_is_rebased_by_the_server_without_a_retry(
    server: RunningServer, backing: SqlCatalog, faults: FaultInjector, version: int
) -> None:
    """A fast append built on an old head is re-applied on the new head by the server (one POST,
    no 409), keeping the client's snapshot id; v3 row ids are assigned after the other writer's."""
    writer_a = RestCatalog("a", uri=server.uri, **{"rest.commit.trust-loaded-metadata-s": "3600"})
    _table(writer_a, version)
    stale = writer_a.load_table("db.t")
    backing.load_table("db.t").append(_rows(2, 100))  # another writer moves main
    stale.append(_rows(3))
    posts = [p for m, p in faults.seen if m == "POST" and p.endswith(COMMIT_SUFFIX)]
    assert len(posts) == 1
    assert faults.app.state.icefloe.coalescer.rebased == 1
    direct = backing.load_table("db.t")
    assert [s.snapshot_id for s in direct.snapshots()][-1] == stale.current_snapshot().snapshot_id  # type: ignore[union-attr]
    assert sorted(direct.scan().to_arrow().column("id").to_pylist()) == [0, 1, 2, 100, 101]
    if version >= 3:
        assert direct.metadata.next_row_id == 5
        assert direct.current_snapshot().first_row_id == 2  # type: ignore[union-attr]
    writer_a.close()


@pytest.mark.parametrize("via", ["load", "create", "append"])
def test_refresh_shows_another_writers_commit_made_a_moment_after_this_clients_load(
    server: RunningServer, backing: SqlCatalog, via: str
) -> None:
    """A commit may start from the state this client saw a moment ago (the server's requirements
    reject a stale base), but ``refresh`` must never show that state once another writer moved on:
    the main job (a Spark job committing through its own catalog) read 0 rows here."""
    client = RestCatalog("a", uri=server.uri, **{"rest.commit.trust-loaded-metadata-s": "3600"})
    _table(client)
    ident = "db.fresh" if via == "create" else "db.t"
    table = client.create_table(ident, SCHEMA) if via == "create" else client.load_table(ident)
    if via == "append":
        table.append(_rows(2))  # this client's own commit is the state it remembers
    seen = table.current_snapshot()
    other = backing.load_table(ident)
    other.append(_rows(3, 100))  # another writer commits within the trusted moment
    table.refresh()
    assert table.current_snapshot().snapshot_id == other.current_snapshot().snapshot_id  # type: ignore[union-attr]
    assert table.current_snapshot() != seen
    expected = [0, 1, 100, 101, 102] if via == "append" else [100, 101, 102]
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == expected
    table.append(_rows(1, 200))  # and a commit after the refresh lands on the other writer's
    assert sorted(backing.load_table(ident).scan().to_arrow().column("id").to_pylist()) == [*expected, 200]
    client.close()


@pytest.mark.parametrize("version", [2, 4])
def test_a_rebased_reply_keeps_the_clients_history_and_reads_as_the_committed_file(
    server: RunningServer, backing: SqlCatalog, version: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Appends made on an old head are answered rebased (the others' snapshots before the client's):
    the client takes the snapshots it held from the text it holds, unparsed, and ends with exactly
    the metadata the server committed."""
    cuts: list[dict[str, int]] = []

    def recording(data: bytes, key: str, known: TableMetadata | None) -> tuple[Any, dict[str, int]]:
        doc, verbatim = load_reply(data, key, known)
        cuts.append(verbatim)
        return doc, verbatim

    monkeypatch.setattr(rest_catalog_module, "load_reply", recording)
    writer_a = RestCatalog("a", uri=server.uri, **{"rest.commit.trust-loaded-metadata-s": "3600"})
    _table(writer_a, version)
    stale = writer_a.load_table("db.t")
    for i in range(3):
        stale.append(_rows(1, i))
    assert cuts[1:] == [{"snapshots": n, "snapshot-log": n} for n in (2, 3)]  # answered as proposed
    for round_ in range(2):
        held = stale.metadata.snapshots
        backing.load_table("db.t").append(_rows(2, 100 + 10 * round_))  # another writer moves main
        stale.append(_rows(1, 10 + round_))
        assert cuts[-1] == {"snapshots": len(held), "snapshot-log": len(held)}
        assert all(a is b for a, b in zip(stale.metadata.snapshots, held, strict=False))
        assert len(stale.metadata.snapshots) == len(held) + 2
        assert stale.metadata == backing.load_table("db.t").metadata
    assert len(stale.scan().to_arrow()) == 3 + 2 * 3
    writer_a.close()


def test_concurrent_appenders_lose_nothing(server: RunningServer, backing: SqlCatalog) -> None:
    """Eight icefloe clients append three times each to one v4 table through the coalescing server."""
    import threading

    setup = RestCatalog("s", uri=server.uri)
    _table(setup, 4)
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        cat = RestCatalog(f"w{worker}", uri=server.uri)
        try:
            table = cat.load_table("db.t")
            for i in range(3):
                table.append(_rows(1, worker * 10 + i))
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            cat.close()

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    direct = backing.load_table("db.t")
    assert len(direct.snapshots()) == 24
    assert sorted(direct.scan().to_arrow().column("id").to_pylist()) == sorted(
        w * 10 + i for w in range(8) for i in range(3)
    )
    setup.close()


def test_multi_table_transaction_is_all_or_nothing(client: RestCatalog, backing: SqlCatalog) -> None:
    """Two tables change together; when one base is stale, neither changes."""
    from icefloe.errors import CommitConflict
    from icefloe.spec.updates import SetProperties, apply_updates

    _table(client)
    client.create_table("db.u", SCHEMA)
    t, u = client.load_table("db.t"), client.load_table("db.u")
    client.commit_tables(
        [
            ("db.t", t.metadata, apply_updates(t.metadata, [SetProperties({"k": "1"})])),
            ("db.u", u.metadata, apply_updates(u.metadata, [SetProperties({"k": "1"})])),
        ]
    )
    assert backing.load_table("db.t").properties == {"k": "1"}
    assert backing.load_table("db.u").properties == {"k": "1"}
    t2, u2 = client.load_table("db.t"), client.load_table("db.u")
    backing.load_table("db.u").append(_rows(1))  # u's base is now stale
    fresh_t = client.load_table("db.t")
    with pytest.raises(CommitConflict):
        client.commit_tables(
            [
                ("db.t", fresh_t.metadata, apply_updates(fresh_t.metadata, [SetProperties({"k": "2"})])),
                ("db.u", u2.metadata, _append_snapshot_of(backing, "db.u", u2.metadata)),
            ]
        )
    assert backing.load_table("db.t").properties == {"k": "1"}
    assert backing.load_table("db.u").properties == {"k": "1"}
    assert t2.properties == {"k": "1"}


def _append_snapshot_of(backing: SqlCatalog, identifier: str, base: TableMetadata) -> TableMetadata:
    """Metadata that moves main from ``base``'s head to the table's newest snapshot (stale base)."""
    from icefloe.spec.snapshots import RefType
    from icefloe.spec.updates import AddSnapshot, SetSnapshotRef, apply_updates

    newest = backing.load_table(identifier).current_snapshot()
    assert newest is not None
    return apply_updates(
        base, [AddSnapshot(newest), SetSnapshotRef("main", newest.snapshot_id, RefType.BRANCH)]
    )


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("bypassed", [False, True], ids=["through-proxy", "no-proxy"])
def test_the_environments_proxy_settings_are_honoured(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch, bypassed: bool
) -> None:
    """Read once per session, the environment's proxies still apply (and NO_PROXY still exempts)."""
    for name in ("no_proxy", "NO_PROXY", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{_closed_port()}")
    if bypassed:
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        cat = RestCatalog("c", uri=server.uri, **{"rest.retry.attempts": "1"})
        cat.create_namespace("db")
        assert cat.list_namespaces() == [("db",)]
        cat.close()
    else:
        with pytest.raises(ServiceError, match=r"(?i)proxy"):
            RestCatalog("c", uri=server.uri, **{"rest.retry.attempts": "1"})
