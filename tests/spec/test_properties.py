"""Checked numeric table properties."""

from __future__ import annotations

import pytest

from icefloe.errors import ValidationError
from icefloe.spec.properties import int_property


def test_int_property_reads_checks_and_defaults() -> None:
    props = {"a": " 7 ", "neg": "-1", "word": "seven"}
    assert int_property(props, "a", 1, 0) == 7
    assert int_property(props, "missing", 3, 1) == 3
    assert int_property(props, "a", 1, 0, 7) == 7
    with pytest.raises(ValidationError, match=r"table property a must be between 0 and 5, got 7"):
        int_property(props, "a", 1, 0, 5)
    with pytest.raises(ValidationError, match=r"table property neg must be >= 1, got -1"):
        int_property(props, "neg", 1, 1)
    with pytest.raises(ValidationError, match=r"table property word must be an integer, got 'seven'"):
        int_property(props, "word", 1, 0)
