"""Where new files of a table go: manifests, manifest lists, data files.

Defaults follow the usual Iceberg layout: ``<location>/metadata/`` for metadata files (override with
``write.metadata.path``) and ``<location>/data/<partition path>/`` for data files (override with
``write.data.path``). Partition paths look like ``category=a%2Fb/ts_day=2024-01-02``: each field
name and human-readable value is URL-escaped as Java's ``URLEncoder`` does.
"""

from __future__ import annotations

import hashlib
import itertools
import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote_plus

from icefloe.errors import ValidationError
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.table_metadata import TableMetadata

WRITE_DATA_PATH = "write.data.path"
WRITE_METADATA_PATH = "write.metadata.path"
WRITE_FOLDER_STORAGE_PATH = "write.folder-storage.path"  # older name of write.data.path


def _strip(path: str) -> str:
    return path[:-1] if len(path) > 1 and path.endswith("/") and not path.endswith("://") else path


def _escape(text: str) -> str:
    # URLEncoder.encode keeps letters, digits and ".-*_", turns spaces into "+"
    return quote_plus(text, safe=".-*_")


def partition_path(spec: PartitionSpec, schema: Schema | None, partition: tuple[Any, ...]) -> str:
    """The ``name=value/...`` directory of a partition tuple (empty for an unpartitioned spec)."""
    if len(partition) != len(spec.fields):
        raise ValidationError(
            f"partition tuple has {len(partition)} values, spec {spec.spec_id} has {len(spec.fields)} fields"
        )
    parts = []
    for field, value in zip(spec.fields, partition, strict=True):
        human = _human(field, schema, value)
        parts.append(_bounded(f"{_escape(field.name)}={_escape(human)}"))
    return "/".join(parts)


MAX_SEGMENT = 200
"""Longest partition directory name written (file systems refuse names over 255 bytes)."""


def _bounded(segment: str) -> str:
    """``segment``, or its first bytes plus a hash of the whole when it is too long for a file name.

    Readers never parse these directories (manifests hold the partition values), so a shortened
    name only has to stay distinct per value: the hash keeps it so.
    """
    if len(segment) <= MAX_SEGMENT:
        return segment
    digest = hashlib.sha256(segment.encode("utf-8")).hexdigest()[:16]
    return f"{segment[: MAX_SEGMENT - 18]}-h{digest}"


def _human(field: Any, schema: Schema | None, value: Any) -> str:
    if value is None:
        return "null"
    source_type = None
    if schema is not None:
        try:
            source_type = schema.find_type(field.source_id)
        except Exception:  # source column dropped: fall back to the plain value
            source_type = None
    if source_type is not None:
        try:
            return str(field.transform.to_human_string(source_type, value))
        except Exception:  # unknown transform or value of an unexpected shape
            pass
    return str(value)


class LocationProvider:
    """Paths for the new files of one commit attempt (one commit UUID per provider)."""

    def __init__(self, table: TableMetadata | str, properties: Mapping[str, str] | None = None) -> None:
        if isinstance(table, TableMetadata):
            location = table.location
            props: Mapping[str, str] = dict(table.properties)
            if properties:
                props = {**props, **properties}
        else:
            location = table
            props = dict(properties or {})
        self.table_location = _strip(location)
        data = props.get(WRITE_DATA_PATH) or props.get(WRITE_FOLDER_STORAGE_PATH)
        self.data_location = _strip(data) if data else f"{self.table_location}/data"
        meta = props.get(WRITE_METADATA_PATH)
        self.metadata_location = _strip(meta) if meta else f"{self.table_location}/metadata"
        self.commit_uuid = str(uuid.uuid4())
        self._manifest_counter = itertools.count()

    def new_manifest_path(self) -> str:
        """A fresh manifest path: ``<metadata>/<commit-uuid>-m<N>.avro``."""
        return f"{self.metadata_location}/{self.commit_uuid}-m{next(self._manifest_counter)}.avro"

    def new_manifest_list_path(self, snapshot_id: int, attempt: int = 1) -> str:
        """The manifest list path of a snapshot attempt: ``snap-<id>-<attempt>-<commit-uuid>.avro``."""
        return f"{self.metadata_location}/snap-{snapshot_id}-{attempt}-{self.commit_uuid}.avro"

    def new_metadata_file_path(self, file_name: str) -> str:
        """Any other file under the metadata location."""
        return f"{self.metadata_location}/{file_name}"

    def new_data_file_path(
        self,
        spec: PartitionSpec | None = None,
        schema: Schema | None = None,
        partition: tuple[Any, ...] = (),
        extension: str = "parquet",
        file_name: str | None = None,
    ) -> str:
        """``<data>/<partition path>/<uuid>.<ext>`` (no partition directory when unpartitioned)."""
        name = file_name or f"{uuid.uuid4()}.{extension}"
        if spec is None or not spec.fields:
            return f"{self.data_location}/{name}"
        return f"{self.data_location}/{partition_path(spec, schema, partition)}/{name}"
