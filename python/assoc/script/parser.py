"""Statements and expressions parsed from tokens; errors name line and column."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from assoc.script import syntax as ast
from assoc.script.errors import ScriptError
from assoc.script.lexer import CONTROL_WORDS, END, NAME, NUMBER, OP, QNAME, STRING, Lexer, Token

# Words that end a LOAD's field list or its source and so cannot be bare field names there.
_CLAUSE_WORDS = ("FROM", "INLINE", "RESIDENT", "AUTOGENERATE", "WHERE", "WHILE")
# Aggregations a LOAD's fields may use (with GROUP BY, or over all its rows without).
AGGREGATIONS = frozenset(
    (
        "SUM", "COUNT", "MIN", "MAX", "AVG", "ONLY", "CONCAT", "FIRSTVALUE", "LASTVALUE",
        "MINSTRING", "MAXSTRING",
    )
)  # fmt: skip
# Functions whose first argument names a field (written bare or quoted).
_FIELD_NAME_ARG = frozenset(("EXISTS", "PEEK", "FIELDVALUE", "FIELDVALUECOUNT", "FIELDINDEX"))
# Binary operators by precedence, lowest first; NOT sits between AND and the comparisons
# (`like`, `precedes` and `follows` among them).
_WORD_LEVELS = {"OR": 0, "XOR": 0, "AND": 1, "LIKE": 3, "PRECEDES": 3, "FOLLOWS": 3}
_NOT_LEVEL = 2
_OP_LEVELS = {
    **dict.fromkeys(("=", "<>", "<", ">", "<=", ">="), 3),
    "&": 4,
    "+": 5,
    "-": 5,
    "*": 6,
    "/": 6,
}
# How deep parentheses, function calls, NOT and signs may nest in one expression: far beyond
# real scripts, and within Python's recursion limit for the parser and the evaluator (about
# four frames a level each) wherever they run.
MAX_EXPRESSION_NESTING = 100


class Parser:
    """Parses one statement's tokens."""

    def __init__(self, lexer: Lexer) -> None:
        self.lx = lexer
        self.depth = 0  # parentheses, calls, NOT and signs around the expression being read

    # --- helpers
    def where(self, tok: Token) -> tuple[int, int]:
        """Line and column of a token."""
        return self.lx.where(tok.offset)

    def error(self, message: str, tok: Token) -> ScriptError:
        """A ScriptError at a token."""
        return self.lx.error(message, tok.offset)

    def expect_op(self, op: str) -> Token:
        """Consumes the operator `op` or fails."""
        tok = self.lx.next()
        if not tok.is_op(op):
            raise self.error(f"expected '{op}', found {describe(tok)}", tok)
        return tok

    def expect_word(self, *words: str) -> Token:
        """Consumes one of the words or fails."""
        tok = self.lx.next()
        if not tok.is_word(*words):
            raise self.error(f"expected {' or '.join(words)}, found {describe(tok)}", tok)
        return tok

    def name(self, what: str = "a name") -> str:
        """A bare, quoted or string name."""
        tok = self.lx.next()
        if tok.kind in (NAME, QNAME, STRING):
            return tok.text
        raise self.error(f"expected {what}, found {describe(tok)}", tok)

    def name_list(self, what: str) -> tuple[str, ...]:
        """Names separated by commas."""
        names = [self.name(what)]
        while self.lx.peek().is_op(","):
            self.lx.next()
            names.append(self.name(what))
        return tuple(names)

    def end(self) -> None:
        """Fails unless the statement is over."""
        tok = self.lx.peek()
        if tok.kind != END:
            raise self.error(f"unexpected {describe(tok)}", tok)

    # --- expressions
    def expression(self) -> ast.Expr:
        """A whole expression (OR has the lowest precedence)."""
        return self._operators(0)

    def _descend(self, tok: Token) -> None:
        """One nesting level deeper (a parenthesis, a call, NOT, a sign) at `tok`, or an error."""
        if self.depth >= MAX_EXPRESSION_NESTING:
            raise self.error(
                f"expression nested deeper than {MAX_EXPRESSION_NESTING} levels "
                "(parentheses, calls, NOT and signs)",
                tok,
            )
        self.depth += 1

    def _operators(self, level: int) -> ast.Expr:
        """Operators of precedence `level` and above, left to right (precedence climbing: a
        chain of one operator is a loop, not a recursion)."""
        tok = self.lx.peek()
        if level <= _NOT_LEVEL and tok.is_word("NOT"):
            self.lx.next()
            line, col = self.where(tok)
            self._descend(tok)
            left: ast.Expr = ast.Unary(line, col, "NOT", self._operators(_NOT_LEVEL))
            self.depth -= 1
        else:
            left = self._unary()
        while True:
            tok = self.lx.peek()
            op = tok.text.upper() if tok.kind == NAME else tok.text if tok.kind == OP else ""
            op_level = (_WORD_LEVELS if tok.kind == NAME else _OP_LEVELS).get(op, -1)
            if op_level < level:
                return left
            self.lx.next()
            line, col = self.where(tok)
            left = ast.Binary(line, col, op, left, self._operators(op_level + 1))

    def _unary(self) -> ast.Expr:
        tok = self.lx.peek()
        if tok.is_op("-", "+"):
            self.lx.next()
            line, col = self.where(tok)
            self._descend(tok)
            operand = self._unary()
            self.depth -= 1
            return operand if tok.text == "+" else ast.Unary(line, col, "-", operand)
        return self._primary()

    def _primary(self) -> ast.Expr:
        tok = self.lx.next()
        line, col = self.where(tok)
        if tok.kind == NUMBER:
            try:
                return ast.Literal(line, col, float(tok.text))
            except ValueError:
                raise self.error(f"bad number {tok.text!r}", tok) from None
        if tok.kind == STRING:
            return ast.Literal(line, col, tok.text)
        if tok.kind == QNAME:
            return ast.FieldRef(line, col, tok.text)
        if tok.is_op("("):
            self._descend(tok)
            inner = self.expression()
            self.expect_op(")")
            self.depth -= 1
            return inner
        if tok.kind == NAME:
            if self.lx.peek().is_op("("):
                self.lx.next()
                self._descend(tok)
                name = tok.text.upper()
                distinct = False
                if name in AGGREGATIONS and self.lx.peek().is_word("DISTINCT"):
                    self.lx.next()
                    distinct = True
                args: list[ast.Expr] = []
                if not self.lx.peek().is_op(")"):
                    args.append(self.expression())
                    while self.lx.peek().is_op(","):
                        self.lx.next()
                        args.append(self.expression())
                self.expect_op(")")
                self.depth -= 1
                if name in _FIELD_NAME_ARG and args and isinstance(args[0], ast.FieldRef):
                    # The field's name, not its value; Exists(F) tests F's value of this row.
                    ref = args[0]
                    args[0] = ast.Literal(ref.line, ref.column, ref.name)
                    if name == "EXISTS" and len(args) == 1:
                        args.append(ref)
                return ast.Call(line, col, name, tuple(args), distinct)
            if tok.text.upper() in _CLAUSE_WORDS:
                raise self.error(f"expected an expression, found {tok.text}", tok)
            return ast.FieldRef(line, col, tok.text)
        raise self.error(f"expected an expression, found {describe(tok)}", tok)

    # --- LOAD
    def _clauses(self, resident: bool) -> dict[str, object]:
        """WHERE, WHILE, GROUP BY and ORDER BY after a LOAD's source (each at most once)."""
        out: dict[str, object] = {}
        while True:
            tok = self.lx.peek()
            if tok.is_word("WHERE", "WHILE"):
                key = "where" if tok.is_word("WHERE") else "while_"
                if key in out:
                    raise self.error(f"a second {tok.text.upper()} clause", tok)
                self.lx.next()
                out[key] = self.expression()
            elif tok.is_word("GROUP"):
                if "group_by" in out:
                    raise self.error("a second GROUP BY clause", tok)
                self.lx.next()
                self.expect_word("BY")
                out["group_by"] = self.name_list("a field name after GROUP BY")
            elif tok.is_word("ORDER"):
                if "order_by" in out:
                    raise self.error("a second ORDER BY clause", tok)
                if not resident:
                    raise self.error("ORDER BY needs a RESIDENT source", tok)
                self.lx.next()
                self.expect_word("BY")
                keys = []
                while True:
                    f = self.name("a field name after ORDER BY")
                    desc = False
                    if self.lx.peek().is_word("ASC", "DESC"):
                        desc = self.lx.next().is_word("DESC")
                    keys.append((f, desc))
                    if not self.lx.peek().is_op(","):
                        break
                    self.lx.next()
                out["order_by"] = tuple(keys)
            else:
                self.end()
                return out

    def load(
        self,
        first: Token,
        label: str | None,
        concatenate: str,
        target: str | None,
        following: Callable[[], ast.Load] | None,
    ) -> ast.Load:
        """The rest of a LOAD statement after the word LOAD."""
        line, col = self.where(first)
        distinct = False
        if self.lx.peek().is_word("DISTINCT"):
            self.lx.next()
            distinct = True
        fields = self._load_fields()
        tok = self.lx.next()
        source: (
            ast.FileSource
            | ast.InlineSource
            | ast.ResidentSource
            | ast.AutogenerateSource
            | ast.Load
        )
        if tok.is_word("FROM"):
            nxt = self.lx.peek()
            if nxt.kind in (QNAME, STRING):
                path = self.lx.next().text
            else:
                path, at = self.lx.raw_until("(;")
                if not path:
                    raise self.lx.error("expected a file after FROM", at)
            source = ast.FileSource(path, self._format())
        elif tok.is_word("INLINE"):
            data = self.lx.next()
            if data.kind not in (QNAME, STRING):
                raise self.error("expected [ … ] with the inline data after INLINE", data)
            source = ast.InlineSource(data.text, self._format())
        elif tok.is_word("RESIDENT"):
            source = ast.ResidentSource(self.name("a table name"))
        elif tok.is_word("AUTOGENERATE"):
            source = ast.AutogenerateSource(self.expression())
        elif tok.kind == END or tok.is_word("WHERE", "WHILE", "GROUP", "ORDER"):
            # A preceding LOAD: its rows come from the LOAD after it.
            if following is None:
                raise self.error(
                    "LOAD needs a source: FROM, INLINE, RESIDENT, AUTOGENERATE or a LOAD after it",
                    tok,
                )
            self.lx.back(tok)
            clauses = self._clauses(resident=False)
            return ast.Load(
                line, col, label, fields, following(), distinct=distinct, concatenate=concatenate,
                concat_target=target,
                **clauses,  # type: ignore[arg-type]
            )  # fmt: skip
        else:
            raise self.error(
                f"expected FROM, INLINE, RESIDENT or AUTOGENERATE, found {describe(tok)}", tok
            )
        clauses = self._clauses(isinstance(source, ast.ResidentSource))
        return ast.Load(
            line, col, label, fields, source, distinct=distinct, concatenate=concatenate,
            concat_target=target,
            **clauses,  # type: ignore[arg-type]
        )  # fmt: skip

    def _load_fields(self) -> tuple[ast.LoadField, ...]:
        items: list[ast.LoadField] = []
        while True:
            tok = self.lx.peek()
            if tok.is_op("*"):
                self.lx.next()
                items.append(ast.LoadField(None, "*"))
            else:
                expr = self.expression()
                if self.lx.peek().is_word("AS"):
                    self.lx.next()
                    name = self.name("a field name after AS")
                elif isinstance(expr, ast.FieldRef):
                    name = expr.name
                else:
                    name = self.lx.text[tok.offset : self.lx.peek().offset].strip()
                items.append(ast.LoadField(expr, name))
            if not self.lx.peek().is_op(","):
                return tuple(items)
            self.lx.next()

    def _format(self) -> ast.FileFormat:
        if not self.lx.peek().is_op("("):
            return ast.FileFormat()
        self.lx.next()
        spec: dict[str, object] = {}
        while True:
            tok = self.lx.next()
            word = tok.text.upper() if tok.kind == NAME else ""
            if word in ("QVD", "TXT", "CSV", "PARQUET"):
                spec["kind"] = "txt" if word == "CSV" else word.lower()
            elif word in ("UTF8", "UNICODE", "ANSI", "OEM", "MAC"):
                spec["encoding"] = word.lower()
            elif word == "CODEPAGE":
                spec["encoding"] = "cp" + self._number_after_is("a code page number")
            elif word in ("EMBEDDED", "EXPLICIT"):
                self.expect_word("LABELS")
                spec["labels"] = True
            elif word == "NO":
                what = self.expect_word("LABELS", "QUOTES", "EOF")
                if what.is_word("LABELS"):
                    spec["labels"] = False
                elif what.is_word("QUOTES"):
                    spec["quoting"] = "none"
            elif word == "MSQ":
                spec["quoting"] = "msq"
            elif word == "DELIMITER":
                self.expect_word("IS")
                spec["delimiter"] = self._delimiter()
            elif word == "HEADER":
                lines = self._number_after_is("a number of header lines")
                self.expect_word("LINES", "LINE")
                spec["header_lines"] = int(float(lines))
            else:
                raise self.error(f"unknown file format option {describe(tok)}", tok)
            end = self.lx.next()
            if end.is_op(")"):
                return ast.FileFormat(**spec)  # type: ignore[arg-type]
            if not end.is_op(","):
                raise self.error(
                    f"expected ',' or ')' in the format spec, found {describe(end)}", end
                )

    def _number_after_is(self, what: str) -> str:
        """The number in `IS n` (as written)."""
        self.expect_word("IS")
        num = self.lx.next()
        if num.kind != NUMBER:
            raise self.error(f"expected {what}", num)
        return num.text

    def _delimiter(self) -> str:
        tok = self.lx.next()
        if tok.is_word("SPACES"):
            return " "
        if tok.kind != STRING:
            raise self.error("expected a quoted delimiter or SPACES", tok)
        text = tok.text
        named = {"\\t": "\t", "\t": "\t", "tab": "\t"}
        if text.lower() in named:
            return named[text.lower()]
        if len(text) != 1:
            raise self.error(f"a delimiter is one character, not {text!r}", tok)
        return text


