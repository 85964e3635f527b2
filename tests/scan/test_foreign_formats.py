"""Avro and ORC data files and Avro/ORC position-delete files, as other Iceberg writers produce them,
read by the Python reader: dispatch on the manifest's ``file_format``, projection and schema
evolution by field id, defaults, row filter and deletes (issue 13, item 7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog import load_catalog
from icefloe.catalog.base import Catalog
from icefloe.errors import Unsupported
from icefloe.formats.data_files import read_data_file
from icefloe.spec.content import DataFile
from icefloe.table.table import Table
from icefloe.txn.producers import AppendFiles, RowDelta
from tests.support import foreign_files as ff


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = load_catalog(uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace(("db",))
    return cat


def foreign_table(
    catalog: Catalog, name: str = "db.t", format_version: int = 2
) -> tuple[Table, list[DataFile]]:
    """A table holding an Avro file (ids 0..29), an ORC file (30..59) and a Parquet file (60..69)
    written by icefloe; then an Avro position delete file (rows 3 and 7 of the Avro file, 31 of the
    ORC one) and an ORC position delete file (row 40 of the ORC file, 2 of the Avro one)."""
    table = catalog.create_table(name, ff.SCHEMA, properties={"format-version": str(format_version)})
    assert table.schema() == ff.SCHEMA
    data = f"{table.metadata.location}/data"
    avro = ff.write_avro_data(table.io, f"{data}/part-0.avro", ff.rows(0, 30))
    orc = ff.write_orc_data(table.io, f"{data}/part-1.orc", ff.rows(30, 30))
    with table.transaction() as tx:
        tx.add_action(AppendFiles(files=[avro, orc]))
    table = catalog.load_table(name)
    table.append(to_arrow(ff.rows(60, 10)))
    deletes = [
        ff.write_avro_position_deletes(
            f"{data}/del-0.avro", [(avro.file_path, 3), (avro.file_path, 7), (orc.file_path, 1)]
        ),
        ff.write_orc_position_deletes(f"{data}/del-1.orc", [(orc.file_path, 10), (avro.file_path, 2)]),
    ]
    with table.transaction() as tx:
        tx.add_action(RowDelta(added_deletes=deletes))
    return catalog.load_table(name), [avro, orc]


DELETED = {2, 3, 7, 31, 40}


def to_arrow(data: list[dict[str, Any]]) -> pa.Table:
    from icefloe.formats.arrow_schema import schema_to_arrow

    target = schema_to_arrow(ff.SCHEMA)
    plain = [{**r, "attrs": None if r["attrs"] is None else list(r["attrs"].items())} for r in data]
    return pa.Table.from_pylist(plain, schema=target)


def expected(ids: set[int]) -> list[dict[str, Any]]:
    out = []
    for r in ff.rows(0, 70):
        if r["id"] in ids:
            out.append({**r, "attrs": None if r["attrs"] is None else sorted(r["attrs"].items())})
    return out


def normalized(table: pa.Table) -> list[dict[str, Any]]:
    out = []
    for r in sorted(table.to_pylist(), key=lambda r: r["id"]):
        if r.get("attrs") is not None:
            r["attrs"] = sorted(r["attrs"])
        out.append(r)
    return out


def test_every_row_of_every_format_with_deletes(catalog: Catalog) -> None:
    table, (_avro, _orc) = foreign_table(catalog)
    formats = sorted(t.data_file.file_format for t in table.scan().plan_files())
    assert formats == ["avro", "orc", "parquet"]
    got = table.scan().to_arrow()
    assert got.num_rows == 70 - len(DELETED)
    assert normalized(got) == expected(set(range(70)) - DELETED)


def test_projection_and_row_filter(catalog: Catalog) -> None:
    table, _ = foreign_table(catalog)
    got = table.scan(filter="qty >= 10 and name is not null", columns=("id", "point")).to_arrow()
    want = [
        {"id": r["id"], "point": r["point"]}
        for r in expected(set(range(70)) - DELETED)
        if r["qty"] >= 10 and r["name"] is not None
    ]
    assert got.column_names == ["id", "point"]
    assert normalized(got) == want
    meta = table.scan(filter="id < 12", columns=("id", "_file", "_pos")).to_arrow()
    assert sorted((r["id"], r["_pos"]) for r in meta.to_pylist()) == [
        (i, i) for i in range(12) if i not in DELETED
    ]


def test_schema_evolution_by_field_id(catalog: Catalog) -> None:
    """Renamed columns are found by id, int->long promotion applies, a new column reads its
    initial default (v3) in files that predate it."""
    table, _ = foreign_table(catalog, format_version=3)
    with table.update_schema() as update:
        update.rename_column("name", "label")
        update.rename_column("point.x", "px")
        update.update_column("qty", "long")
        update.add_column("extra", "string", initial_default="dflt")
    table = catalog.load_table("db.t")
    got = table.scan(columns=("id", "label", "point", "qty", "extra")).to_arrow()
    assert got.schema.field("qty").type == pa.int64()
    want = [
        {
            "id": r["id"],
            "label": r["name"],
            "point": None if r["point"] is None else {"px": r["point"]["x"], "y": r["point"]["y"]},
            "qty": r["qty"],
            "extra": "dflt",
        }
        for r in expected(set(range(70)) - DELETED)
    ]
    assert normalized(got) == want


def test_equality_of_the_three_formats_through_read_data_file(catalog: Catalog, tmp_path: Path) -> None:
    """The same rows read from an Avro, an ORC and a Parquet file give the same Arrow table."""
    table, (avro, orc) = foreign_table(catalog)
    projected = ff.SCHEMA.select(["id", "price", "ts", "day", "tags", "attrs"])
    a = read_data_file(table.io, avro.file_path, projected, "AVRO")
    o = read_data_file(table.io, orc.file_path, projected, "orc")
    assert a.schema == o.schema
    assert normalized(a) == [{k: r[k] for k in projected.column_names()} for r in expected(set(range(30)))]
    assert normalized(o) == [
        {k: r[k] for k in projected.column_names()} for r in expected(set(range(30, 60)))
    ]


def test_unknown_format_is_refused(catalog: Catalog) -> None:
    table, (avro, _) = foreign_table(catalog)
    with pytest.raises(Unsupported, match="csv"):
        read_data_file(table.io, avro.file_path, ff.SCHEMA, "csv")


def test_orc_files_match_pyiceberg(catalog: Catalog) -> None:
    """PyIceberg reads ORC by ``iceberg.id`` too: an independent check of the ORC conventions used."""
    from tests.support.interop import read_with_pyiceberg

    table = catalog.create_table("db.orc_only", ff.SCHEMA, properties={"format-version": "2"})
    orc = ff.write_orc_data(table.io, f"{table.metadata.location}/data/a.orc", ff.rows(0, 20))
    with table.transaction() as tx:
        tx.add_action(AppendFiles(files=[orc]))
    table = catalog.load_table("db.orc_only")
    columns = ["id", "name", "price", "day", "tags", "point", "qty"]
    ours = table.scan(columns=tuple(columns)).to_arrow()
    theirs = read_with_pyiceberg(table.metadata_location, columns=columns)
    assert normalized(ours) == normalized(theirs.select(columns))


def test_avro_equality_deletes(catalog: Catalog) -> None:
    table, _ = foreign_table(catalog)
    eq = ff.write_avro_equality_deletes(f"{table.metadata.location}/data/eq-0.avro", [0, 33, 65])
    with table.transaction() as tx:
        tx.add_action(RowDelta(added_deletes=[eq]))
    got = catalog.load_table("db.t").scan(columns=("id",)).to_arrow()
    assert sorted(got.column("id").to_pylist()) == sorted(set(range(70)) - DELETED - {0, 33, 65})
