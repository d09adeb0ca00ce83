"""Script text: split into statements, `$(name)` expanded, cut into tokens with positions."""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass

from assoc.script.errors import ScriptError

# Token kinds: a bare name, a quoted name ("…" or […]), a string ('…'), a number, an operator.
NAME, QNAME, STRING, NUMBER, OP, END = "name", "qname", "string", "number", "op", "end"

_OPERATORS = ("<=", ">=", "<>", "+", "-", "*", "/", "&", "=", "<", ">", "(", ")", ",", ":", ";")


class Positions:
    """Turns offsets in the whole script into 1-based line and column."""

    def __init__(self, text: str) -> None:
        self._starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]

    def line_column(self, offset: int) -> tuple[int, int]:
        """Line and column of an offset."""
        line = bisect.bisect_right(self._starts, offset) - 1
        return line + 1, offset - self._starts[line] + 1


@dataclass(frozen=True)
class Statement:
    """One statement's text (without its `;`) and where it starts in the script."""

    text: str
    offset: int


def _skip_quoted(text: str, i: int, close: str, positions: Positions) -> int:
    """The offset after the quote that closes the one at i (a doubled quote is data)."""
    j = i + 1
    while True:
        k = text.find(close, j)
        if k < 0:
            line, col = positions.line_column(i)
            raise ScriptError(f"unterminated {text[i]}…{close}", line, col)
        if close != "]" and k + 1 < len(text) and text[k + 1] == close:
            j = k + 2
            continue
        return k + 1


def _is_word_at(text: str, i: int, word: str) -> bool:
    """True when `word` (any case) starts at i as a whole word."""
    end = i + len(word)
    if text[i:end].upper() != word:
        return False
    before_ok = i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")
    after_ok = end >= len(text) or not (text[end].isalnum() or text[end] == "_")
    return before_ok and after_ok


# The first words of control statements, which end at `;` or at the end of their line.
CONTROL_WORDS = frozenset(
    (
        "IF", "ELSEIF", "ELSE", "END", "ENDIF", "ENDSUB", "ENDSWITCH", "FOR", "NEXT", "DO",
        "LOOP", "SUB", "CALL", "SWITCH", "CASE", "DEFAULT", "EXIT",
    )
)  # fmt: skip


def control_word(text: str, i: int) -> str:
    """The control word starting the statement at i (upper-cased), or "" (a label `If:` is
    not one)."""
    j = i
    while j < len(text) and (text[j].isalnum() or text[j] == "_"):
        j += 1
    word = text[i:j].upper()
    if word not in CONTROL_WORDS:
        return ""
    k = j
    while k < len(text) and text[k] in " \t":
        k += 1
    return "" if k < len(text) and text[k] == ":" else word


def _control_end(text: str, i: int, word: str, positions: Positions) -> int:
    """Where the control statement starting at i ends (its `;`, line end, or after THEN/ELSE)."""
    n = len(text)
    if word in ("ELSE", "DEFAULT"):
        return i + len(word)
    j = i
    while j < n and text[j] not in ";\n":
        ch = text[j]
        if ch in "'\"[`":
            j = _skip_quoted(text, j, "]" if ch == "[" else ch, positions)
            continue
        if ch == "/" and text.startswith("//", j) and text[j - 1] != ":":
            nl = text.find("\n", j)
            return n if nl < 0 else nl
        if word in ("IF", "ELSEIF") and ch in "tT" and _is_word_at(text, j, "THEN"):
            return j + 4
        j += 1
    return j


def split_statements(text: str, positions: Positions) -> list[Statement]:
    """The script's statements, comments removed; REM statements dropped."""
    out: list[Statement] = []
    buf: list[str] = []
    start = -1
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "/" and text.startswith("//", i) and (i == 0 or text[i - 1] != ":"):
            nl = text.find("\n", i)
            i = n if nl < 0 else nl
            continue
        if ch == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                line, col = positions.line_column(i)
                raise ScriptError("unterminated /* comment", line, col)
            buf.append(" ")
            i = end + 2
            continue
        if start < 0:
            if ch.isspace():
                i += 1
                continue
            start = i
            if _is_word_at(text, i, "REM"):
                end = text.find(";", i)
                i = n if end < 0 else end + 1
                start = -1
                continue
            word = control_word(text, i)
            if word:
                # A control statement ends at its `;` or its line's end (IF … THEN and ELSE
                # also right after THEN / ELSE: a statement may follow on the same line).
                i = _control_end(text, i, word, positions)
                out.append(Statement(text[start:i], start))
                if i < n and text[i] == ";":
                    i += 1
                start = -1
                continue
        if ch in "'\"[`":
            end = _skip_quoted(text, i, "]" if ch == "[" else ch, positions)
            buf.append(text[i:end])
            i = end
            continue
        if ch == ";":
            out.append(Statement("".join(buf), start))
            buf, start = [], -1
            i += 1
            continue
        buf.append(ch)
        i += 1
    if start >= 0 and "".join(buf).strip():
        out.append(Statement("".join(buf), start))
    return out


