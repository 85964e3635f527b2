"""Result fingerprints of the acceptance corpus (version 1): an order-free hash of a query result.

A result is a multiset of rows. Every cell is turned into one canonical text, the cells of a row
are joined with the ASCII unit separator, each row text is hashed (the first 16 bytes of its
SHA-256, big-endian) and the hashes are added modulo 2**128. Row order does not matter and
duplicate rows count. ``cases.json`` stores ``{"row_count": n, "fingerprint": "<32 hex>"}`` per
check, so any reader's answer can be compared with one equality.

Canonical text per Arrow type (the Iceberg type it carries in brackets):

- NULL at the top level: the two characters ``\\N``; inside a nested value: JSON ``null``
- boolean: ``true`` / ``false``; integers: decimal digits
- floating point [float, double]: ``repr`` of the value as a float64 (float32 ``1.1`` is
  ``1.100000023841858``), ``NaN``, ``Infinity``, ``-Infinity``
- decimal(p, s): plain notation with exactly ``s`` fraction digits, negative zero printed as zero
- date: ``YYYY-MM-DD`` in the proleptic Gregorian calendar (years past 9999 get a ``+``)
- time: ``HH:MM:SS.ffffff``; timestamp: ``YYYY-MM-DDTHH:MM:SS.ffffff``, followed by ``+00:00``
  when the type has a time zone [timestamptz]; nine fraction digits only when nanoseconds remain
- string: itself; binary and fixed: lower-case hex; uuid: the 8-4-4-4-12 form (also a binary
  top-level column named in ``uuid_columns``)
- struct: a JSON object of its fields; list: a JSON array; map: a JSON array of ``[key, value]``
  pairs sorted by their JSON text. Leaves inside are the canonical texts above, as JSON strings;
  JSON is written with sorted keys, no spaces and no ASCII escaping.

Dates and times are computed with integer arithmetic, so values outside ``datetime``'s range work.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from collections.abc import Callable, Sequence
from decimal import Decimal, localcontext
from typing import Any

import pyarrow as pa

__all__ = ["FINGERPRINT_VERSION", "NULL_TEXT", "canonical_rows", "fingerprint", "fingerprint_of_rows"]

FINGERPRINT_VERSION = 1
NULL_TEXT = "\\N"
CELL_SEPARATOR = "\x1f"
HASH_MODULUS = 2**128

NANOS_PER_UNIT = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}
NANOS_PER_DAY = 86_400 * 1_000_000_000

# A rendered value: canonical text, None for null, or a JSON-shaped nested value of those.
Rendered = Any


# ---------------------------------------------------------------- scalar texts


def _days_to_civil(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a day number counted from 1970-01-01, proleptic Gregorian."""
    # Shift to a calendar whose years start on 1 March of year 0, in 400-year cycles of 146097 days.
    shifted = days + 719_468
    cycle = shifted // 146_097
    day_of_cycle = shifted - cycle * 146_097
    year_of_cycle = (
        day_of_cycle - day_of_cycle // 1_460 + day_of_cycle // 36_524 - day_of_cycle // 146_096
    ) // 365
    day_of_year = day_of_cycle - (365 * year_of_cycle + year_of_cycle // 4 - year_of_cycle // 100)
    month_from_march = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * month_from_march + 2) // 5 + 1
    month = month_from_march + 3 if month_from_march < 10 else month_from_march - 9
    year = year_of_cycle + cycle * 400 + (1 if month <= 2 else 0)
    return year, month, day


def date_text(days: int) -> str:
    """``YYYY-MM-DD`` of a day number; years before 0 as ``-YYYY``, after 9999 with a ``+``."""
    year, month, day = _days_to_civil(days)
    if year < 0:
        year_text = f"-{-year:04d}"
    elif year > 9999:
        year_text = f"+{year}"
    else:
        year_text = f"{year:04d}"
    return f"{year_text}-{month:02d}-{day:02d}"