def describe(tok: Token) -> str:
    """A token as an error message names it."""
    if tok.kind == END:
        return "the end of the statement"
    if tok.kind == STRING:
        return f"'{tok.text}'"
    return f"'{tok.text}'" if tok.kind != QNAME else f"[{tok.text}]"


def parse_statement(lexer: Lexer, following: Callable[[], ast.Load] | None) -> ast.Statement | None:
    """One statement (None for an empty one). `following` parses the next statement as the
    source of a preceding LOAD."""
    p = Parser(lexer)
    tok = lexer.next()
    if tok.kind == END:
        return None
    line, col = p.where(tok)
    label: str | None = None
    # A label: a name followed by ':'.
    if tok.kind in (NAME, QNAME, STRING) and lexer.peek().is_op(":") and not tok.is_word("LIB"):
        label = tok.text
        lexer.next()
        tok = lexer.next()
        if tok.kind == END:
            raise p.error("a table label must be followed by a LOAD", tok)
    concatenate, target = "auto", None
    prefixes: dict[str, object] = {}
    while True:
        if tok.is_word("CONCATENATE") and concatenate == "auto":
            concatenate = "concatenate"
            if lexer.peek().is_op("("):
                lexer.next()
                target = p.name("a table name")
                p.expect_op(")")
        elif tok.is_word("NOCONCATENATE") and concatenate == "auto":
            concatenate = "noconcatenate"
        elif tok.is_word("MAPPING") and "mapping" not in prefixes:
            prefixes["mapping"] = True
        elif tok.is_word("CROSSTABLE") and "crosstable" not in prefixes:
            prefixes["crosstable"] = _crosstable(p)
        elif tok.is_word("INTERVALMATCH") and "interval_match" not in prefixes:
            p.expect_op("(")
            prefixes["interval_match"] = p.name_list("a field name")
            p.expect_op(")")
        elif tok.is_word("GENERIC") and "generic" not in prefixes:
            prefixes["generic"] = True
        elif tok.is_word("FIRST") and "first" not in prefixes:
            if lexer.peek().is_word("LOAD"):
                raise p.error("FIRST needs a number of records before LOAD", lexer.peek())
            prefixes["first"] = p.expression()
        elif (
            tok.is_word("LEFT", "RIGHT", "INNER", "OUTER", "JOIN", "KEEP")
            and "join" not in prefixes
            and "keep" not in prefixes
        ):
            kind = "outer" if tok.is_word("JOIN", "KEEP") else tok.text.lower()
            op = tok if tok.is_word("JOIN", "KEEP") else p.expect_word("JOIN", "KEEP")
            if op.is_word("KEEP") and kind == "outer":
                raise p.error("KEEP is LEFT, RIGHT or INNER (OUTER KEEP does not exist)", tok)
            if op.is_word("KEEP") and tok.is_word("KEEP"):
                raise p.error("KEEP needs LEFT, RIGHT or INNER before it", tok)
            prefixes["join" if op.is_word("JOIN") else "keep"] = kind
            if lexer.peek().is_op("("):
                lexer.next()
                prefixes["join_target"] = p.name("a table name")
                p.expect_op(")")
        else:
            break
        tok = lexer.next()
    if tok.is_word("LOAD"):
        load = p.load(tok, label, concatenate, target, following)
        # JOIN, KEEP, MAPPING, CROSSTABLE, FIRST as read before LOAD.
        return dataclasses.replace(load, **prefixes) if prefixes else load  # type: ignore[arg-type]
    if tok.is_word("SELECT", "SQL"):
        raise p.error("SQL SELECT needs a database connection, which scripts here cannot use", tok)
    if label is not None or concatenate != "auto" or prefixes:
        raise p.error(f"expected LOAD, found {describe(tok)}", tok)
    word = tok.text.upper() if tok.kind == NAME else ""
    if word in CONTROL_WORDS:
        return _control(p, word, line, col)
    if word in ("MAP", "UNMAP"):
        patterns = _patterns(p)
        map_name = None
        if word == "MAP":
            p.expect_word("USING")
            map_name = p.name("a mapping table name")
        p.end()
        return ast.MapUsing(line, col, patterns, map_name)
    if word in ("SET", "LET"):
        name = p.name("a variable name")
        p.expect_op("=")
        if word == "SET":
            raw, _ = lexer.rest()
            return ast.SetVariable(line, col, name, text=_set_value(raw))
        expr = p.expression()
        p.end()
        return ast.SetVariable(line, col, name, expr=expr)
    if word == "STORE":
        return _store(p, line, col)
    if word == "DROP":
        what = p.expect_word("TABLE", "TABLES", "FIELD", "FIELDS")
        kind = "table" if what.text.upper().startswith("TABLE") else "field"
        names = p.name_list(f"a {kind} name")
        tables: tuple[str, ...] = ()
        if kind == "field" and lexer.peek().is_word("FROM"):
            lexer.next()
            tables = p.name_list("a table name")
        p.end()
        return ast.Drop(line, col, kind, names, tables)
    if word == "RENAME":
        what = p.expect_word("TABLE", "TABLES", "FIELD", "FIELDS")
        pairs = []
        while True:
            old = p.name()
            p.expect_word("TO")
            pairs.append((old, p.name()))
            if not lexer.peek().is_op(","):
                break
            lexer.next()
        p.end()
        return ast.Rename(
            line, col, "table" if what.text.upper().startswith("TABLE") else "field", tuple(pairs)
        )
    if word in ("QUALIFY", "UNQUALIFY"):
        patterns = _patterns(p)
        p.end()
        return ast.Qualify(line, col, word == "QUALIFY", patterns)
    if word == "SECTION":
        part = p.expect_word("ACCESS", "APPLICATION")
        p.end()
        return ast.Section(line, col, part.text.upper() == "ACCESS")
    if word in ("NULLASVALUE", "NULLASNULL"):
        patterns = _patterns(p)
        p.end()
        return ast.NullAs(line, col, word == "NULLASVALUE", patterns)
    if word == "AUTONUMBER":
        patterns = _patterns(p)
        namespace = None
        if lexer.peek().is_word("USING"):
            lexer.next()
            namespace = p.name("a namespace name")
        p.end()
        return ast.AutoNumberFields(line, col, patterns, namespace)
    if word in ("TAG", "UNTAG", "COMMENT"):
        return _annotate(p, word, line, col)
    if word == "BINARY":
        nxt = lexer.peek()
        if nxt.kind in (QNAME, STRING):
            path = lexer.next().text
        else:
            path, at = lexer.raw_until(";")
            if not path:
                raise lexer.error("expected the stored app's file after BINARY", at)
        p.end()
        return ast.BinaryLoad(line, col, path)
    if word == "TRACE":
        raw, _ = lexer.rest()
        return ast.Trace(line, col, raw.strip())
    raise p.error(f"unknown statement {describe(tok)}", tok)


