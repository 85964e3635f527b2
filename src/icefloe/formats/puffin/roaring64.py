"""64-bit row-position bitmaps and their portable 64-bit Roaring serialisation.

A position is split into a 32-bit *key* (high half) and a 32-bit *low* part; each key owns
one 32-bit ``pyroaring.BitMap``. The byte form is the "64-bit extension" of the
RoaringFormatSpec, as used by Iceberg ``deletion-vector-v1`` blobs:

* uint64 LE: number of 32-bit bitmaps;
* per bitmap, in ascending key order: uint32 LE key, then a standard 32-bit Roaring bitmap
  in the portable format (cookie 12346 / 12347, descriptive header, optional offset
  header, array / bitset / run containers).

pyroaring's ``BitMap.serialize()`` *is* the portable 32-bit format (CRoaring's
``roaring_bitmap_portable_serialize``; the tests check this byte for byte against a
reference encoder), so it is used for the 32-bit part after ``run_optimize()``. On read,
the extent of each 32-bit bitmap is found by walking its headers here, and the validated
slice is handed to pyroaring (which checks container contents).
"""

from __future__ import annotations

import array
import operator
import struct
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from icefloe.errors import CorruptMetadata, ValidationError

__all__ = [
    "MAX_KEY",
    "MAX_POSITION",
    "PositionBitmap",
    "portable32_extent",
]

#: Largest key (high 32 bits) accepted; Iceberg Java cannot hold key 2^31 - 1.
MAX_KEY = 2**31 - 2
#: Largest position accepted (most significant bit 0, key at most ``MAX_KEY``).
MAX_POSITION = (MAX_KEY << 32) | 0xFFFFFFFF

_LOW_MASK = 0xFFFFFFFF
_COOKIE_NO_RUN = 12346
_COOKIE_RUN = 12347
_NO_OFFSET_THRESHOLD = 4
_MAX_CONTAINERS = 1 << 16
_ARRAY_MAX_CARDINALITY = 4096
_BITSET_BYTES = 8192
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")

Bytes = bytes | bytearray | memoryview


def _check_position(pos: int) -> None:
    if not 0 <= pos <= MAX_POSITION:
        raise ValidationError(f"Row position {pos} is out of range: positions must be in [0, {MAX_POSITION}]")


def _uint32_buffer(arr: pa.Array) -> array.array[int]:
    """Copy the values of a null-free Arrow uint32 array into an ``array('I')``."""
    out = array.array("I")
    if len(arr) == 0:
        return out
    data = arr.buffers()[1]
    assert data is not None
    start = arr.offset * 4
    out.frombytes(memoryview(data)[start : start + len(arr) * 4])
    return out


def _sorted(arr: pa.Array) -> pa.Array:
    """``arr`` in ascending order (CRoaring inserts sorted input many times faster)."""
    if len(arr) < 2 or pc.all(pc.less_equal(arr[:-1], arr[1:])).as_py():
        return arr
    return pc.take(arr, pc.sort_indices(arr))


def _arrow_uint32(values: array.array[int]) -> pa.Array:
    """Wrap an ``array('I')`` as an Arrow uint32 array (zero copy)."""
    return pa.Array.from_buffers(pa.uint32(), len(values), [None, pa.py_buffer(values)])


