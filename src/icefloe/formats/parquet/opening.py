"""Opening a Parquet file to read: on an object store, with its recorded size and no size request.

pyarrow's Python binding opens a file by path only, and its S3 client then asks for the object's
size (a HEAD) before the first ranged GET, because a Parquet reader starts at the footer. A
manifest entry already records the size (``file_size_in_bytes``), and the one place pyarrow takes
a size from Python is a dataset fragment (``ParquetFileFormat.make_fragment(file_size=...)``):
opened that way, a data file on S3 costs a GET for the footer and one for the columns, one round
trip fewer than HEAD, GET, GET. Iceberg Java hands its readers the recorded length the same way.

A recorded size that is wrong cannot turn into wrong rows: the reader looks for the footer and its
magic bytes at the end the size names, and fails ("Parquet magic bytes not found", an unreadable
footer) when they are not there. ``open_parquet`` then opens the file again the old way to say
what is wrong: missing (NotFound), another size than recorded or not Parquet (CorruptMetadata).

Local files are opened as before (a ``stat`` costs nothing worth saving), as is any file whose size
the caller does not know.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from icefloe.errors import CorruptMetadata, NotFound
from icefloe.io.fileio import FileIO

INT96_UNIT = "us"
"""INT96 timestamps (older writers) are read as microseconds, Iceberg's timestamp unit."""


class ParquetInput(Protocol):
    """The part of ``pyarrow.parquet.ParquetFile`` the data-file reader uses."""

    @property
    def schema_arrow(self) -> pa.Schema: ...

    @property
    def metadata(self) -> pq.FileMetaData: ...

    def read(self, columns: list[str] | None) -> pa.Table: ...

    def read_row_groups(self, row_groups: list[int], columns: list[str]) -> pa.Table: ...

    def iter_batches(
        self, batch_size: int, row_groups: list[int], columns: list[str]
    ) -> Iterator[pa.RecordBatch]: ...


@contextmanager
def open_parquet(io: FileIO, location: str, file_size: int | None = None) -> Iterator[ParquetInput]:
    """The Parquet file at ``location``, its footer read: through a fragment that knows its size
    when the file is not local and ``file_size`` is given, else as a ``ParquetFile``.

    NotFound when the file does not exist; CorruptMetadata when it is not readable Parquet or is
    not ``file_size`` bytes long. A fragment's failure does not say which it was (nor whether a
    request merely failed), so the file is then opened again by path, as without a size, and the
    size it really has is compared: failures cost the request saved, never a wrong answer.
    """
    fs, path = io.filesystem_and_path(location)
    if file_size is not None and not isinstance(fs, pafs.LocalFileSystem):
        fragment = _SizedFragment(fs, path, file_size)
        try:
            fragment.schema_arrow  # noqa: B018 - reads the footer
        except (pa.ArrowInvalid, OSError):
            pass  # told apart below
        else:
            yield fragment
            return
        with _opened_by_path(fs, path, location, expected_size=file_size) as parquet_file:
            yield parquet_file
        return
    with _opened_by_path(fs, path, location) as parquet_file:
        yield parquet_file


@contextmanager
def _opened_by_path(
    fs: pafs.FileSystem, path: str, location: str, expected_size: int | None = None
) -> Iterator[pq.ParquetFile]:
    try:
        source = fs.open_input_file(path)
    except FileNotFoundError:
        raise NotFound(f"data file does not exist: {location}", location=location) from None
    with source:
        if expected_size is not None and source.size() != expected_size:
            raise CorruptMetadata(
                f"Parquet file {location} is {source.size()} bytes, its manifest entry says {expected_size}",
                location=location,
            )
        try:
            parquet_file = pq.ParquetFile(
                source, coerce_int96_timestamp_unit=INT96_UNIT, page_checksum_verification=True
            )
        except (pa.ArrowInvalid, OSError) as exc:
            raise CorruptMetadata(f"cannot read Parquet file {location}: {exc}", location=location) from exc
        yield parquet_file


_FORMAT = ds.ParquetFileFormat(
    read_options=ds.ParquetReadOptions(coerce_int96_timestamp_unit=INT96_UNIT),
    default_fragment_scan_options=ds.ParquetFragmentScanOptions(page_checksum_verification=True),
)


class _SizedFragment:
    """A Parquet file read through a dataset fragment that knows the file's size (no HEAD)."""

    def __init__(self, fs: pafs.FileSystem, path: str, file_size: int) -> None:
        self._fragment = _FORMAT.make_fragment(path, filesystem=fs, file_size=file_size)

    @property
    def schema_arrow(self) -> pa.Schema:
        return self._fragment.physical_schema  # reads the footer, once; the fragment keeps it

    @property
    def metadata(self) -> pq.FileMetaData:
        return self._fragment.metadata

    def read(self, columns: list[str] | None) -> pa.Table:
        return self._fragment.to_table(columns=columns)

    def read_row_groups(self, row_groups: list[int], columns: list[str]) -> pa.Table:
        """The row groups in the order given (a fragment's subset reads them in file order)."""
        if row_groups == sorted(set(row_groups)):
            return self._fragment.subset(row_group_ids=row_groups).to_table(columns=columns)
        return pa.concat_tables([self.read_row_groups([group], columns) for group in row_groups])

    def iter_batches(
        self, batch_size: int, row_groups: Sequence[int], columns: list[str]
    ) -> Iterator[pa.RecordBatch]:
        for group in row_groups:
            subset = self._fragment.subset(row_group_ids=[group])
            yield from subset.to_batches(columns=columns, batch_size=batch_size)
