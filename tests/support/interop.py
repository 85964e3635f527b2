"""Independent Iceberg readers for interop tests: PyIceberg, DuckDB and iceberg-rust (DataFusion).

Each reader takes a table's metadata JSON location (absolute local path, ``file:/x`` or
``file:///x``) and returns a ``pyarrow.Table``; none of them imports icefloe. Common keywords:

- ``snapshot_id`` / ``ref``: time travel to a snapshot id or a branch/tag name (mutually exclusive);
- ``columns``: project these top-level columns, in this order (default: all);
- ``row_filter``: a corpus ``filter_expr`` dict (see ``tests.support.filter_expr``), or text in the
  reader's own syntax (PyIceberg expression string / SQL for DuckDB and DataFusion), or for
  PyIceberg a ``BooleanExpression``.

Compare results with ``sorted_rows`` / ``assert_same_rows`` (canonical cell rendering of the
corpus' fingerprint, so Arrow type differences between readers do not matter).

``SUPPORT`` records what each reader handles, as found by ``test_interop_smoke.py`` (tables written
by PyIceberg) and ``python -m tests.support.reader_matrix`` (the acceptance corpus).
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from collections import Counter
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow as pa

from tests.support.filter_expr import filter_expr_to_pyiceberg, sql_where

RowFilter = dict[str, Any] | str | None


class ReaderUnavailable(RuntimeError):
    """The reader cannot run in this environment (missing or mismatched package)."""


class ReaderUnsupported(RuntimeError):
    """The reader does not support what was asked (e.g. a feature of the table or of the call)."""


# ---------------------------------------------------------------- what each reader supports
# True = reads it correctly; False = cannot (error or wrong rows); strings explain partial support.
# Verified by tests/support/test_interop_smoke.py (format versions, transforms, time travel, refs,
# filters), tests/support/test_fixture_harness.py (row lineage, the corpus) and
# `python -m tests.support.reader_matrix` (the "corpus" summaries).
SUPPORT: dict[str, dict[str, Any]] = {
    "pyiceberg": {
        "version": "0.12.0",
        "v1": True,
        "v2": True,
        "v3": True,
        "identity": True,
        "bucket": True,
        "day": True,
        "truncate": True,
        "snapshot_id": True,
        "ref": True,
        "row_filter": True,
        "schema_evolution": True,
        "position_deletes": True,
        "deletion_vectors": True,
        "row_lineage_columns": False,
        "notes": [
            "time travel (snapshot_id, and ref via its snapshot id) reads with the snapshot's schema, "
            "also for a branch (Java reads a branch with the current schema)",
            "_row_id / _last_updated_sequence_number cannot be selected",
            "NULL list<struct> / map<_, struct> values come back as empty lists/maps (p08)",
            "a filter on a list/map column fails: 'Cannot explicitly project List or Map types' (p08 c06)",
            "prunes manifests whose partition summaries lack bounds, so chDB's table loses rows (p10b c09)",
        ],
        "corpus": "all 125 checks as cases.json records: 106 match, 12 match without the lineage "
        "columns, 7 known misses (p08 c00-c04 wrong rows, p08 c06 error, p10b c09 0 rows)",
    },
    "duckdb": {
        "version": "duckdb 1.5.5 + duckdb-extension-iceberg/avro 1.5.5 (pip wheels, loaded offline)",
        "v1": True,
        "v2": True,
        "v3": True,
        "identity": True,
        "bucket": True,
        "day": True,
        "truncate": True,
        "snapshot_id": True,
        "ref": True,
        "row_filter": True,
        "schema_evolution": True,
        "position_deletes": True,
        "deletion_vectors": True,
        "row_lineage_columns": True,
        "notes": [
            "iceberg_scan(<metadata.json>, snapshot_from_id=...) ; refs are resolved to snapshot ids "
            "from the metadata JSON by this module",
            "extensions are LOADed from the wheels' .duckdb_extension files (signed: "
            "allow_unsigned_extensions is not needed); autoinstall/autoload of extensions is off",
            "row_filter is applied as SQL WHERE over iceberg_scan (DuckDB semantics: NaN compares "
            "greater than every number and equal to itself, unlike Iceberg)",
            "snapshot_from_id reads with the snapshot's schema, also for a branch head",
        ],
        "corpus": "125/125 checks match, row-lineage columns included",
    },
    "iceberg_rust": {
        "version": "pyiceberg-core 0.11.0 (iceberg-rust) through datafusion-python 54.x",
        "v1": True,
        "v2": True,
        "v3": True,
        "identity": True,
        "bucket": True,
        "day": True,
        "truncate": True,
        "snapshot_id": "via a pinned copy of the metadata JSON",
        "ref": "via a pinned copy of the metadata JSON",
        "row_filter": True,
        "schema_evolution": True,
        "position_deletes": True,
        "deletion_vectors": True,
        "row_lineage_columns": False,
        "notes": [
            "pyiceberg_core.datafusion.IcebergDataFusionTable(identifier, metadata_location, "
            "file_io_properties) reads the metadata file's current snapshot only; time travel "
            "writes a temporary copy of the metadata JSON with current-snapshot-id / main / "
            "current-schema-id pinned (data and manifest paths are absolute, so this is exact)",
            "pyiceberg-core 0.11.0 exports a DataFusion FFI table provider of major version 54: "
            "datafusion-python 55 refuses it ('Incompatible DataFusion table provider major "
            "version 54; expected 55'); install datafusion>=54,<55",
            "needs a URI: a bare path fails ('failed to parse URL: relative URL without a base'), "
            "so paths are turned into file:/// URIs here",
            "uuid columns come back as fixed_size_binary(16): wrapped here as pa.uuid() by field id",
            "no _row_id / _last_updated_sequence_number (the reader raises ReaderUnsupported)",
            "fails on chDB's table (p10b): 'Cannot create partition with name: 'id' that conflicts "
            "with schema field and is not an identity transform'",
        ],
        "corpus": "103 checks match, the 12 lineage checks match on the other columns, p10b's 10 "
        "error; nested NULL list/map values are right where PyIceberg's are not (p08)",
    },
}


# ---------------------------------------------------------------- locations and metadata


def as_uri(location: str | os.PathLike[str]) -> str:
    """``file:///abs/path`` for a local path, ``file:/x`` or ``file:///x``; other schemes unchanged."""
    text = os.fspath(location)
    if text.startswith("file:"):
        return "file://" + as_local_path(text)
    if "://" in text:
        return text
    return Path(text).resolve().as_uri()


