"""Cubes by dimensions of one table: every row lands in the group of its values, as a group-by
over the same rows counts, sums and keeps its least and greatest number, whichever pass reads
the rows (all rows, many of them selected, some, a few), with NULLs in the dimensions and
NULLs and texts in the measures."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from assoc import App
from without_simd import assert_pass_with_avx2_kernels, assert_pass_without_simd

N = 70_003  # not a whole number of 64-row blocks, more chunks than a thread claims at once


def _columns() -> dict[str, list[Any]]:
    rng = np.random.default_rng(17)
    ten = rng.integers(0, 10, N).astype(object)
    ten[::37] = None
    wide = rng.integers(0, 700, N).astype(object)
    wide[-300:] = 999  # a value only the last rows hold: a group reached in the last chunk
    two = rng.integers(0, 2, N)
    quarters = rng.integers(0, 500, N) / 4
    value: list[Any] = [None if i % 13 == 0 else float(v) for i, v in enumerate(quarters)]
    return {
        "Ten": list(ten),
        "Wide": list(wide),
        "Two": list(two),
        "One": ["only"] * N,  # a column of no bits
        "Sel": list(rng.integers(0, 100, N)),
        "V": value,  # NULLs
        "W": list(rng.integers(0, 50, N)),  # no NULL: its Count counts every row
        # negative numbers, texts (counted, not summed, never a Min or a Max) and NULLs
        "X": [
            None if i % 7 == 0 else f"t{x}" if i % 19 == 0 else float(x)
            for i, x in enumerate(rng.integers(-300, 300, N))
        ],
    }


@pytest.fixture(scope="module")
def table() -> tuple[App, dict[str, list[Any]]]:
    columns = _columns()
    return App.from_tables({"T": columns}), columns


_GROUPS: dict[tuple[tuple[str, ...], int | None], dict[tuple, list[int]]] = {}


def _groups(
    columns: dict[str, list[Any]], dims: list[str], chosen: int | None
) -> dict[tuple, list[int]]:
    """The rows of each combination of the dimensions' values among the rows `chosen` keeps."""
    key = (tuple(dims), chosen)
    if key not in _GROUPS:
        sel = columns["Sel"]
        groups: dict[tuple, list[int]] = {}
        for i in range(N):
            if chosen is None or sel[i] < chosen:
                groups.setdefault(tuple(columns[d][i] for d in dims), []).append(i)
        _GROUPS[key] = groups
    return _GROUPS[key]


def _expected(
    columns: dict[str, list[Any]], dims: list[str], measures: list[str], chosen: int | None
) -> dict[tuple, tuple]:
    out = {}
    for key, members in _groups(columns, dims, chosen).items():
        values: list[Any] = []
        for m in measures:
            field = m[m.index("(") + 1 : -1]
            got = [columns[field][i] for i in members if columns[field][i] is not None]
            numbers = [x for x in got if not isinstance(x, str)]
            if m.startswith("Sum"):
                values.append(pytest.approx(float(sum(numbers))))
            elif m.startswith("Count"):
                values.append(len(got))
            elif m.startswith("Min"):
                values.append(min(numbers) if numbers else None)
            elif m.startswith("Max"):
                values.append(max(numbers) if numbers else None)
            else:
                values.append(pytest.approx(sum(numbers) / len(numbers)))
        out[key] = tuple(values)
    return out


@pytest.mark.parametrize(
    "dims",
    [
        ["Ten"],
        ["Ten", "Two"],
        ["Two", "Ten"],
        ["Wide", "Ten"],
        ["Ten", "Wide", "Two"],
        ["One", "Ten"],
        ["Ten", "One"],
    ],
    ids="|".join,
)
@pytest.mark.parametrize(
    "measures",
    [
        ["Sum(V)"],  # one Sum: the groups reached are marked row by row
        ["Sum(V)", "Count(V)"],  # a pair whose Count skips NULL
        ["Sum(V)", "Count(W)"],  # a Count of every row: the groups reached are those it counts
        ["Avg(W)", "Count(V)"],
        ["Count(V)"],
        ["Min(X)", "Max(X)"],  # the least and the greatest number, kept per slot
        ["Sum(X)", "Min(V)", "Count(W)", "Max(X)", "Count(X)"],
    ],
    ids=lambda m: ",".join(m),
)
@pytest.mark.parametrize("chosen", [None, 60, 20, 2], ids=lambda c: f"sel{c}")
def test_several_dimensions_group_every_row_as_a_group_by_does(
    engine_threads: int,
    table: tuple[App, dict[str, list[Any]]],
    dims: list[str],
    measures: list[str],
    chosen: int | None,
) -> None:
    """All rows, 60 % (dense chunks whose possible rows are packed), 20 % (rows read one by
    one) and 2 % (rows gathered over many chunks) of them."""
    app, columns = table
    with app.session() as s:
        if chosen is not None:
            s.select("Sel", list(range(chosen)))
        cube = s.hypercube(dims, measures)
    got = {tuple(r[: len(dims)]): tuple(r[len(dims) :]) for r in cube.rows}
    want = _expected(columns, dims, measures, chosen)
    assert got.keys() == want.keys()
    for key, values in want.items():
        assert got[key] == values, key


def test_several_dimensions_agree_without_vector_kernels() -> None:
    # On two threads: the portable kernels are per chunk, as the vector ones the tests' own run
    # checked on one and two.
    assert_pass_without_simd("test_hypercube_dimensions.py", "several_dimensions_group and 2-sel60")


def test_cubes_agree_with_the_avx2_kernels() -> None:
    selected = "(several_dimensions_group or many_distinct_numbers) and (sel60 or sel12)"
    assert_pass_with_avx2_kernels("test_hypercube_dimensions.py", selected)


