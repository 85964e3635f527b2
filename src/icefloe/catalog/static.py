"""Static tables by location: a ``*.metadata.json`` file, or a table directory in the Hadoop layout.

``static_table(location)`` resolves a directory through its ``version-hint.text`` (see
``catalog.hadoop``) and opens the table read-only with ``table.static.open_static_table``: scans,
time travel and metadata tables work; anything that would commit raises ``Unsupported`` before a
single file is written.
"""

from __future__ import annotations

import os

from icefloe.catalog.hadoop import current_version_file
from icefloe.errors import NotFound
from icefloe.io.fileio import local_path
from icefloe.table.static import open_static_table
from icefloe.table.table import Table


def static_table(location: str, properties: dict[str, str] | None = None) -> Table:
    """Open a table read-only from its metadata file (or a Hadoop-layout table directory)."""
    path = local_path(location)
    if path is not None and os.path.isdir(path):
        found = current_version_file(path)
        if found is None:
            raise NotFound(f"{location} holds no table metadata (no metadata/v<N>.metadata.json)")
        location = "file://" + found
    return open_static_table(location, properties=properties)
