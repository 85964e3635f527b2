"""Parse SQL-like filter text (``id > 5 and category = 'a'``) into unbound expressions.

Grammar (keywords are case-insensitive)::

    expr      := and_expr (OR and_expr)*
    and_expr  := not_expr (AND not_expr)*
    not_expr  := NOT not_expr | primary
    primary   := '(' expr ')' | TRUE | FALSE | predicate
    predicate := name cmp literal | literal cmp name
               | name [NOT] IN '(' literal (',' literal)* ')'
               | name IS [NOT] NULL | name IS [NOT] NAN
               | name [NOT] LIKE 'prefix%' | name [NOT] BETWEEN literal AND literal
    cmp       := = | == | != | <> | < | <= | > | >=
    name      := part ('.' part)*     part := identifier | `back ticked` | "double quoted"
    literal   := [+-]number | 'string' ('' escapes a quote) | X'hex' | TRUE | FALSE

Numbers without a fraction are ``int``; with a fraction and no exponent ``decimal.Decimal`` (the
text is kept exact); with an exponent ``float``. ``LIKE`` accepts prefix patterns only (``\\`` escapes
``%``, ``_`` and itself); a pattern without wildcards is an equality.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from icefloe.errors import ValidationError
from icefloe.expressions.ast import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    EqualTo,
    Expression,
    In,
    IsNaN,
    IsNull,
    Not,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Op,
    Or,
    Reference,
    StartsWith,
    make_predicate,
)

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
  | (?P<hex>[xX]'(?P<hexdigits>[^']*)')
  | (?P<string>'(?:[^']|'')*')
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<backtick>`(?:[^`]|``)*`)
  | (?P<dquote>"(?:[^"]|"")*")
  | (?P<op><=|>=|<>|!=|==|=|<|>)
  | (?P<punct>[(),.+-])
    """,
    re.VERBOSE,
)

_COMPARISONS = {
    "=": Op.EQ,
    "==": Op.EQ,
    "!=": Op.NOT_EQ,
    "<>": Op.NOT_EQ,
    "<": Op.LT,
    "<=": Op.LT_EQ,
    ">": Op.GT,
    ">=": Op.GT_EQ,
}


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # number | hex | string | ident | quoted | op | punct | end
    text: str
    pos: int
    value: Any = None

    def is_kw(self, *words: str) -> bool:
        return self.kind == "ident" and self.text.lower() in words


