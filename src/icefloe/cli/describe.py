"""Text views for the ``icefloe`` command: catalog listing, table info, snapshots and the metadata tree.

Every view returns the lines to print (plain text, columns aligned with spaces), so the command
line stays a thin shell around them. Metadata trees are read through the read seam
(``tree.read_seam``) and the v4 root reader (``tree.v4_read``); nothing here parses files.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime

from icefloe.catalog.base import Catalog
from icefloe.catalog.identifiers import Namespace, identifier_to_string
from icefloe.errors import NoSuchNamespace
from icefloe.io.fileio import normalize_location
from icefloe.spec.content import ManifestContent, ManifestEntry, ManifestFile
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.sort_order import SortOrder
from icefloe.spec.types import IcebergType, ListType, MapType, NestedField, StructType
from icefloe.table.table import Table
from icefloe.tree import summary as counters
from icefloe.tree.read_seam import manifest_refs
from icefloe.tree.v4_read import dv_codec, read_root

Row = Sequence[str]

BRANCH_MIDDLE = "|-- "
BRANCH_LAST = "`-- "
INDENT = "  "


# -- text helpers -----------------------------------------------------------------------------------


def aligned(rows: Sequence[Row], indent: str = "") -> list[str]:
    """Rows of cells as lines, each column padded to its widest cell (trailing spaces trimmed)."""
    if not rows:
        return []
    columns = max(len(r) for r in rows)
    widths = [max((len(r[i]) for r in rows if i < len(r)), default=0) for i in range(columns)]
    return [(indent + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False))).rstrip() for r in rows]


def as_tree(rows: Sequence[Row]) -> list[str]:
    """Aligned rows drawn as the children of the line above them."""
    lines = aligned(rows)
    return [(BRANCH_LAST if i == len(lines) - 1 else BRANCH_MIDDLE) + line for i, line in enumerate(lines)]


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` with its noun, plural unless ``n`` is 1 (``1 manifest``, ``3 manifests``)."""
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"


def utc_iso(timestamp_ms: int) -> str:
    """Epoch milliseconds as an ISO-8601 UTC timestamp with millisecond precision (``...Z``)."""
    seconds, millis = divmod(timestamp_ms, 1000)
    moment = datetime.fromtimestamp(seconds, UTC).replace(microsecond=millis * 1000)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def relative_path(location: str, path: str) -> str:
    """``path`` relative to the table ``location`` when it lies below it, else unchanged."""
    base = normalize_location(location).rstrip("/") + "/"
    canonical = normalize_location(path)
    return canonical[len(base) :] if canonical.startswith(base) else path


# -- catalog listing --------------------------------------------------------------------------------


def catalog_listing(catalog: Catalog, namespace: Namespace = ()) -> list[str]:
    """``namespace`` / ``table`` lines for every namespace below ``namespace`` (all when empty)."""
    if namespace and not catalog.namespace_exists(namespace):
        raise NoSuchNamespace(f"namespace {identifier_to_string(namespace)!r} does not exist")
    rows: list[Row] = []
    for ns in _namespaces_below(catalog, namespace):
        rows.append(("namespace", identifier_to_string(ns)))
        rows += [("table", identifier_to_string(t)) for t in catalog.list_tables(ns)]
    return aligned(rows)


def _namespaces_below(catalog: Catalog, namespace: Namespace) -> Iterator[Namespace]:
    """``namespace`` itself (unless it is the root) and every namespace below it, depth first."""
    if namespace:
        yield namespace
    for child in catalog.list_namespaces(namespace):
        yield from _namespaces_below(catalog, child)


# -- table info -------------------------------------------------------------------------------------


def table_info(table: Table) -> list[str]:
    """Format version, location, current snapshot, schema, specs, sort order, properties and refs."""
    md = table.metadata
    current = table.current_snapshot()
    overview = [
        ("table", table.name),
        ("format version", str(md.format_version)),
        ("uuid", md.table_uuid),
        ("location", md.location),
        ("metadata file", table.metadata_location),
        ("last updated", utc_iso(md.last_updated_ms)),
        ("current snapshot", _snapshot_headline(current) if current else "none"),
    ]
    schema = table.schema()
    sections = [
        aligned(overview),
        [f"schema {schema.schema_id}", *_schema_lines(schema)],
        *(_spec_lines(spec, schema, spec.spec_id == md.default_spec_id) for spec in md.partition_specs),
        _sort_order_lines(table.sort_order(), schema),
        ["properties", *(aligned(sorted(md.properties.items()), INDENT) or [INDENT + "none"])],
        ["refs", *(aligned(_ref_rows(table), INDENT) or [INDENT + "none"])],
    ]
    return [line for i, section in enumerate(sections) for line in ([""] if i else []) + section]


