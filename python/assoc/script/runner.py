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
    constant_value,
)
from assoc.script.files import write_parquet, write_qvd, write_txt
from assoc.script.flow import ControlFlow, Exit, RunFrame, no_following
from assoc.script.functions import numbers_of
from assoc.script.lexer import (
    Lexer,
    Positions,
    Statement,
    control_word,
    expand_variables,
    split_statements,
)
from assoc.script.loaded_tables import LoadedTables
from assoc.script.numbers import DEFAULTS, Interpretation, interpretation_variables
from assoc.script.parser import Parser, parse_statement
from assoc.script.reshape import Annotations, Reshaping
from assoc.script.rows import LoadRows
from assoc.script.tableops import (
    crosstable,
    filtered,
    join_frames,
    keep_rows,
    row_keys,
)
from assoc.script.tables import Frame, concatenate_frames
from assoc.script.values import Values


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


class ScriptRunner(ControlFlow, Reshaping, LoadedTables, LoadRows):
    """One run of a script over folder connections, starting from the given variables."""

    def __init__(
        self,
        text: str,
        connections: FolderConnections | None = None,
        variables: Mapping[str, str] | None = None,
        fetch_limit: int | None = None,
        cancelled: threading.Event | None = None,
    ) -> None:
        super().__init__()
        self.text = text
        # A limited load (QIX DoReload in debug mode after SetFetchLimit): at most this many
        # records each LOAD, as if every LOAD had FIRST n.
        self.fetch_limit = fetch_limit
        self.connections = connections or FolderConnections()
        self.variables: dict[str, str] = dict(variables or {})
        self.progress = Progress()
        self._qualify: list[str] = []
        self._unqualify: list[str] = []
        self._subs = {}
        # Set (here by `cancel`, or by whoever passed it) to stop before the next statement.
        self._cancelled = cancelled if cancelled is not None else threading.Event()
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
        self._binary_annotations = Annotations()
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

        limit = self._record_limit(stmt)
        records = limit if self._keeps_each_record(stmt) else None
        frame = self._first(self._rows_of(stmt, name, row_base, records), limit)
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

    def _record_limit(self, stmt: ast.Load) -> int | None:
        """The most records the LOAD keeps: FIRST n, and the fetch limit (None: no limit)."""
        limit = self.fetch_limit
        if stmt.first is not None:
            count = numbers_of(self._constant(stmt.first), self.interpretation())[0]
            if not count >= 0 or count != int(count):
                raise ScriptError("FIRST needs a whole number of records", stmt.line, stmt.column)
            limit = int(count) if limit is None else min(limit, int(count))
        return limit

    @staticmethod
    def _keeps_each_record(stmt: ast.Load) -> bool:
        """Whether each record of the LOAD's file makes one it keeps (no WHERE, WHILE,
        DISTINCT, GROUP BY or ORDER BY, and the file its own source): then its record limit
        is all of the file it needs."""
        return (
            isinstance(stmt.source, ast.FileSource)
            and stmt.where is None
            and stmt.while_ is None
            and not (stmt.distinct or stmt.group_by or stmt.order_by)
        )

    @staticmethod
    def _first(frame: Frame, limit: int | None) -> Frame:
        """The LOAD's first records: at most `limit` (FIRST n, the fetch limit) of them."""
        if limit is None or frame.rows <= limit:
            return frame
        return filtered(frame, np.arange(frame.rows) < limit)

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
            joined = join_frames(existing, frame, stmt.join, self.cpu)
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
            if stmt.kind == "qvd":
                # Tags and comments given so far go into the header, as Qlik's STORE does,
                # and $key on the fields another table holds too.
                annotations = self.annotations().only(set(frame.fields), {frame.name})
                for name, other in self.tables.items():
                    if name == stmt.table:
                        continue
                    for f in set(frame.fields) & set(other.fields):
                        tags = annotations.field_tags.setdefault(f, [])
                        if "$key" not in tags:
                            tags.append("$key")
                write_qvd(frame, path, annotations)
            else:
                {"parquet": write_parquet}.get(stmt.kind, write_txt)(frame, path)
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
            # The charts read and write numbers and dates as the script left them.
            builder.set_interpretation(interpretation_variables(self.variables))
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


__all__ = ["DEFAULTS", "Progress", "ReloadResult", "ScriptRunner"]
