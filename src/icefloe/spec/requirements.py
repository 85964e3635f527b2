"""Table requirements (the REST commit vocabulary): checks a commit makes against the metadata it
is applied to. A failed check raises ``CommitConflict``. Re-exported by ``icefloe.spec.updates``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

from icefloe.errors import CommitConflict
from icefloe.spec.table_metadata import TableMetadata


def _require_table(md: TableMetadata | None, what: str) -> TableMetadata:
    if md is None:
        raise CommitConflict(f"requirement failed ({what}): the table does not exist")
    return md


@dataclass(frozen=True)
class AssertCreate:
    """The table must not exist yet."""

    def validate(self, md: TableMetadata | None) -> None:
        """Raise CommitConflict when the table exists."""
        if md is not None:
            raise CommitConflict("requirement failed: the table was created by another writer")


@dataclass(frozen=True)
class AssertTableUUID:
    """The table must still be the same table (same UUID)."""

    uuid: str

    def validate(self, md: TableMetadata | None) -> None:
        """Raise CommitConflict when the UUID differs."""
        md = _require_table(md, "table uuid")
        if md.table_uuid.lower() != self.uuid.lower():
            raise CommitConflict(
                f"requirement failed: table UUID changed from {self.uuid} to {md.table_uuid} "
                "(the table was dropped and re-created)"
            )


@dataclass(frozen=True)
class AssertRefSnapshotId:
    """A ref must still point at a snapshot (or, with ``snapshot_id=None``, must not exist)."""

    ref: str
    snapshot_id: int | None

    def validate(self, md: TableMetadata | None) -> None:
        """Raise CommitConflict when the ref moved, appeared or disappeared."""
        md = _require_table(md, f"ref {self.ref!r}")
        current = md.refs.get(self.ref)
        if self.snapshot_id is None:
            if current is not None:
                raise CommitConflict(
                    f"requirement failed: ref {self.ref!r} was created concurrently "
                    f"(now at snapshot {current.snapshot_id})"
                )
            return
        if current is None:
            raise CommitConflict(
                f"requirement failed: ref {self.ref!r} was removed (expected snapshot {self.snapshot_id})"
            )
        if current.snapshot_id != self.snapshot_id:
            raise CommitConflict(
                f"requirement failed: ref {self.ref!r} moved from snapshot {self.snapshot_id} "
                f"to {current.snapshot_id}"
            )


class _IdRequirement:
    """Shared check of requirements that compare one integer id of the table metadata."""

    _md_attr: ClassVar[str] = ""
    _label: ClassVar[str] = ""

    def validate(self, md: TableMetadata | None) -> None:
        """Raise CommitConflict when the id changed."""
        md = _require_table(md, self._label)
        expected = getattr(self, fields(self)[0].name)  # type: ignore[arg-type]
        actual = getattr(md, self._md_attr)
        if actual != expected:
            raise CommitConflict(f"requirement failed: {self._label} changed from {expected} to {actual}")


@dataclass(frozen=True)
class AssertLastAssignedFieldId(_IdRequirement):
    """The table's last assigned column id must be unchanged."""

    _md_attr: ClassVar[str] = "last_column_id"
    _label: ClassVar[str] = "last assigned field id"
    last_assigned_field_id: int


@dataclass(frozen=True)
class AssertCurrentSchemaId(_IdRequirement):
    """The current schema id must be unchanged."""

    _md_attr: ClassVar[str] = "current_schema_id"
    _label: ClassVar[str] = "current schema id"
    current_schema_id: int


@dataclass(frozen=True)
class AssertLastAssignedPartitionId(_IdRequirement):
    """The table's last assigned partition field id must be unchanged."""

    _md_attr: ClassVar[str] = "last_partition_id"
    _label: ClassVar[str] = "last assigned partition id"
    last_assigned_partition_id: int


@dataclass(frozen=True)
class AssertDefaultSpecId(_IdRequirement):
    """The default partition spec id must be unchanged."""

    _md_attr: ClassVar[str] = "default_spec_id"
    _label: ClassVar[str] = "default partition spec id"
    default_spec_id: int


@dataclass(frozen=True)
class AssertDefaultSortOrderId(_IdRequirement):
    """The default sort order id must be unchanged."""

    _md_attr: ClassVar[str] = "default_sort_order_id"
    _label: ClassVar[str] = "default sort order id"
    default_sort_order_id: int


TableRequirement = (
    AssertCreate
    | AssertTableUUID
    | AssertRefSnapshotId
    | AssertLastAssignedFieldId
    | AssertCurrentSchemaId
    | AssertLastAssignedPartitionId
    | AssertDefaultSpecId
    | AssertDefaultSortOrderId
)


def validate_requirements(
    md: TableMetadata | None, requirements: list[TableRequirement] | tuple[TableRequirement, ...]
) -> None:
    """Check every requirement against ``md``; the first failure raises CommitConflict."""
    for requirement in requirements:
        requirement.validate(md)
