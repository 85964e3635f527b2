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


NUMERIC_PROPERTIES: dict[str, int] = {
    "write.target-file-size-bytes": 1,
    "write.delete.target-file-size-bytes": 1,
    "write.parquet.row-group-size-bytes": 1,
    "write.parquet.page-size-bytes": 1,
    "write.parquet.page-row-limit": 1,
    "write.parquet.dict-size-bytes": 1,
    "write.parquet.compression-level": -(2**31),
    "write.metadata.previous-versions-max": 1,
    "write.metadata.metrics.max-inferred-column-defaults": 0,
    "commit.retry.num-retries": 0,
    "commit.retry.min-wait-ms": 0,
    "commit.retry.max-wait-ms": 0,
    "commit.retry.total-timeout-ms": 0,
    "commit.manifest.target-size-bytes": 1,
    "commit.manifest.min-count-to-merge": 0,
    "history.expire.max-snapshot-age-ms": 0,
    "history.expire.min-snapshots-to-keep": 1,
    "history.expire.max-ref-age-ms": 0,
    "write.v4.column-updates.max-size-percent": 1,
    "write.spark.small-input-bytes": 0,
}
"""Integer table properties icefloe reads, with the smallest value each accepts (at most 2**63 - 1)."""

_LONG_MAX = 2**63 - 1


def checked_int_property(props: Mapping[str, str], key: str, default: int) -> int:
    """A known integer property (:data:`NUMERIC_PROPERTIES`) checked against its range."""
    return int_property(props, key, default, NUMERIC_PROPERTIES.get(key, -_LONG_MAX - 1), _LONG_MAX)


def check_numeric_properties(props: Mapping[str, str]) -> None:
    """Refuse a value of a known integer property that could not be used (ValidationError naming it).

    Called when properties are set, so a bad value never reaches a writer: a table whose
    ``commit.retry.num-retries`` is not a number could not even commit the fix.
    """
    for key in NUMERIC_PROPERTIES.keys() & props.keys():
        checked_int_property(props, key, 0)