def time_text(nanos_of_day: int) -> str:
    """``HH:MM:SS.ffffff`` (nine fraction digits when the value is not a whole microsecond)."""
    seconds, nanos = divmod(nanos_of_day, 1_000_000_000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    fraction = f"{nanos:09d}" if nanos % 1_000 else f"{nanos // 1_000:06d}"
    return f"{hour:02d}:{minute:02d}:{second:02d}.{fraction}"


def timestamp_text(nanos: int, with_zone: bool) -> str:
    """``YYYY-MM-DDTHH:MM:SS.ffffff``, with ``+00:00`` for a zoned (UTC-normalised) timestamp."""
    days, nanos_of_day = divmod(nanos, NANOS_PER_DAY)
    text = f"{date_text(days)}T{time_text(nanos_of_day)}"
    return f"{text}+00:00" if with_zone else text


def float_text(value: float) -> str:
    """Shortest round-trip text of a float64, with Java-style names for the special values."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "-Infinity" if value < 0 else "Infinity"
    return repr(float(value))


def decimal_text(value: Decimal, scale: int) -> str:
    """Plain notation with exactly ``scale`` fraction digits; ``-0.00`` is printed ``0.00``."""
    with localcontext() as context:
        context.prec = 400
        quantized = value.quantize(Decimal(1).scaleb(-scale))
    if quantized.is_zero():
        quantized = abs(quantized)
    return format(quantized, "f")


def json_text(value: Rendered) -> str:
    """The JSON form of a nested rendered value (sorted keys, compact, no ASCII escaping)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


# ---------------------------------------------------------------- arrays


def _is_uuid_extension(data_type: pa.DataType) -> bool:
    name = getattr(data_type, "extension_name", "")
    return name in ("arrow.uuid", "uuid") or type(data_type).__name__ == "UuidType"


def _map_values(array: pa.Array, text: Callable[[Any], str]) -> list[Rendered]:
    return [None if value is None else text(value) for value in array.to_pylist()]


def _type_check(name: str) -> Callable[[pa.DataType], bool]:
    """``pa.types.<name>``, or a check that is always false on pyarrow versions without it."""
    check = getattr(pa.types, name, None)
    return check if check is not None else (lambda _data_type: False)


_is_string_view = _type_check("is_string_view")
_is_binary_view = _type_check("is_binary_view")
_is_list_view = _type_check("is_list_view")
_is_large_list_view = _type_check("is_large_list_view")


def render_array(array: pa.Array, as_uuid: bool = False) -> list[Rendered]:
    """The rendered values of one array (``as_uuid``: binary values are uuids)."""
    data_type = array.type
    if len(array) == 0:
        return []
    if isinstance(data_type, pa.BaseExtensionType):
        return render_array(array.storage, as_uuid or _is_uuid_extension(data_type))
    if pa.types.is_dictionary(data_type):
        return render_array(array.dictionary_decode(), as_uuid)
    if pa.types.is_null(data_type):
        return [None] * len(array)
    if pa.types.is_boolean(data_type):
        return _map_values(array, lambda value: "true" if value else "false")
    if pa.types.is_integer(data_type):
        return _map_values(array, str)
    if pa.types.is_floating(data_type):
        if pa.types.is_float16(data_type):  # to_pylist of half floats gives numpy scalars
            array = array.cast(pa.float32())
        return _map_values(array, float_text)
    if pa.types.is_decimal(data_type):
        scale = data_type.scale
        return _map_values(array, lambda value: decimal_text(value, scale))
    if pa.types.is_temporal(data_type):
        return _render_temporal(array)
    if pa.types.is_string(data_type) or pa.types.is_large_string(data_type) or _is_string_view(data_type):
        return list(array.to_pylist())
    if (
        pa.types.is_binary(data_type)
        or pa.types.is_large_binary(data_type)
        or pa.types.is_fixed_size_binary(data_type)
        or _is_binary_view(data_type)
    ):
        if as_uuid:
            return _map_values(array, lambda value: str(uuid.UUID(bytes=bytes(value))))
        return _map_values(array, lambda value: bytes(value).hex())
    return _render_nested(array, as_uuid)


def _render_temporal(array: pa.Array) -> list[Rendered]:
    """Dates, times and timestamps, from their integer storage."""
    data_type = array.type
    if pa.types.is_date32(data_type):
        return _map_values(array.cast(pa.int32()), date_text)
    if pa.types.is_date64(data_type):
        return _map_values(array.cast(pa.int64()), lambda millis: date_text(millis // 86_400_000))
    if pa.types.is_time(data_type):
        storage = pa.int64() if pa.types.is_time64(data_type) else pa.int32()
        factor = NANOS_PER_UNIT[data_type.unit]
        return _map_values(array.cast(storage), lambda value: time_text(value * factor))
    if pa.types.is_timestamp(data_type):
        factor = NANOS_PER_UNIT[data_type.unit]
        zoned = data_type.tz is not None
        return _map_values(array.cast(pa.int64()), lambda value: timestamp_text(value * factor, zoned))
    raise TypeError(f"fingerprint: unsupported Arrow type {data_type}")


def _render_nested(array: pa.Array, as_uuid: bool) -> list[Rendered]:
    """Structs, lists and maps (uuid rendering applies to top-level columns only)."""
    data_type = array.type
    valid = array.is_valid().to_pylist()
    if pa.types.is_struct(data_type):
        names = [data_type.field(i).name for i in range(data_type.num_fields)]
        children = [render_array(child) for child in array.flatten()]
        return [
            dict(zip(names, (child[row] for child in children), strict=True)) if valid[row] else None
            for row in range(len(array))
        ]
    if pa.types.is_fixed_size_list(data_type) or _is_list_view(data_type):
        return render_array(array.cast(pa.list_(data_type.value_field)), as_uuid)
    if _is_large_list_view(data_type):
        return render_array(array.cast(pa.large_list(data_type.value_field)), as_uuid)
    if pa.types.is_map(data_type):
        return _render_map(array, valid)
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
        offsets = array.offsets.to_pylist()
        start = offsets[0]
        elements = render_array(array.values.slice(start, offsets[-1] - start))
        return [
            elements[offsets[row] - start : offsets[row + 1] - start] if valid[row] else None
            for row in range(len(array))
        ]
    raise TypeError(f"fingerprint: unsupported Arrow type {data_type}")


def _render_map(array: pa.MapArray, valid: list[bool]) -> list[Rendered]:
    offsets = array.offsets.to_pylist()
    start, length = offsets[0], offsets[-1] - offsets[0]
    keys = render_array(array.keys.slice(start, length))
    items = render_array(array.items.slice(start, length))
    out: list[Rendered] = []
    for row in range(len(array)):
        if not valid[row]:
            out.append(None)
            continue
        pairs = [[keys[i - start], items[i - start]] for i in range(offsets[row], offsets[row + 1])]
        out.append(sorted(pairs, key=json_text))
    return out


# ---------------------------------------------------------------- rows and fingerprints


def _cell_texts(column: pa.Array | pa.ChunkedArray, as_uuid: bool) -> list[str]:
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    texts: list[str] = []
    for chunk in chunks:
        for value in render_array(chunk, as_uuid):
            if value is None:
                texts.append(NULL_TEXT)
            elif isinstance(value, str):
                texts.append(value)
            else:
                texts.append(json_text(value))
    return texts


def canonical_rows(
    table: pa.Table | pa.RecordBatch,
    columns: Sequence[str] | None = None,
    uuid_columns: Sequence[str] = (),
) -> list[list[str]]:
    """Each row's canonical cell texts, for ``columns`` in that order (default: every column)."""
    names = list(table.column_names if columns is None else columns)
    uuid_names = set(uuid_columns)
    per_column = [_cell_texts(table.column(name), name in uuid_names) for name in names]
    if not per_column:
        return [[] for _ in range(table.num_rows)]
    return [list(cells) for cells in zip(*per_column, strict=True)]


def row_hash(cells: Sequence[str]) -> int:
    """The 128-bit hash of one row: the leading 16 bytes of SHA-256 of its joined cells."""
    digest = hashlib.sha256(CELL_SEPARATOR.join(cells).encode("utf-8")).digest()
    return int.from_bytes(digest[:16], "big")


def fingerprint_of_rows(rows: Sequence[Sequence[str]]) -> str:
    """The sum of the row hashes modulo 2**128, as 32 lower-case hex digits."""
    return format(sum(row_hash(row) for row in rows) % HASH_MODULUS, "032x")


def fingerprint(
    table: pa.Table | pa.RecordBatch,
    columns: Sequence[str] | None = None,
    uuid_columns: Sequence[str] = (),
) -> dict[str, Any]:
    """``{"row_count": n, "fingerprint": "<32 hex>"}`` of ``table`` over ``columns``."""
    rows = canonical_rows(table, columns, uuid_columns)
    return {"row_count": len(rows), "fingerprint": fingerprint_of_rows(rows)}