def _patterns(p: Parser) -> tuple[str, ...]:
    """Field names or wildcard patterns separated by commas."""
    patterns: list[str] = []
    while True:
        nxt = p.lx.next()
        if nxt.is_op("*"):
            patterns.append("*")
        elif nxt.kind in (NAME, QNAME, STRING):
            patterns.append(nxt.text)
        else:
            raise p.error(f"expected a field name, found {describe(nxt)}", nxt)
        if not p.lx.peek().is_op(","):
            return tuple(patterns)
        p.lx.next()


def _annotate(p: Parser, word: str, line: int, col: int) -> ast.Annotate:
    """TAG / UNTAG / COMMENT after their first word."""
    what = "field"
    if p.lx.peek().is_word("FIELD", "FIELDS", "TABLE", "TABLES"):
        what = "table" if p.lx.next().text.upper().startswith("TABLE") else "field"
    if word != "COMMENT" and what == "table":
        raise p.error(f"{word} names fields, not tables", p.lx.peek())
    names = _patterns(p)
    how = p.expect_word("WITH", "USING")
    text = map_name = None
    if how.is_word("WITH"):
        tok = p.lx.next()
        if tok.kind not in (NAME, QNAME, STRING):
            raise p.error(f"expected a text after WITH, found {describe(tok)}", tok)
        text = tok.text
    else:
        map_name = p.name("a mapping table name")
    if how.is_word("WITH") and len(names) > 1 and word == "COMMENT":
        raise p.error("COMMENT … WITH names one field or table", how)
    p.end()
    kind = word.lower() if word != "COMMENT" else f"{what} comment"
    return ast.Annotate(line, col, kind, names, text, map_name)


