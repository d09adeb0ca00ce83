"""Peek of a LOAD's own rows: `Peek('F', -1)` in a LOAD that builds F reads F of the row this
LOAD wrote before (running totals, carried values). A field whose expression peeks at other
fields of the LOAD is computed after them, their rows shifted; a field that peeks at itself
is computed row after row: as a linear recurrence when the expression is one in the value it
peeks at (checked over all rows), else one row at a time."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import numpy as np

from assoc.script import syntax as ast
from assoc.script.errors import ScriptError
from assoc.script.expressions import walk
from assoc.script.rewrites import replaced_all
from assoc.script.tables import Column
from assoc.script.values import NAN, Values
from assoc.script.values import concatenate as concatenate_values

if TYPE_CHECKING:
    from assoc.script.rows import _Rows

_PEEK = "\0peek"


class Evaluate(Protocol):
    def __call__(self, expr: ast.Expr, view: _Rows) -> Column: ...


def _own_call(call: ast.Expr, name: str, outputs: set[str]) -> tuple[str, int, bool] | None:
    """(field, row, relative) when `call` is a Peek of this LOAD's own rows: the field is one
    the LOAD makes, the table is not given or is this LOAD's, the row a constant (-1 when not
    given; negative: that many rows back, relative)."""
    if not isinstance(call, ast.Call) or call.name != "PEEK" or not call.args:
        return None
    first = call.args[0]
    if not isinstance(first, ast.Literal) or not isinstance(first.value, str):
        return None
    if first.value not in outputs:
        return None
    if len(call.args) > 2:
        table = call.args[2]
        if not (isinstance(table, ast.Literal) and table.value == name):
            return None
    row = -1
    if len(call.args) > 1:
        arg = call.args[1]
        sign = 1
        if isinstance(arg, ast.Unary) and arg.op == "-":
            arg, sign = arg.operand, -1
        if not isinstance(arg, ast.Literal) or not isinstance(arg.value, float):
            raise ScriptError(
                "Peek of the LOAD's own rows needs a constant row number", call.line, call.column
            )
        if arg.value != int(arg.value):
            return None
        row = sign * int(arg.value)
    return first.value, row, row < 0


def _source_row(row: int, relative: bool, n: int) -> np.ndarray:
    """For each of n rows, the row a Peek reads (-1: none, NULL)."""
    here = np.arange(n)
    if relative:
        return np.where(here + row >= 0, here + row, -1)
    return np.where(row < here, row, -1)


def _shifted(col: Column, rows: np.ndarray) -> Column:
    return Column(col.symbols, np.where(rows >= 0, col.codes[np.maximum(rows, 0)], -1))


def own_peeks(
    names: list[str],
    exprs: list[ast.Expr | None],
    label: str,
    view: _Rows,
    evaluate: Evaluate,
    check_cancelled: Callable[[], None],
) -> list[ast.Expr | None]:
    """The LOAD's field expressions with the fields that peek at the LOAD's own rows computed
    into parts of the view (their expressions become references to those parts)."""
    outputs = {n for n, e in zip(names, exprs, strict=True) if e is not None}
    if any(e is None for e in exprs):  # `*`: the source's fields are the LOAD's too
        outputs |= set(view.source.fields)
    calls: dict[int, list[tuple[ast.Call, str, int, bool]]] = {}
    for k, expr in enumerate(exprs):
        if expr is None:
            continue
        for e in walk(expr):
            own = _own_call(e, label, outputs)
            if own is not None:
                assert isinstance(e, ast.Call)
                calls.setdefault(k, []).append((e, *own))
    if not calls:
        return exprs
    exprs = list(exprs)
    index = {n: k for k, n in enumerate(names) if exprs[k] is not None}
    done: dict[str, Column] = {}
    pending = dict(calls)
    part = 0

    def computed(field: str) -> Column:
        if field not in done and field not in index:  # a field `*` loads
            col, at = view.column(field)
            done[field] = col if at is None else col.take(at)
        if field not in done:
            k = index[field]
            expr = exprs[k]
            assert expr is not None
            done[field] = evaluate(expr, view)
        return done[field]

    while pending:
        # A field whose peeks (at other fields) all read fields without peeks of their own, or
        # ones already computed; else a field that peeks at itself (and those only).
        progress = False
        for k, found in list(pending.items()):
            others = {f for _, f, _, _ in found if f != names[k]}
            if any(f in index and index[f] in pending for f in others):
                continue
            self_peeks = [c for c in found if c[1] == names[k]]
            replace: dict[int, ast.Expr] = {}
            for call, field, row, relative in found:
                if field == names[k]:
                    continue
                pname = f"{_PEEK}{part}"
                part += 1
                view.parts[pname] = _shifted(computed(field), _source_row(row, relative, view.n))
                replace[id(call)] = ast.FieldRef(call.line, call.column, pname)
            expr = exprs[k]
            assert expr is not None
            expr = replaced_all(expr, replace) if replace else expr
            if self_peeks:
                column = _recurrence(expr, self_peeks, view, evaluate, check_cancelled, part)
                part += len(self_peeks)
            else:
                column = evaluate(expr, view)
            pname = f"{_PEEK}{part}"
            part += 1
            view.parts[pname] = column
            done[names[k]] = column
            exprs[k] = ast.FieldRef(expr.line, expr.column, pname)
            del pending[k]
            progress = True
        if not progress:
            k = next(iter(pending))
            call = pending[k][0][0]
            raise ScriptError(
                "fields that Peek at each other in one LOAD: compute one of them in a LOAD before",
                call.line,
                call.column,
            )
    return exprs


def _recurrence(
    expr: ast.Expr,
    peeks: list[tuple[ast.Call, str, int, bool]],
    view: _Rows,
    evaluate: Evaluate,
    check_cancelled: Callable[[], None],
    part: int,
) -> Column:
    """A field whose expression peeks at its own earlier rows."""
    n = view.n
    refs: dict[int, ast.Expr] = {}
    for j, (call, _, _, _) in enumerate(peeks):
        refs[id(call)] = ast.FieldRef(call.line, call.column, f"{_PEEK}{part + j}")
    rewritten = replaced_all(expr, refs)
    names = [f"{_PEEK}{part + j}" for j in range(len(peeks))]
    sources = [_source_row(row, relative, n) for _, _, row, relative in peeks]

    def with_parts(values: list[Column]) -> Column:
        for pname, col in zip(names, values, strict=True):
            view.parts[pname] = col
        out = evaluate(rewritten, view)
        for pname in names:
            view.parts.pop(pname, None)
        return out

    def constant(x: float) -> Column:
        return Column(Values(np.array([x])), np.zeros(n, dtype=np.int32))

    def row_values(col: Column) -> Values:
        return col.symbols.with_null().take(np.where(col.codes < 0, len(col.symbols), col.codes))

    if n == 0:
        return with_parts([constant(NAN) for _ in names])
    # A linear recurrence v[i] = a[i] * v[src] + b[i] (NULL before the first row: e[i]),
    # guessed from three probes and then checked over all rows at once.
    if len({(row, relative) for _, _, row, relative in peeks}) == 1 and peeks[0][3]:
        probes = [row_values(with_parts([constant(x)] * len(names))) for x in (NAN, 0.0, 1.0)]
        if all(p.texts is None or not p.has_text().any() for p in probes):
            e, b, a = probes[0].nums, probes[1].nums, probes[2].nums - probes[1].nums
            src = sources[0]
            out = np.full(n, NAN)
            e_l, a_l, b_l, s_l = e.tolist(), a.tolist(), b.tolist(), src.tolist()
            values = out.tolist()
            for i in range(n):
                s = s_l[i]
                prev = values[s] if s >= 0 else NAN
                values[i] = e_l[i] if prev != prev else a_l[i] * prev + b_l[i]
            out = np.array(values, dtype=np.float64)
            guess = Column(Values(out), np.arange(n, dtype=np.int32))
            check = with_parts([_shifted(guess, src)] * len(names))
            got = row_values(check)
            if np.array_equal(got.nums, out, equal_nan=True):
                return check
    # One row at a time.
    rows: list[Values] = []
    for i in range(n):
        if i % 1024 == 0:
            check_cancelled()
        parts = []
        for s in (src[i] for src in sources):
            v = rows[s] if 0 <= s < i else Values.nulls(1)
            parts.append(Column(v, np.zeros(1, dtype=np.int32)))
        sub = view.subset(np.array([i]))
        sub.row_base = view.row_base + i
        for pname, col in zip(names, parts, strict=True):
            sub.parts[pname] = col
        rows.append(row_values(evaluate(rewritten, sub)))
    all_values = concatenate_values(rows)
    return Column(all_values, np.arange(n, dtype=np.int32))


__all__ = ["own_peeks"]
