"""Statements and expressions parsed from tokens; errors name line and column."""

from __future__ import annotations

from collections.abc import Callable

from assoc.script import syntax as ast
from assoc.script.errors import ScriptError
from assoc.script.lexer import END, NAME, NUMBER, OP, QNAME, STRING, Lexer, Token

# Words that end a LOAD's field list or its source and so cannot be bare field names there.
_CLAUSE_WORDS = ("FROM", "INLINE", "RESIDENT", "AUTOGENERATE", "WHERE")
# Binary operators by precedence, lowest first; NOT sits between AND and the comparisons.
_WORD_LEVELS = {"OR": 0, "XOR": 0, "AND": 1}
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
                args: list[ast.Expr] = []
                if not self.lx.peek().is_op(")"):
                    args.append(self.expression())
                    while self.lx.peek().is_op(","):
                        self.lx.next()
                        args.append(self.expression())
                self.expect_op(")")
                self.depth -= 1
                return ast.Call(line, col, tok.text.upper(), tuple(args))
            if tok.text.upper() in _CLAUSE_WORDS:
                raise self.error(f"expected an expression, found {tok.text}", tok)
            return ast.FieldRef(line, col, tok.text)
        raise self.error(f"expected an expression, found {describe(tok)}", tok)

    # --- LOAD
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
        elif tok.kind == END or tok.is_word("WHERE"):
            # A preceding LOAD: its rows come from the LOAD after it.
            if following is None:
                raise self.error(
                    "LOAD needs a source: FROM, INLINE, RESIDENT, AUTOGENERATE or a LOAD after it",
                    tok,
                )
            where = None
            if tok.is_word("WHERE"):
                where = self.expression()
                self.end()
            return ast.Load(
                line, col, label, fields, following(), where, distinct, concatenate, target
            )
        else:
            raise self.error(
                f"expected FROM, INLINE, RESIDENT or AUTOGENERATE, found {describe(tok)}", tok
            )
        where = None
        if self.lx.peek().is_word("WHERE"):
            self.lx.next()
            where = self.expression()
        elif self.lx.peek().is_word("WHILE"):
            raise self.error("WHILE clauses are not supported", self.lx.peek())
        self.end()
        return ast.Load(line, col, label, fields, source, where, distinct, concatenate, target)

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
    if tok.is_word("CONCATENATE"):
        concatenate = "concatenate"
        if lexer.peek().is_op("("):
            lexer.next()
            target = p.name("a table name")
            p.expect_op(")")
        tok = lexer.next()
    elif tok.is_word("NOCONCATENATE"):
        concatenate = "noconcatenate"
        tok = lexer.next()
    if tok.is_word("LOAD"):
        return p.load(tok, label, concatenate, target, following)
    if tok.is_word("SELECT", "SQL"):
        raise p.error("SQL SELECT needs a database connection, which scripts here cannot use", tok)
    if label is not None or concatenate != "auto":
        raise p.error(f"expected LOAD, found {describe(tok)}", tok)
    word = tok.text.upper() if tok.kind == NAME else ""
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
        patterns: list[str] = []
        while True:
            nxt = lexer.next()
            if nxt.is_op("*"):
                patterns.append("*")
            elif nxt.kind in (NAME, QNAME, STRING):
                patterns.append(nxt.text)
            else:
                raise p.error(f"expected a field name, found {describe(nxt)}", nxt)
            if not lexer.peek().is_op(","):
                break
            lexer.next()
        p.end()
        return ast.Qualify(line, col, word == "QUALIFY", tuple(patterns))
    if word == "TRACE":
        raw, _ = lexer.rest()
        return ast.Trace(line, col, raw.strip())
    if word == "EXIT":
        p.expect_word("SCRIPT")
        p.end()
        return ast.ExitScript(line, col)
    raise p.error(f"unknown statement {describe(tok)}", tok)


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