def _crosstable(p: Parser) -> tuple[str, str, int]:
    """`(attribute, data [, n])` after CROSSTABLE."""
    p.expect_op("(")
    attribute = p.name("the attribute field's name")
    p.expect_op(",")
    data = p.name("the data field's name")
    qualifiers = 1
    if p.lx.peek().is_op(","):
        p.lx.next()
        tok = p.lx.next()
        if tok.kind != NUMBER or not tok.text.isdigit() or int(tok.text) < 1:
            raise p.error(f"expected a number of qualifier fields, found {describe(tok)}", tok)
        qualifiers = int(tok.text)
    p.expect_op(")")
    return attribute, data, qualifiers


def _condition(p: Parser) -> tuple[ast.Expr | None, bool]:
    """An optional `WHILE cond` / `UNTIL cond` (DO, LOOP): the condition and whether UNTIL."""
    tok = p.lx.peek()
    if tok.is_word("WHILE", "UNTIL"):
        p.lx.next()
        cond = p.expression()
        p.end()
        return cond, tok.is_word("UNTIL")
    p.end()
    return None, False


def _control(p: Parser, word: str, line: int, col: int) -> ast.Statement:
    """A control statement after its first word."""
    lx = p.lx
    if word in ("IF", "ELSEIF"):
        test = p.expression()
        p.expect_word("THEN")
        p.end()
        return ast.If(line, col, test, word == "ELSEIF")
    if word == "ELSE":
        p.end()
        return ast.Else(line, col)
    if word in ("END", "ENDIF", "ENDSUB", "ENDSWITCH"):
        what = word[3:] or p.expect_word("IF", "SUB", "SWITCH").text.upper()
        p.end()
        return ast.End(line, col, what)
    if word == "NEXT":
        if lx.peek().kind != END:
            p.name("a loop variable")
        p.end()
        return ast.End(line, col, "NEXT")
    if word == "LOOP":
        cond, until = _condition(p)
        return ast.End(line, col, "LOOP", cond, until)
    if word == "DO":
        cond, until = _condition(p)
        return ast.Do(line, col, cond, until)
    if word == "FOR":
        if lx.peek().is_word("EACH"):
            lx.next()
            var = p.name("a loop variable")
            p.expect_word("IN")
            items = [p.expression()]
            while lx.peek().is_op(","):
                lx.next()
                items.append(p.expression())
            p.end()
            return ast.ForEach(line, col, var, tuple(items))
        var = p.name("a loop variable")
        p.expect_op("=")
        start = p.expression()
        p.expect_word("TO")
        stop = p.expression()
        step = None
        if lx.peek().is_word("STEP"):
            lx.next()
            step = p.expression()
        p.end()
        return ast.For(line, col, var, start, stop, step)
    if word in ("SUB", "CALL"):
        name = p.name("a subroutine name")
        args: list[ast.Expr] = []
        params: list[str] = []
        if lx.peek().is_op("("):
            lx.next()
            if not lx.peek().is_op(")"):
                while True:
                    if word == "SUB":
                        params.append(p.name("a parameter name"))
                    else:
                        args.append(p.expression())
                    if not lx.peek().is_op(","):
                        break
                    lx.next()
            p.expect_op(")")
        p.end()
        if word == "SUB":
            return ast.Sub(line, col, name, tuple(params))
        return ast.CallSub(line, col, name, tuple(args))
    if word == "SWITCH":
        expr = p.expression()
        p.end()
        return ast.Switch(line, col, expr)
    if word in ("CASE", "DEFAULT"):
        values: list[ast.Expr] = []
        if word == "CASE":
            values.append(p.expression())
            while lx.peek().is_op(","):
                lx.next()
                values.append(p.expression())
        p.end()
        return ast.Case(line, col, tuple(values))
    # EXIT
    what = p.expect_word("SCRIPT", "FOR", "DO", "SUB").text.upper()
    when, unless = None, False
    if lx.peek().is_word("WHEN", "UNLESS"):
        unless = lx.next().is_word("UNLESS")
        when = p.expression()
    p.end()
    return ast.Exit(line, col, what, when, unless)


