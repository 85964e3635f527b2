"""Partition evolution: the ``UpdateSpec`` builder, an Action that adds a spec and makes it the default.

The recorded changes (add / remove / rename partition fields) are replayed on the table's default
spec at every commit attempt:

- the new spec gets the next spec id (an identical existing spec is reused instead, see
  ``spec.updates.AddPartitionSpec``);
- new partition fields get ids from the table's ``last-partition-id`` + 1. Ids are never reused,
  except that in format version 2+ re-adding a field with the same source column and transform as a
  field of any earlier spec (and the same name, when a name is given) takes that field's id (and its
  name, when no name is given), as the spec requires for equivalent fields and as Iceberg Java does;
- format version 1 specs must keep their field positions: a removed field stays, with its transform
  replaced by ``void``; v2+ drop it. A void field whose name a new field wants is renamed
  ``<name>_<field id>``.

Default names follow Iceberg: ``id`` (identity), ``id_bucket_16``, ``name_trunc_4``, ``ts_year``,
``ts_month``, ``ts_day``, ``ts_hour``, ``id_null`` (void).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Self

from icefloe.errors import ValidationError
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema, field_path
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    UnknownTransform,
    VoidTransform,
    YearTransform,
    parse_transform,
)
from icefloe.spec.types import ListType, MapType, StructType
from icefloe.spec.updates import LAST_ADDED, AddPartitionSpec, SetDefaultSpec, TableUpdate
from icefloe.txn.schema_evolution import PendingAction
from icefloe.txn.transaction import AttemptContext, replayed_on_fresh_metadata

_TIME_TRANSFORMS = (YearTransform, MonthTransform, DayTransform, HourTransform)


def default_partition_name(source_name: str, transform: Transform) -> str:
    """Iceberg's default partition field name for a transform of a source column."""
    if isinstance(transform, IdentityTransform):
        return source_name
    if isinstance(transform, BucketTransform):
        return f"{source_name}_bucket_{transform.num_buckets}"
    if isinstance(transform, TruncateTransform):
        return f"{source_name}_trunc_{transform.width}"
    if isinstance(transform, VoidTransform):
        return f"{source_name}_null"
    return f"{source_name}_{transform}"


@dataclass(frozen=True)
class _Add:
    source: str
    transform: Transform
    name: str | None


@dataclass(frozen=True)
class _Remove:
    name: str


@dataclass(frozen=True)
class _Rename:
    name: str
    new_name: str


_Op = _Add | _Remove | _Rename


