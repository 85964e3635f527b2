"""TableScan's error boundary: a bad location found in metadata names the metadata file it came from."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog import load_catalog
from icefloe.errors import UnsupportedLocation, ValidationError
from icefloe.formats.metadata.files import clear_metadata_cache
from icefloe.io.fileio import local_path
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField


@pytest.mark.parametrize(
    "bad",
    [
        # a flipped bit turned "file:///tmp/..." into a URL naming a host
        lambda loc: loc.replace("file:///", "file://otherhost/", 1),
        lambda loc: "s3:" + loc.removeprefix("file://"),
    ],
    ids=["remote-host", "malformed-s3"],
)
def test_a_manifest_list_location_no_fileio_can_open_names_the_metadata_file(
    tmp_path: Path, bad: object
) -> None:
    catalog = load_catalog(uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace(("db",))
    table = catalog.create_table("db.t", Schema(NestedField(1, "id", LongType(), True)))
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    metadata_file = table.metadata_location.removeprefix("file://")
    doc = json.loads(Path(metadata_file).read_text())
    for snap in doc["snapshots"]:
        snap["manifest-list"] = bad(snap["manifest-list"])  # type: ignore[operator]
    Path(metadata_file).write_text(json.dumps(doc))
    clear_metadata_cache()

    with pytest.raises(UnsupportedLocation) as caught:
        load_catalog(uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=str(tmp_path / "wh")).load_table(
            "db.t"
        ).scan().to_arrow()
    message = str(caught.value)
    assert Path(metadata_file).name in message
    assert f"snapshot {doc['current-snapshot-id']}" in message
    assert isinstance(caught.value, ValidationError)  # still bad input to whoever passes it directly


def test_a_location_given_directly_is_refused_without_scan_context() -> None:
    with pytest.raises(UnsupportedLocation, match="remote host is not supported: file://host/x"):
        local_path("file://host/x")
