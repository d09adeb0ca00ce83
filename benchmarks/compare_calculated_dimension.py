"""A calculated dimension against the same cube on a field dimension, in one run.

    PYTHONPATH=python python benchmarks/compare_calculated_dimension.py [--repeat N]

One table of 10,000,000 rows (scaled by ASSOC_BENCH_SCALE): Amount (0..1,000), Sel (1,000
values) and Size, which holds `If(Amount > 100, 'big', 'small')` as loaded values. The cube
`Sum(Amount), Count(Amount)` by the calculated dimension `=If(Amount > 100, 'big', 'small')`
against the same measures by the field Size. Three cases:

- cold, all rows / cold, 10 Sel: the result cache off, so every calculated cube computes
  its derived model again (a copy of the model and the column: the expression once per
  distinct Amount, then a code per row) before the cube; no selection, or 10 Sel values;
- new 10 Sel: the cache on and a new selection of 10 Sel values before each cube (not
  timed), so the cube is computed afresh while the derived column, which no selection
  changes, is reused.

Answers are checked against each other first; timings are the best of N rounds, both
contenders once per round. The times never gate anything.
"""

from __future__ import annotations

import os
import sys
from itertools import count

import numpy as np
import polars as pl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import assoc
from compare_selection import Times, best, start
from conftest import scaled
from harness import Measure, column_bytes, interleaved_times, symbol_bytes

CALCULATED = "=If(Amount > 100, 'big', 'small')"
MEASURES = ["Sum(Amount)", "Count(Amount)"]


def run(repeat: int) -> Times:
    rng = np.random.default_rng(29)
    n = scaled(10_000_000)
    amount = rng.integers(0, 1001, n)
    sel = rng.integers(0, 1000, n)
    size = np.where(amount > 100, "big", "small")
    df = pl.DataFrame({"Amount": amount, "Sel": sel, "Size": pl.Series(size).cast(pl.Categorical)})
    app = assoc.App.from_arrow({"Facts": df.to_arrow()})
    session = app.session()
    picks = count()

    def select_next() -> None:
        k = next(picks)
        session.select("Sel", [(k * 10 + i) % 1000 for i in range(10)])

    def field_cube() -> list[tuple]:
        return session.hypercube(["Size"], MEASURES).rows

    def calculated_cube() -> list[tuple]:
        return session.hypercube([CALCULATED], MEASURES).rows

    assert field_cube() == calculated_cube(), "the two cubes disagree"
    out: Times = {}
    limit = assoc.cache_info()["limit"]
    assoc.set_cache_limit(0)
    try:
        both = {"field": (field_cube, None), "calculated": (calculated_cube, None)}
        cold = interleaved_times(both, repeat)
        out["cold, all rows field"], out["cold, all rows calculated"] = cold.values()
        select_next()
        assert field_cube() == calculated_cube(), "the two cubes disagree"
        cold = interleaved_times(both, repeat)
        out["cold, 10 Sel field"], out["cold, 10 Sel calculated"] = cold.values()
    finally:
        assoc.set_cache_limit(limit)
    calculated_cube()  # the derived column, made once for the model
    warm = interleaved_times(
        {"field": (field_cube, select_next), "calculated": (calculated_cube, select_next)}, repeat
    )
    out["new 10 Sel field"], out["new 10 Sel calculated"] = warm.values()
    # The calculated cube reads Amount's index and numbers (to derive and to sum), and Sel's
    # index when selected.
    out["bytes"] = column_bytes(app, "Facts", ["Amount"]) + symbol_bytes(app, ["Amount"])
    out["sel_bytes"] = column_bytes(app, "Facts", ["Sel"])
    session.close()
    out["rows"] = float(n)
    return out


def measures(repeat: int) -> list[Measure]:
    """The calculated cube against the field cube, as measures for run_all.py."""
    r = run(repeat)
    read = "Amount's packed index and symbols"
    return [
        Measure(
            f"calculated_dimension.{case.replace(',', '').replace(' ', '_')}",
            f"{int(r['rows']):,} rows: {CALCULATED} vs field Size, {case}",
            r[f"{case} calculated"],
            {"field Size": r[f"{case} field"]},
            r["bytes"] + (r["sel_bytes"] if "Sel" in case else 0),
            read + ("; Sel's index" if "Sel" in case else ""),
            "<= 1.5x field",
        )
        for case in ("cold, all rows", "cold, 10 Sel", "new 10 Sel")
    ]


def main() -> int:
    args = start(__doc__.splitlines()[0], 5)
    ms = 1000.0
    r = best(run(args.repeat))
    print(f"`{CALCULATED}` vs field Size, {', '.join(MEASURES)}, {int(r['rows']):,} rows\n")
    print("| case | field ms | calculated ms | ratio |")
    print("|---|---:|---:|---:|")
    for case in ("cold, all rows", "cold, 10 Sel", "new 10 Sel"):
        f, c = r[f"{case} field"], r[f"{case} calculated"]
        print(f"| {case} | {f * ms:.2f} | {c * ms:.2f} | {c / f:.2f} |")
    print("\ngoal: calculated <= 1.5x field")
    return 0


if __name__ == "__main__":
    sys.exit(main())
