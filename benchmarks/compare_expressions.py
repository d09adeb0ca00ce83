"""Chart expressions side by side: assoc against polars and duckdb on the same data, in one run.

    PYTHONPATH=python python benchmarks/compare_expressions.py [--repeat N]

One table of 10,000,000 rows (scaled by ASSOC_BENCH_SCALE): Category (1,000 values), Year
(2015..2024), Sel (1,000 values) and Amount.

- Set analysis: with 10 values of Sel selected, the measure `Sum({<Year={2020}>} Amount)` by
  Category (spec chart-expressions §2: the set keeps Sel's selection and adds Year=2020),
  against the peers' filter (Sel in the 10, Year = 2020) and group by.
- Shares of the total: `Sum(Amount) / Sum(TOTAL Amount)` by Category (§4), no selection,
  against polars' group by and a division by the column's sum, and duckdb's window
  `sum(Amount) / sum(sum(Amount)) over ()`.

Answers are checked against each other before timing; timings are the best of N rounds,
every contender once per round; assoc runs with its result cache off, so every timed cube
evaluates its set and computes. The times never gate anything.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import duckdb
import numpy as np
import polars as pl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import assoc
from compare_selection import Times, best, start
from conftest import scaled
from harness import Measure, column_bytes, interleaved_times, symbol_bytes

MEASURE = "Sum({<Year={2020}>} Amount)"
SHARE = "Sum(Amount) / Sum(TOTAL Amount)"


def _facts() -> tuple[pl.DataFrame, list[int], int]:
    """The table, the 10 Sel values the set analysis selects, and the row count."""
    rng = np.random.default_rng(23)
    n = scaled(10_000_000)
    cat = rng.integers(0, 1000, n)
    year = rng.integers(2015, 2025, n)
    sel = rng.integers(0, 1000, n)
    amount = rng.integers(100, 100_000, n)
    chosen = [int(x) for x in rng.choice(1000, 10, replace=False)]
    labels = pl.Series([f"c{i}" for i in range(1000)])
    df = pl.DataFrame(
        {
            "Category": labels.gather(cat).cast(pl.Categorical),
            "Year": year,
            "Sel": sel,
            "Amount": amount,
        }
    )
    return df, chosen, n


def _timed(
    assoc_query: Callable[[], Any],
    polars_query: Callable[[], Any],
    duckdb_query: Callable[[], Any],
    repeat: int,
) -> Times:
    """The three queries' times, alternating, with assoc's result cache off."""
    limit = assoc.cache_info()["limit"]
    assoc.set_cache_limit(0)
    try:
        out: Times = interleaved_times(
            {
                "assoc": (assoc_query, None),
                "polars": (polars_query, None),
                "duckdb": (duckdb_query, None),
            },
            repeat,
        )
    finally:
        assoc.set_cache_limit(limit)
    return out


def set_analysis(repeat: int) -> Times:
    df, chosen, n = _facts()
    app = assoc.App.from_arrow({"Facts": df.to_arrow()})
    session = app.session()
    session.select("Sel", chosen)
    con = duckdb.connect()
    con.register("facts", df.to_arrow())
    in_list = ",".join(str(c) for c in chosen)

    def assoc_query() -> list[tuple]:
        return session.hypercube(["Category"], [MEASURE]).rows

    def polars_query() -> pl.DataFrame:
        return (
            df.filter(pl.col("Sel").is_in(chosen) & (pl.col("Year") == 2020))
            .group_by("Category")
            .agg(pl.col("Amount").sum())
        )

    def duckdb_query() -> list[tuple]:
        return con.execute(
            "SELECT Category, sum(Amount) FROM facts "
            f"WHERE Sel IN ({in_list}) AND Year = 2020 GROUP BY Category"
        ).fetchall()

    want = {str(k): int(v) for k, v in polars_query().iter_rows()}
    got = {k: int(v) for k, v in assoc_query() if v}
    assert got == want, "assoc and polars disagree"
    assert {str(k): int(v) for k, v in duckdb_query()} == want, "duckdb and polars disagree"
    out = _timed(assoc_query, polars_query, duckdb_query, repeat)
    # The set reads Sel and Year; the cube Category and Amount, and Amount's numbers.
    out["bytes"] = column_bytes(app, "Facts", ["Sel", "Year", "Category", "Amount"])
    out["bytes"] += symbol_bytes(app, ["Amount"])
    session.close()
    out["rows"] = float(n)
    return out


def total_share(repeat: int) -> Times:
    df, _, n = _facts()
    app = assoc.App.from_arrow({"Facts": df.to_arrow()})
    session = app.session()
    con = duckdb.connect()
    con.register("facts", df.to_arrow())

    def assoc_query() -> list[tuple]:
        return session.hypercube(["Category"], [SHARE]).rows

    def polars_query() -> pl.DataFrame:
        sums = df.group_by("Category").agg(pl.col("Amount").sum())
        return sums.with_columns(pl.col("Amount") / pl.col("Amount").sum())

    def duckdb_query() -> list[tuple]:
        return con.execute(
            "SELECT Category, sum(Amount) / sum(sum(Amount)) OVER () FROM facts GROUP BY Category"
        ).fetchall()

    want = {str(k): float(v) for k, v in polars_query().iter_rows()}
    got = {str(k): float(v) for k, v in assoc_query()}
    assert got.keys() == want.keys(), "assoc and polars disagree"
    assert all(abs(got[k] - want[k]) < 1e-12 for k in want), "assoc and polars disagree"
    assert all(abs(float(v) - want[str(k)]) < 1e-12 for k, v in duckdb_query()), "duckdb differs"
    out = _timed(assoc_query, polars_query, duckdb_query, repeat)
    out["bytes"] = column_bytes(app, "Facts", ["Category", "Amount"]) + symbol_bytes(
        app, ["Amount"]
    )
    session.close()
    out["rows"] = float(n)
    return out


def measures(repeat: int) -> list[Measure]:
    """Set analysis and shares of the total as measures for run_all.py."""
    r = set_analysis(repeat)
    share = total_share(repeat)
    return [
        Measure(
            "expressions.total_share",
            f"{int(share['rows']):,} rows: {SHARE} by Category",
            share["assoc"],
            {"polars": share["polars"], "duckdb": share["duckdb"]},
            share["bytes"],
            "packed indexes of Category, Amount; Amount's symbols",
            "<= 0.5x best peer",
        ),
        Measure(
            "expressions.set_analysis",
            f"{int(r['rows']):,} rows: {MEASURE} by Category, 10 Sel values selected",
            r["assoc"],
            {"polars": r["polars"], "duckdb": r["duckdb"]},
            r["bytes"],
            "packed indexes of Sel, Year, Category, Amount; Amount's symbols",
            "<= 0.5x best peer",
        ),
    ]


def main() -> int:
    args = start(__doc__.splitlines()[0], 10)
    ms = 1000.0
    for title, times in (
        (f"`{MEASURE}` by Category, 10 of 1,000 Sel values selected", set_analysis),
        (f"`{SHARE}` by Category", total_share),
    ):
        r = best(times(args.repeat))
        best_peer = min(r["polars"], r["duckdb"])
        print(f"{title}, {int(r['rows']):,} rows\n")
        print("| engine | ms | vs best peer |")
        print("|---|---:|---:|")
        for name in ("assoc", "polars", "duckdb"):
            print(f"| {name} | {r[name] * ms:.2f} | {r[name] / best_peer:.2f} |")
        print(f"\ngoal: assoc <= 0.5x the best peer; measured {r['assoc'] / best_peer:.2f}x\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
