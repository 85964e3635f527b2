"""Scan tasks: one data file with the deletes that apply to it and the filter left to apply."""

from __future__ import annotations

from dataclasses import dataclass, field

from icefloe.expressions.ast import AlwaysTrue, Expression
from icefloe.spec.content import DataFile, ManifestEntry


@dataclass(frozen=True, slots=True)
class DeleteFileRef:
    """A delete file (position, equality or DV) with the data sequence number it applies at."""

    delete_file: DataFile
    data_sequence_number: int


@dataclass(frozen=True, slots=True)
class FileScanTask:
    """Read ``data_file``, drop the rows its ``deletes`` mark, then apply ``residual``."""

    entry: ManifestEntry
    deletes: tuple[DeleteFileRef, ...] = ()
    residual: Expression = field(default_factory=AlwaysTrue)

    @property
    def data_file(self) -> DataFile:
        """The data file to read."""
        return self.entry.data_file

    @property
    def data_sequence_number(self) -> int:
        """The data file's data sequence number (0 for v1 tables)."""
        return self.entry.sequence_number or 0

    @property
    def file_path(self) -> str:
        """Location of the data file."""
        return self.entry.data_file.file_path
