"""Parquet files on an object store opened with their recorded size: no HEAD, same rows, and a
recorded size that is wrong fails clearly (moto over HTTP, requests counted by key)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from icefloe.errors import CorruptMetadata, NotFound
from icefloe.formats.arrow_schema import schema_to_arrow
from icefloe.formats.parquet.data_files import (
    read_parquet_data_file,
    row_group_starts,
    write_parquet_data_file,
)
from icefloe.io.fileio import FileIO
from icefloe.spec.content import DataFile
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from tests.formats.parquet.test_data_files import ALL_ROWS, ALL_TYPES
from tests.support.s3server import S3Server

ID_AND_NAME = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType()))
GROUP_ROWS = 10
"""Rows per row group of the ``_four_groups`` file (40 rows, so 4 groups)."""


def _write(io: FileIO, location: str, schema: Schema, rows: list[dict]) -> tuple[pa.Table, DataFile]:
    table = pa.Table.from_pylist(rows, schema=schema_to_arrow(schema))
    return table, write_parquet_data_file(io, location, table, schema, 0, (), {})


def _four_groups(io: FileIO, location: str) -> int:
    """Writes ids 0..39 in four row groups of ten (by pyarrow: icefloe writes one group for a table
    this small); returns the file's size."""
    table = pa.Table.from_pylist(
        [{"id": i, "s": f"s{i}"} for i in range(4 * GROUP_ROWS)], schema=schema_to_arrow(ID_AND_NAME)
    )
    fs, path = io.filesystem_and_path(location)
    with fs.open_output_stream(path) as out:
        pq.write_table(table, out, row_group_size=GROUP_ROWS)
    return int(fs.get_file_info(path).size or 0)


def _key(location: str, s3: S3Server) -> str:
    return location.removeprefix(f"s3://{s3.bucket}/")


def test_a_data_file_of_known_size_is_read_without_a_head(s3: S3Server, s3_warehouse: str) -> None:
    io = FileIO(s3.properties)
    location = f"{s3_warehouse}/data/8c1f5e0a-5a4b-4b0e-9d0e-1c2b3a4d5e6f.parquet"
    table, data_file = _write(io, location, ALL_TYPES, ALL_ROWS)
    key = _key(location, s3)

    s3.reset_counts()
    sized = read_parquet_data_file(io, location, ALL_TYPES, file_size=data_file.file_size_in_bytes)
    assert s3.requests() == [("GET", key), ("GET", key)]  # the footer, the columns

    s3.reset_counts()
    unsized = read_parquet_data_file(io, location, ALL_TYPES)
    assert s3.requests() == [("HEAD", key), ("GET", key), ("GET", key)]  # the size asked for first

    assert sized.schema.equals(unsized.schema, check_metadata=True)
    assert sized.schema.equals(schema_to_arrow(ALL_TYPES), check_metadata=True)
    assert sized.drop_columns(["d"]).equals(table.drop_columns(["d"]))  # NaN != NaN
    assert sized.drop_columns(["d"]).equals(unsized.drop_columns(["d"]))
    assert pc.is_nan(sized.column("d")).to_pylist() == [True, None]


def test_row_groups_and_leading_rows_read_as_by_path(s3: S3Server, s3_warehouse: str) -> None:
    io = FileIO(s3.properties)
    location = f"{s3_warehouse}/data/1b6f0a3c-2d4e-4f5a-8b9c-0d1e2f3a4b5c.parquet"
    size = _four_groups(io, location)

    def ids(
        row_groups: list[int], row_limits: list[int] | None = None, file_size: int | None = None
    ) -> list[int]:
        read = read_parquet_data_file(
            io, location, ID_AND_NAME, row_groups=row_groups, row_limits=row_limits, file_size=file_size
        )
        return list(read["id"].to_pylist())

    s3.reset_counts()
    assert ids(row_groups=[3, 0], file_size=size) == [*range(30, 40), *range(0, 10)]  # the order given
    assert ids(row_groups=[1, 2], file_size=size) == list(range(10, 30))
    assert ids(row_groups=[2, 0], row_limits=[3, 2], file_size=size) == [20, 21, 22, 0, 1]
    assert list(row_group_starts(io, location, size)) == [0, 10, 20, 30, 40]
    assert s3.counts().get("HEAD", 0) == 0
    # and by path (no size), the same
    assert ids(row_groups=[3, 0]) == [*range(30, 40), *range(0, 10)]
    assert ids(row_groups=[2, 0], row_limits=[3, 2]) == [20, 21, 22, 0, 1]


@pytest.mark.parametrize("error", [-1, +1, -100, +4096])
def test_a_wrong_recorded_size_fails_and_names_both_sizes(
    s3: S3Server, s3_warehouse: str, error: int
) -> None:
    io = FileIO(s3.properties)
    location = f"{s3_warehouse}/data/5e2d8b1a-7c3f-4e6d-9a0b-2c4d6e8f0a1b.parquet"
    _, data_file = _write(io, location, ID_AND_NAME, [{"id": i, "s": str(i)} for i in range(100)])
    real = data_file.file_size_in_bytes
    with pytest.raises(CorruptMetadata, match=rf"is {real} bytes, its manifest entry says {real + error}"):
        read_parquet_data_file(io, location, ID_AND_NAME, file_size=real + error)
    with pytest.raises(CorruptMetadata, match=rf"is {real} bytes, its manifest entry says {real + error}"):
        row_group_starts(io, location, real + error)


def test_a_missing_file_of_known_size_is_not_found(s3: S3Server, s3_warehouse: str) -> None:
    io = FileIO(s3.properties)
    location = f"{s3_warehouse}/data/0a9b8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d.parquet"
    with pytest.raises(NotFound, match=r"data file does not exist: .*0a9b8c7d"):
        read_parquet_data_file(io, location, ID_AND_NAME, file_size=1234)


def test_a_corrupt_file_of_the_recorded_size_is_corrupt(s3: S3Server, s3_warehouse: str) -> None:
    io = FileIO(s3.properties)
    location = f"{s3_warehouse}/data/3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f.parquet"
    junk = b"PAR1" + b"\x00" * 60 + b"PAR1"
    io.new_output(location).write_bytes(junk)
    with pytest.raises(CorruptMetadata, match=r"cannot read Parquet file .*3c4d5e6f"):
        read_parquet_data_file(io, location, ID_AND_NAME, file_size=len(junk))


def test_a_local_file_is_read_by_path_whatever_size_is_recorded(tmp_path: object) -> None:
    """Local reads are unchanged: the size is not asked for by a request, nor checked."""
    io = FileIO()
    location = f"file://{tmp_path}/7d8e9f0a-1b2c-4d3e-8f4a-5b6c7d8e9f0a.parquet"
    table, data_file = _write(io, location, ID_AND_NAME, [{"id": 1, "s": "a"}])
    back = read_parquet_data_file(io, location, ID_AND_NAME, file_size=data_file.file_size_in_bytes + 7)
    assert back.equals(table)
