"""Checked reads of JSON members: a missing or mistyped member is ``CorruptMetadata`` naming it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from icefloe.errors import CorruptMetadata


def required(obj: Mapping[str, Any], key: str, what: str) -> Any:
    if not isinstance(obj, Mapping):
        raise CorruptMetadata(f"{what} must be a JSON object, got {type(obj).__name__}")
    if key not in obj or obj[key] is None:
        raise CorruptMetadata(f"{what} is missing required field {key!r}")
    return obj[key]


def as_int(value: Any, key: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise CorruptMetadata(f"{what} field {key!r} must be an integer, got {value!r}")
    return value


def required_int(obj: Mapping[str, Any], key: str, what: str) -> int:
    return as_int(required(obj, key, what), key, what)


def optional_int(obj: Mapping[str, Any], key: str, what: str) -> int | None:
    value = obj.get(key)
    return None if value is None else as_int(value, key, what)


def optional_list(obj: Mapping[str, Any], key: str, what: str) -> list[Any]:
    value = obj.get(key)
    return [] if value is None else as_list(value, key, what)


def as_list(value: Any, key: str, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise CorruptMetadata(f"{what} field {key!r} must be a JSON list, got {type(value).__name__}")
    return value