def _tokenize(text: str) -> list[_Tok]:
    tokens: list[_Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            unclosed = text[pos] in "'`\""
            what = f"unclosed quote {text[pos]}" if unclosed else f"unexpected character {text[pos]!r}"
            raise _error(text, pos, what)
        kind = m.lastgroup or ""
        raw = m.group(0)
        if kind == "hexdigits":  # the inner group of hex wins lastgroup; normalise
            kind = "hex"
        if kind == "ws":
            pass
        elif kind == "number":
            tokens.append(_Tok("number", raw, pos, _number(raw)))
        elif kind == "hex":
            digits = m.group("hexdigits")
            try:
                tokens.append(_Tok("hex", raw, pos, bytes.fromhex(digits)))
            except ValueError:
                raise _error(text, pos, f"{raw} is not a valid hexadecimal literal") from None
        elif kind == "string":
            tokens.append(_Tok("string", raw, pos, raw[1:-1].replace("''", "'")))
        elif kind == "backtick":
            tokens.append(_Tok("quoted", raw, pos, raw[1:-1].replace("``", "`")))
        elif kind == "dquote":
            tokens.append(_Tok("quoted", raw, pos, raw[1:-1].replace('""', '"')))
        else:
            tokens.append(_Tok(kind, raw, pos))
        pos = m.end()
    tokens.append(_Tok("end", "", len(text)))
    return tokens


def _number(text: str) -> int | Decimal | float:
    if "e" in text or "E" in text:
        return float(text)
    if "." in text:
        return Decimal(text)
    return int(text)


def _error(text: str, pos: int, message: str) -> ValidationError:
    near = text[pos : pos + 20]
    where = f"at position {pos} (near {near!r})" if near else "at the end of the text"
    return ValidationError(f"cannot parse filter {text!r}: {message} {where}")


MAX_NESTING = 100
"""Deepest nesting of parentheses and NOTs a filter may have (deeper text is refused, not recursed)."""
_BALANCE_AT = 32
"""AND / OR chains longer than this become balanced trees (depth log n), so binding never recurses deeply."""


def _chain(op: type[And] | type[Or], items: list[Expression]) -> Expression:
    """``items`` joined by ``op``: left-deep for short chains (as written), balanced for long ones."""
    if len(items) <= _BALANCE_AT:
        expr = items[0]
        for item in items[1:]:
            expr = op(expr, item)
        return expr
    mid = (len(items) + 1) // 2
    return op(_chain(op, items[:mid]), _chain(op, items[mid:]))


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0
        self.depth = 0

    def nest(self) -> None:
        """Enter one level of parentheses or NOT; refuse text nested deeper than MAX_NESTING."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise _error(self.text, self.tok.pos, f"the filter is nested more than {MAX_NESTING} levels deep")

    @property
    def tok(self) -> _Tok:
        return self.tokens[self.i]

    def peek(self, ahead: int = 1) -> _Tok:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def advance(self) -> _Tok:
        tok = self.tok
        self.i = min(self.i + 1, len(self.tokens) - 1)
        return tok

    def fail(self, expected: str, tok: _Tok | None = None) -> ValidationError:
        tok = tok or self.tok
        found = "end of text" if tok.kind == "end" else repr(tok.text)
        return _error(self.text, tok.pos, f"expected {expected}, found {found}")

    def expect_kw(self, word: str) -> None:
        if not self.tok.is_kw(word):
            raise self.fail(word.upper())
        self.advance()

    def expect_punct(self, char: str) -> None:
        if not (self.tok.kind == "punct" and self.tok.text == char):
            raise self.fail(repr(char))
        self.advance()

    # ------------------------------------------------------------------ boolean structure

    def parse(self) -> Expression:
        if self.tok.kind == "end":
            raise _error(self.text, 0, "the filter is empty")
        expr = self.or_expr()
        if self.tok.kind != "end":
            raise self.fail("AND, OR or the end of the filter")
        return expr

    def or_expr(self) -> Expression:
        items = [self.and_expr()]
        while self.tok.is_kw("or"):
            self.advance()
            items.append(self.and_expr())
        return _chain(Or, items)

    def and_expr(self) -> Expression:
        items = [self.not_expr()]
        while self.tok.is_kw("and"):
            self.advance()
            items.append(self.not_expr())
        return _chain(And, items)

    def not_expr(self) -> Expression:
        if self.tok.is_kw("not"):
            self.advance()
            self.nest()
            expr = Not(self.not_expr())
            self.depth -= 1
            return expr
        return self.primary()

    def primary(self) -> Expression:
        tok = self.tok
        if tok.kind == "punct" and tok.text == "(":
            self.advance()
            self.nest()
            expr = self.or_expr()
            self.expect_punct(")")
            self.depth -= 1
            return expr
        if tok.is_kw("true", "false") and self.peek().kind != "op":
            self.advance()
            return AlwaysTrue() if tok.is_kw("true") else AlwaysFalse()
        if self._starts_literal():
            return self.reversed_comparison()
        return self.predicate()

    # ------------------------------------------------------------------ predicates

    def _starts_literal(self) -> bool:
        tok = self.tok
        if tok.kind in ("number", "string", "hex") or tok.is_kw("true", "false"):
            return True
        return tok.kind == "punct" and tok.text in "+-" and self.peek().kind == "number"

    def reversed_comparison(self) -> Expression:
        start = self.tok
        value = self.literal()
        if self.tok.kind != "op":
            raise self.fail("a comparison operator after the literal")
        op = _COMPARISONS[self.advance().text]
        name = self.name()
        return self._make(op.flipped, name, value, start)

    def predicate(self) -> Expression:
        start = self.tok
        name = self.name()
        tok = self.tok
        if tok.kind == "op":
            self.advance()
            value = self.literal()
            return self._make(_COMPARISONS[tok.text], name, value, start)
        if tok.is_kw("is"):
            self.advance()
            negated = self.tok.is_kw("not")
            if negated:
                self.advance()
            if self.tok.is_kw("null"):
                self.advance()
                return NotNull(name) if negated else IsNull(name)
            if self.tok.is_kw("nan"):
                self.advance()
                return NotNaN(name) if negated else IsNaN(name)
            raise self.fail("NULL or NAN after IS" + (" NOT" if negated else ""))
        negated = tok.is_kw("not")
        if negated:
            self.advance()
        if self.tok.is_kw("in"):
            self.advance()
            values = self.value_list()
            return NotIn(name, values) if negated else In(name, values)
        if self.tok.is_kw("like"):
            self.advance()
            return self.like(name, negated)
        if self.tok.is_kw("between"):
            self.advance()
            low = self.literal()
            self.expect_kw("and")
            high = self.literal()
            between = And(self._make(Op.GT_EQ, name, low, start), self._make(Op.LT_EQ, name, high, start))
            return between.negate() if negated else between
        if negated:
            raise self.fail("IN, LIKE or BETWEEN after NOT")
        raise self.fail("a comparison operator, IN, IS, LIKE or BETWEEN after the column name")

    def _make(self, op: Op, name: Reference, value: Any, start: _Tok) -> Expression:
        if value is None:
            hint = {Op.EQ: " (use IS NULL)", Op.NOT_EQ: " (use IS NOT NULL)"}.get(op, "")
            raise _error(self.text, start.pos, f"comparison with NULL is never true{hint}")
        try:
            return make_predicate(op, name, value)
        except ValidationError as exc:
            raise _error(self.text, start.pos, str(exc)) from None

    def value_list(self) -> list[Any]:
        self.expect_punct("(")
        values = []
        while True:
            tok = self.tok
            value = self.literal()
            if value is None:
                raise _error(self.text, tok.pos, "NULL is not allowed in an IN list")
            values.append(value)
            if self.tok.kind == "punct" and self.tok.text == ",":
                self.advance()
                continue
            self.expect_punct(")")
            return values

    def like(self, name: Reference, negated: bool) -> Expression:
        tok = self.tok
        if tok.kind != "string":
            raise self.fail("a quoted pattern after LIKE")
        self.advance()
        prefix, wildcard = _like_prefix(tok.value)
        if prefix is None:
            raise _error(
                self.text,
                tok.pos,
                f"LIKE pattern {tok.text} is not supported: only prefix patterns like 'abc%' are",
            )
        if wildcard:
            return NotStartsWith(name, prefix) if negated else StartsWith(name, prefix)
        return NotEqualTo(name, prefix) if negated else EqualTo(name, prefix)

    # ------------------------------------------------------------------ atoms

    def name(self) -> Reference:
        parts = [self.name_part()]
        while self.tok.kind == "punct" and self.tok.text == ".":
            self.advance()
            parts.append(self.name_part())
        return Reference(".".join(parts))

    def name_part(self) -> str:
        tok = self.tok
        if tok.kind == "quoted":
            if not tok.value:
                raise _error(self.text, tok.pos, "empty quoted column name")
            self.advance()
            return str(tok.value)
        if tok.kind == "ident" and not tok.is_kw("and", "or", "not", "in", "is", "like", "between"):
            if tok.is_kw("null", "nan", "true", "false"):
                raise self.fail("a column name (quote it with backticks if it is really named so)")
            self.advance()
            return tok.text
        raise self.fail("a column name")

    def literal(self) -> Any:
        tok = self.tok
        if tok.kind == "punct" and tok.text in "+-" and self.peek().kind == "number":
            self.advance()
            number = self.advance().value
            if tok.text != "-":
                return number
            # copy_negate keeps the sign of zero (-Decimal("0.0") is Decimal("0.0")): -0.0 stays -0.0
            return number.copy_negate() if isinstance(number, Decimal) else -number
        if tok.kind in ("number", "string", "hex"):
            self.advance()
            return tok.value
        if tok.is_kw("true", "false"):
            self.advance()
            return tok.is_kw("true")
        if tok.is_kw("null"):
            self.advance()
            return None
        raise self.fail("a literal (number, 'string', true/false)")


def _like_prefix(pattern: str) -> tuple[str | None, bool]:
    """(prefix, ends with %) of a LIKE pattern; prefix None when the pattern is not a prefix match."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(pattern[i + 1])
            i += 2
            continue
        if ch == "%":
            rest = pattern[i:]
            return ("".join(out), True) if rest == "%" * len(rest) else (None, True)
        if ch == "_":
            return None, False
        out.append(ch)
        i += 1
    return "".join(out), False


def parse(text: str) -> Expression:
    """Parse SQL-like filter text into an unbound expression; ValidationError says where it failed."""
    if not isinstance(text, str):
        raise ValidationError(f"a filter must be text, got {type(text).__name__}")
    return _Parser(text).parse()


def to_expression(value: str | Expression | None) -> Expression:
    """A filter from text, an expression or None (None and empty text mean AlwaysTrue)."""
    if value is None:
        return AlwaysTrue()
    if isinstance(value, Expression):
        return value
    if isinstance(value, str):
        return AlwaysTrue() if not value.strip() else parse(value)
    raise ValidationError(f"a filter must be text or an expression, got {type(value).__name__}")
