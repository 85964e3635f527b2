"""Tables cannot hurt each other (issue 13, item 3): the attacks of the issue now fail and change nothing.

On SQLite and PostgreSQL catalogs: locations outside the warehouse or spelled ambiguously, tables
inside each other's directories (also through a nested namespace and through write paths), a
metadata file registered twice, and orphan removal / purge next to another table's files.
"""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.identifiers import namespace_to_string
from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import ValidationError
from icefloe.maintenance.remove_orphan_files import remove_orphan_files
from icefloe.spec.schema import Schema
from icefloe.table.table import Table
from icefloe.tree.location_rules import location_problem

pytestmark = pytest.mark.sql_catalog_only  # the REST server's own location checks: tests/server

FUTURE_MS = int(time.time() * 1000) + 3_600_000


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids]})


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def _ids(catalog: SqlCatalog, name: str) -> list[int]:
    return sorted(catalog.load_table(name).to_arrow().column("id").to_pylist())


def _uri(catalog: SqlCatalog) -> str:
    return catalog.engine.url.render_as_string(hide_password=False)


@pytest.fixture
def table_a(catalog: SqlCatalog, schema: Schema) -> Table:
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.a", schema)
    table.append(_rows([1, 2]))
    table.append(_rows([3]))
    return table


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("rel/t", "relative path"),
        ("./t", "relative path"),
        ("~/t", "home directory"),
        ("/w/~me/t", "home directory"),
        ("/w/../t", "'..' segment"),
        ("file:///w/./t", "'.' segment"),
        ("s3://bucket/a/../b", "'..' segment"),
        (" /w/t", "whitespace"),
        ("/w/t\n", "whitespace"),
        ("/w/t\u200b", "invisible"),
        ("", "non-empty"),
    ],
)
def test_badly_spelled_locations(text: str, problem: str) -> None:
    assert problem in (location_problem(text) or "")


@pytest.mark.parametrize("good", ["/w/t", "file:/w/t", "file:///w/t/", "s3://bucket/w/t", "s3a://b/x.y/z"])
def test_plain_locations(good: str) -> None:
    assert location_problem(good) is None


def test_create_table_refuses_locations_outside_the_warehouse(
    catalog: SqlCatalog, schema: Schema, warehouse: Path, tmp_path: Path
) -> None:
    catalog.create_namespace("ns")
    outside = tmp_path / "outside"
    bad = [
        "rel/t",
        "~/t",
        f"{warehouse}/../outside",
        f" {warehouse}/t",
        f"{warehouse}/t ",
        str(outside),
        f"file://{outside}",
        str(warehouse),  # the warehouse itself would contain every table
        f"file:{warehouse}/",
    ]
    for location in bad:
        with pytest.raises(ValidationError, match=r"location of table ns\.t"):
            catalog.create_table("ns.t", schema, location=location)
    for key in ("write.data.path", "write.metadata.path", "write.folder-storage.path"):
        with pytest.raises(ValidationError, match=f"{key} of table ns.t"):
            catalog.create_table("ns.t", schema, properties={key: str(outside)})
        with pytest.raises(ValidationError, match="relative path"):
            catalog.create_table("ns.t", schema, properties={key: "data"})
    assert catalog.list_tables("ns") == []
    assert _files(warehouse) == set()
    assert not outside.exists()


def test_namespace_location_is_confined(
    catalog: SqlCatalog, schema: Schema, warehouse: Path, tmp_path: Path
) -> None:
    with pytest.raises(ValidationError, match="location of namespace ns"):
        catalog.create_namespace("ns", {"location": str(tmp_path / "outside")})
    with pytest.raises(ValidationError, match="location of namespace ns"):
        catalog.create_namespace("ns", {"location": "../up"})
    assert not catalog.namespace_exists("ns")
    catalog.create_namespace("ns", {"location": f"file:{warehouse}/custom-ns"})
    with pytest.raises(ValidationError, match="location of namespace ns"):
        catalog.update_namespace_properties("ns", updates={"location": "~/elsewhere"})
    assert catalog.load_namespace_properties("ns") == {"location": f"file:{warehouse}/custom-ns"}
    table = catalog.create_table("ns.t", schema)
    assert table.location() == f"file://{warehouse}/custom-ns/t"


