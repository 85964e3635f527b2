"""Split a script into statements and parse each with sqlglot's Spark dialect.

Statements sqlglot keeps as opaque commands (Iceberg's SQL extensions such as ``ALTER TABLE ... ADD
PARTITION FIELD``, ``CALL``, ``SHOW``) are read with :class:`TokenCursor` over sqlglot's own
tokens; expressions inside them (transforms, procedure arguments) go back to sqlglot's parser.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NoReturn

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from icefloe.spark.statements.errors import SqlSyntaxError
from icefloe.spark.statements.keyword_names import lateral_table, retype_keyword_names
from icefloe.spark.statements.table_options import attach_table_options, blank_table_options

DIALECT = "spark"
_SPARK = Spark()


@dataclass(frozen=True)
class Statement:
    """One statement of a script: its text, where it starts, and its tree (None if it did not parse)."""

    text: str
    line: int
    column: int
    tree: exp.Expr | None
    error: SqlSyntaxError | None

    def tokens(self) -> list[Token]:
        """The statement's tokens."""
        return tokenize(self.text)


@contextmanager
def _quiet_sqlglot() -> Iterator[None]:
    """sqlglot warns when it keeps a statement as a command; icefloe handles those itself."""
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def tokenize(text: str) -> list[Token]:
    """sqlglot's Spark tokens of ``text`` (SqlSyntaxError on an unterminated string or comment)."""
    try:
        return list(_SPARK.tokenize(text))
    except TokenError as exc:
        raise SqlSyntaxError(str(exc).splitlines()[0], 1, 1) from None


def split_statements(text: str) -> list[Statement]:
    """The ``;``-separated statements of a script, each parsed (empty statements are skipped)."""
    tokens = tokenize(text)
    pieces: list[tuple[int, int]] = []
    start: int | None = None
    end = 0
    for tok in tokens:
        if tok.token_type == TokenType.SEMICOLON:
            if start is not None:
                pieces.append((start, end))
            start = None
            continue
        if start is None:
            start = _token_start(tok)
        end = tok.end + 1
    if start is not None:
        pieces.append((start, end))
    out = []
    for begin, finish in pieces:
        body = text[begin:finish]
        line = text.count("\n", 0, begin) + 1
        column = begin - (text.rfind("\n", 0, begin) + 1) + 1
        out.append(parse_statement(body, line, column))
    return out


def _token_start(tok: Token) -> int:
    # a command token's text is only the keyword; its own start is exact
    return tok.start


def parse_statement(text: str, line: int = 1, column: int = 1) -> Statement:
    """Parse one statement; a syntax error is kept (with its absolute position), not raised."""
    prepared = _normalise_time_travel(text)
    try:
        tree = _parse_retrying(prepared)
    except SqlSyntaxError as exc:  # an unterminated string or comment (split_statements finds them first)
        return Statement(text, line, column, None, exc)
    except ParseError as exc:
        info = exc.errors[0] if exc.errors else {}
        err_line = int(info.get("line") or 1)
        err_col = int(info.get("col") or 1)
        abs_line = line + err_line - 1
        abs_col = err_col + (column - 1 if err_line == 1 else 0)
        message = str(info.get("description") or exc).splitlines()[0]
        return Statement(text, line, column, None, SqlSyntaxError(message, abs_line, abs_col))
    return Statement(text, line, column, identifier_clauses(tree), None)


