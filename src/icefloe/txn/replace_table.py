"""Replace a table's definition in place (``REPLACE TABLE`` / ``CREATE OR REPLACE TABLE``), as Iceberg does.

The table keeps its UUID, location, snapshots, history and refs other than ``main``. It gets a new
current schema (columns whose name path exists in the current schema keep their field ids, new
columns get ids above ``last-column-id``), a new default partition spec (partition field ids of
the same source and transform are reused from earlier specs), an unsorted sort order, and its
properties merged with the new ones. ``main`` is removed, so the table has no current snapshot
until something is written: a ``REPLACE TABLE ... AS SELECT`` queues an append after this action
in the same transaction, so the replacement and its data commit as one metadata swap.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from icefloe.errors import CommitConflict, ValidationError
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import MAIN_BRANCH, Snapshot
from icefloe.spec.sort_order import UNSORTED
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import IcebergType, ListType, MapType, NestedField, StructType
from icefloe.spec.updates import (
    FORMAT_VERSION_PROPERTY,
    LAST_ADDED,
    AddPartitionSpec,
    AddSchema,
    AddSortOrder,
    RemoveSnapshotRef,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetLocation,
    SetProperties,
    TableUpdate,
    UpgradeFormatVersion,
)
from icefloe.tree.changes import TreeChange
from icefloe.txn.producers import AppendFiles
from icefloe.txn.transaction import AttemptContext


def reuse_field_ids(schema: Schema, base: Schema, last_column_id: int) -> tuple[Schema, dict[int, int]]:
    """``schema`` renumbered against ``base``: same name path, same id; others above ``last_column_id``.

    Returns the schema and the map from ``schema``'s ids to the new ones.
    """
    next_id = last_column_id
    mapping: dict[int, int] = {}

    def take(old: int, existing: int | None) -> int:
        nonlocal next_id
        if existing is None:
            next_id += 1
            existing = next_id
        mapping[old] = existing
        return existing

    def fields(items: tuple[NestedField, ...], base_type: IcebergType | None) -> list[NestedField]:
        by_name = {f.name: f for f in base_type.fields} if isinstance(base_type, StructType) else {}
        ids = [take(f.field_id, by_name[f.name].field_id if f.name in by_name else None) for f in items]
        return [
            replace(
                f,
                field_id=new_id,
                field_type=renumber(f.field_type, by_name[f.name].field_type if f.name in by_name else None),
            )
            for f, new_id in zip(items, ids, strict=True)
        ]

    def renumber(t: IcebergType, b: IcebergType | None) -> IcebergType:
        if isinstance(t, StructType):
            return StructType(*fields(t.fields, b))
        if isinstance(t, ListType):
            bl = b if isinstance(b, ListType) else None
            element = take(t.element_id, bl.element_id if bl else None)
            return ListType(
                element, renumber(t.element_type, bl.element_type if bl else None), t.element_required
            )
        if isinstance(t, MapType):
            bm = b if isinstance(b, MapType) else None
            key = take(t.key_id, bm.key_id if bm else None)
            value = take(t.value_id, bm.value_id if bm else None)
            return MapType(
                key,
                renumber(t.key_type, bm.key_type if bm else None),
                value,
                renumber(t.value_type, bm.value_type if bm else None),
                t.value_required,
            )
        return t

    new_fields = fields(schema.fields, base.as_struct)
    identifiers = [mapping[i] for i in schema.identifier_field_ids]
    return Schema(*new_fields, schema_id=0, identifier_field_ids=identifiers), mapping


def _reuse_partition_ids(spec: PartitionSpec, md: TableMetadata) -> PartitionSpec:
    known = {(f.source_id, str(f.transform)): f.field_id for s in md.partition_specs for f in s.fields}
    next_id = md.last_partition_id
    out: list[PartitionField] = []
    for f in spec.fields:
        field_id = known.get((f.source_id, str(f.transform)))
        if field_id is None or any(o.field_id == field_id for o in out):
            next_id += 1
            field_id = next_id
        out.append(replace(f, field_id=field_id))
    return PartitionSpec(*out, spec_id=spec.spec_id)


@dataclass
class ReplaceTable:
    """The replacement of a table's schema, spec, sort order and properties; ``main`` is removed.

    ``schema`` and ``spec`` are as a new table's would be (any ids, the spec's source ids those of
    ``schema``); ids are re-assigned against the table on every commit attempt.
    """

    schema: Schema
    spec: PartitionSpec
    properties: dict[str, str] = field(default_factory=dict)
    location: str | None = None

    def apply(self, ctx: AttemptContext, current: TableMetadata) -> list[TableUpdate]:
        """The updates that turn ``current`` into the replaced table."""
        del ctx
        return replacement_updates(current, self.schema, self.spec, self.properties, self.location)

    def committed_files(self) -> list[str]:
        """No files."""
        return []


def replacement_updates(
    current: TableMetadata,
    schema: Schema,
    spec: PartitionSpec,
    properties: dict[str, str],
    location: str | None = None,
) -> list[TableUpdate]:
    """Updates replacing ``current``'s definition (see the module docstring)."""
    props = dict(properties)
    updates: list[TableUpdate] = []
    requested = props.pop(FORMAT_VERSION_PROPERTY, None)
    if requested is not None:
        try:
            version = int(requested)
        except ValueError:
            raise ValidationError(
                f"table property format-version must be an integer, got {requested!r}"
            ) from None
        if version < current.format_version:
            raise ValidationError(
                f"cannot replace a format version {current.format_version} table with version {version}"
            )
        if version >= 4 > current.format_version:
            raise ValidationError("upgrade to format version 4 with ALTER TABLE ... SET TBLPROPERTIES")
        if version > current.format_version:
            updates.append(UpgradeFormatVersion(version))
    fresh, mapping = reuse_field_ids(schema, current.schema(), current.last_column_id)
    new_spec = _reuse_partition_ids(spec.with_source_ids(mapping, spec_id=0), current)
    new_spec.check_against(fresh)
    updates += [
        AddSchema(fresh, max(current.last_column_id, fresh.highest_field_id)),
        SetCurrentSchema(LAST_ADDED),
        AddPartitionSpec(new_spec),
        SetDefaultSpec(LAST_ADDED),
        AddSortOrder(UNSORTED),
        SetDefaultSortOrder(LAST_ADDED),
    ]
    if props:
        updates.append(SetProperties(props))
    if location is not None and location.rstrip("/") != current.location.rstrip("/"):
        updates.append(SetLocation(location.rstrip("/")))
    if MAIN_BRANCH in current.refs:
        updates.append(RemoveSnapshotRef(MAIN_BRANCH))
    return updates


@dataclass
class ReplacementAppend(AppendFiles):
    """The rows of ``REPLACE ... AS SELECT``, written against the replaced schema and spec.

    Queued after :class:`ReplaceTable`; it fails (not retried) when a concurrent commit made the
    replacement come out with another schema or spec than the one the files were written for.
    """

    schema: Schema | None = None
    spec_id: int | None = None

    def change(self, ctx: AttemptContext, current: TableMetadata, parent: Snapshot | None) -> TreeChange:
        """The files, when the replaced table is still the one they were written for."""
        if (self.schema is not None and current.schema().fields != self.schema.fields) or (
            self.spec_id is not None and current.default_spec_id != self.spec_id
        ):
            raise CommitConflict(
                "cannot commit REPLACE TABLE ... AS SELECT: a concurrent commit changed the table's "
                "schema or partition specs while the rows were written",
                retryable=False,
            )
        return super().change(ctx, current, parent)