def as_local_path(location: str | os.PathLike[str]) -> str:
    """The local filesystem path of a ``file:`` URI or a plain path."""
    text = os.fspath(location)
    if text.startswith("file:"):
        parsed = urlparse(text)
        if parsed.netloc not in ("", "localhost"):
            raise ValueError(f"not a local file URI: {text}")
        return unquote(parsed.path)
    return str(Path(text).resolve())


def load_metadata_json(metadata_location: str | os.PathLike[str]) -> dict[str, Any]:
    """The parsed table metadata JSON (gzip-compressed files too)."""
    raw = Path(as_local_path(metadata_location)).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)


def _snapshots_by_id(metadata: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {int(s["snapshot-id"]): s for s in metadata.get("snapshots") or []}


def resolve_snapshot(
    metadata: dict[str, Any], snapshot_id: int | None = None, ref: str | None = None
) -> int | None:
    """The snapshot id to read: ``snapshot_id``, else the head of ``ref``, else the current one."""
    if snapshot_id is not None and ref is not None:
        raise ValueError("give snapshot_id or ref, not both")
    if snapshot_id is not None:
        if int(snapshot_id) not in _snapshots_by_id(metadata):
            raise ValueError(f"snapshot {snapshot_id} is not in the table metadata")
        return int(snapshot_id)
    if ref is not None:
        refs = metadata.get("refs") or {}
        if ref in refs:
            return int(refs[ref]["snapshot-id"])
        if ref == "main" and metadata.get("current-snapshot-id") not in (None, -1):
            return int(metadata["current-snapshot-id"])
        raise ValueError(f"ref {ref!r} is not in the table metadata (refs: {sorted(refs)})")
    current = metadata.get("current-snapshot-id")
    return None if current in (None, -1) else int(current)


def ref_is_branch(metadata: dict[str, Any], ref: str) -> bool:
    """Whether ``ref`` names a branch (``main`` counts as one even when v1 metadata has no refs)."""
    refs = metadata.get("refs") or {}
    return ref == "main" if ref not in refs else refs[ref].get("type", "branch") == "branch"


def pin_metadata(
    metadata_location: str, directory: str | os.PathLike[str], snapshot_id: int | None, ref: str | None
) -> str:
    """Write a copy of the metadata whose current state is the chosen snapshot; return its URI.

    Schema: the snapshot's schema for a snapshot id or a tag, the table's current schema for a
    branch (Iceberg Java's rule, followed by the acceptance corpus).
    """
    metadata = load_metadata_json(metadata_location)
    target = resolve_snapshot(metadata, snapshot_id, ref)
    if target is None:
        raise ValueError("the table has no snapshot to pin")
    snapshot = _snapshots_by_id(metadata)[target]
    metadata["current-snapshot-id"] = target
    refs = dict(metadata.get("refs") or {})
    refs["main"] = {"snapshot-id": target, "type": "branch"}
    metadata["refs"] = refs
    use_snapshot_schema = ref is None or not ref_is_branch(metadata, ref)
    if use_snapshot_schema and snapshot.get("schema-id") is not None and "schemas" in metadata:
        metadata["current-schema-id"] = snapshot["schema-id"]
    path = Path(directory) / "00000-pinned.metadata.json"
    path.write_text(json.dumps(metadata), encoding="utf-8")
    return path.resolve().as_uri()


def _select(table: pa.Table, columns: list[str] | None) -> pa.Table:
    return table if columns is None else table.select(list(columns))


# ---------------------------------------------------------------- PyIceberg


def read_with_pyiceberg(
    metadata_location: str,
    snapshot_id: int | None = None,
    columns: list[str] | None = None,
    row_filter: RowFilter | Any = None,
    *,
    ref: str | None = None,
) -> pa.Table:
    """Read with PyIceberg: ``StaticTable.from_metadata(...).scan(...).to_arrow()``."""
    from pyiceberg.expressions import AlwaysTrue, BooleanExpression
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(as_uri(metadata_location))
    if ref is not None or snapshot_id is not None:
        snapshot_id = resolve_snapshot(load_metadata_json(metadata_location), snapshot_id, ref)
    if row_filter is None:
        expr: BooleanExpression | str = AlwaysTrue()
    elif isinstance(row_filter, dict):
        expr = filter_expr_to_pyiceberg(row_filter)
    else:
        expr = row_filter
    if columns is not None and any(c in ("_row_id", "_last_updated_sequence_number") for c in columns):
        raise ReaderUnsupported("PyIceberg 0.12 cannot select the row-lineage metadata columns")
    scan = table.scan(
        row_filter=expr,
        selected_fields=tuple(columns) if columns is not None else ("*",),
        snapshot_id=snapshot_id,
    )
    return _select(scan.to_arrow(), columns)


# ---------------------------------------------------------------- DuckDB


def duckdb_extension_paths() -> dict[str, Path]:
    """The ``.duckdb_extension`` files shipped by the duckdb-extension-{avro,iceberg} wheels."""
    import duckdb

    version = "v" + duckdb.__version__
    paths: dict[str, Path] = {}
    for name in ("avro", "iceberg"):
        try:
            module = __import__(f"duckdb_extension_{name}")
        except ImportError as exc:
            raise ReaderUnavailable(f"pip package duckdb-extension-{name} is not installed") from exc
        root = Path(str(module.__file__)).parent / "extensions"
        exact = root / version / f"{name}.duckdb_extension"
        found = [exact] if exact.is_file() else sorted(root.glob(f"*/{name}.duckdb_extension"))
        if not found:
            raise ReaderUnavailable(f"no {name}.duckdb_extension under {root}")
        if found[0] != exact:
            raise ReaderUnavailable(
                f"duckdb-extension-{name} ships {found[0].parent.name}, duckdb is {version}: "
                "install the extension wheel matching duckdb"
            )
        paths[name] = exact
    return paths


@cache
def duckdb_connection() -> Any:
    """An in-memory DuckDB connection with the avro and iceberg extensions loaded from the wheels."""
    import duckdb

    con = duckdb.connect(
        ":memory:",
        config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"},
    )
    for path in duckdb_extension_paths().values():  # avro first: iceberg reads manifests with it
        con.execute(f"LOAD '{_sql_string(str(path))}'")
    # DuckDB 1.5.5's iceberg extension misreads the second deletion vector of a Puffin file holding
    # several (as icefloe writes them) when the blob comes from its external file cache
    # (duckdb/duckdb-iceberg#1182, fixed after 1.5.5): read every blob from the file instead.
    con.execute("SET enable_external_file_cache=false")
    return con


def _sql_string(text: str) -> str:
    return text.replace("'", "''")


def _sql_columns(columns: list[str] | None) -> str:
    if columns is None:
        return "*"
    return ", ".join('"' + c.replace('"', '""') + '"' for c in columns)


def _arrow_of(result: Any) -> pa.Table:
    if hasattr(result, "to_arrow_table"):
        return result.to_arrow_table()
    return result.arrow()


def read_with_duckdb(
    metadata_location: str,
    snapshot_id: int | None = None,
    columns: list[str] | None = None,
    row_filter: RowFilter = None,
    *,
    ref: str | None = None,
) -> pa.Table:
    """Read with DuckDB's ``iceberg_scan`` over the metadata file (``snapshot_from_id`` for time travel).

    Row-lineage columns ``_row_id`` / ``_last_updated_sequence_number`` can be selected on v3 tables.
    """
    path = as_local_path(metadata_location)
    if ref is not None or snapshot_id is not None:
        snapshot_id = resolve_snapshot(load_metadata_json(path), snapshot_id, ref)
    args = f"'{_sql_string(path)}'"
    if snapshot_id is not None:
        args += f", snapshot_from_id={int(snapshot_id)}"
    sql = f"SELECT {_sql_columns(columns)} FROM iceberg_scan({args}){sql_where(row_filter, 'duckdb')}"
    cursor = duckdb_connection().cursor()
    try:
        return _arrow_of(cursor.execute(sql))
    finally:
        cursor.close()


# ---------------------------------------------------------------- iceberg-rust (pyiceberg-core + DataFusion)


def read_with_iceberg_rust(
    metadata_location: str,
    snapshot_id: int | None = None,
    columns: list[str] | None = None,
    row_filter: RowFilter = None,
    *,
    ref: str | None = None,
) -> pa.Table:
    """Read with iceberg-rust: ``IcebergDataFusionTable`` registered in a DataFusion ``SessionContext``.

    The provider reads the current snapshot of the metadata file it is given; time travel reads a
    temporary pinned copy of the metadata (see ``pin_metadata``).
    """
    if columns is not None and any(c in ("_row_id", "_last_updated_sequence_number") for c in columns):
        raise ReaderUnsupported("iceberg-rust (pyiceberg-core 0.11) has no row-lineage metadata columns")
    try:
        import datafusion
        from pyiceberg_core.datafusion import IcebergDataFusionTable
    except ImportError as exc:
        raise ReaderUnavailable(f"iceberg-rust reader needs pyiceberg-core and datafusion: {exc}") from exc

    with tempfile.TemporaryDirectory(prefix="icefloe-interop-") as tmp:
        uri = as_uri(metadata_location)
        if snapshot_id is not None or ref is not None:
            uri = pin_metadata(metadata_location, tmp, snapshot_id, ref)
        provider = IcebergDataFusionTable(["interop", "t"], uri, None)
        ctx = datafusion.SessionContext()
        try:
            ctx.register_table("t", provider)
        except ImportError as exc:  # FFI ABI mismatch between pyiceberg-core and datafusion-python
            raise ReaderUnavailable(
                f"{exc} (datafusion-python {datafusion.__version__}; pyiceberg-core 0.11 needs 54.x)"
            ) from exc
        sql = f"SELECT {_sql_columns(columns)} FROM t{sql_where(row_filter, 'datafusion')}"
        result = ctx.sql(sql).to_arrow_table()
    return _uuid_columns_as_extension(result, load_metadata_json(metadata_location))


def _uuid_field_ids(metadata: dict[str, Any]) -> set[int]:
    """Field ids whose Iceberg type is ``uuid`` in any schema of the metadata (top level)."""
    schemas = list(metadata.get("schemas") or []) + ([metadata["schema"]] if "schema" in metadata else [])
    return {int(f["id"]) for s in schemas for f in s.get("fields", []) if f.get("type") == "uuid"}


def _uuid_columns_as_extension(table: pa.Table, metadata: dict[str, Any]) -> pa.Table:
    """iceberg-rust returns uuid as fixed_size_binary(16): wrap those columns as ``pa.uuid()``."""
    uuid_ids = _uuid_field_ids(metadata)
    for i, field in enumerate(table.schema):
        field_id = (field.metadata or {}).get(b"PARQUET:field_id")
        if field.type == pa.binary(16) and field_id is not None and int(field_id) in uuid_ids:
            chunks = [pa.ExtensionArray.from_storage(pa.uuid(), c) for c in table.column(i).chunks]
            column = pa.chunked_array(chunks, type=pa.uuid())
            table = table.set_column(i, pa.field(field.name, pa.uuid(), field.nullable), column)
    return table


# Acceptance cases a reader is known to get wrong (by case name -> why), beyond cases.json's records.
KNOWN_FAILURES: dict[str, dict[str, str]] = {
    "pyiceberg": {},
    "duckdb": {},
    "iceberg_rust": {
        "p10b_chdb_v2_position_deletes": (
            "iceberg-rust rejects chDB's partition spec: 'Cannot create partition with name: 'id' that "
            "conflicts with schema field and is not an identity transform'"
        ),
    },
}

READERS: dict[str, Callable[..., pa.Table]] = {
    "pyiceberg": read_with_pyiceberg,
    "duckdb": read_with_duckdb,
    "iceberg_rust": read_with_iceberg_rust,
}


# ---------------------------------------------------------------- comparing results


def sorted_rows(table: pa.Table, columns: list[str] | None = None) -> list[tuple[str, ...]]:
    """The rows of ``columns`` as canonical strings (fingerprint rendering), sorted: a comparable form."""
    from tests.support.fixtures import canonical_rows

    return sorted(tuple(row) for row in canonical_rows(table, columns))


def assert_same_rows(
    a: pa.Table,
    b: pa.Table,
    columns: list[str] | None = None,
    labels: tuple[str, str] = ("left", "right"),
    max_shown: int = 10,
) -> None:
    """Assert two results hold the same multiset of rows over ``columns``; the message shows the diff."""
    cols = list(columns) if columns is not None else a.column_names
    left, right = Counter(sorted_rows(a, cols)), Counter(sorted_rows(b, cols))
    if left == right:
        return
    only_left = sorted((left - right).elements())
    only_right = sorted((right - left).elements())
    lines = [
        f"rows differ over columns {cols}: {labels[0]} has {a.num_rows} rows, {labels[1]} has {b.num_rows}",
        f"  only in {labels[0]} ({len(only_left)}):",
        *(f"    {row}" for row in only_left[:max_shown]),
        *([f"    ... {len(only_left) - max_shown} more"] if len(only_left) > max_shown else []),
        f"  only in {labels[1]} ({len(only_right)}):",
        *(f"    {row}" for row in only_right[:max_shown]),
        *([f"    ... {len(only_right) - max_shown} more"] if len(only_right) > max_shown else []),
    ]
    raise AssertionError("\n".join(lines))
