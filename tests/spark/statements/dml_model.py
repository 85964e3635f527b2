"""A plain Python model of Spark SQL DML over one small table, for ``test_dml_fuzz``.

Statements are frozen dataclasses that can both render themselves as Spark SQL and apply
themselves to a list of rows, with SQL's three-valued logic written out by hand (``None`` is
UNKNOWN), so the expected result never comes from Spark or icefloe. The table is
``(id INT, grp STRING, v INT)``, every column nullable; the target's alias is ``t``, a MERGE
source's ``s``.

Each model row carries the ``_row_id`` the table gave it once that is known (v3 and later), so
the test can check that an updated row keeps its id and a new row gets a fresh one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

Value = int | str | None
Values = tuple[Value, Value, Value]  # id, grp, v
COLUMNS = ("id", "grp", "v")
STRING_COLUMNS = frozenset({"grp"})
Env = Mapping[str, Value]  # "t.id", "s.grp", ...


@dataclass(frozen=True)
class Row:
    """One live row; ``row_id`` is None until the table's id for it has been read."""

    values: Values
    row_id: int | None = None


def env(qualifier: str, values: Values) -> dict[str, Value]:
    return {f"{qualifier}.{c}": x for c, x in zip(COLUMNS, values, strict=True)}


# ------------------------------------------------------------------------------- values


@dataclass(frozen=True)
class Lit:
    value: Value
    is_string: bool = False

    def sql(self) -> str:
        if self.value is None:
            return f"CAST(NULL AS {'STRING' if self.is_string else 'INT'})"
        return f"'{self.value}'" if isinstance(self.value, str) else str(self.value)

    def eval(self, e: Env) -> Value:
        return self.value


@dataclass(frozen=True)
class Col:
    qualifier: str
    name: str

    def sql(self) -> str:
        return f"{self.qualifier}.{self.name}"

    def eval(self, e: Env) -> Value:
        return e[f"{self.qualifier}.{self.name}"]


@dataclass(frozen=True)
class Plus:
    """``a + n`` on ints: NULL when ``a`` is."""

    a: Expr
    n: int

    def sql(self) -> str:
        return f"({self.a.sql()} + {self.n})"

    def eval(self, e: Env) -> Value:
        x = self.a.eval(e)
        return None if x is None else int(x) + self.n  # type: ignore[arg-type]


@dataclass(frozen=True)
class Concat:
    """``concat(a, 'x')`` on strings: NULL when ``a`` is."""

    a: Expr
    suffix: str

    def sql(self) -> str:
        return f"concat({self.a.sql()}, '{self.suffix}')"

    def eval(self, e: Env) -> Value:
        x = self.a.eval(e)
        return None if x is None else f"{x}{self.suffix}"


@dataclass(frozen=True)
class Coalesce:
    a: Expr
    b: Expr

    def sql(self) -> str:
        return f"coalesce({self.a.sql()}, {self.b.sql()})"

    def eval(self, e: Env) -> Value:
        x = self.a.eval(e)
        return self.b.eval(e) if x is None else x


Expr = Lit | Col | Plus | Concat | Coalesce

# --------------------------------------------------------------------------- predicates
Truth = bool | None  # None is UNKNOWN

_COMPARE: dict[str, Callable[[Value, Value], bool]] = {
    "=": lambda a, b: a == b,
    "<>": lambda a, b: a != b,
    "<": lambda a, b: a < b,  # type: ignore[operator]
    "<=": lambda a, b: a <= b,  # type: ignore[operator]
    ">": lambda a, b: a > b,  # type: ignore[operator]
    ">=": lambda a, b: a >= b,  # type: ignore[operator]
}


@dataclass(frozen=True)
class Compare:
    op: str  # a key of _COMPARE, or "<=>"
    a: Expr
    b: Expr

    def sql(self) -> str:
        return f"{self.a.sql()} {self.op} {self.b.sql()}"

    def eval(self, e: Env) -> Truth:
        x, y = self.a.eval(e), self.b.eval(e)
        if self.op == "<=>":
            return x == y
        return None if x is None or y is None else _COMPARE[self.op](x, y)


@dataclass(frozen=True)
class IsNull:
    a: Expr
    negated: bool

    def sql(self) -> str:
        return f"{self.a.sql()} IS {'NOT ' if self.negated else ''}NULL"

    def eval(self, e: Env) -> Truth:
        return (self.a.eval(e) is None) != self.negated


