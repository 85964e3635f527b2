"""Checked reads of numeric table properties: a bad value is a ValidationError naming the property."""

from __future__ import annotations

from collections.abc import Mapping

from icefloe.errors import ValidationError

GC_ENABLED = "gc.enabled"
"""Whether icefloe may delete data files the table no longer needs (false for shared files)."""


def gc_enabled(props: Mapping[str, str]) -> bool:
    """``gc.enabled`` (default true)."""
    return str(props.get(GC_ENABLED, "true")).strip().lower() != "false"


def int_property(props: Mapping[str, str], key: str, default: int, low: int, high: int | None = None) -> int:
    """``props[key]`` as an int in ``[low, high]``, or ``default`` when it is not set."""
    raw = props.get(key)
    if raw is None:
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise ValidationError(f"table property {key} must be an integer, got {raw!r}") from None
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"between {low} and {high}"
        raise ValidationError(f"table property {key} must be {bound}, got {value}")
    return value