def _set_value(raw: str) -> str:
    """A SET statement's value: the text as written, surrounding quotes removed."""
    value = raw.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1].replace(value[0] * 2, value[0])
    return value


def _store(p: Parser, line: int, col: int) -> ast.Store:
    fields: tuple[str, ...] = ()
    if p.lx.peek().is_op("*"):
        # STORE * FROM T: every field.
        p.lx.next()
        p.expect_word("FROM")
        table = p.name("a table name")
    else:
        names = p.name_list("a table or field name")
        if p.lx.peek().is_word("FROM"):
            p.lx.next()
            fields = names
            table = p.name("a table name")
        elif len(names) == 1:
            table = names[0]
        else:
            tok = p.lx.peek()
            raise p.error(f"expected FROM after the field list, found {describe(tok)}", tok)
    p.expect_word("INTO")
    nxt = p.lx.peek()
    if nxt.kind in (QNAME, STRING):
        path = p.lx.next().text
    else:
        path, _ = p.lx.raw_until("(;")
    kind = "qvd"
    if p.lx.peek().is_op("("):
        p.lx.next()
        tok = p.expect_word("QVD", "TXT", "CSV", "PARQUET")
        kind = "txt" if tok.is_word("TXT", "CSV") else tok.text.lower()
        p.expect_op(")")
    elif path.lower().endswith((".csv", ".txt")):
        kind = "txt"
    elif path.lower().endswith(".parquet"):
        kind = "parquet"
    p.end()
    return ast.Store(line, col, table, path, kind, fields)