def in_values(x: Value, items: Sequence[Value], negated: bool) -> Truth:
    """``x [NOT] IN (items)``: TRUE on an equal item, else UNKNOWN if x or any item is NULL."""
    if not items:
        return negated
    if x is None:
        return None
    if any(x == i for i in items if i is not None):
        return not negated
    return None if any(i is None for i in items) else negated


@dataclass(frozen=True)
class InList:
    a: Expr
    items: tuple[Lit, ...]
    negated: bool

    def sql(self) -> str:
        return f"{self.a.sql()} {'NOT ' if self.negated else ''}IN ({', '.join(i.sql() for i in self.items)})"

    def eval(self, e: Env) -> Truth:
        return in_values(self.a.eval(e), [i.value for i in self.items], self.negated)


@dataclass(frozen=True)
class BoolOp:
    op: str  # AND | OR
    a: Pred
    b: Pred

    def sql(self) -> str:
        return f"({self.a.sql()} {self.op} {self.b.sql()})"

    def eval(self, e: Env) -> Truth:
        x, y = self.a.eval(e), self.b.eval(e)
        if self.op == "AND":
            if x is False or y is False:
                return False
            return None if x is None or y is None else True
        if x is True or y is True:
            return True
        return None if x is None or y is None else False


@dataclass(frozen=True)
class Not:
    a: Pred

    def sql(self) -> str:
        return f"NOT ({self.a.sql()})"

    def eval(self, e: Env) -> Truth:
        x = self.a.eval(e)
        return None if x is None else not x


@dataclass(frozen=True)
class BoolLit:
    value: bool

    def sql(self) -> str:
        return "TRUE" if self.value else "FALSE"

    def eval(self, e: Env) -> Truth:
        return self.value


Pred = Compare | IsNull | InList | BoolOp | Not | BoolLit


# --------------------------------------------------------------------------- statements
class Refused(Exception):
    """The model's verdict that the statement must fail and change nothing."""


@dataclass(frozen=True)
class Outcome:
    """Rows after a statement and the counts the statement reports (None: not compared)."""

    rows: list[Row]
    counts: tuple[int, ...] | None = None


def _assign(values: Values, sets: Mapping[str, Expr], e: Env) -> Values:
    """Every assignment evaluated against the old row, then applied together."""
    new = {c: (sets[c].eval(e) if c in sets else x) for c, x in zip(COLUMNS, values, strict=True)}
    return (new["id"], new["grp"], new["v"])


def _sets_sql(sets: Mapping[str, Expr]) -> str:
    return ", ".join(f"{c} = {x.sql()}" for c, x in sets.items())


def values_sql(rows: Sequence[Values]) -> str:
    return ", ".join(
        "(" + ", ".join(Lit(x, c in STRING_COLUMNS).sql() for c, x in zip(COLUMNS, r, strict=True)) + ")"
        for r in rows
    )


@dataclass(frozen=True)
class Insert:
    rows: tuple[Values, ...]

    def sql(self, table: str) -> str:
        return f"INSERT INTO {table} VALUES {values_sql(self.rows)}"

    def apply(self, rows: list[Row], source: list[Values]) -> Outcome:
        return Outcome(rows + [Row(r) for r in self.rows])


@dataclass(frozen=True)
class Delete:
    where: Pred

    def sql(self, table: str) -> str:
        return f"DELETE FROM {table} AS t WHERE {self.where.sql()}"

    def apply(self, rows: list[Row], source: list[Values]) -> Outcome:
        kept = [r for r in rows if self.where.eval(env("t", r.values)) is not True]
        return Outcome(kept, (len(rows) - len(kept),))


@dataclass(frozen=True)
class DeleteInSubquery:
    """``DELETE ... WHERE t.<column> [NOT] IN (SELECT s.<column> FROM src s WHERE <pred over s>)``."""

    column: str
    negated: bool
    source_filter: Pred

    def sql(self, table: str) -> str:
        sub = f"SELECT s.{self.column} FROM {{view}} AS s WHERE {self.source_filter.sql()}"
        return f"DELETE FROM {table} AS t WHERE t.{self.column} {'NOT ' if self.negated else ''}IN ({sub})"

    def apply(self, rows: list[Row], source: list[Values]) -> Outcome:
        i = COLUMNS.index(self.column)
        items = [s[i] for s in source if self.source_filter.eval(env("s", s)) is True]
        kept = [r for r in rows if in_values(r.values[i], items, self.negated) is not True]
        return Outcome(kept, (len(rows) - len(kept),))


