"""Every recursive parser and walker has a depth limit: input at the limit works, input beyond
it is a clear error naming the place, and nesting alone never exhausts a stack.

The recursive paths, and what bounds each (RECURSIVE_PATHS below; a test for each):

- chart expressions, C++ `parse_expression` (hypercube measures): every level of the tree
  counts (parentheses, calls and aggregations, signs, NOT, and each operator of a chain:
  `a+b+…` is a tree as deep as it has terms), `kMaxExpressionDepth` = 256. The plan and its
  evaluation walk no deeper than the tree; the tree is a flat node list, so its destruction
  does not recurse.
- load-script expressions, `script/parser.py`: parentheses, calls, NOT and signs,
  `MAX_EXPRESSION_NESTING` = 100; the script `Evaluator` recurses only as deep as that.
  Operator chains (`a & b & …`) are loops in the parser, `walk` and the `Evaluator`.
- preceding LOADs, `runner._following` and `_rows_of`: one LOAD in another,
  `MAX_PRECEDING_LOADS` = 32.

(JSON in QIX frames and properties is bounded by the QIX request layer, see tests/qix.)
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

import pytest

import assoc
from assoc import App
from assoc.script.parser import MAX_EXPRESSION_NESTING
from assoc.script.runner import MAX_PRECEDING_LOADS

CHART_LIMIT = 256  # kMaxExpressionDepth in cpp/include/assoc/expression.hpp
RECURSIVE_PATHS = {
    "chart expression (C++ parse_expression)": CHART_LIMIT,
    "script expression (script/parser.py, Evaluator)": MAX_EXPRESSION_NESTING,
    "preceding LOADs (runner._following, _rows_of)": MAX_PRECEDING_LOADS,
    "script operator chains (parser, walk, Evaluator)": None,  # loops, no recursion
    "chart expression evaluation and destruction (C++)": None,  # a flat node list
}


def test_every_recursive_path_has_a_limit_far_below_the_stack() -> None:
    """The list above, each limit in its range: real input never reaches it, and every test
    below runs it at the limit (the chart parser in a 1 MB thread stack, the script paths
    within half of Python's recursion limit)."""
    limits = [v for v in RECURSIVE_PATHS.values() if v is not None]
    assert limits == [256, 100, 32]


def _cube(measure: str) -> list[tuple[object, ...]]:
    app = App.from_tables({"T": {"G": ["a", "b"], "x": [1, 2]}})
    return app.session().hypercube(["G"], [measure]).rows


def _in_small_stack(run: Callable[[], object], stack_kb: int = 1024) -> object:
    """`run` in a thread with a small stack (one megabyte; the chart parser needs about half of
    it at the limit): the limits hold far below the 8 MB threads get by default."""
    out: list[object] = []
    errors: list[BaseException] = []

    def body() -> None:
        try:
            out.append(run())
        except BaseException as exc:  # handed to the test's thread
            errors.append(exc)

    old = threading.stack_size(stack_kb * 1024)
    try:
        thread = threading.Thread(target=body)
        thread.start()
        thread.join()
    finally:
        threading.stack_size(old)
    if errors:
        raise errors[0]
    return out[0]


CHART_CASES = {
    "parentheses": lambda n: "(" * n + "Sum(x)" + ")" * n,
    "signs": lambda n: "-" * n + "Sum(x)",
    "mixed": lambda n: "-(" * (n // 2) + "-" * (n % 2) + "Sum(x)" + ")" * (n // 2),
}


@pytest.mark.parametrize("shape", CHART_CASES)
def test_chart_expression_nesting_at_and_beyond_the_limit(shape: str) -> None:
    build = CHART_CASES[shape]
    # Sum(x) takes two levels of the tree (the aggregation and its field).
    rows = _in_small_stack(lambda: _cube(build(CHART_LIMIT - 2)))
    assert rows in ([("a", 1.0), ("b", 2.0)], [("a", -1.0), ("b", -2.0)])
    for depth in (CHART_LIMIT + 1, 30_000):
        with pytest.raises(assoc.Error, match="nested deeper than 256 levels at position 256"):
            _in_small_stack(lambda d=depth: _cube(build(d)))  # type: ignore[misc]


def test_chart_expression_errors_name_a_long_expression_by_its_start() -> None:
    with pytest.raises(assoc.Error) as failed:
        _cube("(" * 30_000 + "Sum(x)" + ")" * 30_000)
    assert len(str(failed.value)) < 400


def test_a_long_operator_chain_in_a_chart_expression_is_bounded_too() -> None:
    assert _cube("+".join(["Sum(x)"] * (CHART_LIMIT - 1))) == [
        ("a", float(CHART_LIMIT - 1)),
        ("b", 2.0 * (CHART_LIMIT - 1)),
    ]
    with pytest.raises(assoc.Error, match=f"nested deeper than {CHART_LIMIT} levels"):
        _in_small_stack(lambda: _cube("+".join(["Sum(x)"] * 20_000)))


def _value(script: str) -> object:
    app = App.from_script(script)
    return app.session().hypercube(["A"]).rows[0][0]


SCRIPT_CASES = {
    "parentheses": lambda n: "(" * n + "1" + ")" * n,
    "calls": lambda n: "Len(" * n + "1" + ")" * n,
    "NOT": lambda n: "NOT " * n + "0",
    "signs": lambda n: "-" * n + "1",
    "mixed": lambda n: _mixed(n),
}
SCRIPT_VALUES = {"parentheses": 1, "calls": 1, "NOT": 0, "signs": 1, "mixed": 21}


def _mixed(n: int) -> str:
    """`n` levels: a fifth in `1+(`, most in `Len(-(NOT ` (four levels each), the rest `(`."""
    k, rest = n // 5, n % 5
    inner = "1+(" * k + "Len(-(NOT " * k + "0" + "))" * k + ")" * k
    return "(" * rest + inner + ")" * rest


@pytest.mark.parametrize("shape", SCRIPT_CASES)
def test_script_expression_nesting_at_and_beyond_the_limit(shape: str) -> None:
    build = SCRIPT_CASES[shape]
    at_limit = f"T: LOAD {build(MAX_EXPRESSION_NESTING)} AS A AUTOGENERATE 1;"
    assert _value(at_limit) == SCRIPT_VALUES[shape]
    for depth in (MAX_EXPRESSION_NESTING + 1, 20_000):
        script = f"LET x = 1;\nT: LOAD {build(depth)} AS A AUTOGENERATE 1;"
        with pytest.raises(assoc.Error) as failed:
            App.from_script(script)
        assert f"nested deeper than {MAX_EXPRESSION_NESTING} levels" in str(failed.value)
        assert failed.value.line == 2  # type: ignore[attr-defined]
        assert failed.value.column > 8  # type: ignore[attr-defined]


def test_script_operator_chains_are_loops() -> None:
    terms = 20_000
    assert _value(f"T: LOAD {'+'.join(['1'] * terms)} AS A AUTOGENERATE 1;") == terms
    concat = " & ".join(["'a'"] * 3_000)
    assert _value(f"T: LOAD Len({concat}) AS A AUTOGENERATE 1;") == 3_000
    anded = " AND ".join(["1=1"] * 5_000)
    assert _value(f"T: LOAD If({anded}, 7, 0) AS A AUTOGENERATE 1;") == 7


def _preceding(count: int) -> str:
    return "T: " + "LOAD A;\n" * count + "LOAD 5 AS A AUTOGENERATE 1;"


def test_preceding_loads_at_and_beyond_the_limit() -> None:
    assert _value(_preceding(MAX_PRECEDING_LOADS)) == 5
    for count in (MAX_PRECEDING_LOADS + 1, 5_000):
        with pytest.raises(assoc.Error, match=f"more than {MAX_PRECEDING_LOADS} preceding"):
            App.from_script(_preceding(count))


def test_the_worst_script_at_the_limits_leaves_half_the_recursion_budget() -> None:
    """Every limit at once (32 preceding LOADs, each with an expression nested 100 deep) runs
    within half of Python's default recursion limit."""
    deep = SCRIPT_CASES["mixed"](MAX_EXPRESSION_NESTING)
    script = (
        "T: LOAD A, "
        + deep
        + " AS B;\n"
        + "".join(f"LOAD A, {deep} AS B{i};\n" for i in range(MAX_PRECEDING_LOADS - 1))
        + f"LOAD 5 AS A, {deep} AS Z AUTOGENERATE 1;"
    )
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(500 + len(_stack()))
    try:
        app = App.from_script(script)
    finally:
        sys.setrecursionlimit(old)
    assert app.session().hypercube(["A"]).rows == [(5,)]


def _stack() -> list[object]:
    frames = []
    frame = sys._getframe()
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back  # type: ignore[assignment]
    return frames
