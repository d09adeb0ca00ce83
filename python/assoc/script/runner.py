"""Runs a load script statement by statement and builds the app's model."""

from __future__ import annotations

import dataclasses
import fnmatch
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from assoc import _core
from assoc.script import syntax as ast
from assoc.script.connections import FolderConnections
from assoc.script.errors import ScriptError
from assoc.script.expressions import (
    Evaluator,
    constant_value,
    fields_of,
    is_row_dependent,
    walk,
)
from assoc.script.files import inline_frame, read_file, write_parquet, write_qvd, write_txt
from assoc.script.functions import CallContext, subfield_parts
from assoc.script.lexer import Lexer, Positions, Statement, expand_variables, split_statements
from assoc.script.numbers import DEFAULTS, Interpretation
from assoc.script.parser import Parser, parse_statement
from assoc.script.tables import Column, Frame, concatenate_frames
from assoc.script.values import Values

# A LOAD's rows that are about to be computed, and the name of a row-split SubField's parts.
RowBase = Callable[[list[str]], int]
_PART = "\0part"


@dataclass
class ReloadResult:
    """What a finished reload gives: the model, its log and the CPU time it took."""

    model: _core.DataModel
    log: list[str] = field(default_factory=list)
    cpu_time_ms: float = 0.0
    statement_seconds: list[tuple[int, float]] = field(default_factory=list)  # (line, wall seconds)


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


class _Exit(Exception):
    """EXIT SCRIPT reached."""


