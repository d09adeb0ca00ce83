"""Dollar-sign expansion of chart expressions (spec chart-expressions §8, §2.6): a text pass
over an expression before it is parsed.

- `$(v)` is variable v's text, itself expanded; a variable whose text starts with `=` is
  evaluated and its value's text pasted; an unknown variable expands to nothing.
- `$(=expr)` is `expr` evaluated once (a measure with no dimensions) and its value's text.
- `$(v(a, b))` pastes v's text with `$1`, `$2` replaced by the actuals (`$0`: how many);
  a `$n` without an actual stays as it is, extra actuals are ignored. Actuals split at every
  comma outside single quotes and are trimmed.
- `$(#v)` is v's value as a number written with a decimal point (its text when it has none).
- Expansions nest (`$(v$(i))`); MAX_DEPTH levels, MAX_SIZE characters of text and MAX_STEPS
  expansions per expression at most (a variable that names itself is an error, not a loop).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from assoc import _core

MAX_DEPTH = 100  # nested expansions (Qlik allows 1,000; real apps use a handful)
MAX_SIZE = 1_000_000  # characters an expansion may produce
MAX_STEPS = 10_000  # expansions per expression

Evaluate = Callable[[str], Any]


def value_text(value: Any) -> str:
    """A value's text as an expansion pastes it: a dual's or a text's text, a number in its
    shortest form (up to 15 significant digits), "" for NULL."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, _core.Dual):
        return value.text
    number = float(value)
    if number != number:
        return ""
    if number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    return format(number, ".15g")


def _number_text(value: Any) -> str:
    """`$(#v)`: the value's number with a decimal point, else its text."""
    if isinstance(value, _core.Dual):
        value = value.number
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return str(value)
    return value_text(value)


class Expander:
    """Expands expressions against one set of variables; the `=expr` values it computes are
    kept, so the expressions of one object evaluate each `$(=expr)` once."""

    def __init__(self, variables: Mapping[str, Any], evaluate: Evaluate) -> None:
        self.variables = variables
        self.evaluate = evaluate
        self.steps = 0
        self.values: dict[str, Any] = {}  # `=expr` -> its value: each evaluated once

    def __call__(self, text: str) -> str:
        """`text` with every `$(…)` expanded."""
        if not isinstance(text, str):
            raise _core.Error("an expression must be a string")
        self.steps = 0
        return self.expand(text, 0)

    def expand(self, text: str, depth: int) -> str:
        """`text` expanded `depth` levels down."""
        if "$(" not in text:
            return text
        if depth >= MAX_DEPTH:
            raise _core.Error(
                f"dollar expansion nested deeper than {MAX_DEPTH} levels "
                "(a variable that refers to itself?)"
            )
        out: list[str] = []
        size = 0
        i = 0
        while True:
            k = text.find("$(", i)
            if k < 0:
                out.append(text[i:])
                break
            out.append(text[i:k])
            end = _closing(text, k + 2)
            inner = self.expand(text[k + 2 : end], depth + 1)
            pasted = self.macro(inner.strip(), depth + 1)
            size += k - i + len(pasted)
            if size > MAX_SIZE:
                raise _core.Error(f"dollar expansion longer than {MAX_SIZE} characters")
            out.append(pasted)
            i = end + 1
        result = "".join(out)
        if len(result) > MAX_SIZE:
            raise _core.Error(f"dollar expansion longer than {MAX_SIZE} characters")
        return result

    def value(self, expression: str) -> Any:
        """`expression`'s value (evaluated once)."""
        found = self.values.get(expression, self)
        if found is self:
            try:
                found = self.evaluate(expression)
            except _core.Error as exc:
                raise _core.Error(f"in $(={expression}): {exc}") from None
            self.values[expression] = found
        return found

    def macro(self, inner: str, depth: int) -> str:
        """The text one `$(inner)` stands for (inner already expanded)."""
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _core.Error(f"more than {MAX_STEPS} dollar expansions in one expression")
        if inner.startswith("="):
            return value_text(self.value(inner[1:].strip()))
        numeric = inner.startswith("#")
        if numeric:
            inner = inner[1:].strip()
        name, actuals = _call(inner)
        found = self.variables.get(name)
        if found is None:
            return ""
        text = found if isinstance(found, str) else value_text(found)
        if actuals is not None:
            text = _substitute(text, actuals)
        if text.lstrip().startswith("="):
            value = self.value(self.expand(text.lstrip()[1:].strip(), depth))
            return _number_text(value) if numeric else value_text(value)
        expanded = self.expand(text, depth)
        return _number_text(expanded) if numeric else expanded


def _closing(text: str, start: int) -> int:
    """The index of the `)` that closes a `$(` whose content starts at `start` (parentheses
    nest; single-quoted texts are skipped)."""
    depth, j, n = 1, start, len(text)
    while j < n:
        ch = text[j]
        if ch == "'":
            close = text.find("'", j + 1)
            j = n if close < 0 else close + 1
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    raise _core.Error(f"unterminated $( at position {start - 2}: expected ')'")


def _call(inner: str) -> tuple[str, list[str] | None]:
    """A variable reference's name and actual parameters (None without parentheses)."""
    if not inner.endswith(")") or "(" not in inner:
        return inner, None
    open_at = inner.index("(")
    name, body = inner[:open_at].strip(), inner[open_at + 1 : -1]
    actuals: list[str] = []
    start, quoted = 0, False
    for j, ch in enumerate(body):
        if ch == "'":
            quoted = not quoted
        elif ch == "," and not quoted:
            actuals.append(body[start:j].strip())
            start = j + 1
    actuals.append(body[start:].strip())
    if actuals == [""]:
        actuals = []
    return name, actuals


def _substitute(text: str, actuals: list[str]) -> str:
    """`$n` replaced by the n-th actual (`$0`: how many); others stay."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == "$" and i + 1 < n and text[i + 1].isdigit():
            j = i + 1
            while j < n and text[j].isdigit():
                j += 1
            number = int(text[i + 1 : j])
            if number == 0:
                out.append(str(len(actuals)))
            elif number <= len(actuals):
                out.append(actuals[number - 1])
            else:
                out.append(text[i:j])
            i = j
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def expand(text: str, variables: Mapping[str, Any], evaluate: Evaluate) -> str:
    """`text` with every `$(…)` expanded: variables by name (exact case) from `variables`
    (a text, or a number pasted as its text), `=expr` by `evaluate(expr)` (each distinct
    expression once). Raises assoc.Error past the limits or for an unterminated `$(`."""
    return Expander(variables, evaluate)(text)
