"""Upgrading a table's format version (v1 -> v2 -> v3 -> v4, or several steps at once).

An upgrade changes table metadata only; data and manifests stay as they are and keep being
readable:

- to v2: sequence numbers start with the next commit (older entries read as sequence 0);
- to v3: ``next-row-id`` starts at 0; rows written before the upgrade get row ids when the next
  commit assigns ``first_row_id`` ranges to the v1/v2 data manifests it carries;
- to v4: the next commit writes the first root manifest, referencing the v1–v3 manifests as
  ``format_version`` 0 entries (``tree.v4_upgrade``); legacy position deletes and v3 deletion
  vectors stay valid inside the legacy delete manifests.

Downgrades and versions icefloe cannot write are refused before anything is committed.
"""

from __future__ import annotations

from dataclasses import dataclass

from icefloe.errors import Unsupported, ValidationError
from icefloe.spec.table_metadata import SUPPORTED_FORMAT_VERSIONS, TableMetadata
from icefloe.spec.updates import TableUpdate, UpgradeFormatVersion
from icefloe.txn.transaction import AttemptContext


def checked_format_version(table_name: str, current: int, requested: object) -> int:
    """``requested`` as a format version ``table_name`` (now at ``current``) may be upgraded to.

    ValidationError for something that is not a format version or would lower the version;
    Unsupported for a version icefloe does not know.
    """
    if isinstance(requested, bool) or not isinstance(requested, int):
        try:
            version = int(str(requested).strip())
        except ValueError:
            raise ValidationError(
                f"cannot upgrade table {table_name}: format version {requested!r} is not an integer"
            ) from None
    else:
        version = requested
    if version < min(SUPPORTED_FORMAT_VERSIONS):
        raise ValidationError(f"cannot upgrade table {table_name}: there is no format version {version}")
    if version > max(SUPPORTED_FORMAT_VERSIONS):
        raise Unsupported(
            f"cannot upgrade table {table_name} to format version {version}: icefloe supports "
            f"format versions {min(SUPPORTED_FORMAT_VERSIONS)} to {max(SUPPORTED_FORMAT_VERSIONS)}"
        )
    if version < current:
        raise ValidationError(
            f"cannot downgrade table {table_name} from format version {current} to {version}"
        )
    return version


@dataclass
class UpgradeFormat:
    """A transaction action raising the format version (re-checked on every commit attempt)."""

    table_name: str
    format_version: int

    def apply(self, ctx: AttemptContext, current: TableMetadata) -> list[TableUpdate]:
        """Nothing when the table is already at the version (e.g. a concurrent upgrade won)."""
        version = checked_format_version(self.table_name, current.format_version, self.format_version)
        if version == current.format_version:
            return []
        return [UpgradeFormatVersion(version)]

    def committed_files(self) -> list[str]:
        """No files."""
        return []
