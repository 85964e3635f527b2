"""How orphan-file removal matches listed files with the files table metadata names, when the two
spell a location with another scheme or authority (Iceberg's ``equal_schemes``,
``equal_authorities`` and ``prefix_mismatch_mode``).

Locations are first brought to their canonical spelling (``io.normalize_location``: local paths as
``file:///...``, ``s3a://`` / ``s3n://`` as ``s3://``), then split into scheme, authority and path;
schemes and authorities declared equal map to one name. A listed file whose (scheme, authority,
path) some metadata names is kept. One whose path alone matches a named file is a *prefix
mismatch*: ``ERROR`` (the default, as in Iceberg) refuses to decide and deletes nothing, ``IGNORE``
keeps the file, ``DELETE`` treats it as an orphan. Any other file is an orphan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from icefloe.errors import ValidationError
from icefloe.io.fileio import normalize_location, split_scheme


class PrefixMismatchMode(Enum):
    """What to do with a file whose path matches a named file under another scheme or authority."""

    ERROR = "ERROR"
    IGNORE = "IGNORE"
    DELETE = "DELETE"


@dataclass(frozen=True)
class PrefixMatching:
    """Which schemes and authorities are equal (each key a comma-separated list of names, its value
    the name they all stand for) and what a prefix mismatch does."""

    mode: PrefixMismatchMode = PrefixMismatchMode.ERROR
    equal_schemes: Mapping[str, str] = field(default_factory=dict)
    equal_authorities: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def parse(
        cls,
        mode: str | None = None,
        equal_schemes: Mapping[str, str] | None = None,
        equal_authorities: Mapping[str, str] | None = None,
    ) -> PrefixMatching:
        """From procedure arguments (``prefix_mismatch_mode => 'IGNORE'``, ``map(...)`` values)."""
        try:
            chosen = PrefixMismatchMode((mode or "ERROR").upper())
        except ValueError:
            raise ValidationError(
                f"prefix_mismatch_mode must be ERROR, IGNORE or DELETE, not {mode!r}"
            ) from None
        return cls(chosen, _expand(equal_schemes, lower=True), _expand(equal_authorities, lower=False))

    def split(self, location: str) -> tuple[str, str, str]:
        """(scheme, authority, path) of a location, equal names mapped to one."""
        scheme, rest = split_scheme(normalize_location(location))
        authority, path = "", rest
        if rest.startswith("//"):
            authority, slash, tail = rest[2:].partition("/")
            path = slash + tail
        return (
            self.equal_schemes.get(scheme, scheme),
            self.equal_authorities.get(authority, authority),
            path,
        )


def _expand(pairs: Mapping[str, str] | None, lower: bool) -> dict[str, str]:
    """``{'s3a,s3n': 's3'}`` as ``{'s3a': 's3', 's3n': 's3'}`` (schemes compare in lower case)."""

    def spelled(text: str) -> str:
        return text.strip().lower() if lower else text.strip()

    out: dict[str, str] = {}
    for names, value in (pairs or {}).items():
        for name in str(names).split(","):
            if name.strip():
                out[spelled(name)] = spelled(str(value))
    return out


def classify_orphans(listed: Iterable[str], referenced: Iterable[str], matching: PrefixMatching) -> list[str]:
    """The listed locations that are orphans (ValidationError on a mismatch in ERROR mode)."""
    named = {matching.split(r) for r in referenced}
    named_paths = {path for _, _, path in named}
    orphans: list[str] = []
    mismatched: list[str] = []
    for location in listed:
        key = matching.split(location)
        if key in named:
            continue
        if key[2] not in named_paths or matching.mode is PrefixMismatchMode.DELETE:
            orphans.append(location)
        elif matching.mode is PrefixMismatchMode.ERROR:
            mismatched.append(location)
    if mismatched:
        raise ValidationError(
            f"{len(mismatched)} files (e.g. {mismatched[0]}) have the path of a file the table names "
            "under another scheme or authority: declare them equal (equal_schemes / "
            "equal_authorities) or set prefix_mismatch_mode to IGNORE or DELETE"
        )
    return orphans
