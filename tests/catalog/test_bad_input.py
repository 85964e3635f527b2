"""Bad input gets a clear IcefloeError naming the file or value, and leaves the table unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import CorruptMetadata, Unsupported, ValidationError
from icefloe.formats.metadata.files import clear_metadata_cache
from icefloe.io.fileio import local_path
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.table.table import Table

pytestmark = [pytest.mark.all_catalogs, pytest.mark.catalog_namespaces("db")]

SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "name", StringType(), False))


@pytest.fixture
def table(catalog: Catalog) -> Table:
    t = catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", "b"]}))
    return t


def _damage(path: Path, text: str) -> None:
    """Rewrite a metadata file in place, as seen by a process that has not read it yet: its UUID
    name promises it never changes, so this process trusts its cached parse (the client's and an
    in-process server's)."""
    path.write_text(text)
    clear_metadata_cache()


def _files_under(table: Table) -> set[str]:
    root = Path(local_path(table.location()))
    return {str(p) for p in root.rglob("*") if p.is_file()}


def _state(table: Table) -> tuple[str, list[dict[str, object]]]:
    table.refresh()
    return table.metadata_location, sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"])


@pytest.mark.sql_catalog_only  # over REST the server reports the corrupt file as a 400 (noted in issue 16)
def test_corrupt_metadata_json_names_the_file(catalog: Catalog, table: Table) -> None:
    path = Path(local_path(table.metadata_location))
    original = path.read_bytes()
    _damage(path, '{"format-version": 2, "table-uuid": ')
    with pytest.raises(CorruptMetadata, match=path.name):
        catalog.load_table("db.t")
    path.write_bytes(original)
    assert _state(table)[1] == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]


def test_unknown_format_version_is_unsupported(catalog: Catalog, table: Table) -> None:
    path = Path(local_path(table.metadata_location))
    doc = json.loads(path.read_text())
    doc["format-version"] = 9
    _damage(path, json.dumps(doc))
    with pytest.raises(Unsupported, match="9"):
        catalog.load_table("db.t")


def test_truncated_avro_manifest_names_the_file(table: Table) -> None:
    manifests = sorted(Path(local_path(table.location())).rglob("*-m*.avro"))
    assert manifests, "expected at least one manifest"
    manifest = manifests[0]
    data = manifest.read_bytes()
    manifest.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptMetadata, match=manifest.name):
        table.scan().to_arrow()


@pytest.mark.parametrize(
    ("bad", "column"),
    [
        (pa.table({"name": ["x"]}), "id"),  # required column missing
        (pa.table({"id": ["not a number"], "name": ["x"]}), "id"),  # wrong type
        (pa.table({"id": pa.array([3], pa.int64()), "name": [7]}), "name"),  # wrong type
        (pa.table({"id": pa.array([None], pa.int64()), "name": ["x"]}), "id"),  # null in required
        (pa.table({"id": pa.array([3], pa.int64()), "name": ["x"], "extra": [1]}), "extra"),
    ],
)
def test_mismatched_arrow_table_changes_nothing(table: Table, bad: pa.Table, column: str) -> None:
    before_state, before_files = _state(table), _files_under(table)
    with pytest.raises(ValidationError, match=column):
        table.append(bad)
    with pytest.raises(ValidationError, match=column):
        table.overwrite(bad)
    assert _state(table) == before_state
    assert _files_under(table) == before_files, "no stray files may be left behind"


@pytest.mark.parametrize("name", ["db.a/b", "db...", "db..x", "../etc.t", "db.", "db.\x00t"])
def test_bad_table_names_are_rejected(catalog: Catalog, name: str) -> None:
    with pytest.raises(ValidationError):
        catalog.create_table(name, SCHEMA)


def test_bad_filter_names_the_column(table: Table) -> None:
    with pytest.raises(ValidationError, match="nope"):
        table.scan(filter="nope > 1").to_arrow()
    with pytest.raises(ValidationError, match="nope"):
        table.delete("nope = 1")
    assert _state(table)[1] == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
