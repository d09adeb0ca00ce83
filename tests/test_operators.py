"""One implementation of the operators for load scripts and charts: each operator gives in a
LOAD exactly what it gives in a chart measure over the same rows (NULLs, texts and numbers,
mixed columns, case, division by zero, `&` with NULLs, texts read under the app's
interpretation variables)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import assoc
from assoc import _core
from assoc.script import ScriptRunner
from assoc.script.errors import ScriptError
from assoc.script.numbers import Interpretation

# Day-first dates and a decimal comma, so that reading a text as a number must follow the
# app's variables. Empty inline fields are NULL.
DATA = """SET DateFormat='DD.MM.YYYY'; SET DecimalSep=','; SET ThousandSep='.';
T: LOAD Id, A, B, S, U INLINE [
Id; A; B; S; U
1; 3; 2; abc; ABC
2; ; 4; abc; abc
3; 5; 0; ;
4; ; ; 12; 9
5; -1; 1; Zeta; alpha
6; 0; 7; 15.01.2020; 14.01.2020
7; 2,5; 1; 1,5; 1.000
] (delimiter is ';');
"""

EXPRESSIONS = [
    "A + B",
    "A - B",
    "A * B",
    "A / B",
    "-A",
    "-S",
    "NOT A",
    "NOT S",
    "A and B",
    "A or B",
    "A xor S",
    "S & U",
    "S & A",
    "A & B",
    "A & '-' & B",
    "S = U",
    "S <> U",
    "S < U",
    "S <= U",
    "S > U",
    "S >= U",
    "A = B",
    "A <> B",
    "A < B",
    "S = A",
    "S like 'a*'",
    "S like '?B*'",
    "S precedes U",
    "S follows U",
    "Text(S) + 1",
    "Text(S) * 2",
    "Text(S) = Text(U)",
    "Text(S) > Text(U)",
    "Text(A) + Text(B)",
    "If(S > U, 'more', 'not more')",
]


def script_values(expr: str) -> list[Any]:
    app = assoc.App.from_script(DATA + f"R: LOAD Id AS RId, {expr} AS v RESIDENT T;")
    return list(app.table("R").column("v"))


def chart_values(expr: str) -> list[Any]:
    with assoc.App.from_script(DATA).session() as s:
        rows = s.hypercube(["Id"], [f"Only({expr})"]).rows
    return [r[1] for r in sorted(rows, key=lambda r: r[0])]


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_a_load_and_a_chart_give_the_same_values(expr: str) -> None:
    in_script = script_values(expr)
    in_chart = chart_values(expr)
    assert len(in_script) == 7
    assert in_script == in_chart


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # Texts compare with case; numbers (and texts read as numbers) as numbers.
        ("S = U", [0, -1, None, 0, 0, 0, 0]),
        ("S < U", [0, 0, None, 0, -1, 0, -1]),
        ("S precedes U", [0, 0, None, -1, -1, 0, -1]),
        ("S like '?B*'", [-1, -1, 0, 0, 0, 0, 0]),
        # Against one NULL only <> holds; NULL against NULL is NULL.
        ("A = B", [0, 0, 0, None, 0, 0, 0]),
        ("A <> B", [-1, -1, -1, None, -1, -1, -1]),
        # & keeps the other side; NULL & NULL is NULL.
        ("A & B", ["32", "4", "50", None, "-11", "07", "2,51"]),
        (
            "S & U",
            ["abcABC", "abcabc", None, "129", "Zetaalpha", "15.01.202014.01.2020", "1,51.000"],
        ),
        # Division by zero is NULL.
        ("A / B", [1.5, None, None, None, -1, 0, 2.5]),
        # Texts read as numbers under DecimalSep=',' and DateFormat='DD.MM.YYYY'.
        ("Text(S) + 1", [None, None, None, 13, None, 43846, 2.5]),
        ("Text(S) > Text(U)", [-1, 0, None, -1, 0, -1, 0]),
    ],
)
def test_operator_values(expr: str, expected: list[Any]) -> None:
    assert script_values(expr) == expected
    assert chart_values(expr) == expected


def test_like_precedes_and_follows_in_a_where_clause() -> None:
    app = assoc.App.from_script(
        DATA
        + "R: LOAD Id AS RId RESIDENT T WHERE S like 'A*' or S follows 'Z';\n"
        + "P: LOAD Id AS PId RESIDENT T WHERE S precedes '2';"
    )
    assert list(app.table("R").column("RId")) == [1, 2, 5]
    assert list(app.table("P").column("PId")) == [4, 6, 7]


def test_let_uses_the_same_operators() -> None:
    runner = ScriptRunner(
        "LET a = 'x' = 'X'; LET b = IsNull(Null() & Null()); LET c = 'x' <> Null();\n"
        "SET DecimalSep=','; LET d = '1,5' + 1 = 2.5;"
    )
    runner.run()
    assert [runner.variables[k] for k in "abcd"] == ["0", "-1", "-1", "-1"]


def test_columns_give_what_each_row_gives() -> None:
    """Long columns (the engine's parallel loops) give what short ones do, row by row."""
    n = 5000
    ix = Interpretation({"DecimalSep": ","})
    rng = np.random.default_rng(3)
    nums = rng.integers(-3, 4, n).astype(np.float64)
    nums[rng.random(n) < 0.2] = np.nan
    words = np.array(["a", "B", "1,5", "02", None, "b"], dtype=object)
    texts = words[rng.integers(0, len(words), n)]
    texts[~np.isnan(nums)] = None
    left = (nums, texts)
    right = (nums[::-1].copy(), texts[::-1].copy())
    for op in ["+", "/", "=", "<", "&", "like", "and", "precedes"]:
        whole = _core.apply_operator(op, [left, right], n, ix)
        for r in range(0, n, 97):
            at = slice(r, r + 1)
            pair = [(left[0][at], left[1][at]), (right[0][at], right[1][at])]
            one = _core.apply_operator(op, pair, 1, ix)
            assert np.array_equal(whole[0][at], one[0], equal_nan=True), (op, r)
            text = None if whole[1] is None else whole[1][r]
            assert text == (None if one[1] is None else one[1][0]), (op, r)


def test_bad_operator_calls_are_errors() -> None:
    ix = Interpretation({})
    one = (np.array([1.0]), None)
    with pytest.raises(_core.Error, match="no operator %"):
        _core.apply_operator("%", [one, one], 1, ix)
    with pytest.raises(_core.Error, match="no operator not of 2"):
        _core.apply_operator("not", [one, one], 1, ix)
    with pytest.raises(_core.Error, match="texts must be str or None"):
        _core.apply_operator("&", [(np.array([1.0]), [3]), one], 1, ix)
    with pytest.raises(_core.Error, match="values, not 1 or 2"):
        _core.apply_operator("+", [(np.zeros(3), None), one], 2, ix)
    with pytest.raises(ScriptError, match="line 1, column 19"):
        assoc.App.from_script("T: LOAD 1 like AS x AUTOGENERATE 1;")