def identifier_clauses(tree: exp.Expr) -> exp.Expr:
    """``IDENTIFIER('db.t')`` in table position becomes the name ``db.t``, as Spark's parser reads it.

    Kept as a function call, the name would go to Spark unresolved: after ``USE icefloe.db`` Spark
    would read its own ``t``, not icefloe's ``db.t`` that ``t`` names. Other arguments than one
    string literal (a variable, a concatenation) stay as they are.
    """
    for insert in tree.find_all(exp.Insert):
        target = insert.this  # sqlglot: INSERT INTO IDENTIFIER('t') is table IDENTIFIER, columns ('t')
        if isinstance(target, exp.Schema) and isinstance(target.this, exp.Table):
            named, columns = target.this.this, target.expressions
            literal = len(columns) == 1 and isinstance(columns[0], exp.Literal) and columns[0].is_string
            if literal and isinstance(named, exp.Identifier) and named.name.upper() == "IDENTIFIER":
                call = exp.Anonymous(this="IDENTIFIER", expressions=target.expressions)
                insert.set("this", exp.Table(this=call))
    for node in list(tree.find_all(exp.Table)):
        call = node.this
        if not (isinstance(call, exp.Anonymous) and str(call.this).upper() == "IDENTIFIER"):
            continue
        args = call.expressions
        if len(args) != 1 or not isinstance(args[0], exp.Literal) or not args[0].is_string:
            continue
        parts = _dotted_name(args[0].this)
        if parts is None:
            continue  # not a name: Spark refuses it as well
        name = exp.Table(
            this=parts[-1],
            db=parts[-2] if len(parts) > 1 else None,
            # sqlglot holds the leading parts of a name of four or more as one dotted catalog
            catalog=(exp.Dot.build(parts[:-2]) if len(parts) > 3 else parts[0]) if len(parts) > 2 else None,
        )
        for key, value in node.args.items():
            if key not in ("this", "db", "catalog") and value is not None:
                name.set(key, value)
        if node is tree:
            return name
        node.replace(name)
    return tree


def _dotted_name(text: str) -> list[exp.Identifier] | None:
    """The parts of ``a.`b c`.d`` (None unless the text is exactly a dotted name)."""
    try:
        tokens = tokenize(text)
    except SqlSyntaxError:
        return None
    parts: list[exp.Identifier] = []
    for i, tok in enumerate(tokens):
        if i % 2:
            if tok.token_type is not TokenType.DOT:
                return None
        elif tok.token_type is TokenType.IDENTIFIER:
            parts.append(exp.to_identifier(tok.text, quoted=True))
        elif tok.text.replace("_", "a").isalnum() and not tok.text[0].isdigit():
            parts.append(exp.to_identifier(tok.text))
        else:
            return None
    return parts if tokens and len(tokens) % 2 else None


def _parse_retrying(text: str) -> exp.Expr:
    """The tree of ``text``, Spark's forms that sqlglot lacks spelled as sqlglot reads them: the
    query ``TABLE t`` as ``SELECT * FROM t``, and table options ``t WITH ('k' = 'v')`` blanked out
    and hung on their table (``table_options``).

    sqlglot refuses most such statements, and only those are read again, so the usual statement
    pays nothing; but it reads ``TABLE t`` before a set operation or in parentheses as the column
    ``TABLE`` aliased ``t``, which :func:`_misread_table_query` finds. sqlglot's first reading
    (tree or error) stands when the second fails.
    """
    try:
        tree = _parse_tokens(text)
    except ParseError:
        spelled = _table_queries(text) or text
        blanked = blank_table_options(spelled, tokenize(spelled))
        if spelled is text and blanked is None:
            raise
        try:
            tree = _parse_tokens(spelled if blanked is None else blanked[0])
            return tree if blanked is None else attach_table_options(tree, blanked[1])
        except ParseError:
            pass
        raise
    if "table" in text.lower() and _misread_table_query(tree):
        respelled = _table_queries(text)
        if respelled is not None:
            try:
                return _parse_tokens(respelled)
            except ParseError:
                pass
    return tree


def _misread_table_query(tree: exp.Expr) -> bool:
    """Whether sqlglot read a query ``TABLE t`` as the column ``TABLE`` aliased ``t`` (an alias that
    stands anywhere but in a select list, where ``SELECT table t`` is a column in Spark too)."""
    for alias in tree.find_all(exp.Alias):
        column = alias.this
        if (
            isinstance(column, exp.Column)
            and not column.table
            and isinstance(column.this, exp.Identifier)
            and not column.this.quoted
            and column.name.upper() == "TABLE"
            and not isinstance(alias.parent, exp.Select)
        ):
            return True
    return False