def _snapshot_headline(snapshot: Snapshot) -> str:
    """Id, sequence number, operation and commit time of a snapshot on one line."""
    operation = snapshot.operation or "unknown operation"
    return (
        f"{snapshot.snapshot_id} (sequence {snapshot.sequence_number}, {operation}, "
        f"{utc_iso(snapshot.timestamp_ms)})"
    )


def _schema_lines(schema: Schema) -> list[str]:
    """One line per field (nested fields under dotted names): id, name, type, required."""
    header: Row = ("id", "name", "type", "required")
    return aligned([header, *_field_rows(schema.fields, "")], INDENT)


def _field_rows(fields: Iterable[NestedField], prefix: str) -> Iterator[Row]:
    """Rows of ``fields`` and, depth first, of the fields nested in them."""
    for f in fields:
        name = prefix + f.name
        yield (str(f.field_id), name, _type_name(f.field_type), "required" if f.required else "optional")
        if isinstance(f.field_type, StructType | ListType | MapType):
            yield from _field_rows(f.field_type.fields, name + ".")


def _type_name(field_type: IcebergType) -> str:
    """A primitive type's name; ``struct`` / ``list`` / ``map`` for nested ones (their fields follow)."""
    if isinstance(field_type, StructType):
        return "struct"
    if isinstance(field_type, ListType):
        return "list"
    if isinstance(field_type, MapType):
        return "map"
    return str(field_type)


def _spec_lines(spec: PartitionSpec, schema: Schema, is_default: bool) -> list[str]:
    """A partition spec: field id, name, transform and source column of each field."""
    title = f"partition spec {spec.spec_id}" + (" (default)" if is_default else "")
    if not spec.fields:
        return [title, INDENT + "unpartitioned"]
    header: Row = ("field id", "name", "transform", "source")
    rows = [
        (str(pf.field_id), pf.name, str(pf.transform), _sources(schema, pf.source_ids or (pf.source_id,)))
        for pf in spec.fields
    ]
    return [title, *aligned([header, *rows], INDENT)]


def _sources(schema: Schema, source_ids: Iterable[int]) -> str:
    """Source columns as ``name (id)``, comma separated (``? (id)`` for dropped columns)."""
    return ", ".join(f"{schema.find_column_name(i) or '?'} ({i})" for i in source_ids)


def _sort_order_lines(order: SortOrder, schema: Schema) -> list[str]:
    """The default sort order: source column, transform, direction and null order of each key."""
    title = f"sort order {order.order_id}"
    if order.is_unsorted:
        return [title, INDENT + "unsorted"]
    header: Row = ("source", "transform", "direction", "nulls")
    rows = [
        (
            _sources(schema, sf.source_ids or (sf.source_id,)),
            str(sf.transform),
            sf.direction.value,
            sf.null_order.value,
        )
        for sf in order.fields
    ]
    return [title, *aligned([header, *rows], INDENT)]


def _ref_rows(table: Table) -> list[Row]:
    """Branches and tags: name, kind, snapshot id and the retention settings that are set."""
    rows: list[Row] = []
    for name, ref in sorted(table.refs().items()):
        retention = {
            "min-snapshots-to-keep": ref.min_snapshots_to_keep,
            "max-snapshot-age-ms": ref.max_snapshot_age_ms,
            "max-ref-age-ms": ref.max_ref_age_ms,
        }
        settings = " ".join(f"{k}={v}" for k, v in retention.items() if v is not None)
        rows.append((name, ref.ref_type.value, str(ref.snapshot_id), settings))
    return rows


# -- snapshots --------------------------------------------------------------------------------------

SNAPSHOT_HEADER: Row = (
    "snapshot id",
    "parent",
    "seq",
    "timestamp (UTC)",
    "operation",
    "added data files",
    "deleted data files",
    "total records",
    "refs",
)


def snapshot_lines(table: Table) -> list[str]:
    """A header, then one line per snapshot (oldest first) with its key summary counts and refs."""
    refs_by_snapshot: dict[int, list[str]] = {}
    for name, ref in sorted(table.refs().items()):
        refs_by_snapshot.setdefault(ref.snapshot_id, []).append(name)
    rows = [_snapshot_row(s, refs_by_snapshot.get(s.snapshot_id, [])) for s in table.snapshots()]
    return aligned([SNAPSHOT_HEADER, *rows])


def _snapshot_row(snapshot: Snapshot, refs: list[str]) -> Row:
    """One snapshot's cells; change counters missing from the summary are 0, totals ``-``."""
    summary = snapshot.summary
    parent = snapshot.parent_snapshot_id
    return (
        str(snapshot.snapshot_id),
        "-" if parent is None else str(parent),
        str(snapshot.sequence_number),
        utc_iso(snapshot.timestamp_ms),
        snapshot.operation or "-",
        summary.get(counters.ADDED_DATA_FILES, "0"),
        summary.get(counters.DELETED_DATA_FILES, "0"),
        summary.get(counters.TOTAL_RECORDS, "-"),
        ",".join(refs),
    )


