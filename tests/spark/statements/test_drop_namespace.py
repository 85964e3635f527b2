"""DROP NAMESPACE through icefloe.spark.sql: RESTRICT refuses anything non-empty and drops nothing;
CASCADE drops child namespaces, views and tables depth first, keeps table files, and names what it
had dropped when it fails midway."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import NamespaceNotEmpty, NoSuchNamespace
from icefloe.spark import sql
from icefloe.spark.statements.errors import CascadeIncomplete


def _tree(spark: Any, top: str) -> None:
    """``top`` with a table and a view, a child with a table, a grandchild with a view."""
    sql(spark, f"CREATE NAMESPACE icefloe.{top}")
    sql(spark, f"CREATE NAMESPACE icefloe.{top}.kid")
    sql(spark, f"CREATE NAMESPACE icefloe.{top}.kid.grand")
    sql(spark, f"CREATE TABLE icefloe.{top}.t (id INT) USING iceberg")
    sql(spark, f"INSERT INTO icefloe.{top}.t VALUES (1)")
    sql(spark, f"CREATE VIEW icefloe.{top}.v AS SELECT id FROM icefloe.{top}.t")
    sql(spark, f"CREATE TABLE icefloe.{top}.kid.u (id INT) USING iceberg")
    sql(spark, f"CREATE VIEW icefloe.{top}.kid.grand.w AS SELECT 1 AS one")


def _everything(catalog: Catalog, top: str) -> set[str]:
    from icefloe.catalog.sql_views import SqlViews

    views = SqlViews(catalog)  # type: ignore[arg-type]
    out: set[str] = set()
    todo = [(top,)]
    while todo:
        ns = todo.pop()
        if not catalog.namespace_exists(ns):
            continue
        out.add(".".join(ns))
        out.update(".".join(t) for t in catalog.list_tables(ns))
        out.update(".".join(v) for v in views.names(ns))
        todo.extend(tuple(c) for c in catalog.list_namespaces(ns))
    return out


FULL = {
    "dn_{0}",
    "dn_{0}.t",
    "dn_{0}.v",
    "dn_{0}.kid",
    "dn_{0}.kid.u",
    "dn_{0}.kid.grand",
    "dn_{0}.kid.grand.w",
}


def test_without_cascade_anything_inside_refuses_and_nothing_is_dropped(spark: Any, catalog: Catalog) -> None:
    top = "dn_restrict"
    _tree(spark, top)
    full = {n.format("restrict") for n in FULL}
    assert _everything(catalog, top) == full
    with pytest.raises(NamespaceNotEmpty, match=r"\[SCHEMA_NOT_EMPTY\] Cannot drop a schema `dn_restrict`"):
        sql(spark, f"DROP NAMESPACE icefloe.{top}")
    with pytest.raises(NamespaceNotEmpty, match=r"\(view dn_restrict\.kid\.grand\.w\)"):
        sql(spark, f"DROP NAMESPACE icefloe.{top}.kid.grand")  # a view alone is enough
    sql(spark, f"DROP VIEW icefloe.{top}.kid.grand.w")
    with pytest.raises(
        NamespaceNotEmpty, match=r"\(namespace dn_restrict\.kid\.grand, table dn_restrict\.kid\.u\)"
    ):
        sql(spark, f"DROP DATABASE icefloe.{top}.kid RESTRICT")
    assert _everything(catalog, top) == full - {f"{top}.kid.grand.w"}
    sql(spark, f"DROP NAMESPACE icefloe.{top}.kid.grand")  # empty now
    assert not catalog.namespace_exists((top, "kid", "grand"))
    sql(spark, f"DROP NAMESPACE icefloe.{top} CASCADE")
    assert _everything(catalog, top) == set()


def test_cascade_drops_children_views_and_tables_but_keeps_table_files(spark: Any, catalog: Catalog) -> None:
    top = "dn_cascade"
    _tree(spark, top)
    metadata = Path(catalog.load_table(f"{top}.t").metadata_location.removeprefix("file:"))  # type: ignore[union-attr]
    data = list((metadata.parent.parent / "data").rglob("*.parquet"))
    assert len(data) == 1

    sql(spark, f"DROP NAMESPACE icefloe.{top} CASCADE")

    assert _everything(catalog, top) == set()
    assert not catalog.namespace_exists((top,)) and not catalog.namespace_exists((top, "kid"))
    assert metadata.exists() and all(p.exists() for p in data)  # DROP TABLE without PURGE keeps files
    sql(spark, f"DROP NAMESPACE IF EXISTS icefloe.{top} CASCADE")
    with pytest.raises(NoSuchNamespace):
        sql(spark, f"DROP NAMESPACE icefloe.{top} CASCADE")


def test_cascade_failing_midway_names_what_it_dropped(
    spark: Any, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    top = "dn_partial"
    _tree(spark, top)
    drop_table = catalog.drop_table

    def refuse_t(identifier: Any, purge: bool = False) -> None:
        if tuple(identifier) == (top, "t"):
            raise PermissionError("catalog refused the drop")
        drop_table(identifier, purge=purge)

    monkeypatch.setattr(catalog, "drop_table", refuse_t)
    with pytest.raises(CascadeIncomplete) as info:
        sql(spark, f"DROP NAMESPACE icefloe.{top} CASCADE")
    done = [
        f"view {top}.kid.grand.w",
        f"namespace {top}.kid.grand",
        f"table {top}.kid.u",
        f"namespace {top}.kid",
        f"view {top}.v",
    ]
    assert info.value.dropped == done
    assert str(info.value) == (
        f"DROP NAMESPACE {top} CASCADE failed: catalog refused the drop; already dropped: {', '.join(done)}"
    )
    assert isinstance(info.value.__cause__, PermissionError)
    assert _everything(catalog, top) == {top, f"{top}.t"}
    monkeypatch.undo()
    sql(spark, f"DROP NAMESPACE icefloe.{top} CASCADE")
    assert _everything(catalog, top) == set()