# Two fields of 3,000 values over 40,000 rows: more combinations than a cube gives direct slots,
# so each combination met gets a slot as it comes, and the groups are put in order after.
MANY = 40_000


@pytest.fixture(scope="module")
def many() -> tuple[App, dict[str, list[Any]]]:
    rng = np.random.default_rng(23)
    a = rng.integers(0, 3000, MANY).astype(object)
    a[::53] = None
    b = (rng.integers(0, 3000, MANY) * 7 % 3001).astype(object)  # loaded out of value order
    b[::71] = None
    v: list[Any] = [
        None if i % 11 == 0 else float(x) for i, x in enumerate(rng.integers(0, 90, MANY))
    ]
    columns = {"A": list(a), "B": list(b), "V": v, "Sel": list(rng.integers(0, 10, MANY))}
    return App.from_tables({"T": columns}), columns


def _ranked(key: tuple) -> tuple:
    # Numbers ascending, NULL after every value, column by column.
    return tuple((x is None, x if x is not None else 0) for x in key)


@pytest.mark.parametrize("chosen", [None, 4], ids=["all", "selected"])
def test_many_combinations_group_and_sort_as_a_group_by_does(
    engine_threads: int, many: tuple[App, dict[str, list[Any]]], chosen: int | None
) -> None:
    """Sum, Count, Min, Max, Avg, Only and Count(distinct) per combination and over all rows,
    the rows in the dimensions' order (NULL last), then reversed by the first dimension."""
    app, columns = many
    rows = [i for i in range(MANY) if chosen is None or columns["Sel"][i] < chosen]
    groups: dict[tuple, list[int]] = {}
    for i in rows:
        groups.setdefault((columns["A"][i], columns["B"][i]), []).append(i)
    measures = [
        "Sum(V)",
        "Count(V)",
        "Min(V)",
        "Max(V)",
        "Avg(V)",
        "Only(Sel)",
        "Count(distinct V)",
    ]

    def want_of(members: list[int]) -> tuple:
        vs = [columns["V"][i] for i in members if columns["V"][i] is not None]
        sels = {columns["Sel"][i] for i in members}
        return (
            pytest.approx(float(sum(vs))),
            len(vs),
            min(vs) if vs else None,
            max(vs) if vs else None,
            pytest.approx(sum(vs) / len(vs)) if vs else None,
            sels.pop() if len(sels) == 1 else None,
            len(set(vs)),
        )

    with app.session() as s:
        if chosen is not None:
            s.select("Sel", list(range(chosen)))
        cube = s.hypercube(["A", "B"], measures)
        desc = s.hypercube(["A", "B"], ["Sum(V)"], sort=[("A", "desc")])
    assert len(groups) > 10_000  # most rows a combination of their own
    got = [tuple(r[:2]) for r in cube.rows]
    assert got == sorted(groups, key=_ranked)
    for r in cube.rows:
        assert tuple(r[2:]) == want_of(groups[tuple(r[:2])]), r[:2]
    assert tuple(cube.totals) == want_of(rows)
    # Descending by A (NULL still last), ascending by B within.
    assert [tuple(r[:2]) for r in desc.rows] == sorted(
        groups, key=lambda k: ((k[0] is None, -(k[0] or 0)), (k[1] is None, k[1] or 0))
    )


# A measure of ~280,000 distinct numbers (2.2 MB of them, more than half of any second-level
# cache): each row's number is asked for ahead, and a chunk is decoded whole from a sixteenth
# of its rows. Sum, Count, Avg, Min and Max by a 1,000-value dimension over all rows, 60 %,
# 12 % (decoded whole only where numbers lie so far) and 4 % of them agree with numpy.
FAR = 300_007


@pytest.fixture(scope="module")
def far() -> tuple[App, dict[str, np.ndarray]]:
    rng = np.random.default_rng(31)
    amount = rng.integers(0, 2_000_000, FAR) / 100
    amount[::13] = np.nan
    columns = {
        "Cat": rng.integers(0, 1000, FAR),
        "Amount": amount,
        "Sel": rng.integers(0, 100, FAR),
    }
    return App.from_tables({"T": columns}), columns


@pytest.mark.parametrize(
    "measures",
    [
        ["Sum(Amount)"],
        ["Sum(Amount)", "Count(Amount)"],
        ["Avg(Amount)", "Min(Amount)", "Max(Amount)"],
    ],
    ids=lambda m: ",".join(m),
)
@pytest.mark.parametrize("chosen", [None, 60, 12, 4], ids=lambda c: f"sel{c}")
def test_measures_of_many_distinct_numbers_group_as_numpy_does(
    engine_threads: int,
    far: tuple[App, dict[str, np.ndarray]],
    measures: list[str],
    chosen: int | None,
) -> None:
    app, columns = far
    assert len(app.symbols("Amount")) > 250_000
    keep = np.ones(FAR, bool) if chosen is None else columns["Sel"] < chosen
    cat, amount = columns["Cat"][keep], columns["Amount"][keep]
    known = ~np.isnan(amount)
    with app.session() as s:
        if chosen is not None:
            s.select("Sel", list(range(chosen)))
        cube = s.hypercube(["Cat"], measures)
    assert sorted(r[0] for r in cube.rows) == sorted(np.unique(cat).tolist())
    for row in cube.rows:
        mine = amount[(cat == row[0]) & known]
        want = {
            "Sum(Amount)": pytest.approx(float(mine.sum())),
            "Count(Amount)": len(mine),
            "Avg(Amount)": pytest.approx(float(mine.mean())),
            "Min(Amount)": float(mine.min()),
            "Max(Amount)": float(mine.max()),
        }
        assert tuple(row[1:]) == tuple(want[m] for m in measures), row[0]
