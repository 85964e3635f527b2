"""SqlCatalog behaviour, run against SQLite and PostgreSQL."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy import text

from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import (
    AlreadyExists,
    CommitConflict,
    CorruptMetadata,
    NamespaceNotEmpty,
    NoSuchNamespace,
    NoSuchTable,
    NotFound,
    ValidationError,
)
from icefloe.io.fileio import local_path
from icefloe.spec.schema import Schema
from icefloe.spec.table_metadata import TableMetadata


def _local(path: str) -> str:
    return path.removeprefix("file://").removeprefix("file:")


def _metadata_files(table_location: str) -> list[str]:
    directory = Path(_local(table_location)) / "metadata"
    return sorted(p.name for p in directory.glob("*.metadata.json")) if directory.exists() else []


def _with_property(md: TableMetadata, key: str, value: str) -> TableMetadata:
    return md.with_changes(properties={**md.properties, key: value}, last_updated_ms=md.last_updated_ms + 1)


# ---------------------------------------------------------------------- namespaces


def test_namespace_crud(catalog: SqlCatalog) -> None:
    assert catalog.list_namespaces() == []
    catalog.create_namespace("sales", {"owner": "ana"})
    catalog.create_namespace(("sales", "eu"))
    catalog.create_namespace("hr")
    assert catalog.namespace_exists("sales")
    assert catalog.namespace_exists(("sales", "eu"))
    assert not catalog.namespace_exists("nope")
    assert not catalog.namespace_exists("sale")  # no prefix matching
    assert catalog.list_namespaces() == [("hr",), ("sales",)]
    assert catalog.list_namespaces("sales") == [("sales", "eu")]
    assert catalog.list_namespaces(("sales", "eu")) == []
    with pytest.raises(NoSuchNamespace):
        catalog.list_namespaces("nope")
    with pytest.raises(AlreadyExists):
        catalog.create_namespace("sales")

    assert catalog.load_namespace_properties("sales") == {"owner": "ana"}
    assert catalog.load_namespace_properties("hr") == {}  # the "exists" marker is hidden
    summary = catalog.update_namespace_properties("sales", removals={"owner", "ghost"}, updates={"team": "x"})
    assert summary.removed == ["owner"]
    assert summary.missing == ["ghost"]
    assert summary.updated == ["team"]
    assert catalog.load_namespace_properties("sales") == {"team": "x"}
    catalog.update_namespace_properties("sales", updates={"team": "y", "cost": "1"})
    assert catalog.load_namespace_properties("sales") == {"team": "y", "cost": "1"}
    catalog.update_namespace_properties("sales", removals=["team", "cost"])
    assert catalog.load_namespace_properties("sales") == {}
    assert catalog.namespace_exists("sales")  # removing every property keeps the namespace

    with pytest.raises(NamespaceNotEmpty, match="child namespace"):
        catalog.drop_namespace("sales")
    catalog.drop_namespace(("sales", "eu"))
    catalog.drop_namespace("sales")
    assert catalog.list_namespaces() == [("hr",)]
    with pytest.raises(NoSuchNamespace):
        catalog.drop_namespace("sales")
    with pytest.raises(NoSuchNamespace):
        catalog.load_namespace_properties("sales")
    with pytest.raises(NoSuchNamespace):
        catalog.update_namespace_properties("sales", updates={"a": "b"})


def test_namespace_property_validation(catalog: SqlCatalog) -> None:
    catalog.create_namespace("ns")
    with pytest.raises(ValidationError, match="both removed and updated"):
        catalog.update_namespace_properties("ns", removals={"a"}, updates={"a": "1"})
    with pytest.raises(ValidationError, match="reserved"):
        catalog.update_namespace_properties("ns", updates={"exists": "false"})
    with pytest.raises(ValidationError, match="reserved"):
        catalog.create_namespace("other", {"exists": "yes"})
    with pytest.raises(ValidationError, match="longer than"):
        catalog.update_namespace_properties("ns", updates={"big": "x" * 2000})
    assert not catalog.namespace_exists("other")


def test_namespace_like_wildcards_are_literal(catalog: SqlCatalog) -> None:
    catalog.create_namespace("a_b")
    catalog.create_namespace(("a%", "c"))
    assert not catalog.namespace_exists("axb")
    assert catalog.list_namespaces("a_b") == []
    assert catalog.list_namespaces("a%") == [("a%", "c")]


def test_catalogs_with_different_names_are_isolated(catalog: SqlCatalog, warehouse: Path) -> None:
    other = SqlCatalog(catalog.name + "_other", uri=str(catalog.properties["uri"]), warehouse=str(warehouse))
    try:
        catalog.create_namespace("ns")
        assert not other.namespace_exists("ns")
        assert other.list_namespaces() == []
    finally:
        other.close()


@pytest.mark.parametrize("bad", ["", "a..b", ("a/b",), ("x", "y\nz"), ("a.b",)])
def test_bad_namespace_names(catalog: SqlCatalog, bad: object) -> None:
    with pytest.raises(ValidationError, match="invalid namespace"):
        catalog.create_namespace(bad)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- tables


def test_create_load_list_tables(catalog: SqlCatalog, schema: Schema, warehouse: Path) -> None:
    catalog.create_namespace(("db", "inner"))
    table = catalog.create_table("db.inner.events", schema, properties={"k": "v"})
    assert table.identifier == ("db", "inner", "events")
    assert table.metadata.location == f"file://{warehouse}/db/inner/events"
    assert table.metadata.properties == {"k": "v"}
    assert table.metadata.format_version == 2
    assert table.metadata_location.startswith(f"file://{warehouse}/db/inner/events/metadata/00000-")
    assert table.metadata_location.endswith(".metadata.json")
    assert os.path.exists(local_path(table.metadata_location))

    loaded = catalog.load_table(("db", "inner", "events"))
    assert loaded.metadata_location == table.metadata_location
    assert loaded.metadata == table.metadata
    assert loaded.commit_target.catalog is catalog  # type: ignore[attr-defined]
    assert catalog.table_exists("db.inner.events")
    assert not catalog.table_exists("db.inner.nope")
    catalog.create_table("db.inner.alpha", schema)
    assert catalog.list_tables("db.inner") == [("db", "inner", "alpha"), ("db", "inner", "events")]
    assert catalog.list_tables("db") == []
    assert catalog.list_namespaces("db") == [("db", "inner")]

    with pytest.raises(AlreadyExists):
        catalog.create_table("db.inner.events", schema)
    with pytest.raises(NoSuchNamespace):
        catalog.create_table("nope.t", schema)
    with pytest.raises(NoSuchNamespace):
        catalog.list_tables("nope")
    with pytest.raises(NoSuchTable):
        catalog.load_table("db.inner.nope")
    with pytest.raises(NamespaceNotEmpty, match="2 table"):
        catalog.drop_namespace(("db", "inner"))


def test_create_table_options(catalog: SqlCatalog, schema: Schema, warehouse: Path) -> None:
    catalog.create_namespace("ns", {"location": str(warehouse / "nsloc")})
    t1 = catalog.create_table("ns.t1", schema, properties={"format-version": "1"})
    assert t1.metadata.format_version == 1
    assert "format-version" not in t1.metadata.properties
    assert t1.metadata.location == f"file://{warehouse}/nsloc/t1"
    t2 = catalog.create_table("ns.t2", schema, location=str(warehouse / "custom") + "/")
    assert t2.metadata.location == f"file://{warehouse}/custom"
    t3 = catalog.create_table("ns.t3", schema, properties={"write.metadata.path": str(warehouse / "md")})
    assert t3.metadata_location.startswith(str(warehouse / "md") + "/00000-")
    with pytest.raises(ValidationError, match="format-version"):
        catalog.create_table("ns.t4", schema, properties={"format-version": "9"})
    assert not catalog.table_exists("ns.t4")


def test_bad_table_identifiers(catalog: SqlCatalog, schema: Schema) -> None:
    catalog.create_namespace("ns")
    for bad in ["t", "ns..t", ("ns", "a/b"), ("ns", ".."), ("ns", "x\x01")]:
        with pytest.raises(ValidationError, match="invalid table identifier"):
            catalog.create_table(bad, schema)
        with pytest.raises(ValidationError):
            catalog.load_table(bad)
    assert catalog.list_tables("ns") == []


def test_drop_table_keeps_or_purges_files(catalog: SqlCatalog, schema: Schema) -> None:
    catalog.create_namespace("ns")
    kept = catalog.create_table("ns.kept", schema)
    catalog.drop_table("ns.kept")
    assert not catalog.table_exists("ns.kept")
    assert os.path.exists(local_path(kept.metadata_location))
    with pytest.raises(NoSuchTable):
        catalog.drop_table("ns.kept")

    table = catalog.create_table("ns.gone", schema)
    base_md, base_loc = table.metadata, table.metadata_location
    for i in range(3):
        new_md = _with_property(base_md, f"p{i}", "v")
        base_loc = catalog.commit_table("ns.gone", base_loc, new_md, base_metadata=base_md)
        base_md = catalog.load_table("ns.gone").metadata
    assert len(_metadata_files(table.metadata.location)) == 4
    catalog.drop_table("ns.gone", purge=True)
    assert _metadata_files(table.metadata.location) == []
    assert not catalog.table_exists("ns.gone")


def test_rename_table(catalog: SqlCatalog, schema: Schema) -> None:
    catalog.create_namespace("a")
    catalog.create_namespace("b")
    original = catalog.create_table("a.t", schema)
    catalog.create_table("a.other", schema)
    renamed = catalog.rename_table("a.t", "b.t2")
    assert renamed.identifier == ("b", "t2")
    assert renamed.metadata_location == original.metadata_location
    assert catalog.list_tables("a") == [("a", "other")]
    assert catalog.list_tables("b") == [("b", "t2")]
    with pytest.raises(NoSuchTable):
        catalog.rename_table("a.t", "a.t3")
    with pytest.raises(AlreadyExists):
        catalog.rename_table("b.t2", "a.other")
    with pytest.raises(NoSuchNamespace):
        catalog.rename_table("b.t2", "zzz.t")
    assert catalog.rename_table("b.t2", "b.t2").identifier == ("b", "t2")


def test_register_table(catalog: SqlCatalog, schema: Schema, tmp_path: Path) -> None:
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema)
    catalog.drop_table("ns.t")  # forgotten by the catalog, files kept: register it again
    registered = catalog.register_table("ns.copy", table.metadata_location)
    assert registered.metadata == table.metadata
    assert catalog.load_table("ns.copy").metadata_location == table.metadata_location
    with pytest.raises(AlreadyExists):
        catalog.register_table("ns.copy", table.metadata_location)
    with pytest.raises(ValidationError, match=r"belongs to table ns\.copy"):
        catalog.register_table("ns.t", table.metadata_location)
    with pytest.raises(NotFound):
        catalog.register_table("ns.missing", str(tmp_path / "nope.metadata.json"))
    bad = tmp_path / "00000-bad.metadata.json"
    bad.write_text("{not json")
    with pytest.raises(CorruptMetadata, match=r"00000-bad\.metadata\.json"):
        catalog.register_table("ns.bad", str(bad))
    with pytest.raises(NoSuchNamespace):
        catalog.register_table("zzz.t", table.metadata_location)
    assert catalog.list_tables("ns") == [("ns", "copy")]


# ---------------------------------------------------------------------- commits


def test_commit_compare_and_swap(catalog: SqlCatalog, schema: Schema) -> None:
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema)
    base_md, base_loc = table.metadata, table.metadata_location

    first = catalog.commit_table("ns.t", base_loc, _with_property(base_md, "a", "1"), base_metadata=base_md)
    assert "/metadata/00001-" in first
    loaded = catalog.load_table("ns.t")
    assert loaded.metadata_location == first
    assert loaded.metadata.properties == {"a": "1"}
    assert [e.metadata_file for e in loaded.metadata.metadata_log] == [base_loc]
    assert loaded.metadata.metadata_log[0].timestamp_ms == base_md.last_updated_ms

    # A writer still holding the old base loses, and its metadata file is cleaned up.
    with pytest.raises(CommitConflict) as info:
        catalog.commit_table("ns.t", base_loc, _with_property(base_md, "b", "2"), base_metadata=base_md)
    assert info.value.retryable
    assert len(_metadata_files(table.metadata.location)) == 2
    assert catalog.load_table("ns.t").metadata_location == first

    # Without base_metadata the catalog reads the base file to extend the metadata-log.
    second = catalog.commit_table("ns.t", first, _with_property(loaded.metadata, "c", "3"))
    assert "/metadata/00002-" in second
    final = catalog.load_table("ns.t").metadata
    assert [e.metadata_file for e in final.metadata_log] == [base_loc, first]

    # previous_metadata_location is recorded as the JDBC catalog does.
    with catalog.engine.connect() as conn:
        row = conn.execute(
            text(
                "SELECT metadata_location, previous_metadata_location FROM iceberg_tables "
                "WHERE catalog_name = :c AND table_namespace = 'ns' AND table_name = 't'"
            ),
            {"c": catalog.name},
        ).one()
    assert tuple(row) == (second, first)


def test_commit_to_dropped_table(catalog: SqlCatalog, schema: Schema) -> None:
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema)
    catalog.drop_table("ns.t")
    with pytest.raises(NoSuchTable):
        catalog.commit_table(
            "ns.t",
            table.metadata_location,
            _with_property(table.metadata, "a", "1"),
            base_metadata=table.metadata,
        )
    assert len(_metadata_files(table.metadata.location)) == 1


def test_commit_creates_table_when_base_is_none(catalog: SqlCatalog, schema: Schema) -> None:
    catalog.create_namespace("ns")
    template = catalog.create_table("ns.template", schema).metadata
    md = template.with_changes(location=template.location.replace("template", "fresh"))
    location = catalog.commit_table("ns.fresh", None, md)
    assert "/fresh/metadata/00000-" in location
    assert catalog.load_table("ns.fresh").metadata == md
    with pytest.raises(AlreadyExists):
        catalog.commit_table("ns.fresh", None, md)
    assert len(_metadata_files(md.location)) == 1
    with pytest.raises(NoSuchNamespace):
        catalog.commit_table("zzz.fresh", None, md)


def test_metadata_log_is_trimmed(catalog: SqlCatalog, schema: Schema) -> None:
    catalog.create_namespace("ns")
    table = catalog.create_table(
        "ns.t",
        schema,
        properties={
            "write.metadata.previous-versions-max": "2",
            "write.metadata.delete-after-commit.enabled": "true",
        },
    )
    md, loc = table.metadata, table.metadata_location
    locations = [loc]
    for i in range(4):
        loc = catalog.commit_table("ns.t", loc, _with_property(md, f"p{i}", "x"), base_metadata=md)
        md = catalog.load_table("ns.t").metadata
        locations.append(loc)
    assert [e.metadata_file for e in md.metadata_log] == locations[-3:-1]
    # Files that fell off the log were deleted after commit.
    assert _metadata_files(md.location) == sorted(os.path.basename(p) for p in locations[-3:])