# a query ``TABLE t`` starts a statement or follows one of these tokens (``)``: a CTE, a column list)
_BEFORE_TABLE_QUERY = frozenset(
    {TokenType.L_PAREN, TokenType.R_PAREN, TokenType.UNION, TokenType.INTERSECT, TokenType.EXCEPT}
)
_SET_QUANTIFIERS = frozenset({"ALL", "DISTINCT"})


def _table_queries(text: str) -> str | None:
    """``text`` with each query ``TABLE t`` spelled ``SELECT * FROM t``, as Spark's grammar defines
    it (``queryPrimary: TABLE multipartIdentifier``); None when it holds none."""
    tokens = tokenize(text)
    edits = []
    for i, tok in enumerate(tokens):
        if tok.token_type is not TokenType.TABLE:
            continue
        before = tokens[i - 1] if i else None
        if before is not None and before.text.upper() in _SET_QUANTIFIERS and i > 1:
            before = tokens[i - 2]
        if before is None or before.token_type in _BEFORE_TABLE_QUERY or before.text.upper() == "AS":
            edits.append(tok)
    if not edits:
        return None
    for tok in reversed(edits):
        text = text[: tok.start] + "SELECT * FROM" + text[tok.end + 1 :]
    return text


def _parse_tokens(text: str) -> exp.Expr:
    """sqlglot's tree of one statement, the keywords Spark reads as names read as names.

    sqlglot reserves keywords Spark does not; ``keyword_names`` retypes those tokens before the
    first parse. Should a retyped statement fail, sqlglot's own reading is tried, and its error is
    the one reported.
    """
    tokens = tokenize(text)
    if lateral_table(tokens):
        raise ParseError("LATERAL before a table name (sqlglot would read it as an expression)")
    if not retype_keyword_names(tokens):
        return _parse_one(tokens, text)
    try:
        return _parse_one(tokens, text)
    except ParseError:
        return _parse_one(tokenize(text), text)


def _parse_one(tokens: list[Token], text: str) -> exp.Expr:
    with _quiet_sqlglot():
        trees = _SPARK.parser().parse(tokens, text)
    if not trees or trees[0] is None:
        raise ParseError("No expression was parsed from the statement")
    return trees[0]


def _normalise_time_travel(text: str) -> str:
    """``FOR SYSTEM_VERSION AS OF`` -> ``VERSION AS OF`` and ``REPLACE TABLE`` -> ``CREATE OR REPLACE
    TABLE`` (sqlglot knows only the latter forms), by tokens."""
    lowered = text.lower()
    if "system_version" not in lowered and "replace" not in lowered:
        return text  # neither form can occur: spare a tokenization (a third of the parse time)
    tokens = tokenize(text)
    edits: list[tuple[int, int, str]] = []
    if len(tokens) > 1 and tokens[0].text.upper() == "REPLACE" and tokens[1].text.upper() == "TABLE":
        edits.append((tokens[0].start, tokens[0].end + 1, "CREATE OR REPLACE"))  # REPLACE TABLE ...
    for a, b in itertools.pairwise(tokens):
        if a.text.upper() == "FOR" and b.text.upper() == "SYSTEM_VERSION":
            edits.append((a.start, b.end + 1, "VERSION"))
    for begin, finish, new in reversed(edits):
        text = text[:begin] + new + text[finish:]
    return text


def parse_expression(text: str) -> exp.Expr:
    """One SQL expression (a transform, a procedure call's arguments, a default)."""
    try:
        with _quiet_sqlglot():
            return sqlglot.parse_one(text, read=DIALECT)
    except ParseError as exc:
        info = exc.errors[0] if exc.errors else {}
        raise SqlSyntaxError(
            str(info.get("description") or exc).splitlines()[0],
            int(info.get("line") or 1),
            int(info.get("col") or 1),
        ) from None