class ScriptRunner:
    """One run of a script over folder connections, starting from the given variables."""

    def __init__(
        self,
        text: str,
        connections: FolderConnections | None = None,
        variables: Mapping[str, str] | None = None,
    ) -> None:
        self.text = text
        self.connections = connections or FolderConnections()
        self.variables: dict[str, str] = dict(variables or {})
        self.tables: dict[str, Frame] = {}
        self.progress = Progress()
        self._qualify: list[str] = []
        self._unqualify: list[str] = []
        self._last_table: str | None = None
        self._positions = Positions(text)
        self._auto_names = 0
        self.statement_seconds: list[tuple[int, float]] = []
        # Worker threads' CPU time; the runner's own thread is measured with thread_time.
        self.cpu = _core.CpuAccount()

    # --- statements
    def statements(self, execute: bool) -> None:
        """Parses every statement; runs each when `execute` (else only SET/LET take effect)."""
        raw = split_statements(self.text, self._positions)
        self.progress.statements_total = len(raw)
        cursor = _Cursor(raw)
        while cursor.at < len(raw):
            cursor.preceding = 0
            stmt = self._parse(raw[cursor.at], lambda: self._following(cursor))
            started = time.perf_counter()
            if stmt is not None:
                if execute or isinstance(stmt, ast.SetVariable):
                    try:
                        self._run(stmt)
                    except _Exit:
                        self.progress.statements_done = len(raw)
                        return
                self.statement_seconds.append((stmt.line, time.perf_counter() - started))
            cursor.at += 1
            self.progress.statements_done = cursor.at

    def _following(self, cursor: _Cursor) -> ast.Load:
        """The statement after the cursor, which must be a LOAD (a preceding LOAD's source)."""
        place = self._place(cursor.raw[cursor.at].offset)
        cursor.preceding += 1
        if cursor.preceding > MAX_PRECEDING_LOADS:
            raise ScriptError(f"more than {MAX_PRECEDING_LOADS} preceding LOADs in a row", *place)
        cursor.at += 1
        if cursor.at >= len(cursor.raw):
            raise ScriptError("a LOAD without a source must be followed by a LOAD", *place)
        stmt = self._parse(cursor.raw[cursor.at], lambda: self._following(cursor))
        if not isinstance(stmt, ast.Load):
            raise ScriptError(
                "a LOAD without a source must be followed by a LOAD",
                *self._place(cursor.raw[cursor.at].offset),
            )
        return stmt

    def _place(self, offset: int) -> tuple[int, int]:
        return self._positions.line_column(offset)

    def _parse(self, raw: Statement, following: Callable[[], ast.Load]) -> ast.Statement | None:
        try:
            text, spans = expand_variables(raw.text, self._lookup)
        except ScriptError as exc:
            raise ScriptError(exc.message, *self._place(raw.offset)) from None

        def where(offset: int) -> tuple[int, int]:
            # Offsets after an expansion map to the end of the `$(…)` it replaced.
            original = offset
            for expanded_at, source_at in spans:
                if offset >= expanded_at:
                    original = source_at + (offset - expanded_at)
            return self._place(raw.offset + min(original, len(raw.text)))

        return parse_statement(Lexer(text, where), following)

    def _lookup(self, name: str) -> str:
        """The text `$(name)` stands for: a variable's value, or `$(=expr)`'s value."""
        name = expand_variables(name, self._lookup)[0]
        if name.startswith("="):
            parser = Parser(Lexer(name[1:], lambda _o: (0, 0)))
            expr = parser.expression()
            parser.end()
            v = constant_value(expr, self.interpretation())
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
                v = constant_value(stmt.expr, self.interpretation())
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
        elif isinstance(stmt, ast.Trace):
            self.progress.log.append(stmt.text)
        elif isinstance(stmt, ast.ExitScript):
            raise _Exit

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
            count = constant_value(src.count, interp).nums[0]
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
        if star_only and stmt.where is None and not stmt.distinct:
            if not isinstance(stmt.source, ast.ResidentSource):
                return source  # read for this statement alone: nothing to share
            if source.is_native:
                return source.with_fields([(f, f) for f in source.fields])
            return Frame(name, source.rows, {f: source.column(f) for f in source.fields})
        rows: np.ndarray | None = None
        if stmt.where is not None:
            mask = self._evaluate(stmt.where, _Rows(source), interp)
            nums = (
                mask.symbols.nums[np.where(mask.codes < 0, len(mask.symbols) - 1, mask.codes)]
                if len(mask.symbols) > 1
                else np.full(source.rows, mask.symbols.nums[0])
            )
            rows = np.flatnonzero(~np.isnan(nums) & (nums != 0))
        names: list[str] = []
        for item in stmt.fields:
            for f in source.fields if item.expr is None else [item.name]:
                if f in names:
                    raise ScriptError(f"field {f} is loaded twice", stmt.line, stmt.column)
                names.append(f)
        exprs = [item.expr for item in stmt.fields]
        view = _Rows(source, rows)
        if any(_splits(e) for e in exprs if e is not None):
            exprs, view = self._split_rows(exprs, view, interp)
        uses_rowno = any(
            isinstance(e, ast.Call) and e.name == "ROWNO"
            for x in exprs
            if x is not None
            for e in walk(x)
        )
        view.row_base = row_base(names) if row_base is not None and uses_rowno else 0
        n = view.n
        columns: dict[str, Column] = {}
        for item, expr in zip(stmt.fields, exprs, strict=True):
            if expr is None:
                for f in source.fields:
                    col = source.column(f)
                    columns[f] = col if view.rows is None else col.take(view.rows)
            else:
                columns[item.name] = self._evaluate(expr, view, interp)
        frame = Frame(name, n, columns)
        if stmt.distinct and n:
            stacked = (
                np.stack([c.codes for c in columns.values()], axis=1)
                if columns
                else np.zeros((n, 0))
            )
            _, first = np.unique(stacked, axis=0, return_index=True)
            keep = np.sort(first)
            frame = Frame(name, len(keep), {f: c.take(keep) for f, c in columns.items()})
        return frame

    def _split_rows(
        self, exprs: list[ast.Expr | None], view: _Rows, interp: Interpretation
    ) -> tuple[list[ast.Expr | None], _Rows]:
        """SubField(text, delimiter) without an index in a LOAD's fields: each row becomes one
        row per part (the others' values repeated; several such calls give every combination),
        and the call reads its part. Innermost calls split first."""
        k = 0
        while True:
            call = next(
                (c for x in exprs if x is not None for c in _splits(x)),
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
            exprs = [None if x is None else _replaced(x, call, ref) for x in exprs]

    def _evaluate(self, expr: ast.Expr, view: _Rows, interp: Interpretation) -> Column:
        """An expression's column over the view's rows."""
        source, rows = view.source, view.rows
        names = fields_of(expr)
        for f in names:
            if f not in source.fields and f not in view.parts:
                where = next(e for e in _field_refs(expr) if e.name == f)
                raise ScriptError(f"field not found: {f}", where.line, where.column)
        n = view.n
        row_dependent = is_row_dependent(expr)
        if not names and not row_dependent:
            v = Evaluator({}, CallContext(1, interp))(expr)
            return Column(v, np.zeros(n, dtype=np.int32))
        if len(names) == 1 and not row_dependent:
            col, at = view.column(names[0])
            symbols = col.symbols.with_null()
            ctx = CallContext(len(symbols), interp)
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
        v = Evaluator(env, CallContext(n, interp, recno, rowno))(expr).broadcast(n)
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
            qualified = [self._qualified_name(name, f) for f in fields]
            target = self._concat_target(stmt, qualified)
            return 0 if target is None else self.tables[target].rows

        frame = self._rows_of(stmt, name, row_base)
        frame.name = name
        frame = self._qualified(frame)
        # Loaded tables are held packed, as the engine holds them; RESIDENT decodes what it uses.
        frame = frame.packed(self.cpu)
        target = self._concat_target(stmt, frame.fields)
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

    # --- the whole run
    def run(self) -> ReloadResult:
        """Runs the script and builds the model; ScriptError (line, column) when it fails."""
        started = time.thread_time_ns()
        self.statement_seconds = []
        try:
            self.statements(execute=True)
            builder = _core.ModelBuilder()
            tables = [frame.take_native(self.cpu) for frame in self.tables.values() if frame.fields]
            # The model's reload time: this thread's and the workers' time so far, then the
            # builder's own (it counts what it does itself).
            builder.charge_cpu(time.thread_time_ns() - started + self.cpu.ns)
            for table in tables:
                table.add_to(builder)
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
        return ReloadResult(model, list(self.progress.log), cpu_ms, list(self.statement_seconds))

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

    def expanded(self, index: np.ndarray, name: str, part: Column) -> _Rows:
        """These rows at `index` (row i of the result is row index[i] here), and one more part."""
        parts = {f: c.take(index) for f, c in self.parts.items()}
        parts[name] = part
        return _Rows(self.source, index if self.rows is None else self.rows[index], parts)


def _children(expr: ast.Expr) -> tuple[ast.Expr, ...]:
    """The expressions directly inside `expr`, left to right."""
    if isinstance(expr, ast.Call):
        return expr.args
    if isinstance(expr, ast.Unary):
        return (expr.operand,)
    if isinstance(expr, ast.Binary):
        return (expr.left, expr.right)
    return ()


def _post_order(expr: ast.Expr) -> Iterator[ast.Expr]:
    """Every expression inside `expr`, children before their parent, left to right (a loop
    over a stack, as `walk` is: operator chains have no length limit)."""
    stack: list[tuple[ast.Expr, bool]] = [(expr, False)]
    while stack:
        e, children_done = stack.pop()
        if children_done:
            yield e
            continue
        stack.append((e, True))
        stack.extend((child, False) for child in reversed(_children(e)))


def _splits(expr: ast.Expr) -> list[ast.Call]:
    """The SubField calls without an index in an expression, innermost first."""
    return [
        e
        for e in _post_order(expr)
        if isinstance(e, ast.Call) and e.name == "SUBFIELD" and len(e.args) == 2
    ]


def _replaced(expr: ast.Expr, old: ast.Expr, new: ast.Expr) -> ast.Expr:
    """The expression with the node `old` (that very node) replaced by `new`."""
    rebuilt: dict[int, ast.Expr] = {}
    for e in _post_order(expr):
        if e is old:
            rebuilt[id(e)] = new
        elif isinstance(e, ast.Call):
            rebuilt[id(e)] = dataclasses.replace(e, args=tuple(rebuilt[id(a)] for a in e.args))
        elif isinstance(e, ast.Unary):
            rebuilt[id(e)] = dataclasses.replace(e, operand=rebuilt[id(e.operand)])
        elif isinstance(e, ast.Binary):
            rebuilt[id(e)] = dataclasses.replace(
                e, left=rebuilt[id(e.left)], right=rebuilt[id(e.right)]
            )
        else:
            rebuilt[id(e)] = e
    return rebuilt[id(expr)]


def _field_refs(expr: ast.Expr) -> list[ast.FieldRef]:
    """The field references in an expression."""
    return [e for e in walk(expr) if isinstance(e, ast.FieldRef)]


__all__ = ["DEFAULTS", "Progress", "ReloadResult", "ScriptRunner"]