@dataclass
class _Draft:
    """One replay of the recorded changes on one table metadata."""

    md: TableMetadata
    schema: Schema
    spec: PartitionSpec
    case_sensitive: bool
    last_id: int
    deletes: set[int] = field(default_factory=set)
    renames: dict[str, str] = field(default_factory=dict)
    adds: list[PartitionField] = field(default_factory=list)

    def by_name(self, name: str) -> PartitionField | None:
        return next((f for f in self.spec.fields if f.name == name), None)

    def by_final_name(self, name: str) -> PartitionField | None:
        return next((f for f in self.spec.fields if self.renames.get(f.name, f.name) == name), None)

    def added_by_name(self, name: str) -> PartitionField | None:
        return next((f for f in self.adds if f.name == name), None)

    def add(self, op: _Add) -> None:
        source_id = self._source_id(op.source)
        source_name = self.schema.find_column_name(source_id) or op.source
        transform = op.transform
        if isinstance(transform, UnknownTransform):
            raise ValidationError(f"cannot partition by unknown transform {transform}")
        if not isinstance(transform, VoidTransform):
            source_type = self.schema.find_type(source_id)
            if not transform.can_transform(source_type):
                raise ValidationError(
                    f"cannot partition by {transform}({source_name}): the transform does not apply to "
                    f"{source_type}"
                )
        key = (source_id, str(transform))
        existing = next((f for f in self.spec.fields if (f.source_id, str(f.transform)) == key), None)
        if existing is not None and existing.field_id in self.deletes:
            self.deletes.discard(existing.field_id)  # removed earlier in this update: undo the removal
            if op.name is not None and op.name != existing.name:
                self.renames[existing.name] = op.name
            return
        if existing is not None:
            raise ValidationError(
                f"cannot add partition field {transform}({source_name}): it exists already as "
                f"{existing.name!r}"
            )
        if any((f.source_id, str(f.transform)) == key for f in self.adds):
            raise ValidationError(f"cannot add partition field {transform}({source_name}) twice")
        new = self._recycle_or_create(source_id, transform, op.name)
        if new.name == "":
            new = replace(new, name=default_partition_name(source_name, transform))
        if self.added_by_name(new.name) is not None:
            raise ValidationError(f"cannot add partition field {new.name!r} twice")
        clash = self.by_final_name(new.name)
        if clash is not None:
            if not self._retired(clash):
                raise ValidationError(
                    f"cannot add partition field {new.name!r}: the name is taken by {clash.transform}"
                    f"({self.schema.find_column_name(clash.source_id)})"
                )
            self.renames[clash.name] = f"{clash.name}_{clash.field_id}"
        self.adds.append(new)

    def _retired(self, f: PartitionField) -> bool:
        """A void field, or one removed by this update: its name may be taken over."""
        return isinstance(f.transform, VoidTransform) or f.field_id in self.deletes

    def _recycle_or_create(self, source_id: int, transform: Transform, name: str | None) -> PartitionField:
        if self.md.format_version >= 2:
            in_use = {f.field_id for f in (*self.spec.fields, *self.adds)}
            for spec in self.md.partition_specs:
                for f in spec.fields:
                    if (
                        f.source_id == source_id
                        and f.transform == transform
                        and (name is None or f.name == name)
                        and f.field_id not in in_use
                    ):
                        reused = f.name if name is None else name
                        return PartitionField(source_id, f.field_id, transform, reused)
        self.last_id += 1
        return PartitionField(source_id, self.last_id, transform, name or "")

    def _source_id(self, name: str) -> int:
        source = self.schema.find_field(name, self.case_sensitive)
        path = field_path(self.schema, source.field_id) or []
        if any(not isinstance(p.field_type, StructType) for p in path[:-1]):
            raise ValidationError(f"cannot partition by {name!r}: columns in lists or maps cannot be sources")
        if isinstance(source.field_type, StructType | ListType | MapType):
            raise ValidationError(
                f"cannot partition by {name!r}: it is a {source.field_type}, not a primitive"
            )
        return source.field_id

    def remove(self, op: _Remove) -> None:
        if self.added_by_name(op.name) is not None:
            raise ValidationError(f"cannot remove partition field {op.name!r}: it is added by this update")
        if op.name in self.renames:
            raise ValidationError(f"cannot both rename and remove partition field {op.name!r}")
        f = self.by_name(op.name)
        if f is None:
            raise ValidationError(
                f"cannot remove partition field {op.name!r}: no such field in spec {self.spec.spec_id}"
            )
        if f.field_id in self.deletes:
            raise ValidationError(f"partition field {op.name!r} is already removed by this update")
        self.deletes.add(f.field_id)

    def rename(self, op: _Rename) -> None:
        if self.added_by_name(op.name) is not None:
            raise ValidationError(
                f"cannot rename partition field {op.name!r}: it is added by this update "
                "(give add_field the final name)"
            )
        f = self.by_name(op.name)
        if f is None:
            raise ValidationError(
                f"cannot rename partition field {op.name!r}: no such field in spec {self.spec.spec_id}"
            )
        if f.field_id in self.deletes:
            raise ValidationError(f"cannot both remove and rename partition field {op.name!r}")
        clash = self.by_final_name(op.new_name)
        if clash is not None and clash is not f and self._retired(clash):
            self.renames[clash.name] = f"{clash.name}_{clash.field_id}"
        self.renames[op.name] = op.new_name

    def result(self) -> PartitionSpec:
        fields: list[PartitionField] = []
        for f in self.spec.fields:
            name = self.renames.get(f.name, f.name)
            if f.field_id not in self.deletes:
                fields.append(replace(f, name=name))
            elif self.md.format_version == 1:
                fields.append(PartitionField(f.source_id, f.field_id, VoidTransform(), name, f.source_ids))
        fields.extend(self.adds)
        spec = PartitionSpec(*fields, spec_id=self.spec.spec_id)
        spec.check_against(self.schema)
        changed = {f.field_id for f in self.adds} | {
            f.field_id for f in self.spec.fields if self.renames.get(f.name, f.name) != f.name
        }
        _check_spec_names(spec, self.schema, changed)
        check_redundant_fields(spec, self.schema)
        return spec


