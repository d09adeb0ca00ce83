"""Runs a script's control statements (IF, FOR, FOR EACH, DO, SUB and CALL, SWITCH, EXIT,
$(Include)): the frames of the programs being run and how each control statement moves
them on. The blocks they move between are found beforehand (`control.structure`)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from assoc.script import syntax as ast
from assoc.script.connections import FolderConnections
from assoc.script.control import MAX_CALL_DEPTH, Block, Program, structure
from assoc.script.errors import ScriptError
from assoc.script.functions import numbers_of
from assoc.script.lexer import Positions, Statement, expand_variables, split_statements
from assoc.script.numbers import Interpretation, plain_text, read_plain
from assoc.script.values import Values

if TYPE_CHECKING:
    from collections.abc import Callable


class Exit(Exception):
    """EXIT SCRIPT reached."""


def no_following() -> ast.Load:
    raise AssertionError("control statements have no preceding LOAD")


def _same(a: Values, b: Values) -> bool:
    """SWITCH's test: equal numbers, else equal texts."""
    x, y = float(a.nums[0]), float(b.nums[0])
    if x == x and y == y:
        return x == y
    return a.text_list()[0] == b.text_list()[0]


@dataclass
class RunFrame:
    """A program being run: the script, an included file, or a SUB's body (a CALL)."""

    program: Program
    pc: int
    loops: dict[int, list[object]] = field(default_factory=dict)  # FOR at i: its state
    sub: _SubCall | None = None


@dataclass
class _SubCall:
    """A CALL in progress: the variables its parameters hid, and the caller's variables the
    parameters stand for (given by name: their values go back when the SUB ends)."""

    saved: dict[str, str | None]
    by_reference: dict[str, str]


@dataclass
class _SubDef:
    """A SUB: where its body is and its parameters."""

    program: Program
    start: int
    end: int
    params: tuple[str, ...]