@dataclass(frozen=True)
class DeleteExists:
    """``DELETE ... WHERE [NOT] EXISTS (SELECT 1 FROM src s WHERE <pred over t and s>)``."""

    negated: bool
    correlation: Pred

    def sql(self, table: str) -> str:
        sub = f"SELECT 1 FROM {{view}} AS s WHERE {self.correlation.sql()}"
        return f"DELETE FROM {table} AS t WHERE {'NOT ' if self.negated else ''}EXISTS ({sub})"

    def apply(self, rows: list[Row], source: list[Values]) -> Outcome:
        def hit(r: Row) -> bool:
            found = any(self.correlation.eval({**env("t", r.values), **env("s", s)}) is True for s in source)
            return found != self.negated

        kept = [r for r in rows if not hit(r)]
        return Outcome(kept, (len(rows) - len(kept),))


@dataclass(frozen=True)
class Update:
    sets: tuple[tuple[str, Expr], ...]
    where: Pred | None

    def sql(self, table: str) -> str:
        where = f" WHERE {self.where.sql()}" if self.where is not None else ""
        return f"UPDATE {table} AS t SET {_sets_sql(dict(self.sets))}{where}"

    def apply(self, rows: list[Row], source: list[Values]) -> Outcome:
        out, n = [], 0
        for r in rows:
            e = env("t", r.values)
            if self.where is None or self.where.eval(e) is True:
                out.append(replace(r, values=_assign(r.values, dict(self.sets), e)))
                n += 1
            else:
                out.append(r)
        return Outcome(out, (n,))


@dataclass(frozen=True)
class OverwriteStatic:
    """``INSERT OVERWRITE t [PARTITION (grp = 'x')] VALUES ...`` in static mode."""

    grp: str | None  # None: no PARTITION clause, the whole table is replaced
    rows: tuple[Values, ...]

    def sql(self, table: str) -> str:
        if self.grp is None:
            return f"INSERT OVERWRITE {table} VALUES {values_sql(self.rows)}"
        pairs = ", ".join(f"({Lit(i).sql()}, {Lit(v).sql()})" for i, _, v in self.rows)
        return f"INSERT OVERWRITE {table} PARTITION (grp = '{self.grp}') VALUES {pairs}"

    def apply(self, rows: list[Row], source: list[Values]) -> Outcome:
        if self.grp is None:
            return Outcome([Row(r) for r in self.rows])
        kept = [r for r in rows if r.values[1] != self.grp]
        return Outcome(kept + [Row((i, self.grp, v)) for i, _, v in self.rows])


@dataclass(frozen=True)
class OverwriteDynamic:
    """``INSERT OVERWRITE t VALUES ...`` in dynamic mode: the partitions written are replaced."""

    rows: tuple[Values, ...]
    partitioned: bool  # by identity(grp); an unpartitioned table is one partition

    def sql(self, table: str) -> str:
        return f"INSERT OVERWRITE {table} VALUES {values_sql(self.rows)}"

    def apply(self, rows: list[Row], source: list[Values]) -> Outcome:
        if not self.partitioned:
            return Outcome([Row(r) for r in self.rows])
        written = {r[1] for r in self.rows}  # partition values compare null-safely
        kept = [r for r in rows if r.values[1] not in written]
        return Outcome(kept + [Row(r) for r in self.rows])


# ---------------------------------------------------------------------------------- merge
@dataclass(frozen=True)
class WhenMatched:
    condition: Pred | None
    sets: tuple[tuple[str, Expr], ...] | None  # None with delete=False: UPDATE SET *
    delete: bool = False

    def sql(self) -> str:
        cond = f" AND {self.condition.sql()}" if self.condition is not None else ""
        if self.delete:
            action = "DELETE"
        elif self.sets is None:
            action = "UPDATE SET *"
        else:
            action = f"UPDATE SET {_sets_sql(dict(self.sets))}"
        return f"WHEN MATCHED{cond} THEN {action}"