def test_changing_write_paths_later_is_checked(table_a: Table, warehouse: Path, tmp_path: Path) -> None:
    catalog = table_a.commit_target.catalog
    assert isinstance(catalog, SqlCatalog)
    before = catalog.load_table("ns.a").metadata_location
    other = catalog.create_table("ns.b", table_a.schema())
    for value in (str(tmp_path / "outside"), "relative/dir", f"{other.location()}/data", f" {warehouse}/x"):
        with pytest.raises(ValidationError):
            table_a.set_properties(**{"write.data.path": value})
    assert catalog.load_table("ns.a").metadata_location == before
    table_a.set_properties(**{"write.data.path": f"{warehouse}/a-data"})  # inside, no overlap: fine
    table_a.append(_rows([4]))
    assert _ids(catalog, "ns.a") == [1, 2, 3, 4]
    assert (warehouse / "a-data").is_dir()


def test_allow_external_locations(
    catalog_uri: str, catalog_name: str, schema: Schema, warehouse: Path, tmp_path: Path
) -> None:
    catalog = SqlCatalog(
        catalog_name, uri=catalog_uri, warehouse=str(warehouse), **{"allow-external-locations": "true"}
    )
    try:
        catalog.create_namespace("ns")
        table = catalog.create_table("ns.t", schema, location=str(tmp_path / "outside" / "t"))
        table.append(_rows([1]))
        assert _ids(catalog, "ns.t") == [1]
        with pytest.raises(ValidationError, match="relative path"):
            catalog.create_table("ns.u", schema, location="outside/u")
        with pytest.raises(ValidationError, match="overlaps"):  # overlap is never allowed
            catalog.create_table("ns.u", schema, location=str(tmp_path / "outside"))
    finally:
        catalog.close()


def test_overlapping_tables_are_refused_in_any_spelling(
    table_a: Table, schema: Schema, warehouse: Path
) -> None:
    catalog = table_a.commit_target.catalog
    root = table_a.location()  # file:///.../warehouse/ns/a
    path = root[len("file://") :]
    files = _files(warehouse)
    for location in (
        root,
        f"{root}/",
        f"file:{path}",
        path + "//",
        f"{root}/sub",
        f"file:{path}/data/x",
        str(warehouse / "ns"),
    ):
        with pytest.raises(ValidationError, match="overlaps"):
            catalog.create_table("ns.b", schema, location=location)
    for key in ("write.data.path", "write.metadata.path"):
        with pytest.raises(ValidationError, match="overlaps"):
            catalog.create_table("ns.b", schema, properties={key: f"file:{path}/data"})
    assert catalog.list_tables("ns") == [("ns", "a")]
    assert _files(warehouse) == files


def test_nested_namespace_tables_cannot_live_in_a_table_directory(
    catalog: SqlCatalog, schema: Schema
) -> None:
    catalog.create_namespace("ns")
    catalog.create_table("ns.b", schema)  # warehouse/ns/b
    catalog.create_namespace(("ns", "b"))
    with pytest.raises(ValidationError, match="overlaps"):
        catalog.create_table(("ns", "b", "t"), schema)  # would be warehouse/ns/b/t
    catalog.create_namespace(("ns", "c"))
    catalog.create_table(("ns", "c", "t"), schema)  # warehouse/ns/c/t
    with pytest.raises(ValidationError, match="overlaps"):
        catalog.create_table("ns.c", schema)  # would contain it
    assert catalog.list_tables(("ns", "b")) == []
    assert catalog.list_tables("ns") == [("ns", "b")]


