"""The block structure of a script's control statements (IF, FOR, DO, SUB, SWITCH), found
from each statement's first word before anything runs."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from assoc.script.errors import ScriptError
from assoc.script.lexer import Positions, Statement, control_word

# How deep control blocks (IF, FOR, DO, SUB, SWITCH) may nest in one script, and how deep
# CALLs and $(Include)s may go at run time: far beyond real scripts; past either the script
# stops with an error at the statement that went too deep.
MAX_CONTROL_NESTING = 100
MAX_CALL_DEPTH = 100

_INCLUDE = re.compile(r"^\$\(\s*(must_include|include)\s*=(.*)\)\s*$", re.IGNORECASE | re.DOTALL)


@dataclass
class Block:
    """One control block: its kind, the statement that opens it, its inner clauses (ELSEIF,
    ELSE, CASE, DEFAULT) and the statement that closes it."""

    kind: str  # IF, FOR, DO, SUB, SWITCH
    start: int
    clauses: list[int] = field(default_factory=list)
    end: int = -1


@dataclass
class Program:
    """A script's (or an included file's) statements, with their blocks: `blocks[i]` is the
    block statement i opens, continues or closes; `exits[i]` the loop an EXIT FOR/DO leaves."""

    raw: list[Statement]
    positions: Positions
    source: str = ""  # the included file, "" for the script itself
    words: list[str] = field(default_factory=list)
    blocks: dict[int, Block] = field(default_factory=dict)
    exits: dict[int, Block] = field(default_factory=dict)
    includes: dict[int, tuple[bool, str]] = field(default_factory=dict)  # must, path text

    def place(self, i: int) -> tuple[int, int]:
        """Line and column of statement i."""
        return self.positions.line_column(self.raw[i].offset)


def _second_word(text: str) -> str:
    m = re.match(r"\s*\w+\s+(\w+)", text)
    return m.group(1).upper() if m else ""


def structure(program: Program) -> Program:
    """Finds the program's blocks; unmatched or overlapping ones are errors at their place."""
    stack: list[Block] = []
    for i, raw in enumerate(program.raw):
        word = control_word(raw.text, 0)
        program.words.append(word)
        m = _INCLUDE.match(raw.text.strip())
        if m:
            program.includes[i] = (m.group(1).lower() == "must_include", m.group(2).strip())
        if not word:
            continue

        def fail(message: str, at: int = i) -> ScriptError:
            return ScriptError(message, *program.place(at))

        if word in ("ENDIF", "ENDSUB", "ENDSWITCH"):
            word, what = "END", word[3:]
        elif word == "END":
            what = _second_word(raw.text)
        if word in ("IF", "FOR", "DO", "SUB", "SWITCH"):
            if len(stack) >= MAX_CONTROL_NESTING:
                raise fail(f"control statements nested deeper than {MAX_CONTROL_NESTING} levels")
            if word == "SUB" and any(b.kind == "SUB" for b in stack):
                raise fail("SUB inside a SUB")
            block = Block(word, i)
            stack.append(block)
            program.blocks[i] = block
        elif word in ("ELSEIF", "ELSE"):
            if not stack or stack[-1].kind != "IF":
                raise fail(f"{word} without IF")
            top = stack[-1]
            if top.clauses and program.words[top.clauses[-1]] == "ELSE":
                raise fail(f"{word} after ELSE")
            top.clauses.append(i)
            program.blocks[i] = top
        elif word in ("CASE", "DEFAULT"):
            if not stack or stack[-1].kind != "SWITCH":
                raise fail(f"{word} without SWITCH")
            top = stack[-1]
            if top.clauses and program.words[top.clauses[-1]] == "DEFAULT":
                raise fail(f"{word} after DEFAULT")
            top.clauses.append(i)
            program.blocks[i] = top
        elif word in ("END", "NEXT", "LOOP"):
            opener = {"NEXT": "FOR", "LOOP": "DO"}.get(word) or what
            if opener not in ("IF", "SUB", "SWITCH", "FOR", "DO"):
                raise fail("END needs IF, SUB or SWITCH after it")
            name = word if word != "END" else f"END {opener}"
            if not stack or stack[-1].kind != opener:
                still = ""
                if stack:
                    still = f" (the {stack[-1].kind} at line {program.place(stack[-1].start)[0]}"
                    still += " is open)"
                raise fail(f"{name} without {opener}{still}")
            top = stack.pop()
            top.end = i
            program.blocks[i] = top
        elif word == "EXIT":
            what = _second_word(raw.text)
            if what in ("FOR", "DO"):
                loop = next((b for b in reversed(stack) if b.kind == what), None)
                if loop is None:
                    raise fail(f"EXIT {what} outside a {what} loop")
                program.exits[i] = loop
            elif what == "SUB" and not any(b.kind == "SUB" for b in stack):
                raise fail("EXIT SUB outside a SUB")
    if stack:
        top = stack[-1]
        closer = {"FOR": "NEXT", "DO": "LOOP"}.get(top.kind, f"END {top.kind}")
        raise ScriptError(f"{top.kind} without {closer}", *program.place(top.start))
    return program


__all__ = ["MAX_CALL_DEPTH", "MAX_CONTROL_NESTING", "Block", "Program", "structure"]
