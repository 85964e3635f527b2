"""Filters of row-changing operations: "every row" must be explicit (issue 13, item 5)."""

from __future__ import annotations

import pytest

from icefloe.errors import ValidationError
from icefloe.expressions.ast import AlwaysFalse, AlwaysTrue, EqualTo, Reference
from icefloe.expressions.change_filters import change_filter


@pytest.mark.parametrize("value", [True, "true", "TRUE", " true ", AlwaysTrue()])
def test_explicit_everything(value: object) -> None:
    assert change_filter(value, "delete") == AlwaysTrue()  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["", " ", "\t\n", None])
@pytest.mark.parametrize("operation", ["delete", "update"])
def test_missing_or_blank_filter_is_refused(value: str | None, operation: str) -> None:
    with pytest.raises(ValidationError, match=f"{operation}: .*pass True or 'true' to {operation} every row"):
        change_filter(value, operation)


def test_overwrite_without_filter_means_the_whole_table_but_blank_text_is_refused() -> None:
    assert change_filter(None, "overwrite", none_means_all=True) == AlwaysTrue()
    with pytest.raises(ValidationError, match="the filter is empty"):
        change_filter("  ", "overwrite", none_means_all=True)


def test_ordinary_filters_pass_through() -> None:
    assert change_filter(False, "delete") == AlwaysFalse()
    assert change_filter("id = 3", "delete") == EqualTo(Reference("id"), 3)
    with pytest.raises(ValidationError, match="must be text"):
        change_filter(3, "delete")  # type: ignore[arg-type]
