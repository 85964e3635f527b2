"""Pluggable encodings for v4 manifest deletion vectors (and deleted/replaced position bitmaps).

The v4 tree chooses the encoding by configuration, never by sniffing bytes (fact sheet Q3:
Mumbling v1 starts with ``0x01`` and a portable 64-bit Roaring bitmap with an 8-byte count
that is often 1, so the first byte cannot tell them apart). Mumbling v1 is the default;
portable 64-bit Roaring is available to read trees written by older Delta-style writers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import ClassVar

from icefloe.errors import ValidationError
from icefloe.formats.puffin.roaring64 import PositionBitmap
from icefloe.formats.v4 import mumbling

__all__ = [
    "DEFAULT_MANIFEST_DV_ENCODING",
    "MUMBLING_V1",
    "PORTABLE_ROARING",
    "ManifestDVCodec",
    "MumblingV1Codec",
    "PortableRoaringCodec",
    "manifest_dv_codec",
]

MUMBLING_V1 = "mumbling-v1"
PORTABLE_ROARING = "roaring-portable-64"
DEFAULT_MANIFEST_DV_ENCODING = MUMBLING_V1


class ManifestDVCodec(ABC):
    """Encodes and decodes a set of manifest row positions as bytes."""

    name: ClassVar[str]

    @abstractmethod
    def encode(self, positions: PositionBitmap | Iterable[int]) -> bytes:
        """Serialise the positions."""

    @abstractmethod
    def decode(self, data: bytes, *, source: str = "<manifest DV>") -> PositionBitmap:
        """Parse bytes written by ``encode``; CorruptMetadata naming ``source`` on bad input."""

    def cardinality(self, data: bytes, *, source: str = "<manifest DV>") -> int:
        """Number of positions held by ``data`` (codecs may read only a header)."""
        return self.decode(data, source=source).cardinality()


class MumblingV1Codec(ManifestDVCodec):
    """Mumbling v1 (the v4 spec's encoding; positions below 2**21)."""

    name = MUMBLING_V1

    def encode(self, positions: PositionBitmap | Iterable[int]) -> bytes:
        """Serialise the positions as Mumbling v1."""
        return mumbling.encode(positions)

    def decode(self, data: bytes, *, source: str = "<manifest DV>") -> PositionBitmap:
        """Parse Mumbling v1 bytes."""
        return mumbling.decode_bitmap(data, source=source)

    def cardinality(self, data: bytes, *, source: str = "<manifest DV>") -> int:
        """Cardinality from the Mumbling header alone."""
        return mumbling.cardinality_of(data, source=source)


class PortableRoaringCodec(ManifestDVCodec):
    """Portable 64-bit Roaring (the vector part of a deletion-vector-v1 blob, no framing)."""

    name = PORTABLE_ROARING

    def encode(self, positions: PositionBitmap | Iterable[int]) -> bytes:
        """Serialise the positions as portable 64-bit Roaring."""
        bitmap = positions if isinstance(positions, PositionBitmap) else PositionBitmap(positions)
        return bitmap.serialize()

    def decode(self, data: bytes, *, source: str = "<manifest DV>") -> PositionBitmap:
        """Parse portable 64-bit Roaring bytes."""
        return PositionBitmap.deserialize(data, source=source)


_CODECS: dict[str, ManifestDVCodec] = {
    MUMBLING_V1: MumblingV1Codec(),
    PORTABLE_ROARING: PortableRoaringCodec(),
}


def manifest_dv_codec(name: str | None = None) -> ManifestDVCodec:
    """The codec called ``name`` (default Mumbling v1); ValidationError for unknown names."""
    key = DEFAULT_MANIFEST_DV_ENCODING if name is None else name.strip().lower()
    try:
        return _CODECS[key]
    except KeyError:
        raise ValidationError(
            f"Unknown manifest deletion-vector encoding {name!r}; choose one of {sorted(_CODECS)}"
        ) from None