def expand_variables(text: str, lookup: Callable[[str], str]) -> tuple[str, list[tuple[int, int]]]:
    """`$(name)` replaced by lookup(name); also the map of expanded offsets to original ones."""
    if "$(" not in text:
        return text, [(0, 0)]
    out: list[str] = []
    spans: list[tuple[int, int]] = [(0, 0)]
    i = length = 0
    while True:
        k = text.find("$(", i)
        if k < 0:
            out.append(text[i:])
            return "".join(out), spans
        out.append(text[i:k])
        length += k - i
        depth, j = 1, k + 2
        while j < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        if depth:
            raise ScriptError("unterminated $( expansion", 0, 0)
        value = lookup(text[k + 2 : j - 1].strip())
        out.append(value)
        length += len(value)
        spans.append((length, j))
        i = j


@dataclass(frozen=True)
class Token:
    """One token: its kind, its text (quotes removed for quoted kinds) and its offset."""

    kind: str
    text: str
    offset: int

    def is_word(self, *words: str) -> bool:
        """True when the token is a bare name equal (any case) to one of words."""
        return self.kind == NAME and self.text.upper() in words

    def is_op(self, *ops: str) -> bool:
        """True when the token is one of the operators."""
        return self.kind == OP and self.text in ops


def _is_name_char(ch: str) -> bool:
    return ch.isalnum() or ch in "_.#$@%"


class Lexer:
    """Tokens of one statement, read one at a time (the parser may read raw text too)."""

    def __init__(self, text: str, where: Callable[[int], tuple[int, int]]) -> None:
        self.text = text
        self.pos = 0
        self.where = where
        self._peeked: Token | None = None

    def error(self, message: str, offset: int) -> ScriptError:
        """A ScriptError placed at an offset of this statement."""
        line, col = self.where(offset)
        return ScriptError(message, line, col)

    def _skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def _read(self) -> Token:
        self._skip_space()
        text, i = self.text, self.pos
        if i >= len(text):
            return Token(END, "", i)
        ch = text[i]
        if ch in "'\"[`":
            close = "]" if ch == "[" else ch
            j = i + 1
            k = i
            parts: list[str] = []
            while True:
                k = text.find(close, j)
                if k < 0:
                    raise self.error(f"unterminated {ch}…{close}", i)
                parts.append(text[j:k])
                if close != "]" and k + 1 < len(text) and text[k + 1] == close:
                    parts.append(close)
                    j = k + 2
                    continue
                break
            self.pos = k + 1
            return Token(STRING if ch == "'" else QNAME, "".join(parts), i)
        if ch.isdigit() or (ch == "." and i + 1 < len(text) and text[i + 1].isdigit()):
            j = i
            while j < len(text) and (text[j].isdigit() or text[j] == "."):
                j += 1
            if j < len(text) and text[j] in "eE":
                k = j + 1
                if k < len(text) and text[k] in "+-":
                    k += 1
                if k < len(text) and text[k].isdigit():
                    j = k
                    while j < len(text) and text[j].isdigit():
                        j += 1
            self.pos = j
            return Token(NUMBER, text[i:j], i)
        if _is_name_char(ch):
            j = i
            while j < len(text) and _is_name_char(text[j]):
                j += 1
            self.pos = j
            return Token(NAME, text[i:j], i)
        for op in _OPERATORS:
            if text.startswith(op, i):
                self.pos = i + len(op)
                return Token(OP, op, i)
        raise self.error(f"unexpected character {ch!r}", i)

    def peek(self) -> Token:
        """The next token, not consumed."""
        if self._peeked is None:
            self._peeked = self._read()
        return self._peeked

    def next(self) -> Token:
        """The next token, consumed."""
        tok = self.peek()
        self._peeked = None
        return tok

    def back(self, tok: Token) -> None:
        """Reads on from `tok` again (it is the next token)."""
        self.pos, self._peeked = tok.offset, None

    def raw_until(self, stops: str) -> tuple[str, int]:
        """Raw text from here to the first whitespace or stop character (an unquoted path)."""
        if self._peeked is not None:
            self.pos = self._peeked.offset
            self._peeked = None
        self._skip_space()
        start = j = self.pos
        while j < len(self.text) and not self.text[j].isspace() and self.text[j] not in stops:
            j += 1
        self.pos = j
        return self.text[start:j], start

    def rest(self) -> tuple[str, int]:
        """The rest of the statement's raw text."""
        if self._peeked is not None:
            self.pos = self._peeked.offset
            self._peeked = None
        start = self.pos
        self.pos = len(self.text)
        return self.text[start:], start
