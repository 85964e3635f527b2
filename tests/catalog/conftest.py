"""Catalog test fixtures beyond the shared catalog family of ``tests/conftest.py``."""

from __future__ import annotations

import pytest

from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType


@pytest.fixture
def schema() -> Schema:
    """A two-column schema."""
    return Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType(), required=False),
    )
