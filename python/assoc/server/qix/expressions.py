"""Expressions outside hypercubes: what Doc.Evaluate / EvaluateEx / CheckExpression compute
(expression_api.py), `qStringExpression` / `qValueExpression` in properties, and `$(…)` in a
cube's dimensions. Expansion is the engine's (assoc.expansion, through the session, whose
`variables` are the document's)."""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import assoc
from assoc.expansion import value_text
from assoc.server.qix.rpc import CALC_INVALID_DEF, INVALID_PARAMETERS, RpcError, json_number

if TYPE_CHECKING:
    from assoc.server.qix.cubedef import HyperCubeDef

STRING_EXPRESSION, VALUE_EXPRESSION = "qStringExpression", "qValueExpression"
MAX_BAD_FIELDS = 100  # unknown fields CheckExpression lists at most

_UNKNOWN_FIELD = re.compile(r"unknown field '(.*)' at position (\d+)$", re.DOTALL)


_POSITION = re.compile(r" at position (\d+)$")


@dataclass(frozen=True)
class Bare:
    """An expression expanded, without its leading `=`: the text the engine parses, and
    where it starts in the expanded text."""

    text: str
    offset: int

    @classmethod
    def of(cls, session: assoc.Session, expression: str) -> Bare:
        """`expression` expanded with the session's variables (assoc.Error when that fails)."""
        expanded = session.expand(expression)
        body = expanded.lstrip()
        offset = len(expanded) - len(body)
        if body.startswith("="):
            rest = body[1:]
            offset += 1 + len(rest) - len(rest.lstrip())
            body = rest
        return cls(body.strip(), offset)

    def value(self, session: assoc.Session) -> Any:
        """The value (assoc.Error when it does not compute)."""
        return session.evaluate(self.text, expanded=True)

    def problem(self, message: str) -> str:
        """An engine error without its `expression '…': ` prefix, its position counted in
        the expanded expression."""
        shown = self.text if len(self.text) <= 200 else self.text[:200] + "..."
        head = f"expression '{shown}': "
        if message.startswith(head):
            message = message[len(head) :]
        return _POSITION.sub(lambda m: f" at position {int(m.group(1)) + self.offset}", message)


def evaluate(session: assoc.Session, expression: str) -> Any:
    """An expression's value (`$(…)` expanded, a leading `=` allowed); errors answer 7000
    with the problem and its position."""
    try:
        bare = Bare.of(session, expression)
    except assoc.Error as exc:
        raise RpcError(CALC_INVALID_DEF, expression, str(exc)) from None
    try:
        return bare.value(session)
    except assoc.Error as exc:
        raise RpcError(CALC_INVALID_DEF, expression, bare.problem(str(exc))) from None


def field_value(value: Any) -> dict[str, Any]:
    """FieldValue {qText, qIsNumeric, qNumber} of a value (NULL: "-", not numeric)."""
    number = getattr(value, "number", value)
    if value is None:
        return {"qText": "-", "qIsNumeric": False, "qNumber": 0}
    if isinstance(number, int | float) and not isinstance(value, str):
        if isinstance(number, float) and math.isnan(number):
            return {"qText": "-", "qIsNumeric": False, "qNumber": 0}
        return {"qText": value_text(value), "qIsNumeric": True, "qNumber": json_number(number)}
    return {"qText": value_text(value), "qIsNumeric": False, "qNumber": 0}


def check(session: assoc.Session, expression: str) -> tuple[str, list[dict[str, int]]]:
    """(error message, unknown fields as NxRange {qFrom, qCount}) of an expression: the
    message is "" when it computes; positions count in the expanded expression (the same as
    in the text when it has no `$(…)`)."""
    try:
        bare = Bare.of(session, expression)
    except assoc.Error as exc:
        return str(exc), []
    bad: list[dict[str, int]] = []
    names: list[str] = []
    while True:
        try:
            bare.value(session)
        except assoc.Error as exc:
            found = _UNKNOWN_FIELD.search(str(exc))
            if found is None or len(bad) >= MAX_BAD_FIELDS:
                return (_bad_names(names) if names and found else bare.problem(str(exc))), bad
            name, at = found.group(1), int(found.group(2))
            text = bare.text
            count = len(name) + 2 if text[at : at + 1] in ("[", '"', "`") else len(name)
            bad.append({"qFrom": at + bare.offset, "qCount": count})
            names.append(name)
            # The name becomes a number of the same length, so the positions after it stay.
            bare = Bare(text[:at] + "0" * count + text[at + count :], bare.offset)
            continue
        return (_bad_names(names) if names else ""), bad


def _bad_names(names: list[str]) -> str:
    return "Bad field name(s): " + ", ".join(names)


# ---- expressions in properties ---------------------------------------------------------------


@dataclass(frozen=True)
class ExpressionDef:
    """`{qStringExpression: {qExpr}}` or `{qValueExpression: {qExpr}}` (or the text itself)
    in properties: the layout shows its value in place of the object."""

    kind: str
    expression: str

    @classmethod
    def parse(cls, kind: str, raw: Any, path: str) -> ExpressionDef:
        """Checks one (error 8 when it holds no expression text)."""
        expression = raw.get("qExpr") if isinstance(raw, dict) else raw
        if not isinstance(expression, str):
            raise RpcError(INVALID_PARAMETERS, path, "qExpr must be an expression (a string)")
        return cls(kind, expression)

    def value(self, session: assoc.Session) -> Any:
        """The text (qStringExpression) or number (qValueExpression) the layout shows: an
        expression that does not compute shows "Error: …" (a value: NaN)."""
        if not self.expression.strip():
            return "" if self.kind == STRING_EXPRESSION else "NaN"
        try:
            bare = Bare.of(session, self.expression)
        except assoc.Error as exc:
            return "NaN" if self.kind == VALUE_EXPRESSION else f"Error: {exc}"
        try:
            value = bare.value(session)
        except assoc.Error as exc:
            return "NaN" if self.kind == VALUE_EXPRESSION else "Error: " + bare.problem(str(exc))
        if self.kind == STRING_EXPRESSION:
            return value_text(value)
        number = getattr(value, "number", value)
        if isinstance(number, int | float) and not isinstance(value, str):
            return json_number(float(number))
        return "NaN"


# ---- `$(…)` in a cube's dimensions --------------------------------------------------------


def expand_dimensions(
    definition: HyperCubeDef, session: assoc.Session, state: str = "$"
) -> HyperCubeDef:
    """The definition with `$(…)` in its dimensions' fields expanded, each `$(=…)` under the
    object's `state` (measures are expanded by the engine's cube itself)."""
    if not any("$(" in d.field for d in definition.dimensions):
        return definition
    dims = [
        dataclasses.replace(d, field=session.expand(d.field, state)) if "$(" in d.field else d
        for d in definition.dimensions
    ]
    return dataclasses.replace(definition, dimensions=dims)
