"""Peek of a LOAD's own rows (running totals, carried values) and the range functions they
are written with, against the same computation over the same rows here."""

from __future__ import annotations

import itertools
import random

import pytest

import assoc
from assoc.script import ScriptError


def rows_of(n: int, seed: int = 7) -> list[tuple[str, int]]:
    rng = random.Random(seed)
    keys = sorted(rng.choice("abcdefgh") for _ in range(n))
    return [(k, rng.randint(-50, 100)) for k in keys]


def inline(rows: list[tuple[str, int]]) -> str:
    return "K, X\n" + "\n".join(f"{k}, {x}" for k, x in rows)


def test_running_totals_per_key_and_overall() -> None:
    rows = rows_of(20_000)
    app = assoc.App.from_script(
        f"""T: LOAD K, X,
  RangeSum(Peek('Total'), X) AS Total,
  If(K = Previous(K), Peek('PerKey', -1) + X, X) AS PerKey,
  Peek('X', -3) AS Back3,
  Peek('Total', 0) AS First
INLINE [
{inline(rows)}
];"""
    )
    t = app.table("T")
    xs = [x for _, x in rows]
    assert t.column("Total") == list(itertools.accumulate(xs))
    per_key = []
    for i, (k, x) in enumerate(rows):
        per_key.append(per_key[-1] + x if i and rows[i - 1][0] == k else x)
    assert t.column("PerKey") == per_key
    assert t.column("Back3") == [None, None, None, *xs[:-3]]
    assert t.column("First") == [None] + [xs[0]] * (len(xs) - 1)


def test_carried_text_values_row_by_row() -> None:
    rows = rows_of(300, seed=3)
    app = assoc.App.from_script(
        f"""T: LOAD K, X, If(X > 80, 'high ' & K, Peek('Last')) AS Last,
  If(IsNull(Peek('Seen')), K, Peek('Seen') & K) AS Seen
INLINE [
{inline(rows)}
];"""
    )
    t = app.table("T")
    last: list[str | None] = []
    seen: list[str] = []
    for k, x in rows:
        last.append(f"high {k}" if x > 80 else (last[-1] if last else None))
        seen.append(seen[-1] + k if seen else k)
    assert t.column("Last") == last
    assert t.column("Seen") == seen


def test_peek_with_the_loads_own_table_name_and_rowno() -> None:
    app = assoc.App.from_script(
        "Cal: LOAD RowNo() AS N, RangeSum(Peek('S', -1, 'Cal'), RowNo()) AS S,"
        " Alt(Peek(Doubled), 1) * 2 AS Doubled AUTOGENERATE 6;"
    )
    assert app.table("Cal").column("S") == list(itertools.accumulate(range(1, 7)))
    assert app.table("Cal").column("Doubled") == [2, 4, 8, 16, 32, 64]


def test_peek_of_a_field_star_loads() -> None:
    app = assoc.App.from_script(
        """T: LOAD *, Peek('X') AS PrevX, RangeSum(Peek('S'), X) AS S INLINE [
X
4
5
6
];"""
    )
    assert app.table("T").column("PrevX") == [None, 4, 5]
    assert app.table("T").column("S") == [4, 9, 15]


def test_peek_of_other_tables_is_unchanged() -> None:
    app = assoc.App.from_script(
        """A: LOAD * INLINE [
V
10
20
];
B: LOAD Peek('V') AS Last, Peek('V', 0, 'A') AS First AUTOGENERATE 2;"""
    )
    assert app.table("B").column("Last") == [20, 20]
    assert app.table("B").column("First") == [10, 10]


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("RangeSum(1, 'x', 2, Null())", 3),
        ("RangeSum(Null())", 0),
        ("RangeAvg(1, 'x', 4)", 2.5),
        ("RangeAvg('x')", None),
        ("RangeMin(3, -1, 'x')", -1),
        ("RangeMax(3, -1, 'x')", 3),
        ("RangeCount(1, Null(), 'x')", 2),
    ],
)
def test_range_functions(expr: str, expected: object) -> None:
    app = assoc.App.from_script(f"T: LOAD {expr} AS v AUTOGENERATE 1;")
    assert app.table("T").column("v") == [expected]


def test_fields_peeking_at_each_other_are_an_error_at_the_call() -> None:
    with pytest.raises(ScriptError) as err:
        assoc.App.from_script(
            "T: LOAD RowNo() AS N,\n  Peek('B') + 1 AS A,\n  Peek('A') AS B AUTOGENERATE 3;"
        )
    assert (err.value.line, err.value.column) == (2, 3)
    assert "Peek at each other" in err.value.message


def test_a_row_that_is_not_constant_is_an_error_at_the_call() -> None:
    with pytest.raises(ScriptError) as err:
        assoc.App.from_script("T: LOAD RowNo() AS N,\n   Peek('N', N) AS P AUTOGENERATE 3;")
    assert (err.value.line, err.value.column) == (2, 4)
    assert "constant row" in err.value.message
