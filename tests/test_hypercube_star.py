"""The star's cube: a fact table's records reach a dimension's values through one key, in one
pass over the fact rows (docs/hypercubes.md). Checked against the reference model by explicit
joins, with the shapes that pass must get right: NULL keys, keys without a dimension row,
dimension rows without facts, a value shared by several keys, NULL and text amounts,
selections on either side, alternate states, zero suppression, several measures."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from assoc import App
from test_hypercube import FUNCS, check_cube, reference_for, same


def star_tables(seed: int, n_fact: int = 5000) -> dict[str, dict[str, list[Any]]]:
    """Fact rows over several 1,024-row chunks and a partial last one; 60 dimension keys of
    which some have no fact, 10 fact keys without a dimension row, NULL keys, a Region shared
    by several keys (and NULL for some), amounts with NULLs and texts."""
    rng = np.random.default_rng(seed)
    n_dim = 60
    dim_keys = [int(k) for k in rng.permutation(n_dim)]
    region: list[Any] = [f"r{k % 7}" for k in dim_keys]
    region[3] = None
    segment = [int(k % 10) for k in dim_keys]
    # Keys 50..59 have no facts; 60..69 have no dimension row.
    fact_keys: list[Any] = [int(k) for k in rng.choice([*range(50), *range(60, 70)], n_fact)]
    for i in rng.choice(n_fact, n_fact // 20, replace=False):
        fact_keys[int(i)] = None
    amount: list[Any] = [round(float(x), 2) for x in rng.integers(-500, 5000, n_fact) / 100]
    for i in rng.choice(n_fact, n_fact // 25, replace=False):
        amount[int(i)] = None
    for i in rng.choice(n_fact, n_fact // 50, replace=False):
        amount[int(i)] = "n/a"
    qty = [int(x) for x in rng.integers(0, 20, n_fact)]
    customer = [int(x) for x in rng.integers(0, 300, n_fact)]
    return {
        "Fact": {"DimKey": fact_keys, "Amount": amount, "Qty": qty, "Customer": customer},
        "Dim": {"DimKey": dim_keys, "Region": region, "Segment": segment},
    }


MEASURES = [
    [("sum", "Amount")],
    [("count", "Amount")],
    [("sum", "Qty"), ("count", "Qty"), ("sum", "Amount")],
    [("sum", "Amount"), ("countdistinct", "Customer"), ("avg", "Qty")],
]

# Selections: none; 3 of 10 segments (few fact rows per block: read row by row); 8 of 10
# (most rows: decoded block by block); in the fact table; on both sides.
SELECTIONS: list[dict[str, list[Any]]] = [
    {},
    {"Segment": [1, 4, 7]},
    {"Segment": [0, 1, 2, 3, 4, 5, 6, 8]},
    {"Qty": [2, 3, 5, 11]},
    {"Segment": [0, 2, 3, 5, 7, 9], "Qty": list(range(3, 17))},
    {"Region": ["r2", "r5"]},
]


@pytest.mark.parametrize("selection", SELECTIONS, ids=lambda s: "+".join(s) or "none")
def test_star_cube_matches_the_reference(
    engine_threads: int, selection: dict[str, list[Any]]
) -> None:
    app = App.from_tables(star_tables(5))
    with app.session() as s:
        for field, values in selection.items():
            s.select(field, values)
        for aggs in MEASURES:
            check_cube(app, s, ["Region"], aggs)
        check_cube(app, s, ["Region", "Segment"], [("sum", "Amount")])


def test_star_cube_with_numbers_as_kept_and_no_nulls(engine_threads: int) -> None:
    """Amounts all numbers, keys never NULL: the numbers are read as the symbols hold them."""
    rng = np.random.default_rng(8)
    n_fact, n_dim = 7000, 500
    fact_keys = rng.integers(0, n_dim + 30, n_fact)
    amount = rng.integers(100, 100_000, n_fact) / 100
    qty = rng.integers(0, 50, n_fact)
    region = rng.integers(0, 20, n_dim)
    segment = rng.integers(0, 10, n_dim)
    app = App.from_tables(
        {
            "Fact": {"DimKey": fact_keys, "Amount": amount, "Qty": qty},
            "Dim": {"DimKey": np.arange(n_dim), "Region": region, "Segment": segment},
        }
    )
    with app.session() as s:
        for chosen in (None, [2, 5, 9]):
            s.clear()
            if chosen:
                s.select("Segment", chosen)
            ok = fact_keys < n_dim
            keep = ok & np.isin(segment[np.minimum(fact_keys, n_dim - 1)], chosen or range(10))
            cube = s.hypercube(["Region"], ["Sum(Amount)", "Sum(Qty)", "Count(Qty)"])
            got = {r[0]: r[1:] for r in cube.rows}
            want: dict[Any, tuple[float, float, float]] = {}
            regions = region[fact_keys[keep]]
            for r in np.unique(regions):
                m = regions == r
                want[int(r)] = (
                    float(amount[keep][m].sum()),
                    float(qty[keep][m].sum()),
                    float(m.sum()),
                )
            if chosen is None:  # keys without a dimension row: None
                want[None] = (float(amount[~ok].sum()), float(qty[~ok].sum()), float((~ok).sum()))
            assert got.keys() == want.keys()
            for k, v in want.items():
                pairs = zip(got[k], v, strict=True)
                assert all(math.isclose(a, b, rel_tol=1e-12) for a, b in pairs), k
            assert cube.totals[2] == float(keep.sum() if chosen else n_fact)


def test_star_cube_in_an_alternate_state_is_that_states_cube(engine_threads: int) -> None:
    tables = star_tables(6)
    app = App.from_tables(tables)
    measures = ["Sum(Amount)", "Count(Amount)", "Count(distinct Customer)"]
    with app.session() as s, app.session() as t:
        s.add_state("S1")
        s.select("Segment", [0, 3, 8], state="S1")
        s.select("Qty", [1, 2, 3, 4, 5, 6, 7], state="S1")
        s.select("Segment", [5])  # the default state differs
        t.select("Segment", [0, 3, 8])
        t.select("Qty", [1, 2, 3, 4, 5, 6, 7])
        got = s.hypercube(["Region"], measures, state="S1")
        want = t.hypercube(["Region"], measures)
        # The same rows; each sum equal up to the order its chunks were added in (two
        # threads claim the chunks as they come, so the partial sums may differ).
        assert [(r[0], *r[2:]) for r in got.rows] == [(r[0], *r[2:]) for r in want.rows]
        assert all(
            math.isclose(a[1], b[1], rel_tol=1e-12)
            for a, b in zip(got.rows, want.rows, strict=True)
        )
        assert got.totals[1:] == want.totals[1:]
        assert math.isclose(got.totals[0], want.totals[0], rel_tol=1e-12)
        check_cube(app, t, ["Region"], [("sum", "Amount"), ("countdistinct", "Customer")])
        assert s.hypercube(["Region"], measures).rows != got.rows


def test_star_cube_suppresses_zero_rows(engine_threads: int) -> None:
    """Regions whose selected facts sum to 0 (no fact, or NULL and text amounts only) go."""
    tables = star_tables(7)
    fact = tables["Fact"]
    dim = tables["Dim"]
    # Region r6's keys: their facts' amounts become NULL or text, so its Sum is 0.
    r6 = {k for k, r in zip(dim["DimKey"], dim["Region"], strict=True) if r == "r6"}
    for i, k in enumerate(fact["DimKey"]):
        if k in r6:
            fact["Amount"][i] = None if i % 2 else "n/a"
    app = App.from_tables(tables)
    with app.session() as s:
        for selection in ({}, {"Segment": [1, 4, 6, 9]}):
            s.clear()
            for field, values in selection.items():
                s.select(field, values)
            rows, _ = reference_for(app, s).cube(["Region"], [("sum", "Amount")])
            want = {k[0]: v[0] for k, v in rows.items() if v[0] not in (0, 0.0, None)}
            cube = s.hypercube(["Region"], [FUNCS["sum"].format("Amount")], suppress_zero=True)
            got = dict(cube.rows)
            assert "r6" in {k[0] for k in rows}
            assert "r6" not in got
            assert got.keys() == want.keys()
            assert all(same(got[k], want[k]) for k in want)


def test_star_cube_of_a_dimension_without_any_fact_row() -> None:
    """Every fact key lacks a dimension row: all facts land on None, and the dimension's
    values still show (with 0), as its rows are possible."""
    app = App.from_tables(
        {
            "Fact": {"DimKey": [100, 101, None, 100] * 700, "Amount": [1.5, 2.0, 4.0, None] * 700},
            "Dim": {"DimKey": [1, 2, 3], "Region": ["a", "b", "a"]},
        }
    )
    with app.session() as s:
        cube = s.hypercube(["Region"], ["Sum(Amount)", "Count(Amount)"])
        assert cube.rows == [("a", 0.0, 0.0), ("b", 0.0, 0.0), (None, 7.5 * 700, 2100.0)]
        check_cube(app, s, ["Region"], [("sum", "Amount"), ("count", "Amount")])


def test_one_table_sum_keeps_groups_each_thread_reached(engine_threads: int) -> None:
    """Groups of one row each, spread over the chunks the threads share: every one shows,
    whichever thread read it (the same pass as the star's, with the dimension in the table)."""
    n = 300_000
    cat = np.zeros(n, dtype=np.int64)
    cat[::1000] = np.arange(1, n // 1000 + 1)
    amount = (np.arange(n) % 97).astype(float)
    app = App.from_tables({"T": {"Cat": cat, "Amount": amount}})
    with app.session() as s:
        cube = s.hypercube(["Cat"], ["Sum(Amount)", "Count(Amount)"])
        sums = np.bincount(cat, weights=amount)
        counts = np.bincount(cat)
        assert cube.rows == [(k, float(sums[k]), float(counts[k])) for k in range(len(sums))]
