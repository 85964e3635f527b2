"""Identifier parsing and validation."""

from __future__ import annotations

import pytest

from icefloe.catalog.identifiers import (
    namespace_from_string,
    namespace_to_string,
    parse_namespace,
    parse_table_identifier,
    table_identifier,
)
from icefloe.errors import ValidationError


def test_string_and_tuple_forms_agree() -> None:
    assert parse_table_identifier("a.b.t") == (("a", "b"), "t")
    assert parse_table_identifier(("a", "b", "t")) == (("a", "b"), "t")
    assert parse_table_identifier(["ns", "t"]) == (("ns",), "t")
    assert table_identifier("ns.t") == ("ns", "t")
    assert parse_namespace("a.b") == ("a", "b")
    assert parse_namespace(("a",)) == ("a",)
    assert parse_namespace((), allow_empty=True) == ()
    assert parse_namespace("", allow_empty=True) == ()


def test_dotted_storage_form_round_trips() -> None:
    assert namespace_to_string(("a", "b")) == "a.b"
    assert namespace_from_string("a.b") == ("a", "b")
    assert namespace_from_string("") == ()


@pytest.mark.parametrize(
    "identifier",
    [
        "t",  # no namespace
        ("t",),
        "ns..t",  # empty level
        ".t",
        "ns.",
        ("ns", ""),
        ("", "t"),
        ("ns", "   "),
        ("ns/x", "t"),
        ("ns", "a/b"),
        ("ns", "a\\b"),
        ("ns", ".."),
        ("ns", "a..b"),
        ("ns", "."),
        ("a.b", "t"),  # a level may not contain the separator
        ("ns", "bad\nname"),
        ("ns", "tab\tname"),
        ("n\x00s", "t"),
        ("ns", "del\x7f"),
        ("ns", "x" * 300),
    ],
)
def test_bad_table_identifiers_are_rejected_naming_the_value(identifier: object) -> None:
    with pytest.raises(ValidationError) as info:
        parse_table_identifier(identifier)  # type: ignore[arg-type]
    message = str(info.value)
    assert "invalid" in message
    if isinstance(identifier, str):
        assert repr(identifier)[1:-1] in message or identifier in message


def test_bad_part_is_named() -> None:
    with pytest.raises(ValidationError, match=r"'a/b'"):
        parse_table_identifier(("ns", "a/b"))
    with pytest.raises(ValidationError, match=r"control character"):
        parse_table_identifier(("ns", "x\ny"))
    with pytest.raises(ValidationError, match="at least one level"):
        parse_namespace(())
    with pytest.raises(ValidationError):
        parse_namespace(("ok", 3))  # type: ignore[arg-type]


def test_table_name_may_hold_a_dot_in_tuple_form() -> None:
    # Tables created by Java may have dots in their names; the tuple form can address them.
    assert parse_table_identifier(("ns", "v1.2")) == (("ns",), "v1.2")
