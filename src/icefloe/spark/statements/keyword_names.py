"""Keywords used as names: the tokens Spark reads as a name where sqlglot reads a keyword.

Spark, in its default keyword mode, reserves no keyword: every word is a name where a name may
stand. sqlglot reserves some, and a statement naming such a table then either fails to parse or,
worse, parses as something else: ``FROM from.t`` as the subquery ``(FROM t)``, ``FROM select`` as
the empty subquery ``(SELECT)``, ``FROM t, fetch`` as ``FROM t LIMIT 1`` (the join dropped). So,
before sqlglot parses a statement, these tokens become plain names:

- a word next to a dot, which can only be a name part (``icefloe.inner.t``, ``values.t``);
- a word where a relation starts (after ``FROM``, ``JOIN``, ``INTO``, ``UPDATE``, ``MERGE ...
  USING``, or a comma of a FROM clause) when what follows it can only follow a relation: the end
  of the statement, a closing parenthesis, a comma, an alias or a clause keyword (``WHERE``,
  ``JOIN``, ``AS``, ``VALUES`` ...). ``SELECT`` there is always a name: a subquery needs
  parentheses in Spark. ``FROM VALUES (1)``, ``FROM range(3)``, ``JOIN LATERAL (...)`` keep their
  meaning: the word is followed by a parenthesis or an expression.

``tests/spark/statements/test_keyword_names.py`` checks every keyword of sqlglot's Spark tokenizer
in these positions against Spark's own parser.
"""

from __future__ import annotations

from sqlglot.tokens import Token, TokenType

_NAME_TOKENS = frozenset({TokenType.VAR, TokenType.IDENTIFIER})
_RELATION_LEADS = frozenset({"JOIN", "INTO", "USING"})
# what may follow a relation's name, and never an expression's first word in that position
_AFTER_RELATION = frozenset(
    {
        ")",
        ",",
        ";",
        "AS",
        "WHERE",
        "JOIN",
        "INNER",
        "LEFT",
        "RIGHT",
        "FULL",
        "CROSS",
        "NATURAL",
        "ANTI",
        "SEMI",
        "ON",
        "GROUP",
        "ORDER",
        "LIMIT",
        "OFFSET",
        "HAVING",
        "WINDOW",
        "UNION",
        "EXCEPT",
        "INTERSECT",
        "MINUS",
        "CLUSTER",
        "DISTRIBUTE",
        "SORT",
        "LATERAL",
        "PIVOT",
        "UNPIVOT",
        "TABLESAMPLE",
        "VERSION",
        "TIMESTAMP",
        "FOR",
        "SET",
        "VALUES",
        "SELECT",
        "USING",
        "PARTITION",
        "WITH",
        "BY",
        "TABLE",
    }
)
# clause keywords that end a FROM clause: a comma after one of them separates something else
_CLAUSES = frozenset(
    {"SELECT", "WHERE", "BY", "VALUES", "SET", "HAVING", "WINDOW", "ON", "USING", "LIMIT", "PARTITION"}
)


def retype_keyword_names(tokens: list[Token]) -> bool:
    """Retype the keyword tokens Spark reads as names (see the module doc); whether there were any."""
    retyped = False
    scan = _Scan(tokens)
    for i, tok in enumerate(tokens):
        if _keyword_as_name(scan, i):
            # sqlglot's parser reads the text VALUES as an inline table even from a VAR token
            tok.token_type = TokenType.IDENTIFIER if tok.text.upper() == "VALUES" else TokenType.VAR
            retyped = True
        scan.advance(i)
    return retyped


def _keyword_as_name(scan: _Scan, i: int) -> bool:
    tok = scan.tokens[i]
    if tok.token_type in _NAME_TOKENS or not _is_word(tok):
        return False
    return _next_to_dot(scan.tokens, i) or _names_relation(scan, i) or _names_cte(scan.tokens, i)


def lateral_table(tokens: list[Token]) -> bool:
    """Whether the statement has ``FROM LATERAL t`` (a table, not a subquery or function after it).

    Spark accepts ``LATERAL`` before any relation; sqlglot reads ``LATERAL t`` as a lateral
    expression and loses the table ``t``. Such a statement is refused rather than read otherwise.
    """
    scan = _Scan(tokens)
    for i, tok in enumerate(tokens):
        if (
            tok.text.upper() == "LATERAL"
            and i > 0
            and scan.starts_relation(i - 1)
            and _names_table(tokens, i + 1)
        ):
            return True
        scan.advance(i)
    return False


def _names_table(tokens: list[Token], j: int) -> bool:
    """Whether a table's (dotted) name starts at ``j``: a name not followed by a parenthesis."""
    if j >= len(tokens) or (tokens[j].token_type not in _NAME_TOKENS and not _is_word(tokens[j])):
        return False
    if tokens[j].token_type not in _NAME_TOKENS and tokens[j].text.upper() in _AFTER_RELATION | {"VIEW"}:
        return False  # ``LATERAL VIEW``; ``FROM lateral WHERE ...``: a table named lateral
    while j + 2 < len(tokens) and tokens[j + 1].token_type == TokenType.DOT:
        j += 2
    return j + 1 == len(tokens) or tokens[j + 1].token_type != TokenType.L_PAREN


