"""Runs a load script statement by statement and builds the app's model."""

from __future__ import annotations

import fnmatch
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from assoc import _core
from assoc.access import AccessTable
from assoc.script import syntax as ast
from assoc.script.connections import FolderConnections
from assoc.script.control import Program, structure
from assoc.script.errors import ScriptError
from assoc.script.expressions import (
    Evaluator,
    constant_value,
    fields_of,
    is_row_dependent,
    walk,
)
from assoc.script.files import inline_frame, read_file, write_parquet, write_qvd, write_txt
from assoc.script.flow import ControlFlow, Exit, RunFrame, no_following
from assoc.script.functions import CallContext, numbers_of, subfield_parts
from assoc.script.lexer import (
    Lexer,
    Positions,
    Statement,
    control_word,
    expand_variables,
    split_statements,
)
from assoc.script.loaded_tables import LoadedTables
from assoc.script.numbers import DEFAULTS, Interpretation
from assoc.script.parser import AGGREGATIONS, Parser, parse_statement
from assoc.script.peeks import own_peeks
from assoc.script.reshape import Annotations, Reshaping
from assoc.script.rewrites import (
    aggregations,
    field_name_arg,
    field_refs,
    post_order,
    replaced,
    replaced_all,
    splits,
    with_iterno,
)
from assoc.script.tableops import (
    Groups,
    aggregate,
    crosstable,
    filtered,
    group_rows,
    join_frames,
    keep_rows,
    row_keys,
    take_or_null,
)
from assoc.script.tables import Column, Frame, concatenate_frames
from assoc.script.values import NAN, Values

# A LOAD's rows that are about to be computed, and the name of a row-split SubField's parts
# (and of the other columns a LOAD computes for itself: IterNo, Exists, aggregations).
RowBase = Callable[[list[str]], int]
_PART = "\0part"
_ITER = "\0iterno"
_EXISTS = "\0exists"
_AGG = "\0agg"


@dataclass
class ReloadResult:
    """What a finished reload gives: the model, its log and the CPU time it took."""

    model: _core.DataModel
    log: list[str] = field(default_factory=list)
    cpu_time_ms: float = 0.0
    statement_seconds: list[tuple[int, float]] = field(default_factory=list)  # (line, wall seconds)
    annotations: Annotations = field(default_factory=Annotations)  # TAG, UNTAG, COMMENT


@dataclass
class Progress:
    """How far a reload got: statements done of all, the log so far, the error if it failed."""

    statements_done: int = 0
    statements_total: int = 0
    finished: bool = False
    log: list[str] = field(default_factory=list)
    error: ScriptError | None = None


# How many LOADs without a source may stack on one another: far beyond real scripts (two or
# three), and each adds parse and load frames to the recursion.
MAX_PRECEDING_LOADS = 32


@dataclass
class _Cursor:
    """The statement being read, as a preceding LOAD reads on into the next ones."""

    raw: list[Statement]
    at: int = 0
    preceding: int = 0  # preceding LOADs read on from the statement the run is at
    positions: Positions | None = None


