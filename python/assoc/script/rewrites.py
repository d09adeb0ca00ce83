"""Walks and rewrites of load-script expression trees: each a loop over a stack, so that an
operator chain of any length is as easy as a short one."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from assoc.script import syntax as ast
from assoc.script.errors import ScriptError
from assoc.script.expressions import children, walk
from assoc.script.parser import AGGREGATIONS


def post_order(expr: ast.Expr) -> Iterator[ast.Expr]:
    """Every expression inside `expr`, children before their parent, left to right (a loop
    over a stack, as `walk` is: operator chains have no length limit)."""
    stack: list[tuple[ast.Expr, bool]] = [(expr, False)]
    while stack:
        e, children_done = stack.pop()
        if children_done:
            yield e
            continue
        stack.append((e, True))
        stack.extend((child, False) for child in reversed(children(e)))


def splits(expr: ast.Expr) -> list[ast.Call]:
    """The SubField calls without an index in an expression, innermost first."""
    return [
        e
        for e in post_order(expr)
        if isinstance(e, ast.Call) and e.name == "SUBFIELD" and len(e.args) == 2
    ]


def replaced(expr: ast.Expr, old: ast.Expr, new: ast.Expr) -> ast.Expr:
    """The expression with the node `old` (that very node) replaced by `new`."""
    return replaced_all(expr, {id(old): new})


def replaced_all(expr: ast.Expr, new: dict[int, ast.Expr]) -> ast.Expr:
    """The expression with each node whose id is in `new` replaced by its new node."""
    rebuilt: dict[int, ast.Expr] = {}
    for e in post_order(expr):
        if id(e) in new:
            rebuilt[id(e)] = new[id(e)]
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


def field_refs(expr: ast.Expr) -> list[ast.FieldRef]:
    """The field references in an expression."""
    return [e for e in walk(expr) if isinstance(e, ast.FieldRef)]


def with_iterno(expr: ast.Expr, value: ast.Expr) -> ast.Expr:
    """The expression with every IterNo() replaced by `value`."""
    calls = [e for e in post_order(expr) if isinstance(e, ast.Call) and e.name == "ITERNO"]
    for e in calls:
        if e.args:
            raise ScriptError("IterNo takes no arguments", e.line, e.column)
    return replaced_all(expr, {id(e): value for e in calls}) if calls else expr


def aggregations(expr: ast.Expr) -> list[ast.Call]:
    """The outermost aggregation calls in an expression."""
    out: list[ast.Call] = []
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, ast.Call) and e.name in AGGREGATIONS:
            out.append(e)
            continue
        stack.extend(reversed(children(e)))
    return out


def field_name_arg(call: ast.Call) -> str:
    """The field a call names in its first argument (a name or a constant text)."""
    first = call.args[0] if call.args else None
    if isinstance(first, ast.Literal) and isinstance(first.value, str):
        return first.value
    raise ScriptError(f"{call.name} needs a field name first", call.line, call.column)
