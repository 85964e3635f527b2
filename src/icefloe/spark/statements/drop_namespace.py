"""``DROP NAMESPACE [IF EXISTS] ns [RESTRICT | CASCADE]`` on icefloe's catalog.

Without ``CASCADE`` a namespace holding anything (tables, views or child namespaces) is refused
before anything is dropped, with Spark's ``SCHEMA_NOT_EMPTY`` wording. With ``CASCADE`` the
namespace goes with everything below it, depth first: each child namespace's contents, then its
views, its tables, and the namespace itself. Tables are dropped as ``DROP TABLE`` without
``PURGE`` drops them (Iceberg's Spark catalog drops with ``purge=false``): their data and metadata
files stay, so a mistaken cascade can be undone with ``register_table``; ``DROP TABLE ... PURGE``
removes files. Catalogs have no transaction across objects, so a failure midway leaves what was
already dropped dropped: ``CascadeIncomplete`` then lists those objects in order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from icefloe.errors import NamespaceNotEmpty, NoSuchNamespace
from icefloe.spark.statements.errors import CascadeIncomplete
from icefloe.spark.statements.names import SqlContext
from icefloe.spark.statements.view_expansion import view_store

if TYPE_CHECKING:
    from icefloe.catalog.views import ViewStore


def drop_namespace(ctx: SqlContext, ns: tuple[str, ...], cascade: bool, if_exists: bool) -> None:
    """Drop ``ns`` (and, with ``cascade``, everything below it); see the module docstring."""
    name = ".".join(ns)
    if not ctx.catalog.namespace_exists(ns):
        if if_exists:
            return
        raise NoSuchNamespace(f"namespace {name!r} does not exist")
    store = view_store(ctx)
    if not cascade:
        held = _contents(ctx, store, ns)
        if held:
            raise NamespaceNotEmpty(
                f"[SCHEMA_NOT_EMPTY] Cannot drop a schema `{name}` because it contains objects "
                f"({', '.join(held)}). Use DROP SCHEMA ... CASCADE to drop the schema and all its objects."
            )
        ctx.catalog.drop_namespace(ns)
        return
    dropped: list[str] = []
    try:
        _drop_tree(ctx, store, ns, dropped)
    except Exception as exc:
        done = ", ".join(dropped) if dropped else "nothing"
        raise CascadeIncomplete(
            f"DROP NAMESPACE {name} CASCADE failed: {exc}; already dropped: {done}", dropped
        ) from exc


def _contents(ctx: SqlContext, store: ViewStore | None, ns: tuple[str, ...]) -> list[str]:
    """What ``ns`` holds directly, as ``kind name`` texts (tables, views, child namespaces)."""
    held = [f"namespace {'.'.join(c)}" for c in ctx.catalog.list_namespaces(ns)]
    held += [f"table {'.'.join(t)}" for t in ctx.catalog.list_tables(ns)]
    if store is not None:
        held += [f"view {'.'.join(v)}" for v in store.names(ns)]
    return held


def _drop_tree(ctx: SqlContext, store: ViewStore | None, ns: tuple[str, ...], dropped: list[str]) -> None:
    """Drop ``ns`` after its children, views and tables, recording each object once it is gone."""
    for child in ctx.catalog.list_namespaces(ns):
        _drop_tree(ctx, store, tuple(child), dropped)
    if store is not None:
        for view in store.names(ns):
            store.drop(view)
            dropped.append(f"view {'.'.join(view)}")
    for table in ctx.catalog.list_tables(ns):
        ctx.catalog.drop_table(table, purge=False)
        ctx.forget(tuple(table))
        dropped.append(f"table {'.'.join(table)}")
    ctx.catalog.drop_namespace(ns)
    dropped.append(f"namespace {'.'.join(ns)}")
