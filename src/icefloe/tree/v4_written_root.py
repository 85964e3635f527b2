"""A root this process has just written, as a reader would decode it, built from the rows written.

A v4 commit starts from its parent's root. When the parent is this process's previous commit,
decoding the root's bytes again (Parquet, then objects) was a fifth of a small append's latency on
object storage. The writer holds the rows it encoded; this module turns them into the
:class:`~icefloe.tree.v4_read.RootContents` that ``read_root`` would return, so the next commit
(and any plan of the new snapshot) reads the root from memory.

The rows are what the encoder wrote, except for what a content entry does not store or stores in
another shape; :func:`stored_entry` applies exactly that: no column sizes, metric maps rebuilt from
the content stats the row becomes (columns the stats layout does not know dropped, bounds in their
canonical serialisation, empty maps as None), sequences as tuples. Rows the encoder would store
differently in some other way (a legacy Avro reference; v2 position-delete fields; a file format
not in lower case) make the root not remembered: the next reader decodes the file. A differential
test (``tests/tree/test_v4_written_root.py``) keeps the result equal to decoding the bytes.

The next root carries these stored forms on as they are: they are not made again (``_StoredRows``)
and they encode as the rows they were made from (registered with the encoder's row cache,
:mod:`icefloe.formats.v4.encoded_rows`), so a commit converts only its own new rows.

The writer also keeps each root's rows as the encoder's Arrow table
(:func:`icefloe.tree.v4_read.remember_root_table`): a v4 fast append
(:mod:`icefloe.tree.v4_fast_append`) builds its root from its parent's table, with no object made
for a carried row.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from icefloe.formats.v4.content_entry import ContentRow, read_footer_metadata
from icefloe.formats.v4.content_stats import StatsLayout, metrics_from_struct_value, struct_value_from_metrics
from icefloe.formats.v4.encoded_rows import ENCODED_ROWS, MAX_ROWS
from icefloe.lru import IdentityLruCache
from icefloe.spec.content import ManifestEntry, ManifestFile
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import StructType
from icefloe.tree.v4_policy import manifest_dv_encoding
from icefloe.tree.v4_read import RootContents, decoded_stats_types, remember_written_root


def stored_entry(e: ManifestEntry, layout: StatsLayout) -> ManifestEntry:
    """``e`` as a root or leaf row stores it (and the reader decodes it)."""
    df = e.data_file
    metrics = metrics_from_struct_value(struct_value_from_metrics(df, layout), layout)
    stored = df.with_changes(
        column_sizes=None,
        split_offsets=None if df.split_offsets is None else tuple(df.split_offsets),
        equality_ids=None if df.equality_ids is None else tuple(df.equality_ids),
        **metrics.as_changes(),
    )
    return e.with_changes(data_file=stored)


class _StoredRows:
    """The stored forms this process made lately, by identity, with the stats layout they were
    made for: a root's inline rows carried on from its parent's remembered root are stored forms
    already and are kept as they are (when the table's stats layout is still the same)."""

    def __init__(self, max_rows: int) -> None:
        self._rows: IdentityLruCache[ManifestEntry, StructType] = IdentityLruCache(max_rows)
        self._lock = threading.Lock()

    def stored(self, entries: Sequence[ManifestEntry], layout: StatsLayout) -> tuple[ManifestEntry, ...]:
        """:func:`stored_entry` of each entry (the entry itself when it is such a form)."""
        with self._lock:
            known = self._rows.peek_many(entries)
        decoded = decoded_stats_types(entries)  # rows of a decoded root are stored forms too
        same_layout: dict[int, bool] = {}
        out: list[ManifestEntry] = []
        for e, made_for, decoded_as in zip(entries, known, decoded, strict=True):
            tag = made_for if made_for is not None else decoded_as
            if tag is not None:
                same = same_layout.get(id(tag))
                if same is None:
                    same = same_layout[id(tag)] = tag == layout.stats_type
                if same:
                    out.append(e)
                    continue
            out.append(stored_entry(e, layout))
        with self._lock:
            self._rows.put_many(out, layout.stats_type)
        return tuple(out)


_STORED = _StoredRows(max_rows=MAX_ROWS)


def _stored_unchanged(row: ContentRow) -> bool:
    """Whether the encoder stores every field of ``row`` that :func:`stored_entry` keeps, as it is."""
    if isinstance(row, ManifestFile):
        return row.format_version == 4
    df = row.data_file
    return (
        df.referenced_data_file is None
        and df.content_offset is None
        and df.content_size_in_bytes is None
        and df.file_format == df.file_format.lower()
    )


def remember_root(
    metadata: TableMetadata,
    location: str,
    data: bytes,
    rows: Sequence[ContentRow],
    mdv_encoding: str,
    layout: StatsLayout,
) -> None:
    """Keep the root just written at ``location`` (``data``, encoded from ``rows``) for the next read.

    Not kept when its bitmaps are in another encoding than the one readers of ``metadata`` convert
    to, or when some row is not stored as :func:`stored_entry` describes.
    """
    if mdv_encoding != manifest_dv_encoding(metadata.properties):
        return
    if not all(_stored_unchanged(row) for row in rows):
        return
    refs = tuple(row for row in rows if isinstance(row, ManifestFile))
    entries = [row for row in rows if isinstance(row, ManifestEntry)]
    inline = _STORED.stored(entries, layout)
    # the next root carries these stored forms on: they encode as the rows just written did
    ENCODED_ROWS.alias(
        (row, stored) for row, stored in zip(entries, inline, strict=True) if stored is not row
    )
    footer = read_footer_metadata(data, source=location)
    remember_written_root(metadata, RootContents(location, len(data), refs, inline, footer))