class ScriptRunner(ControlFlow, Reshaping, LoadedTables):
    """One run of a script over folder connections, starting from the given variables."""

    def __init__(
        self,
        text: str,
        connections: FolderConnections | None = None,
        variables: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.text = text
        self.connections = connections or FolderConnections()
        self.variables: dict[str, str] = dict(variables or {})
        self.progress = Progress()
        self._qualify: list[str] = []
        self._unqualify: list[str] = []
        self._subs = {}
        self._cancelled = threading.Event()
        self._positions = Positions(text)
        self._auto_names = 0
        # Section access: while in it, loaded tables go to `access_tables` (not the model).
        self.in_access = False
        self.access_tables: dict[str, Frame] = {}
        self._data_tables: dict[str, Frame] = {}
        self.statement_seconds: list[tuple[int, float]] = []
        # Worker threads' CPU time; the runner's own thread is measured with thread_time.
        self.cpu = _core.CpuAccount()
        self._null_as = []
        self._annotations = []
        self._ran_before = False  # a statement ran (BINARY must come first)

    def cancel(self) -> None:
        """Stops the run before its next statement (or loop round): it fails with a
        ScriptError saying it was cancelled."""
        self._cancelled.set()

    def _check_cancelled(self, line: int = 0, column: int = 0) -> None:
        if self._cancelled.is_set():
            raise ScriptError("the reload was cancelled", line, column)

    # --- statements
    def statements(self, execute: bool) -> None:
        """Runs the script when `execute`; else parses every statement (only SET/LET take
        effect), control statements checked for their blocks."""
        raw = split_statements(self.text, self._positions)
        self.progress.statements_total = len(raw)
        program = structure(Program(raw, self._positions))
        if not execute:
            cursor = _Cursor(raw)
            while cursor.at < len(raw):
                cursor.preceding = 0
                if cursor.at not in program.includes:
                    stmt = self._parse(raw[cursor.at], lambda: self._following(cursor))
                    if isinstance(stmt, ast.SetVariable):
                        self._run(stmt)
                cursor.at += 1
            return
        frames = [RunFrame(program, 0)]
        done = 0
        try:
            while frames:
                frame = frames[-1]
                prog = frame.program
                if frame.pc >= len(prog.raw):
                    frames.pop()
                    continue
                i = frame.pc
                self._check_cancelled(*prog.place(i))
                started = time.perf_counter()
                try:
                    line = self._step(frames, frame, i)
                except ScriptError as exc:
                    if prog.source and not getattr(exc, "_placed", False):
                        exc = ScriptError(f"{exc.message} (in {prog.source})", exc.line, exc.column)
                        exc._placed = True  # type: ignore[attr-defined]
                        raise exc from None
                    raise
                if line:
                    self.statement_seconds.append((line, time.perf_counter() - started))
                done += 1
                self.progress.statements_done = min(done, len(raw))
        except Exit:
            pass
        self.progress.statements_done = len(raw)

    def _step(self, frames: list[RunFrame], frame: RunFrame, i: int) -> int:
        """Runs statement i of the frame's program and moves the frame on; the statement's
        line (0 when it was a control statement)."""
        prog = frame.program
        word = prog.words[i]
        if i in prog.includes:
            self._include(frames, frame, i)
            return 0
        if not word:
            cursor = _Cursor(prog.raw, i, positions=prog.positions)
            stmt = self._parse(prog.raw[i], lambda: self._following(cursor), prog)
            frame.pc = cursor.at + 1
            if stmt is None:
                return 0
            self._run(stmt)
            self._ran_before = True
            return stmt.line
        stmt = self._parse(prog.raw[i], no_following, prog)
        self._control(frames, frame, i, stmt)
        self._ran_before = True
        return 0

    def _following(self, cursor: _Cursor) -> ast.Load:
        """The statement after the cursor, which must be a LOAD (a preceding LOAD's source)."""
        positions = cursor.positions or self._positions
        place = positions.line_column(cursor.raw[cursor.at].offset)
        cursor.preceding += 1
        if cursor.preceding > MAX_PRECEDING_LOADS:
            raise ScriptError(f"more than {MAX_PRECEDING_LOADS} preceding LOADs in a row", *place)
        cursor.at += 1
        if cursor.at >= len(cursor.raw) or control_word(cursor.raw[cursor.at].text, 0):
            raise ScriptError("a LOAD without a source must be followed by a LOAD", *place)
        stmt = self._parse(
            cursor.raw[cursor.at], lambda: self._following(cursor), positions=positions
        )
        if not isinstance(stmt, ast.Load):
            raise ScriptError(
                "a LOAD without a source must be followed by a LOAD",
                *positions.line_column(cursor.raw[cursor.at].offset),
            )
        return stmt

    def _place(self, offset: int) -> tuple[int, int]:
        return self._positions.line_column(offset)

    def _parse(
        self,
        raw: Statement,
        following: Callable[[], ast.Load],
        program: Program | None = None,
        positions: Positions | None = None,
    ) -> ast.Statement | None:
        at = positions or (program.positions if program is not None else self._positions)
        try:
            text, spans = expand_variables(raw.text, self._lookup)
        except ScriptError as exc:
            raise ScriptError(exc.message, *at.line_column(raw.offset)) from None

        def where(offset: int) -> tuple[int, int]:
            # Offsets after an expansion map to the end of the `$(…)` it replaced.
            original = offset
            for expanded_at, source_at in spans:
                if offset >= expanded_at:
                    original = source_at + (offset - expanded_at)
            return at.line_column(raw.offset + min(original, len(raw.text)))

        return parse_statement(Lexer(text, where), following)

    # --- values of expressions outside a LOAD
    def _constant(self, expr: ast.Expr) -> Values:
        return constant_value(expr, self.interpretation(), self, self.variables)

    def _lookup(self, name: str) -> str:
        """The text `$(name)` stands for: a variable's value, or `$(=expr)`'s value."""
        name = expand_variables(name, self._lookup)[0]
        if name.startswith("="):
            parser = Parser(Lexer(name[1:], lambda _o: (0, 0)))
            expr = parser.expression()
            parser.end()
            v = self._constant(expr)
            return v.text_list()[0] or ""
        return self.variables.get(name, "")

    def interpretation(self) -> Interpretation:
        """The interpretation variables in force now."""
        return Interpretation(self.variables)

    def _run(self, stmt: ast.Statement) -> None:
        if isinstance(stmt, ast.Load):
            self._load(stmt)
        elif isinstance(stmt, ast.SetVariable):
            if stmt.expr is not None:
                v = self._constant(stmt.expr)
                self.variables[stmt.name] = v.text_list()[0] or ""
            else:
                self.variables[stmt.name] = stmt.text or ""
        elif isinstance(stmt, ast.Store):
            self._store(stmt)
        elif isinstance(stmt, ast.Drop):
            self._drop(stmt)
        elif isinstance(stmt, ast.Rename):
            self._rename(stmt)
        elif isinstance(stmt, ast.Qualify):
            (self._qualify if stmt.qualify else self._unqualify).extend(stmt.patterns)
            if stmt.qualify:
                self._unqualify = [p for p in self._unqualify if p not in stmt.patterns]
            else:
                self._qualify = [p for p in self._qualify if p not in stmt.patterns or p == "*"]
        elif isinstance(stmt, ast.Section):
            self._section(stmt.access)
        elif isinstance(stmt, ast.Trace):
            self.progress.log.append(stmt.text)
        elif isinstance(stmt, ast.NullAs):
            self._null_as.extend((p, stmt.as_value) for p in stmt.patterns)
        elif isinstance(stmt, ast.AutoNumberFields):
            self._autonumber_fields(stmt)
        elif isinstance(stmt, ast.Annotate):
            self._annotate(stmt)
        elif isinstance(stmt, ast.BinaryLoad):
            if self._ran_before or self.tables:
                raise ScriptError(
                    "BINARY must be the first statement of the script", stmt.line, stmt.column
                )
            self._binary(stmt)
        elif isinstance(stmt, ast.MapUsing):
            if stmt.map is not None and stmt.map not in self.maps:
                raise ScriptError(f"no mapping table named {stmt.map}", stmt.line, stmt.column)
            self._map_using.extend((p, stmt.map) for p in stmt.patterns)

    # --- LOAD
    def _table(self, name: str, stmt: ast.Statement) -> Frame:
        frame = self.tables.get(name)
        if frame is None:
            raise ScriptError(f"table not found: {name}", stmt.line, stmt.column)
        return frame

    def _rows_of(self, stmt: ast.Load, name: str, row_base: RowBase | None = None) -> Frame:
        """A LOAD's rows: its source, filtered, its fields computed, made distinct.
        `row_base(fields)` is how many rows the table they go to holds already (RowNo counts
        on from there)."""
        src = stmt.source
        interp = self.interpretation()
        if isinstance(src, ast.FileSource):
            path = self.connections.resolve(src.path, stmt.line, stmt.column)
            if not path.is_file():
                raise ScriptError(
                    f"cannot open file {src.path!r}: no such file", stmt.line, stmt.column
                )
            try:
                source = read_file(path, src.format, name, interp, self.cpu)
            except ScriptError as exc:
                raise ScriptError(exc.message, stmt.line, stmt.column) from None
            except _core.Error as exc:
                raise ScriptError(
                    f"cannot read {src.path!r}: {exc}", stmt.line, stmt.column
                ) from None
        elif isinstance(src, ast.InlineSource):
            try:
                source = inline_frame(src, name, interp)
            except ScriptError as exc:
                raise ScriptError(exc.message, stmt.line, stmt.column) from None
        elif isinstance(src, ast.ResidentSource):
            source = self._table(src.table, stmt)
        elif isinstance(src, ast.AutogenerateSource):
            count = numbers_of(self._constant(src.count), interp)[0]
            if not count >= 0 or count != int(count):
                raise ScriptError(
                    "AUTOGENERATE needs a whole number of rows", stmt.line, stmt.column
                )
            source = Frame(name, int(count))
        else:
            source = self._rows_of(src, name)
        return self._apply(stmt, source, name, interp, row_base)

    def _apply(
        self,
        stmt: ast.Load,
        source: Frame,
        name: str,
        interp: Interpretation,
        row_base: RowBase | None = None,
    ) -> Frame:
        star_only = all(f.expr is None for f in stmt.fields)
        plain = not (stmt.while_ or stmt.group_by or stmt.order_by)
        if star_only and plain and stmt.where is None and not stmt.distinct:
            if not isinstance(stmt.source, ast.ResidentSource):
                return source  # read for this statement alone: nothing to share
            if source.is_native:
                return source.with_fields([(f, f) for f in source.fields])
            return Frame(name, source.rows, {f: source.column(f) for f in source.fields})
        names: list[str] = []
        for item in stmt.fields:
            for f in source.fields if item.expr is None else [item.name]:
                if f in names:
                    raise ScriptError(f"field {f} is loaded twice", stmt.line, stmt.column)
                names.append(f)
        view = _Rows(source, self._order(stmt, source) if stmt.order_by else None)
        exprs = [item.expr for item in stmt.fields]
        where = stmt.where
        if stmt.while_ is not None:
            view = self._iterate(stmt.while_, view, interp)
            ref = ast.FieldRef(stmt.line, stmt.column, _ITER)
            exprs = [None if x is None else with_iterno(x, ref) for x in exprs]
            where = None if where is None else with_iterno(where, ref)
        else:
            one = ast.Literal(stmt.line, stmt.column, 1.0)
            exprs = [None if x is None else with_iterno(x, one) for x in exprs]
            where = None if where is None else with_iterno(where, one)
        if where is not None:
            view = self._filter(stmt, where, view, interp, exprs)
        if any(splits(e) for e in exprs if e is not None):
            exprs, view = self._split_rows(exprs, view, interp)
        exprs, view = self._row_functions(stmt, exprs, view, interp)
        uses_rowno = any(
            isinstance(e, ast.Call) and e.name == "ROWNO"
            for x in exprs
            if x is not None
            for e in walk(x)
        )
        view.row_base = row_base(names) if row_base is not None and uses_rowno else 0
        if stmt.group_by or any(
            isinstance(e, ast.Call) and e.name in AGGREGATIONS
            for x in exprs
            if x is not None
            for e in walk(x)
        ):
            frame = self._grouped(stmt, exprs, view, name, interp)
        else:
            exprs = own_peeks(
                [item.name for item in stmt.fields],
                exprs,
                name,
                view,
                lambda e, v: self._evaluate(e, v, interp),
                lambda: self._check_cancelled(stmt.line, stmt.column),
            )
            n = view.n
            columns: dict[str, Column] = {}
            for item, expr in zip(stmt.fields, exprs, strict=True):
                if expr is None:
                    for f in source.fields:
                        col, at = view.column(f)
                        columns[f] = col if at is None else col.take(at)
                else:
                    columns[item.name] = self._evaluate(expr, view, interp)
            frame = Frame(name, n, columns)
        if stmt.distinct and frame.rows:
            columns = {f: frame.column(f) for f in frame.fields}
            stacked = (
                np.stack([c.codes for c in columns.values()], axis=1)
                if columns
                else np.zeros((frame.rows, 0))
            )
            _, first = np.unique(stacked, axis=0, return_index=True)
            keep = np.sort(first)
            frame = Frame(name, len(keep), {f: c.take(keep) for f, c in columns.items()})
        return frame

    def _order(self, stmt: ast.Load, source: Frame) -> np.ndarray:
        """ORDER BY: the source's rows sorted by the fields (numbers before texts, NULL last;
        DESC reverses a field's order), equal rows in their order."""
        keys = []
        for f, desc in reversed(stmt.order_by):
            if f not in source.fields:
                raise ScriptError(f"field not found: {f}", stmt.line, stmt.column)
            col = source.column(f)
            rank = _sort_rank(col.symbols)
            codes = col.codes
            r = np.where(codes < 0, len(rank), rank[np.maximum(codes, 0)] if len(rank) else 0)
            if desc:
                r = np.where(col.codes < 0, len(rank), len(rank) - 1 - r)
            keys.append(r)
        return np.lexsort(keys) if keys else np.arange(source.rows)

    def _iterate(self, cond: ast.Expr, view: _Rows, interp: Interpretation) -> _Rows:
        """WHILE: each row read again with IterNo() 1, 2, … as long as `cond` holds; the rows
        in order, each row's rounds together."""
        rounds: list[np.ndarray] = []
        active = np.arange(view.n)
        k = 0
        while len(active):
            k += 1
            if k % 64 == 0:
                self._check_cancelled(cond.line, cond.column)
            test = with_iterno(cond, ast.Literal(cond.line, cond.column, float(k)))
            sub = view.subset(active)
            holds = _true_rows(self._evaluate(test, sub, interp), sub.n)
            active = active[holds]
            rounds.append(active)
        at = np.concatenate(rounds) if rounds else np.empty(0, dtype=np.int64)
        iterno = np.concatenate([np.full(len(r), i, dtype=np.int32) for i, r in enumerate(rounds)])
        if not len(rounds):
            iterno = np.empty(0, dtype=np.int32)
        order = np.argsort(at, kind="stable")
        out = view.subset(at[order])
        out.parts[_ITER] = Column(Values(np.arange(1.0, k + 1)), iterno[order])
        return out

    def _filter(
        self,
        stmt: ast.Load,
        where: ast.Expr,
        view: _Rows,
        interp: Interpretation,
        exprs: list[ast.Expr | None],
    ) -> _Rows:
        """WHERE: the view's rows whose condition is true. Exists(F, …) sees F's values loaded
        so far, and those of this LOAD's rows before it that were kept."""
        calls = [e for e in post_order(where) if isinstance(e, ast.Call) and e.name == "EXISTS"]
        if not calls:
            return view.subset(_true_rows(self._evaluate(where, view, interp), view.n))
        tests = self._exists_tests(stmt, calls, view, interp, exprs)
        test = replaced_all(
            where,
            {id(c): ast.FieldRef(c.line, c.column, f"{_EXISTS}{k}") for k, c in enumerate(calls)},
        )
        found = [prior.copy() for prior, _, _ in tests]
        kept = np.zeros(view.n, dtype=bool)
        here = np.arange(view.n)
        while True:
            # Rows after the first depend on which rows before them are kept: repeat until no
            # row changes (each round settles at least the first row still open).
            for k, value in enumerate(found):
                view.parts[f"{_EXISTS}{k}"] = _truth_column(value)
            now = np.zeros(view.n, dtype=bool)
            now[_true_rows(self._evaluate(test, view, interp), view.n)] = True
            if (now == kept).all() and found:
                break
            kept = now
            changed = False
            for k, (prior, mine, keys) in enumerate(tests):
                if mine is None:
                    continue
                value = prior | (_first_rows(mine, kept, keys) < here)
                changed |= bool((value != found[k]).any())
                found[k] = value
            if not changed:
                break
        for k in range(len(calls)):
            view.parts.pop(f"{_EXISTS}{k}", None)
        return view.subset(np.flatnonzero(kept))

    def _exists_tests(
        self,
        stmt: ast.Load,
        calls: list[ast.Call],
        view: _Rows,
        interp: Interpretation,
        exprs: list[ast.Expr | None],
    ) -> list[tuple[np.ndarray, np.ndarray | None, np.ndarray]]:
        """For each Exists(F, v) call: whether each row's v was loaded into F before this LOAD;
        and, when this LOAD loads F, the key of each row's F and of its v (shared keys)."""
        out: list[tuple[np.ndarray, np.ndarray | None, np.ndarray]] = []
        for call in calls:
            field_name = field_name_arg(call)
            value = self._evaluate(call.args[1], view, interp)
            prior = self._loaded_before(field_name, value)
            own: ast.Expr | None = None
            for item, expr in zip(stmt.fields, exprs, strict=True):
                if expr is None and field_name in view.source.fields:
                    own = ast.FieldRef(call.line, call.column, field_name)
                elif expr is not None and item.name == field_name:
                    own = expr
            if own is None or any(
                isinstance(e, ast.Call) and e.name in ("EXISTS", "PEEK", "PREVIOUS")
                for e in walk(own)
            ):
                out.append((prior, None, np.zeros(0, dtype=np.int64)))
                continue
            (mine, keys), _ = row_keys([self._evaluate(own, view, interp), value])
            out.append((prior, mine, keys))
        return out

    def _row_functions(
        self, stmt: ast.Load, exprs: list[ast.Expr | None], view: _Rows, interp: Interpretation
    ) -> tuple[list[ast.Expr | None], _Rows]:
        """Previous(x) (x of the row before, NULL for the first), Exists(F, v) (v among F's
        values loaded before this row) and Peek(F) / Peek(F, -k) of this LOAD's own rows,
        each replaced by a column of its values (innermost first)."""
        k = 0
        while True:
            call = next(
                (
                    e
                    for x in exprs
                    if x is not None
                    for e in post_order(x)
                    if isinstance(e, ast.Call) and e.name in ("PREVIOUS", "EXISTS")
                ),
                None,
            )
            if call is None:
                return exprs, view
            if call.name == "PREVIOUS":
                if len(call.args) != 1:
                    raise ScriptError("Previous takes one argument", call.line, call.column)
                col = self._evaluate(call.args[0], view, interp)
                part = take_or_null(col, np.arange(-1, view.n - 1))
            else:
                ((prior, mine, keys),) = self._exists_tests(stmt, [call], view, interp, exprs)
                value = prior
                if mine is not None:
                    everyone = np.ones(view.n, dtype=bool)
                    value = prior | (_first_rows(mine, everyone, keys) < np.arange(view.n))
                part = _truth_column(value)
            name = f"{_PART}r{k}"
            k += 1
            view.parts[name] = part
            ref = ast.FieldRef(call.line, call.column, name)
            exprs = [None if x is None else replaced(x, call, ref) for x in exprs]

    def _grouped(
        self,
        stmt: ast.Load,
        exprs: list[ast.Expr | None],
        view: _Rows,
        name: str,
        interp: Interpretation,
    ) -> Frame:
        """GROUP BY (or aggregations over all rows without it): one row per group; the fields
        are aggregations of the group's rows and expressions of the GROUP BY fields."""
        source = view.source
        for f in stmt.group_by:
            if f not in source.fields and f not in view.parts:
                raise ScriptError(f"field not found: {f}", stmt.line, stmt.column)
        keys = []
        for f in stmt.group_by:
            col, at = view.column(f)
            keys.append(col if at is None else col.take(at))
        if keys:
            groups, reps = group_rows(keys)
        else:
            groups, reps = Groups(np.zeros(view.n, dtype=np.int64), 1), []
        group_columns = {
            f: Column(col.symbols, rep.astype(np.int32))
            for f, col, rep in zip(stmt.group_by, keys, reps, strict=True)
        }
        out: dict[str, Column] = {}
        for item, expr in zip(stmt.fields, exprs, strict=True):
            if expr is None:
                raise ScriptError(
                    "LOAD * cannot be grouped: name the fields", stmt.line, stmt.column
                )
            env = dict(group_columns)
            replace: dict[int, ast.Expr] = {}
            for k, call in enumerate(aggregations(expr)):
                env[f"{_AGG}{k}"] = Column(
                    self._aggregate(call, view, groups, interp),
                    np.arange(groups.count, dtype=np.int32),
                )
                replace[id(call)] = ast.FieldRef(call.line, call.column, f"{_AGG}{k}")
            rewritten = replaced_all(expr, replace)
            for ref in field_refs(rewritten):
                if ref.name not in env:
                    raise ScriptError(
                        f"field {ref.name} is neither aggregated nor in GROUP BY",
                        ref.line,
                        ref.column,
                    )
            per_group = _Rows(Frame(name, groups.count, env))
            out[item.name] = self._evaluate(rewritten, per_group, interp)
        return Frame(name, groups.count, out)

    def _aggregate(
        self, call: ast.Call, view: _Rows, groups: Groups, interp: Interpretation
    ) -> Values:
        """One aggregation's value per group."""
        most = 3 if call.name == "CONCAT" else 1
        if not 1 <= len(call.args) <= most:
            raise ScriptError(
                f"{call.name} takes {'1..3 arguments' if most == 3 else 'one argument'} here",
                call.line,
                call.column,
            )
        for arg in call.args:
            inner = aggregations(arg)
            if inner:
                raise ScriptError(
                    f"{inner[0].name} inside {call.name}: aggregations do not nest",
                    inner[0].line,
                    inner[0].column,
                )
        col = self._evaluate(call.args[0], view, interp)
        numbers = numbers_of(col.symbols, interp) if len(col.symbols) else np.empty(0)
        extra = [self._evaluate(a, view, interp) for a in call.args[1:]]
        return aggregate(call.name, col, numbers, groups, call.distinct, extra)

    def _split_rows(
        self, exprs: list[ast.Expr | None], view: _Rows, interp: Interpretation
    ) -> tuple[list[ast.Expr | None], _Rows]:
        """SubField(text, delimiter) without an index in a LOAD's fields: each row becomes one
        row per part (the others' values repeated; several such calls give every combination),
        and the call reads its part. Innermost calls split first."""
        k = 0
        while True:
            call = next(
                (c for x in exprs if x is not None for c in splits(x)),
                None,
            )
            if call is None:
                return exprs, view
            text = self._evaluate(call.args[0], view, interp)
            delimiter = self._evaluate(call.args[1], view, interp)
            texts = text.symbols.with_null().text_list()
            delimiters = delimiter.symbols.with_null().text_list()
            t = np.where(text.codes < 0, len(texts) - 1, text.codes).astype(np.int64)
            d = np.where(delimiter.codes < 0, len(delimiters) - 1, delimiter.codes)
            # Each distinct (text, delimiter) is split once.
            pairs, inverse = np.unique(t * len(delimiters) + d, return_inverse=True)
            parts: list[str] = []
            first = np.zeros(len(pairs), dtype=np.int64)
            counts = np.zeros(len(pairs), dtype=np.int64)
            for i, pair in enumerate(pairs.tolist()):
                t_at, d_at = divmod(pair, len(delimiters))
                split = subfield_parts(texts[t_at], delimiters[d_at])
                first[i], counts[i] = len(parts), len(split)
                parts.extend(split)
            per_row = counts[inverse]
            index = np.repeat(np.arange(view.n), per_row)
            within = np.arange(len(index)) - np.repeat(np.cumsum(per_row) - per_row, per_row)
            codes = (first[inverse][index] + within).astype(np.int32)
            name = f"{_PART}{k}"
            k += 1
            view = view.expanded(index, name, Column(Values.of_texts(parts), codes))
            ref = ast.FieldRef(call.line, call.column, name)
            exprs = [None if x is None else replaced(x, call, ref) for x in exprs]

    def _evaluate(self, expr: ast.Expr, view: _Rows, interp: Interpretation) -> Column:
        """An expression's column over the view's rows."""
        source, rows = view.source, view.rows
        names = fields_of(expr)
        for f in names:
            if f not in source.fields and f not in view.parts:
                where = next(e for e in field_refs(expr) if e.name == f)
                raise ScriptError(f"field not found: {f}", where.line, where.column)
        n = view.n
        row_dependent = is_row_dependent(expr)
        if not names and not row_dependent:
            v = Evaluator({}, CallContext(1, interp, script=self))(expr)
            return Column(v, np.zeros(n, dtype=np.int32))
        if len(names) == 1 and not row_dependent:
            col, at = view.column(names[0])
            symbols = col.symbols.with_null()
            ctx = CallContext(len(symbols), interp, script=self)
            v = Evaluator({names[0]: symbols}, ctx)(expr).broadcast(len(symbols))
            if v.item(len(v) - 1) is None:
                # NULL rows stay NULL: the column maps the source's symbols one for one.
                per_symbol = v.take(np.arange(len(symbols) - 1))
                return col.mapped(per_symbol) if at is None else col.take(at).mapped(per_symbol)
            codes = col.codes if at is None else col.codes[at]
            return Column(v, np.where(codes < 0, len(symbols) - 1, codes).astype(np.int32))
        env: dict[str, Values] = {}
        for f in names:
            col, at = view.column(f)
            codes = col.codes if at is None else col.codes[at]
            env[f] = col.symbols.with_null().take(codes)
        recno = (np.arange(n) if rows is None else rows) + 1
        rowno = np.arange(view.row_base + 1, view.row_base + n + 1)
        v = Evaluator(env, CallContext(n, interp, recno, rowno, self))(expr).broadcast(n)
        return Column(v, np.arange(n, dtype=np.int32))

    def _default_name(self, stmt: ast.Load) -> str:
        src = stmt.source
        while isinstance(src, ast.Load):
            src = src.source
        if isinstance(src, ast.FileSource):
            return Path(src.path.rstrip("/")).stem or "Table"
        self._auto_names += 1
        return {
            ast.InlineSource: "INLINE",
            ast.ResidentSource: "Resident",
            ast.AutogenerateSource: "AutoGenerate",
        }.get(type(src), "Table") + ("" if self._auto_names == 1 else str(self._auto_names))

    def _load(self, stmt: ast.Load) -> None:
        name = stmt.label or self._default_name(stmt)

        def row_base(fields: list[str]) -> int:
            if stmt.join or stmt.keep or stmt.mapping or stmt.crosstable:
                return 0
            qualified = [self._qualified_name(name, f) for f in fields]
            target = self._concat_target(stmt, qualified)
            return 0 if target is None else self.tables[target].rows

        frame = self._rows_of(stmt, name, row_base)
        frame.name = name
        if stmt.crosstable is not None:
            attribute, data, qualifiers = stmt.crosstable
            if len(frame.fields) <= qualifiers:
                raise ScriptError(
                    f"CROSSTABLE needs more than {qualifiers} fields", stmt.line, stmt.column
                )
            frame = crosstable(frame, attribute, data, qualifiers)
        if stmt.interval_match:
            frame = self._interval_match(stmt, frame, self.interpretation())
        if stmt.mapping:
            self._mapping(stmt, name, frame)
            return
        frame = self._mapped(frame)
        frame = self._null_as_value(frame)
        if stmt.generic:
            for part in self._generic(stmt, name, frame):
                base, k = part.name, 0
                while part.name in self.tables:
                    k += 1
                    part.name = f"{base}-{k}"
                self.tables[part.name] = part.packed(self.cpu)
                self._last_table = part.name
                self.progress.log.append(f"{part.name} << {name} {part.rows} Lines fetched")
            return
        frame = self._qualified(frame)
        if stmt.join is not None or stmt.keep is not None:
            self._join(stmt, frame)
            if stmt.join is not None:
                return
            name = frame.name
        # Loaded tables are held packed, as the engine holds them; RESIDENT decodes what it uses.
        frame = frame.packed(self.cpu)
        target = None if stmt.keep else self._concat_target(stmt, frame.fields)
        if target is not None:
            self.tables[target] = concatenate_frames(self.tables[target], frame).packed(self.cpu)
            self._last_table = target
        else:
            base, k = name, 0
            while name in self.tables:
                k += 1
                name = f"{base}-{k}"
            frame.name = name
            self.tables[name] = frame
            self._last_table = name
        self.progress.log.append(f"{self._last_table} << {name} {frame.rows} Lines fetched")

    def _join(self, stmt: ast.Load, frame: Frame) -> None:
        """JOIN: the loaded rows joined into the target table (the last loaded one unless
        named). KEEP: both tables cut to the rows matching the other (the loaded one is then
        stored as a table of its own, `frame` changed in place)."""
        target = stmt.join_target or self._last_table
        word = "JOIN" if stmt.join else "KEEP"
        if target is None or target not in self.tables:
            raise ScriptError(
                f"{word}: table not found: {target or '(no table loaded yet)'}",
                stmt.line,
                stmt.column,
            )
        existing = self.tables[target]
        if stmt.join is not None:
            joined = join_frames(existing, frame, stmt.join)
            joined.name = target
            self.tables[target] = joined.packed(self.cpu)
            self._last_table = target
            self.progress.log.append(f"{target} << {frame.name} {frame.rows} Lines fetched")
            return
        in_left, in_right = keep_rows(existing, frame)
        if stmt.keep in ("right", "inner"):
            kept = filtered(existing, in_left)
            kept.name = target
            self.tables[target] = kept.packed(self.cpu)
        if stmt.keep in ("left", "inner"):
            cut = filtered(frame, in_right)
            frame.rows, frame._columns = cut.rows, {f: cut.column(f) for f in cut.fields}
            frame._native = None

    def _mapping(self, stmt: ast.Load, name: str, frame: Frame) -> None:
        """MAPPING LOAD: a table of two fields, values of the first mapped to the second (the
        first row of a value counts), kept for ApplyMap and MAP … USING, not in the model."""
        if len(frame.fields) < 2:
            raise ScriptError(
                "a MAPPING LOAD needs two fields: the values and what they map to",
                stmt.line,
                stmt.column,
            )
        keys = frame.column(frame.fields[0])
        values = frame.column(frame.fields[1])
        (ids,), _ = row_keys([keys])
        valid = np.flatnonzero(ids >= 0)
        _, first = np.unique(ids[valid], return_index=True)
        rows = valid[np.sort(first)]
        self.maps[name] = (
            keys.symbols.take(keys.codes[rows]),
            values.symbols.with_null().take(
                np.where(values.codes[rows] < 0, len(values.symbols), values.codes[rows])
            ),
        )
        self.progress.log.append(f"{name} << {name} {frame.rows} Lines fetched (mapping)")

    def _concat_target(self, stmt: ast.Load, fields: list[str]) -> str | None:
        """The table a LOAD of these fields is appended to, if any."""
        if stmt.concatenate == "concatenate":
            target = stmt.concat_target or self._last_table
            if target is None or target not in self.tables:
                raise ScriptError(
                    f"table not found: {target or '(no table loaded yet)'}", stmt.line, stmt.column
                )
            return target
        if stmt.concatenate == "auto":
            wanted = set(fields)
            return next((t for t, f in self.tables.items() if set(f.fields) == wanted), None)
        return None

    def _qualified_name(self, table: str, f: str) -> str:
        """A field's name as QUALIFY/UNQUALIFY in force load it into `table`."""

        def match(pats: list[str]) -> bool:
            return any(fnmatch.fnmatchcase(f, p) for p in pats)

        return f"{table}.{f}" if match(self._qualify) and not match(self._unqualify) else f

    def _qualified(self, frame: Frame) -> Frame:
        if not self._qualify:
            return frame
        picks = [(f, self._qualified_name(frame.name, f)) for f in frame.fields]
        if all(a == b for a, b in picks):
            return frame
        out = frame.with_fields(picks)
        out.name = frame.name
        return out

    # --- other statements
    def _store(self, stmt: ast.Store) -> None:
        frame = self._table(stmt.table, stmt)
        if stmt.fields:
            missing = [f for f in stmt.fields if f not in frame.fields]
            if missing:
                raise ScriptError(f"field not found: {missing[0]}", stmt.line, stmt.column)
            frame = frame.with_fields([(f, f) for f in stmt.fields])
            frame.name = stmt.table
        path = self.connections.resolve(stmt.path, stmt.line, stmt.column)
        try:
            writers = {"qvd": write_qvd, "parquet": write_parquet}
            writers.get(stmt.kind, write_txt)(frame, path)
        except ScriptError as exc:
            raise ScriptError(exc.message, stmt.line, stmt.column) from None
        except OSError as exc:
            raise ScriptError(
                f"cannot write {stmt.path!r}: {exc.strerror}", stmt.line, stmt.column
            ) from None

    def _drop(self, stmt: ast.Drop) -> None:
        if stmt.what == "table":
            for name in stmt.names:
                self._table(name, stmt)
                del self.tables[name]
                if self._last_table == name:
                    self._last_table = None
            return
        targets = list(stmt.tables) or list(self.tables)
        for name in stmt.names:
            found = False
            for t in targets:
                frame = self._table(t, stmt)
                if name in frame.fields:
                    found = True
                    kept = frame.with_fields([(f, f) for f in frame.fields if f != name])
                    kept.name = t
                    self.tables[t] = kept
            if not found:
                raise ScriptError(f"field not found: {name}", stmt.line, stmt.column)

    def _rename(self, stmt: ast.Rename) -> None:
        for old, new in stmt.pairs:
            if stmt.what == "table":
                frame = self._table(old, stmt)
                if new in self.tables:
                    raise ScriptError(f"a table named {new} exists already", stmt.line, stmt.column)
                frame.name = new
                self.tables = {(new if k == old else k): v for k, v in self.tables.items()}
                if self._last_table == old:
                    self._last_table = new
                continue
            found = False
            for t, frame in list(self.tables.items()):
                if old in frame.fields:
                    if new in frame.fields:
                        raise ScriptError(
                            f"table {t} has a field {new} already", stmt.line, stmt.column
                        )
                    found = True
                    renamed = frame.with_fields([(f, new if f == old else f) for f in frame.fields])
                    renamed.name = t
                    self.tables[t] = renamed
            if not found:
                raise ScriptError(f"field not found: {old}", stmt.line, stmt.column)

    def _section(self, access: bool) -> None:
        """Switches between the access part and the app's data (the tables a part loads are
        its own: RESIDENT, JOIN and CONCATENATE see only them)."""
        if access == self.in_access:
            return
        if access:
            self._data_tables, self.tables = self.tables, self.access_tables
        else:
            self.access_tables, self.tables = self.tables, self._data_tables
        self.in_access = access
        self._last_table = None

    def access_table(self) -> AccessTable | None:
        """The access table the script's section access loaded (its tables' rows, with field
        names and values upper-cased), or None."""
        frames = [f for f in self.access_tables.values() if f.fields and f.rows]
        if not frames:
            return None
        columns: dict[str, list[str]] = {}
        total = 0
        for frame in frames:
            names = {f.upper(): f for f in frame.fields}
            for name in names:
                columns.setdefault(name, [""] * total)
            for name, column in columns.items():
                if name in names:
                    col = frame.column(names[name])
                    texts = col.symbols.with_null().text_list()
                    column.extend(texts[c] or "" for c in col.codes.tolist())
                else:
                    column.extend([""] * frame.rows)
            total += frame.rows
        try:
            return AccessTable(columns)
        except _core.Error as exc:
            raise ScriptError(str(exc)) from None

    # --- the whole run
    def run(self) -> ReloadResult:
        """Runs the script and builds the model; ScriptError (line, column) when it fails."""
        started = time.thread_time_ns()
        self.statement_seconds = []
        try:
            self.statements(execute=True)
            self._section(False)
            access = self.access_table()
            builder = _core.ModelBuilder()
            tables = [frame.take_native(self.cpu) for frame in self.tables.values() if frame.fields]
            # The model's reload time: this thread's and the workers' time so far, then the
            # builder's own (it counts what it does itself).
            builder.charge_cpu(time.thread_time_ns() - started + self.cpu.ns)
            for table in tables:
                table.add_to(builder)
            if access is not None:
                access.add_to(builder)
            model = builder.build()
        except ScriptError as exc:
            self.progress.error = exc
            self.progress.finished = True
            raise
        except _core.Error as exc:
            err = ScriptError(str(exc))
            self.progress.error = err
            self.progress.finished = True
            raise err from None
        self.progress.finished = True
        cpu_ms = model.metadata()["reload_meta"]["cpu_time_spent_ms"]
        return ReloadResult(
            model,
            list(self.progress.log),
            cpu_ms,
            list(self.statement_seconds),
            self.annotations(),
        )

    def check(self) -> list[ScriptError]:
        """Syntax errors (at most the first, as parsing stops there); SET/LET are applied."""
        self.statement_seconds = []
        try:
            self.statements(execute=False)
        except ScriptError as exc:
            return [exc]
        return []


@dataclass
class _Rows:
    """The rows a LOAD computes: `source` rows at `rows` (all when None; a row repeats where a
    SubField split it), with the parts split off so far (already one per row)."""

    source: Frame
    rows: np.ndarray | None = None
    parts: dict[str, Column] = field(default_factory=dict)
    row_base: int = 0  # RowNo of the row before the first

    @property
    def n(self) -> int:
        return self.source.rows if self.rows is None else len(self.rows)

    def column(self, name: str) -> tuple[Column, np.ndarray | None]:
        """A field's column and the rows of it to read (None: all, in order)."""
        part = self.parts.get(name)
        if part is not None:
            return part, None
        return self.source.column(name), self.rows

    def subset(self, index: np.ndarray) -> _Rows:
        """These rows at `index` (row i of the result is row index[i] here)."""
        parts = {f: c.take(index) for f, c in self.parts.items()}
        return _Rows(
            self.source, index if self.rows is None else self.rows[index], parts, self.row_base
        )

    def expanded(self, index: np.ndarray, name: str, part: Column) -> _Rows:
        """These rows at `index` (row i of the result is row index[i] here), and one more part."""
        parts = {f: c.take(index) for f, c in self.parts.items()}
        parts[name] = part
        return _Rows(self.source, index if self.rows is None else self.rows[index], parts)


def _true_rows(col: Column, n: int) -> np.ndarray:
    """The rows where a condition's column is true (a number neither 0 nor missing)."""
    nums = col.symbols.nums
    if not len(nums):
        return np.empty(0, dtype=np.int64)
    codes = col.codes
    x = np.where(codes < 0, NAN, nums[np.maximum(codes, 0)])
    if len(x) != n:
        x = np.broadcast_to(x, (n,))
    return np.flatnonzero(~np.isnan(x) & (x != 0))


def _truth_column(truth: np.ndarray) -> Column:
    """A column of Qlik truth values (-1 true, 0 false)."""
    return Column(Values(np.array([0.0, -1.0])), truth.astype(np.int32))


def _first_rows(keys: np.ndarray, kept: np.ndarray, lookup: np.ndarray) -> np.ndarray:
    """For each row, the first kept row whose key equals its `lookup` key (the row count when
    there is none, or its lookup key is NULL)."""
    size = int(max(keys.max(initial=-1), lookup.max(initial=-1))) + 1
    first = np.full(size + 1, len(keys), dtype=np.int64)
    rows = np.flatnonzero(kept & (keys >= 0))
    uniq, at = np.unique(keys[rows], return_index=True)
    first[uniq] = rows[at]
    out: np.ndarray = first[np.where(lookup >= 0, lookup, size)]
    return out


def _sort_rank(symbols: Values) -> np.ndarray:
    """Each symbol's place in ORDER BY's order: numbers ascending, then texts (no case)."""
    nums = symbols.nums
    numeric = ~np.isnan(nums)
    texts = [(t or "").casefold() for t in symbols.text_list()]
    order = sorted(
        range(len(nums)), key=lambda i: (0, nums[i], "") if numeric[i] else (1, 0.0, texts[i])
    )
    rank = np.empty(len(nums), dtype=np.int64)
    rank[order] = np.arange(len(nums))
    return rank


__all__ = ["DEFAULTS", "Progress", "ReloadResult", "ScriptRunner"]
