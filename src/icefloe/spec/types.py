"""Iceberg data types: primitives, structs, lists and maps, with their spec string forms.

Types are immutable values. Primitive types without parameters are singletons-by-equality
(``IntegerType() == IntegerType()``); parameterised ones carry their parameters.
``str(t)`` is the type's name as it appears in table metadata JSON.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from icefloe.errors import Unsupported, ValidationError


class IcebergType:
    """Base of all Iceberg types."""

    is_primitive: ClassVar[bool] = False
    is_nested: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class PrimitiveType(IcebergType):
    """Base of primitive types; subclasses define ``name``."""

    is_primitive: ClassVar[bool] = True
    name: ClassVar[str] = ""
    min_format_version: ClassVar[int] = 1

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class BooleanType(PrimitiveType):
    """A true/false value."""

    name: ClassVar[str] = "boolean"


@dataclass(frozen=True, slots=True)
class IntegerType(PrimitiveType):
    """32-bit signed integer."""

    name: ClassVar[str] = "int"


@dataclass(frozen=True, slots=True)
class LongType(PrimitiveType):
    """64-bit signed integer."""

    name: ClassVar[str] = "long"


@dataclass(frozen=True, slots=True)
class FloatType(PrimitiveType):
    """32-bit IEEE 754 floating point."""

    name: ClassVar[str] = "float"


@dataclass(frozen=True, slots=True)
class DoubleType(PrimitiveType):
    """64-bit IEEE 754 floating point."""

    name: ClassVar[str] = "double"


@dataclass(frozen=True, slots=True)
class DecimalType(PrimitiveType):
    """Fixed-point decimal with precision <= 38."""

    precision: int = 38
    scale: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.precision <= 38:
            raise ValidationError(f"decimal precision must be in 1..38, got {self.precision}")

    def __str__(self) -> str:
        return f"decimal({self.precision}, {self.scale})"


@dataclass(frozen=True, slots=True)
class DateType(PrimitiveType):
    """Calendar date without time zone (days since 1970-01-01)."""

    name: ClassVar[str] = "date"


@dataclass(frozen=True, slots=True)
class TimeType(PrimitiveType):
    """Time of day, microsecond precision, no date or zone."""

    name: ClassVar[str] = "time"


@dataclass(frozen=True, slots=True)
class TimestampType(PrimitiveType):
    """Timestamp without time zone, microsecond precision."""

    name: ClassVar[str] = "timestamp"


@dataclass(frozen=True, slots=True)
class TimestamptzType(PrimitiveType):
    """Timestamp with time zone (stored as UTC), microsecond precision."""

    name: ClassVar[str] = "timestamptz"


@dataclass(frozen=True, slots=True)
class TimestampNanoType(PrimitiveType):
    """Timestamp without time zone, nanosecond precision (v3)."""

    name: ClassVar[str] = "timestamp_ns"
    min_format_version: ClassVar[int] = 3


@dataclass(frozen=True, slots=True)
class TimestamptzNanoType(PrimitiveType):
    """Timestamp with time zone, nanosecond precision (v3)."""

    name: ClassVar[str] = "timestamptz_ns"
    min_format_version: ClassVar[int] = 3


@dataclass(frozen=True, slots=True)
class StringType(PrimitiveType):
    """UTF-8 character string."""

    name: ClassVar[str] = "string"


@dataclass(frozen=True, slots=True)
class UUIDType(PrimitiveType):
    """Universally unique identifier (16 bytes)."""

    name: ClassVar[str] = "uuid"


@dataclass(frozen=True, slots=True)
class FixedType(PrimitiveType):
    """Fixed-length byte array."""

    length: int = 1

    def __str__(self) -> str:
        return f"fixed[{self.length}]"


@dataclass(frozen=True, slots=True)
class BinaryType(PrimitiveType):
    """Arbitrary-length byte array."""

    name: ClassVar[str] = "binary"


@dataclass(frozen=True, slots=True)
class UnknownType(PrimitiveType):
    """v3 type of a column whose values are all null and whose type is not known yet."""

    name: ClassVar[str] = "unknown"
    min_format_version: ClassVar[int] = 3


@dataclass(frozen=True, slots=True)
class NestedField:
    """A named, id-carrying field of a struct (also used for schema columns)."""

    field_id: int
    name: str
    field_type: IcebergType
    required: bool = False
    doc: str | None = None
    initial_default: Any = None
    write_default: Any = None

    @property
    def optional(self) -> bool:
        """True when the field may hold nulls."""
        return not self.required

    def __str__(self) -> str:
        req = "required" if self.required else "optional"
        return f"{self.field_id}: {self.name}: {req} {self.field_type}"


@dataclass(frozen=True, slots=True)
class StructType(IcebergType):
    """An ordered tuple of named, typed fields."""

    is_nested: ClassVar[bool] = True
    fields: tuple[NestedField, ...] = field(default_factory=tuple)

    def __init__(self, *fields: NestedField) -> None:
        object.__setattr__(self, "fields", tuple(fields))

    def field_by_id(self, field_id: int) -> NestedField | None:
        """Direct child with this id, or None."""
        for f in self.fields:
            if f.field_id == field_id:
                return f
        return None

    def field_by_name(self, name: str, case_sensitive: bool = True) -> NestedField | None:
        """Direct child with this name, or None."""
        for f in self.fields:
            if f.name == name or (not case_sensitive and f.name.lower() == name.lower()):
                return f
        return None

    def __str__(self) -> str:
        return "struct<" + ", ".join(str(f) for f in self.fields) + ">"


@dataclass(frozen=True, slots=True)
class ListType(IcebergType):
    """A list of elements of one type; the element carries its own field id."""

    is_nested: ClassVar[bool] = True
    element_id: int
    element_type: IcebergType
    element_required: bool = False

    @property
    def element_field(self) -> NestedField:
        """The element as a field named ``element``."""
        return NestedField(self.element_id, "element", self.element_type, self.element_required)

    @property
    def fields(self) -> tuple[NestedField, ...]:
        """The element field, so visitors can treat nested types uniformly."""
        return (self.element_field,)

    def __str__(self) -> str:
        return f"list<{self.element_type}>"


@dataclass(frozen=True, slots=True)
class MapType(IcebergType):
    """A map from keys to values; key and value carry their own field ids. Keys are required."""

    is_nested: ClassVar[bool] = True
    key_id: int
    key_type: IcebergType
    value_id: int
    value_type: IcebergType
    value_required: bool = False

    @property
    def key_field(self) -> NestedField:
        """The key as a required field named ``key``."""
        return NestedField(self.key_id, "key", self.key_type, True)

    @property
    def value_field(self) -> NestedField:
        """The value as a field named ``value``."""
        return NestedField(self.value_id, "value", self.value_type, self.value_required)

    @property
    def fields(self) -> tuple[NestedField, ...]:
        """Key and value fields, so visitors can treat nested types uniformly."""
        return (self.key_field, self.value_field)

    def __str__(self) -> str:
        return f"map<{self.key_type}, {self.value_type}>"


_SIMPLE_PRIMITIVES: dict[str, PrimitiveType] = {
    t.name: t
    for t in (
        BooleanType(),
        IntegerType(),
        LongType(),
        FloatType(),
        DoubleType(),
        DateType(),
        TimeType(),
        TimestampType(),
        TimestamptzType(),
        TimestampNanoType(),
        TimestamptzNanoType(),
        StringType(),
        UUIDType(),
        BinaryType(),
        UnknownType(),
    )
}
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")
_FIXED = re.compile(r"fixed\[\s*(\d+)\s*\]")
_UNSUPPORTED = ("variant", "geometry", "geography")


def primitive_from_string(text: str) -> PrimitiveType:
    """Parse a primitive type name as written in metadata JSON (``"decimal(9, 2)"``, ``"fixed[16]"``)."""
    key = text.strip().lower()
    if key in _SIMPLE_PRIMITIVES:
        return _SIMPLE_PRIMITIVES[key]
    if m := _DECIMAL.fullmatch(key):
        return DecimalType(int(m.group(1)), int(m.group(2)))
    if m := _FIXED.fullmatch(key):
        return FixedType(int(m.group(1)))
    if key.split("(")[0] in _UNSUPPORTED:
        raise Unsupported(f"Iceberg type {text!r} is not supported by icefloe yet")
    raise ValidationError(f"unknown Iceberg type {text!r}")


def promotion_allowed(source: IcebergType, target: IcebergType, format_version: int) -> bool:
    """Whether a column of type ``source`` may be evolved to ``target`` (spec "Schema Evolution").

    int -> long, float -> double, decimal(P, S) -> decimal(P', S) with P' >= P; from format
    version 3 also date -> timestamp / timestamp_ns and unknown -> any type. Equal types are allowed.
    """
    if source == target:
        return True
    if isinstance(source, IntegerType):
        return isinstance(target, LongType)
    if isinstance(source, FloatType):
        return isinstance(target, DoubleType)
    if isinstance(source, DecimalType):
        return (
            isinstance(target, DecimalType)
            and target.scale == source.scale
            and target.precision >= source.precision
        )
    if format_version >= 3:
        if isinstance(source, DateType):
            return isinstance(target, TimestampType | TimestampNanoType)
        if isinstance(source, UnknownType):
            return True
    return False