class PositionBitmap:
    """A set of non-negative 64-bit row positions: one 32-bit Roaring bitmap per high-32-bit key."""

    __slots__ = ("_bitmaps",)

    def __init__(self, positions: Iterable[int] | Any | None = None) -> None:
        self._bitmaps: dict[int, BitMap] = {}
        if positions is not None:
            self.update(positions)

    # -- construction -------------------------------------------------------------------

    @classmethod
    def from_range(cls, start: int, stop: int) -> PositionBitmap:
        """A bitmap holding every position in ``[start, stop)``."""
        bitmap = cls()
        bitmap.add_range(start, stop)
        return bitmap

    def _bitmap_for(self, key: int) -> BitMap:
        bitmap = self._bitmaps.get(key)
        if bitmap is None:
            bitmap = self._bitmaps[key] = BitMap()
        return bitmap

    def add(self, pos: int) -> None:
        """Set one position."""
        _check_position(pos)
        self._bitmap_for(pos >> 32).add(pos & _LOW_MASK)

    def add_range(self, start: int, stop: int) -> None:
        """Set every position in ``[start, stop)`` (nothing when ``stop <= start``)."""
        if stop <= start:
            return
        _check_position(start)
        _check_position(stop - 1)
        for key in range(start >> 32, ((stop - 1) >> 32) + 1):
            lo = max(start, key << 32) & _LOW_MASK
            hi = min(stop, (key + 1) << 32) - (key << 32)
            self._bitmap_for(key).add_range(lo, hi)

    def update(self, positions: Iterable[int] | Any) -> None:
        """Set many positions: another bitmap, a range, an Arrow/numpy integer array or any iterable."""
        if isinstance(positions, PositionBitmap):
            self.union_update(positions)
        elif isinstance(positions, BitMap):
            self._bitmap_for(0).update(positions)
        elif isinstance(positions, range) and positions.step == 1:
            self.add_range(positions.start, positions.stop)
        elif isinstance(positions, pa.ChunkedArray | pa.Array):
            self._update_arrow(positions)
        elif hasattr(positions, "__array__") and hasattr(positions, "dtype"):
            self._update_arrow(pa.array(positions))
        else:
            self._update_iterable(positions)

    def _update_iterable(self, positions: Iterable[int]) -> None:
        values = list(positions)
        if not values:
            return
        if not all(isinstance(v, int) for v in values):
            try:
                values = [operator.index(v) for v in values]
            except TypeError as exc:
                raise ValidationError(f"Row positions must be integers: {exc}") from exc
        lo, hi = min(values), max(values)
        _check_position(lo)
        _check_position(hi)
        if hi <= _LOW_MASK:
            self._bitmap_for(0).update(values)
            return
        grouped: dict[int, list[int]] = {}
        for pos in values:
            grouped.setdefault(pos >> 32, []).append(pos & _LOW_MASK)
        for key, lows in grouped.items():
            self._bitmap_for(key).update(lows)

    def _update_arrow(self, arr: pa.Array | pa.ChunkedArray) -> None:
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if not pa.types.is_integer(arr.type):
            raise ValidationError(f"Row positions must be integers, got an Arrow array of type {arr.type}")
        if arr.null_count:
            raise ValidationError("Row positions must not contain nulls")
        if len(arr) == 0:
            return
        bounds = pc.min_max(arr)
        _check_position(bounds["min"].as_py())
        _check_position(bounds["max"].as_py())
        arr = _sorted(arr.cast(pa.int64()))
        if bounds["max"].as_py() <= _LOW_MASK:
            self._bitmap_for(0).update(_uint32_buffer(arr.cast(pa.uint32())))
            return
        keys = pc.shift_right(arr, 32)
        lows = pc.bit_wise_and(arr, _LOW_MASK).cast(pa.uint32())
        for key in pc.unique(keys).to_pylist():
            selected = pc.filter(lows, pc.equal(keys, key))
            self._bitmap_for(key).update(_uint32_buffer(selected))

    # -- queries ------------------------------------------------------------------------

    def contains(self, pos: int) -> bool:
        """Whether ``pos`` is set (out-of-range positions are simply not set)."""
        if pos < 0:
            return False
        bitmap = self._bitmaps.get(pos >> 32)
        return bitmap is not None and (pos & _LOW_MASK) in bitmap

    def __contains__(self, pos: object) -> bool:
        return isinstance(pos, int) and self.contains(pos)

    def cardinality(self) -> int:
        """Number of set positions."""
        return sum(len(bitmap) for bitmap in self._bitmaps.values())

    def __len__(self) -> int:
        return self.cardinality()

    def is_empty(self) -> bool:
        """Whether no position is set."""
        return all(len(bitmap) == 0 for bitmap in self._bitmaps.values())

    def __bool__(self) -> bool:
        return not self.is_empty()

    def max(self) -> int | None:
        """The largest set position, or None when empty."""
        for key in sorted(self._bitmaps, reverse=True):
            bitmap = self._bitmaps[key]
            if len(bitmap):
                return (key << 32) | bitmap.max()
        return None

    def keys(self) -> list[int]:
        """The keys (high 32 bits) that hold at least one position, ascending."""
        return sorted(key for key, bitmap in self._bitmaps.items() if len(bitmap))

    def bitmap_for_key(self, key: int) -> BitMap:
        """A copy of the 32-bit bitmap of low halves for ``key`` (empty when absent)."""
        bitmap = self._bitmaps.get(key)
        return BitMap() if bitmap is None else bitmap.copy()

    # -- set algebra --------------------------------------------------------------------

    def union_update(self, other: PositionBitmap) -> None:
        """Add every position of ``other`` to this bitmap (in place)."""
        for key, bitmap in other._bitmaps.items():
            if len(bitmap):
                self._bitmap_for(key).update(bitmap)

    def union(self, other: PositionBitmap) -> PositionBitmap:
        """A new bitmap with the positions of both."""
        result = self.copy()
        result.union_update(other)
        return result

    def __or__(self, other: PositionBitmap) -> PositionBitmap:
        return self.union(other)

    def __ior__(self, other: PositionBitmap) -> PositionBitmap:
        self.union_update(other)
        return self

    def copy(self) -> PositionBitmap:
        """An independent copy."""
        result = PositionBitmap()
        result._bitmaps = {key: bitmap.copy() for key, bitmap in self._bitmaps.items() if len(bitmap)}
        return result

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PositionBitmap):
            return NotImplemented
        mine = {k: b for k, b in self._bitmaps.items() if len(b)}
        theirs = {k: b for k, b in other._bitmaps.items() if len(b)}
        return mine.keys() == theirs.keys() and all(mine[k] == theirs[k] for k in mine)

    __hash__ = None  # type: ignore[assignment]

    # -- export -------------------------------------------------------------------------

    def __iter__(self) -> Iterator[int]:
        for key in self.keys():
            bitmap = self._bitmaps[key]
            if key == 0:
                yield from bitmap.to_array().tolist()
            else:
                base = key << 32
                for low in bitmap.to_array().tolist():
                    yield base | low

    def to_list(self) -> list[int]:
        """All set positions, ascending."""
        return list(self)

    def to_arrow(self) -> pa.Array:
        """All set positions as an ascending Arrow int64 array (vectorised, no Python loop)."""
        parts: list[pa.Array] = []
        for key in self.keys():
            part = _arrow_uint32(self._bitmaps[key].to_array()).cast(pa.int64())
            if key:
                part = pc.add(part, pa.scalar(key << 32, pa.int64()))
            parts.append(part)
        if not parts:
            return pa.array([], pa.int64())
        return parts[0] if len(parts) == 1 else pa.concat_arrays(parts)

    def to_numpy(self) -> Any:
        """All set positions as an ascending numpy int64 array (needs numpy installed)."""
        return self.to_arrow().to_numpy(zero_copy_only=False)

    def run_optimize(self) -> None:
        """Convert containers to run containers wherever that is smaller."""
        for bitmap in self._bitmaps.values():
            bitmap.run_optimize()

    def __repr__(self) -> str:
        card = self.cardinality()
        head = ", ".join(str(p) for _, p in zip(range(8), self, strict=False))
        more = ", ..." if card > 8 else ""
        return f"PositionBitmap(cardinality={card}, [{head}{more}])"

    # -- portable serialisation ---------------------------------------------------------

    def serialize(self) -> bytes:
        """Portable 64-bit Roaring bytes (non-empty keys only, run-optimised containers)."""
        keys = self.keys()
        parts = [_U64.pack(len(keys))]
        for key in keys:
            bitmap = self._bitmaps[key]
            bitmap.run_optimize()
            parts.append(_U32.pack(key))
            parts.append(bitmap.serialize())
        return b"".join(parts)

    def serialized_size(self) -> int:
        """Length in bytes of ``serialize()``."""
        return len(self.serialize())

    @classmethod
    def deserialize(cls, data: Bytes, *, source: str = "<bitmap>") -> PositionBitmap:
        """Parse portable 64-bit Roaring bytes; any defect raises CorruptMetadata naming ``source``."""
        view = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        size = len(view)
        if size < 8:
            raise CorruptMetadata(
                f"{source}: 64-bit Roaring bitmap truncated ({size} bytes, need 8)", location=source
            )
        (count,) = _U64.unpack_from(view, 0)
        # every bitmap needs at least a 4-byte key and an 8-byte empty 32-bit bitmap
        if count > (size - 8) // 12:
            raise CorruptMetadata(
                f"{source}: 64-bit Roaring bitmap count {count} cannot fit in {size} bytes", location=source
            )
        result = cls()
        pos = 8
        last_key = -1
        for index in range(count):
            if pos + 4 > size:
                raise CorruptMetadata(
                    f"{source}: 64-bit Roaring bitmap truncated before key #{index}", location=source
                )
            (key,) = _U32.unpack_from(view, pos)
            if key >= 2**31:
                raise CorruptMetadata(
                    f"{source}: 64-bit Roaring key {key} is negative as a signed 32-bit int"
                )
            if key > MAX_KEY:
                raise CorruptMetadata(
                    f"{source}: 64-bit Roaring key {key} is too large (max {MAX_KEY})", location=source
                )
            if key <= last_key:
                raise CorruptMetadata(
                    f"{source}: 64-bit Roaring keys not in ascending order ({key} after {last_key})"
                )
            pos += 4
            end = portable32_extent(view, pos, source=source)
            try:
                bitmap = BitMap.deserialize(bytes(view[pos:end]))
            except ValueError as exc:
                raise CorruptMetadata(
                    f"{source}: invalid 32-bit Roaring bitmap for key {key}: {exc}"
                ) from exc
            if len(bitmap):
                result._bitmaps[key] = bitmap
            last_key = key
            pos = end
        if pos != size:
            raise CorruptMetadata(
                f"{source}: {size - pos} unexpected trailing bytes after the 64-bit Roaring bitmap"
            )
        return result


