"""A LOAD's rows: read from its source, mapped, filtered, split (SubField, WHILE/IterNo),
grouped, ordered, and its expressions evaluated over them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from assoc import _core
from assoc.script import syntax as ast
from assoc.script.connections import FolderConnections
from assoc.script.errors import ScriptError
from assoc.script.expressions import (
    Evaluator,
    fields_of,
    is_row_dependent,
    walk,
)
from assoc.script.files import inline_frame, read_file
from assoc.script.functions import CallContext, numbers_of, subfield_parts
from assoc.script.numbers import Interpretation
from assoc.script.parser import AGGREGATIONS
from assoc.script.peeks import own_peeks
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
    group_rows,
    row_keys,
    take_or_null,
)
from assoc.script.tables import Column, Frame
from assoc.script.values import NAN, Values

# A LOAD's rows that are about to be computed, and the name of a row-split SubField's parts
# (and of the other columns a LOAD computes for itself: IterNo, Exists, aggregations).
RowBase = Callable[[list[str]], int]
_PART = "\0part"
_ITER = "\0iterno"
_EXISTS = "\0exists"
_AGG = "\0agg"


class LoadRows:
    """The rows of a LOAD: read from its source, mapped, filtered, split, grouped, ordered
    and its expressions evaluated over them; mixed into the script runner, which gives the
    tables loaded so far, the variables and the cancellation check."""

    connections: FolderConnections
    cpu: _core.CpuAccount

    if TYPE_CHECKING:

        def _check_cancelled(self, line: int = 0, column: int = 0) -> None: ...

        def _constant(self, expr: ast.Expr) -> Values: ...

        def _loaded_before(self, field_name: str, value: Column) -> np.ndarray: ...

        def _table(self, name: str, stmt: ast.Statement) -> Frame: ...

        def interpretation(self) -> Interpretation: ...

    def _rows_of(
        self,
        stmt: ast.Load,
        name: str,
        row_base: RowBase | None = None,
        records: int | None = None,
    ) -> Frame:
        """A LOAD's rows: its source, filtered, its fields computed, made distinct.
        `row_base(fields)` is how many rows the table they go to holds already (RowNo counts
        on from there); `records`, how many records of its file are needed at most."""
        src = stmt.source
        interp = self.interpretation()
        if isinstance(src, ast.FileSource):
            path = self.connections.resolve(src.path, stmt.line, stmt.column)
            if not path.is_file():
                raise ScriptError(
                    f"cannot open file {src.path!r}: no such file", stmt.line, stmt.column
                )
            try:
                source = read_file(path, src.format, name, interp, self.cpu, records)
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