class UpdateSpec(PendingAction):
    """Record partition spec changes; as an Action it returns AddPartitionSpec + SetDefaultSpec."""

    def __init__(
        self,
        metadata: TableMetadata,
        *,
        case_sensitive: bool = True,
        on_commit: Callable[[Any], None] | None = None,
    ) -> None:
        self._md = metadata
        self._case_sensitive = case_sensitive
        self._on_commit = on_commit
        self._ops: list[_Op] = []
        unknown = [f.name for f in metadata.spec().fields if isinstance(f.transform, UnknownTransform)]
        if unknown:
            raise ValidationError(
                f"cannot evolve a partition spec with unknown transforms (fields {unknown})"
            )

    def add_field(
        self, source_column_name: str, transform: Transform | str = "identity", name: str | None = None
    ) -> Self:
        """Partition by ``transform(source_column_name)`` (name defaults to Iceberg's naming)."""
        t = parse_transform(transform) if isinstance(transform, str) else transform
        if name is not None and not name:
            raise ValidationError("a partition field name cannot be empty")
        return self._record(_Add(source_column_name, t, name))

    def add_identity(self, source_column_name: str) -> Self:
        """Partition by the column's value."""
        return self.add_field(source_column_name, IdentityTransform())

    def remove_field(self, name: str) -> Self:
        """Stop partitioning by a field (v1: the field stays with a void transform)."""
        return self._record(_Remove(name))

    def rename_field(self, name: str, new_name: str) -> Self:
        """Rename a partition field (its field id stays)."""
        if not new_name:
            raise ValidationError("a partition field name cannot be empty")
        return self._record(_Rename(name, new_name))

    def preview(self) -> PartitionSpec:
        """The spec this update produces on the metadata it was created from."""
        return self._evolve(self._md) or self._md.spec()

    def apply(self, ctx: AttemptContext, current: TableMetadata) -> list[TableUpdate]:
        """Replay the changes on the current default spec; AddPartitionSpec + SetDefaultSpec."""
        moved = (
            current.spec() != self._md.spec()
            or current.schema() != self._md.schema()
            or current.last_partition_id != self._md.last_partition_id
        )
        with replayed_on_fresh_metadata(
            moved, "cannot apply the partition spec update: the table changed concurrently"
        ):
            spec = self._evolve(current)
        if spec is None:
            return []
        return [AddPartitionSpec(spec), SetDefaultSpec(LAST_ADDED)]

    def _record(self, op: _Op) -> Self:
        self._ops.append(op)
        try:
            self._evolve(self._md)
        except BaseException:
            self._ops.pop()
            raise
        return self

    def _evolve(self, md: TableMetadata) -> PartitionSpec | None:
        draft = _Draft(md, md.schema(), md.spec(), self._case_sensitive, md.last_partition_id)
        for op in self._ops:
            if isinstance(op, _Add):
                draft.add(op)
            elif isinstance(op, _Remove):
                draft.remove(op)
            else:
                draft.rename(op)
        spec = draft.result()
        return None if spec.fields == md.spec().fields else spec


def _check_spec_names(spec: PartitionSpec, schema: Schema, field_ids: set[int]) -> None:
    """A new or renamed partition field may take a column's name only as identity of that column.

    Fields the update leaves alone are not checked, so tables written by engines that allow such
    names (chDB names ``bucket(id)`` "id") can still evolve.
    """
    for f in spec.fields:
        if isinstance(f.transform, VoidTransform) or f.field_id not in field_ids:
            continue
        try:
            column = schema.find_field(f.name)
        except ValidationError:
            continue
        if not isinstance(f.transform, IdentityTransform):
            raise ValidationError(
                f"partition field name {f.name!r} is a column name; only an identity partition of that "
                "column may use it"
            )
        if column.field_id != f.source_id:
            raise ValidationError(
                f"identity partition field {f.name!r} is named after a different column than its source "
                f"{schema.find_column_name(f.source_id)!r}"
            )


def check_redundant_fields(spec: PartitionSpec, schema: Schema) -> None:
    """At most one time transform (year/month/day/hour) per source column, and no field twice.

    Used by ``update_spec`` and by ``Catalog.create_table`` (one rule for both, as in Iceberg Java's
    ``PartitionSpec.Builder``): ``month(ts)`` with ``hour(ts)`` orders the same rows twice.
    """
    seen: dict[int, PartitionField] = {}
    pairs: dict[tuple[int, str], PartitionField] = {}
    for f in spec.fields:
        twin = pairs.setdefault((f.source_id, str(f.transform)), f)
        if twin is not f and not isinstance(f.transform, VoidTransform):
            raise ValidationError(
                f"redundant partition fields {twin.name!r} and {f.name!r}: both are {f.transform} of "
                f"column {schema.find_column_name(f.source_id)!r}: remove one"
            )
        if isinstance(f.transform, _TIME_TRANSFORMS):
            other = seen.get(f.source_id)
            if other is not None:
                raise ValidationError(
                    f"redundant partition fields {other.name!r} ({other.transform}) and {f.name!r} "
                    f"({f.transform}) on column {schema.find_column_name(f.source_id)!r}: remove one"
                )
            seen[f.source_id] = f
