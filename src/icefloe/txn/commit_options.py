"""How a change commits: the branch it writes, extra snapshot summary properties, isolation.

One object instead of the same keywords in every write signature::

    table.append(df, options=CommitOptions(branch="audit", snapshot_properties={"job": "nightly"}))
    table.delete("id < 10", options=CommitOptions(isolation_level="snapshot"))

``isolation_level`` (row-level changes only) overrides the table's ``write.<op>.isolation-level``.
The keywords ``branch=`` and ``snapshot_properties=`` of earlier releases still work, with a
``DeprecationWarning``, until the next release.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from icefloe.deprecation import warn_deprecated
from icefloe.errors import ValidationError
from icefloe.spec.snapshots import MAIN_BRANCH
from icefloe.spec.table_metadata import TableMetadata
from icefloe.txn.isolation import IsolationLevel, isolation_level


@dataclass(frozen=True)
class CommitOptions:
    """Where and how a write commits (see the module docstring)."""

    branch: str = MAIN_BRANCH
    snapshot_properties: Mapping[str, str] = field(default_factory=dict)
    isolation_level: IsolationLevel | str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.branch, str) or not self.branch:
            raise ValidationError(
                f"CommitOptions.branch must be a non-empty branch name, not {self.branch!r}"
            )
        object.__setattr__(
            self, "snapshot_properties", {str(k): str(v) for k, v in self.snapshot_properties.items()}
        )
        if isinstance(self.isolation_level, str):
            try:
                object.__setattr__(
                    self, "isolation_level", IsolationLevel(self.isolation_level.strip().lower())
                )
            except ValueError:
                raise ValidationError(
                    f"isolation_level must be 'serializable' or 'snapshot', not {self.isolation_level!r}"
                ) from None

    def isolation_for(self, md: TableMetadata, operation: str) -> IsolationLevel:
        """This commit's isolation level for a row-level ``operation`` (else the table's property)."""
        if isinstance(self.isolation_level, IsolationLevel):
            return self.isolation_level
        return isolation_level(md, operation)

    @property
    def properties(self) -> dict[str, str]:
        """The snapshot summary properties as a fresh dict."""
        return dict(self.snapshot_properties)


DEFAULT_OPTIONS = CommitOptions()


def resolve_options(
    options: CommitOptions | None,
    branch: str | None = None,
    snapshot_properties: Mapping[str, str] | None = None,
    *,
    stacklevel: int = 3,
) -> CommitOptions:
    """``options``, or one built from the deprecated ``branch=`` / ``snapshot_properties=`` keywords."""
    if branch is None and snapshot_properties is None:
        return options or DEFAULT_OPTIONS
    if options is not None:
        raise ValidationError(
            "give either options=CommitOptions(...) or branch=/snapshot_properties=, not both"
        )
    warn_deprecated(
        "branch= and snapshot_properties= are deprecated: pass options=CommitOptions(branch=..., "
        "snapshot_properties=...)",
        stacklevel,
    )
    branch = MAIN_BRANCH if branch is None else branch  # a blank name is refused, not main
    return CommitOptions(branch=branch, snapshot_properties=dict(snapshot_properties or {}))
