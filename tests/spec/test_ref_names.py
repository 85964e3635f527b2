"""Branch and tag names: Git's check-ref-format rules plus invisible characters (issue 13, item 5)."""

from __future__ import annotations

import pytest

from icefloe.errors import ValidationError
from icefloe.spec.ref_names import check_ref_name, ref_name_problem


@pytest.mark.parametrize(
    "name", ["main", "audit", "release/2024-06", "feature_x.1", "wap-7f3a", "équipe", "v1.2.3", "a@b"]
)
def test_valid_names(name: str) -> None:
    assert ref_name_problem(name) is None
    assert check_ref_name(name) == name


@pytest.mark.parametrize(
    "name",
    [
        "",
        "   ",
        " audit",
        "audit ",
        "two words",
        "tab\there",
        "new\nline",
        "nul\x00",
        "del\x7f",
        "zero\u200bwidth",
        "joiner\u200d",
        "bidi\u202eoverride",
        "isolate\u2066x",
        "\ufeffbom",
        "nbsp\u00a0x",
        "/",
        "//",
        "/audit",
        "audit/",
        "a//b",
        "a/.hidden",
        ".hidden",
        "x.lock",
        "a/b.lock/c",
        "a..b",
        "ends.",
        "@",
        "a@{1}",
        "tilde~1",
        "caret^",
        "colon:x",
        "what?",
        "star*",
        "open[",
        "back\\slash",
        "x" * 256,
    ],
)
def test_invalid_names_are_refused(name: str) -> None:
    assert ref_name_problem(name) is not None
    with pytest.raises(ValidationError, match="invalid branch or tag name"):
        check_ref_name(name)


def test_non_string_is_refused() -> None:
    with pytest.raises(ValidationError, match="not a string"):
        check_ref_name(None)
