"""Spark's table options after a table name: ``SELECT * FROM t WITH ('snapshot-id' = '1')``,
``INSERT INTO t WITH ('snapshot-property.k' = 'v') ...``.

sqlglot's Spark dialect does not parse them. A statement sqlglot refuses is read again with each
``WITH (key = value, ...)`` blanked out (same length, so every position in errors stays right);
each list is then hung on the table named last before it, as a ``WithTableHint`` of
``Property`` nodes (a slot sqlglot's Table has, kept by copies and compared by equality, which
Spark's generator does not write). ``WITH (`` never starts a common table expression, so no other
reading of those tokens is possible.

What the options mean is decided where the table is read or written: ``READ_OPTIONS`` and
``WRITE_OPTIONS`` below, checked by :func:`read_options` and :func:`write_properties`.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.tokens import Token, TokenType

from icefloe.errors import ValidationError

# Iceberg's Spark read options (SparkReadOptions) that choose which rows a read returns
SNAPSHOT_ID, AS_OF_TIMESTAMP, BRANCH, TAG = "snapshot-id", "as-of-timestamp", "branch", "tag"
START_SNAPSHOT_ID, END_SNAPSHOT_ID = "start-snapshot-id", "end-snapshot-id"
# ... and those that only tune how the work is split or decoded: the same rows either way, and
# icefloe's SQL reads go through Spark's own Parquet scan, which sizes its splits itself
TUNING_READ_OPTIONS = frozenset(
    {"split-size", "lookback", "file-open-cost", "vectorization-enabled", "batch-size", "locality"}
)
READ_OPTIONS = frozenset({SNAPSHOT_ID, AS_OF_TIMESTAMP, BRANCH, TAG, START_SNAPSHOT_ID, END_SNAPSHOT_ID})
SNAPSHOT_PROPERTY_PREFIX = "snapshot-property."  # Iceberg's write option: a key of the snapshot summary


@dataclass(frozen=True)
class OptionList:
    """One ``WITH (...)`` list of a statement: where it starts, and its pairs."""

    start: int
    options: tuple[tuple[str, str], ...]


def blank_table_options(text: str, tokens: list[Token]) -> tuple[str, list[OptionList]] | None:
    """``text`` with every ``WITH (key = value, ...)`` list replaced by spaces, and the lists (None
    when there is none, or one is not a property list: Spark's parser reports that)."""
    found: list[OptionList] = []
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(tokens) - 1:
        tok = tokens[i]
        if tok.token_type is TokenType.WITH and tokens[i + 1].token_type is TokenType.L_PAREN and i > 0:
            read = _property_list(tokens, i + 2)
            if read is None:
                return None
            options, end = read
            found.append(OptionList(tok.start, tuple(options)))
            spans.append((tok.start, tokens[end].end + 1))
            i = end + 1
            continue
        i += 1
    if not found:
        return None
    for begin, finish in reversed(spans):
        blank = "".join(c if c == "\n" else " " for c in text[begin:finish])
        text = text[:begin] + blank + text[finish:]
    return text, found


_PUNCTUATION = frozenset({TokenType.EQ, TokenType.COMMA, TokenType.R_PAREN, TokenType.L_PAREN, TokenType.DOT})


def _property_list(tokens: list[Token], i: int) -> tuple[list[tuple[str, str]], int] | None:
    """Spark's ``propertyList`` from token ``i`` on (``key [=] value`` pairs, a key dotted names
    or a string): its pairs and the index of its ``)``; None if the tokens are not one."""
    pairs: list[tuple[str, str]] = []
    n = len(tokens)
    while i < n:
        key: list[str] = []
        if tokens[i].token_type is TokenType.STRING:
            key.append(tokens[i].text)
            i += 1
        else:
            while (
                i < n
                and tokens[i].token_type not in _PUNCTUATION
                and tokens[i].token_type is not TokenType.STRING
            ):
                key.append(tokens[i].text)
                i += 1
                if i < n and tokens[i].token_type is TokenType.DOT:
                    i += 1
                else:
                    break
        if not key or i >= n:
            return None
        if tokens[i].token_type is TokenType.EQ:
            i += 1
        value = ""
        if i < n and tokens[i].token_type not in _PUNCTUATION:
            value = tokens[i].text
            i += 1
        pairs.append((".".join(key), value))
        if i < n and tokens[i].token_type is TokenType.R_PAREN:
            return pairs, i
        if i >= n or tokens[i].token_type is not TokenType.COMMA:
            return None
        i += 1
    return None


def attach_table_options(tree: exp.Expr, lists: list[OptionList]) -> exp.Expr:
    """Hang each option list on the table whose name comes last before it (Spark's grammar puts
    the list right after the name or after its ``VERSION / TIMESTAMP AS OF``; a statement with a
    list elsewhere is one Spark's parser refuses, which icefloe asks before running it)."""
    ends = sorted(
        ((end, node) for node in tree.find_all(exp.Table) if (end := _name_end(node)) is not None),
        key=lambda pair: pair[0],
    )
    for found in lists:
        before = [node for end, node in ends if end < found.start]
        if not before:
            raise ParseError("WITH (options) must follow a table name")
        node = before[-1]
        hint = exp.WithTableHint(
            expressions=[
                exp.Property(this=exp.Literal.string(key), value=exp.Literal.string(value))
                for key, value in found.options
            ]
        )
        node.set("hints", [*(node.args.get("hints") or []), hint])
    return tree


def _name_end(node: exp.Table) -> int | None:
    ends = [p.meta.get("end") for p in node.parts if isinstance(p, exp.Identifier)]
    known = [e for e in ends if isinstance(e, int)]
    return max(known) if known else None


def table_options(node: exp.Table) -> dict[str, str]:
    """The ``WITH (...)`` options written after a table name (lower-cased keys, as Spark's
    case-insensitive option map holds them)."""
    out: dict[str, str] = {}
    for hint in node.args.get("hints") or []:
        if isinstance(hint, exp.WithTableHint):
            for prop in hint.expressions:
                if isinstance(prop, exp.Property):
                    out[prop.name.lower()] = prop.text("value")
    return out


def read_options(name: str, options: dict[str, str]) -> dict[str, str]:
    """The options of a read that choose its rows; refuses any Iceberg does not read.

    Unknown keys are refused rather than passed over as Iceberg does: a misspelt ``snapshot-id``
    would otherwise read the current snapshot without a word.
    """
    unknown = sorted(k for k in options if k not in READ_OPTIONS and k not in TUNING_READ_OPTIONS)
    if unknown:
        known = ", ".join(sorted(READ_OPTIONS | TUNING_READ_OPTIONS))
        raise ValidationError(f"{name}: unknown read option(s) {', '.join(unknown)} (icefloe reads {known})")
    return {k: v for k, v in options.items() if k in READ_OPTIONS}


def write_properties(name: str, options: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The snapshot summary properties a write's options ask for (``snapshot-property.<key>``)."""
    other = sorted(k for k in options if not k.startswith(SNAPSHOT_PROPERTY_PREFIX))
    if other:
        raise ValidationError(
            f"{name}: unsupported write option(s) {', '.join(other)} "
            f"(icefloe SQL takes {SNAPSHOT_PROPERTY_PREFIX}<key> on writes)"
        )
    return tuple((k[len(SNAPSHOT_PROPERTY_PREFIX) :], v) for k, v in options.items())
