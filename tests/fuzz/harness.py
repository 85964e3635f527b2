"""The fuzz tables: real icefloe tables, and their files by kind.

:func:`build_tables` writes four small tables with the public API (v2 partitioned with position
deletes, v2 with gzip metadata, v3 with deletion vectors, v4 with leaves, a manifest DV and a
colocated DV) and a fifth holding Avro and ORC data and position-delete files as other writers
produce them, and returns one :class:`Target` per file kind. ``tests/fuzz/runner.py`` reads the
mutants of a target.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

PLAIN_JSON_KINDS = frozenset({"v2-metadata-json", "v4-metadata-json"})
"""Plain metadata JSON has no checksum: a mutant that stays valid JSON and valid table metadata
(a changed field id, source id or number) describes another table, which reads differently without
anything being corrupt in the format's sense. Such mutants are counted, not failed (gzip metadata
has a CRC and is held to the strict rule)."""

UNCHECKSUMMED_KINDS = frozenset(
    {"avro-data-file", "orc-data-file", "avro-position-deletes", "orc-position-deletes"}
)
"""Avro (null or deflate codec) and ORC files carry no checksum over their values: a flipped value
byte that still decodes is a different value no reader can tell from the original (Iceberg Java
reads it the same). For these kinds the rest of the rule is strict (only an IcefloeError naming
the file escapes, no hang); mutants that read differently are counted, not failed. icefloe's own
data and delete files are Parquet with page checksums and held to the strict rule."""


@dataclass(frozen=True)
class Target:
    """One file of one table to mutate, and how to read that table."""

    kind: str
    path: str  # local path of the file mutated
    metadata_location: str  # the table's current metadata file
    blamed: str  # what an error must name: the file's base name
    mdv_of: str | None = None  # kind "manifest-dv": mutate this leaf's manifest DV inside the root


# -- building the tables -----------------------------------------------------------------------


def _local(location: str) -> str:
    return location.removeprefix("file://")


def build_tables(root: Path) -> list[Target]:
    """Write the fuzz tables under ``root``; one target per file kind."""
    from icefloe.catalog import load_catalog
    from icefloe.spec.partitioning import PartitionField, PartitionSpec
    from icefloe.spec.schema import Schema
    from icefloe.spec.transforms import IdentityTransform
    from icefloe.spec.types import LongType, NestedField, StringType

    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "cat", StringType(), False))
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"))
    catalog = load_catalog(uri=f"sqlite:///{root}/catalog.db", warehouse=str(root / "warehouse"))
    catalog.create_namespace(("db",))

    def rows(start: int, n: int) -> pa.Table:
        ids = list(range(start, start + n))
        return pa.table({"id": pa.array(ids, pa.int64()), "cat": pa.array(["abcd"[i % 4] for i in ids])})

    def skewed(start: int, sizes: tuple[int, ...]) -> pa.Table:
        """Consecutive ids, ``sizes[k]`` of them in category k: every file has its own record count."""
        cats = [c for c, n in zip("abcd", sizes, strict=True) for _ in range(n)]
        ids = list(range(start, start + len(cats)))
        return pa.table({"id": pa.array(ids, pa.int64()), "cat": pa.array(cats)})

    targets: list[Target] = []
    t2 = catalog.create_table("db.v2", schema, partition_spec=spec, properties={"format-version": "2"})
    t2.append(rows(0, 40))
    t2.append(rows(40, 40))
    t2.delete("id in (3, 13, 23, 43, 63)", mode="merge-on-read")
    targets += _tree_targets(t2, "v2")

    tg = catalog.create_table(
        "db.gz", schema, properties={"format-version": "2", "write.metadata.compression-codec": "gzip"}
    )
    tg.append(rows(0, 20))
    tg.append(rows(20, 5))
    targets.append(_target("metadata-json-gzip", tg.metadata_location, tg.metadata_location))

    t3 = catalog.create_table("db.v3", schema, partition_spec=spec, properties={"format-version": "3"})
    t3.append(rows(0, 40))
    t3.delete("id in (3, 13, 23, 33)", mode="merge-on-read")
    targets += [t for t in _tree_targets(t3, "v3") if t.kind in ("v3-puffin", "v3-manifest")]

    props = {
        "format-version": "4",
        "write.v4.root.max-inline-entries": "0",
        "write.v4.leaf.min-live-ratio": "0",
        "write.v4.compaction.enabled": "false",
    }
    t4 = catalog.create_table("db.v4", schema, partition_spec=spec, properties=props)
    t4.append(skewed(0, (3, 7, 11, 19)))  # a manifest DV that masks another file changes total-records
    t4.append(skewed(40, (4, 8, 12, 16)))
    t4.delete("cat = 'a'")  # one file of each leaf: manifest DVs in the root
    t4.delete("id in (3, 13, 23, 43, 63)", mode="merge-on-read")  # colocated DVs
    targets += _tree_targets(t4, "v4")
    targets += _foreign_targets(catalog)
    return targets


def _foreign_targets(catalog: Any) -> list[Target]:
    """Avro and ORC data and position-delete files, as other Iceberg writers produce them."""
    from icefloe.txn.producers import AppendFiles, RowDelta
    from tests.support import foreign_files as ff

    table = catalog.create_table("db.foreign", ff.SCHEMA, properties={"format-version": "2"})
    data = f"{table.metadata.location}/data"
    avro = ff.write_avro_data(table.io, f"{data}/part-0.avro", ff.rows(0, 30))
    orc = ff.write_orc_data(table.io, f"{data}/part-1.orc", ff.rows(30, 30))
    with table.transaction() as tx:
        tx.add_action(AppendFiles(files=[avro, orc]))
    avro_deletes = ff.write_avro_position_deletes(
        f"{data}/del-0.avro", [(avro.file_path, 3), (avro.file_path, 7), (orc.file_path, 1)]
    )
    orc_deletes = ff.write_orc_position_deletes(
        f"{data}/del-1.orc", [(orc.file_path, 10), (avro.file_path, 2)]
    )
    table = catalog.load_table("db.foreign")
    with table.transaction() as tx:
        tx.add_action(RowDelta(added_deletes=[avro_deletes, orc_deletes]))
    loc = catalog.load_table("db.foreign").metadata_location
    return [
        _target("avro-data-file", avro.file_path, loc),
        _target("orc-data-file", orc.file_path, loc),
        _target("avro-position-deletes", avro_deletes.file_path, loc),
        _target("orc-position-deletes", orc_deletes.file_path, loc),
    ]


def _target(kind: str, location: str, metadata_location: str, mdv_of: str | None = None) -> Target:
    path = _local(location)
    return Target(kind, path, metadata_location, Path(path).name, mdv_of)


def _tree_targets(table: Any, tag: str) -> list[Target]:
    """The metadata JSON, tree files, one data file and one delete file of a table."""
    from icefloe.spec.content import FileContent, ManifestContent
    from icefloe.tree.read_seam import live_entries, manifest_refs

    md, io, loc = table.metadata, table.io, table.metadata_location
    snap = table.current_snapshot()
    out = [_target(f"{tag}-metadata-json", loc, loc)]
    refs = manifest_refs(io, md, snap)
    if snap.manifest_list is not None:
        out.append(_target(f"{tag}-manifest-list", snap.manifest_list, loc))
        data = next(m for m in refs if m.content == ManifestContent.DATA)
        out.append(_target(f"{tag}-manifest", data.manifest_path, loc))
        deletes = [m for m in refs if m.content == ManifestContent.DELETES]
        if deletes:
            out.append(_target(f"{tag}-delete-manifest", deletes[0].manifest_path, loc))
    else:
        out.append(_target(f"{tag}-root", snap.root_manifest, loc))
        leaf = next(m for m in refs if m.format_version >= 4)
        out.append(_target(f"{tag}-leaf", leaf.manifest_path, loc))
        with_mdv = next(m for m in refs if m.mdv is not None)
        out.append(_target(f"{tag}-manifest-dv", snap.root_manifest, loc, mdv_of=with_mdv.manifest_path))
    entries = list(live_entries(io, md, snap))
    data_file = next(e.data_file for e in entries if e.data_file.content == FileContent.DATA)
    out.append(_target(f"{tag}-data-file", data_file.file_path, loc))
    for e in entries:
        f = e.data_file
        if f.content == FileContent.POSITION_DELETES:
            out.append(_target(f"{tag}-{f.file_format.lower()}", f.file_path, loc))
            break
        if f.deletion_vector is not None:
            out.append(_target(f"{tag}-puffin", f.deletion_vector.location, loc))
            break
    return out