class ControlFlow:
    """The control statements of a script run; mixed into the script runner, which gives
    the variables, connections and the parsing and evaluation of statements."""

    variables: dict[str, str]
    connections: FolderConnections
    _subs: dict[str, _SubDef]

    if TYPE_CHECKING:

        def _parse(
            self,
            raw: Statement,
            following: Callable[[], ast.Load],
            program: Program | None = None,
            positions: Positions | None = None,
        ) -> ast.Statement | None: ...

        def _constant(self, expr: ast.Expr) -> Values: ...

        def _lookup(self, name: str) -> str: ...

        def _field_values(self, field_name: str) -> Values: ...

        def interpretation(self) -> Interpretation: ...

    def _truth(self, expr: ast.Expr) -> bool:
        """A condition's value: true when its number is neither 0 nor missing."""
        v = self._constant(expr)
        x = numbers_of(v, self.interpretation())[0]
        return bool(x == x and x != 0)

    def _text(self, expr: ast.Expr) -> str:
        return self._constant(expr).text_list()[0] or ""

    def _control(
        self, frames: list[RunFrame], frame: RunFrame, i: int, stmt: ast.Statement | None
    ) -> None:
        prog = frame.program
        block = prog.blocks.get(i)
        frame.pc = i + 1
        if isinstance(stmt, ast.If):
            assert block is not None
            if stmt.elseif:  # reached after the branch before it ran: the IF is done
                frame.pc = block.end + 1
                return
            if self._truth(stmt.cond):
                return
            for j in block.clauses:
                clause = self._parse(prog.raw[j], no_following, prog)
                if isinstance(clause, ast.If) and not self._truth(clause.cond):
                    continue
                frame.pc = j + 1
                return
            frame.pc = block.end + 1
        elif isinstance(stmt, ast.Else):
            assert block is not None
            frame.pc = block.end + 1
        elif isinstance(stmt, ast.Switch):
            assert block is not None
            value = self._constant(stmt.expr)
            for j in block.clauses:
                case = self._parse(prog.raw[j], no_following, prog)
                assert isinstance(case, ast.Case)
                if not case.values or any(_same(value, self._constant(v)) for v in case.values):
                    frame.pc = j + 1
                    return
            frame.pc = block.end + 1
        elif isinstance(stmt, ast.Case):
            assert block is not None
            frame.pc = block.end + 1
        elif isinstance(stmt, ast.For):
            assert block is not None
            start = self._number(stmt.start, "FOR")
            stop = self._number(stmt.stop, "FOR … TO")
            step = 1.0 if stmt.step is None else self._number(stmt.step, "STEP")
            if step == 0:
                raise ScriptError("FOR … STEP 0 never ends", stmt.line, stmt.column)
            self.variables[stmt.var] = plain_text(start)
            frame.loops[i] = [stop, step]
            if (start - stop) * step > 0:
                frame.pc = block.end + 1
        elif isinstance(stmt, ast.ForEach):
            assert block is not None
            items = self._for_each_items(stmt)
            frame.loops[i] = [items, 0]
            if items:
                self.variables[stmt.var] = items[0]
            else:
                frame.pc = block.end + 1
        elif isinstance(stmt, ast.Do):
            assert block is not None
            if stmt.cond is not None and self._truth(stmt.cond) == stmt.until:
                frame.pc = block.end + 1
        elif isinstance(stmt, ast.End):
            assert block is not None
            if stmt.what == "NEXT":
                self._next(frame, block)
            elif stmt.what == "LOOP":
                if stmt.cond is None or self._truth(stmt.cond) != stmt.until:
                    frame.pc = block.start
            elif stmt.what == "SUB":
                self._return(frames)
        elif isinstance(stmt, ast.Sub):
            assert block is not None
            self._subs[stmt.name.upper()] = _SubDef(prog, i, block.end, stmt.params)
            frame.pc = block.end + 1
        elif isinstance(stmt, ast.CallSub):
            self._call(frames, stmt)
        elif isinstance(stmt, ast.Exit):
            if stmt.when is not None and self._truth(stmt.when) == stmt.unless:
                return
            if stmt.what == "SCRIPT":
                raise Exit
            if stmt.what == "SUB":
                self._return(frames)
                return
            loop = prog.exits[i]
            frame.loops.pop(loop.start, None)
            frame.pc = loop.end + 1

    def _number(self, expr: ast.Expr, what: str) -> float:
        x = float(numbers_of(self._constant(expr), self.interpretation())[0])
        if x != x:
            raise ScriptError(f"{what} needs a number", expr.line, expr.column)
        return x

    def _next(self, frame: RunFrame, block: Block) -> None:
        """NEXT: the loop's variable to its next value and back to the loop's first statement,
        or on after NEXT when it is past the end."""
        prog = frame.program
        state = frame.loops.get(block.start)
        if state is None:  # the FOR ran in another frame: cannot happen, blocks are static
            return
        head = self._parse(prog.raw[block.start], no_following, prog)
        if isinstance(head, ast.ForEach):
            items, k = state
            assert isinstance(items, list)
            assert isinstance(k, int)
            if k + 1 < len(items):
                state[1] = k + 1
                self.variables[head.var] = items[k + 1]
                frame.pc = block.start + 1
                return
        elif isinstance(head, ast.For):
            stop, step = state
            assert isinstance(stop, float)
            assert isinstance(step, float)
            current = read_plain(self.variables.get(head.var, ""), ".", "")
            value = (current if current is not None else stop + step) + step
            self.variables[head.var] = plain_text(value)
            if (value - stop) * step <= 0:
                frame.pc = block.start + 1
                return
        frame.loops.pop(block.start, None)

    def _for_each_items(self, stmt: ast.ForEach) -> list[str]:
        items: list[str] = []
        for expr in stmt.items:
            if isinstance(expr, ast.Call) and expr.name == "FILELIST" and len(expr.args) == 1:
                items.extend(self._file_list(self._text(expr.args[0]), expr))
            elif isinstance(expr, ast.Call) and expr.name == "FIELDVALUELIST":
                if len(expr.args) != 1:
                    raise ScriptError("FieldValueList takes a field name", expr.line, expr.column)
                values = self._field_values(self._text(expr.args[0]))
                items.extend(t or "" for t in values.text_list())
            else:
                items.append(self._text(expr))
        return items

    def _file_list(self, mask: str, expr: ast.Expr) -> list[str]:
        """FileList('lib://conn/dir/*.csv'): the files matching, as lib:// paths, sorted."""
        head, _, pattern = mask.rpartition("/")
        folder = self.connections.resolve(head or mask, expr.line, expr.column)
        if not folder.is_dir():
            return []
        return sorted(
            f"{head}/{p.name}"
            for p in folder.iterdir()
            if p.is_file() and fnmatch.fnmatch(p.name.lower(), pattern.lower())
        )

    def _call(self, frames: list[RunFrame], stmt: ast.CallSub) -> None:
        sub = self._subs.get(stmt.name.upper())
        if sub is None:
            raise ScriptError(f"no SUB named {stmt.name}", stmt.line, stmt.column)
        if len(stmt.args) > len(sub.params):
            raise ScriptError(
                f"{stmt.name} takes {len(sub.params)} parameters, not {len(stmt.args)}",
                stmt.line,
                stmt.column,
            )
        if len(frames) >= MAX_CALL_DEPTH:
            raise ScriptError(
                f"CALLs and includes nested deeper than {MAX_CALL_DEPTH} levels",
                stmt.line,
                stmt.column,
            )
        values: list[str | None] = []
        by_reference: dict[str, str] = {}
        for param, arg in zip(sub.params, stmt.args, strict=False):
            if isinstance(arg, ast.FieldRef) and arg.name in self.variables:
                # A variable given by name: the SUB may change it.
                by_reference[param] = arg.name
                values.append(self.variables[arg.name])
            else:
                values.append(self._text(arg))
        values += [None] * (len(sub.params) - len(values))
        saved = {p: self.variables.get(p) for p in sub.params}
        for p, v in zip(sub.params, values, strict=True):
            if v is None:
                self.variables.pop(p, None)
            else:
                self.variables[p] = v
        frames.append(RunFrame(sub.program, sub.start + 1, sub=_SubCall(saved, by_reference)))

    def _return(self, frames: list[RunFrame]) -> None:
        """END SUB / EXIT SUB: back to the statement after the CALL."""
        while frames:
            frame = frames.pop()
            if frame.sub is not None:
                values = {p: self.variables.get(p) for p in frame.sub.saved}
                for p, old in frame.sub.saved.items():
                    if old is None:
                        self.variables.pop(p, None)
                    else:
                        self.variables[p] = old
                for p, var in frame.sub.by_reference.items():
                    if values[p] is not None:
                        self.variables[var] = values[p] or ""
                return

    def _include(self, frames: list[RunFrame], frame: RunFrame, i: int) -> None:
        """`$(Include=lib://…)`: the file's statements run here (a missing file is skipped;
        with Must_Include it is an error)."""
        prog = frame.program
        frame.pc = i + 1
        must, path_text = prog.includes[i]
        line, col = prog.place(i)
        path_text = expand_variables(path_text, self._lookup)[0].strip()
        if len(frames) >= MAX_CALL_DEPTH:
            raise ScriptError(
                f"CALLs and includes nested deeper than {MAX_CALL_DEPTH} levels", line, col
            )
        path = self.connections.resolve(path_text, line, col)
        if not path.is_file():
            if must:
                raise ScriptError(f"cannot open file {path_text!r}: no such file", line, col)
            return
        try:
            text = path.read_bytes().decode("utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise ScriptError(f"cannot read {path_text!r}: {exc}", line, col) from None
        positions = Positions(text)
        try:
            included = structure(Program(split_statements(text, positions), positions, path_text))
        except ScriptError as exc:
            raise ScriptError(f"{exc.message} (in {path_text})", exc.line, exc.column) from None
        frames.append(RunFrame(included, 0))


__all__ = ["ControlFlow", "Exit", "RunFrame", "no_following"]
