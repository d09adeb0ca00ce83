"""Expressions evaluated over value vectors: once per distinct value when they read one
field, once per row otherwise."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from assoc import _core
from assoc.script import syntax as ast
from assoc.script.errors import ScriptError
from assoc.script.functions import (
    ENGINE_FUNCTIONS,
    FUNCTIONS,
    ROW_FUNCTIONS,
    CallContext,
    call_engine,
)
from assoc.script.numbers import Interpretation
from assoc.script.parser import AGGREGATIONS
from assoc.script.values import Values


def children(expr: ast.Expr) -> tuple[ast.Expr, ...]:
    """The expressions directly inside `expr`, left to right."""
    if isinstance(expr, ast.Call):
        return expr.args
    if isinstance(expr, ast.Unary):
        return (expr.operand,)
    if isinstance(expr, ast.Binary):
        return (expr.left, expr.right)
    return ()


def walk(expr: ast.Expr) -> Iterator[ast.Expr]:
    """The expression and every expression inside it, parents first, left to right (a loop
    over a stack: a chain of 10,000 `&` is as easy as one)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        yield e
        stack.extend(reversed(children(e)))


def fields_of(expr: ast.Expr) -> list[str]:
    """The fields an expression reads, in order of first mention."""
    seen: dict[str, None] = {}
    for e in walk(expr):
        if isinstance(e, ast.FieldRef):
            seen.setdefault(e.name, None)
    return list(seen)


def is_row_dependent(expr: ast.Expr) -> bool:
    """True when the expression uses RecNo, RowNo or Rand (so differs per row)."""
    return any(isinstance(e, ast.Call) and e.name in ROW_FUNCTIONS for e in walk(expr))


class Evaluator:
    """Evaluates expressions against named value vectors of equal length."""

    def __init__(self, columns: Mapping[str, Values], ctx: CallContext) -> None:
        self.columns = columns
        self.ctx = ctx

    def __call__(self, expr: ast.Expr) -> Values:
        """The expression's values (length 1 when it is constant, else ctx.n)."""
        if isinstance(expr, ast.Literal):
            return Values.constant(expr.value)
        if isinstance(expr, ast.FieldRef):
            if expr.name not in self.columns:
                raise ScriptError(f"field not found: {expr.name}", expr.line, expr.column)
            return self.columns[expr.name]
        if isinstance(expr, ast.Call):
            own = FUNCTIONS.get(expr.name)
            engine = ENGINE_FUNCTIONS.get(expr.name)
            if own is None and engine is None and expr.name in AGGREGATIONS:
                raise ScriptError(
                    f"{expr.name} is an aggregation: it is allowed in a LOAD's fields only",
                    expr.line,
                    expr.column,
                )
            if own is None and engine is None:
                raise ScriptError(f"unknown function {expr.name}", expr.line, expr.column)
            _, least, most = own or engine  # type: ignore[misc]
            if not least <= len(expr.args) <= most:
                raise ScriptError(
                    f"{expr.name} takes {least}..{most} arguments, not {len(expr.args)}",
                    expr.line,
                    expr.column,
                )
            args = [self(a) for a in expr.args]
            try:
                if own is not None:
                    return own[0](args, self.ctx)
                return call_engine(engine[0], args, self.ctx)  # type: ignore[index]
            except (ValueError, IndexError, _core.Error) as exc:
                raise ScriptError(f"{expr.name}: {exc}", expr.line, expr.column) from None
        if isinstance(expr, ast.Unary):
            return self._operator(expr.op, [self(expr.operand)])
        if isinstance(expr, ast.Binary):
            return self._binary(expr)
        raise ScriptError("cannot evaluate this expression", expr.line, expr.column)

    def _binary(self, expr: ast.Binary) -> Values:
        # The left operands of a chain (`a & b & c` is ((a & b) & c)) are walked in a loop: only
        # nesting (parentheses, calls, NOT, signs; bounded by the parser) recurses.
        spine = [expr]
        while isinstance(spine[-1].left, ast.Binary):
            spine.append(spine[-1].left)
        value = self(spine[-1].left)
        for node in reversed(spine):
            value = self._operator(node.op, [value, self(node.right)])
        return value

    def _operator(self, op: str, args: list[Values]) -> Values:
        """The engine's operator (the one charts apply) over the operands' values."""
        n = max(len(a) for a in args)
        packed = [(a.nums, a.texts) for a in args]
        nums, texts = _core.apply_operator(op, packed, n, self.ctx.interpretation)
        return Values(nums, texts)


def constant_value(
    expr: ast.Expr,
    interpretation: Interpretation,
    script: object = None,
    variables: Mapping[str, str] | None = None,
) -> Values:
    """An expression that reads no field, evaluated once (LET, AUTOGENERATE's count, control
    statements' conditions); a bare name there is a variable's value; `script` answers Peek,
    NoOfRows and the like."""
    env: dict[str, Values] = {}
    for e in walk(expr):
        if isinstance(e, ast.FieldRef):
            if variables is None or e.name not in variables:
                raise ScriptError(f"field not found: {e.name}", e.line, e.column)
            env[e.name] = Values.of_texts([variables[e.name]])
    return Evaluator(env, CallContext(1, interpretation, script=script))(expr)


__all__ = ["Evaluator", "constant_value", "fields_of", "is_row_dependent", "walk"]
