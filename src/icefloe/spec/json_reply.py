"""A catalog's answer to a commit, read without parsing what it repeats of the client's metadata.

A REST catalog answers every commit with the table's whole metadata (``CommitTableResponse``),
which grows with the table's history: at 500 snapshots about 370 KB, whose ``json.loads`` and
exact comparison with the snapshots the client holds cost about 2 ms per commit, more than the
rest of a small append. The client proposed those snapshots itself and holds their text
(``json_codec.known_array_texts``). When the reply spells an array exactly so (icefloe's server
does; other servers' replies are parsed as before), the array is cut out before parsing, a marker
is parsed in its place, and the held objects are taken for it
(``table_metadata_from_json(..., verbatim=...)``).

Only a reply that holds the proposed newest snapshot, spelled so, at the end of an array is
tried (a memory search): when other writers committed first, the catalog rebased that snapshot
or refused the commit, and building the held text to look for would be wasted.

Why that gives what parsing the whole reply gives: the marker, a string no reply holds (16 random
bytes in hex), replaces the text after one ``"<member>":``, so everything around it parses as
before. If the metadata object's member then holds the marker, the cut text was that member's
value (a JSON object keeps its last duplicate key, and the marker was the one kept), and that
text parses to exactly the held objects: ``known_array_texts`` offers no other. Found anywhere
else (inside a string, in another object, an earlier duplicate key), the member does not hold
the marker, and the whole reply is parsed as before.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from icefloe.spec.json_codec import known_array_texts
from icefloe.spec.json_fragments import COMPACT
from icefloe.spec.json_snapshots import snapshot_to_dict
from icefloe.spec.table_metadata import TableMetadata


def load_reply(data: bytes, metadata_key: str, known: TableMetadata | None) -> tuple[Any, frozenset[str]]:
    """``json.loads(data)``, except that the members of its ``metadata_key`` object named in the
    returned set hold a marker instead of ``known``'s snapshot array or snapshot-log, which the
    reply repeated verbatim; ``table_metadata_from_json(doc[metadata_key], known, verbatim=that
    set)`` then gives what parsing the whole reply would."""
    if known is None or not known.snapshots or known.format_version < 2:
        return json.loads(data), frozenset()
    newest = snapshot_to_dict(known.snapshots[-1], known.format_version, known.location)
    if data.find(COMPACT.encode(newest).encode("utf-8") + b"]") < 0:
        return json.loads(data), frozenset()  # rebased, refused, or spelled otherwise
    texts = known_array_texts(known)
    token = secrets.token_hex(16)
    marker = f'"{token}"'.encode()
    pieces: list[bytes] = []
    cut: list[str] = []
    start = 0
    for member, body in texts.items():  # in the order icefloe writes them
        at = _value_at(data, json.dumps(member).encode() + b":", body, start)
        if at is None:
            continue
        pieces += (data[start:at], marker)
        start = at + len(body) + 1  # the body and its closing "]"
        cut.append(member)
    if not cut:
        return json.loads(data), frozenset()
    pieces.append(data[start:])
    doc = json.loads(b"".join(pieces))
    metadata = doc.get(metadata_key) if type(doc) is dict else None
    if not (
        type(metadata) is dict
        and all(metadata.get(member) == token for member in cut)
        and _same_table(metadata, known)
    ):
        return json.loads(data), frozenset()  # not the members, or not the table, they were taken for
    return doc, frozenset(cut)


def _value_at(data: bytes, key: bytes, body: bytes, start: int) -> int | None:
    """Where ``key`` is followed by ``body`` and ``]`` in ``data`` (compared in place), or None."""
    at = data.find(key, start)
    while at >= 0:
        value = at + len(key)
        end = value + len(body)
        if data.startswith(body, value) and data[end : end + 1] == b"]":
            return value
        at = data.find(key, at + 1)
    return None


def _same_table(metadata: dict[str, Any], known: TableMetadata | None) -> bool:
    """Whether the reply's format version and location are ``known``'s: the text was taken as what
    parses to ``known``'s objects in that version, with v4 roots relative to that location."""
    return (
        known is not None
        and type(metadata.get("format-version")) is int
        and metadata["format-version"] == known.format_version
        and metadata.get("location") == known.location
    )


__all__ = ["load_reply"]
