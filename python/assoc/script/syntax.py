"""The script's syntax tree: expressions and statements, each with its place in the script."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Expr:
    """An expression node; `line`/`column` place it in the script."""

    line: int
    column: int


@dataclass(frozen=True)
class Literal(Expr):
    """A number or a string constant."""

    value: float | str


@dataclass(frozen=True)
class FieldRef(Expr):
    """A field of the source rows."""

    name: str


@dataclass(frozen=True)
class Call(Expr):
    """A function call; `name` upper-cased."""

    name: str
    args: tuple[Expr, ...]
    distinct: bool = False  # `Count(DISTINCT x)`


@dataclass(frozen=True)
class Unary(Expr):
    """`-x` or `NOT x`."""

    op: str
    operand: Expr


@dataclass(frozen=True)
class Binary(Expr):
    """An operator between two expressions (`op` upper-cased for AND/OR)."""

    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class LoadField:
    """One item of a LOAD list: `*`, or an expression and the name it gets."""

    expr: Expr | None  # None: `*`
    name: str


@dataclass(frozen=True)
class FileFormat:
    """A file format spec `(txt, delimiter is ',', …)`, already read."""

    kind: str = ""  # "qvd", "txt", "parquet" or "" (from the file's extension)
    delimiter: str | None = None
    labels: bool | None = None  # None: not said (embedded)
    quoting: str = "standard"  # standard, msq, none
    header_lines: int = 0
    encoding: str = "utf8"


@dataclass(frozen=True)
class FileSource:
    """`FROM path (format)`."""

    path: str
    format: FileFormat


@dataclass(frozen=True)
class InlineSource:
    """`INLINE [ … ] (format)`."""

    text: str
    format: FileFormat


@dataclass(frozen=True)
class ResidentSource:
    """`RESIDENT table`."""

    table: str


@dataclass(frozen=True)
class AutogenerateSource:
    """`AUTOGENERATE n`."""

    count: Expr


@dataclass(frozen=True)
class Statement:
    """A statement; `line`/`column` place its first word."""

    line: int
    column: int


@dataclass(frozen=True)
class Load(Statement):
    """`[label:] [CONCATENATE [(T)] | NOCONCATENATE] LOAD [DISTINCT] … source [WHERE …]`."""

    label: str | None
    fields: tuple[LoadField, ...]
    source: FileSource | InlineSource | ResidentSource | AutogenerateSource | Load
    where: Expr | None = None
    distinct: bool = False
    concatenate: str = "auto"  # auto, concatenate, noconcatenate
    concat_target: str | None = None
    join: str | None = None  # left, right, inner, outer
    keep: str | None = None  # left, right, inner
    join_target: str | None = None
    mapping: bool = False
    crosstable: tuple[str, str, int] | None = None  # attribute field, data field, qualifiers
    while_: Expr | None = None
    group_by: tuple[str, ...] = ()
    order_by: tuple[tuple[str, bool], ...] = ()  # (field, descending)
    interval_match: tuple[str, ...] = ()  # INTERVALMATCH (match field, key fields…)
    generic: bool = False
    first: Expr | None = None  # FIRST n: at most n records loaded


@dataclass(frozen=True)
class SetVariable(Statement):
    """`SET name = text` (text as written) or `LET name = expression`."""

    name: str
    text: str | None = None
    expr: Expr | None = None


@dataclass(frozen=True)
class Store(Statement):
    """`STORE [fields FROM] table INTO path (qvd|txt|parquet)`."""

    table: str
    path: str
    kind: str
    fields: tuple[str, ...] = ()


@dataclass(frozen=True)
class Drop(Statement):
    """`DROP TABLE(S) a, b` or `DROP FIELD(S) a, b [FROM t, …]`."""

    what: str  # "table" or "field"
    names: tuple[str, ...]
    tables: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rename(Statement):
    """`RENAME TABLE|FIELD a TO b, …`."""

    what: str
    pairs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Qualify(Statement):
    """`QUALIFY names` or `UNQUALIFY names` (names may hold * and ? wildcards)."""

    qualify: bool
    patterns: tuple[str, ...]


@dataclass(frozen=True)
class Section(Statement):
    """`SECTION ACCESS` (the tables loaded next are the access table) or `SECTION
    APPLICATION` (back to the app's data)."""

    access: bool


@dataclass(frozen=True)
class Trace(Statement):
    """`TRACE text`."""

    text: str


@dataclass(frozen=True)
class MapUsing(Statement):
    """`MAP f, … USING map` (map None: `UNMAP f, …`); names may hold * and ? wildcards."""

    patterns: tuple[str, ...]
    map: str | None


@dataclass(frozen=True)
class NullAs(Statement):
    """`NULLASVALUE f, …` (as_value) or `NULLASNULL f, …`; names may hold * and ?."""

    as_value: bool
    patterns: tuple[str, ...]


@dataclass(frozen=True)
class AutoNumberFields(Statement):
    """`AUTONUMBER f, … [USING namespace]`; names may hold * and ?."""

    patterns: tuple[str, ...]
    namespace: str | None = None


@dataclass(frozen=True)
class Annotate(Statement):
    """`TAG|UNTAG [FIELD|FIELDS] f, … WITH tag | USING map` (`what` "tag"/"untag") and
    `COMMENT [FIELD|FIELDS|TABLE|TABLES] names WITH text | USING map` (`what` "field comment"
    or "table comment")."""

    what: str
    names: tuple[str, ...]
    text: str | None = None
    map: str | None = None


@dataclass(frozen=True)
class BinaryLoad(Statement):
    """`BINARY path` (the first statement): the tables of a stored app."""

    path: str


@dataclass(frozen=True)
class Exit(Statement):
    """`EXIT SCRIPT|FOR|DO|SUB [WHEN|UNLESS cond]`."""

    what: str = "SCRIPT"
    when: Expr | None = None
    unless: bool = False


# Control statements: each ends at its `;` or at the end of its line.
@dataclass(frozen=True)
class If(Statement):
    """`IF cond THEN` (also `ELSEIF cond THEN`: `elseif`)."""

    cond: Expr
    elseif: bool = False


@dataclass(frozen=True)
class Else(Statement):
    """`ELSE`."""


@dataclass(frozen=True)
class End(Statement):
    """`END IF`, `END SUB`, `END SWITCH` (`what`: IF, SUB, SWITCH); `NEXT [v]` (NEXT); `LOOP
    [WHILE|UNTIL cond]` (LOOP)."""

    what: str
    cond: Expr | None = None
    until: bool = False


@dataclass(frozen=True)
class For(Statement):
    """`FOR v = a TO b [STEP s]`."""

    var: str
    start: Expr
    stop: Expr
    step: Expr | None


@dataclass(frozen=True)
class ForEach(Statement):
    """`FOR EACH v IN item, …` (items: expressions, or FileList / FieldValueList calls)."""

    var: str
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Do(Statement):
    """`DO [WHILE|UNTIL cond]`."""

    cond: Expr | None = None
    until: bool = False


@dataclass(frozen=True)
class Sub(Statement):
    """`SUB name[(p, …)]`."""

    name: str
    params: tuple[str, ...]


@dataclass(frozen=True)
class CallSub(Statement):
    """`CALL name[(arg, …)]`."""

    name: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Switch(Statement):
    """`SWITCH expr`."""

    expr: Expr


@dataclass(frozen=True)
class Case(Statement):
    """`CASE v, …` (no values: `DEFAULT`)."""

    values: tuple[Expr, ...]