@dataclass(frozen=True)
class WhenNotMatched:
    condition: Pred | None
    values: tuple[Expr, Expr, Expr] | None  # None: INSERT *

    def sql(self) -> str:
        cond = f" AND {self.condition.sql()}" if self.condition is not None else ""
        if self.values is None:
            return f"WHEN NOT MATCHED{cond} THEN INSERT *"
        values = ", ".join(x.sql() for x in self.values)
        return f"WHEN NOT MATCHED{cond} THEN INSERT (id, grp, v) VALUES ({values})"


@dataclass(frozen=True)
class WhenNotMatchedBySource:
    condition: Pred | None
    sets: tuple[tuple[str, Expr], ...] | None  # None: DELETE

    def sql(self) -> str:
        cond = f" AND {self.condition.sql()}" if self.condition is not None else ""
        action = "DELETE" if self.sets is None else f"UPDATE SET {_sets_sql(dict(self.sets))}"
        return f"WHEN NOT MATCHED BY SOURCE{cond} THEN {action}"


def _first(clauses: Sequence[WhenMatched | WhenNotMatched | WhenNotMatchedBySource], e: Env):  # type: ignore[no-untyped-def]
    return next((c for c in clauses if c.condition is None or c.condition.eval(e) is True), None)


@dataclass(frozen=True)
class Merge:
    """``MERGE INTO t USING <source> s ON ... WHEN ...``; ``source`` names how the source is given:
    ``view`` (a temp view), ``subquery`` (a filtered SELECT over it), ``table`` (an icefloe table
    holding the same rows) or ``self`` (the target table itself)."""

    source: str
    source_filter: Pred | None  # for ``subquery``
    on: Pred
    matched: tuple[WhenMatched, ...]
    not_matched: tuple[WhenNotMatched, ...]
    by_source: tuple[WhenNotMatchedBySource, ...]

    def sql(self, table: str) -> str:
        if self.source == "subquery":
            filt = self.source_filter.sql() if self.source_filter is not None else "TRUE"
            # columns in another order than the table's: SET * and INSERT * go by name
            using = f"(SELECT s.v, s.grp, s.id FROM {{view}} AS s WHERE {filt}) AS s"
        elif self.source == "self":
            using = f"{table} AS s"
        elif self.source == "table":
            using = "{table_source} AS s"
        else:
            using = "{view} AS s"
        clauses = [c.sql() for c in (*self.matched, *self.not_matched, *self.by_source)]
        return f"MERGE INTO {table} AS t USING {using} ON {self.on.sql()} " + " ".join(clauses)

    def apply(self, rows: list[Row], source: list[Values]) -> Outcome:
        if self.source == "self":
            source = [r.values for r in rows]
        elif self.source == "subquery" and self.source_filter is not None:
            source = [s for s in source if self.source_filter.eval(env("s", s)) is True]
        pairs = {
            i: [
                j for j, s in enumerate(source) if self.on.eval({**env("t", r.values), **env("s", s)}) is True
            ]
            for i, r in enumerate(rows)
        }
        if self.matched and any(len(m) > 1 for m in pairs.values()):
            raise Refused("a target row matches several source rows")
        out: list[Row] = []
        updated = deleted = inserted = 0
        for i, r in enumerate(rows):
            t_env = env("t", r.values)
            if pairs[i]:
                s = source[pairs[i][0]]
                e = {**t_env, **env("s", s)}
                m = _first(self.matched, e) if len(pairs[i]) == 1 else None
                if m is None:
                    out.append(r)
                elif m.delete:
                    deleted += 1
                else:
                    sets = dict(m.sets) if m.sets is not None else {c: Col("s", c) for c in COLUMNS}
                    out.append(replace(r, values=_assign(r.values, sets, e)))
                    updated += 1
                continue
            b = _first(self.by_source, t_env)
            if b is None:
                out.append(r)
            elif b.sets is None:
                deleted += 1
            else:
                out.append(replace(r, values=_assign(r.values, dict(b.sets), t_env)))
                updated += 1
        matched_sources = {j for m in pairs.values() for j in m}
        for j, s in enumerate(source):
            if j in matched_sources:
                continue
            n = _first(self.not_matched, env("s", s))
            if n is not None:
                e = env("s", s)
                new = s if n.values is None else tuple(x.eval(e) for x in n.values)
                out.append(Row(new))  # type: ignore[arg-type]
                inserted += 1
        return Outcome(out, (updated + deleted + inserted, updated, deleted, inserted))


Statement = (
    Insert | Delete | DeleteInSubquery | DeleteExists | Update | OverwriteStatic | OverwriteDynamic | Merge
)
