"""A v4 root's manifest DVs: the encoding the root records, and checks against what the root says.

**The format describes itself.** A root records the encoding of every bitmap it holds (each
reference's ``mdv``, ``deleted_positions`` and ``replaced_positions``) in its footer key-value
metadata under :data:`MDV_ENCODING_KEY`, and readers decode with that encoding. The table
property ``write.v4.manifest-dv.encoding`` only chooses the encoding of new writes. Roots
written before the key existed (no key) are read as before: with the table property, whose
default is Mumbling v1.

In memory, references carry their bitmaps in the table's *current* encoding (the property), so
every consumer (readers, the writer carrying references into the next root, the CLI) decodes
with one codec: :func:`checked_references` transcodes a root written with another encoding as
it is read. The next root is then written entirely in the current encoding.

**Checks.** Every bitmap of a reference is decoded once when the root is read, so corruption is
reported against the root (the file that holds the bytes), never the leaf it masks:

- a bitmap that does not decode, or holds a position at or beyond the leaf's ``record_count``;
- ``manifest_info.dv_cardinality`` different from the decoded manifest DV's cardinality (also a
  missing or empty manifest DV whose recorded cardinality is not 0);
- ``deleted_positions`` / ``replaced_positions`` that are not part of the manifest DV.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.errors import CorruptMetadata
from icefloe.formats.arrow_schema import field_id_of
from icefloe.formats.puffin.roaring64 import PositionBitmap
from icefloe.formats.v4 import content_entry_schema as ce
from icefloe.formats.v4.bitmaps import ManifestDVCodec, manifest_dv_codec
from icefloe.spec.content import ManifestFile

MDV_ENCODING_KEY = "manifest-dv-encoding"
"""Root footer key naming the encoding of the root's manifest DVs and position bitmaps."""

_BITMAPS = ("mdv", "deleted_positions", "replaced_positions")


def root_codec(footer: Mapping[str, str], table_encoding: str, location: str) -> ManifestDVCodec:
    """The codec of a root's bitmaps: its footer's encoding, else the table's (roots from before the key)."""
    name = footer.get(MDV_ENCODING_KEY)
    if name is None:
        return manifest_dv_codec(table_encoding)
    try:
        return manifest_dv_codec(name)
    except Exception as exc:  # ValidationError for an unknown name: here it is the file's fault
        raise CorruptMetadata(
            f"{location}: unknown manifest DV encoding {name!r} in the root footer", location=location
        ) from exc


def recorded_cardinalities(ref_rows: pa.Table) -> list[int | None]:
    """``manifest_info.dv_cardinality`` of every reference row (None where not recorded)."""
    info = ce.column_by_field_id(ref_rows, ce.MANIFEST_INFO)
    if info is None:
        return [None] * ref_rows.num_rows
    arr = cast(pa.StructArray, ce.single_array(info))
    for i in range(arr.type.num_fields):
        if field_id_of(arr.type.field(i)) == ce.MDV_CARDINALITY:
            return cast(list[int | None], pc.struct_field(arr, [i]).to_pylist())
    return [None] * ref_rows.num_rows


def checked_references(
    refs: Sequence[ManifestFile],
    cardinalities: Sequence[int | None],
    stored: ManifestDVCodec,
    wanted: ManifestDVCodec,
    location: str,
) -> list[ManifestFile]:
    """References of the root at ``location`` with their bitmaps checked and re-encoded to ``wanted``."""
    out = []
    for ref, cardinality in zip(refs, cardinalities, strict=True):
        where = f"{location}: manifest DV of {ref.manifest_path}"
        decoded: dict[str, PositionBitmap | None] = {}
        for attr in _BITMAPS:
            data = getattr(ref, attr)
            decoded[attr] = None if not data else _decode(stored, data, where, location)
        mdv = decoded["mdv"]
        held = 0 if mdv is None else mdv.cardinality()
        if cardinality is not None and cardinality != held:
            raise CorruptMetadata(
                f"{where}: holds {held} positions, the root records dv_cardinality {cardinality}",
                location=location,
            )
        rows = ref.record_count
        masked = set() if mdv is None else set(mdv.to_list())
        for attr, bitmap in decoded.items():
            if bitmap is None:
                continue
            top = bitmap.max()
            if rows is not None and top is not None and top >= rows:
                raise CorruptMetadata(
                    f"{where}: {attr} holds position {top}, the leaf has {rows} rows", location=location
                )
            if attr != "mdv" and not masked.issuperset(bitmap.to_list()):
                raise CorruptMetadata(f"{where}: {attr} are not part of the manifest DV", location=location)
        if stored.name != wanted.name:
            changes = {
                a: None if b is None else wanted.encode(b) for a, b in decoded.items() if getattr(ref, a)
            }
            ref = ref.with_changes(**changes)
        out.append(ref)
    return out


def _decode(codec: ManifestDVCodec, data: bytes, where: str, location: str) -> PositionBitmap:
    try:
        return codec.decode(data, source=where)
    except CorruptMetadata as exc:
        raise CorruptMetadata(str(exc), location=location) from exc
    except Exception as exc:  # a codec's own failure on hostile bytes
        raise CorruptMetadata(f"{where}: {type(exc).__name__}: {exc}", location=location) from exc


_DV_REQUIRED = (ce.DV_LOCATION, ce.DV_OFFSET, ce.DV_SIZE, ce.DV_CARDINALITY)


def check_deletion_vectors(entries: pa.Table, location: str) -> None:
    """Every colocated deletion vector of a root or leaf names its file, offset, size and cardinality."""
    column = ce.column_by_field_id(entries, ce.DELETION_VECTOR)
    if column is None or not len(column):
        return
    arr = cast(pa.StructArray, ce.single_array(column))
    present = arr.is_valid()
    for i in range(arr.type.num_fields):
        fid = field_id_of(arr.type.field(i))
        if fid in _DV_REQUIRED and pc.any(pc.and_(present, pc.is_null(arr.field(i)))).as_py():
            raise CorruptMetadata(
                f"{location}: a deletion vector without its {arr.type.field(i).name}", location=location
            )
    found = {field_id_of(arr.type.field(i)) for i in range(arr.type.num_fields)}
    if pc.any(present).as_py() and not set(_DV_REQUIRED) <= found:
        raise CorruptMetadata(f"{location}: deletion vectors lack required fields", location=location)
