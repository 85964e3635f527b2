"""ORC data files read as Arrow: a corrupt string or field id is a CorruptMetadata naming the file."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.orc as orc
import pytest

from icefloe.errors import CorruptMetadata
from icefloe.formats.orc.data_files import read_orc_file
from icefloe.io.fileio import FileIO


def test_a_string_that_is_not_utf8_is_corrupt_metadata_naming_the_file(tmp_path: Path) -> None:
    # ORC stores string bytes as they are and checks no encoding (found by tests/fuzz: the read
    # returned an Arrow string column with invalid UTF-8, which fails whoever looks at the values)
    path = tmp_path / "part-0.orc"
    orc.write_table(pa.table({"name": ["alpha", "zzzzzzzz", None]}), str(path), compression="uncompressed")
    io = FileIO()
    table, rows = read_orc_file(io, str(path))
    assert rows == 3 and table.column("name").to_pylist() == ["alpha", "zzzzzzzz", None]
    data = path.read_bytes()
    # the value is stored four times: row index statistics, the data stream, stripe and file
    # statistics; the second is the one the reader returns
    at = data.index(b"zzzzzzzz", data.index(b"zzzzzzzz") + 1)
    path.write_bytes(data[: at + 2] + b"\xff" + data[at + 3 :])
    with pytest.raises(CorruptMetadata, match=r"part-0\.orc"):
        read_orc_file(io, str(path))


def test_a_malformed_field_id_attribute_is_corrupt_metadata_naming_the_file(tmp_path: Path) -> None:
    # found by tests/fuzz: a flipped byte in an iceberg.id attribute was a ValidationError about an
    # "Arrow field", naming no file
    path = tmp_path / "part-1.orc"
    field = pa.field("x", pa.int64(), metadata={b"iceberg.id": b"17"})
    orc.write_table(pa.table([pa.array([1, 2])], schema=pa.schema([field])), str(path))
    io = FileIO()
    table, _ = read_orc_file(io, str(path))
    assert table.schema.field("x").metadata[b"PARQUET:field_id"] == b"17"
    data = path.read_bytes()
    assert data.count(b"iceberg.id\x12\x0217") == 1  # the attribute: key, then the value "17"
    path.write_bytes(data.replace(b"iceberg.id\x12\x0217", b"iceberg.id\x12\x021\xb7"))
    with pytest.raises(CorruptMetadata, match=r"part-1\.orc.*malformed field id"):
        read_orc_file(io, str(path))
