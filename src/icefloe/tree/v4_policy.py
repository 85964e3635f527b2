"""Table properties that shape a v4 metadata tree (inline vs leaf vs manifest DV vs compaction).

Every commit to a format-version 4 table writes exactly one new root manifest. What else it
writes is decided here, from table properties (defaults in brackets):

``write.v4.root.max-inline-entries`` [100]
    Live DATA entries the root may hold inline. A commit whose root-level entries (carried
    inline entries + entries it adds or modifies) fit stays a *single-file commit*: one root,
    no leaf. Otherwise all of them are flushed into new leaf manifests. ``0`` turns inlining off
    (every commit that adds files writes a leaf, like Java's milestone-1 writer).
``write.v4.leaf.target-entries`` [50000]
    Rows per leaf manifest written (capped at 2,097,152, the most a Mumbling v1 manifest DV can
    address). Leaves can be large because removing entries from them costs a manifest DV in the
    root, not a rewrite; the root holds one reference per leaf.
``write.v4.leaf.min-live-ratio`` [0.5]
    When a commit removes (or replaces, for a new deletion vector) entries of a leaf, it marks
    them in the leaf reference's manifest DV unless the leaf's live entries would fall below this
    fraction of its rows; then the leaf is rewritten (live rows EXISTING with materialised
    tracking). ``0`` always uses manifest DVs, ``1`` always rewrites (copy-on-write). A leaf
    with no live entry left is dropped from the root.
``write.v4.compaction.enabled`` [true]
    Merge small leaves during commits (never changes table contents or row lineage).
``write.v4.compaction.small-leaf-entries`` [5000]
    A leaf with fewer live entries than this is *small*. Flushed root entries make small leaves.
``write.v4.compaction.min-small-leaves`` [8]
    Small leaves are grouped in size tiers (``k**t <= live entries < k**(t+1)`` with ``k`` this
    value). Once the root references ``k`` small leaves of one tier and content (data /
    deletes), a commit merges them, together with any root-level entries it flushes, into new
    leaves. Merging leaves of similar size keeps the root to a few references while each entry
    is rewritten only about ``log_k(small-leaf-entries)`` times (log-structured).
``write.v4.compaction.full`` [false]
    Merge *every* small leaf of a content, whatever its tier, together with the root-level
    entries the commit flushes, into new leaves (when there are at least two such leaves or any
    root-level entry). ``rewrite_manifests`` sets it, with ``write.v4.root.max-inline-entries=0``,
    for its one commit; as a table property it would make every commit do so.
``write.v4.manifest-dv.encoding`` [``mumbling-v1``]
    Encoding of manifest DVs and of the deleted/replaced position bitmaps (``mumbling-v1`` or
    ``roaring-portable-64``); readers use the same property (facts Q3: never sniffed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from icefloe.errors import ValidationError
from icefloe.formats.v4.bitmaps import DEFAULT_MANIFEST_DV_ENCODING
from icefloe.formats.v4.mumbling import MAX_POSITION
from icefloe.spec.properties import int_property

ROOT_MAX_INLINE_ENTRIES = "write.v4.root.max-inline-entries"
LEAF_TARGET_ENTRIES = "write.v4.leaf.target-entries"
LEAF_MIN_LIVE_RATIO = "write.v4.leaf.min-live-ratio"
COMPACTION_ENABLED = "write.v4.compaction.enabled"
COMPACTION_SMALL_LEAF_ENTRIES = "write.v4.compaction.small-leaf-entries"
COMPACTION_MIN_SMALL_LEAVES = "write.v4.compaction.min-small-leaves"
COMPACTION_FULL = "write.v4.compaction.full"
MANIFEST_DV_ENCODING = "write.v4.manifest-dv.encoding"

DEFAULT_ROOT_MAX_INLINE_ENTRIES = 100
DEFAULT_LEAF_TARGET_ENTRIES = 50_000
DEFAULT_LEAF_MIN_LIVE_RATIO = 0.5
DEFAULT_COMPACTION_SMALL_LEAF_ENTRIES = 5_000
DEFAULT_COMPACTION_MIN_SMALL_LEAVES = 8
MAX_LEAF_ENTRIES = MAX_POSITION + 1  # 2**21 rows: every row position fits a Mumbling v1 DV

MODIFIED_KEEPS_SNAPSHOT_ID = True
"""Facts Q5: a MODIFIED row (or MDV-changed reference) keeps its original ``snapshot_id``."""


def _ratio(props: Mapping[str, str], key: str, default: float) -> float:
    raw = props.get(key)
    if raw is None:
        return default
    try:
        value = float(str(raw).strip())
    except ValueError:
        raise ValidationError(f"table property {key} must be a number, got {raw!r}") from None
    if not 0.0 <= value <= 1.0:
        raise ValidationError(f"table property {key} must be between 0 and 1, got {value}")
    return value


@dataclass(frozen=True)
class V4Policy:
    """The v4 tree-shaping settings of one commit (see the module docstring)."""

    max_inline_entries: int = DEFAULT_ROOT_MAX_INLINE_ENTRIES
    leaf_target_entries: int = DEFAULT_LEAF_TARGET_ENTRIES
    min_live_ratio: float = DEFAULT_LEAF_MIN_LIVE_RATIO
    compaction_enabled: bool = True
    small_leaf_entries: int = DEFAULT_COMPACTION_SMALL_LEAF_ENTRIES
    min_small_leaves: int = DEFAULT_COMPACTION_MIN_SMALL_LEAVES
    mdv_encoding: str = DEFAULT_MANIFEST_DV_ENCODING
    compaction_full: bool = False

    def small_tier(self, live: int) -> int | None:
        """The size tier of a leaf with ``live`` live entries (None: not a small leaf).

        Tier ``t`` holds leaves with ``k**t <= live entries < k**(t+1)``, ``k`` =
        ``write.v4.compaction.min-small-leaves``: merging ``k`` leaves of one tier makes a leaf of
        the next tier, so each entry is rewritten about log_k(small-leaf-entries) times at most.
        """
        if live >= self.small_leaf_entries:
            return None
        tier, size = 0, self.min_small_leaves
        while size <= live:
            tier, size = tier + 1, size * self.min_small_leaves
        return tier

    def merged_tiers(self, tiers: list[int], root_entries: bool) -> set[int]:
        """The tiers whose small leaves (one content, ``tiers`` one item per leaf) a commit merges;
        ``root_entries``: the commit keeps root-level entries of that content."""
        if not self.compaction_enabled:
            return set()
        if self.compaction_full:  # every small leaf, once there is something to merge them with
            return set(tiers) if len(tiers) >= 2 or (len(tiers) == 1 and root_entries) else set()
        return {t for t in set(tiers) if tiers.count(t) >= self.min_small_leaves}

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> V4Policy:
        """Read the policy from table properties; ValidationError names a bad property."""
        return cls(
            max_inline_entries=int_property(
                props, ROOT_MAX_INLINE_ENTRIES, DEFAULT_ROOT_MAX_INLINE_ENTRIES, 0
            ),
            leaf_target_entries=int_property(
                props, LEAF_TARGET_ENTRIES, DEFAULT_LEAF_TARGET_ENTRIES, 1, MAX_LEAF_ENTRIES
            ),
            min_live_ratio=_ratio(props, LEAF_MIN_LIVE_RATIO, DEFAULT_LEAF_MIN_LIVE_RATIO),
            compaction_enabled=_flag(props, COMPACTION_ENABLED, True),
            small_leaf_entries=int_property(
                props, COMPACTION_SMALL_LEAF_ENTRIES, DEFAULT_COMPACTION_SMALL_LEAF_ENTRIES, 0
            ),
            min_small_leaves=int_property(
                props, COMPACTION_MIN_SMALL_LEAVES, DEFAULT_COMPACTION_MIN_SMALL_LEAVES, 2
            ),
            mdv_encoding=str(props.get(MANIFEST_DV_ENCODING, DEFAULT_MANIFEST_DV_ENCODING)).strip().lower(),
            compaction_full=_flag(props, COMPACTION_FULL, False),
        )


def _flag(props: Mapping[str, str], name: str, default: bool) -> bool:
    value = str(props.get(name, str(default))).strip().lower()
    if value not in ("true", "false"):
        raise ValidationError(f"table property {name} must be true or false, got {value!r}")
    return value == "true"


def manifest_dv_encoding(props: Mapping[str, str]) -> str:
    """The manifest-DV encoding a table's readers and writers use."""
    return str(props.get(MANIFEST_DV_ENCODING, DEFAULT_MANIFEST_DV_ENCODING)).strip().lower()