def to_sql(node: exp.Expr) -> str:
    """Spark SQL text of a sqlglot tree."""
    return node.sql(dialect=DIALECT)


class TokenCursor:
    """Reads a token list keyword by keyword (for statements sqlglot keeps as commands)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _command_tokens(text)
        self.pos = 0

    def at_end(self) -> bool:
        """True when every token is consumed."""
        return self.pos >= len(self.tokens)

    def peek(self, ahead: int = 0) -> str:
        """The upper-cased text of a coming token ('' past the end)."""
        i = self.pos + ahead
        return self.tokens[i].text.upper() if i < len(self.tokens) else ""

    def accept(self, *words: str) -> bool:
        """Consume ``words`` if the coming tokens are exactly them."""
        if all(self.peek(i) == w.upper() for i, w in enumerate(words)):
            self.pos += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        """Consume ``words`` or raise a syntax error at the current token."""
        if not self.accept(*words):
            self.fail(f"expected {' '.join(words)}")

    def fail(self, message: str) -> NoReturn:
        """Raise a syntax error naming the current token's position."""
        tok = self.tokens[min(self.pos, len(self.tokens) - 1)] if self.tokens else None
        found = f" (found {tok.text!r})" if tok is not None and not self.at_end() else " (at the end)"
        raise SqlSyntaxError(message + found, tok.line if tok else 1, tok.col if tok else 1)

    def next(self) -> Token:
        """Consume and return one token."""
        if self.at_end():
            self.fail("unexpected end of statement")
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def identifier(self) -> str:
        """One (possibly back-quoted) name."""
        tok = self.next()
        if tok.token_type in (TokenType.STRING, TokenType.NUMBER, TokenType.L_PAREN, TokenType.COMMA):
            self.pos -= 1
            self.fail("expected a name")
        return tok.text

    def dotted(self) -> list[str]:
        """``a.b.c`` as its parts."""
        parts = [self.identifier()]
        while self.peek() == ".":
            self.pos += 1
            parts.append(self.identifier())
        return parts

    def rest(self) -> str:
        """The statement text from the current token on (consumes everything)."""
        if self.at_end():
            return ""
        begin = self.tokens[self.pos].start
        self.pos = len(self.tokens)
        return self.text[begin:].strip()

    def until(self, *stops: str) -> str:
        """Text up to (not including) the first top-level token among ``stops`` (or the end)."""
        depth = 0
        begin = self.tokens[self.pos].start if not self.at_end() else len(self.text)
        end = begin
        upper = {s.upper() for s in stops}
        while not self.at_end():
            tok = self.tokens[self.pos]
            if depth == 0 and tok.text.upper() in upper:
                break
            if tok.token_type == TokenType.L_PAREN:
                depth += 1
            elif tok.token_type == TokenType.R_PAREN:
                depth -= 1
            end = tok.end + 1
            if tok.token_type == TokenType.STRING:
                end = _string_end(self.text, tok)
            self.pos += 1
        return self.text[begin:end].strip()


def _command_tokens(text: str) -> list[Token]:
    """Tokens of ``text``; a command keyword (SHOW, CALL, ...) swallows the rest as one string in
    sqlglot's tokenizer, so the rest is tokenized again (positions kept)."""
    tokens = tokenize(text)
    out: list[Token] = []
    for i, tok in enumerate(tokens):
        out.append(tok)
        if tok.token_type in Spark.Tokenizer.COMMANDS and i + 1 < len(tokens):
            offset = tok.end + 1
            rest = tokenize(text[offset:])
            for r in rest:
                r.start += offset
                r.end += offset
            return out + rest
    return out


def _string_end(text: str, tok: Token) -> int:
    # a string token's end points at its closing quote
    return tok.end + 1
