"""A catalog's answer to a commit, read without parsing what it repeats of the client's metadata.

A REST catalog answers every commit with the table's whole metadata (``CommitTableResponse``),
which grows with the table's history: at 500 snapshots about 370 KB, whose ``json.loads`` and
exact comparison with the snapshots the client holds cost about 2 ms per commit, more than the
rest of a small append. The client proposed those snapshots itself and holds their text
(``json_codec.known_array_texts``). The reply's ``snapshots`` and ``snapshot-log`` start with
that text when a catalog spells JSON as icefloe's server does (other servers' replies are parsed
as before), in one of two ways:

- all the held items: the catalog committed what the client proposed;
- all but the last: the catalog rebased the client's newest snapshot onto what other writers
  committed meanwhile (commit coalescing), so the array holds the client's base, then theirs,
  then the rebased one. Under contention most commits are answered so.

Only a reply that starts its snapshots with the client's first one, so spelled, is tried (a
memory search): building the held text for another catalog's spelling would be wasted. The held
items' text is cut out of the reply before it is parsed, a marker is parsed in its place
as the array's first item, and the held objects are taken for the marker
(``table_metadata_from_json(..., verbatim=...)``); only the items after it are parsed.

Why that gives what parsing the whole reply gives. The cut text ``P`` is ``[`` and ``k`` items of
the held text, separated by commas, found right after a ``"<member>":``; the marker text ``M`` put
in its place is ``["<token>"``, the token 16 random bytes in hex drawn for that member, which no
reply holds. The text before and after the cut is unchanged. Suppose the metadata object's member,
parsed from the changed text, is a list whose first item is the member's token. The token is
nowhere else, so that item is the string of ``M``, and the ``[`` of ``M`` opened the member's
value: the member the object kept (a JSON object keeps its last duplicate key) begins where ``P``
began. A parser of the original text is in the same state there (the text before is the same),
reads ``P`` as an array opening and ``k`` complete items, which parse exactly to the held objects'
JSON forms (the only text ``known_array_texts`` offers), and is then in the state it is in after
``M``: inside that array, after an item. From there both read the same text, so they read the same
items after the first and the same everything else. The whole reply therefore parses to the changed
document with the marker replaced by the held items' forms, and ``table_metadata_from_json`` gives
the held objects for those. Found anywhere else (as the value of another object's member or of an
earlier duplicate key, or of a key that only ends in the member's name), the kept member does not
begin with its marker, and the whole reply is parsed as before; so is a reply whose changed text
does not parse (only a reply that is not JSON: the cut text is whole JSON values, read where a
value is read), so that it fails as ``json.loads`` fails for it. The held text means those objects
only in the format version and table location it was written for (v4 writes roots relative to the
location), so the reply's must be ``known``'s.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from icefloe.spec.json_codec import ArrayText, known_array_texts
from icefloe.spec.json_fragments import COMPACT
from icefloe.spec.json_snapshots import snapshot_to_dict
from icefloe.spec.table_metadata import TableMetadata

_AFTER_AN_ITEM = (b",", b"]")
"""What follows an array's item when JSON is written compactly: the next one, or the end."""


def load_reply(data: bytes, metadata_key: str, known: TableMetadata | None) -> tuple[Any, dict[str, int]]:
    """``json.loads(data)``, except that in its ``metadata_key`` object each member named in the
    returned mapping (``snapshots``, ``snapshot-log``) begins with a marker standing for that
    many of ``known``'s first items, which the reply repeated verbatim;
    ``table_metadata_from_json(doc[metadata_key], known, verbatim=that mapping)`` then gives what
    parsing the whole reply would."""
    if known is None or known.format_version < 2 or not _spelled_as_held(data, known):
        return json.loads(data), {}
    pieces: list[bytes] = []
    cut: dict[str, int] = {}
    tokens: dict[str, str] = {}
    start = 0
    for member, text in known_array_texts(known).items():  # in the order icefloe writes them
        found = _held_items_at(data, json.dumps(member).encode() + b":", text, start)
        if found is None:
            continue
        at, length, items = found
        tokens[member] = token = secrets.token_hex(16)
        pieces += (data[start:at], f'["{token}"'.encode())
        start = at + length
        cut[member] = items
    if not cut:
        return json.loads(data), {}
    pieces.append(data[start:])
    try:
        doc = json.loads(b"".join(pieces))
    except ValueError:  # not JSON: the error json.loads gives for the reply itself
        return json.loads(data), {}
    metadata = doc.get(metadata_key) if type(doc) is dict else None
    if not (
        type(metadata) is dict
        and all(_begins_with(metadata.get(member), token) for member, token in tokens.items())
        and _same_table(metadata, known)
    ):
        return json.loads(data), {}  # not the members, or not the table, they were taken for
    return doc, cut


def _spelled_as_held(data: bytes, known: TableMetadata) -> bool:
    """Whether the reply holds ``known``'s first snapshot as icefloe writes it (a memory search):
    a catalog that spells JSON otherwise would have the held text made for nothing."""
    if not known.snapshots:
        return False
    first = snapshot_to_dict(known.snapshots[0], known.format_version, known.location)
    return data.find(b'"snapshots":[' + COMPACT.encode(first).encode("utf-8")) >= 0


def _held_items_at(data: bytes, key: bytes, text: ArrayText, start: int) -> tuple[int, int, int] | None:
    """Where, after ``start``, ``key`` is followed by the held array's text less its ``]`` (or,
    failing that, the text of all but its last item) and then by ``,`` or ``]`` (compared in
    place): (where the array begins, how long the held text is, how many items it holds)."""
    body, head = text.body, memoryview(text.body)[: text.head]
    at = data.find(key, start)
    while at >= 0:
        value = at + len(key)
        end = value + len(body)
        if data.startswith(body, value) and data[end : end + 1] in _AFTER_AN_ITEM:
            return value, len(body), text.items
        end = value + text.head
        if text.head and data.startswith(head, value) and data[end : end + 1] in _AFTER_AN_ITEM:
            return value, text.head, text.items - 1
        at = data.find(key, at + 1)
    return None


def _begins_with(member: Any, token: str) -> bool:
    return type(member) is list and len(member) > 0 and member[0] == token


def _same_table(metadata: dict[str, Any], known: TableMetadata) -> bool:
    """Whether the reply's format version and location are ``known``'s: the text was taken as what
    parses to ``known``'s objects in that version, with v4 roots relative to that location."""
    return (
        type(metadata.get("format-version")) is int
        and metadata["format-version"] == known.format_version
        and metadata.get("location") == known.location
    )


__all__ = ["load_reply"]