# -- metadata tree ----------------------------------------------------------------------------------


def tree_lines(table: Table, snapshot_id: int | None = None) -> list[str]:
    """A picture of a snapshot's metadata tree (default: the current snapshot)."""
    snapshot = table.current_snapshot() if snapshot_id is None else table.snapshot_by_id(snapshot_id)
    if snapshot is None:
        return [f"{table.name} has no snapshots"]
    headline = f"snapshot {_snapshot_headline(snapshot)}"
    if snapshot.root_manifest is not None:
        return [headline, *_root_tree(table, snapshot.root_manifest)]
    return [headline, *_manifest_list_tree(table, snapshot)]


def _manifest_list_tree(table: Table, snapshot: Snapshot) -> list[str]:
    """v1–v3: the manifest list (or the manifests an old v1 snapshot lists itself) and its manifests."""
    manifests = manifest_refs(table.io, table.metadata, snapshot)
    if snapshot.manifest_list is not None:
        source = f"manifest list {relative_path(table.location(), snapshot.manifest_list)}"
    else:
        source = "manifests listed in the snapshot (v1)"
    rows = [_manifest_row(table.location(), m) for m in manifests]
    return [f"{source}  ({counted(len(manifests), 'manifest')})", *as_tree(rows)]


def _manifest_row(location: str, m: ManifestFile) -> Row:
    """A v1–v3 manifest: content, sequence number, file (row) counts per status, path."""
    return (
        m.content.name,
        f"seq={m.sequence_number}",
        f"added={_count(m.added_files_count)} ({_rows(m.added_rows_count)})",
        f"existing={_count(m.existing_files_count)} ({_rows(m.existing_rows_count)})",
        f"deleted={_count(m.deleted_files_count)} ({_rows(m.deleted_rows_count)})",
        relative_path(location, m.manifest_path),
    )


def _rows(value: int | None) -> str:
    """A manifest row count with its noun: ``1 row``, ``9 rows``, ``? rows``."""
    return "? rows" if value is None else counted(value, "row")


def _count(value: int | None) -> str:
    """A manifest count; ``?`` when the manifest list left it out."""
    return "?" if value is None else str(value)


def _root_tree(table: Table, root_location: str) -> list[str]:
    """v4: the root manifest, then its manifest references and its inline entries."""
    root = read_root(table.io, table.metadata, root_location)
    location = table.location()
    rows = [_reference_row(table, r) for r in root.refs] + [_inline_row(location, e) for e in root.inline]
    references = counted(len(root.refs), "manifest reference")
    inline = counted(len(root.inline), "inline entry", "inline entries")
    headline = f"root manifest {relative_path(location, root_location)}  ({references}, {inline})"
    return [headline, *as_tree(rows)]


def _reference_row(table: Table, ref: ManifestFile) -> Row:
    """A DATA_MANIFEST / DELETE_MANIFEST row: status, format, live counts, manifest DV, path.

    ``files`` / ``rows`` are the live (added, existing, modified) counts the reference records;
    a manifest DV masks ``mdv`` of those files without changing them.
    """
    kind = "DATA_MANIFEST" if ref.content == ManifestContent.DATA else "DELETE_MANIFEST"
    files = (ref.added_files_count or 0) + (ref.existing_files_count or 0) + ref.modified_files_count
    rows = (ref.added_rows_count or 0) + (ref.existing_rows_count or 0) + ref.modified_rows_count
    fmt = "format=4 leaf" if ref.format_version >= 4 else f"format={ref.format_version} legacy avro"
    return (
        kind,
        ref.status.name,
        fmt,
        f"files={files} rows={rows}",
        _manifest_dv(table, ref),
        relative_path(table.location(), ref.manifest_path),
    )


def _manifest_dv(table: Table, ref: ManifestFile) -> str:
    """``mdv=<cardinality>`` of a reference's manifest DV, empty without one."""
    if not ref.mdv:
        return ""
    return f"mdv={dv_codec(table.metadata).cardinality(ref.mdv, source=ref.manifest_path)}"


def _inline_row(location: str, entry: ManifestEntry) -> Row:
    """An inline DATA / EQUALITY_DELETES entry: status, record count, colocated DV, column files
    (the field ids each holds), path."""
    df = entry.data_file
    dv = df.deletion_vector
    dv_cell = "" if dv is None else f"dv={dv.cardinality}"
    dv_file = "" if dv is None else f"dv in {relative_path(location, dv.location)}"
    columns = df.column_files or ()
    column_cell = (
        "" if not columns else "columns=" + ";".join(",".join(map(str, c.field_ids)) for c in columns)
    )
    column_paths = [f"column file {relative_path(location, c.location)}" for c in columns]
    return (
        df.content.name,
        entry.status.name,
        "inline",
        f"records={df.record_count}",
        dv_cell,
        column_cell,
        relative_path(location, df.file_path),
        dv_file,
        *column_paths,
    )