def test_a_metadata_file_cannot_be_registered_twice(table_a: Table) -> None:
    catalog = table_a.commit_target.catalog
    with pytest.raises(ValidationError, match=r"belongs to table ns\.a"):
        catalog.register_table("ns.twin", table_a.metadata_location)
    older = table_a.metadata.metadata_log[0].metadata_file
    with pytest.raises(ValidationError, match=r"belongs to table ns\.a"):
        catalog.register_table("ns.twin", older)
    spelled = "file:" + table_a.metadata_location[len("file://") :]
    with pytest.raises(ValidationError, match=r"belongs to table ns\.a"):
        catalog.register_table("ns.twin", spelled)
    assert catalog.list_tables("ns") == [("ns", "a")]


def test_registering_outside_the_warehouse_needs_the_setting(
    catalog: SqlCatalog, catalog_uri: str, schema: Schema, tmp_path: Path
) -> None:
    other = SqlCatalog(
        "elsewhere", uri=f"sqlite:///{tmp_path / 'other.db'}", warehouse=str(tmp_path / "other-wh")
    )
    try:
        other.create_namespace("ns")
        foreign = other.create_table("ns.t", schema)
        foreign.append(_rows([1]))
        other.drop_table("ns.t")
    finally:
        other.close()
    catalog.create_namespace("ns")
    with pytest.raises(ValidationError, match="allow-external-locations"):
        catalog.register_table("ns.t", foreign.metadata_location)
    assert not catalog.table_exists("ns.t")


def _sneak_in(catalog: SqlCatalog, name: str, metadata_location: str) -> None:
    """What an older icefloe or another tool sharing the catalog database could do: no rules."""
    catalog._insert_table_row(("ns",), name, metadata_location)


def test_purging_a_twin_leaves_the_original_readable(table_a: Table, warehouse: Path) -> None:
    catalog = table_a.commit_target.catalog
    assert isinstance(catalog, SqlCatalog)
    _sneak_in(catalog, "twin", table_a.metadata_location)
    files = _files(warehouse)
    catalog.drop_table("ns.twin", purge=True)
    assert _files(warehouse) == files  # every file lies under ns.a's location: none was deleted
    assert _ids(catalog, "ns.a") == [1, 2, 3]
    fresh = SqlCatalog(catalog.name, uri=_uri(catalog))
    try:
        assert _ids(fresh, "ns.a") == [1, 2, 3]
    finally:
        fresh.close()


def test_orphan_removal_does_not_touch_a_nested_table(table_a: Table, schema: Schema, tmp_path: Path) -> None:
    catalog = table_a.commit_target.catalog
    assert isinstance(catalog, SqlCatalog)
    # A table living inside ns.a's directory, created through another catalog of the same database.
    other = SqlCatalog(
        "intruder",
        uri=_uri(catalog),
        warehouse=str(tmp_path / "unused"),
        **{"allow-external-locations": "true"},
    )
    try:
        other.create_namespace("ns")
        nested = other.create_table("ns.nested", schema, location=f"{table_a.location()}/nested")
        nested.append(_rows([7, 8]))
        other.drop_table("ns.nested")
    finally:
        other.close()
    _sneak_in(catalog, "nested", nested.metadata_location)
    nested_files = _files(Path(nested.location()[len("file://") :]))
    result = remove_orphan_files(table_a, older_than=FUTURE_MS)
    assert not any("/nested/" in path for path in result.orphan_files)
    assert _files(Path(nested.location()[len("file://") :])) == nested_files
    assert _ids(catalog, "ns.nested") == [7, 8]
    assert _ids(catalog, "ns.a") == [1, 2, 3]
    # ...and purging the outer table keeps the nested table's files as well.
    catalog.drop_table("ns.a", purge=True)
    assert _ids(catalog, "ns.nested") == [7, 8]


def test_rules_see_only_this_catalogs_tables(catalog: SqlCatalog, schema: Schema, warehouse: Path) -> None:
    catalog.create_namespace("ns")
    catalog.create_table("ns.a", schema)
    assert [t.name for t in catalog.other_tables()] == ["ns.a"]
    assert namespace_to_string(("ns",)) == "ns"