def portable32_extent(data: Bytes, start: int, *, source: str = "<bitmap>") -> int:
    """End offset of the portable 32-bit Roaring bitmap starting at ``start``, from its headers."""
    size = len(data)

    def need(pos: int, n: int, what: str) -> None:
        if pos + n > size:
            raise CorruptMetadata(
                f"{source}: 32-bit Roaring bitmap truncated in {what} at byte {pos}", location=source
            )

    need(start, 4, "cookie")
    (cookie,) = _U32.unpack_from(data, start)
    pos = start + 4
    run_flags = b""
    if cookie == _COOKIE_NO_RUN:
        need(pos, 4, "container count")
        (count,) = _U32.unpack_from(data, pos)
        pos += 4
        if count > _MAX_CONTAINERS:
            raise CorruptMetadata(
                f"{source}: 32-bit Roaring container count {count} exceeds 65536", location=source
            )
        has_offsets = True
    elif cookie & 0xFFFF == _COOKIE_RUN:
        count = (cookie >> 16) + 1
        flag_len = (count + 7) // 8
        need(pos, flag_len, "run-container flags")
        run_flags = bytes(data[pos : pos + flag_len])
        pos += flag_len
        has_offsets = count >= _NO_OFFSET_THRESHOLD
    else:
        raise CorruptMetadata(
            f"{source}: bad 32-bit Roaring cookie 0x{cookie:08x} at byte {start}", location=source
        )
    need(pos, 4 * count, "descriptive header")
    cardinalities = [_U16.unpack_from(data, pos + 4 * i + 2)[0] + 1 for i in range(count)]
    pos += 4 * count
    if has_offsets:
        need(pos, 4 * count, "offset header")
        pos += 4 * count
    for i, card in enumerate(cardinalities):
        if run_flags and run_flags[i >> 3] & (1 << (i & 7)):
            need(pos, 2, "run container")
            (runs,) = _U16.unpack_from(data, pos)
            pos += 2 + 4 * runs
        elif card <= _ARRAY_MAX_CARDINALITY:
            pos += 2 * card
        else:
            pos += _BITSET_BYTES
    need(pos, 0, "containers")
    return pos