class _Scan:
    """What encloses each token, found in one pass (tokens are retyped as the pass goes): the clause
    in force at its parenthesis depth (is a comma one of FROM's?) and the word before its enclosing
    parenthesis (is a FROM one of ``EXTRACT(x FROM y)``?)."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.frames: list[list[str]] = [["", ""]]  # [clause, call] per open parenthesis
        self.clause: list[str] = []
        self.call: list[str] = []

    def advance(self, i: int) -> None:
        """Record what encloses token ``i``, then take the token into account."""
        tok = self.tokens[i]
        self.clause.append(self.frames[-1][0])
        self.call.append(self.frames[-1][1])
        if tok.token_type == TokenType.L_PAREN:
            self.frames.append(["", self.tokens[i - 1].text.upper() if i > 0 else ""])
        elif tok.token_type == TokenType.R_PAREN:
            if len(self.frames) > 1:
                self.frames.pop()
        elif tok.token_type not in _NAME_TOKENS:
            upper = tok.text.upper()
            if upper == "FROM" or upper in _CLAUSES:
                self.frames[-1][0] = upper

    def starts_relation(self, lead: int) -> bool:
        """Whether a relation starts after the token at ``lead`` (already advanced past): FROM,
        JOIN ..., or a FROM clause's comma."""
        tokens = self.tokens
        if tokens[lead].token_type in _NAME_TOKENS:
            return False  # a keyword retyped as a name already (``FROM from WHERE ...``)
        text = tokens[lead].text.upper()
        before = tokens[lead - 1].text.upper() if lead > 0 else ""
        if text == "FROM":  # not ``IS DISTINCT FROM x``, ``EXTRACT(YEAR FROM x)``
            return before != "DISTINCT" and self.call[lead] not in _FROM_FUNCTIONS
        if text == "UPDATE":
            return before != "THEN"  # not MERGE's ``THEN UPDATE SET``
        if text == "TABLE":
            return before in ("INTO", "OVERWRITE")  # ``INSERT OVERWRITE TABLE t``
        if text == ",":
            return self.clause[lead] == "FROM"
        return text in _RELATION_LEADS


def _is_word(tok: Token) -> bool:
    text = tok.text
    return bool(text) and (text[0].isalpha() or text[0] == "_") and text.replace("_", "a").isalnum()


def _next_to_dot(tokens: list[Token], i: int) -> bool:
    tok = tokens[i]
    after_dot = i > 0 and tokens[i - 1].token_type == TokenType.DOT
    before_dot = (
        i + 2 < len(tokens)
        and tokens[i + 1].token_type == TokenType.DOT
        and tokens[i + 1].start == tok.end + 1  # ``OR .5`` / ``OR.5`` stay a number
        and tokens[i + 2].token_type is not TokenType.NUMBER
    )
    return after_dot or before_dot


def _names_relation(scan: _Scan, i: int) -> bool:
    """Whether the word at ``i`` stands where a relation starts and is followed as a name is."""
    tokens = scan.tokens
    if i == 0 or not scan.starts_relation(i - 1):
        return False
    word = tokens[i].text.upper()
    if i + 1 == len(tokens):
        return True
    following = tokens[i + 1]
    if word in _CLAUSES_AFTER_ITEMS and _after_select_items(tokens, i - 1):
        # Spark reads ``SELECT * FROM from a`` as ``SELECT * AS from FROM a``: the first FROM is an
        # alias when a clause can follow it; only a word that ends the query is then a name
        return following.token_type in (TokenType.R_PAREN, TokenType.SEMICOLON)
    if word == "SELECT":
        return True  # ``FROM select``: a subquery would need parentheses
    if following.token_type in _NAME_TOKENS:
        return word not in ("LATERAL", "VALUES", "TABLE")  # an alias; not ``LATERAL VIEW``, ``VALUES a``
    return following.text.upper() in _AFTER_RELATION


def _names_cte(tokens: list[Token], i: int) -> bool:
    """Whether the word at ``i`` is the name a CTE defines: ``WITH word AS (`` or ``, word AS (``."""
    if i == 0 or i + 2 >= len(tokens) or tokens[i - 1].token_type in _NAME_TOKENS:
        return False
    if tokens[i + 1].text.upper() != "AS" or tokens[i + 2].token_type != TokenType.L_PAREN:
        return False
    lead = tokens[i - 1].text.upper()
    if lead == "WITH" and tokens[i].text.upper() == "RECURSIVE":
        return False  # Spark: ``WITH RECURSIVE AS (...)`` defines a recursive CTE named ``AS``
    if lead == "WITH" or (lead == "RECURSIVE" and i > 1 and tokens[i - 2].text.upper() == "WITH"):
        return True
    return lead == "," and i > 1 and tokens[i - 2].token_type == TokenType.R_PAREN  # ``(...), word AS (``


_CLAUSES_AFTER_ITEMS = frozenset(
    {"FROM", "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "OFFSET", "WINDOW", "QUALIFY", "UNION", "EXCEPT"}
    | {"INTERSECT", "MINUS", "CLUSTER", "DISTRIBUTE", "SORT"}
)


def _after_select_items(tokens: list[Token], lead: int) -> bool:
    """Whether the FROM at ``lead`` follows a select list (not ``DELETE FROM``, not a JOIN)."""
    return tokens[lead].text.upper() == "FROM" and lead > 0 and tokens[lead - 1].text.upper() != "DELETE"


_FROM_FUNCTIONS = frozenset({"EXTRACT", "TRIM", "SUBSTRING", "SUBSTR", "OVERLAY"})
